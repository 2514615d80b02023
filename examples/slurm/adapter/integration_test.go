package adapter

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/examples/slurm/slurmtest"
	"github.com/elastico/elastico/internal/sets"
	"github.com/elastico/elastico/pds"
)

// recorder wraps the Scheduler under test and keeps every plan it made.
type recorder struct {
	inner elastico.Scheduler
	mu    sync.Mutex
	plans []*elastico.Plan
	logf  func(string, ...any) // logs each new plan
	last  string
}

func (r *recorder) Epoch(ctx context.Context, st *elastico.State) (*elastico.Plan, error) {
	p, err := r.inner.Epoch(ctx, st)
	if err == nil && r.logf != nil {
		var b strings.Builder
		for _, a := range p.Actions {
			fmt.Fprintf(&b, " [%s]", a)
		}
		for _, d := range p.Decisions {
			if d.Assignment == nil {
				fmt.Fprintf(&b, " [%s waits: %s]", d.JobID, d.Status)
			}
		}
		if s := b.String(); s != r.last {
			r.last = s
			r.logf("plan for %d jobs:%s", len(st.Jobs), s)
		}
	}
	if err == nil && len(p.Actions) > 0 {
		r.mu.Lock()
		r.plans = append(r.plans, p)
		r.mu.Unlock()
	}
	return p, err
}

// chose reports whether some plan told the job to run under config on
// exactly these GPUs.
func (r *recorder) chose(job, config string, gpus []string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, p := range r.plans {
		for _, a := range p.Actions {
			if a.JobID == job && a.To != nil && a.To.ConfigID == config && sets.Equal(a.To.GPUs, gpus) {
				return true
			}
		}
	}
	return false
}

// syncBuffer is a log sink shared by the adapter's goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// testJob is one job the integration test submits.
type testJob struct {
	name    string
	comment string // "" for a job that did not opt in
	gres    string // the job's own --gres (foreign jobs only)
	sleep   int
	id      int
	want    string // "run", "held" (never released), "foreign"
}

