package pds

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/sets"
	"github.com/elastico/elastico/internal/slab"
	"github.com/elastico/elastico/rst"
)

// plan turns the best result into the Plan: decisions, actions with
// launch parameters, what to carry, statistics. The assignments and their
// GPU IDs are cut from two slabs, and the actions counted before they are
// made: at scale, the Plan's allocations were a tenth of an epoch.
func (e *epoch) plan() *elastico.Plan {
	b := &e.best
	n := len(e.jobs)
	p := &elastico.Plan{Decisions: make([]elastico.Decision, n)}
	e.residents(b)

	// Count what the slabs hold: an assignment per placed job and per
	// action's From, and their GPU IDs; a reason per waiting job; the
	// actions of each kind. Whether a running job keeps its configuration
	// and GPUs is asked once, here.
	e.same = slab.Zeroed(e.same, n)
	nAssign, nIDs, nWait, nPre, nMove, nStart := 0, 0, 0, 0, 0, 0
	for j := range e.jobs {
		js := &e.jobs[j]
		if b.gpus[j] != nil {
			nAssign++
			nIDs += len(b.gpus[j])
		} else {
			nWait++
		}
		switch {
		case !js.running:
			if b.gpus[j] != nil {
				nStart++
			}
		case e.unchanged(b, int32(j)):
			e.same[j] = true
		default:
			nAssign++
			nIDs += len(js.job.Running.GPUs)
			if b.gpus[j] == nil {
				nPre++
			} else {
				nMove++
			}
		}
	}
	// What the next epoch starts from is built beside the decisions: it
	// reads only what is settled by now (the best plan, e.same, the
	// learned penalties and corrections), and at scale it is a tenth of
	// an epoch.
	carried := make(chan elastico.Carry, 1)
	go func() { carried <- e.carry() }()
	idle := 0
	for g := range e.ngpu {
		if e.resOff[g+1] == e.resOff[g] {
			idle++
		}
	}
	reasons := make([]string, nWait)
	assigns := make([]elastico.Assignment, nAssign)
	ids := make([]string, nIDs)
	cut := func(a *elastico.Assignment) *elastico.Assignment {
		to := &assigns[0]
		assigns = assigns[1:]
		to.ConfigID = a.ConfigID
		to.GPUs = ids[:len(a.GPUs):len(a.GPUs)]
		ids = ids[len(a.GPUs):]
		copy(to.GPUs, a.GPUs)
		return to
	}
	actions := make([]elastico.Action, nPre+nMove+nStart)
	// Preemptions first, then reconfigurations and migrations, then
	// starts, each in the State's order.
	pre, move, start := actions[:0:nPre], actions[nPre:nPre:nPre+nMove], actions[nPre+nMove:nPre+nMove]

	for j := range e.jobs {
		js := &e.jobs[j]
		job := js.job
		d := &p.Decisions[j]
		d.JobID = job.ID
		d.Slowdown = 1
		if b.gpus[j] == nil {
			d.Status = e.whyWaiting(int32(j), reasons[:1:1])
			reasons = reasons[1:]
			if why := e.heldReason(j); why != "" {
				d.Status.Reasons = append(slices.Clip(d.Status.Reasons), why)
			}
			if js.running {
				pre = append(pre, elastico.Action{Kind: elastico.Preempt, JobID: job.ID, From: cut(job.Running)})
			}
			continue
		}
		prof := &job.Profiles[b.choice[j]]
		to := &assigns[0]
		assigns = assigns[1:]
		to.ConfigID = prof.Config.ID
		to.GPUs = ids[:len(b.gpus[j]):len(b.gpus[j])]
		ids = ids[len(b.gpus[j]):]
		for k, r := range b.gpus[j] {
			to.GPUs[k] = e.st.Cluster.Nodes[r.Node].GPUs[r.GPU].ID
		}
		d.Assignment = to
		d.Status = elastico.Status{Code: elastico.Scheduled}
		d.Slowdown = e.slowdown(int32(j))
		if !js.running {
			start = append(start, elastico.Action{Kind: elastico.Start, JobID: job.ID, To: to, Launch: e.launch(j, prof)})
			continue
		}
		from := job.Running
		switch {
		case e.same[j]:
			// Keeps running as it is.
			if why := e.notGrown(int32(j), idle); why != "" {
				d.Status.Reasons = []string{why}
			}
		case sets.Subset(from.GPUs, to.GPUs) || sets.Subset(to.GPUs, from.GPUs):
			// No replica leaves for a GPU it was not on: a checkpoint and a
			// restart where it is (growing or shrinking in place).
			d.Status.Reasons = []string{fmt.Sprintf("reconfigured in place from %s to %s", from.ConfigID, to.ConfigID)}
			move = append(move, elastico.Action{Kind: elastico.Reconfigure, JobID: job.ID, From: cut(from), To: to, Launch: e.launch(j, prof)})
		default:
			d.Status.Reasons = []string{fmt.Sprintf("migrated from %s@%v to %s@%v", from.ConfigID, from.GPUs, to.ConfigID, to.GPUs)}
			move = append(move, elastico.Action{Kind: elastico.Migrate, JobID: job.ID, From: cut(from), To: to, Launch: e.launch(j, prof)})
		}
	}
	if len(actions) > 0 {
		p.Actions = actions
	}
	p.Carry = <-carried
	p.Stats = e.stats
	p.Stats.Truncated = e.truncated
	return p
}

