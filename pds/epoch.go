package pds

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/placement"
	"github.com/elastico/elastico/rst"
)

// epoch is one Epoch call's working set; the Scheduler keeps it for the
// next call.
type epoch struct {
	s   *Scheduler
	cfg *Config
	st  *elastico.State
	// overs is the SM share a GPU may hold and maxJobs the jobs (0: no
	// limit): the placer's, when it is a placement.Placer.
	overs   float64
	maxJobs int

	// gpuRef locates each GPU by ID, built for the GPUs (in order) gpuIDs
	// lists: kept while the cluster's GPUs stay the same.
	gpuRef    map[string]elastico.GPURef
	gpuIDs    []string
	nodeFirst []int32 // global number of each node's first GPU
	gpuNode   []int32
	ngpu      int
	capacity  elastico.Vector
	invCap    elastico.Vector // 1/capacity, +Inf where it is zero

	// The last feasibility checker and the capacities it was built for.
	ck            *rst.Checker
	ckKey, ckPrev []float64

	jobs []jobState
	// Current residents of each GPU (jobs, from the State's assignments),
	// as a CSR over global GPU numbers.
	curOff, curRes []int32
	curSlab        []elastico.GPURef // the jobs' curGPUs
	sq             []float64         // see statusQuoPairs
	sqOff          []int32
	fill           []int32         // scratch for building a CSR
	lgpus          []rst.LaunchGPU // scratch for launch
	whyCache       map[unaffordable]string
	famVal         []float64 // per slot (see memo): w·G̃ of the option, 0 if none

	market   elastico.Market
	options  []elastico.Option // every bidder's options, flat
	optFam   []int32           // family index of each option
	real     []elastico.Vector // each option's true total demand
	base     []float64         // Γ without learned penalties
	learned  []float64         // learned penalties (Carry, then Δ per violation)
	bidJob   []int32
	choice   []int32 // per bidder: option (within the bidder), -1
	sol      elastico.Solution
	waiting  []int32 // jobs that do not run, in admission order
	waitKeys []waitKey
	famOff   []int32   // job j's profiles have the slots famOff[j] to famOff[j+1]-1
	famG     []float64 // G̃ of each profile
	tau, q   float64
	tauKeep  float64 // the tolerance of a pair that shares a GPU as before: τ's cap

	displaced, evict, restored []int32 // restore's scratch
	cands                      []int32 // repack's waiting jobs
	repackBuf                  []repackFill
	uf                         []int32 // revertGroups' union-find over GPUs
	gain                       []float64
	blocked                    []bool
	effCap                     elastico.Vector

	items   []elastico.PlacementItem
	jobItem []int32
	avoid   []avoidPair // pairs kept apart in later placements
	req     elastico.PlacementRequest
	place   elastico.Placement
	memo    memo

	// Per job, the first and last pair of avoid that holds it (index+1,
	// 0: none); each pair links to the next of each of its jobs.
	apartFirst, apartLast []int32

	best     result // the best feasible plan so far
	cur      result // the round in progress
	alt      result // a local round (see localRound)
	pinBack  []bool // per job: put back as the State has it (see pin)
	pinForce []bool // per job: pin puts it back whatever the placer did
	localFam []int32
	prev     result // the last placement, where the next one starts
	hasPrev  bool
	settled  bool   // the last round had no violation
	keptOld  []bool // per job: kept its running configuration after its new one found no room
	same     []bool // per job: runs in the best plan as the State has it (see plan)
	violated []bool // per job: in a violating pair in the last round
	gone     []bool // per job: deferred in violationCost's count
	acc      account
	itemFam  []int32 // family index of each placement item
	itemJob  []int32 // job of each placement item
	resOff   []int32
	resJobs  []int32
	viol     []violation
	// Reservations (see reserve): resvJob[j] is 1 + the index in resv of
	// job j's, or 0; resvGPU marks the held GPUs; placeCl is the cluster
	// the placer sees (nil: the State's).
	resv      []reservation
	resvJob   []int32
	resvGPU   []bool
	resvSlab  []elastico.GPURef
	cand      []heldCand // scratch of heldGPUs
	candBest  []heldCand
	placeCl   *elastico.Cluster
	stats     elastico.Stats
	truncated bool
}

