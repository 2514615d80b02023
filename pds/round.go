package pds

import (
	"context"
	"fmt"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/slab"
	"github.com/elastico/elastico/placement"
)

// round runs one ESP → placement → interference round and, when it
// completes, makes its result the best so far. It returns false when the
// context cut it short.
func (e *epoch) round(ctx context.Context, m int, prices *elastico.Vector) (bool, error) {
	t := e.s.cfg.Clock()
	for _, j := range e.bidJob {
		js := &e.jobs[j]
		for o := js.first; o < js.first+js.n; o++ {
			e.options[o].Penalty = js.scale * (e.base[o] + e.learned[o])
		}
	}
	e.market.Prices = *prices
	var err error
	if len(e.market.Bidders) == 0 {
		// Nothing to price: no job has a feasible configuration.
		e.sol = elastico.Solution{Choice: e.sol.Choice[:0], Prices: *prices}
	} else {
		err = e.s.solver.Solve(ctx, &e.market, &e.sol)
	}
	e.stats.Iterations += e.sol.Iterations
	if err != nil {
		e.since(t, &e.stats.Prices)
		if cut(ctx, err) {
			return false, nil
		}
		return false, fmt.Errorf("pds: round %d: price solver: %w", m, err)
	}
	if len(e.sol.Choice) != len(e.market.Bidders) {
		return false, fmt.Errorf("pds: round %d: price solver chose for %d of %d bidders", m, len(e.sol.Choice), len(e.market.Bidders))
	}
	e.choice = slab.Zeroed(e.choice, len(e.market.Bidders))
	for b, c := range e.sol.Choice {
		if c < -1 || c >= len(e.market.Bidders[b].Options) {
			return false, fmt.Errorf("pds: round %d: price solver chose option %d of bidder %d (job %q), which has %d", m, c, b, e.jobs[e.bidJob[b]].job.ID, len(e.market.Bidders[b].Options))
		}
		e.choice[b] = int32(c)
	}
	e.fitModels()
	e.admit()
	t = e.since(t, &e.stats.Prices)

	e.buildItems(e.choiceFamily)
	e.req.LoudLastResort = m == 1
	err = e.s.placer.Place(ctx, &e.req, &e.place)
	t = e.since(t, &e.stats.Placement)
	if err != nil {
		if cut(ctx, err) {
			return false, nil
		}
		return false, fmt.Errorf("pds: round %d: placer: %w", m, err)
	}
	r := &e.cur
	if err := e.takePlacement(r, m); err != nil {
		return false, err
	}
	r.prices = e.sol.Prices
	e.check(r)
	e.since(t, &e.stats.Interference)
	e.feedback(r, m)
	cost := e.violationCost(r)
	if e.settled || m == e.rounds() || e.cfg.Ablation.GreedyFirstFit {
		// (Without prices, −ESP's next round is a full one: its jobs take
		// what fits in the State's order, which a local round cannot
		// tell.)
		e.keep(&e.cur, cost)
		return true, nil
	}
	ok, err := e.localRound(ctx, m+1)
	e.keep(&e.cur, cost)
	if err != nil || !ok {
		return ok, err
	}
	e.keep(&e.alt, e.violationCost(&e.alt))
	return true, nil
}

// feedback records round m's result r, whose violations are in e.viol, and
// feeds back what went wrong for the next round: the victim's
// configuration of each violating pair and each configuration that found
// no GPUs are penalized (Δ), and the pairs kept apart.
func (e *epoch) feedback(r *result, m int) {
	e.stats.Rounds = m
	e.stats.Violations += len(e.viol)
	// Algorithm 1 stops at the first round without a violation; a job the
	// placer left out keeps its penalty for the next epoch instead of
	// costing every epoch its M rounds.
	e.settled = len(e.viol) == 0
	e.remember(r)
	e.violated = slab.Zeroed(e.violated, len(e.jobs))
	for _, v := range e.viol {
		e.penalize(v.victim, r.choice[v.victim])
		e.separate(r, v)
		// Not sticky to where it violated: the next placement looks for a
		// quiet GPU for it (a running job still starts from its own).
		e.violated[v.victim], e.violated[v.aggressor] = true, true
	}
	for j := range e.jobs {
		if it := e.jobItem[j]; it >= 0 && r.gpus[j] == nil {
			e.penalizeBy(int32(j), e.itemFam[it], e.unplacedPenalty())
		}
	}
}

