package pds

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/chunk"
	"github.com/elastico/elastico/internal/slab"
	"github.com/elastico/elastico/rst"
)

// buildMarket turns the State into an ESP market: per job, its feasible
// configurations with their normalized goodput, total demand and Γ
// (interference against its current co-runners, switching cost, learned
// penalties); the capacity C_eff after the queue reservation (Eq. 12); and
// the sharing rule in force at the queue pressure (iac.Sharing.At).
func (e *epoch) buildMarket() {
	e.startJobs()
	e.buildOptions()
	e.curOff, e.curRes = e.byGPU(e.curOff, e.curRes, len(e.jobs), func(j int) []elastico.GPURef { return e.jobs[j].curGPUs })
	queue := e.bidders()

	// Queue pressure (Eq. 11) and the sharing rule in force.
	e.q = queue.DominantShare(e.capacity)
	if math.IsInf(e.q, 1) || math.IsNaN(e.q) {
		e.q = math.MaxFloat64
	}
	e.lim = e.cfg.Sharing.At(e.q)
	e.limKeep = e.cfg.Sharing.Keep()

	e.waitingOrder()
	e.reserve()
	e.holdForWaiting()

	// Γ's interference term: predictions, so timed as interference.
	if e.memo.on() {
		t := e.s.cfg.Clock()
		e.learnCoRuns()
		e.statusQuoPairs()
		e.interferencePenalties()
		e.since(t, &e.stats.Interference)
	}
	e.freezeSettled()

	// The market, its bidders' options sliced from the flat array.
	e.market.Capacity = e.effCap
	e.market.Bidders = slab.Zeroed(e.market.Bidders, len(e.bidJob))
	for b, j := range e.bidJob {
		js := &e.jobs[j]
		e.market.Bidders[b] = elastico.Bidder{Weight: js.scale, Options: e.options[js.first : js.first+js.n : js.first+js.n]}
	}
}

// startJobs makes a jobState per job of the State, with room for its
// current assignment as global GPU numbers (looked up in jobOptions).
func (e *epoch) startJobs() {
	st := e.st
	e.jobs = slab.Resize(e.jobs, len(st.Jobs)) // each is set below
	nref := 0
	for j := range st.Jobs {
		if a := st.Jobs[j].Running; a != nil {
			nref += len(a.GPUs)
		}
	}
	e.curSlab = slab.Zeroed(e.curSlab, nref)
	refs := e.curSlab
	for j := range st.Jobs {
		job := &st.Jobs[j]
		js := &e.jobs[j]
		*js = jobState{job: job, cur: -1, bidder: -1, curOpt: -1, minOpt: -1}
		if a := job.Running; a != nil {
			js.running = true
			js.curGPUs = refs[:len(a.GPUs):len(a.GPUs)]
			refs = refs[len(a.GPUs):]
		}
	}
}

// buildOptions makes every job's options: per job, its feasible
// configurations, with their demand (real keeps it whole, before the
// reservation of holdForWaiting), what each is worth to the job (G̃, and
// w·G̃ by slot for valueOf), Γ's switching cost and the learned penalties
// carried over; and R_min. All of it depends on the job alone, so it is
// made on several goroutines, in one pass over the profiles (they are
// large: every pass over them was a measurable part of an epoch). Job j's
// options lie at the start of its own slots, options[famOff[j]:famOff[j+1]];
// the slots of its configurations that cannot run are left zero.
func (e *epoch) buildOptions() {
	st := e.st
	n := len(st.Jobs)
	ch, cherr := e.checker()
	e.famOff = slab.Zeroed(e.famOff, n+1)
	for j := range st.Jobs {
		e.famOff[j+1] = e.famOff[j] + int32(len(st.Jobs[j].Profiles))
	}
	nprof := int(e.famOff[n])
	e.famG = slab.Resize(e.famG, nprof)
	e.options = slab.Resize(e.options, nprof)
	e.optFam = slab.Resize(e.optFam, nprof)
	e.real = slab.Resize(e.real, nprof)
	e.base = slab.Resize(e.base, nprof)
	e.learned = slab.Resize(e.learned, nprof)
	e.optModel = slab.Resize(e.optModel, nprof)
	e.famVal = slab.Zeroed(e.famVal, len(e.memo.pid))
	var summary string
	if cherr != nil {
		ch, summary = nil, "the cluster cannot be summarized: "+cherr.Error()
	}
	chunk.Do(n, chunk.Count(n), func(_, lo, hi int) {
		for j := lo; j < hi; j++ {
			e.jobOptions(j, ch, summary)
		}
	})
}

