package pds

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
	"github.com/elastico/elastico/internal/slab"
	"github.com/elastico/elastico/placement"
)

// resolveRounds is how many times the loop re-places with the violating
// pairs kept apart before it defers what is left.
const resolveRounds = 2

// memo remembers the predictor's answers: the same pair is asked for by
// Γ, every round's check, the resolution and the decisions. A profile is
// known by a number, per slot (job j's family index k is slot base[j]+k):
// with a cacheable predictor, its number in the cache, whose answers
// outlive the epoch; otherwise its slot, and the answers last one epoch.
type memo struct {
	p     elastico.Predictor
	e     *epoch
	base  []uint32 // slot of job j's first profile
	pid   []uint32 // per slot: the profile's number (0: not asked yet)
	m     map[uint64]float64
	own   map[uint64]float64 // m when there is no cache
	c     *predCache         // nil: no cache
	prep  preparer           // the predictor, if it prepares profiles and there is a cache
	calls int                // questions the predictor answered this epoch
	// ptr numbers the profiles the placer asks about, by address (the
	// State's profiles stay put for the epoch): it asks about the same few
	// again and again, and interning each time cost a tenth of an epoch.
	ptr map[*elastico.Profile]uint32
}

func (m *memo) reset(p elastico.Predictor, e *epoch) {
	m.p, m.e = p, e
	m.calls = 0
	clear(m.ptr)
	if e == nil {
		return
	}
	if p != nil && cacheable(p) {
		if m.c == nil {
			m.c = &predCache{}
		}
		m.c.begin(len(e.st.Jobs))
		m.m = m.c.pairs
		m.prep, _ = p.(preparer)
	} else {
		m.prep = nil
		if m.own == nil {
			m.own = make(map[uint64]float64)
		} else {
			clear(m.own)
		}
		m.m = m.own
	}
	m.base = slab.Zeroed(m.base, len(e.st.Jobs))
	id := uint32(0)
	for j := range e.st.Jobs {
		m.base[j] = id
		id += uint32(len(e.st.Jobs[j].Profiles))
	}
	m.pid = slab.Zeroed(m.pid, int(id))
}

func (m *memo) on() bool { return m.p != nil }

// id returns the number of job j's profile k.
func (m *memo) id(j, k int32) uint32 {
	s := m.base[j] + uint32(k)
	if id := m.pid[s]; id != 0 {
		return id
	}
	id := s + 1
	if m.c != nil {
		id = m.c.id(&m.e.st.Jobs[j].Profiles[k])
	}
	m.pid[s] = id
	return id
}

// slowdown returns Ŝ of job jv under family index kv beside job ja under
// ka: the predictor's answer with what was learned from co-runs (see
// learnCoRuns).
func (m *memo) slowdown(jv, kv, ja, ka int32) float64 {
	if m.p == nil {
		return 1
	}
	return m.e.corrected(m.predicted(jv, kv, ja, ka), jv, ja)
}

// predicted is slowdown without the learned corrections: the predictor's
// own answer.
func (m *memo) predicted(jv, kv, ja, ka int32) float64 {
	jobs := m.e.st.Jobs
	return m.ask(m.id(jv, kv), m.id(ja, ka), &jobs[jv].Profiles[kv], &jobs[ja].Profiles[ka])
}

// ask returns the answer for the profiles numbered v and a, asking the
// predictor if it is not known. A NaN from the predictor counts as +Inf
// (never safe), a value below 1 as 1.
func (m *memo) ask(v, a uint32, pv, pa *elastico.Profile) float64 {
	key := uint64(v)<<32 | uint64(a)
	if s, ok := m.m[key]; ok {
		return s
	}
	m.calls++
	var s float64
	if m.prep != nil {
		var err error
		s, err = m.prep.SlowdownPrepared(m.c.prepared(v, pv, m.prep), m.c.prepared(a, pa, m.prep))
		if err != nil {
			s = math.NaN() // cannot happen (one predictor prepares both); never safe
		}
	} else {
		s = m.p.Slowdown(pv, pa)
	}
	switch {
	case math.IsNaN(s):
		s = math.Inf(1)
	case s < 1:
		s = 1
	}
	m.m[key] = s
	return s
}