type jobState struct {
	job     *elastico.Job
	running bool
	cur     int32 // family index of the running configuration, -1
	curGPUs []elastico.GPURef
	bidder  int32 // -1: not in the market
	first   int32 // flat index of its first option
	n       int32
	curOpt  int32           // flat index of the running configuration's option, -1
	minOpt  int32           // flat index of its smallest option, -1
	rmin    elastico.Vector // R_min over its feasible options
	// scale is what the job's best option here is worth: its weight times
	// its size in GPUs' worth of work (see jobOptions). Its options' G̃ and
	// penalties are fractions of it.
	scale float64
	// keep is what its present option is worth beyond G̃ (keepBonus).
	keep float64
	// infeasible holds why no configuration can run (Infeasible).
	infeasible []string
}

// result is a plan in the making: per job, a family index and GPUs, or why
// not.
type result struct {
	choice []int32
	gpus   [][]elastico.GPURef
	code   []elastico.Code
	reason []string
	prices elastico.Vector
	slab   []elastico.GPURef
	score  float64
}

type violation struct {
	victim, aggressor int32 // jobs
	gpu               int32
	slowdown, limit   float64 // limit: the tolerance it exceeds
}

func grow[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// resize is grow without clearing, for a slice whose every entry is
// written before it is read.
func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}

func (e *epoch) release() {
	e.st, e.req.Cluster, e.placeCl = nil, nil, nil
	clear(e.jobs)
	clear(e.items)
	clear(e.best.gpus)
	e.memo.reset(nil, nil)
}

func (e *epoch) init(s *Scheduler, st *elastico.State) {
	e.s, e.cfg, e.st = s, &s.cfg, st
	e.truncated = false
	e.hasPrev = false
	e.violated = e.violated[:0]
	e.pinForce = grow(e.pinForce, len(st.Jobs))
	e.stats = elastico.Stats{}
	clear(e.whyCache)
	e.overs, e.maxJobs = 1, 0
	if p, ok := s.placer.(*placement.Placer); ok {
		e.overs, e.maxJobs = p.Config().Oversubscription, p.Config().MaxJobsPerGPU
	}
	cl := &st.Cluster
	e.index(cl)
	e.capacity = cl.Capacity()
	for r, c := range e.capacity {
		e.invCap[r] = 1 / c // +Inf for none: any demand there is infinite
	}
	e.ngpu = cl.NumGPUs()
	e.nodeFirst = grow(e.nodeFirst, len(cl.Nodes))
	e.gpuNode = grow(e.gpuNode, e.ngpu)
	g := int32(0)
	for i := range cl.Nodes {
		e.nodeFirst[i] = g
		for range cl.Nodes[i].GPUs {
			e.gpuNode[g] = int32(i)
			g++
		}
	}
	e.avoid = e.avoid[:0]
	e.apartFirst = grow(e.apartFirst, len(st.Jobs))
	e.apartLast = grow(e.apartLast, len(st.Jobs))
	e.viol = e.viol[:0]
	e.memo.reset(s.pred, e)
}

// index makes gpuRef the cluster's, reusing the last one when its GPUs
// have the same IDs in the same order (a map of every GPU is a measurable
// part of an epoch).
func (e *epoch) index(cl *elastico.Cluster) {
	same := e.gpuRef != nil && len(e.gpuIDs) == cl.NumGPUs()
	g := 0
	for i := 0; same && i < len(cl.Nodes); i++ {
		for k := range cl.Nodes[i].GPUs {
			if cl.Nodes[i].GPUs[k].ID != e.gpuIDs[g] {
				same = false
				break
			}
			g++
		}
	}
	if same {
		return
	}
	e.gpuRef = cl.Index()
	e.gpuIDs = e.gpuIDs[:0]
	for i := range cl.Nodes {
		for k := range cl.Nodes[i].GPUs {
			e.gpuIDs = append(e.gpuIDs, cl.Nodes[i].GPUs[k].ID)
		}
	}
}

