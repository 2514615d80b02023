package pds

import (
	"context"
	"testing"

	"github.com/elastico/elastico"
)

func TestDebugBench(t *testing.T) {
	s, _ := New(Config{})
	st := benchState(t, s, 500, 512)
	for ep := range 4 {
		e := &epoch{}
		e.init(s, st)
		e.buildMarket()
		running, colo := 0, 0
		for j := range e.jobs {
			if e.jobs[j].running {
				running++
			}
		}
		for g := range e.ngpu {
			if e.curOff[g+1]-e.curOff[g] > 1 {
				colo++
			}
		}
		plan, _ := s.Epoch(context.Background(), st)
		kinds := map[string]int{}
		for _, a := range plan.Actions {
			kinds[a.Kind.String()]++
		}
		codes := map[string]int{}
		for _, d := range plan.Decisions {
			codes[d.Status.Code.String()]++
		}
		t.Logf("epoch %d: tau %.3f q %.3f running %d colocated GPUs %d; stats %+v actions %v codes %v", ep, e.tau, e.q, running, colo, plan.Stats, kinds, codes)
		st = apply(st, plan)
	}
}

func TestDebugRound1(t *testing.T) {
	s, _ := New(Config{})
	st := benchState(t, s, 500, 512)
	e := &epoch{}
	e.init(s, st)
	e.buildMarket()
	e.statusQuo()
	prices := st.Carry.Prices
	e.round(context.Background(), 1, &prices)
	same, cfgChanged, moved, newJob := 0, 0, 0, 0
	for _, v := range e.viol {
		a, b := &e.jobs[v.victim], &e.jobs[v.aggressor]
		r := e.ref(v.gpu)
		switch {
		case !a.running || !b.running:
			newJob++
		case !containsRef(a.curGPUs, r) || !containsRef(b.curGPUs, r):
			moved++
		case e.cur.choice[v.victim] != a.cur || e.cur.choice[v.aggressor] != b.cur:
			cfgChanged++
		default:
			same++
			t.Logf("same pair %s|%s: %.3f tau %.3f", a.job.ID, b.job.ID, v.slowdown, e.tau)
		}
	}
	t.Logf("round 1: %d violations: same %d cfgChanged %d moved %d new %d", len(e.viol), same, cfgChanged, moved, newJob)
}

func containsRef(s []elastico.GPURef, r elastico.GPURef) bool {
	for _, x := range s {
		if x == r {
			return true
		}
	}
	return false
}
