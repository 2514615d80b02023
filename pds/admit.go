package pds

import (
	"cmp"
	"slices"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/slab"
)

// admit spends what the market left of the whole capacity C (the
// reservation of Eq. 12 among it) on the jobs it deferred, in three
// stages: running jobs keep their configurations where they still fit;
// waiting jobs start, highest priority and oldest first, under their
// smallest configuration (on several GPU models, the most valuable one as
// small whose model has room); then, unless under Ablation.SMMarket, the
// co-location stage offers the rest GPUs to share.
func (e *epoch) admit() {
	e.admitHeld()
	if e.cfg.Ablation.NoReservation {
		return
	}
	var load elastico.Vector
	e.modelUse = slab.Zeroed(e.modelUse, len(e.models))
	use := e.modelUse // per GPU model, when the cluster has several
	for b, c := range e.choice {
		if c >= 0 {
			o := e.jobs[e.bidJob[b]].first + c
			load = load.Add(e.real[o])
			if len(use) > 0 && e.optModel[o] >= 0 {
				use[e.optModel[o]] += e.real[o][elastico.SM]
			}
		}
	}
	free := e.capacity.Sub(load)
	// take gives a job the market deferred its option o, if o is worth
	// something to it and fits what is free: all of its demand, or with
	// share, all but the SMs (it is to share GPUs that others hold).
	take := func(js *jobState, o int32, share bool) bool {
		if js.bidder < 0 || e.choice[js.bidder] >= 0 || o < 0 {
			return false
		}
		d := e.real[o]
		if share {
			d[elastico.SM] = 0
		} else if len(use) > 0 && !e.modelRoom(o, use) {
			return false
		}
		if e.market.Bidders[js.bidder].Value(int(o-js.first)) > 0 && d.LessEq(free) {
			e.choice[js.bidder] = o - js.first
			free = free.Sub(d)
			if len(use) > 0 && e.optModel[o] >= 0 {
				use[e.optModel[o]] += d[elastico.SM]
			}
			return true
		}
		return false
	}
	// A running job the market deferred keeps its configuration first, if
	// it still fits (in the State's order): the market found no job worth
	// its place beyond what a restart costs (see keepBonus), and a waiting
	// job of equal worth taking the headroom instead would only swap the
	// two, and swap them back the next epoch.
	for j := range e.jobs {
		if js := &e.jobs[j]; js.running {
			take(js, js.curOpt, false)
		}
	}
	for _, j := range e.waiting {
		js := &e.jobs[j]
		if js.minOpt < 0 || !e.real[js.minOpt].LessEq(free) {
			continue // nothing of its smallest size fits, on any model
		}
		take(js, e.smallestOption(js, use, false), false)
	}
	if e.cfg.Ablation.SMMarket {
		return
	}
	// Co-location. The market gives GPUs whole, so the jobs it could not
	// fit may still share a GPU where the sharing rule and the placer
	// allow: first the running jobs it deferred, each under its
	// configuration (it shares as it did, unless the rule now splits the
	// pair), then the waiting jobs in the queue's order at their smallest
	// configurations, as many GPUs' worth as the cluster has, each within
	// the memory, CPU and RAM left.
	for j := range e.jobs {
		if js := &e.jobs[j]; js.running {
			take(js, js.curOpt, true)
		}
	}
	slots := e.ngpu
	for _, j := range e.waiting {
		if slots <= 0 {
			break
		}
		js := &e.jobs[j]
		if o := e.smallestOption(js, use, true); take(js, o, true) {
			slots -= js.job.Profiles[e.optFam[o]].Demand.GPUs
		}
	}
}

// waitingOrder lists the jobs that do not run, by priority (highest
// first), arrival, then position in the State.
func (mk *marketState) waitingOrder() {
	// Sorted by keys copied out of the jobs (comparing through the job
	// pointers cost a cache miss per comparison), with each arrival as
	// Unix seconds and nanoseconds: they order times as Time.Compare
	// does, and compare faster, unless a time carries a monotonic clock
	// reading (then Compare reads that) or lies so far out that its Unix
	// seconds overflow. If one does, the times themselves are compared.
	keys := mk.waitKeys[:0]
	exact := true
	for j := range mk.jobs {
		if js := &mk.jobs[j]; !js.running {
			t := js.job.Arrival
			sec := t.Unix()
			exact = exact && t == t.Round(0) && sec > -1<<62 && sec < 1<<62
			keys = append(keys, waitKey{js.job.Priority, sec, int32(t.Nanosecond()), int32(j)})
		}
	}
	if exact {
		slices.SortFunc(keys, func(a, b waitKey) int {
			if a.priority != b.priority {
				return cmp.Compare(b.priority, a.priority)
			}
			if a.sec != b.sec {
				return cmp.Compare(a.sec, b.sec)
			}
			if a.nsec != b.nsec {
				return cmp.Compare(a.nsec, b.nsec)
			}
			return cmp.Compare(a.j, b.j)
		})
	} else {
		slices.SortFunc(keys, func(a, b waitKey) int {
			if c := cmp.Compare(b.priority, a.priority); c != 0 {
				return c
			}
			if c := mk.jobs[a.j].job.Arrival.Compare(mk.jobs[b.j].job.Arrival); c != 0 {
				return c
			}
			return cmp.Compare(a.j, b.j)
		})
	}
	mk.waiting = mk.waiting[:0]
	for _, k := range keys {
		mk.waiting = append(mk.waiting, k.j)
	}
	mk.waitKeys = keys[:0]
}

type waitKey struct {
	priority int
	sec      int64 // arrival
	nsec     int32
	j        int32
}