// bidders makes every job with an option a bidder, in the State's order,
// and returns the waiting jobs' R_min added up.
func (mk *marketState) bidders() elastico.Vector {
	mk.bidJob = mk.bidJob[:0]
	var queue elastico.Vector
	for j := range mk.jobs {
		js := &mk.jobs[j]
		if js.n == 0 {
			continue
		}
		js.bidder = int32(len(mk.bidJob))
		mk.bidJob = append(mk.bidJob, int32(j))
		if !js.running {
			queue = queue.Add(js.rmin)
		}
	}
	return queue
}

// holdForWaiting sets the market's capacity, C_eff. Reservation (Eq. 12):
// γ·R_min of waiting jobs is held back from the market (C_eff = C −
// γ·Σ R_min), and admit spends it on the waiting jobs the market deferred,
// at their smallest configurations: running jobs cannot grow into the
// whole cluster while jobs wait. It is held only for the waiting jobs
// whose R_min fits what the running jobs leave free where they run (in
// admission order): holding more would push a running job out for a
// waiting one (a reservation of a ninth of a GPU made an 8-GPU gang on 8
// GPUs give way to a waiting 1-GPU job), and a job that fits only if
// running jobs shrink gets its room from the market, by its worth, or not
// at all. A job's own hold is taken off its options' demand, so that
// whatever the market admits within C_eff fits C; held for every waiting
// job, that made every waiting job look cheaper than a running one of
// equal worth, and the market swapped them.
func (e *epoch) holdForWaiting() {
	gamma := e.cfg.Reservation
	if e.cfg.Ablation.NoReservation {
		gamma = 0
	}
	var held elastico.Vector
	if gamma > 0 {
		free := e.capacity
		for j := range e.jobs {
			if js := &e.jobs[j]; js.curOpt >= 0 {
				free = free.Sub(e.real[js.curOpt])
			}
		}
		for _, j := range e.waiting {
			js := &e.jobs[j]
			if js.n == 0 || !js.rmin.LessEq(free) {
				continue
			}
			free = free.Sub(js.rmin)
			own := js.rmin.Scale(gamma)
			held = held.Add(own)
			// The job's own hold is not in its way: its options demand
			// that much less of C_eff.
			for o := js.first; o < js.first+js.n; o++ {
				d := &e.options[o].Demand
				for r := range d {
					d[r] = max(0, d[r]-own[r])
				}
			}
		}
	}
	for r := range e.effCap {
		e.effCap[r] = max(0, e.capacity[r]-held[r])
	}
}