// placerPredictor answers the placer. The default placer judges pairs by
// item (placement.PairJudge) under the rule in force this epoch, e.lim:
// the answer comes from the memo by slot, with no profile to look up. A
// custom placer asks by profile: the answer comes from the cache, or
// without one from the predictor (a profile is not known by slot, and a
// placer rarely asks twice).
type placerPredictor struct {
	m *memo
}

var (
	_ placement.ItemPredictor = placerPredictor{}
	_ placement.PairJudge     = placerPredictor{}
)

func (p placerPredictor) Slowdown(v, a *elastico.Profile) float64 {
	m := p.m
	var s float64
	if m.c == nil {
		s = m.p.Slowdown(v, a)
	} else {
		s = m.ask(m.idOf(v), m.idOf(a), v, a)
	}
	if c := m.e.corr; m.e.corrOn {
		s = math.Max(1, s*c.Factor(v.Family, a.Family))
	}
	return s
}

func (p placerPredictor) SlowdownItems(v, a int) float64 {
	e := p.m.e
	return p.m.slowdown(e.itemJob[v], e.itemFam[v], e.itemJob[a], e.itemFam[a])
}

func (p placerPredictor) ExcessItems(a, b int) float64 {
	e := p.m.e
	return e.excess(e.itemJob[a], e.itemFam[a], e.itemJob[b], e.itemFam[b], e.lim)
}

// idOf returns the cache's number for the profile at p.
func (m *memo) idOf(p *elastico.Profile) uint32 {
	if id, ok := m.ptr[p]; ok {
		return id
	}
	if m.ptr == nil {
		m.ptr = make(map[*elastico.Profile]uint32)
	}
	id := m.c.id(p)
	m.ptr[p] = id
	return id
}

// residents builds, for result r, the jobs on each GPU (CSR in e.resOff,
// e.resJobs).
func (e *epoch) residents(r *result) {
	e.resOff, e.resJobs = e.byGPU(e.resOff, e.resJobs, len(r.gpus), func(j int) []elastico.GPURef { return r.gpus[j] })
}

// byGPU returns, in off and res (reused), the CSR of the jobs on each GPU
// given each of n jobs' GPUs: GPU g holds jobs res[off[g]:off[g+1]], in
// job order.
func (e *epoch) byGPU(off, res []int32, n int, gpusOf func(j int) []elastico.GPURef) ([]int32, []int32) {
	off = slab.Zeroed(off, e.ngpu+1)
	for j := range n {
		for _, r := range gpusOf(j) {
			off[e.global(r)+1]++
		}
	}
	for g := range e.ngpu {
		off[g+1] += off[g]
	}
	res = slab.Zeroed(res, int(off[e.ngpu]))
	e.fill = slab.Zeroed(e.fill, e.ngpu)
	fill := e.fill
	for j := range n {
		for _, r := range gpusOf(j) {
			g := e.global(r)
			res[off[g]+fill[g]] = int32(j)
			fill[g]++
		}
	}
	return off, res
}

func (rs *roundState) on(g int32) []int32 { return rs.resJobs[rs.resOff[g]:rs.resOff[g+1]] }

