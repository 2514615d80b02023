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