// unchanged reports whether running job j keeps its configuration and GPUs
// in plan r.
func (mk *marketState) unchanged(r *result, j int32) bool {
	js := &mk.jobs[j]
	gs := r.gpus[j]
	if gs == nil || r.choice[j] != js.cur || len(gs) != len(js.curGPUs) {
		return false
	}
	for _, r := range gs {
		if !slices.Contains(js.curGPUs, r) {
			return false
		}
	}
	return true
}

// launch returns job j's launch parameters under prof on its GPUs in the
// best plan.
func (e *epoch) launch(j int, prof *elastico.Profile) elastico.LaunchParams {
	e.lgpus = e.lgpus[:0]
	for _, r := range e.best.gpus[j] {
		hw := &e.st.Cluster.Nodes[r.Node].GPUs[r.GPU]
		e.lgpus = append(e.lgpus, rst.LaunchGPU{Index: r.GPU, Memory: hw.Memory, Shared: hw.Shared})
	}
	return rst.Launch(e.jobs[j].job, prof, e.lgpus)
}

func cloneAssignment(a *elastico.Assignment) *elastico.Assignment {
	if a == nil {
		return nil
	}
	return &elastico.Assignment{ConfigID: a.ConfigID, GPUs: slices.Clone(a.GPUs)}
}

// slowdown is job j's predicted slowdown in the best plan: over its GPUs,
// the worst of 1 + Σ (Ŝ_{j|i} − 1) over the co-runners i there.
func (e *epoch) slowdown(j int32) float64 {
	if !e.memo.on() {
		return 1
	}
	b := &e.best
	worst := 1.0
	for _, r := range b.gpus[j] {
		g := e.global(r)
		on := e.on(g)
		if len(on) < 2 {
			continue
		}
		s := 1.0
		if e.asBefore(b, g, on) {
			cur := e.curRes[e.curOff[g]:e.curOff[g+1]]
			x := slices.Index(cur, j)
			for y, v := range e.sq[int(e.sqOff[g])+x*len(cur):][:len(cur)] {
				if y != x {
					s += v - 1
				}
			}
		} else {
			for _, i := range on {
				if i != j {
					s += e.memo.slowdown(j, b.choice[j], i, b.choice[i]) - 1
				}
			}
		}
		worst = max(worst, s)
	}
	return worst
}

// whyWaiting is the Status of a job the best plan leaves out; a single
// reason goes in one, a slice of length 1 (thousands of jobs may wait: one
// allocation for all their reasons).
func (e *epoch) whyWaiting(j int32, one []string) elastico.Status {
	js := &e.jobs[j]
	b := &e.best
	var st elastico.Status
	switch {
	case js.running && strings.HasPrefix(b.reason[j], cannotStay):
		one[0] = b.reason[j]
		st = elastico.Status{Code: b.code[j], Reasons: one}
	case js.bidder < 0:
		st = elastico.Status{Code: elastico.Infeasible, Reasons: slices.Clone(js.infeasible)}
		if len(st.Reasons) == 0 {
			st.Reasons = []string{"no configuration to choose from"}
		}
	case b.code[j] == elastico.Unaffordable && b.reason[j] == "":
		// Thousands of jobs may wait for the same reason: it is worded
		// once per number of configurations.
		key := unaffordable{n: js.n, waiting: !js.running}
		why, ok := e.whyCache[key]
		if !ok {
			pr := b.prices
			if e.cfg.Ablation.GreedyFirstFit {
				why = fmt.Sprintf("none of its %d configurations fits the capacity left (greedy first fit)", js.n)
			} else {
				why = fmt.Sprintf("at this epoch's prices (SM %.3g, GPUMemory %.3g, CPU %.3g, RAM %.3g per unit of capacity) none of its %d configurations is worth its resources",
					pr[elastico.SM], pr[elastico.GPUMemory], pr[elastico.CPU], pr[elastico.RAM], js.n)
			}
			if !js.running && !e.cfg.Ablation.NoReservation {
				why += ", and its smallest does not fit the headroom left"
			}
			if e.whyCache == nil {
				e.whyCache = map[unaffordable]string{}
			}
			e.whyCache[key] = why
		}
		one[0] = why
		st = elastico.Status{Code: elastico.Unaffordable, Reasons: one}
	default:
		one[0] = b.reason[j]
		st = elastico.Status{Code: b.code[j], Reasons: one}
	}
	if js.running {
		reasons := make([]string, len(st.Reasons))
		for k, r := range st.Reasons {
			reasons[k] = st.Code.String() + ": " + r
		}
		st = elastico.Status{Code: elastico.Preempted, Reasons: reasons}
	}
	return st
}