// jobOptions makes job j's options (see buildMarket) and fills its
// jobState but for the bidder. ch is the cluster's feasibility checker;
// if it is nil, unfit says why there is none. It writes only job j's state
// and slots: it runs on several goroutines.
func (e *epoch) jobOptions(j int, ch *rst.Checker, unfit string) {
	js := &e.jobs[j]
	job := js.job
	a, b := e.famOff[j], e.famOff[j+1]
	gscr := rst.NormalizedGoodputInto(e.famG[a:a:b], job.Profiles)
	ab := &e.cfg.Ablation
	lo, hi := int32(0), int32(len(job.Profiles))
	// findCur: the running profile is found in the loop below, in the
	// same pass over the profiles (at scale they are the epoch's largest
	// memory), unless an ablation needs it first.
	findCur := false
	if js.running {
		// (Concurrent reads of gpuRef: nothing writes it during an epoch.)
		for k, id := range job.Running.GPUs {
			js.curGPUs[k] = e.gpuRef[id]
		}
		findCur = true
		if ab.FixedConfiguration || ab.NoCoordinatedReconfiguration {
			js.cur = e.runningProfile(job)
			lo, hi = js.cur, js.cur+1
			findCur = false
		}
	} else if ab.FixedConfiguration {
		lo, hi = 0, 1
	}
	// (Concurrent reads of the caller's map: nothing writes it.)
	carried := e.st.Carry.Penalties[job.ID]
	inv := &e.invCap
	js.first = a
	o := a
	minShare, gmax := math.Inf(1), 0.0
	for k := lo; k < hi; k++ {
		p := &job.Profiles[k]
		if findCur && p.Config.ID == job.Running.ConfigID {
			js.cur, findCur = k, false
		}
		why := unfit
		if ch != nil {
			why = ch.Why(p, job.Floor, job.Spread)
		}
		if why == "" && e.cfg.Pinned && js.running && p.Demand.GPUs < len(js.curGPUs) {
			why = fmt.Sprintf("needs %d GPUs; the job holds %d and cannot give any up (Config.Pinned)", p.Demand.GPUs, len(js.curGPUs))
		}
		if why != "" {
			js.infeasible = append(js.infeasible, p.Config.ID+": "+why)
			continue
		}
		sw := e.cfg.SwitchingCost
		if k == js.cur {
			js.curOpt = o
			// Starting a job and reshaping one are both switches: the
			// incumbent wins ties, so near-equal jobs do not take turns.
			sw = 0
		}
		d := p.Demand.Total()
		if !ab.SMMarket {
			// GPUs whole: which jobs share a GPU is the sharing rule's
			// decision, made where the pairs are known (see the package
			// doc).
			d[elastico.SM] = max(d[elastico.SM], float64(p.Demand.GPUs))
		}
		// The dominant share, inline (Vector.DominantShare per option is a
		// measurable part of an epoch).
		share := max(d[0]*inv[0], d[1]*inv[1], d[2]*inv[2], d[3]*inv[3])
		if math.IsNaN(share) { // no demand where there is no capacity
			share = d.DominantShare(e.capacity)
		}
		if share < minShare || js.minOpt < 0 {
			minShare, js.minOpt = share, o
		}
		gmax = max(gmax, gscr[k])
		pen := 0.0
		if len(carried) > 0 && !fewCarried(carried, hi-lo) {
			pen = carried[p.Config.ID]
		}
		e.options[o] = elastico.Option{Goodput: gscr[k], Demand: d}
		e.optFam[o], e.real[o], e.base[o], e.learned[o] = k, d, sw, pen
		e.optModel[o] = e.modelOf(p)
		o++
	}
	js.n = o - a
	if len(carried) > 0 && fewCarried(carried, hi-lo) {
		// A few penalties among many options: each looked up by its
		// configuration rather than each option in the map.
		for id, pen := range carried {
			for x := a; x < o; x++ {
				if job.Profiles[e.optFam[x]].Config.ID == id {
					e.learned[x] = pen
					break
				}
			}
		}
	}
	for s := o; s < b; s++ {
		e.options[s], e.optFam[s], e.real[s], e.base[s], e.learned[s] = elastico.Option{}, 0, elastico.Vector{}, 0, 0
		e.optModel[s] = -1
	}
	if js.n == 0 {
		return
	}
	opts := e.options[a:o]
	// G̃ is normalized over the configurations the job may run under here,
	// not the whole family: a job whose best configuration does not fit
	// this cluster (or that the −RST ablation holds to its requested one)
	// must still be worth more than the switching cost of starting, or it
	// would wait forever on an idle cluster.
	if gmax > 0 && gmax < 1 {
		for x := range opts {
			opts[x].Goodput /= gmax
		}
	}
	// The job's worth counts its work (see the package doc): G̃ in GPUs'
	// worth of its most efficient configuration here, so that a gang that
	// makes eight GPUs' worth of progress is worth eight one-GPU jobs.
	perGPU := 0.0
	for x := range opts {
		perGPU = max(perGPU, opts[x].Goodput/float64(job.Profiles[e.optFam[a+int32(x)]].Demand.GPUs))
	}
	size := 1.0
	if perGPU > 0 {
		size = 1 / perGPU
	}
	js.scale = job.EffectiveWeight() * size
	if !ab.SMMarket {
		e.fairWorth(js, opts, a)
	}
	rmin := opts[0].Demand
	for x := range opts {
		e.famVal[e.memo.base[j]+uint32(e.optFam[a+int32(x)])] = js.scale * opts[x].Goodput
		for r := range rmin {
			rmin[r] = min(rmin[r], opts[x].Demand[r])
		}
	}
	js.rmin = rmin
	if js.curOpt >= 0 {
		// Keeping a running job where it runs saves its restart (see
		// Config.Horizon and MinRunTime): its present option is worth that
		// much more.
		o := &e.options[js.curOpt]
		js.keep = e.keepBonus(js, o.Goodput)
		o.Goodput += js.keep
	}
}

