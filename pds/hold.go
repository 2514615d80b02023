package pds

import (
	"github.com/elastico/elastico"
)

// holdReason is the status of a waiting job that the best plan would have
// started on GPUs it takes from running jobs, when hold keeps them there.
const holdReason = "its GPUs stay with running jobs: displacing them would gain less than their restarts cost"

// hold keeps every running job where it runs unless the best plan's
// displacements pay for themselves. It compares the best plan with the one
// that displaces no running job (each where and as the State runs it; the
// best plan's newcomers where they still fit beside them and no pair is
// predicted above tolerance), charging each plan, for every running job
// it preempts, moves or reshapes, what keeping that job is worth (its
// restart's work over the horizon, γ0, and its hold while it has run less
// than MinRunTime: keepBonus). The market already weighs these, but only
// on total capacity: a plan whose gang found no node, or whose prices
// moved since the jobs were placed, displaced jobs for nothing, and the
// next epoch undid it.
func (e *epoch) hold() {
	b := &e.best
	costB, moved := e.displacementCost(b)
	if !moved {
		return
	}
	a := &e.alt
	n := len(e.jobs)
	a.choice = grow(a.choice, n)
	a.gpus = grow(a.gpus, n)
	a.code = grow(a.code, n)
	a.reason = grow(a.reason, n)
	copy(a.choice, b.choice)
	copy(a.gpus, b.gpus)
	copy(a.code, b.code)
	copy(a.reason, b.reason)
	a.prices = b.prices
	acc := e.account()
	for j := range e.jobs {
		js := &e.jobs[j]
		if !js.running || js.curOpt < 0 {
			continue
		}
		if why := e.stays(acc, j); why != "" {
			a.choice[j], a.gpus[j], a.code[j], a.reason[j] = -1, nil, elastico.Unplaceable, why
			continue
		}
		a.choice[j], a.gpus[j], a.code[j], a.reason[j] = js.cur, js.curGPUs, elastico.Scheduled, ""
	}
	for j := range e.jobs {
		js := &e.jobs[j]
		if js.running && js.curOpt >= 0 || a.gpus[j] == nil {
			continue
		}
		if why := acc.add(a.gpus[j], &js.job.Family[a.choice[j]]); why != "" {
			a.choice[j], a.gpus[j], a.code[j], a.reason[j] = -1, nil, elastico.Unplaceable, holdReason
		}
	}
	e.check(a)
	for len(e.viol) > 0 && e.deferNewcomers(a) {
		e.check(a)
	}
	e.viol = e.viol[:0]
	costA, _ := e.displacementCost(a)
	if e.score(a)-costA >= e.score(b)-costB {
		e.best, *a = *a, e.best
	}
}

// displacementCost is what plan r's displacements lose: for each running
// job it preempts, moves or reshapes, its scale times keepBonus. moved
// reports whether there is any.
func (e *epoch) displacementCost(r *result) (cost float64, moved bool) {
	for j := range e.jobs {
		js := &e.jobs[j]
		if !js.running || e.unchanged(r, int32(j)) {
			continue
		}
		moved = true
		if js.curOpt >= 0 {
			cost += js.scale * js.keep
		}
	}
	return cost, moved
}
