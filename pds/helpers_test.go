package pds

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
	"github.com/elastico/elastico/internal/sets"
	"github.com/elastico/elastico/placement"
	"github.com/elastico/elastico/rst"
)

// tablePredictor is a fake Predictor: table["victim|aggressor"], each side
// "family/config" or, failing that, "family"; 1 when absent.
type tablePredictor map[string]float64

func (t tablePredictor) Slowdown(v, a *elastico.Profile) float64 {
	vf, af := v.Family+"/"+v.Config.ID, a.Family+"/"+a.Config.ID
	for _, k := range []string{vf + "|" + af, vf + "|" + a.Family, v.Family + "|" + af, v.Family + "|" + a.Family} {
		if s, ok := t[k]; ok {
			return s
		}
	}
	return 1
}

// fixedClock advances one millisecond per reading, so Stats' durations are
// the same every run.
func fixedClock() func() time.Time {
	t := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(time.Millisecond)
		return t
	}
}

// families used by random states; the table predictor flags some pairs.
var families = []string{"resnet", "bert", "gpt", "vit", "llama"}

var randomPredictor = tablePredictor{
	"bert|gpt": 1.5, "gpt|bert": 1.3,
	"llama|llama": 1.4,
	"vit|resnet":  1.25, "resnet|vit": 1.05,
	"gpt|gpt": 1.12,
}