// runningProfile is the index of running job job's profile.
func (e *epoch) runningProfile(job *elastico.Job) int32 {
	for k := range job.Profiles {
		if job.Profiles[k].Config.ID == job.Running.ConfigID {
			return int32(k)
		}
	}
	return -1
}

// fewCarried reports whether a job's carried penalties are few enough
// against its n options that looking each up among the options (a string
// comparison each) costs less than looking each option up in the map.
func fewCarried(carried map[string]float64, n int32) bool {
	return int32(len(carried))*4 <= n
}

// fairWorth turns job js's options (opts, whose first is option a)
// from normalized goodput G̃ into the worth Config.Fairness defines,
// n·(1/ε − 1/(x + ε)) per unit of weight, x the option's goodput over the
// best on the job's fair share of the GPUs, n the GPUs of its smallest
// option; it sets js.scale to the job's weight times n.
func (e *epoch) fairWorth(js *jobState, opts []elastico.Option, a int32) {
	job := js.job
	fair := (e.ngpu + len(e.st.Jobs) - 1) / max(1, len(e.st.Jobs))
	gf, n, smallG := 0.0, math.MaxInt, 0.0
	for x := range opts {
		k := job.Profiles[e.optFam[a+int32(x)]].Demand.GPUs
		if k <= fair {
			gf = max(gf, opts[x].Goodput)
		}
		if k < n || (k == n && opts[x].Goodput > smallG) {
			n, smallG = k, opts[x].Goodput
		}
	}
	if gf == 0 {
		// Every option needs more than the fair share: its smallest is
		// the job's share.
		gf = smallG
	}
	if gf > 0 {
		for x := range opts {
			opts[x].Goodput = e.fairUtility(opts[x].Goodput / gf)
		}
	}
	js.scale = job.EffectiveWeight() * float64(n)
}

// fairUtility is what speedup x over the fair share is worth per unit of
// a job's scale: 1/ε − 1/(x + ε), ε = Config.Fairness (0 while it waits).
func (e *epoch) fairUtility(x float64) float64 {
	eps := e.cfg.Fairness
	return 1/eps - 1/(x+eps)
}

