package pds

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
	"github.com/google/go-cmp/cmp"
)

// TestPinned: with Config.Pinned a running job keeps every GPU it holds.
// The inference burst cannot make the trainers shrink (the services wait);
// a trainer may still grow onto more GPUs, or be reshaped where it runs.
func TestPinned(t *testing.T) {
	tests := []struct {
		name     string
		scenario string
		running  map[string]*elastico.Assignment // replaces the scenario's
		paper    bool                            // the paper's market (Ablation.SMMarket)
		drop     []string                        // jobs left out
		want     map[string]string
		wantActs []string
	}{
		{
			name: "burst: no shrink", scenario: "inference-burst",
			want: map[string]string{"t1": "x2@g0,g1", "t2": "x2@g2,g3", "s1": "Unplaceable", "s2": "Unplaceable"},
		},
		{
			name: "grow in place", scenario: "inference-burst",
			running: map[string]*elastico.Assignment{
				"t1": {ConfigID: "x1", GPUs: []string{"g0"}},
				"t2": {ConfigID: "x1", GPUs: []string{"g2"}},
			},
			drop:     []string{"s1", "s2"},
			want:     map[string]string{"t1": "x2@g0,g1", "t2": "x2@g2,g3"},
			wantActs: []string{"reconfigure t1", "reconfigure t2"},
		},
		{
			name: "reshape on the same GPU", scenario: "reconfigure-not-migrate", paper: true,
			want:     map[string]string{"a": "small@g0", "b": "kv40@g0", "c": "only@g1"},
			wantActs: []string{"reconfigure a", "start b"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, pred := scenarioState(t, tt.scenario)
			st.Jobs = slices.DeleteFunc(st.Jobs, func(j elastico.Job) bool { return slices.Contains(tt.drop, j.ID) })
			for i := range st.Jobs {
				if a, ok := tt.running[st.Jobs[i].ID]; ok {
					st.Jobs[i].Running = a
				}
			}
			s, err := New(Config{Predictor: pred, Pinned: true, Clock: fixedClock(), Ablation: Ablation{SMMarket: tt.paper}})
			if err != nil {
				t.Fatal(err)
			}
			plan, err := s.Epoch(context.Background(), st)
			if err != nil {
				t.Fatal(err)
			}
			got, acts := outcome(plan)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantActs, acts); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			checkPinned(t, st, plan, pred, s.Config().Sharing.Keep())
		})
	}
}

// TestPinnedOnRandomStates: on random clusters, epoch after epoch, a
// pinned Scheduler keeps every guarantee and plans no migration,
// preemption or shrink, where an unpinned one plans many.
func TestPinnedOnRandomStates(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	tol := iac.Tolerance{Tau0: 1.2}
	moves := 0
	for trial := range 30 {
		cfg := Config{Predictor: randomPredictor, Sharing: iac.PaperSharing(tol), Clock: fixedClock()}
		switch trial % 3 {
		case 1:
			cfg.Ablation.NoReservation = true
		case 2:
			cfg.Rounds = 1
		}
		free, _ := New(cfg)
		cfg.Pinned = true
		s, _ := New(cfg)
		st := stateOf(t, free, r, 1+r.IntN(5), 4+r.IntN(25))
		for epoch := range 3 {
			if p, err := free.Epoch(context.Background(), st); err == nil {
				for _, a := range p.Actions {
					if a.Kind == elastico.Migrate || a.Kind == elastico.Preempt || a.Kind == elastico.Reconfigure && len(a.To.GPUs) < len(a.From.GPUs) {
						moves++
					}
				}
			}
			plan, err := s.Epoch(context.Background(), st)
			if err != nil {
				t.Fatalf("trial %d epoch %d: %v", trial, epoch, err)
			}
			checkPinned(t, st, plan, randomPredictor, iac.MaxSlowdown(tol.Tau0))
			if t.Failed() {
				t.Fatalf("trial %d epoch %d failed", trial, epoch)
			}
			st = apply(st, plan)
			// Newcomers arrive.
			more := randomState(r, 0, r.IntN(6))
			for i := range more.Jobs {
				more.Jobs[i].ID = "e" + string(rune('a'+epoch)) + more.Jobs[i].ID
			}
			st.Jobs = append(st.Jobs, more.Jobs...)
		}
	}
	if moves < 10 {
		t.Errorf("the unpinned scheduler moved, stopped or shrank %d running jobs: the states do not test Pinned", moves)
	}
}

// checkPinned is checkPlan for Config.Pinned: every running job keeps all
// of its GPUs (unless the State runs it against the rules), no action
// migrates,
// and a pair predicted above tolerance may share a GPU only if both run
// there as before.
func checkPinned(t *testing.T, st *elastico.State, plan *elastico.Plan, pred elastico.Predictor, lim iac.Limit) {
	t.Helper()
	asIs := map[*elastico.Profile]bool{}
	for i, d := range plan.Decisions {
		j := &st.Jobs[i]
		if j.Running == nil {
			continue
		}
		if d.Assignment == nil {
			// Only a job the State runs against the rules.
			if len(d.Status.Reasons) == 0 || !strings.Contains(d.Status.Reasons[0], cannotStay) {
				t.Errorf("running job %s stopped: %v", j.ID, d.Status)
			}
			continue
		}
		for _, g := range j.Running.GPUs {
			if !slices.Contains(d.Assignment.GPUs, g) {
				t.Errorf("running job %s left GPU %s: %v → %v", j.ID, g, j.Running, d.Assignment)
			}
		}
		if d.Assignment.ConfigID == j.Running.ConfigID {
			p, _ := j.Profile(j.Running.ConfigID)
			asIs[p] = true
		}
	}
	for _, a := range plan.Actions {
		if a.Kind == elastico.Migrate {
			t.Errorf("pinned plan acts: %v", a)
		}
	}
	checkPlan(t, st, plan, tolerated{pred, asIs}, lim)
}

// tolerated answers 1 for a pair of profiles both of which run as before
// (their jobs kept their configurations, hence exactly their GPUs).
type tolerated struct {
	p    elastico.Predictor
	asIs map[*elastico.Profile]bool
}

func (t tolerated) Slowdown(v, a *elastico.Profile) float64 {
	if t.asIs[v] && t.asIs[a] {
		return 1
	}
	return t.p.Slowdown(v, a)
}