// localRound is round m when round m−1 (in e.cur) found violations: only
// the jobs of the violating pairs bid again, at round m−1's prices with
// the penalties it added (a victim's violating configuration now costs Δ
// more); every other job keeps the configuration and GPUs round m−1 gave
// it, or waits if it found none; the pairs are placed apart. Its result
// goes to e.alt. A full round would price the whole market again for a
// handful of changed bids and place every job again: at 20,000 jobs that
// was a fifth of an epoch. It returns false when the context cut it short.
func (e *epoch) localRound(ctx context.Context, m int) (bool, error) {
	r, nr := &e.cur, &e.alt
	t := e.s.cfg.Clock()
	e.localFam = slab.Zeroed(e.localFam, len(e.jobs))
	for j := range e.jobs {
		switch {
		case e.violated[j]:
			e.localFam[j] = e.bestResponse(int32(j), &r.prices)
		case r.gpus[j] != nil:
			e.localFam[j] = r.choice[j]
		default:
			e.localFam[j] = -1
		}
	}
	t = e.since(t, &e.stats.Prices)
	e.buildItems(func(j int) int32 { return e.localFam[j] })
	err := e.s.placer.Place(ctx, &e.req, &e.place)
	t = e.since(t, &e.stats.Placement)
	if err != nil {
		if cut(ctx, err) {
			return false, nil
		}
		return false, fmt.Errorf("pds: round %d: placer: %w", m, err)
	}
	if err := e.takePlacement(nr, m); err != nil {
		return false, err
	}
	for j := range e.jobs {
		switch {
		case e.jobItem[j] >= 0:
		case r.gpus[j] != nil:
			// It bid again and found nothing worth its price.
			nr.code[j], nr.reason[j] = elastico.Unaffordable, ""
		default:
			nr.code[j], nr.reason[j] = r.code[j], r.reason[j]
		}
	}
	nr.prices = r.prices
	e.check(nr)
	e.since(t, &e.stats.Interference)
	e.feedback(nr, m)
	return true, nil
}

// bestResponse returns the family index of job j's most valuable option
// at prices λ (w·G̃ − Γ − λ·R̂, R̂ in fractions of the market's capacity,
// as ESP prices it), or -1 if none is worth its price: then a running job
// keeps its configuration if that is worth anything (as admit does).
func (e *epoch) bestResponse(j int32, lambda *elastico.Vector) int32 {
	js := &e.jobs[j]
	if js.bidder < 0 {
		return -1
	}
	w := e.market.Bidders[js.bidder].Weight
	capc := &e.market.Capacity
	best, bestV := int32(-1), 0.0
options:
	for o := js.first; o < js.first+js.n; o++ {
		opt := &e.options[o]
		v := w * (opt.Goodput - e.base[o] - e.learned[o])
		for r, d := range opt.Demand {
			if d > 0 {
				if !(capc[r] > 0) {
					continue options
				}
				v -= lambda[r] * d / capc[r]
			}
		}
		if v > bestV {
			best, bestV = o, v
		}
	}
	if best < 0 && js.running && js.curOpt >= 0 && e.options[js.curOpt].Goodput-e.base[js.curOpt]-e.learned[js.curOpt] > 0 {
		best = js.curOpt
	}
	switch {
	case best >= 0:
		return e.optFam[best]
	case e.cfg.Pinned && js.curOpt >= 0:
		return js.cur
	}
	return -1
}

// choiceFamily returns job j's chosen family index this round, or -1.
func (e *epoch) choiceFamily(j int) int32 {
	js := &e.jobs[j]
	if b := js.bidder; b >= 0 && e.choice[b] >= 0 {
		return e.optFam[js.first+e.choice[b]]
	}
	if e.cfg.Pinned && js.curOpt >= 0 {
		// It cannot be stopped: it stays as it runs.
		return js.cur
	}
	return -1
}

// buildItems makes the placement request for the jobs that chose a
// configuration, with the Avoid pairs found so far.
func (e *epoch) buildItems(fam func(int) int32) {
	e.items = e.items[:0]
	e.itemFam = e.itemFam[:0]
	e.itemJob = e.itemJob[:0]
	e.jobItem = slab.Zeroed(e.jobItem, len(e.jobs))
	for j := range e.jobs {
		e.jobItem[j] = -1
		k := fam(j)
		if k < 0 {
			continue
		}
		js := &e.jobs[j]
		e.jobItem[j] = int32(len(e.items))
		cur := js.curGPUs
		if held := e.heldFor(j); held != nil && !js.running {
			// It starts on the GPUs held for it.
			cur = held
		} else if e.hasPrev && e.prev.gpus[j] != nil && (j >= len(e.violated) || !e.violated[j]) {
			// Sticky to the last round's placement: most jobs are where
			// they were, so the placer keeps them there at little cost.
			cur = e.prev.gpus[j]
		}
		e.items = append(e.items, elastico.PlacementItem{Job: js.job, Profile: &js.job.Profiles[k], Current: cur, Quiet: e.priced(int32(j))})
		e.itemFam = append(e.itemFam, k)
		e.itemJob = append(e.itemJob, int32(j))
	}
	for _, p := range e.avoid {
		a, b := e.jobItem[p.a], e.jobItem[p.b]
		if e.inForce(p) {
			e.items[a].Avoid = append(e.items[a].Avoid, int(b))
		}
	}
	// The placer judges pairs by the rule in force this epoch
	// (placement.PairJudge).
	var pred elastico.Predictor
	if e.s.pred != nil {
		pred = placerPredictor{&e.memo}
	}
	cl := e.placeCl
	if cl == nil {
		cl = &e.st.Cluster
	}
	e.req = elastico.PlacementRequest{Cluster: cl, Items: e.items, Predictor: pred}
}

