package adapter

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/examples/slurm/slurmtest"
)

// taskScript is what each task of the real-Slurm multi-node tests runs
// (srun starts one per node): it records its environment and its start,
// once per job, run and node (the link is made only once), then sleeps.
const taskScript = `#!/bin/sh
out=$(dirname "$0")
r=${SLURM_RESTART_COUNT:-0}
key=$SLURM_JOB_ID.$r.$SLURMD_NODENAME
env > "$out/.$key.$$"
if ln "$out/.$key.$$" "$out/$key.env" 2>/dev/null; then
  echo "start $SLURM_JOB_ID $r $SLURMD_NODENAME $(date +%s.%N)" >> "$out/runs.log"
else
  echo "dup $SLURM_JOB_ID $r $SLURMD_NODENAME" >> "$out/runs.log"
fi
rm -f "$out/.$key.$$"
sleep "$1"
echo "end $SLURM_JOB_ID $r $SLURMD_NODENAME $(date +%s.%N)" >> "$out/runs.log"
`

// multiNodeCluster starts two real nodes, node1 with V100s and node2 with
// K80s (2 GPUs of 4 shards each), the TaskProlog installed, and the task
// script in the output directory.
func multiNodeCluster(t *testing.T) (c *slurmtest.Cluster, state, out string) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts real Slurm daemons; run without -short")
	}
	state, err := os.MkdirTemp("", "elastico-adapter-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	os.Chmod(state, 0o755)
	prolog := filepath.Join(state, "taskprolog.sh")
	if err := InstallTaskProlog(prolog, filepath.Join(state, "env")); err != nil {
		t.Fatal(err)
	}
	c = slurmtest.Start(t, slurmtest.Options{Nodes: 2, GPUs: 2, ShardsPerGPU: 4, CPUs: 8, TaskProlog: prolog,
		Features: []string{"gpu_v100", "gpu_k80"}})
	out = filepath.Join(c.Root, "out")
	if err := os.WriteFile(filepath.Join(out, "task.sh"), []byte(taskScript), 0o755); err != nil {
		t.Fatal(err)
	}
	return c, state, out
}

// taskRuns reads runs.log: per job, run and node, the start and end times
// (0: none), failing the test on a task recorded twice.
func taskRuns(t *testing.T, out string) map[string][2]float64 {
	t.Helper()
	b, _ := os.ReadFile(filepath.Join(out, "runs.log"))
	runs := map[string][2]float64{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) < 4 {
			continue
		}
		key := strings.Join(f[1:4], ".")
		if f[0] == "dup" {
			t.Errorf("task %s ran twice", key)
			continue
		}
		ts, _ := strconv.ParseFloat(f[4], 64)
		r := runs[key]
		if f[0] == "start" {
			r[0] = ts
		} else {
			r[1] = ts
		}
		runs[key] = r
	}
	return runs
}

