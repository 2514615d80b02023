package pds

import (
	"context"
	"math"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
	"github.com/elastico/elastico/internal/slab"
	"github.com/elastico/elastico/rst"
)

// epoch is one Epoch call's working set; the Scheduler keeps it for the
// next call, so that its slices are reused. Its state is grouped by how
// long it holds: the cluster's layout (kept while the GPUs stay the same),
// the market an epoch builds from the State, the rounds' working set, and
// the final passes' scratch. Every part is reset by the stage that owns
// it; none is read before that stage has run. A method that reads one part
// only is that part's (layout.global, marketState.unchanged,
// roundState.separate, finalState.union, …); the stages, which read
// several, are the epoch's.
type epoch struct {
	s   *Scheduler
	cfg *Config
	st  *elastico.State
	// overs is the SM share a GPU may hold and maxJobs the jobs (0: no
	// limit): the placer's, when it is a placement.Placer.
	overs   float64
	maxJobs int

	layout
	marketState
	roundState
	finalState

	memo      memo
	stats     elastico.Stats
	truncated bool
}

// layout is the cluster as global GPU numbers, its GPU models and its
// feasibility checker (init, index, indexModels, checker): rebuilt only
// when the cluster changes.
type layout struct {
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
	ckModels      []string // every GPU's model when ck was built

	// The cluster's GPU models and each one's GPUs, when it has several
	// (see models.go).
	models   []string
	modelCap []float64
}

// marketState is what buildMarket makes of the State, once an epoch: each
// job's options and what they are worth, the jobs where they run, the
// queue and the sharing rule in force, what co-runs taught. The rounds
// read it; only learned (penalties Δ per violation) changes after.
type marketState struct {
	jobs      []jobState
	calmNow   elastico.Calm // the jobs as this epoch sees them, and since when (see calm)
	calmOn    bool          // the last epoch saw the same jobs
	calmAgain bool          // and had the same Now
	// Current residents of each GPU (jobs, from the State's assignments),
	// as a CSR over global GPU numbers.
	curOff, curRes []int32
	curSlab        []elastico.GPURef // the jobs' curGPUs
	sq             []float64         // see statusQuoPairs
	sqOff          []int32
	fill           []int32         // scratch for building a CSR
	lgpus          []rst.LaunchGPU // scratch for launch
	whyCache       map[unaffordable]string
	grownCache     map[notGrownKey]string // notGrown's sentences, shared by the jobs they fit
	famVal         []float64              // per slot (see memo): w·G̃ of the option, 0 if none

	options  []elastico.Option // every bidder's options, flat
	optFam   []int32           // family index of each option
	real     []elastico.Vector // each option's true total demand
	base     []float64         // Γ without learned penalties
	learned  []float64         // learned penalties (Carry, then Δ per violation)
	optModel []int16           // each option's GPU model in models, -1: any
	bidJob   []int32
	waiting  []int32 // jobs that do not run, in admission order
	waitKeys []waitKey
	famOff   []int32   // job j's profiles have the slots famOff[j] to famOff[j+1]-1
	famG     []float64 // G̃ of each profile
	q        float64   // queue pressure
	lim      iac.Limit // the sharing rule in force at q
	limKeep  iac.Limit // the rule for a pair that shares a GPU as before (Sharing.Keep)
	// What co-runs taught (learnCoRuns): the corrections, and a dense
	// table of their factors by family row (corrRow per job).
	corr      *iac.Corrections
	corrOn    bool
	corrIdx   map[string]int32
	corrNames []string // corrIdx's families by number
	corrFac   []float64
	corrN     int32
	corrRow   []int32
	effCap    elastico.Vector

	// Reservations (see reserve): resvJob[j] is 1 + the index in resv of
	// job j's, or 0; resvGPU marks the held GPUs; placeCl is the cluster
	// the placer sees (nil: the State's).
	resv     []reservation
	resvJob  []int32
	resvGPU  []bool
	resvSlab []elastico.GPURef
	cand     []heldCand // scratch of heldGPUs
	candBest []heldCand
	placeCl  *elastico.Cluster
}

// roundState is the rounds' working set (round.go, models.go, admit.go,
// interference.go, pin.go): each round's prices and choices, its placement
// and the violations found, and the best plan so far.
type roundState struct {
	market elastico.Market
	choice []int32 // per bidder: option (within the bidder), -1
	sol    elastico.Solution

	modelUse   []float64 // scratch of fitModels and admit
	modelMoves []modelMove

	items   []elastico.PlacementItem
	jobItem []int32
	avoid   []avoidPair // pairs kept apart in later placements
	req     elastico.PlacementRequest
	place   elastico.Placement
	itemFam []int32 // family index of each placement item
	itemJob []int32 // job of each placement item

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
	violated []bool // per job: in a violating pair in the last round
	gone     []bool // per job: deferred in violationCost's count
	acc      account
	resOff   []int32
	resJobs  []int32
	viol     []violation
}