// takePlacement turns the placer's answer into a result, checking that it
// is well formed and within capacity (a custom Placer might not be).
func (e *epoch) takePlacement(r *result, m int) error {
	n := len(e.jobs)
	r.choice = slab.Zeroed(r.choice, n)
	r.gpus = slab.Zeroed(r.gpus, n)
	r.code = slab.Zeroed(r.code, n)
	r.reason = slab.Zeroed(r.reason, n)
	r.want = slab.Zeroed(r.want, n)
	r.slab = r.slab[:0]
	if len(e.place.GPUs) != len(e.items) || len(e.place.Reasons) != len(e.items) {
		return fmt.Errorf("pds: round %d: placer answered %d GPU sets and %d reasons for %d items", m, len(e.place.GPUs), len(e.place.Reasons), len(e.items))
	}
	acc := e.account()
	loud := "" // the same words for every job the placer kept off loud GPUs
	for j := range e.jobs {
		r.choice[j] = -1
		it := e.jobItem[j]
		if it < 0 {
			r.code[j] = elastico.Unaffordable
			continue
		}
		item := &e.items[it]
		gs := e.place.GPUs[it]
		if gs == nil {
			r.code[j] = elastico.Unplaceable
			r.reason[j] = e.place.Reasons[it]
			r.want[j] = e.itemFam[it] + 1
			if why := e.keptApart(int32(j)); why != "" {
				r.code[j] = elastico.Interference
				r.reason[j] += why
			} else if len(e.place.Codes) == len(e.items) && e.place.Codes[it] == elastico.Interference {
				// The placer judged by this epoch's rule (placerPredictor).
				r.code[j] = elastico.Interference
				if loud == "" {
					loud = placement.ReasonLoud + e.lim.String()
				}
				r.reason[j] = loud
			}
			continue
		}
		if len(gs) != item.Profile.Demand.GPUs {
			return fmt.Errorf("pds: round %d: placer gave job %q %d GPUs for a configuration of %d", m, item.Job.ID, len(gs), item.Profile.Demand.GPUs)
		}
		for _, g := range gs {
			if g.Node < 0 || g.Node >= len(e.st.Cluster.Nodes) || g.GPU < 0 || g.GPU >= len(e.st.Cluster.Nodes[g.Node].GPUs) {
				return fmt.Errorf("pds: round %d: placer put job %q on %+v, not a GPU of the cluster", m, item.Job.ID, g)
			}
		}
		if why := acc.add(gs, item.Profile); why != "" {
			return fmt.Errorf("pds: round %d: placer broke capacity with job %q: %s", m, item.Job.ID, why)
		}
		r.choice[j] = e.itemFam[it]
		r.slab = append(r.slab, gs...)
		r.code[j] = elastico.Scheduled
	}
	// A running job whose new configuration found no room keeps the one it
	// runs under, where it runs, if that still fits: reshaping it was to
	// help it, not to preempt it.
	e.keptOld = slab.Zeroed(e.keptOld, n)
	for j := range e.jobs {
		js := &e.jobs[j]
		it := e.jobItem[j]
		if !js.running || r.code[j] != elastico.Unplaceable || js.curOpt < 0 || it < 0 || e.itemFam[it] == js.cur {
			continue
		}
		if acc.add(js.curGPUs, &js.job.Profiles[js.cur]) != "" {
			continue
		}
		e.keptOld[j] = true
		r.choice[j], r.code[j], r.reason[j] = js.cur, elastico.Scheduled, ""
		r.slab = append(r.slab, js.curGPUs...)
	}
	// The GPU sets, sliced from the slab once it stops growing, in the
	// order they were appended.
	off := 0
	for pass := range 2 {
		for j := range e.jobs {
			if r.code[j] != elastico.Scheduled || e.keptOld[j] != (pass == 1) {
				continue
			}
			k := len(e.jobs[j].curGPUs)
			if pass == 0 {
				k = len(e.place.GPUs[e.jobItem[j]])
			}
			r.gpus[j] = r.slab[off : off+k : off+k]
			off += k
		}
	}
	if e.cfg.Pinned {
		e.pin(r)
	}
	r.score = e.score(r)
	return nil
}

// remember copies r's GPUs as the next placement's starting point.
func (rs *roundState) remember(r *result) {
	rs.prev.gpus = slab.Zeroed(rs.prev.gpus, len(r.gpus))
	rs.prev.slab = rs.prev.slab[:0]
	for _, gs := range r.gpus {
		rs.prev.slab = append(rs.prev.slab, gs...)
	}
	off := 0
	for j, gs := range r.gpus {
		if gs != nil {
			rs.prev.gpus[j] = rs.prev.slab[off : off+len(gs) : off+len(gs)]
			off += len(gs)
		}
	}
	rs.hasPrev = true
}

// keep makes r (e.cur or e.alt) the best result so far if it scores at
// least as well, less cost, what deferring one job of each of its
// violating pairs would lose (later rounds win ties: they know more).
func (rs *roundState) keep(r *result, cost float64) {
	r.score -= cost
	if r.score >= rs.best.score {
		rs.best, *r = *r, rs.best
	}
}
