package e2e

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/elastico/elastico"
)

// greedy is a small, deterministic elastico.Scheduler for the tests that
// script the Plan: running jobs stay where they are, waiting ones take the
// smallest configuration that fits (whole GPUs first, then shares of GPUs
// whose node allows sharing). It sets no launch parameters, so the
// controller computes them.
type greedy struct {
	mu sync.Mutex
	// hold lists jobs the Plan keeps waiting, with the reason.
	hold map[string]string
}

// setHold makes the Plan keep job id waiting (why != "") or lets it go.
func (g *greedy) setHold(id, why string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.hold == nil {
		g.hold = map[string]string{}
	}
	if why == "" {
		delete(g.hold, id)
	} else {
		g.hold[id] = why
	}
}

func (g *greedy) Epoch(_ context.Context, s *elastico.State) (*elastico.Plan, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	type gpuUse struct {
		sm, mem float64
		n       int
	}
	use := map[string]*gpuUse{}
	gpu := map[string]elastico.GPU{}
	for _, n := range s.Cluster.Nodes {
		for _, x := range n.GPUs {
			use[x.ID], gpu[x.ID] = &gpuUse{}, x
		}
	}
	take := func(p *elastico.Profile, ids []string) {
		for _, id := range ids {
			u := use[id]
			u.sm += p.Demand.SM
			u.mem += p.Demand.GPUMemory
			u.n++
		}
	}
	plan := &elastico.Plan{Decisions: make([]elastico.Decision, len(s.Jobs))}
	for i := range s.Jobs {
		j := &s.Jobs[i]
		if why, ok := g.hold[j.ID]; ok {
			plan.Decisions[i] = elastico.Decision{JobID: j.ID, Status: elastico.Status{Code: elastico.Unaffordable, Reasons: []string{why}}}
			if j.Running != nil {
				plan.Actions = append(plan.Actions, elastico.Action{Kind: elastico.Preempt, JobID: j.ID, From: j.Running})
			}
			continue
		}
		if j.Running != nil {
			p, _ := j.Profile(j.Running.ConfigID)
			take(p, j.Running.GPUs)
			plan.Decisions[i] = elastico.Decision{JobID: j.ID, Assignment: j.Running, Status: elastico.Status{Code: elastico.Scheduled}, Slowdown: 1}
		}
	}
	for i := range s.Jobs {
		j := &s.Jobs[i]
		if _, held := g.hold[j.ID]; held || j.Running != nil {
			continue
		}
		profiles := make([]*elastico.Profile, len(j.Profiles))
		for k := range j.Profiles {
			profiles[k] = &j.Profiles[k]
		}
		// The smallest footprint first, so that jobs share GPUs.
		slices.SortStableFunc(profiles, func(a, b *elastico.Profile) int {
			return cmp.Or(cmp.Compare(float64(a.Demand.GPUs)*a.Demand.SM, float64(b.Demand.GPUs)*b.Demand.SM), cmp.Compare(b.Throughput, a.Throughput))
		})
		d := elastico.Decision{JobID: j.ID, Status: elastico.Status{Code: elastico.Unplaceable,
			Reasons: []string{fmt.Sprintf("no node has GPUs free for any of the %d configurations", len(j.Profiles))}}}
	search:
		for _, p := range profiles {
			for _, wholeOnly := range []bool{true, false} {
				for _, n := range s.Cluster.Nodes {
					var ids []string
					for _, x := range n.GPUs {
						u := use[x.ID]
						free := u.n == 0 || (!wholeOnly && x.Shared && u.sm+p.Demand.SM <= 1+1e-9 && u.mem+p.Demand.GPUMemory <= x.Memory)
						if free && p.Demand.GPUMemory <= x.Memory {
							ids = append(ids, x.ID)
						}
						if len(ids) == p.Demand.GPUs {
							break
						}
					}
					if len(ids) < p.Demand.GPUs {
						continue
					}
					take(p, ids)
					a := &elastico.Assignment{ConfigID: p.Config.ID, GPUs: ids}
					d = elastico.Decision{JobID: j.ID, Assignment: a, Status: elastico.Status{Code: elastico.Scheduled}, Slowdown: 1}
					plan.Actions = append(plan.Actions, elastico.Action{Kind: elastico.Start, JobID: j.ID, To: a})
					break search
				}
			}
		}
		plan.Decisions[i] = d
	}
	return plan, nil
}