// TestSlurm runs the adapter against a real slurmctld and slurmd started by
// the test: a mix of training and inference jobs that record the
// environment they ran with, a job that did not opt in, one whose comment
// does not parse and one no GPU set can hold; slurmctld and the adapter are
// restarted in the middle. Every opted-in job must run exactly once per
// launch the adapter ordered, under the configuration and on the GPUs (hence
// with the sharing) the plan chose; nothing else may be touched.
func TestSlurm(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real Slurm daemons (about 30 s); run without -short")
	}
	t0 := time.Now()
	state, err := os.MkdirTemp("", "elastico-adapter-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	os.Chmod(state, 0o755)
	families := filepath.Join(state, "families")
	os.Mkdir(families, 0o755)
	if err := os.WriteFile(filepath.Join(families, "vit.txt"), []byte(
		"# ViT-B/16 fine-tuning, measured on the site's GPUs\ntrain vit opt=adam ref=64\nb=64 sm=.5 mem=12 tput=410\nb=128 sm=1 mem=22 tput=700 amp\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	prolog := filepath.Join(state, "taskprolog.sh")
	envDir := filepath.Join(state, "env")
	if err := InstallTaskProlog(prolog, envDir); err != nil {
		t.Fatal(err)
	}
	c := slurmtest.Start(t, slurmtest.Options{GPUs: 4, ShardsPerGPU: 4, CPUs: 16, TaskProlog: prolog})
	t.Logf("slurm up in %v (root %s)", time.Since(t0).Round(time.Millisecond), c.Root)
	out := filepath.Join(c.Root, "out")

	logs := &syncBuffer{}
	sched := &recorder{inner: newScheduler(t), logf: func(f string, a ...any) { fmt.Fprintf(logs, "PLAN "+f+"\n", a...) }}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo}))
	cli := &CLI{Conf: c.Conf}
	var adapter *Adapter
	startAdapter := func() (stop func()) {
		a, err := New(Config{Slurm: cli, Scheduler: sched, StateDir: state, EnvDir: envDir, FamilyDir: families,
			GPUMemory: 80, GPUModel: "placeholder", Logger: logger})
		if err != nil {
			t.Fatal(err)
		}
		adapter = a
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			a.Run(ctx, 300*time.Millisecond)
			close(done)
		}()
		return func() {
			cancel()
			<-done
			a.Close()
		}
	}
	// Each run records itself whole or not at all: its environment, then
	// (the link made only once per run) its start. A requeue's SIGTERM
	// waits until the record is made; one that comes before the script's
	// first line leaves no record (the test accepts that only of a run the
	// adapter stopped).
	script := func(sleep int) string {
		return fmt.Sprintf(`trap '' TERM
r=${SLURM_RESTART_COUNT:-0}
tmp=%[1]s/.$SLURM_JOB_ID.$r.$$
env > $tmp
if ln $tmp %[1]s/$SLURM_JOB_ID.$r.env 2>/dev/null; then
  echo "start $SLURM_JOB_ID $r $(date +%%s.%%N)" >> %[1]s/runs.log
else
  echo "dup $SLURM_JOB_ID $r" >> %[1]s/runs.log
fi
rm -f $tmp
trap - TERM
sleep %[2]d
echo "end $SLURM_JOB_ID $r $(date +%%s.%%N)" >> %[1]s/runs.log`, out, sleep)
	}
	jobs := []*testJob{
		{name: "foreign", gres: "gpu:gpu3:1", sleep: 12, want: "foreign"},
		{name: "resnet", comment: "elastico:train resnet50 opt=sgd ref=128 | b=64 sm=.5 mem=8 tput=300 | b=128 sm=1 mem=14 tput=520 | b=256 g=2 sm=1 mem=14 tput=1000", sleep: 6, want: "run"},
		{name: "llama", comment: "elastico:infer llama7b | kv=.3 seqs=64 sm=.25 mem=20 tput=800 | kv=.6 seqs=128 sm=.5 mem=40 tput=1300", sleep: 5, want: "run"},
		{name: "bert", comment: "elastico:train bert opt=adam ref=32 | b=32 sm=.5 mem=10 tput=200 amp | b=64 sm=1 mem=18 tput=350 amp", sleep: 5, want: "run"},
		{name: "bad", comment: "elastico:train gpt | b=8 sm=2 mem=10 tput=50", want: "held"},
		{name: "huge", comment: "elastico:train llama70b | b=512 g=8 sm=1 mem=70 tput=90", want: "held"},
		{name: "mistral", comment: "elastico:infer mistral7b | kv=.25 seqs=32 sm=.25 mem=16 tput=600", sleep: 4, want: "run"},
		{name: "vit", comment: "elastico:@vit.txt", sleep: 4, want: "run"},
		{name: "phi", comment: "elastico:infer phi3 | kv=.2 seqs=16 sm=.25 mem=8 tput=400", sleep: 4, want: "run"},
	}
	for _, j := range jobs {
		args := []string{"-J", j.name, "-o", out + "/%j.log", "--wrap", script(j.sleep)}
		if j.comment != "" {
			args = append([]string{"--hold", "--comment=" + j.comment}, args...)
		}
		if j.gres != "" {
			args = append([]string{"--gres=" + j.gres}, args...)
		}
		if j.id, err = c.Sbatch(args...); err != nil {
			t.Fatalf("sbatch %s: %v", j.name, err)
		}
	}
	byName := map[string]*testJob{}
	for _, j := range jobs {
		byName[j.name] = j
	}
	// The adapter starts once every job is in the queue: its first plan
	// sees the whole workload, however slowly sbatch ran.
	stop := startAdapter()
	t.Cleanup(func() { stop() }) // before the cluster's cleanup: runs first

	slurmJobs := func() map[int]Job {
		js, err := cli.Jobs(context.Background())
		if err != nil {
			return nil
		}
		m := map[int]Job{}
		for _, j := range js {
			m[j.ID] = j
		}
		return m
	}
	runsLog := func() []string {
		b, _ := os.ReadFile(filepath.Join(out, "runs.log"))
		return strings.Split(strings.TrimSpace(string(b)), "\n")
	}
	// The bounds below are far above what an idle machine needs (the
	// whole test takes about 20 s after Slurm is up): they only stop a hung
	// test. A loaded machine is slow, never wrong.
	waitUntil := func(what string, limit time.Duration, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(limit)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not after %v\nadapter log:\n%s", what, limit, logs)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// Mid-run: once some opted-in jobs have started and others still wait,
	// stop the adapter, restart slurmctld, start a new adapter.
	waitUntil("three opted-in jobs started", 2*time.Minute, func() bool {
		n := 0
		for _, l := range runsLog() {
			f := strings.Fields(l)
			if len(f) > 1 && f[0] == "start" && f[1] != strconv.Itoa(byName["foreign"].id) {
				n++
			}
		}
		return n >= 3
	})
	restart := func(why string) {
		stop()
		at := time.Now()
		c.RestartController()
		stop = startAdapter()
		t.Logf("restarted the adapter and slurmctld at %v, %s (took %v)", at.Sub(t0).Round(time.Millisecond), why, time.Since(at).Round(time.Millisecond))
	}
	restart("with jobs running and others waiting")

	// A second restart in the middle of a reconfiguration (the job stopped,
	// its new run not yet released), if the plan reconfigures one within
	// 20 s: the journal says so.
	journalPath := filepath.Join(state, "journal.json")
	relaunching := func() bool {
		b, _ := os.ReadFile(journalPath)
		return bytes.Contains(b, []byte(`"Phase": "relaunch"`))
	}
	deadline := time.Now().Add(20 * time.Second)
	for !relaunching() && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if relaunching() {
		restart("between a reconfiguration's requeue and its relaunch")
	} else {
		t.Logf("no reconfiguration within 20 s: no second restart")
	}

	waitUntil("every runnable job completed", 5*time.Minute, func() bool {
		m := slurmJobs()
		if m == nil {
			return false
		}
		for _, j := range jobs {
			if j.want != "held" && m[j.id].State != "COMPLETED" {
				return false
			}
		}
		return true
	})
	final := slurmJobs()
	// The adapter sees the ends (its journal, replaced atomically, says
	// so), and nothing starts anew.
	waitUntil("the adapter saw every runnable job end", time.Minute, func() bool {
		jr, err := loadJournal(journalPath)
		if err != nil {
			return false
		}
		for _, j := range jobs {
			if r := jr.jobs[j.id]; j.want == "run" && (r == nil || r.Phase != PhaseDone) {
				return false
			}
		}
		return true
	})
	stop()
	stop = func() {}
	for id, j := range slurmJobs() {
		if f := final[id]; j.State != f.State || j.Restarts != f.Restarts {
			t.Errorf("job %d became %s with %d restarts after it ended %s with %d", id, j.State, j.Restarts, f.State, f.Restarts)
		}
	}
	records := map[int]Record{}
	for _, r := range adapter.Records() {
		records[r.SlurmID] = r
	}

	// What ran: runs.log's starts and ends, per job and run.
	type run struct{ start, end float64 }
	runs := map[int]map[int]*run{}
	for _, l := range runsLog() {
		f := strings.Fields(l)
		if len(f) < 3 {
			continue
		}
		id, _ := strconv.Atoi(f[1])
		r, _ := strconv.Atoi(f[2])
		if f[0] == "dup" {
			t.Errorf("job %d run %d ran twice", id, r)
			continue
		}
		ts, _ := strconv.ParseFloat(f[3], 64)
		if runs[id] == nil {
			runs[id] = map[int]*run{}
		}
		switch f[0] {
		case "start":
			if runs[id][r] != nil {
				t.Errorf("job %d run %d started twice", id, r)
			}
			runs[id][r] = &run{start: ts}
		case "end":
			if runs[id][r] == nil {
				t.Errorf("job %d run %d ended without a start", id, r)
			} else {
				runs[id][r].end = ts
			}
		}
	}

	// A run stopped by a requeue writes no end: it ended before the next
	// recorded run started.
	for _, rs := range runs {
		for r, x := range rs {
			next := -1
			for n := range rs {
				if n > r && (next < 0 || n < next) {
					next = n
				}
			}
			if x.end == 0 && next >= 0 {
				x.end = rs[next].start
			}
		}
	}

	// Every opted-in job that could run ran once per launch the adapter
	// ordered, under the plan's configuration, on the plan's GPUs.
	type row struct {
		job               *testJob
		l                 Launch
		kind, visible     string
		shards            string
		start, end        float64
		batch, lr, mps    string
		class, sharedWith string
	}
	var rows []*row
	for _, j := range jobs {
		sj := final[j.id]
		rec, has := records[j.id]
		switch j.want {
		case "foreign":
			if has || sj.Restarts != 0 || sj.AdminComment != "" || sj.TresPerNode != "gres:gpu:gpu3:1" || sj.State != "COMPLETED" {
				t.Errorf("foreign job %d was touched: record %v, %+v", j.id, has, sj)
			}
			continue
		case "held":
			if has || !sj.Held() || sj.TresPerNode != "" || runs[j.id] != nil {
				t.Errorf("job %s (%d) should never have been released: record %v, state %s held %v gres %q runs %v", j.name, j.id, has, sj.State, sj.Held(), sj.TresPerNode, runs[j.id])
			}
			continue
		}
		if !has {
			t.Errorf("job %s (%d): no journal record", j.name, j.id)
			continue
		}
		if len(rec.Launches) != sj.Restarts+1 {
			t.Errorf("job %s (%d): %d launches, %d restarts: want one run per launch", j.name, j.id, len(rec.Launches), sj.Restarts)
		}
		for r := range runs[j.id] {
			if r >= len(rec.Launches) {
				t.Errorf("job %s (%d): run %d has no launch", j.name, j.id, r)
			}
		}
		for i, l := range rec.Launches {
			if l.Run != i {
				t.Errorf("job %s (%d): launch %d is run %d", j.name, j.id, i, l.Run)
				continue
			}
			if runs[j.id][i] == nil {
				// Slurm ran it, and the adapter stopped it for the next
				// launch before its script could record it.
				if i+1 < len(rec.Launches) && (l.Placed == "ok" || strings.HasPrefix(l.Placed, "misplaced: ") || strings.HasPrefix(l.Placed, "unverified: ")) {
					t.Logf("job %s run %d (placement %q): requeued before its script recorded it", j.name, i, l.Placed)
				} else {
					t.Errorf("job %s (%d) run %d (placement %q): never ran", j.name, j.id, i, l.Placed)
				}
				continue
			}
			if !sched.chose(strconv.Itoa(j.id), l.ConfigID, l.GPUs) {
				t.Errorf("job %s (%d) run %d: %s on %v was not in any plan", j.name, j.id, i, l.ConfigID, l.GPUs)
			}
			env := readEnv(t, filepath.Join(out, fmt.Sprintf("%d.%d.env", j.id, i)))
			var idx []string
			for _, g := range l.GPUs {
				idx = append(idx, strings.TrimPrefix(g, c.Node+"/gpu"))
			}
			sort.Strings(idx)
			gs, _ := ParseGres(l.Gres)
			kind, shards := gs[0].Name, 0
			for _, g := range gs {
				shards += g.Count
			}
			want := map[string]string{
				"ELASTICO_CONFIG":      l.ConfigID,
				"ELASTICO_GENERATION":  strconv.Itoa(l.Gen),
				"ELASTICO_GPUS":        strings.Join(l.GPUs, ","),
				"CUDA_VISIBLE_DEVICES": strings.Join(idx, ","),
				"ELASTICO_SHARED":      map[bool]string{true: "1", false: "0"}[kind == "shard"],
			}
			if kind == "shard" {
				want["SLURM_SHARDS_ON_NODE"] = strconv.Itoa(shards)
			}
			// The adapter checked where Slurm put each run, whenever the
			// plan reconfigured it: a run Slurm put on other devices (seen
			// right after a controller restart) must have been caught, and
			// relaunched. A run the adapter never saw running (it ended
			// while the adapter was stopped for a restart) is marked so,
			// and its devices are checked here, from its environment.
			switch {
			case l.Placed == "ok":
			case strings.HasPrefix(l.Placed, "misplaced: ") && i+1 < len(rec.Launches):
				if env["CUDA_VISIBLE_DEVICES"] == want["CUDA_VISIBLE_DEVICES"] {
					t.Errorf("job %s run %d: flagged %q but ran on devices %s as planned", j.name, i, l.Placed, env["CUDA_VISIBLE_DEVICES"])
				}
				t.Logf("job %s run %d: Slurm ran it on devices %s (%s); the adapter relaunched it", j.name, i, env["CUDA_VISIBLE_DEVICES"], l.Placed)
				delete(want, "CUDA_VISIBLE_DEVICES")
			case strings.HasPrefix(l.Placed, "unverified: "):
				t.Logf("job %s run %d: %s", j.name, i, l.Placed)
			default:
				t.Errorf("job %s run %d: placement %q, want ok, misplaced and relaunched, or unverified with the reason", j.name, i, l.Placed)
			}
			for k, v := range want {
				if env[k] != v {
					t.Errorf("job %s (%d) run %d: %s=%q, want %q", j.name, j.id, i, k, env[k], v)
				}
			}
			spec, _ := ParseSpec(rec.Spec)
			jb := spec.Job("")
			p, _ := jb.Profile(l.ConfigID)
			if p == nil || env["ELASTICO_BATCH_SIZE"] != strconv.Itoa(p.Config.BatchSize) {
				t.Errorf("job %s run %d: ELASTICO_BATCH_SIZE=%q for %s", j.name, i, env["ELASTICO_BATCH_SIZE"], l.ConfigID)
			}
			rows = append(rows, &row{job: j, l: l, kind: kind, visible: env["CUDA_VISIBLE_DEVICES"], shards: env["SLURM_SHARDS_ON_NODE"],
				start: runs[j.id][i].start, end: runs[j.id][i].end, batch: env["ELASTICO_BATCH_SIZE"], lr: env["ELASTICO_LR_SCALE"],
				mps: env["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"], class: spec.Class.String()})
		}
	}
	// The foreign job's GPU was never given to an opted-in job while it ran.
	if fr := runs[byName["foreign"].id][0]; fr != nil {
		for _, r := range rows {
			if slices.Contains(r.l.GPUs, c.Node+"/gpu3") && r.start < fr.end {
				t.Errorf("job %s ran on node1/gpu3 while the foreign job held it", r.job.name)
			}
		}
	}
	// Sharing: runs that overlapped in time on one GPU.
	shared := 0
	for _, a := range rows {
		var with []string
		for _, b := range rows {
			if a == b || a.end <= b.start || b.end <= a.start {
				continue
			}
			for _, g := range a.l.GPUs {
				if slices.Contains(b.l.GPUs, g) {
					with = append(with, fmt.Sprintf("%s@%s", b.job.name, strings.TrimPrefix(g, c.Node+"/")))
					if a.kind != "shard" || b.kind != "shard" {
						t.Errorf("jobs %s and %s shared %s without shards", a.job.name, b.job.name, g)
					}
				}
			}
		}
		a.sharedWith = strings.Join(with, " ")
		if len(with) > 0 {
			shared++
		}
	}
	if !strings.Contains(logs.String(), fmt.Sprintf("comment does not parse: job left to Slurm\" job=%d", byName["bad"].id)) {
		t.Errorf("the adapter's log does not name job %d, whose comment does not parse", byName["bad"].id)
	}
	if ac := final[byName["huge"].id].AdminComment; !strings.HasPrefix(ac, "elastico: waiting: Infeasible") {
		t.Errorf("job huge: AdminComment %q, want its Infeasible status", ac)
	}
	// The workload is built to be shared (three inference jobs at a quarter
	// of a GPU, training jobs at a half, three GPUs): a plan that shares
	// nothing here would not be elastico's.
	if shared == 0 {
		t.Errorf("no two runs shared a GPU")
	}

	var b strings.Builder
	fmt.Fprintf(&b, "%-8s %5s %-9s %-16s %3s %3s %-20s %-26s %-4s %-6s %5s %4s %6s %7s  %s\n",
		"job", "id", "class", "config", "gen", "run", "gpus", "gres", "cuda", "shards", "batch", "mps%", "lr", "ran(s)", "shared with")
	slices.SortFunc(rows, func(x, y *row) int {
		if x.start < y.start {
			return -1
		}
		return 1
	})
	for _, r := range rows {
		fmt.Fprintf(&b, "%-8s %5d %-9s %-16s %3d %3d %-20s %-26s %-4s %-6s %5s %4s %6s %3.1f-%3.1f  %s\n",
			r.job.name, r.job.id, r.class, r.l.ConfigID, r.l.Gen, r.l.Run, strings.Join(r.l.GPUs, ","), r.l.Gres, r.visible, r.shards,
			r.batch, r.mps, r.lr, r.start-float64(t0.UnixNano())/1e9, r.end-float64(t0.UnixNano())/1e9, r.sharedWith)
	}
	t.Logf("runs (times from the test's start):\n%s", b.String())
	t.Logf("%d of %d runs shared a GPU; %d plans with actions; total %v",
		shared, len(rows), len(sched.plans), time.Since(t0).Round(time.Millisecond))
	t.Logf("adapter log:\n%s", logs)
}

