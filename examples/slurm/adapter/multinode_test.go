package adapter

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/google/go-cmp/cmp"
)

// spreadSpec is a job whose two-GPU configuration fits a node and whose
// four-GPU one spans two.
const spreadSpec = "elastico:train gpt spread opt=sgd ref=64 | b=64 g=2 sm=1 mem=20 tput=100 cpu=2 | b=128 g=4 sm=1 mem=20 tput=180 cpu=2"

// twoNodes is a fake Slurm of two nodes, n1 and n2, of two GPUs with four
// shards each, at the addresses their ranks meet at.
func twoNodes() *fakeSlurm {
	f := newFake(2, 4)
	n2 := f.nodes[0]
	f.nodes[0].Name, f.nodes[0].Address = "n1", "10.9.0.1"
	n2.Name, n2.Address = "n2", "10.9.0.2"
	f.nodes = append(f.nodes, n2)
	return f
}

var fourGPUs = []string{"n1/gpu0", "n1/gpu1", "n2/gpu0", "n2/gpu1"}

func (h *harness) nodeEnvOf(job, run int, node string) map[string]string {
	h.t.Helper()
	b, err := os.ReadFile(nodeEnvFile(filepath.Join(h.dir, "env"), job, run, node))
	if err != nil {
		h.t.Fatalf("env of job %d run %d on %s: %v", job, run, node, err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(strings.TrimPrefix(line, "export "), "=")
		m[k] = v
	}
	return m
}

func TestSpreadFlag(t *testing.T) {
	for text, want := range map[string]Spec{
		"train gpt spread ref=64 | b=64 g=4 sm=1 mem=20 tput=100": {Family: "gpt", Spread: true},
		"train spread | g=4 sm=1 mem=20 tput=100":                 {Spread: true},
		"train gpt | g=2 sm=1 mem=20 tput=100":                    {Family: "gpt"},
	} {
		s, err := ParseSpec(text)
		if err != nil {
			t.Fatalf("%q: %v", text, err)
		}
		if s.Family != want.Family || s.Spread != want.Spread || s.Job("1").Spread != want.Spread {
			t.Errorf("%q: family %q spread %v (job %v), want %q %v", text, s.Family, s.Spread, s.Job("1").Spread, want.Family, want.Spread)
		}
		again, err := ParseSpec(s.String())
		if err != nil || again.Spread != s.Spread {
			t.Errorf("%q: String() %q reads back spread %v, %v", text, s.String(), again != nil && again.Spread, err)
		}
	}
	if _, err := ParseSpec("train gpt spread=yes | sm=1 mem=2 tput=3"); err == nil || !strings.Contains(err.Error(), `unknown key "spread"`) {
		t.Errorf("spread=yes: %v, want an unknown key (spread is a flag)", err)
	}
}

// A job spread over two nodes: one GRES for both (Slurm's is per node),
// both nodes named, the CPUs of both, and each node's environment with its
// rank; the run is checked on every node.
func TestMultiNodeStart(t *testing.T) {
	f := twoNodes()
	a := f.submit(spreadSpec, true, "")
	h := newHarness(t, f, startAs(map[string]elastico.Assignment{strconv.Itoa(a): {ConfigID: "b128-g4", GPUs: fourGPUs}}))
	h.tick()
	want := []string{
		"update 1 Gres=shard:gpu0:4,shard:gpu1:4 NumCPUs=8 NumNodes=2 NodeList=n1,n2 AdminComment=elastico: gen 1: b128-g4 on n1/gpu0,n1/gpu1,n2/gpu0,n2/gpu1 (shard:gpu0:4,shard:gpu1:4)",
		"release 1",
	}
	if diff := cmp.Diff(want, f.calls); diff != "" {
		t.Errorf("calls (-want +got):\n%s", diff)
	}
	f.schedule()
	f.job(a).Nodes = "n[1-2]" // as squeue prints it
	h.tick()
	r := h.a.Records()[0]
	if !slices.Equal(r.Nodes, []string{"n1", "n2"}) || r.Node != "n1" || r.CPUs != 8 || len(r.Launches) != 1 || r.Launches[0].Placed != "ok" {
		t.Errorf("record: nodes %v node %s cpus %d launches %+v; want n1,n2, 8 CPUs, one launch placed ok", r.Nodes, r.Node, r.CPUs, r.Launches)
	}
	for k, node := range []string{"n1", "n2"} {
		env := h.nodeEnvOf(a, 0, node)
		for key, want := range map[string]string{
			"ELASTICO_CONFIG": "b128-g4", "ELASTICO_GENERATION": "1", "ELASTICO_GPUS": strings.Join(fourGPUs, ","),
			"ELASTICO_NODES": "n1,n2", "ELASTICO_NNODES": "2", "ELASTICO_NODE_RANK": strconv.Itoa(k),
			"ELASTICO_NODE_GPUS": node + "/gpu0," + node + "/gpu1", "ELASTICO_WORLD_SIZE": "4", "ELASTICO_LOCAL_WORLD_SIZE": "2",
			"ELASTICO_RANK_BASE": strconv.Itoa(2 * k), "ELASTICO_MASTER_ADDR": "10.9.0.1", "ELASTICO_MASTER_PORT": "10001",
			"CUDA_MPS_PINNED_DEVICE_MEM_LIMIT": "0=20480MB,1=20480MB", "ELASTICO_BATCH_SIZE": "128", "ELASTICO_LR_SCALE": "2",
		} {
			if env[key] != want {
				t.Errorf("%s: %s=%q, want %q", node, key, env[key], want)
			}
		}
	}
	if _, err := os.Stat(envFile(filepath.Join(h.dir, "env"), a, 0)); err == nil {
		t.Errorf("a job on several nodes has a node-less env file too")
	}

	// The TaskProlog gives each task its node's file and its global rank.
	prolog := filepath.Join(h.dir, "taskprolog.sh")
	if err := InstallTaskProlog(prolog, filepath.Join(h.dir, "env")); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(prolog)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "SLURM_JOB_ID=1", "SLURMD_NODENAME=n2", "SLURM_LOCALID=1"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{"export ELASTICO_NODE_RANK=1", "export ELASTICO_LOCAL_RANK=1", "export ELASTICO_RANK=3", "export ELASTICO_MASTER_ADDR=10.9.0.1"} {
		if !strings.Contains(string(out), line+"\n") {
			t.Errorf("TaskProlog on n2, local task 1, printed no %q:\n%s", line, out)
		}
	}
}

// Slurm cannot run what these plans ask: the job waits, held and untouched
// but for the reason in its AdminComment.
func TestMultiNodeRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		spec, config string
		gpus         []string
		why          string
	}{
		"without spread": {"elastico:train gpt ref=64 | b=64 g=2 sm=1 mem=20 tput=100", "b64-g2", []string{"n1/gpu0", "n2/gpu0"},
			"the GPUs span nodes n1, n2 and the job does not allow spread"},
		"other GPUs on each node": {spreadSpec, "b64-g2", []string{"n1/gpu0", "n2/gpu1"},
			"Slurm gives every node of a job the same GRES, and the plan asks for different ones: shards gpu0:4 on n1, shards gpu1:4 on n2"},
		"more GPUs on one node": {strings.Replace(spreadSpec, "g=2", "g=3", 1), "b64-g3", []string{"n1/gpu0", "n1/gpu1", "n2/gpu0"},
			"Slurm gives every node of a job the same GRES, and the plan asks for different ones: shards gpu0:4,gpu1:4 on n1, shards gpu0:4 on n2"},
	} {
		t.Run(name, func(t *testing.T) {
			f := twoNodes()
			a := f.submit(tc.spec, true, "")
			h := newHarness(t, f, startAs(map[string]elastico.Assignment{strconv.Itoa(a): {ConfigID: tc.config, GPUs: tc.gpus}}))
			rep := h.tick()
			if len(rep.Actions) != 1 || !strings.HasPrefix(rep.Actions[0].Outcome, "deferred: "+tc.why) {
				t.Fatalf("actions %+v, want the start deferred: %s", rep.Actions, tc.why)
			}
			if len(f.calls) != 1 || !strings.HasPrefix(f.calls[0], "update 1 AdminComment=elastico: waiting: start deferred: "+tc.why) {
				t.Errorf("calls %q, want only the AdminComment", f.calls)
			}
			if !f.job(a).Held() || len(h.a.Records()) != 0 {
				t.Errorf("job is %s, records %+v: want held and not journaled", f.job(a).State, h.a.Records())
			}
		})
	}
}