// unaffordable keys the wording of an Unaffordable status in one plan.
type unaffordable struct {
	n       int32
	waiting bool
}

// carry returns what the next epoch starts from: the final prices, when
// jobs' present states began (see sinceMap), and the learned penalties
// decayed.
func (e *epoch) carry() elastico.Carry {
	c := elastico.Carry{Prices: e.best.prices, Since: e.sinceMap(), Calm: e.calmNow}
	if e.corr != nil {
		c.CoRuns = e.corr.Table()
	}
	// The jobs that carry a penalty are counted first, so that the map is
	// made at its size: at scale they are thousands, and growing the map
	// to them was a measurable part of the plan.
	keeps := func(o int32) bool { return !(e.learned[o]*e.cfg.PenaltyDecay < 1e-6) }
	njobs := 0
	for j := range e.jobs {
		js := &e.jobs[j]
		for o := js.first; o < js.first+js.n; o++ {
			if keeps(o) {
				njobs++
				break
			}
		}
	}
	if njobs == 0 {
		return c
	}
	c.Penalties = make(map[string]map[string]float64, njobs)
	for j := range e.jobs {
		js := &e.jobs[j]
		n := 0
		for o := js.first; o < js.first+js.n; o++ {
			if keeps(o) {
				n++
			}
		}
		if n == 0 {
			continue
		}
		// Made at its size: a job of many configurations (one per GPU
		// model each) carries a penalty on a few.
		m := make(map[string]float64, n)
		c.Penalties[js.job.ID] = m
		for o := js.first; o < js.first+js.n; o++ {
			if keeps(o) {
				m[js.job.Profiles[e.optFam[o]].Config.ID] = e.learned[o] * e.cfg.PenaltyDecay
			}
		}
	}
	return c
}

// sinceMap returns Carry.Since for the next epoch: Now for every job this
// plan starts, moves, reshapes or preempts; the State's entry for every
// other job that still needs one (a running job held for MinRunTime, a
// waiting job preempted earlier). A running job that has run MinRunTime
// needs none, so the map holds the recent changes, not every job.
func (e *epoch) sinceMap() map[string]time.Time {
	var m map[string]time.Time
	put := func(id string, t time.Time) {
		if m == nil {
			m = make(map[string]time.Time)
		}
		m[id] = t
	}
	now := e.st.Now
	for j := range e.jobs {
		js := &e.jobs[j]
		runs := e.best.gpus[j] != nil
		switch {
		case js.running && !e.same[j], !js.running && runs:
			put(js.job.ID, now)
		default:
			t, ok := e.st.Carry.Since[js.job.ID]
			if ok && (!runs || e.keepSince(t)) {
				put(js.job.ID, t)
			}
		}
	}
	return m
}

// notGrown says why running job j, kept as it runs, was not grown while
// idle GPUs GPUs are idle in the plan: "" when none is, or when it runs
// within 5 % of the goodput of its best configuration the market had.
func (mk *marketState) notGrown(j int32, idle int) string {
	js := &mk.jobs[j]
	if idle == 0 || js.n == 0 || js.cur < 0 {
		return ""
	}
	g := mk.famG[mk.famOff[j]:mk.famOff[j+1]]
	best := js.cur
	for o := js.first; o < js.first+js.n; o++ {
		if k := mk.optFam[o]; g[k] > g[best] {
			best = k
		}
	}
	if g[best] <= 1.05*g[js.cur] {
		return ""
	}
	cur, to := &js.job.Profiles[js.cur], &js.job.Profiles[best]
	key := notGrownKey{share: int(math.Round(100 * g[js.cur] / g[best])), to: to.Config.ID, idle: idle}
	if extra := to.Demand.GPUs - cur.Demand.GPUs; extra > idle {
		key.extra = extra
	}
	if why, ok := mk.grownCache[key]; ok {
		return why
	}
	if mk.grownCache == nil {
		mk.grownCache = map[notGrownKey]string{}
	}
	var why string
	if key.extra > 0 {
		why = fmt.Sprintf("runs at %d %% of the goodput of its best configuration %s, which needs %d more GPUs; %d are idle", key.share, to.Config.ID, key.extra, idle)
	} else {
		why = fmt.Sprintf("runs at %d %% of the goodput of its best configuration %s with %d GPUs idle: growing it gains less than its restart costs over the horizon (Config.Horizon, or its age if longer) and γ0 at this epoch's prices, or finds no room on its nodes", key.share, to.Config.ID, idle)
	}
	mk.grownCache[key] = why
	return why
}

// notGrownKey is what notGrown's sentence says: jobs that run at the same
// share of the same best configuration share one string (a sentence for
// every such job was most of a large epoch's allocations).
type notGrownKey struct {
	share, idle int
	to          string
	extra       int // the GPUs it needs beyond the idle ones; 0: they suffice
}
