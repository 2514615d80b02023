package pds

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
)

// fourGPUNodes is a cluster of n nodes of four T4s each, nodes n0, n1, …
// and GPUs n0g0, n0g1, ….
func fourGPUNodes(n int) elastico.Cluster {
	var cl elastico.Cluster
	for i := range n {
		nd := elastico.Node{ID: fmt.Sprintf("n%d", i), CPU: 64, RAM: 256}
		for k := range 4 {
			nd.GPUs = append(nd.GPUs, elastico.GPU{ID: fmt.Sprintf("n%dg%d", i, k), Model: "T4", Memory: 16})
		}
		cl.Nodes = append(cl.Nodes, nd)
	}
	return cl
}

// runningOn is a job of family fam running under configuration cfg on
// gpus, arrived an hour before now.
func runningOn(id string, fam []elastico.Profile, cfg string, now time.Time, gpus ...string) elastico.Job {
	return elastico.Job{
		ID: id, Profiles: fam, ReferenceBatch: 32, Arrival: now.Add(-time.Hour),
		Running: &elastico.Assignment{ConfigID: cfg, GPUs: gpus},
	}
}

// fragmented is two 4-GPU nodes, two one-GPU jobs on the first and one on
// the second, and a newcomer worth far more on four GPUs than on two.
func fragmented(now time.Time) *elastico.State {
	one := trainingFamily("small", 100, 1)
	return &elastico.State{Now: now, Cluster: fourGPUNodes(2), Jobs: []elastico.Job{
		runningOn("a", one, "x1", now, "n0g0"),
		runningOn("b", one, "x1", now, "n0g1"),
		runningOn("c", one, "x1", now, "n1g0"),
		{ID: "new", Profiles: trainingFamily("big", 100, 1, 2, 4), ReferenceBatch: 32, Arrival: now},
	}}
}