func (e *epoch) global(r elastico.GPURef) int32 { return e.nodeFirst[r.Node] + int32(r.GPU) }

func (e *epoch) gpuOf(g int32) *elastico.GPU {
	n := e.gpuNode[g]
	return &e.st.Cluster.Nodes[n].GPUs[g-e.nodeFirst[n]]
}

func (e *epoch) ref(g int32) elastico.GPURef {
	n := e.gpuNode[g]
	return elastico.GPURef{Node: int(n), GPU: int(g - e.nodeFirst[n])}
}

func (e *epoch) run(ctx context.Context) (*elastico.Plan, error) {
	e.buildMarket()
	e.best.score = math.Inf(-1) // any completed round beats nothing
	prices := e.st.Carry.Prices
	for m := 1; m <= e.rounds(); m = e.stats.Rounds + 1 {
		if ctx.Err() != nil {
			e.truncated = true
			break
		}
		ok, err := e.round(ctx, m, &prices)
		if err != nil {
			return nil, err
		}
		if !ok {
			e.truncated = true
			break
		}
		if e.settled {
			break
		}
	}
	if e.stats.Rounds == 0 {
		// No round completed before the deadline: the status quo.
		e.statusQuo()
	}
	if err := e.resolve(ctx); err != nil {
		return nil, err
	}
	e.repack()
	e.restore()
	e.revertGroups()
	e.hold()
	return e.plan(), nil
}

// rounds is M, the most rounds an epoch runs. Without coordinated
// reconfiguration it is one: that round's violations go to resolve, which
// separates or defers but never reshapes.
func (e *epoch) rounds() int {
	if e.cfg.Ablation.NoCoordinatedReconfiguration {
		return 1
	}
	return e.cfg.Rounds
}

