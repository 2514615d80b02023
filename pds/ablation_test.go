package pds

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
	"github.com/google/go-cmp/cmp"
)

// scenarioState reads the first State (and the predictor) of a scenario.
func scenarioState(t *testing.T, name string) (*elastico.State, tablePredictor) {
	t.Helper()
	data, err := os.ReadFile("testdata/" + name + ".scenario")
	if err != nil {
		t.Fatal(err)
	}
	_, secs, err := parseScenario(string(data))
	if err != nil {
		t.Fatal(err)
	}
	pred := tablePredictor{}
	var st *elastico.State
	for _, s := range secs {
		switch s.name {
		case "predictor":
			if err := decodeStrict(s.body, &pred); err != nil {
				t.Fatal(err)
			}
		case "state":
			if st == nil {
				st = &elastico.State{}
				if err := decodeStrict(s.body, st); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	return st, pred
}

// outcome summarizes a plan: job → "config@gpus" or its wait code; and the
// action kinds in order.
func outcome(p *elastico.Plan) (map[string]string, []string) {
	m := map[string]string{}
	for _, d := range p.Decisions {
		if d.Assignment != nil {
			s := d.Assignment.ConfigID + "@"
			for k, g := range d.Assignment.GPUs {
				if k > 0 {
					s += ","
				}
				s += g
			}
			m[d.JobID] = s
		} else {
			m[d.JobID] = d.Status.Code.String()
		}
	}
	var acts []string
	for _, a := range p.Actions {
		acts = append(acts, a.Kind.String()+" "+a.JobID)
	}
	return m, acts
}

// TestAblations runs each ablation switch on the scenario that shows what
// the component it removes does, next to the full method.
func TestAblations(t *testing.T) {
	tests := []struct {
		name     string
		scenario string
		// paper: both runs in the paper's market (Ablation.SMMarket), where
		// reshaping a job lets another share its GPU.
		paper       bool
		ablation    Ablation
		wantFull    map[string]string
		wantAblated map[string]string
		wantActions []string // of the ablated run
	}{
		{
			// −RST: a cannot take checkpointing+AMP, b only gets its first
			// (plain) configuration: 20 + 20 GiB do not fit 32.
			name: "fixed configuration", scenario: "paper-shrink", paper: true,
			ablation:    Ablation{FixedConfiguration: true},
			wantFull:    map[string]string{"a": "ckpt-amp@g0", "b": "ckpt-amp@g0"},
			wantAblated: map[string]string{"a": "plain@g0", "b": "Unaffordable"},
		},
		{
			// −ESP: in order, a takes the most valuable configuration that
			// fits (both GPUs); nothing is left for b.
			name: "greedy first fit", scenario: "reservation-admits",
			ablation:    Ablation{GreedyFirstFit: true, NoReservation: true},
			wantFull:    map[string]string{"a": "x1@g0", "b": "x1@g1"},
			wantAblated: map[string]string{"a": "x2@g0,g1", "b": "Unaffordable"},
		},
		{
			// −IAC: x and y share a GPU whatever the predictor says.
			name: "memory-only co-location", scenario: "interference-separated", paper: true,
			ablation:    Ablation{MemoryOnlyColocation: true},
			wantFull:    map[string]string{"x": "c@g0", "y": "c@g1", "z": "c@g1"},
			wantAblated: map[string]string{"x": "c@g0", "y": "c@g0", "z": "c@g1"},
			wantActions: []string{"start x", "start y", "start z"},
		},
		{
			// No reservation: nothing is held back for b, and the paper's
			// market grows a onto both GPUs. (In the default market, b's
			// start is worth more than a's growth: Config.Fairness.)
			name: "no reservation", scenario: "reservation-admits", paper: true,
			ablation:    Ablation{NoReservation: true},
			wantFull:    map[string]string{"a": "x1@g0", "b": "x1@g1"},
			wantAblated: map[string]string{"a": "x2@g0,g1", "b": "Unaffordable"},
		},
		{
			// No coordinated reconfiguration: a, running, keeps "plain";
			// b's smallest configuration does not fit beside it.
			name: "no coordinated reconfiguration", scenario: "paper-shrink", paper: true,
			ablation:    Ablation{NoCoordinatedReconfiguration: true},
			wantFull:    map[string]string{"a": "ckpt-amp@g0", "b": "ckpt-amp@g0"},
			wantAblated: map[string]string{"a": "plain@g0", "b": "Unaffordable"},
		},
		{
			// No coordinated reconfiguration, one round: x's fast
			// configuration violates beside y, and no second round lets
			// the market reshape x; resolve defers one of the pair.
			name: "no coordinated reconfiguration: one round", scenario: "interference-reshaped",
			ablation:    Ablation{NoCoordinatedReconfiguration: true},
			wantFull:    map[string]string{"x": "lean@g0", "y": "kv30@g0"},
			wantAblated: map[string]string{"x": "fast@g0", "y": "Interference"},
		},
		{
			// −PDS: the trainers cannot shrink for the burst, so one of them
			// is preempted instead of both giving up a GPU.
			name: "no PDS", scenario: "inference-burst",
			ablation:    Ablation{NoReservation: true, NoCoordinatedReconfiguration: true},
			wantFull:    map[string]string{"t1": "x1@g0", "t2": "x1@g2", "s1": "kv60@g1", "s2": "kv60@g3"},
			wantAblated: map[string]string{"t1": "x2@g0,g1", "t2": "Preempted", "s1": "kv60@g2", "s2": "kv60@g3"},
			wantActions: []string{"preempt t2", "start s1", "start s2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, pred := scenarioState(t, tt.scenario)
			for _, run := range []struct {
				ab   Ablation
				want map[string]string
			}{{Ablation{SMMarket: tt.paper}, tt.wantFull}, {tt.ablation, tt.wantAblated}} {
				run.ab.SMMarket = tt.paper
				// The interference scenarios are set under the paper's rule.
				s, err := New(Config{Predictor: pred, Ablation: run.ab, Clock: fixedClock(), Sharing: iac.PaperSharing(iac.DefaultTolerance)})
				if err != nil {
					t.Fatal(err)
				}
				plan, err := s.Epoch(context.Background(), st)
				if err != nil {
					t.Fatal(err)
				}
				tau := s.Config().Sharing.Keep()
				if run.ab.MemoryOnlyColocation {
					checkPlan(t, st, plan, nil, iac.Limit{})
				} else {
					checkPlan(t, st, plan, pred, tau)
				}
				got, acts := outcome(plan)
				if diff := cmp.Diff(run.want, got); diff != "" {
					t.Errorf("ablation %+v (-want +got):\n%s", run.ab, diff)
				}
				if run.ab != (Ablation{SMMarket: tt.paper}) && tt.wantActions != nil {
					if diff := cmp.Diff(tt.wantActions, acts); diff != "" {
						t.Errorf("actions (-want +got):\n%s", diff)
					}
				}
				if run.ab.GreedyFirstFit && (plan.Carry.Prices != elastico.Vector{} || plan.Stats.Iterations != 0) {
					t.Errorf("greedy: prices %v after %d iterations, want none", plan.Carry.Prices, plan.Stats.Iterations)
				}
				if run.ab.MemoryOnlyColocation {
					for _, d := range plan.Decisions {
						if d.Slowdown != 1 {
							t.Errorf("memory-only: job %s slowdown %g, want 1 (no predictor)", d.JobID, d.Slowdown)
						}
					}
					if plan.Stats.Violations != 0 {
						t.Errorf("memory-only: %d violations counted", plan.Stats.Violations)
					}
				}
				if run.ab.NoCoordinatedReconfiguration && plan.Stats.Rounds != 1 {
					t.Errorf("ablation %+v ran %d rounds, want 1", run.ab, plan.Stats.Rounds)
				}
				if run.ab.NoCoordinatedReconfiguration || run.ab.FixedConfiguration {
					for _, a := range plan.Actions {
						if a.Kind == elastico.Reconfigure || (a.Kind == elastico.Migrate && a.From.ConfigID != a.To.ConfigID) {
							t.Errorf("ablation %+v reshaped a running job: %v", run.ab, a)
						}
					}
				}
			}
		})
	}
}

// TestAblationsOnRandomStates: every ablation keeps every guarantee.
func TestAblationsOnRandomStates(t *testing.T) {
	for _, ab := range []Ablation{
		{FixedConfiguration: true}, {GreedyFirstFit: true}, {MemoryOnlyColocation: true},
		{NoReservation: true}, {NoCoordinatedReconfiguration: true},
		{NoReservation: true, NoCoordinatedReconfiguration: true},
	} {
		s, err := New(Config{Predictor: randomPredictor, Sharing: iac.PaperSharing(iac.Tolerance{Tau0: 1.2}), Ablation: ab})
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(uint64(len(fmt.Sprint(ab))), 3))
		for trial := range 8 {
			st := stateOf(t, s, r, 1+r.IntN(5), 2+r.IntN(20))
			for range 2 {
				plan, err := s.Epoch(context.Background(), st)
				if err != nil {
					t.Fatalf("%+v trial %d: %v", ab, trial, err)
				}
				var pred elastico.Predictor = randomPredictor
				if ab.MemoryOnlyColocation {
					pred = nil
				}
				checkPlan(t, st, plan, pred, iac.MaxSlowdown(1.2))
				st = apply(st, plan)
			}
		}
	}
}