// finalState is the scratch of the passes after the rounds (repack.go,
// hold.go, plan.go): what they put back or undo, and the plan's per-job
// summary.
type finalState struct {
	displaced, evict, restored []int32 // restore's scratch
	// restOn lists the jobs restore put back, by GPU: restHead[g] is the
	// first entry (1-based, 0: none) of GPU g's list in restJob/restNext.
	restHead, restJob, restNext []int32
	cands                       []int32           // repack's waiting jobs
	emptyGPU                    []int32           // backfill's empty GPUs
	bfJobs                      []int32           // backfill's jobs to try
	room                        []elastico.GPURef // emptyFor's scratch
	bfOpts                      []bfOpt           // backfill's scratch
	consCands                   []consCand        // consolidate's gangs
	consOwner                   []int32           // per GPU: 1 + its only job, 0: none or several
	consMoves                   []consMove        // consolidate's scratch
	consNodes                   []consNode
	consJobCost                 []float64 // per job: jobMoveCost, or costUnknown
	consUndo                    []consUndo
	maxNode                     int // the most GPUs a node has
	repackBuf                   []repackFill
	uf                          []int32 // revertGroups' union-find over GPUs
	tight                       []int32 // revertGroups' nodes on which a group did not fit back
	gain                        []float64
	blocked, calmed, held       []bool
	same                        []bool // per job: runs in the best plan as the State has it (see plan)
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
	// want is, per job, 1 + the family index of the configuration the
	// market chose for it that the placer found no room for (0: none): what
	// consolidate tries to make room for.
	want   []int32
	prices elastico.Vector
	slab   []elastico.GPURef
	score  float64
}

type violation struct {
	victim, aggressor int32 // jobs; victim is the more slowed
	gpu               int32
	sv, sa            float64   // the victim's and the aggressor's predicted slowdowns
	cv, ca            float64   // their own limits (iac.JobLimit)
	lim               iac.Limit // the rule the pair breaks
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
	e.pinForce = slab.Zeroed(e.pinForce, len(st.Jobs))
	e.stats = elastico.Stats{}
	clear(e.whyCache)
	clear(e.grownCache)
	e.overs, e.maxJobs = 1, 0
	if p, ok := s.placer.(elastico.GPULimits); ok {
		e.overs, e.maxJobs = p.GPULimits()
	}
	cl := &st.Cluster
	e.index(cl)
	e.indexModels(cl)
	e.capacity = cl.Capacity()
	for r, c := range e.capacity {
		e.invCap[r] = 1 / c // +Inf for none: any demand there is infinite
	}
	e.ngpu = cl.NumGPUs()
	e.nodeFirst = slab.Zeroed(e.nodeFirst, len(cl.Nodes))
	e.gpuNode = slab.Zeroed(e.gpuNode, e.ngpu)
	g := int32(0)
	for i := range cl.Nodes {
		e.nodeFirst[i] = g
		for range cl.Nodes[i].GPUs {
			e.gpuNode[g] = int32(i)
			g++
		}
	}
	e.avoid = e.avoid[:0]
	e.apartFirst = slab.Zeroed(e.apartFirst, len(st.Jobs))
	e.apartLast = slab.Zeroed(e.apartLast, len(st.Jobs))
	e.viol = e.viol[:0]
	e.memo.reset(s.pred, e)
	e.calm()
}

// index makes gpuRef the cluster's, reusing the last one when its GPUs
// have the same IDs in the same order (a map of every GPU is a measurable
// part of an epoch).
func (ly *layout) index(cl *elastico.Cluster) {
	same := ly.gpuRef != nil && len(ly.gpuIDs) == cl.NumGPUs()
	g := 0
	for i := 0; same && i < len(cl.Nodes); i++ {
		for k := range cl.Nodes[i].GPUs {
			if cl.Nodes[i].GPUs[k].ID != ly.gpuIDs[g] {
				same = false
				break
			}
			g++
		}
	}
	if same {
		return
	}
	ly.gpuRef = cl.Index()
	ly.gpuIDs = ly.gpuIDs[:0]
	for i := range cl.Nodes {
		for k := range cl.Nodes[i].GPUs {
			ly.gpuIDs = append(ly.gpuIDs, cl.Nodes[i].GPUs[k].ID)
		}
	}
}

func (ly *layout) global(r elastico.GPURef) int32 { return ly.nodeFirst[r.Node] + int32(r.GPU) }

func (e *epoch) gpuOf(g int32) *elastico.GPU {
	n := e.gpuNode[g]
	return &e.st.Cluster.Nodes[n].GPUs[g-e.nodeFirst[n]]
}

func (ly *layout) ref(g int32) elastico.GPURef {
	n := ly.gpuNode[g]
	return elastico.GPURef{Node: int(n), GPU: int(g - ly.nodeFirst[n])}
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
	e.backfill(true) // the GPUs the market freed for jobs the placer found no room for
	e.restore()
	e.revertGroups()
	e.hold()
	e.consolidate()
	e.backfill(false) // the GPUs the passes left empty
	e.retune()
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
	b.choice = slab.Zeroed(b.choice, n)
	b.gpus = slab.Zeroed(b.gpus, n)
	b.code = slab.Zeroed(b.code, n)
	b.reason = slab.Zeroed(b.reason, n)
	b.want = slab.Zeroed(b.want, n)
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
