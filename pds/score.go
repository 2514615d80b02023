package pds

import "github.com/elastico/elastico/internal/slab"

// score rates a result: the worth of the jobs it runs (valueOf, summed).
func (e *epoch) score(r *result) float64 {
	v := 0.0
	for j := range e.jobs {
		if r.gpus[j] != nil {
			v += e.valueOf(int32(j), r.choice[j])
		}
	}
	return v
}

// valueOf is what job j is worth under family index k (see the package
// doc's "What the market maximizes"; 0 if k is not an option).
func (e *epoch) valueOf(j, k int32) float64 {
	if k < 0 {
		return 0
	}
	return e.famVal[e.memo.base[j]+uint32(k)]
}

// violationCost is what deferring one job of each violating pair of r
// (e.viol) would lose: the value of the jobs resolve's last resort,
// deferNewcomers, would take out, in the same order, each counted once. A
// job in several violating pairs, or in a pair loud both ways, is
// deferred once, and a pair one of whose jobs is already out needs
// nothing more; so r's score less this cost is the value of a plan that
// resolve can always reach from r, never below zero. (Charging the lesser
// value once per ordered pair made a plan of many loud pairs worth less
// than running nothing: on an idle cluster, a later round that deferred
// every job won, and the cluster stayed idle with jobs waiting.)
func (e *epoch) violationCost(r *result) float64 {
	e.gone = slab.Zeroed(e.gone, len(e.jobs))
	c := 0.0
	for _, v := range e.viol {
		if e.gone[v.victim] || e.gone[v.aggressor] || r.gpus[v.victim] == nil || r.gpus[v.aggressor] == nil {
			continue
		}
		d := e.newcomer(r, v)
		if e.cfg.Pinned && e.jobs[d].running && e.asIs(r, d, v.gpu) {
			d = v.victim + v.aggressor - d // as deferNewcomers picks
		}
		e.gone[d] = true
		c += e.valueOf(d, r.choice[d])
	}
	return c
}

// priced reports whether one of job j's configurations carries at least
// one recent violation's (or refusal's) worth of learned penalty (Δ,
// decayed once): the market has priced what went wrong with the job, so
// the first round's placer does not put it beside a loud neighbour again
// only to find another violation (see Scheduler.first); it waits for a
// quiet GPU, and each refusal penalizes the configuration it bid, so the
// market moves it on to another. Without this, where most pairs are loud,
// every waiting job was placed beside a loud neighbour every epoch, and
// every epoch ran a second round to take them all off again.
func (e *epoch) priced(j int32) bool {
	js := &e.jobs[j]
	if js.bidder < 0 {
		return false
	}
	for o := js.first; o < js.first+js.n; o++ {
		if e.learned[o] >= e.cfg.Delta*e.cfg.PenaltyDecay {
			return true
		}
	}
	return false
}

// penalize adds Δ to the learned penalty of job j's option for family
// index k.
func (e *epoch) penalize(j, k int32) { e.penalizeBy(j, k, e.cfg.Delta) }

// penalizeBy adds p to the learned penalty of job j's configuration k.
func (mk *marketState) penalizeBy(j, k int32, p float64) {
	js := &mk.jobs[j]
	if js.bidder < 0 || k < 0 {
		return
	}
	for o := js.first; o < js.first+js.n; o++ {
		if mk.optFam[o] == k {
			mk.learned[o] += p
			return
		}
	}
}

// unplacedPenalty is what a configuration that found no GPUs gets: Δ of
// what the job is worth at its fair share (fairUtility(1) per unit of its
// scale; 1 in the paper's market). Δ alone, against worths
// nine times larger, let a job ask for the same scarce GPU model round
// after round: on a cluster of V100s, P100s and K80s the jobs that found no
// V100 then shared one, 67 % of job-time.
func (e *epoch) unplacedPenalty() float64 {
	if e.cfg.Ablation.SMMarket {
		return e.cfg.Delta
	}
	return e.cfg.Delta * e.fairUtility(1)
}