// A job without the flag spread, one of whose configurations no node
// holds, runs on several nodes all the same: it asked for them in all but
// name. The State says so to the scheduler.
func TestWiderThanANodeSpreads(t *testing.T) {
	f := twoNodes()
	a := f.submit("elastico:train gpt ref=64 | b=128 g=4 sm=1 mem=20 tput=180", true, "")
	b := f.submit("elastico:train bert ref=64 | b=64 g=2 sm=1 mem=20 tput=100", true, "")
	h := newHarness(t, f, startAs(map[string]elastico.Assignment{strconv.Itoa(a): {ConfigID: "b128-g4", GPUs: fourGPUs}}))
	h.tick()
	spread := map[string]bool{}
	for _, j := range h.s.states[0].Jobs {
		spread[j.ID] = j.Spread
	}
	if !spread[strconv.Itoa(a)] || spread[strconv.Itoa(b)] {
		t.Errorf("Spread in the State: %v; want job %d (g=4 on nodes of 2) spread, job %d (g=2) not", spread, a, b)
	}
	f.schedule()
	if j := f.job(a); j.State != "RUNNING" || j.Nodes != "n1,n2" {
		t.Errorf("job %d is %s on %q, want RUNNING on n1,n2", a, j.State, j.Nodes)
	}
	h.tick()
	if n := strings.Count(h.logs.String(), "needs more GPUs than any node has"); n != 1 {
		t.Errorf("%d log lines say why job %d spreads, want 1", n, a)
	}
}