// TestSlurmMultiNode runs the adapter with pds on two real nodes of two
// GPU models: a gang of four GPUs that only both nodes together hold, a job
// measured on V100s, one on K80s, and one on H100s, which the cluster
// lacks. slurmctld and the adapter restart while the gang runs. The gang
// must run once, on both nodes, each task with its node's GPUs and rank;
// each other job on its model's node; the H100 job never.
func TestSlurmMultiNode(t *testing.T) {
	t0 := time.Now()
	c, state, out := multiNodeCluster(t)
	t.Logf("two nodes up in %v: %v", time.Since(t0).Round(time.Millisecond), c.Addrs)
	logs := &syncBuffer{}
	sched := &recorder{inner: newScheduler(t), logf: func(f string, a ...any) { fmt.Fprintf(logs, "PLAN "+f+"\n", a...) }}
	cli := &CLI{Conf: c.Conf}
	var adapter *Adapter
	startAdapter := func() (stop func()) {
		a, err := New(Config{Slurm: cli, Scheduler: sched, StateDir: state, GPUMemory: 80,
			GPUModelMemory: map[string]float64{"V100": 16, "K80": 12}, Logger: slog.New(slog.NewTextHandler(logs, nil))})
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
		return func() { cancel(); <-done; a.Close() }
	}
	type job struct {
		name, comment string
		sleep, id     int
		nodes         []string // where it must run; nil: never
	}
	jobs := []*job{
		{name: "gang", comment: "elastico:train gpt spread opt=sgd ref=64 | b=64 g=4 sm=1 mem=10 tput=400", sleep: 8, nodes: c.Nodes},
		{name: "volta", comment: "elastico:train resnet ref=64 | b=64 sm=.5 mem=6 tput=300 gpu=V100", sleep: 3, nodes: c.Nodes[:1]},
		{name: "kepler", comment: "elastico:infer llama | kv=.3 seqs=32 sm=.5 mem=6 tput=200 gpu=K80", sleep: 3, nodes: c.Nodes[1:]},
		{name: "hopper", comment: "elastico:infer llama | kv=.3 seqs=32 sm=.5 mem=6 tput=900 gpu=H100"},
	}
	var err error
	for _, j := range jobs {
		if j.id, err = c.Sbatch("--hold", "--comment="+j.comment, "-J", j.name, "-o", out+"/%j.log", "--wrap", "srun "+out+"/task.sh "+strconv.Itoa(j.sleep)); err != nil {
			t.Fatalf("sbatch %s: %v", j.name, err)
		}
	}
	gang := jobs[0]
	stop := startAdapter()
	t.Cleanup(func() { stop() })
	waitUntil := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(3 * time.Minute) // only stops a hung test
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not after 3 minutes\nadapter log:\n%s", what, logs)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	started := func(j *job, run int, node string) bool {
		_, err := os.Stat(filepath.Join(out, fmt.Sprintf("%d.%d.%s.env", j.id, run, node)))
		return err == nil
	}
	waitUntil("the gang's tasks started on both nodes", func() bool { return started(gang, 0, c.Nodes[0]) && started(gang, 0, c.Nodes[1]) })
	at := time.Now()
	stop()
	c.RestartController()
	stop = startAdapter()
	t.Logf("restarted the adapter and slurmctld at %v, the gang's tasks started (took %v)", at.Sub(t0).Round(time.Millisecond), time.Since(at).Round(time.Millisecond))

	slurmJobs := func() map[int]Job {
		js, err := cli.Jobs(context.Background())
		m := map[int]Job{}
		for _, j := range js {
			m[j.ID] = j
		}
		if err != nil {
			return nil
		}
		return m
	}
	// The journal, replaced atomically, says what the running adapter saw.
	waitUntil("the adapter saw every runnable job end", func() bool {
		jr, err := loadJournal(filepath.Join(state, "journal.json"))
		if err != nil {
			return false
		}
		for _, j := range jobs {
			if r := jr.jobs[j.id]; j.nodes != nil && (r == nil || r.Phase != PhaseDone) {
				return false
			}
		}
		return true
	})
	stop()
	stop = func() {}
	final := slurmJobs()
	runs := taskRuns(t, out)
	records := map[int]Record{}
	for _, r := range adapter.Records() {
		records[r.SlurmID] = r
	}
	var table strings.Builder
	for _, j := range jobs {
		sj, rec := final[j.id], records[j.id]
		if j.nodes == nil {
			if rec.SlurmID != 0 || !sj.Held() || sj.TresPerNode != "" {
				t.Errorf("job %s (%d) ran or was touched: record %+v, state %s, gres %q", j.name, j.id, rec, sj.State, sj.TresPerNode)
			}
			continue
		}
		if sj.State != "COMPLETED" || sj.Restarts != 0 || len(rec.Launches) != 1 || rec.Launches[0].Placed != "ok" {
			t.Errorf("job %s (%d): %s, %d restarts, launches %+v; want COMPLETED once, placed ok", j.name, j.id, sj.State, sj.Restarts, rec.Launches)
			continue
		}
		l := rec.Launches[0]
		if !sched.chose(strconv.Itoa(j.id), l.ConfigID, l.GPUs) {
			t.Errorf("job %s: %s on %v was in no plan", j.name, l.ConfigID, l.GPUs)
		}
		if got := expandHostlist(sj.Nodes); !slices.Equal(got, j.nodes) {
			t.Errorf("job %s ran on %v, want %v", j.name, got, j.nodes)
		}
		for k, node := range j.nodes {
			r, ok := runs[fmt.Sprintf("%d.0.%s", j.id, node)]
			if !ok || r[1] == 0 {
				t.Errorf("job %s: no whole task on %s (%v)", j.name, node, r)
			}
			env := readEnv(t, filepath.Join(out, fmt.Sprintf("%d.0.%s.env", j.id, node)))
			var mine []string
			for _, g := range l.GPUs {
				if strings.HasPrefix(g, node+"/") {
					mine = append(mine, g)
				}
			}
			want := map[string]string{
				"ELASTICO_CONFIG": l.ConfigID, "ELASTICO_GENERATION": "1", "ELASTICO_GPUS": strings.Join(l.GPUs, ","),
				"ELASTICO_NODE_GPUS": strings.Join(mine, ","), "ELASTICO_NNODES": strconv.Itoa(len(j.nodes)), "ELASTICO_NODE_RANK": strconv.Itoa(k),
				"ELASTICO_WORLD_SIZE": strconv.Itoa(len(l.GPUs)), "ELASTICO_LOCAL_WORLD_SIZE": strconv.Itoa(len(mine)),
				"ELASTICO_RANK_BASE": strconv.Itoa(k * len(mine)), "ELASTICO_LOCAL_RANK": "0", "ELASTICO_RANK": strconv.Itoa(k * len(mine)),
				"ELASTICO_MASTER_ADDR": c.Addrs[j.nodes[0]], "ELASTICO_MASTER_PORT": strconv.Itoa(masterPort(j.id)),
				"SLURM_NODEID": strconv.Itoa(k), "SLURMD_NODENAME": node,
			}
			if len(mine) == 2 {
				want["CUDA_VISIBLE_DEVICES"] = "0,1"
			}
			switch j.name {
			case "volta":
				want["ELASTICO_MEMORY_FRACTION"] = strconv.FormatFloat(6.0/16, 'f', 4, 64)
			case "kepler":
				want["ELASTICO_MEMORY_FRACTION"] = strconv.FormatFloat(6.0/12, 'f', 4, 64)
			}
			for key, v := range want {
				if env[key] != v {
					t.Errorf("job %s on %s: %s=%q, want %q", j.name, node, key, env[key], v)
				}
			}
			fmt.Fprintf(&table, "%-6s %3d %-8s %-6s rank %s/%s base %s local %s world %s gpus %-26s cuda %-4s shards %-2s master %s:%s mem %s ran %.1f-%.1f s\n",
				j.name, j.id, l.ConfigID, node, env["ELASTICO_NODE_RANK"], env["ELASTICO_NNODES"], env["ELASTICO_RANK_BASE"], env["ELASTICO_LOCAL_RANK"],
				env["ELASTICO_WORLD_SIZE"], env["ELASTICO_NODE_GPUS"], env["CUDA_VISIBLE_DEVICES"], env["SLURM_SHARDS_ON_NODE"],
				env["ELASTICO_MASTER_ADDR"], env["ELASTICO_MASTER_PORT"], env["ELASTICO_MEMORY_FRACTION"],
				r[0]-float64(t0.UnixNano())/1e9, r[1]-float64(t0.UnixNano())/1e9)
		}
	}
	if !strings.Contains(logs.String(), fmt.Sprintf(`job left out of the plan" job=%d`, jobs[3].id)) {
		t.Errorf("the log does not say job hopper (%d) was left out of the plan", jobs[3].id)
	}
	t.Logf("tasks (times from the test's start; restart at %.1f s):\n%s", at.Sub(t0).Seconds(), table.String())
	t.Logf("total %v; adapter log:\n%s", time.Since(t0).Round(time.Millisecond), logs)
}

