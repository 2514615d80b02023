package adapter

import (
	"context"
	"slices"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/rst"
)

// scripted is a Scheduler whose plans a test writes by hand; it also keeps
// the States it was given.
type scripted struct {
	plan   func(s *elastico.State) *elastico.Plan
	states []*elastico.State
}

func (s *scripted) Epoch(_ context.Context, st *elastico.State) (*elastico.Plan, error) {
	c := *st
	c.Jobs = slices.Clone(st.Jobs)
	s.states = append(s.states, &c)
	return s.plan(st), nil
}

// keep is a plan that starts nobody and keeps every running job.
func keep(st *elastico.State) *elastico.Plan {
	p := &elastico.Plan{}
	for _, j := range st.Jobs {
		d := elastico.Decision{JobID: j.ID, Assignment: j.Running, Slowdown: 1}
		if j.Running == nil {
			d.Status = elastico.Status{Code: elastico.Unaffordable, Reasons: []string{"test: waits"}}
		}
		p.Decisions = append(p.Decisions, d)
	}
	return p
}

// startAs returns a plan function that starts the given pending jobs
// (job ID → configuration and GPUs) and keeps everything else.
func startAs(starts map[string]elastico.Assignment) func(*elastico.State) *elastico.Plan {
	return func(st *elastico.State) *elastico.Plan {
		p := keep(st)
		for i, j := range st.Jobs {
			to, ok := starts[j.ID]
			if !ok || j.Running != nil {
				continue
			}
			to.GPUs = slices.Clone(to.GPUs)
			prof, _ := j.Profile(to.ConfigID)
			p.Decisions[i] = elastico.Decision{JobID: j.ID, Assignment: &to, Slowdown: 1}
			p.Actions = append(p.Actions, elastico.Action{Kind: elastico.Start, JobID: j.ID, To: &to, Launch: rst.Launch(&st.Jobs[i], prof, nil)})
		}
		return p
	}
}

// firstFit is a plain stand-in Scheduler: running jobs stay; each waiting
// job, in the State's order, takes its best-goodput configuration that fits
// now, packing shared GPUs (the fullest that still fits first).
type firstFit struct{}

func (firstFit) Epoch(_ context.Context, st *elastico.State) (*elastico.Plan, error) {
	type use struct {
		sm, mem float64
		n       int
	}
	used := map[string]*use{}
	gpus := map[string]*elastico.GPU{}
	for i := range st.Cluster.Nodes {
		for k := range st.Cluster.Nodes[i].GPUs {
			g := &st.Cluster.Nodes[i].GPUs[k]
			gpus[g.ID], used[g.ID] = g, &use{}
		}
	}
	for _, j := range st.Jobs {
		if j.Running == nil {
			continue
		}
		p, _ := j.Profile(j.Running.ConfigID)
		for _, g := range j.Running.GPUs {
			u := used[g]
			u.sm, u.mem, u.n = u.sm+p.Demand.SM, u.mem+p.Demand.GPUMemory, u.n+1
		}
	}
	fits := func(id string, p *elastico.Profile) bool {
		g, u := gpus[id], used[id]
		if !g.Shared {
			return u.n == 0 && p.Demand.GPUMemory <= g.Memory
		}
		return u.sm+p.Demand.SM <= 1+1e-9 && u.mem+p.Demand.GPUMemory <= g.Memory && u.n < 2
	}
	plan := &elastico.Plan{}
	for i := range st.Jobs {
		j := &st.Jobs[i]
		if j.Running != nil {
			plan.Decisions = append(plan.Decisions, elastico.Decision{JobID: j.ID, Assignment: j.Running, Slowdown: 1})
			continue
		}
		order := make([]int, len(j.Family))
		for k := range order {
			order[k] = k
		}
		slices.SortStableFunc(order, func(a, b int) int {
			ga, gb := j.Family[a].Goodput(), j.Family[b].Goodput()
			switch {
			case ga > gb:
				return -1
			case ga < gb:
				return 1
			}
			return 0
		})
		d := elastico.Decision{JobID: j.ID, Status: elastico.Status{Code: elastico.Unplaceable, Reasons: []string{"no GPU has room now"}}}
		possible := false
		for _, k := range order {
			p := &j.Family[k]
			for _, n := range st.Cluster.Nodes {
				if len(n.GPUs) >= p.Demand.GPUs {
					possible = true
				}
				var pick []string
				cands := slices.Clone(n.GPUs)
				slices.SortStableFunc(cands, func(a, b elastico.GPU) int {
					ua, ub := used[a.ID].sm, used[b.ID].sm
					switch {
					case ua > ub:
						return -1
					case ua < ub:
						return 1
					}
					return 0
				})
				for _, g := range cands {
					if len(pick) < p.Demand.GPUs && fits(g.ID, p) {
						pick = append(pick, g.ID)
					}
				}
				if len(pick) == p.Demand.GPUs {
					for _, g := range pick {
						u := used[g]
						u.sm, u.mem, u.n = u.sm+p.Demand.SM, u.mem+p.Demand.GPUMemory, u.n+1
					}
					to := &elastico.Assignment{ConfigID: p.Config.ID, GPUs: pick}
					d = elastico.Decision{JobID: j.ID, Assignment: to, Slowdown: 1}
					plan.Actions = append(plan.Actions, elastico.Action{Kind: elastico.Start, JobID: j.ID, To: to, Launch: rst.Launch(j, p, nil)})
					break
				}
			}
			if d.Assignment != nil {
				break
			}
		}
		if !possible {
			d.Status = elastico.Status{Code: elastico.Infeasible, Reasons: []string{"no node has enough GPUs for any configuration"}}
		}
		plan.Decisions = append(plan.Decisions, d)
	}
	return plan, nil
}
