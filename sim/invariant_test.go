package sim

import (
	"context"
	"errors"
	"testing"

	"github.com/elastico/elastico"
)

// planPolicy returns the plan build makes of the state, every epoch.
func planPolicy(build func(st *elastico.State) *elastico.Plan) elastico.Scheduler {
	return policyFunc(func(_ context.Context, st *elastico.State) (*elastico.Plan, error) { return build(st), nil })
}

// startAll starts every waiting job under profile cfg of its family on gpus.
func startAll(st *elastico.State, gpus func(i int) []string) *elastico.Plan {
	p := &elastico.Plan{}
	for i, j := range st.Jobs {
		d := elastico.Decision{JobID: j.ID, Assignment: j.Running}
		if j.Running == nil {
			a := &elastico.Assignment{ConfigID: j.Profiles[0].Config.ID, GPUs: gpus(i)}
			d.Assignment = a
			p.Actions = append(p.Actions, elastico.Action{Kind: elastico.Start, JobID: j.ID, To: a})
		}
		p.Decisions = append(p.Decisions, d)
	}
	return p
}

func TestInvariantViolationsStopTheRun(t *testing.T) {
	tr := testTruth(t)
	big := func(id string) Job { return testJob(t, tr, id, "ResNet-50", 128, 1, 0, 600) } // 10.9 GiB, SM 0.88
	small := func(id string) Job { return testJob(t, tr, id, "ResNet-18", 16, 1, 0, 600) }
	gpu0 := func(int) []string { return []string{"gpu0000"} }
	unshared := testCluster(t, 2)
	unshared.Nodes[0].GPUs[0].Shared = false
	tests := []struct {
		name    string
		jobs    []Job
		cluster elastico.Cluster
		policy  elastico.Scheduler
		want    Invariant
	}{
		{"GPU memory exceeded", []Job{big("a"), big("b")}, testCluster(t, 2),
			planPolicy(func(st *elastico.State) *elastico.Plan { return startAll(st, gpu0) }), Capacity},
		{"SM share exceeded", []Job{big("a"), testJob(t, tr, "b", "ResNet-50", 16, 1, 0, 600)}, testCluster(t, 2),
			planPolicy(func(st *elastico.State) *elastico.Plan { return startAll(st, gpu0) }), Capacity},
		{"unshared GPU holds two jobs", []Job{small("a"), small("b")}, unshared,
			planPolicy(func(st *elastico.State) *elastico.Plan { return startAll(st, gpu0) }), Capacity},
		{"one decision missing", []Job{small("a"), small("b")}, testCluster(t, 2),
			planPolicy(func(st *elastico.State) *elastico.Plan {
				p := startAll(st, func(i int) []string { return []string{"gpu000" + string(rune('0'+i))} })
				p.Decisions = p.Decisions[:1]
				return p
			}), PlanShape},
		{"unknown configuration", []Job{small("a")}, testCluster(t, 1),
			planPolicy(func(st *elastico.State) *elastico.Plan {
				p := startAll(st, gpu0)
				p.Decisions[0].Assignment.ConfigID = "nope"
				return p
			}), PlanShape},
		{"unknown GPU", []Job{small("a")}, testCluster(t, 1),
			planPolicy(func(st *elastico.State) *elastico.Plan {
				return startAll(st, func(int) []string { return []string{"gpu9999"} })
			}), PlanShape},
		{"a GPU listed twice", []Job{testJob(t, tr, "a", "LM", 20, 2, 0, 100)}, testCluster(t, 2),
			planPolicy(func(st *elastico.State) *elastico.Plan {
				return startAll(st, func(int) []string { return []string{"gpu0000", "gpu0000"} })
			}), PlanShape},
		{"a start without its action", []Job{small("a")}, testCluster(t, 1),
			planPolicy(func(st *elastico.State) *elastico.Plan {
				p := startAll(st, gpu0)
				p.Actions = nil
				return p
			}), PlanShape},
		{"an action of the wrong kind", []Job{small("a")}, testCluster(t, 1),
			planPolicy(func(st *elastico.State) *elastico.Plan {
				p := startAll(st, gpu0)
				p.Actions[0].Kind = elastico.Migrate
				return p
			}), PlanShape},
		{"a policy that starts nothing", []Job{small("a")}, testCluster(t, 1),
			planPolicy(func(st *elastico.State) *elastico.Plan {
				return &elastico.Plan{Decisions: []elastico.Decision{{JobID: st.Jobs[0].ID}}}
			}), Liveness},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), Config{Truth: tr, Cluster: tc.cluster, Policy: tc.policy, Jobs: tc.jobs})
			var ie *InvariantError
			if !errors.As(err, &ie) || ie.Invariant != tc.want || !errors.Is(err, ErrInvariant) {
				t.Fatalf("Run: %v; want invariant %q", err, tc.want)
			}
		})
	}
}

// running returns a simulation with job a started on gpu0000 and advanced
// by 10 s, for white-box checks of the invariants.
func running(t *testing.T) (*simulation, *jobState) {
	t.Helper()
	tr := testTruth(t)
	s, err := newSimulation(Config{
		Truth: tr, Cluster: testCluster(t, 1), Jobs: []Job{testJob(t, tr, "a", "ResNet-18", 64, 1, 0, 600)},
		Policy: pinPolicy(map[string][]string{"a": {"gpu0000"}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	s.active = append(s.active, &s.jobs[0])
	s.next = 1
	if _, err := s.epoch(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.rates()
	s.advance(10)
	if err := s.checkInvariants(); err != nil {
		t.Fatalf("a healthy run breaks an invariant: %v", err)
	}
	return s, &s.jobs[0]
}

func TestConservationOfWork(t *testing.T) {
	tests := []struct {
		name    string
		corrupt func(s *simulation, j *jobState)
	}{
		{"progress beyond the work", func(s *simulation, j *jobState) { j.progress, j.integral = 2*j.Work, 2*j.Work }},
		{"progress not from the rate", func(s *simulation, j *jobState) { j.progress += 1 }},
		{"progress goes down", func(s *simulation, j *jobState) { j.progress, j.integral = 0, 0 }},
		{"a waiting job with a rate", func(s *simulation, j *jobState) { j.cfg, j.gpus = -1, nil }},
		{"total progress not what was credited", func(s *simulation, j *jobState) { s.credited *= 2 }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, j := running(t)
			tc.corrupt(s, j)
			var ie *InvariantError
			if err := s.checkInvariants(); !errors.As(err, &ie) || ie.Invariant != Conservation {
				t.Fatalf("checkInvariants = %v, want a %q error", err, Conservation)
			}
		})
	}
}

func TestEachJobFinishesOnce(t *testing.T) {
	s, j := running(t)
	var ie *InvariantError
	if err := s.finishJob(j); !errors.As(err, &ie) || ie.Invariant != Conservation {
		t.Fatalf("finishing with work left = %v, want a %q error", err, Conservation)
	}
	j.progress, j.integral = j.Work, j.Work
	s.credited = j.Work
	if err := s.finishJob(j); err != nil {
		t.Fatal(err)
	}
	if err := s.finishJob(j); !errors.As(err, &ie) || ie.Invariant != FinishOnce {
		t.Fatalf("second finish = %v, want a %q error", err, FinishOnce)
	}
	// A finished job left among the active ones is caught too.
	if err := s.checkInvariants(); !errors.As(err, &ie) || ie.Invariant != FinishOnce {
		t.Fatalf("checkInvariants with a finished job active = %v, want a %q error", err, FinishOnce)
	}
}