// statusQuo makes the fallback plan: every running job where it runs, in
// the State's order, unless the State runs it against the rules (see
// cannotStay).
func (e *epoch) statusQuo() {
	n := len(e.st.Jobs)
	b := &e.best
	b.choice = grow(b.choice, n)
	b.gpus = grow(b.gpus, n)
	b.code = grow(b.code, n)
	b.reason = grow(b.reason, n)
	b.prices = e.st.Carry.Prices
	acc := e.account()
	for j := range e.jobs {
		js := &e.jobs[j]
		b.choice[j] = -1
		if !js.running {
			b.code[j] = elastico.Unaffordable
			b.reason[j] = "the epoch's deadline passed before the job was considered"
			continue
		}
		if why := e.stays(acc, j); why != "" {
			b.code[j] = elastico.Unplaceable
			b.reason[j] = why
			continue
		}
		b.choice[j] = js.cur
		b.gpus[j] = js.curGPUs
		b.code[j] = elastico.Scheduled
	}
	// Any completed round beats the status quo: it is only the fallback.
	b.score = math.Inf(-1)
}

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
	e.choice = grow(e.choice, len(e.market.Bidders))
	for b, c := range e.sol.Choice {
		if c < -1 || c >= len(e.market.Bidders[b].Options) {
			return false, fmt.Errorf("pds: round %d: price solver chose option %d of bidder %d (job %q), which has %d", m, c, b, e.jobs[e.bidJob[b]].job.ID, len(e.market.Bidders[b].Options))
		}
		e.choice[b] = int32(c)
	}
	e.admit()
	t = e.since(t, &e.stats.Prices)

	e.buildItems(e.choiceFamily)
	placer := e.s.placer
	if m == 1 {
		placer = e.s.first
	}
	err = placer.Place(ctx, &e.req, &e.place)
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
	e.violated = grow(e.violated, len(e.jobs))
	for _, v := range e.viol {
		e.penalize(v.victim, r.choice[v.victim])
		e.separate(r, v)
		// Not sticky to where it violated: the next placement looks for a
		// quiet GPU for it (a running job still starts from its own).
		e.violated[v.victim], e.violated[v.aggressor] = true, true
	}
	for j := range e.jobs {
		if it := e.jobItem[j]; it >= 0 && r.gpus[j] == nil {
			e.penalize(int32(j), e.itemFam[it])
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
	e.localFam = grow(e.localFam, len(e.jobs))
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
	e.jobItem = grow(e.jobItem, len(e.jobs))
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
		e.items = append(e.items, elastico.PlacementItem{Job: js.job, Profile: &js.job.Family[k], Current: cur, Quiet: e.priced(int32(j))})
		e.itemFam = append(e.itemFam, k)
		e.itemJob = append(e.itemJob, int32(j))
	}
	for _, p := range e.avoid {
		a, b := e.jobItem[p.a], e.jobItem[p.b]
		if e.inForce(p) {
			e.items[a].Avoid = append(e.items[a].Avoid, int(b))
		}
	}
	// The default placer's MaxSlowdown is τ0; scaling its slowdowns by
	// τ0/τ(t) moves that threshold to τ(t).
	var pred elastico.Predictor
	switch {
	case e.s.pred == nil:
	case e.s.ownPlacer && e.tau > e.cfg.Tolerance.Tau0:
		pred = placerPredictor{&e.memo, e.cfg.Tolerance.Tau0 / e.tau}
	default:
		pred = placerPredictor{&e.memo, 1}
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
	r.choice = grow(r.choice, n)
	r.gpus = grow(r.gpus, n)
	r.code = grow(r.code, n)
	r.reason = grow(r.reason, n)
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
			if why := e.keptApart(int32(j)); why != "" {
				r.code[j] = elastico.Interference
				r.reason[j] += why
			} else if e.s.ownPlacer && strings.HasPrefix(r.reason[j], placement.ReasonLoud) {
				// The default placer's threshold is τ(t) (see buildItems).
				r.code[j] = elastico.Interference
				if loud == "" {
					loud = fmt.Sprintf("%s%.3g× (its tolerance τ(t)): it or a resident would slow above that", placement.ReasonLoud, e.tau)
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
	e.keptOld = grow(e.keptOld, n)
	for j := range e.jobs {
		js := &e.jobs[j]
		it := e.jobItem[j]
		if !js.running || r.code[j] != elastico.Unplaceable || js.curOpt < 0 || it < 0 || e.itemFam[it] == js.cur {
			continue
		}
		if acc.add(js.curGPUs, &js.job.Family[js.cur]) != "" {
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

// score rates a result: the value Σ w·G̃ of the jobs it runs, less, for
// each pair predicted above tolerance, the value of the lesser job (what
// resolving it by deferral would cost).
func (e *epoch) score(r *result) float64 {
	v := 0.0
	for j := range e.jobs {
		if r.gpus[j] != nil {
			v += e.valueOf(int32(j), r.choice[j])
		}
	}
	return v
}

// valueOf is w·G̃ of job j under family index k (0 if k is not an option).
func (e *epoch) valueOf(j, k int32) float64 {
	if k < 0 {
		return 0
	}
	return e.famVal[e.memo.base[j]+uint32(k)]
}

// keptApart says which jobs j is kept apart from, and why.
func (e *epoch) keptApart(j int32) string {
	if e.apartFirst[j] == 0 {
		// Most jobs the placer leaves out (thousands at scale) are in no
		// pair: not a Builder each.
		return ""
	}
	var b strings.Builder
	for i := e.apartFirst[j]; i != 0; i = e.nextPair(i, j) {
		p := e.avoid[i-1]
		if !e.inForce(p) {
			continue
		}
		other := p.a + p.b - j
		victim, aggr := e.jobs[p.v].job.ID, e.jobs[p.a+p.b-p.v].job.ID
		fmt.Fprintf(&b, "; kept apart from job %q (%s predicted %.3g× slower beside %s, tolerance %.3g)", e.jobs[other].job.ID, victim, p.s, aggr, e.tau)
	}
	return b.String()
}

// inForce reports whether pair p was kept apart in the last placement:
// both placed under the configurations they violated under.
func (e *epoch) inForce(p avoidPair) bool {
	a, b := e.jobItem[p.a], e.jobItem[p.b]
	return a >= 0 && b >= 0 && e.itemFam[a] == p.ka && e.itemFam[b] == p.kb
}

// avoidPair is a violating pair: jobs a and b under family indices ka and
// kb; v (a or b) is predicted slowed s× by the other.
type avoidPair struct {
	a, b, ka, kb, v int32
	s               float64
	next            [2]int32 // the next pair of a and of b (see apartFirst)
}

// nextPair returns the pair after pair i (index+1) among job j's, or 0.
func (e *epoch) nextPair(i, j int32) int32 {
	p := &e.avoid[i-1]
	if p.a == j {
		return p.next[0]
	}
	return p.next[1]
}

// linkPair appends pair i (index+1) to job j's pairs.
func (e *epoch) linkPair(i, j int32) {
	if last := e.apartLast[j]; last == 0 {
		e.apartFirst[j] = i
	} else if p := &e.avoid[last-1]; p.a == j {
		p.next[0] = i
	} else {
		p.next[1] = i
	}
	e.apartLast[j] = i
}

// separate keeps a violating pair apart in every later placement of the
// epoch in which both keep the configurations they violated under: the
// penalty asks the market for other configurations, this asks the placer
// for other neighbours, and together they settle in fewer rounds.
func (e *epoch) separate(r *result, v violation) {
	a, b := min(v.victim, v.aggressor), max(v.victim, v.aggressor)
	p := avoidPair{a: a, b: b, ka: r.choice[a], kb: r.choice[b], v: v.victim, s: v.slowdown}
	for i := e.apartFirst[a]; i != 0; i = e.nextPair(i, a) {
		if q := &e.avoid[i-1]; q.a == a && q.b == b && q.ka == p.ka && q.kb == p.kb {
			return
		}
	}
	e.avoid = append(e.avoid, p)
	i := int32(len(e.avoid))
	e.linkPair(i, a)
	if b != a {
		e.linkPair(i, b)
	}
}

// remember copies r's GPUs as the next placement's starting point.
func (e *epoch) remember(r *result) {
	e.prev.gpus = grow(e.prev.gpus, len(r.gpus))
	e.prev.slab = e.prev.slab[:0]
	for _, gs := range r.gpus {
		e.prev.slab = append(e.prev.slab, gs...)
	}
	off := 0
	for j, gs := range r.gpus {
		if gs != nil {
			e.prev.gpus[j] = e.prev.slab[off : off+len(gs) : off+len(gs)]
			off += len(gs)
		}
	}
	e.hasPrev = true
}

// keep makes r (e.cur or e.alt) the best result so far if it scores at
// least as well, less cost, what deferring one job of each of its
// violating pairs would lose (later rounds win ties: they know more).
func (e *epoch) keep(r *result, cost float64) {
	r.score -= cost
	if r.score >= e.best.score {
		e.best, *r = *r, e.best
	}
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
	e.gone = grow(e.gone, len(e.jobs))
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
func (e *epoch) penalize(j, k int32) {
	js := &e.jobs[j]
	if js.bidder < 0 || k < 0 {
		return
	}
	for o := js.first; o < js.first+js.n; o++ {
		if e.optFam[o] == k {
			e.learned[o] += e.cfg.Delta
			return
		}
	}
}

// account adds up what a result puts on each GPU and node.
type account struct {
	e        *epoch
	sm, mem  []float64
	jobs     []int32
	cpu, ram []float64
}

// account returns the epoch's account, emptied.
func (e *epoch) account() *account {
	a := &e.acc
	a.e = e
	a.sm = grow(a.sm, e.ngpu)
	a.mem = grow(a.mem, e.ngpu)
	a.jobs = grow(a.jobs, e.ngpu)
	a.cpu = grow(a.cpu, len(e.st.Cluster.Nodes))
	a.ram = grow(a.ram, len(e.st.Cluster.Nodes))
	return a
}

const slack = 1e-9

func over(x, c float64) bool { return x > c+slack*math.Max(1, c) }

// sub takes back one job's replicas from gs, which add put there.
func (a *account) sub(gs []elastico.GPURef, p *elastico.Profile) {
	d := &p.Demand
	for _, r := range gs {
		g := a.e.global(r)
		a.sm[g] -= d.SM
		a.mem[g] -= d.GPUMemory
		a.jobs[g]--
		a.cpu[r.Node] -= d.CPU
		a.ram[r.Node] -= d.RAM
	}
}

// add puts one job's replicas on gs, or returns why they do not fit and
// leaves the account unchanged.
func (a *account) add(gs []elastico.GPURef, p *elastico.Profile) string {
	d := &p.Demand
	cl := &a.e.st.Cluster
	if len(gs) == 1 {
		// One replica (most jobs): the checks below, without the loops.
		r := gs[0]
		g := a.e.nodeFirst[r.Node] + int32(r.GPU)
		hw := &cl.Nodes[r.Node].GPUs[r.GPU]
		n := &cl.Nodes[r.Node]
		sm, mem, cpu, ram := a.sm[g]+d.SM, a.mem[g]+d.GPUMemory, a.cpu[r.Node]+d.CPU, a.ram[r.Node]+d.RAM
		if !over(sm, a.e.overs) && !over(mem, hw.Memory) && (hw.Shared || a.jobs[g] == 0) &&
			(a.e.maxJobs <= 0 || int(a.jobs[g]) < a.e.maxJobs) && !over(cpu, n.CPU) && !over(ram, n.RAM) {
			a.sm[g], a.mem[g], a.cpu[r.Node], a.ram[r.Node] = sm, mem, cpu, ram
			a.jobs[g]++
			return ""
		}
	}
	for k, r := range gs {
		g := a.e.global(r)
		hw := a.e.gpuOf(g)
		for _, r2 := range gs[:k] {
			if r2 == r {
				return fmt.Sprintf("GPU %s is listed twice", hw.ID)
			}
		}
		switch {
		case over(a.sm[g]+d.SM, a.e.overs):
			return fmt.Sprintf("GPU %s would hold an SM share of %.3g", hw.ID, a.sm[g]+d.SM)
		case over(a.mem[g]+d.GPUMemory, hw.Memory):
			return fmt.Sprintf("GPU %s would hold %.3g GiB of its %.3g", hw.ID, a.mem[g]+d.GPUMemory, hw.Memory)
		case !hw.Shared && a.jobs[g] > 0:
			return fmt.Sprintf("GPU %s is not shared and already holds a job", hw.ID)
		case a.e.maxJobs > 0 && int(a.jobs[g]) >= a.e.maxJobs:
			return fmt.Sprintf("GPU %s already holds %d jobs", hw.ID, a.jobs[g])
		}
	}
	for _, r := range gs {
		n := cl.Nodes[r.Node]
		cpu, ram := 0.0, 0.0
		for _, r2 := range gs {
			if r2.Node == r.Node {
				cpu += d.CPU
				ram += d.RAM
			}
		}
		if over(a.cpu[r.Node]+cpu, n.CPU) || over(a.ram[r.Node]+ram, n.RAM) {
			return fmt.Sprintf("node %s would need %.3g CPU and %.3g GiB RAM of its %.3g and %.3g", n.ID, a.cpu[r.Node]+cpu, a.ram[r.Node]+ram, n.CPU, n.RAM)
		}
	}
	for _, r := range gs {
		g := a.e.global(r)
		a.sm[g] += d.SM
		a.mem[g] += d.GPUMemory
		a.jobs[g]++
		a.cpu[r.Node] += d.CPU
		a.ram[r.Node] += d.RAM
	}
	return ""
}