// lateHold is Slurm seen through a squeue that is a moment old: once
// armed, Jobs returns its snapshot only after the armed job has started,
// and shows the job released and pending, as squeue did before the start.
type lateHold struct {
	*CLI
	t     *testing.T
	armed int
	// rewound says slurmctld had started the job before the snapshot was
	// taken (it can, within a tenth of a second of the release): the
	// snapshot's entry was set back to pending.
	rewound bool
}

func (s *lateHold) Jobs(ctx context.Context) ([]Job, error) {
	js, err := s.CLI.Jobs(ctx)
	if id := s.armed; id != 0 && err == nil {
		s.armed = 0
		deadline := time.Now().Add(time.Minute)
		for {
			now, _ := s.CLI.Jobs(ctx)
			if k := slices.IndexFunc(now, func(j Job) bool { return j.ID == id }); k >= 0 && now[k].State == "RUNNING" {
				break
			}
			if time.Now().After(deadline) {
				s.t.Errorf("job %d not running a minute after its release", id)
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		if k := slices.IndexFunc(js, func(j Job) bool { return j.ID == id }); k >= 0 && js[k].State != "PENDING" {
			js[k].State, js[k].Reason, js[k].Nodes, js[k].GresDetail = "PENDING", "None", "", nil
			s.rewound = true
		}
	}
	return js, err
}

// TestSlurmReconfigureRacesTheStart is TestReconfigureRacesTheStart on a
// real slurmctld, made deterministic: the plan reconfigures a job the tick
// after its release, on a squeue that shows it pending (set back so when
// slurmctld was quicker than the tick), and slurmctld has started it by
// the time the adapter holds it. Slurm 22.05
// holds the running job without an error; the adapter must see that it
// runs, check it, and requeue it into the new configuration.
func TestSlurmReconfigureRacesTheStart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real Slurm daemons; run without -short")
	}
	c := slurmtest.Start(t, slurmtest.Options{GPUs: 2, ShardsPerGPU: 4, CPUs: 16})
	id, err := c.Sbatch("--hold", "--comment="+trainSpec, "-o", "/dev/null", "--wrap", "sleep 30")
	if err != nil {
		t.Fatal(err)
	}
	slurm := &lateHold{CLI: &CLI{Conf: c.Conf}, t: t}
	logs := &syncBuffer{}
	gpu1 := []string{"node1/gpu1"}
	a, err := New(Config{Slurm: slurm, StateDir: t.TempDir(), GPUMemory: 80, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Scheduler: &scripted{plan: flip(strconv.Itoa(id), elastico.Assignment{ConfigID: "b128-g1", GPUs: gpu1}, elastico.Assignment{ConfigID: "b256-g1", GPUs: gpu1})}})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("adapter log:\n%s", logs)
		}
	})
	tick := func() {
		t.Helper()
		if _, err := a.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	tick() // GRES set, released
	slurm.armed = id
	tick() // the reconfiguration: a hold, too late
	deadline := time.Now().Add(2 * time.Minute)
	for {
		if r := a.Records()[0]; len(r.Launches) == 2 && r.Launches[1].Placed != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no second run checked after 2 minutes: %+v", a.Records()[0])
		}
		time.Sleep(300 * time.Millisecond)
		tick()
	}
	type launch struct {
		Gen, Run int
		ConfigID string
		Placed   string
	}
	var got []launch
	for _, l := range a.Records()[0].Launches {
		got = append(got, launch{l.Gen, l.Run, l.ConfigID, l.Placed})
	}
	if want := []launch{{1, 0, "b128-g1", "ok"}, {2, 1, "b256-g1", "ok"}}; !slices.Equal(got, want) {
		t.Errorf("launches %+v, want %+v", got, want)
	}
	if !strings.Contains(logs.String(), "the job started before the hold meant to reconfigure it") {
		t.Errorf("the hold was not too late: the test did not race")
	}
	t.Logf("slurmctld started the job before the adapter's squeue, which was set back: %v", slurm.rewound)
}

func readEnv(t *testing.T, path string) map[string]string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("%v", err)
		return nil
	}
	m := map[string]string{}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			m[k] = v
		}
	}
	return m
}

// newScheduler is the Scheduler the integration test runs: the default, pinned
// as the daemon runs it (Slurm cannot take a GPU back from a job).
func newScheduler(t *testing.T) elastico.Scheduler {
	s, err := pds.New(pds.Config{Pinned: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
