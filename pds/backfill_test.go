package pds

import (
	"fmt"
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
)

// trainingFamily is a family of one configuration per GPU count, each
// GPU adding perGPU samples/s.
func trainingFamily(name string, perGPU float64, counts ...int) []elastico.Profile {
	var fam []elastico.Profile
	for _, n := range counts {
		fam = append(fam, elastico.Profile{
			Family: name, Class: elastico.Training,
			Config:     elastico.Configuration{ID: fmt.Sprintf("x%d", n), BatchSize: 32 * n, GPUs: n},
			Demand:     elastico.Demand{GPUs: n, SM: 1, GPUMemory: 4, CPU: 1, RAM: 4},
			Throughput: perGPU * float64(n), Efficiency: 1,
		})
	}
	return fam
}

// TestBackfillFragmentedNodes: two 4-GPU nodes, with two GPUs taken on
// one and three on the other. The waiting job is worth most on four GPUs,
// which no node has together, and no node can be emptied for it (the
// other has too few free GPUs for the jobs it would move): it starts on
// two GPUs of one node rather than wait for a node that may never free
// up.
func TestBackfillFragmentedNodes(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	st := &elastico.State{Now: now}
	for i := range 2 {
		n := elastico.Node{ID: fmt.Sprintf("n%d", i), CPU: 64, RAM: 256}
		for k := range 4 {
			n.GPUs = append(n.GPUs, elastico.GPU{ID: fmt.Sprintf("n%dg%d", i, k), Model: "T4", Memory: 16})
		}
		st.Cluster.Nodes = append(st.Cluster.Nodes, n)
	}
	one := trainingFamily("small", 100, 1)
	running := []string{"n0g0", "n0g1", "n1g0", "n1g1", "n1g2"}
	for i, g := range running {
		st.Jobs = append(st.Jobs, elastico.Job{
			ID: fmt.Sprintf("run%d", i), Profiles: one, ReferenceBatch: 32, Arrival: now.Add(-time.Hour),
			Running: &elastico.Assignment{ConfigID: "x1", GPUs: []string{g}},
		})
	}
	st.Jobs = append(st.Jobs, elastico.Job{
		ID: "new", Profiles: trainingFamily("big", 100, 1, 2, 4), ReferenceBatch: 32, Arrival: now,
		Spread: true, // allowed, but no node is too small for it: it stays on one
	})
	plan := epochOnce(t, st)
	checkPlan(t, st, plan, nil, iac.Limit{})
	d := plan.Decisions[len(plan.Decisions)-1]
	if d.Assignment == nil {
		t.Fatalf("the new job waits (%v) beside four empty GPUs", d.Status)
	}
	if got := d.Assignment.ConfigID; got != "x2" {
		t.Errorf("the new job runs under %s, want x2 (two GPUs of one node)", got)
	}
	if gs := d.Assignment.GPUs; len(gs) != 2 || gs[0][:2] != gs[1][:2] {
		t.Errorf("the new job runs on %v, want two GPUs of one node", gs)
	}
	for i := range running {
		if a := plan.Decisions[i].Assignment; a == nil || a.GPUs[0] != st.Jobs[i].Running.GPUs[0] {
			t.Errorf("job %s moved or stopped: %v", st.Jobs[i].ID, plan.Decisions[i].Status)
		}
	}
}

// TestBackfillWhatTheMarketFreed: two 4-GPU nodes, each held whole by a
// job that gains little from its last two GPUs. The market shrinks both
// for a newcomer worth most on four, which no node then has; the GPUs it
// freed go to the newcomer on two GPUs of one node, not back to the job
// that gave them up, also once the newcomer has waited long enough to
// have GPUs held for it.
func TestBackfillWhatTheMarketFreed(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	st := &elastico.State{}
	for i := range 2 {
		n := elastico.Node{ID: fmt.Sprintf("n%d", i), CPU: 64, RAM: 256}
		for k := range 4 {
			n.GPUs = append(n.GPUs, elastico.GPU{ID: fmt.Sprintf("n%dg%d", i, k), Model: "T4", Memory: 16})
		}
		st.Cluster.Nodes = append(st.Cluster.Nodes, n)
	}
	sublinear := trainingFamily("sublinear", 100, 1, 2, 4)
	sublinear[1].Throughput, sublinear[2].Throughput = 120, 144 // 0.6 of linear per doubling
	for i := range 2 {
		st.Jobs = append(st.Jobs, elastico.Job{
			ID: fmt.Sprintf("run%d", i), Profiles: sublinear, ReferenceBatch: 32, Arrival: now,
			Running: &elastico.Assignment{ConfigID: "x4", GPUs: []string{fmt.Sprintf("n%dg0", i), fmt.Sprintf("n%dg1", i), fmt.Sprintf("n%dg2", i), fmt.Sprintf("n%dg3", i)}},
		})
	}
	st.Jobs = append(st.Jobs, elastico.Job{ID: "new", Profiles: trainingFamily("linear", 100, 1, 2, 4), ReferenceBatch: 32, Arrival: now})
	for _, waited := range []time.Duration{time.Minute, 2 * DefaultReserveAfter} {
		st.Now = now.Add(waited)
		plan := epochOnce(t, st)
		checkPlan(t, st, plan, nil, iac.Limit{})
		d := plan.Decisions[2]
		if d.Assignment == nil {
			t.Errorf("after %v the new job waits (%v) though the market shrank a job for it", waited, d.Status)
			continue
		}
		if gs := d.Assignment.GPUs; len(gs) != 2 || gs[0][:2] != gs[1][:2] {
			t.Errorf("after %v the new job runs on %v, want two GPUs of one node", waited, gs)
		}
	}
}