// keepBonus is what keeping running job js as it runs is worth beyond its
// goodput g there, per unit of its scale: the work its restart would lose
// over the horizon (Config.Horizon, or the job's age if longer), and γ0;
// twice g besides while it is held for MinRunTime.
func (e *epoch) keepBonus(js *jobState, g float64) float64 {
	restart := js.job.RestartTime
	if restart == 0 {
		restart = e.cfg.RestartTime
	}
	horizon := e.cfg.Horizon
	if age := e.st.Now.Sub(js.job.Arrival); age > horizon {
		horizon = age
	}
	b := e.cfg.SwitchingCost + g*restart.Seconds()/horizon.Seconds()
	if e.cfg.MinRunTime > 0 {
		if t, ok := e.st.Carry.Since[js.job.ID]; ok && e.st.Now.Sub(t) < e.cfg.MinRunTime {
			b += g
		}
	}
	return b
}

// nearTolerance is how close to the rule's bound (as a fraction of its
// distance from 1) a running pair must come before Γ prices the pair into every
// configuration of the job. Below it, a pair's other configurations are
// left to the rounds' checks: pricing them all costs 2·K predictions per
// co-located job, the largest cost of an epoch at scale.
const nearTolerance = 0.8

// interferencePenalties adds α·max(0, excess) (the pair's distance
// above the sharing rule, iac.Limit.Excess) to every option of a running
// job, against each of its current co-runners whose pair is near or above
// the rule (once per pair, on the first GPU the two share). The pair as it
// runs is judged as check judges it, by the rule for keeping a pair
// (e.limKeep): judged by the rule at today's queue, a pair that shares
// as before priced its jobs out of the market, where the check would
// have let it be or split it onto free GPUs.
func (e *epoch) interferencePenalties() {
	near := -(1 - nearTolerance) * (e.limKeep.Bound() - 1)
	for g := range int32(e.ngpu) {
		on := e.curRes[e.curOff[g]:e.curOff[g+1]]
		if len(on) < 2 {
			continue
		}
		e.curPairs(g, func(a, b int32, sa, sb float64) {
			if e.keepExcess(a, b, sa, sb) <= near || e.sharedBefore(a, b, g) {
				return
			}
			e.pairPenalty(a, b)
			e.pairPenalty(b, a)
		})
	}
}

// sharedBefore reports whether running jobs a and b share a GPU numbered
// below g.
func (e *epoch) sharedBefore(a, b, g int32) bool {
	for _, r := range e.jobs[a].curGPUs {
		if h := e.global(r); h < g && slices.Contains(e.jobs[b].curGPUs, r) {
			return true
		}
	}
	return false
}

// pairPenalty adds to every option of running job j its interference with
// running job i under i's current configuration: j's present one judged
// by e.limKeep (the pair as it shares now), the others by the rule in
// force (a changed pair).
func (e *epoch) pairPenalty(j, i int32) {
	js, other := &e.jobs[j], &e.jobs[i]
	for o := js.first; o < js.first+js.n; o++ {
		k := e.optFam[o]
		l := e.lim
		if k == js.cur {
			l = e.limKeep
		}
		e.base[o] += e.cfg.Alpha * math.Max(0, e.excess(j, k, i, other.cur, l))
	}
}

// curPairs calls f for every pair of jobs the State runs on GPU g, with
// the slowdowns of each beside the other under their running
// configurations (statusQuoPairs').
func (mk *marketState) curPairs(g int32, f func(a, b int32, sa, sb float64)) {
	cur := mk.curRes[mk.curOff[g]:mk.curOff[g+1]]
	sq := mk.sq[mk.sqOff[g]:]
	n := len(cur)
	for x, a := range cur {
		for y := x + 1; y < n; y++ {
			f(a, cur[y], sq[x*n+y], sq[y*n+x])
		}
	}
}