// planOf is s's plan for st.
func planOf(t *testing.T, s *Scheduler, st *elastico.State) *elastico.Plan {
	t.Helper()
	plan, err := s.Epoch(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// TestConsolidateMovesSmallJobs: two 4-GPU nodes, two one-GPU jobs on
// the first and one on the second. A newcomer is worth far more on four
// GPUs than on two: the two jobs of the first node move to the second's
// free GPUs and the newcomer takes the first node whole. At the next
// epoch, with the plan applied and nothing changed, nothing moves.
func TestConsolidateMovesSmallJobs(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	st := fragmented(now)
	s, err := New(Config{Clock: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	plan := planOf(t, s, st)
	checkPlan(t, st, plan, nil, iac.Limit{})
	d := plan.Decisions[3]
	if d.Assignment == nil || d.Assignment.ConfigID != "x4" {
		t.Fatalf("the newcomer gets %v (%v), want x4 on a whole node", d.Assignment, d.Status)
	}
	for _, g := range d.Assignment.GPUs {
		if g[:2] != "n0" {
			t.Errorf("the newcomer runs on %v, want node n0's four GPUs", d.Assignment.GPUs)
			break
		}
	}
	for i, id := range []string{"a", "b"} {
		a := plan.Decisions[i].Assignment
		if a == nil || a.ConfigID != "x1" || a.GPUs[0][:2] != "n1" {
			t.Errorf("job %s: %v (%v), want x1 on a free GPU of n1", id, a, plan.Decisions[i].Status)
		}
	}
	if a := plan.Decisions[2].Assignment; a == nil || a.GPUs[0] != "n1g0" {
		t.Errorf("job c: %v, want it where it runs (n1g0)", a)
	}

	next := apply(st, plan)
	next.Now = now.Add(time.Minute)
	again := planOf(t, s, next)
	if len(again.Actions) != 0 {
		t.Errorf("the next epoch, nothing changed, has %d actions: %v", len(again.Actions), again.Actions)
	}
}

// TestConsolidateMovesSpreadReplicas: a spread job's replica takes the
// one GPU of node n0 that a newcomer's four would need; it moves to an
// empty GPU of another node, the job still spread, and the newcomer takes
// n0 whole.
func TestConsolidateMovesSpreadReplicas(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	wide := trainingFamily("wide", 100, 6)
	spread := runningOn("spread", wide, "x6", now, "n0g0", "n1g0", "n1g1", "n1g2", "n1g3", "n2g0")
	spread.Spread = true
	st := &elastico.State{Now: now, Cluster: fourGPUNodes(3), Jobs: []elastico.Job{
		spread,
		{ID: "new", Profiles: trainingFamily("big", 100, 4), ReferenceBatch: 32, Arrival: now},
	}}
	plan := epochOnce(t, st)
	checkPlan(t, st, plan, nil, iac.Limit{})
	d := plan.Decisions[1]
	if d.Assignment == nil {
		t.Fatalf("the newcomer waits: %v", d.Status)
	}
	for _, g := range d.Assignment.GPUs {
		if g[:2] != "n0" {
			t.Errorf("the newcomer runs on %v, want node n0's four GPUs", d.Assignment.GPUs)
			break
		}
	}
	a := plan.Decisions[0].Assignment
	if a == nil || a.ConfigID != "x6" {
		t.Fatalf("the spread job: %v (%v), want x6 still", a, plan.Decisions[0].Status)
	}
	for _, g := range a.GPUs {
		if g[:2] == "n0" {
			t.Errorf("the spread job keeps %s on n0: %v", g, a.GPUs)
		}
	}
}

// TestConsolidateOnlyWhenItPays: a job runs on two GPUs and would do
// twice as much on four; each node holds a one-GPU job besides. Moved
// after an hour where it runs, one of them makes room (the growth pays
// for its restart); started a moment ago (within MinRunTime, where
// keeping a job is worth its whole value), they stay, and so does the job
// on two GPUs.
func TestConsolidateOnlyWhenItPays(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	one := trainingFamily("small", 100, 1)
	grow := trainingFamily("grow", 100, 2, 4)
	st := &elastico.State{Now: now, Cluster: fourGPUNodes(2), Jobs: []elastico.Job{
		runningOn("grow", grow, "x2", now, "n1g0", "n1g1"),
		runningOn("other", one, "x1", now, "n0g0"),
		runningOn("b", one, "x1", now, "n1g2"),
	}}
	plan := epochOnce(t, st)
	checkPlan(t, st, plan, nil, iac.Limit{})
	if a := plan.Decisions[0].Assignment; a == nil || a.ConfigID != "x4" {
		t.Errorf("the job on two GPUs: %v (%v), want x4 on n0", a, plan.Decisions[0].Status)
	}

	st.Carry.Since = map[string]time.Time{"other": now.Add(-10 * time.Second), "b": now.Add(-10 * time.Second)}
	plan = epochOnce(t, st)
	checkPlan(t, st, plan, nil, iac.Limit{})
	if len(plan.Actions) != 0 {
		t.Errorf("with the one-GPU jobs started 10 s ago: %d actions, want none: %v", len(plan.Actions), plan.Actions)
	}
}

// TestConsolidatePinned: where the host cannot move a job
// (Config.Pinned), no job moves to make room for a gang.
func TestConsolidatePinned(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	st := fragmented(now)
	s, err := New(Config{Clock: fixedClock(), Pinned: true})
	if err != nil {
		t.Fatal(err)
	}
	plan := planOf(t, s, st)
	checkPinned(t, st, plan, nil, iac.Limit{})
	for i := range 3 {
		if a := plan.Decisions[i].Assignment; a == nil || a.GPUs[0] != st.Jobs[i].Running.GPUs[0] {
			t.Errorf("job %s: %v (%v), want it where it runs", st.Jobs[i].ID, a, plan.Decisions[i].Status)
		}
	}
}
