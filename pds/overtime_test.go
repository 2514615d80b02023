package pds

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
)

// overTime runs the properties of decisions over time on st: Epoch every 5 s
// with each plan applied, nothing else changing, and every other epoch run
// on the State the last one produced at its own Now (a fixed point). It
// checks, every run:
//   - a fixed point: Epoch on the State the last one produced, at its
//     Now, gives no action;
//   - no flap: after the first epoch no job is displaced (preempted,
//     moved or reshaped) twice, none returns to an assignment it left,
//     and no job takes back GPUs from the job that took them from it
//     (pds holds still while nothing changes, Carry.Calm);
//   - with weights set, a job preempted in the first epoch gave way to one
//     of at least its weight (started or changed, or running on a GPU it
//     held).
//
// What may still move after the first epoch, once, is a job that has not
// changed since the jobs last did: a learned penalty that halves every
// epoch can make a waiting job worth more than a running one plus its
// restart a few epochs later.
func overTime(t *testing.T, cfg Config, st *elastico.State, epochs int, weights bool) {
	t.Helper()
	h := newHost(t, cfg, st)
	weight := map[string]float64{}
	for i := range st.Jobs {
		weight[st.Jobs[i].ID] = st.Jobs[i].EffectiveWeight()
	}
	before := h.st
	p := h.step()
	// A preempted job gave way to the jobs that started or changed, or that
	// run on a GPU it held: one of them must weigh at least as much.
	heaviest := 0.0
	for _, a := range p.Actions {
		if a.Kind != elastico.Preempt {
			heaviest = max(heaviest, weight[a.JobID])
		}
	}
	why := map[string]string{}
	for _, d := range p.Decisions {
		why[d.JobID] = d.Status.String()
	}
	for _, a := range p.Actions {
		if !weights || a.Kind != elastico.Preempt || strings.Contains(why[a.JobID], "Infeasible") {
			continue // a job that cannot run at all is stopped for no one
		}
		h := heaviest
		for i, d := range p.Decisions {
			if d.Assignment != nil && before.Jobs[i].Running != nil && slices.ContainsFunc(d.Assignment.GPUs, func(g string) bool { return slices.Contains(a.From.GPUs, g) }) {
				h = max(h, weight[d.JobID])
			}
		}
		if weight[a.JobID] > h {
			t.Errorf("job %s (weight %g) preempted for lighter jobs: %v", a.JobID, weight[a.JobID], p.Actions)
		}
	}
	left := map[string][]string{} // per job, the assignments it left
	moved := map[string]int{}
	swaps := map[[2]string]bool{} // giver, taker: GPUs one gave up and the other took
	swapped := func(e int, p *elastico.Plan) {
		now := map[[2]string]bool{}
		for _, t := range p.Actions {
			if t.To == nil {
				continue
			}
			for _, g := range t.To.GPUs {
				if t.From != nil && slices.Contains(t.From.GPUs, g) {
					continue
				}
				for _, v := range p.Actions {
					if v.JobID != t.JobID && v.From != nil && slices.Contains(v.From.GPUs, g) && (v.To == nil || !slices.Contains(v.To.GPUs, g)) {
						now[[2]string{v.JobID, t.JobID}] = true
					}
				}
			}
		}
		for k := range now {
			if swaps[[2]string{k[1], k[0]}] {
				t.Errorf("epoch %d: job %s takes back GPUs job %s took from it:%s", e, k[1], k[0], h.history())
			}
		}
		for k := range now {
			swaps[k] = true
		}
	}
	swapped(0, p)
	for e := 1; e < epochs; e++ {
		if e%2 == 0 {
			h.st.Now = h.st.Now.Add(-h.dt)
		}
		p := h.step()
		swapped(e, p)
		for _, a := range p.Actions {
			if a.From != nil {
				left[a.JobID] = append(left[a.JobID], fmt.Sprint(*a.From))
				if moved[a.JobID]++; moved[a.JobID] > 1 {
					t.Errorf("epoch %d: job %s displaced again (%v) with nothing changing:%s", e, a.JobID, a, h.history())
				}
			}
			if e%2 == 0 {
				t.Errorf("epoch %d: %v on the State the last epoch produced, at its Now (not a fixed point):%s", e, a, h.history())
			}
			if a.To != nil && slices.Contains(left[a.JobID], fmt.Sprint(*a.To)) {
				t.Errorf("epoch %d: job %s flaps back to %v:%s", e, a.JobID, *a.To, h.history())
			}
		}
	}
}

// TestStableOverTime: random clusters and jobs, some running as a previous
// epoch left them (with newcomers since), many epochs with nothing
// changing.
func TestStableOverTime(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	for trial := range 100 {
		cfg := Config{Predictor: randomPredictor, Sharing: iac.PaperSharing(iac.Tolerance{Tau0: 1.2})}
		s, _ := New(cfg)
		st := stateOf(t, s, r, 1+r.IntN(5), 4+r.IntN(30))
		t.Run(fmt.Sprint(trial), func(t *testing.T) { overTime(t, cfg, st, 12, true) })
	}
}

// FuzzEpochOverTime: no flap, on any State Epoch accepts. (The weight
// property is left to TestStableOverTime: the fuzzer's States run jobs
// against the rules, and which job a State that over-commits a GPU keeps
// is not a displacement for a lighter one.)
func FuzzEpochOverTime(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{2, 10, 200, 2, 100, 0, 100, 1, 3, 0, 2, 1, 1, 60, 100, 40, 80, 200, 250, 0, 1, 0})
	f.Add([]byte{1, 0, 255, 254, 1, 253, 0, 5, 2, 2, 1, 255, 3})
	f.Fuzz(func(t *testing.T, data []byte) {
		st := bytesState(data)
		if st.Validate() != nil {
			return
		}
		overTime(t, Config{Predictor: randomPredictor, Sharing: iac.PaperSharing(iac.Tolerance{Tau0: 1.2})}, st, 6, false)
	})
}