// A job grows from one node to two: the requeue path of any
// reconfiguration, with the node count and list set on the held job
// before its release; the adapter dying after any single Slurm call
// changes nothing of it.
func TestMultiNodeGrowsThroughRequeue(t *testing.T) {
	scenario := func(t *testing.T, lieAt int) (*fakeSlurm, *harness, int) {
		f := twoNodes()
		a := f.submit(spreadSpec, true, "")
		id := strconv.Itoa(a)
		// The plan grows the job once it runs (a crash may delay that).
		grow := false
		one := elastico.Assignment{ConfigID: "b64-g2", GPUs: fourGPUs[:2]}
		h := newHarness(t, f, func(st *elastico.State) *elastico.Plan {
			if !grow {
				return startAs(map[string]elastico.Assignment{id: one})(st)
			}
			return flip(id, one, elastico.Assignment{ConfigID: "b128-g4", GPUs: fourGPUs})(st)
		})
		f.lieAt = lieAt
		crashes := 0
		for range 14 {
			if _, err := h.a.Tick(context.Background()); err != nil {
				t.Fatalf("tick: %v", err)
			}
			if f.dead {
				crashes++
				f.dead, f.lieAt = false, 0
				h.restart()
			}
			f.schedule()
			grow = grow || f.job(a).State == "RUNNING"
			h.now = h.now.Add(time.Second)
		}
		return f, h, crashes
	}
	clean, h, _ := scenario(t, 0)
	want := []string{
		"update 1 Gres=shard:gpu0:4,shard:gpu1:4 NumCPUs=4 NodeList=n1 AdminComment=elastico: gen 1: b64-g2 on n1/gpu0,n1/gpu1 (shard:gpu0:4,shard:gpu1:4)",
		"release 1",
		"requeuehold 1",
		"update 1 NumCPUs=8 NumNodes=2 NodeList=n1,n2 StartTime=now AdminComment=elastico: gen 2: b128-g4 on n1/gpu0,n1/gpu1,n2/gpu0,n2/gpu1 (shard:gpu0:4,shard:gpu1:4)",
		"release 1",
	}
	if diff := cmp.Diff(want, clean.calls); diff != "" {
		t.Fatalf("calls (-want +got):\n%s", diff)
	}
	j := clean.job(1)
	if j.State != "RUNNING" || j.Restarts != 1 || len(j.GresDetail) != 2 || j.Nodes != "n1,n2" {
		t.Errorf("job is %s with %d restarts on %q (%q), want RUNNING with 1 on n1,n2", j.State, j.Restarts, j.Nodes, j.GresDetail)
	}
	r := h.a.Records()[0]
	var placed []string
	for _, l := range r.Launches {
		placed = append(placed, l.ConfigID+" "+l.Placed)
	}
	if diff := cmp.Diff([]string{"b64-g2 ok", "b128-g4 ok"}, placed); diff != "" {
		t.Errorf("launches (-want +got):\n%s", diff)
	}
	if env := h.envOf(1, 0); env["ELASTICO_NNODES"] != "1" || env["ELASTICO_WORLD_SIZE"] != "2" || env["ELASTICO_MASTER_ADDR"] != "10.9.0.1" {
		t.Errorf("run 0 (one node) env: NNODES %q WORLD_SIZE %q MASTER_ADDR %q", env["ELASTICO_NNODES"], env["ELASTICO_WORLD_SIZE"], env["ELASTICO_MASTER_ADDR"])
	}
	if env := h.nodeEnvOf(1, 1, "n2"); env["ELASTICO_NODE_RANK"] != "1" || env["ELASTICO_GENERATION"] != "2" {
		t.Errorf("run 1 on n2: NODE_RANK %q GENERATION %q, want 1 and 2", env["ELASTICO_NODE_RANK"], env["ELASTICO_GENERATION"])
	}
	for lieAt := 1; lieAt <= len(clean.calls); lieAt++ {
		t.Run("crash after call "+strconv.Itoa(lieAt), func(t *testing.T) {
			f, _, crashes := scenario(t, lieAt)
			if crashes != 1 {
				t.Fatalf("%d crashes, want 1", crashes)
			}
			// An update or a release repeated after the crash is harmless
			// (the same values; releasing a released job is a no-op), as
			// is StartTime=now again; a requeue repeated would be a run
			// lost.
			strip := func(calls []string) []string {
				var out []string
				for _, c := range calls {
					if i := strings.Index(c, " AdminComment="); i >= 0 {
						c = c[:i]
					}
					if !strings.HasSuffix(c, " 1 StartTime=now") {
						out = append(out, c)
					}
				}
				return out
			}
			if got := strings.Count(strings.Join(f.calls, "\n"), "requeuehold"); got != 1 {
				t.Errorf("%d requeueholds, want 1: %q", got, f.calls)
			}
			if diff := cmp.Diff(slices.Compact(strip(clean.calls)), slices.Compact(strip(f.calls))); diff != "" {
				t.Errorf("calls after a crash at call %d (-clean +crash):\n%s", lieAt, diff)
			}
			g := f.job(1)
			if g.State != j.State || g.Restarts != j.Restarts || g.Nodes != j.Nodes || FormatGres(f.gres[1]) != FormatGres(clean.gres[1]) {
				t.Errorf("job ends %s/%d restarts/%s/%s, clean run %s/%d/%s/%s", g.State, g.Restarts, g.Nodes, FormatGres(f.gres[1]), j.State, j.Restarts, j.Nodes, FormatGres(clean.gres[1]))
			}
		})
	}
}

// A run Slurm put on other devices on one of its nodes is caught there,
// named by node, and relaunched.
func TestMultiNodeMisplacedRun(t *testing.T) {
	f := twoNodes()
	a := f.submit(spreadSpec, true, "")
	h := newHarness(t, f, startAs(map[string]elastico.Assignment{strconv.Itoa(a): {ConfigID: "b128-g4", GPUs: fourGPUs}}))
	h.tick()
	f.misplace[a] = 1 // n1's shard:gpu0 lands on device 1
	f.schedule()
	h.tick()
	r := h.a.Records()[0]
	if len(r.Launches) != 1 || r.Launches[0].Placed != "misplaced: shard:gpu0:4 on n1 on device [1], want 0" || r.Phase != PhaseRelaunch {
		t.Errorf("launches %+v phase %s; want the run misplaced on n1 and requeued", r.Launches, r.Phase)
	}
	if !slices.Contains(f.calls, "requeuehold 1") {
		t.Errorf("calls %q: no requeue", f.calls)
	}
}