// TestSlurmMultiNodeGrows grows a running job from one real node to two:
// requeuehold, then NumNodes and NodeList set on the held job with its new
// run's environment, and a release; slurmctld and the adapter restart
// between the requeue and the release. Run 1 must run once, on both nodes,
// with the new configuration and ranks; run 0 on the first node alone.
func TestSlurmMultiNodeGrows(t *testing.T) {
	c, state, out := multiNodeCluster(t)
	id, err := c.Sbatch("--hold", "--comment=elastico:train gpt spread ref=64 | b=64 g=2 sm=1 mem=10 tput=100 | b=128 g=4 sm=1 mem=10 tput=180",
		"-o", out+"/%j.log", "--wrap", "srun "+out+"/task.sh 30")
	if err != nil {
		t.Fatal(err)
	}
	n1, n2 := c.Nodes[0], c.Nodes[1]
	one := elastico.Assignment{ConfigID: "b64-g2", GPUs: []string{n1 + "/gpu0", n1 + "/gpu1"}}
	both := elastico.Assignment{ConfigID: "b128-g4", GPUs: []string{n1 + "/gpu0", n1 + "/gpu1", n2 + "/gpu0", n2 + "/gpu1"}}
	grow := false
	logs := &syncBuffer{}
	cfg := Config{Slurm: &CLI{Conf: c.Conf}, StateDir: state, GPUMemory: 16, Logger: slog.New(slog.NewTextHandler(logs, nil)),
		Scheduler: &scripted{plan: func(st *elastico.State) *elastico.Plan {
			if !grow {
				return startAs(map[string]elastico.Assignment{strconv.Itoa(id): one})(st)
			}
			return flip(strconv.Itoa(id), one, both)(st)
		}}}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		a.Close()
		if t.Failed() {
			t.Logf("adapter log:\n%s", logs)
		}
	})
	runFile := func(run int, node string) string {
		return filepath.Join(out, fmt.Sprintf("%d.%d.%s.env", id, run, node))
	}
	deadline := time.Now().Add(2 * time.Minute) // only stops a hung test
	restarted := false
	for {
		if _, err := a.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(runFile(0, n1)); err == nil {
			grow = true // run 0 has started: the plan grows it
		}
		// Between the requeue and the relaunch onto two nodes, slurmctld
		// and the adapter restart.
		if r := a.Records(); !restarted && r[0].Phase == PhaseRelaunch {
			a.Close()
			c.RestartController()
			if a, err = New(cfg); err != nil {
				t.Fatal(err)
			}
			restarted = true
			t.Logf("restarted slurmctld and the adapter between the requeue and the relaunch")
		}
		_, e1 := os.Stat(runFile(1, n1))
		_, e2 := os.Stat(runFile(1, n2))
		if r := a.Records(); e1 == nil && e2 == nil && len(r[0].Launches) == 2 && r[0].Launches[1].Placed != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("run 1 not on both nodes after 2 minutes: %+v\nadapter log:\n%s", a.Records(), logs)
		}
		time.Sleep(300 * time.Millisecond)
	}
	var placed []string
	for _, l := range a.Records()[0].Launches {
		placed = append(placed, fmt.Sprintf("gen %d run %d %s %s", l.Gen, l.Run, l.ConfigID, l.Placed))
	}
	if !restarted {
		t.Errorf("the job was never seen between its requeue and its relaunch")
	}
	runs := taskRuns(t, out) // fails on a task recorded twice
	for _, key := range []string{"0." + n1, "1." + n1, "1." + n2} {
		if runs[strconv.Itoa(id)+"."+key][0] == 0 {
			t.Errorf("no start of run.node %s", key)
		}
	}
	if js, err := (&CLI{Conf: c.Conf}).Jobs(context.Background()); err != nil || len(js) != 1 || js[0].Restarts != 1 || js[0].State != "RUNNING" {
		t.Errorf("squeue: %+v, %v; want the job RUNNING after one restart", js, err)
	}
	if want := []string{"gen 1 run 0 b64-g2 ok", "gen 2 run 1 b128-g4 ok"}; !slices.Equal(placed, want) {
		t.Errorf("launches %q, want %q", placed, want)
	}
	if _, err := os.Stat(runFile(0, n2)); err == nil {
		t.Errorf("run 0 ran on %s too", n2)
	}
	for k, node := range c.Nodes {
		env := readEnv(t, runFile(1, node))
		for key, v := range map[string]string{"ELASTICO_CONFIG": "b128-g4", "ELASTICO_NNODES": "2", "ELASTICO_NODE_RANK": strconv.Itoa(k),
			"ELASTICO_RANK": strconv.Itoa(2 * k), "ELASTICO_WORLD_SIZE": "4", "CUDA_VISIBLE_DEVICES": "0,1", "SLURM_RESTART_COUNT": "1",
			"ELASTICO_MASTER_ADDR": c.Addrs[n1], "SLURM_JOB_NUM_NODES": "2"} {
			if env[key] != v {
				t.Errorf("run 1 on %s: %s=%q, want %q", node, key, env[key], v)
			}
		}
		t.Logf("run 1 on %s: rank %s of %s nodes, GPUs %s (CUDA %s), master %s:%s, restart %s", node, env["ELASTICO_NODE_RANK"], env["ELASTICO_NNODES"],
			env["ELASTICO_NODE_GPUS"], env["CUDA_VISIBLE_DEVICES"], env["ELASTICO_MASTER_ADDR"], env["ELASTICO_MASTER_PORT"], env["SLURM_RESTART_COUNT"])
	}
	if env := readEnv(t, runFile(0, n1)); env["ELASTICO_NNODES"] != "1" || env["SLURM_JOB_NUM_NODES"] != "1" || env["ELASTICO_CONFIG"] != "b64-g2" {
		t.Errorf("run 0: NNODES %q, SLURM_JOB_NUM_NODES %q, config %q; want one node, b64-g2", env["ELASTICO_NNODES"], env["SLURM_JOB_NUM_NODES"], env["ELASTICO_CONFIG"])
	}
}