// statusQuoPairs predicts, for every GPU, the slowdowns between the jobs
// the State runs on it, under their current configurations: Γ reads them,
// and so do the rounds' checks and the decisions wherever a GPU keeps its
// residents (most of them, most epochs), without asking the memo again.
// The n residents of GPU g (curRes) have their n×n slowdowns at
// sq[sqOff[g]:], victim-major.
func (e *epoch) statusQuoPairs() {
	e.sqOff = slab.Zeroed(e.sqOff, e.ngpu+1)
	for g := range e.ngpu {
		n := e.curOff[g+1] - e.curOff[g]
		e.sqOff[g+1] = e.sqOff[g] + n*n
	}
	e.sq = slab.Zeroed(e.sq, int(e.sqOff[e.ngpu]))
	for g := range int32(e.ngpu) {
		on := e.curRes[e.curOff[g]:e.curOff[g+1]]
		if len(on) < 2 {
			continue
		}
		sq := e.sq[e.sqOff[g]:]
		for x, a := range on {
			for y, b := range on {
				if x != y {
					sq[x*len(on)+y] = e.memo.slowdown(a, e.jobs[a].cur, b, e.jobs[b].cur)
				}
			}
		}
	}
}

// asBefore reports whether r puts on GPU g exactly the jobs the State
// runs there (on), each under its current configuration: then the
// slowdowns among them are statusQuoPairs'.
func (mk *marketState) asBefore(r *result, g int32, on []int32) bool {
	cur := mk.curRes[mk.curOff[g]:mk.curOff[g+1]]
	if len(on) != len(cur) || len(mk.sqOff) == 0 {
		return false
	}
	for _, a := range on {
		if r.choice[a] != mk.jobs[a].cur || !slices.Contains(cur, a) {
			return false
		}
	}
	return true
}

// greedy is the −ESP ablation's PriceSolver: no prices; bidders in order
// each take their most valuable option that fits what is left.
type greedy struct{}

func (greedy) Solve(ctx context.Context, m *elastico.Market, sol *elastico.Solution) error {
	if err := m.Validate(); err != nil {
		return fmt.Errorf("pds: greedy: %w", err)
	}
	sol.Choice = slab.Zeroed(sol.Choice, len(m.Bidders))
	sol.Prices = elastico.Vector{}
	sol.Iterations = 0
	free := m.Capacity
	for b := range m.Bidders {
		if b&1023 == 0 {
			if err := ctx.Err(); err != nil {
				for ; b < len(m.Bidders); b++ {
					sol.Choice[b] = -1
				}
				return fmt.Errorf("pds: greedy: %w", err)
			}
		}
		bd := &m.Bidders[b]
		best, bestV := -1, 0.0
		for o := range bd.Options {
			if v := bd.Value(o); v > bestV && bd.Options[o].Demand.LessEq(free) {
				best, bestV = o, v
			}
		}
		sol.Choice[b] = best
		if best >= 0 {
			free = free.Sub(bd.Options[best].Demand)
		}
	}
	return nil
}

// checker returns rst's feasibility checker for the State's cluster,
// reusing the last one when the cluster's capacities and GPU models have
// not changed (building one costs as much as a tenth of a small epoch).
func (e *epoch) checker() (*rst.Checker, error) {
	key := e.ckKey[:0]
	same, g := true, 0
	for i := range e.st.Cluster.Nodes {
		n := &e.st.Cluster.Nodes[i]
		key = append(key, n.CPU, n.RAM, float64(len(n.GPUs)))
		for k := range n.GPUs {
			key = append(key, n.GPUs[k].Memory)
			same = same && g < len(e.ckModels) && e.ckModels[g] == n.GPUs[k].Model
			g++
		}
	}
	if e.ck != nil && same && g == len(e.ckModels) && slices.Equal(key, e.ckPrev) {
		e.ckKey = key
		return e.ck, nil
	}
	ch, err := rst.NewChecker(&e.st.Cluster)
	if err != nil {
		e.ck = nil
		return nil, err
	}
	e.ck = ch
	e.ckKey, e.ckPrev = e.ckPrev, key
	e.ckModels = e.ckModels[:0]
	for i := range e.st.Cluster.Nodes {
		for k := range e.st.Cluster.Nodes[i].GPUs {
			e.ckModels = append(e.ckModels, e.st.Cluster.Nodes[i].GPUs[k].Model)
		}
	}
	return ch, nil
}