// check fills e.viol with the co-located pairs of r the sharing rule says
// may not share, one per pair (on the first GPU they share), in a fixed
// order. Two jobs that share the GPU as they did when the epoch began (both
// under their running configurations) are held to the rule for keeping a pair,
// e.keep, not to the rule at today's queue: that rule tightens as the
// queue shrinks, and the job that shrank it by starting would otherwise be
// split from its neighbour at the next epoch, and started beside it again
// at the one after.
func (e *epoch) check(r *result) {
	e.viol = e.viol[:0]
	if !e.memo.on() {
		return
	}
	e.residents(r)
	for g := range int32(e.ngpu) {
		on := e.on(g)
		if len(on) < 2 {
			continue
		}
		if e.asBefore(r, g, on) {
			if e.cfg.Pinned {
				// Neither can leave (see Config.Pinned).
				continue
			}
			e.curPairs(g, func(a, b int32, sa, sb float64) {
				e.judge(a, e.jobs[a].cur, b, e.jobs[b].cur, g, sa, sb, e.limKeep)
			})
			continue
		}
		for x, a := range on {
			for _, b := range on[x+1:] {
				if e.cfg.Pinned && e.asIs(r, a, g) && e.asIs(r, b, g) {
					continue
				}
				limit := e.lim
				if e.sharedAsBefore(r, a, g) && e.sharedAsBefore(r, b, g) {
					limit = e.limKeep
				}
				ka, kb := r.choice[a], r.choice[b]
				e.judge(a, ka, b, kb, g, e.memo.slowdown(a, ka, b, kb), e.memo.slowdown(b, kb, a, ka), limit)
			}
		}
	}
	// A gang pair shares several GPUs: count it once.
	slices.SortStableFunc(e.viol, func(x, y violation) int {
		if c := cmp.Compare(x.victim, y.victim); c != 0 {
			return c
		}
		return cmp.Compare(x.aggressor, y.aggressor)
	})
	e.viol = slices.CompactFunc(e.viol, func(x, y violation) bool {
		return x.victim == y.victim && x.aggressor == y.aggressor
	})
}

// resolve makes the best plan free of co-locations the rule forbids: it
// re-places with the violating pairs kept apart (up to resolveRounds
// times, time allowing), then defers one job of every pair still left.
func (e *epoch) resolve(ctx context.Context) error {
	t := e.s.cfg.Clock()
	e.check(&e.best)
	t = e.since(t, &e.stats.Interference)
	defer func() { e.since(t, &e.stats.Interference) }()
	for r := 0; r < resolveRounds && len(e.viol) > 0 && !e.truncated; r++ {
		if ctx.Err() != nil {
			e.truncated = true
			break
		}
		nr := &e.cur
		for _, v := range e.viol {
			e.separate(&e.best, v)
		}
		e.remember(&e.best)
		e.buildItems(func(j int) int32 { return e.best.choice[j] })
		t = e.since(t, &e.stats.Interference)
		err := e.s.placer.Place(ctx, &e.req, &e.place)
		t = e.since(t, &e.stats.Placement)
		if err != nil {
			if cut(ctx, err) {
				e.truncated = true
				break
			}
			return fmt.Errorf("pds: separating pairs: placer: %w", err)
		}
		if err := e.takePlacement(nr, e.stats.Rounds); err != nil {
			return err
		}
		for j := range e.jobs {
			if e.jobItem[j] < 0 {
				nr.code[j], nr.reason[j] = e.best.code[j], e.best.reason[j]
			}
		}
		nr.prices = e.best.prices
		e.check(nr)
		e.stats.Violations += len(e.viol)
		nr.score -= e.violationCost(nr)
		if nr.score < e.best.score {
			// Keeping them apart cost more than deferring would: defer.
			e.check(&e.best)
			break
		}
		e.best, *nr = *nr, e.best
	}
	b := &e.best
	for len(e.viol) > 0 && e.deferNewcomers(b) {
		// Under Config.Pinned a running job is put back as the State has
		// it rather than deferred; that may make others wait, or meet a
		// new neighbour: check again.
		e.pin(b)
		b.score = e.score(b)
		e.check(b)
	}
	e.viol = e.viol[:0]
	return nil
}