// randomState is a cluster of mixed nodes and jobs with families of one to
// five configurations; nothing runs yet.
func randomState(r *rand.Rand, nodes, jobs int) *elastico.State {
	st := &elastico.State{Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	for i := range nodes {
		n := elastico.Node{ID: fmt.Sprintf("n%d", i), CPU: float64(8 + r.IntN(56)), RAM: float64(64 + r.IntN(448))}
		mem := []float64{16, 40, 80}[r.IntN(3)]
		shared := r.IntN(4) > 0
		for k := range 1 + r.IntN(4) {
			n.GPUs = append(n.GPUs, elastico.GPU{ID: fmt.Sprintf("n%dg%d", i, k), Model: "A100", Memory: mem, Shared: shared})
		}
		st.Cluster.Nodes = append(st.Cluster.Nodes, n)
	}
	for i := range jobs {
		fam := families[r.IntN(len(families))]
		j := elastico.Job{
			ID:      fmt.Sprintf("j%02d", i),
			Class:   elastico.Class(r.IntN(2)),
			Weight:  []float64{0, 1, 2, 0.5}[r.IntN(4)],
			Arrival: st.Now.Add(-time.Duration(r.IntN(3600)) * time.Second),
			Spread:  r.IntN(5) == 0,
		}
		if r.IntN(3) == 0 {
			j.Priority = r.IntN(3)
		}
		best := 0.0
		for k := range 1 + r.IntN(5) {
			g := []int{1, 1, 1, 2, 4}[r.IntN(5)]
			batch := 16 << r.IntN(4)
			p := elastico.Profile{
				Family: fam, Class: j.Class,
				Config:     elastico.Configuration{ID: fmt.Sprintf("c%d", k), BatchSize: batch, GPUs: g, AMP: r.IntN(2) == 0, Checkpointing: r.IntN(2) == 0},
				Demand:     elastico.Demand{GPUs: g, SM: 0.1 + 0.9*r.Float64(), GPUMemory: 2 + 30*r.Float64(), CPU: float64(1 + r.IntN(6)), RAM: float64(4 + r.IntN(40))},
				Throughput: float64(g) * (50 + 150*r.Float64()),
			}
			if j.Class == elastico.Training {
				p.Efficiency = 0.5 + 0.5*r.Float64()
			}
			best = max(best, p.Throughput)
			j.Profiles = append(j.Profiles, p)
		}
		if r.IntN(4) == 0 {
			j.Floor = best * r.Float64()
		}
		if j.Class == elastico.Training {
			j.ReferenceBatch = j.Profiles[0].Config.BatchSize // the learning rate was tuned at the first
		}
		st.Jobs = append(st.Jobs, j)
	}
	return st
}

// epochOnce is the plan of a fresh scheduler with every default (and a
// fixed clock) for st.
func epochOnce(t *testing.T, st *elastico.State) *elastico.Plan {
	t.Helper()
	s, err := New(Config{Clock: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := s.Epoch(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// apply returns the State after a host applied plan to st: every decision's
// assignment becomes the job's Running one, and the Carry is kept.
func apply(st *elastico.State, plan *elastico.Plan) *elastico.State {
	next := *st
	next.Jobs = slices.Clone(st.Jobs)
	for i := range next.Jobs {
		j := &next.Jobs[i]
		if a := plan.Decisions[i].Assignment; a != nil {
			if j.Running == nil || j.Running.ConfigID != a.ConfigID || !slices.Equal(j.Running.GPUs, a.GPUs) {
				j.Observed = elastico.Observation{} // measured where it no longer runs
			}
			j.Running = &elastico.Assignment{ConfigID: a.ConfigID, GPUs: slices.Clone(a.GPUs)}
		} else {
			j.Running, j.Observed = nil, elastico.Observation{}
		}
	}
	next.Carry = plan.Carry
	return &next
}

// checkPlan fails t if plan breaks a guarantee of Epoch on st: one decision
// per job in order; capacity of every GPU (SM within overs, memory, an
// unshared GPU holds one job, at most maxJobs) and node; gangs on one node
// unless spread; floors; no co-located pair lim forbids; actions
// that take the State's assignments to the decisions.
func checkPlan(t *testing.T, st *elastico.State, plan *elastico.Plan, pred elastico.Predictor, lim iac.Limit) {
	t.Helper()
	if len(plan.Decisions) != len(st.Jobs) {
		t.Fatalf("%d decisions for %d jobs", len(plan.Decisions), len(st.Jobs))
	}
	idx := st.Cluster.Index()
	type acc struct {
		sm, mem float64
		jobs    []int
	}
	gpus := map[string]*acc{}
	cpu := map[int]float64{}
	ram := map[int]float64{}
	const slack = 1e-6
	for i, d := range plan.Decisions {
		j := &st.Jobs[i]
		if d.JobID != j.ID {
			t.Fatalf("decision %d is for %q, want %q", i, d.JobID, j.ID)
		}
		if d.Assignment == nil {
			if d.Status.Code == elastico.Scheduled || len(d.Status.Reasons) == 0 {
				t.Errorf("job %s waits with status %v", j.ID, d.Status)
			}
			if (j.Running != nil) != (d.Status.Code == elastico.Preempted) {
				t.Errorf("job %s (running %v) waits with code %v", j.ID, j.Running != nil, d.Status.Code)
			}
			continue
		}
		if d.Status.Code != elastico.Scheduled {
			t.Errorf("job %s placed with status %v", j.ID, d.Status)
		}
		p, ok := j.Profile(d.Assignment.ConfigID)
		if !ok {
			t.Fatalf("job %s assigned unknown configuration %q", j.ID, d.Assignment.ConfigID)
		}
		if j.Floor > 0 && p.Throughput < j.Floor {
			t.Errorf("job %s runs %s at %g, below its floor %g", j.ID, p.Config.ID, p.Throughput, j.Floor)
		}
		if len(d.Assignment.GPUs) != p.Demand.GPUs {
			t.Errorf("job %s has %d GPUs for %d replicas", j.ID, len(d.Assignment.GPUs), p.Demand.GPUs)
		}
		node0 := idx[d.Assignment.GPUs[0]].Node
		for _, g := range d.Assignment.GPUs {
			r, ok := idx[g]
			if !ok {
				t.Fatalf("job %s on unknown GPU %q", j.ID, g)
			}
			if !j.Spread && r.Node != node0 {
				t.Errorf("gang %s spans nodes", j.ID)
			}
			a := gpus[g]
			if a == nil {
				a = &acc{}
				gpus[g] = a
			}
			if slices.Contains(a.jobs, i) {
				t.Errorf("job %s holds GPU %s twice", j.ID, g)
			}
			a.sm += p.Demand.SM
			a.mem += p.Demand.GPUMemory
			a.jobs = append(a.jobs, i)
			cpu[r.Node] += p.Demand.CPU
			ram[r.Node] += p.Demand.RAM
		}
		if d.Slowdown < 1 {
			t.Errorf("job %s: slowdown %g < 1", j.ID, d.Slowdown)
		}
	}
	for id, a := range gpus {
		r := idx[id]
		hw := st.Cluster.Nodes[r.Node].GPUs[r.GPU]
		if a.sm > 1+slack || a.mem > hw.Memory+slack || len(a.jobs) > placement.DefaultMaxJobsPerGPU || (!hw.Shared && len(a.jobs) > 1) {
			t.Errorf("GPU %s over capacity: SM %g, memory %g/%g, %d jobs (shared %v)", id, a.sm, a.mem, hw.Memory, len(a.jobs), hw.Shared)
		}
		if pred == nil {
			continue
		}
		for i, x := range a.jobs {
			for _, y := range a.jobs[i+1:] {
				px, _ := st.Jobs[x].Profile(plan.Decisions[x].Assignment.ConfigID)
				py, _ := st.Jobs[y].Profile(plan.Decisions[y].Assignment.ConfigID)
				sx, sy := pred.Slowdown(px, py), pred.Slowdown(py, px)
				if lim.Excess(sx, sy, iac.JobLimit(&st.Jobs[x], px), iac.JobLimit(&st.Jobs[y], py)) > 1e-12 {
					t.Errorf("GPU %s co-locates %s with %s: slowdowns %g and %g, which %v does not allow", id, st.Jobs[x].ID, st.Jobs[y].ID, sx, sy, lim)
				}
			}
		}
	}
	for n, v := range cpu {
		if v > st.Cluster.Nodes[n].CPU+slack || ram[n] > st.Cluster.Nodes[n].RAM+slack {
			t.Errorf("node %s over capacity: CPU %g/%g RAM %g/%g", st.Cluster.Nodes[n].ID, v, st.Cluster.Nodes[n].CPU, ram[n], st.Cluster.Nodes[n].RAM)
		}
	}
	// Applying the actions to the running assignments gives the decisions.
	now := map[string]*elastico.Assignment{}
	for i := range st.Jobs {
		if st.Jobs[i].Running != nil {
			now[st.Jobs[i].ID] = st.Jobs[i].Running
		}
	}
	phase := 0
	for _, a := range plan.Actions {
		ph := map[elastico.ActionKind]int{elastico.Preempt: 0, elastico.Migrate: 1, elastico.Reconfigure: 1, elastico.Start: 2}[a.Kind]
		if ph < phase {
			t.Errorf("action %v out of order", a)
		}
		phase = ph
		cur := now[a.JobID]
		switch a.Kind {
		case elastico.Start:
			if cur != nil {
				t.Errorf("start of running job %s", a.JobID)
			}
		case elastico.Preempt:
			if a.To != nil || a.Launch != (elastico.LaunchParams{}) {
				t.Errorf("preempt %s carries a target or launch parameters", a.JobID)
			}
		case elastico.Reconfigure:
			if cur == nil || !(sets.Subset(cur.GPUs, a.To.GPUs) || sets.Subset(a.To.GPUs, cur.GPUs)) {
				t.Errorf("reconfigure of %s moves it: %v", a.JobID, a)
			}
		case elastico.Migrate:
			if cur == nil {
				t.Errorf("migrate of waiting job %s", a.JobID)
			}
		}
		if a.Kind != elastico.Preempt {
			// The launch parameters are rst.Launch's for the target.
			var job *elastico.Job
			for i := range st.Jobs {
				if st.Jobs[i].ID == a.JobID {
					job = &st.Jobs[i]
				}
			}
			p, _ := job.Profile(a.To.ConfigID)
			var gs []rst.LaunchGPU
			for _, id := range a.To.GPUs {
				r := idx[id]
				hw := st.Cluster.Nodes[r.Node].GPUs[r.GPU]
				gs = append(gs, rst.LaunchGPU{Index: r.GPU, Memory: hw.Memory, Shared: hw.Shared})
			}
			if want := rst.Launch(job, p, gs); a.Launch != want {
				t.Errorf("action %v: launch %+v, want %+v", a, a.Launch, want)
			}
		}
		if a.Kind != elastico.Start && (a.From == nil || cur == nil || a.From.ConfigID != cur.ConfigID) {
			t.Errorf("action %v: From does not match the running assignment %v", a, cur)
		}
		now[a.JobID] = a.To
	}
	for i, d := range plan.Decisions {
		got := now[st.Jobs[i].ID]
		if (got == nil) != (d.Assignment == nil) || (got != nil && (got.ConfigID != d.Assignment.ConfigID || !slices.Equal(got.GPUs, d.Assignment.GPUs))) {
			if got != nil && d.Assignment != nil && got.ConfigID == d.Assignment.ConfigID && sets.Equal(got.GPUs, d.Assignment.GPUs) {
				continue
			}
			t.Errorf("job %s: actions lead to %v, decision says %v", st.Jobs[i].ID, got, d.Assignment)
		}
	}
}