// deferNewcomers defers the newcomer of every violating pair left in
// plan b (e.viol). Under Config.Pinned a running newcomer is not deferred but
// marked to be put back where it ran (pinForce); it reports whether one
// was.
func (e *epoch) deferNewcomers(b *result) (putBack bool) {
	for _, v := range e.viol {
		if b.gpus[v.victim] == nil || b.gpus[v.aggressor] == nil {
			continue
		}
		d := e.newcomer(b, v)
		if e.cfg.Pinned && e.jobs[d].running {
			// check left out the pairs both of which are as before, so
			// one of them is not.
			if e.asIs(b, d, v.gpu) {
				d = v.victim + v.aggressor - d
			}
			if !e.pinForce[d] {
				e.pinForce[d], putBack = true, true
			}
			continue
		}
		gpu := e.gpuOf(v.gpu).ID
		if d == v.victim {
			b.reason[d] = fmt.Sprintf("it may not share GPU %s with job %q: %s", gpu, e.jobs[v.aggressor].job.ID, v.lim.Why(v.sv, v.sa, v.cv, v.ca))
		} else {
			b.reason[d] = fmt.Sprintf("it may not share GPU %s with job %q: %s", gpu, e.jobs[v.victim].job.ID, v.lim.Why(v.sa, v.sv, v.ca, v.cv))
		}
		b.code[d] = elastico.Interference
		b.gpus[d] = nil
		b.choice[d] = -1
	}
	return putBack
}

// newcomer picks the job of a violating pair of r to defer: the one that
// did not run on that GPU before; if both or neither did, the one whose
// chosen configuration is worth less (w·G̃), then the later one in the
// State.
func (e *epoch) newcomer(r *result, v violation) int32 {
	ref := e.ref(v.gpu)
	wasA := slices.Contains(e.jobs[v.victim].curGPUs, ref)
	wasB := slices.Contains(e.jobs[v.aggressor].curGPUs, ref)
	switch {
	case wasA && !wasB:
		return v.aggressor
	case wasB && !wasA:
		return v.victim
	}
	va, vb := e.valueOf(v.victim, r.choice[v.victim]), e.valueOf(v.aggressor, r.choice[v.aggressor])
	switch {
	case va < vb:
		return v.victim
	case vb < va:
		return v.aggressor
	}
	return max(v.victim, v.aggressor)
}

// loudPair reports whether job j under family index k and job x under kx
// may not share a GPU under rule l.
func (e *epoch) loudPair(j, k, x, kx int32, l iac.Limit) bool {
	return e.excess(j, k, x, kx, l) > 0
}

// excess is rule l's verdict on job j under family index k beside job x
// under kx (iac.Limit.Excess, with each job's own limit): ≤ 0 when they
// may share a GPU.
func (e *epoch) excess(j, k, x, kx int32, l iac.Limit) float64 {
	return l.Excess(e.memo.slowdown(j, k, x, kx), e.memo.slowdown(x, kx, j, k), e.capOf(j, k), e.capOf(x, kx))
}

// capOf is job j's own limit under family index k (iac.JobLimit): its
// MaxSlowdown, and the slowdown that would take it below its floor.
func (mk *marketState) capOf(j, k int32) float64 {
	job := mk.jobs[j].job
	if job.MaxSlowdown == 0 && job.Floor == 0 {
		return math.Inf(1)
	}
	return iac.JobLimit(job, &job.Profiles[k])
}

// judge records in e.viol the pair of jobs a (under ka, slowed sa beside
// b) and b (under kb, slowed sb) on GPU g if rule l says they may not
// share it, the more slowed as the victim.
func (e *epoch) judge(a, ka, b, kb, g int32, sa, sb float64, l iac.Limit) {
	ca, cb := e.capOf(a, ka), e.capOf(b, kb)
	if l.Excess(sa, sb, ca, cb) <= 0 {
		return
	}
	if sb > sa {
		a, b, sa, sb, ca, cb = b, a, sb, sa, cb, ca
	}
	e.viol = append(e.viol, violation{victim: a, aggressor: b, gpu: g, sv: sa, sa: sb, cv: ca, ca: cb, lim: l})
}

// sharedAsBefore reports whether running job j is on GPU g in plan r under
// the configuration it runs, as it was when the epoch began.
func (e *epoch) sharedAsBefore(r *result, j, g int32) bool {
	js := &e.jobs[j]
	return js.running && r.choice[j] == js.cur && slices.Contains(js.curGPUs, e.ref(g))
}
