package baseline

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
)

// This file holds Gavel{SpaceSharing: true}: the inputs of the packed LP
// (gavel_pack.go) and rounds over job combinations, after Gavel's
// scheduler/scheduler.py (_populate_job_combination_metadata,
// _update_priorities and _schedule_jobs_on_workers_helper over single
// jobs and pairs, time received counted per combination).

// GavelSSName is the name of Gavel{SpaceSharing: true} in reports.
const GavelSSName = "gavel-ss"

// gavelPair is a pair of jobs with time allocated, by job ID (a < b).
type gavelPair struct {
	a, b, key   string
	alloc, time []float64 // by model index: allocation, seconds received
}

// pairKey is a pair's key: the IDs of its jobs, in order.
func pairKey(a, b string) string {
	if b < a {
		a, b = b, a
	}
	return a + "\x00" + b
}

// predictor returns the Predictor the pairs' speeds come from.
func (g *Gavel) predictor() (elastico.Predictor, error) {
	if g.Predictor != nil {
		return g.Predictor, nil
	}
	if g.gs.pred == nil {
		p, err := iac.Default()
		if err != nil {
			return nil, errorf("Gavel.SpaceSharing: the default predictor: %v", err)
		}
		g.gs.pred = p
	}
	return g.gs.pred, nil
}

// packedAlloc computes the packed allocation: every job's kind (its
// profiles on every model), the speeds of two kinds sharing GPUs (the
// predictor's, for pairs that fit one GPU of the model: SM shares summing
// to at most 1, memory within the GPU's, every GPU of the model shared),
// then the LP.
func (s *gavelState) packedAlloc(v *view, in *gavelIn, pred elastico.Predictor) ([][]float64, []lpPairX, error) {
	M := len(in.models)
	mem := make([]float64, M)
	shared := make([]bool, M)
	for m := range shared {
		mem[m], shared[m] = math.Inf(1), true
	}
	for _, x := range v.gpus {
		m := slices.Index(in.models, x.model)
		mem[m] = math.Min(mem[m], x.mem)
		shared[m] = shared[m] && x.shared
	}
	kinds := map[string]int{}
	var rep []int // a job of each kind
	kind := make([]int, len(in.prof))
	var key strings.Builder
	ids := map[elastico.Profile]int{} // by content: a StablePredictor's answer depends on it alone
	for i, row := range in.prof {
		key.Reset()
		for _, p := range row {
			id := -1
			if p != nil {
				var ok bool
				if id, ok = ids[*p]; !ok {
					id = len(ids)
					ids[*p] = id
				}
			}
			fmt.Fprintf(&key, "%d,", id)
		}
		k, ok := kinds[key.String()]
		if !ok {
			k = len(rep)
			kinds[key.String()] = k
			rep = append(rep, i)
		}
		kind[i] = k
	}
	_, stable := pred.(elastico.StablePredictor)
	if !stable || s.slow == nil {
		s.slow = map[[2]elastico.Profile]float64{}
	}
	slowdown := func(p, q *elastico.Profile) float64 {
		k := [2]elastico.Profile{*p, *q}
		d, ok := s.slow[k]
		if !ok {
			d = pred.Slowdown(p, q)
			s.slow[k] = d
		}
		return d
	}
	speed := func(a, b, m int) (float64, float64, bool) {
		p, q := in.prof[rep[a]][m], in.prof[rep[b]][m]
		if p == nil || q == nil || !shared[m] || p.Demand.GPUs != q.Demand.GPUs ||
			p.Demand.SM+q.Demand.SM > 1+1e-9 || p.Demand.GPUMemory+q.Demand.GPUMemory > mem[m]+1e-9 {
			return 0, 0, false
		}
		dp, dq := slowdown(p, q), slowdown(q, p)
		if !(dp > 0) || !(dq > 0) || math.IsInf(dp, 0) || math.IsInf(dq, 0) {
			return 0, 0, false // NaN: the predictor cannot tell; never safe
		}
		// A slowdown is at least 1 (elastico.Predictor); a model's answer
		// a hair below is rounding, not a speedup.
		return 1 / max(dp, 1), 1 / max(dq, 1), true
	}
	x, px, _, err := maxMinPacked(in.coef, in.scale, in.gpus, kind, speed, true)
	return x, px, err
}

// creditPairs is credit over combinations: a job sharing exactly its GPUs
// with one other job runs as their pair, whose time it adds to.
func (s *gavelState) creditPairs(v *view) {
	st := v.st
	if s.started {
		dt := st.Now.Sub(s.last).Seconds()
		for i := range st.Jobs {
			gs := v.jobGPUs[i]
			if gs == nil {
				continue
			}
			id, m := st.Jobs[i].ID, v.gpus[gs[0]].model
			if k := v.partner(i); k >= 0 {
				if id > st.Jobs[k].ID {
					continue // the pair is credited once, from its first job
				}
				if p := s.pairs[pairKey(id, st.Jobs[k].ID)]; p != nil {
					p.time[slices.Index(s.pairModels, m)] += dt
					s.modTime[m] += dt
				}
				continue
			}
			if s.jobTime[id] == nil {
				continue
			}
			s.jobTime[id][m] += dt
			s.modTime[m] += dt
		}
	}
	s.last = st.Now
}

// partner returns the job that shares exactly job i's GPUs with it, alone
// with it on them, or -1.
func (v *view) partner(i int) int {
	gs := v.jobGPUs[i]
	if len(gs) == 0 {
		return -1
	}
	on := v.gpus[gs[0]].jobs
	if len(on) != 2 {
		return -1
	}
	k := on[0]
	if k == i {
		k = on[1]
	}
	for _, g := range gs {
		if len(v.gpus[g].jobs) != 2 {
			return -1
		}
	}
	if len(v.jobGPUs[k]) != len(gs) || !subsetIdx(v.jobGPUs[k], gs) {
		return -1
	}
	return k
}

func subsetIdx(a, b []int) bool {
	for _, g := range a {
		if !slices.Contains(b, g) {
			return false
		}
	}
	return true
}

// resetPairs is reset over combinations: the single jobs' allocations as
// reset, and the pairs' (px). A pair's deficit carries over while both its
// jobs remain, as Gavel keeps every combination's.
func (s *gavelState) resetPairs(st *elastico.State, in *gavelIn, x [][]float64, px []lpPairX, round time.Duration) {
	elapsed := st.Now.Sub(s.lastSet).Seconds()
	half := round.Seconds() / 2
	oldPairs, oldDef := s.pairs, s.pairDef
	if !slices.Equal(s.pairModels, in.models) {
		oldPairs, oldDef = nil, nil // another cluster: nothing carries
	}
	s.reset(st, in, x, round) // the singles
	M := len(in.models)
	present := make(map[string]bool, len(st.Jobs))
	for i := range st.Jobs {
		present[st.Jobs[i].ID] = true
	}
	// Every pair with a deficit or time allocated, while both its jobs
	// remain: its deficit grows by the time it should have had less the
	// time it had.
	s.pairDef = map[string][]float64{}
	for key, d := range oldDef {
		if _, ok := oldPairs[key]; !ok {
			if a, b, _ := strings.Cut(key, "\x00"); present[a] && present[b] {
				s.pairDef[key] = d
			}
		}
	}
	for key, p := range oldPairs {
		if !present[p.a] || !present[p.b] {
			continue
		}
		d := make([]float64, M)
		if old := oldDef[key]; old != nil {
			copy(d, old)
		}
		owed := false
		for m := range d {
			d[m] += p.alloc[m]*elapsed - (p.time[m] - half)
			owed = owed || d[m] != 0
		}
		if owed {
			s.pairDef[key] = d
		}
	}
	s.pairs = map[string]*gavelPair{}
	for _, p := range px {
		a, b := st.Jobs[p.i].ID, st.Jobs[p.k].ID
		key := pairKey(a, b)
		e := s.pairs[key]
		if e == nil {
			e = &gavelPair{a: min(a, b), b: max(a, b), key: key, alloc: make([]float64, M), time: make([]float64, M)}
			s.pairs[key] = e
			for m, model := range in.models {
				e.time[m] = half
				s.modTime[model] += half
			}
		}
		e.alloc[p.m] += p.x
	}
	s.pairsOn = make([][]*gavelPair, M)
	for _, key := range sortedKeys(s.pairs) {
		p := s.pairs[key]
		for m := range M {
			if p.alloc[m] > 0 {
				s.pairsOn[m] = append(s.pairsOn[m], p)
			}
		}
	}
	s.pairModels = in.models
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// ssEntry is one combination's place in one model's queue: job i alone
// (k < 0) or with job k; r1 ≤ r2 are its jobs' arrival ranks.
type ssEntry struct {
	i, k, m              int
	prio, deficit, alloc float64
	r1, r2               int
}

// priority is Gavel's: the allocation x over the fraction of the model's
// time received since the allocation was set (x·10⁹ before any), for a
// combination that has received that many seconds on the model.
func (s *gavelState) priority(received float64, model string, x float64) float64 {
	if x <= 0 {
		return 0
	}
	p := x * 1e9
	if s.modTime[model] > 0 {
		if f := received / s.modTime[model]; f > 0 {
			p = x / f
		}
	}
	return p
}

// schedulePairs runs one round over combinations: model by model, fastest
// first, combinations in decreasing priority, each whose jobs are not yet
// scheduled and whose gang fits the model's GPUs left; single jobs of
// priority 0 fill what is left (unallocated pairs are not tried).
func (s *gavelState) schedulePairs(pl *planner, in *gavelIn) {
	st := pl.v.st
	rank := make([]int, len(st.Jobs))
	for r, i := range fifo(st) {
		rank[i] = r
	}
	idx := make(map[string]int, len(st.Jobs))
	for i := range st.Jobs {
		idx[st.Jobs[i].ID] = i
	}
	left := slices.Clone(in.gpus)
	chosen := make([]bool, len(st.Jobs))
	var order []ssEntry
	for _, m := range in.speed {
		model := in.models[m]
		var q []ssEntry
		for i := range st.Jobs {
			if in.prof[i][m] == nil {
				continue
			}
			id := st.Jobs[i].ID
			x := s.alloc[id][model]
			q = append(q, ssEntry{i: i, k: -1, m: m, prio: s.priority(s.jobTime[id][model], model, x), deficit: s.deficit[id][model], alloc: x, r1: rank[i], r2: -1})
		}
		for _, p := range s.pairsOn[m] {
			x := p.alloc[m]
			i, ok1 := idx[p.a]
			k, ok2 := idx[p.b]
			if !ok1 || !ok2 {
				continue // cannot happen: the allocation is recomputed when a job leaves
			}
			var d float64
			if def := s.pairDef[p.key]; def != nil {
				d = def[m]
			}
			q = append(q, ssEntry{i: i, k: k, m: m, prio: s.priority(p.time[m], model, x), deficit: d, alloc: x, r1: min(rank[i], rank[k]), r2: max(rank[i], rank[k])})
		}
		slices.SortFunc(q, func(a, b ssEntry) int {
			if c := cmp.Compare(b.prio, a.prio); c != 0 {
				return c
			}
			if c := cmp.Compare(b.deficit, a.deficit); c != 0 {
				return c
			}
			if c := cmp.Compare(b.alloc, a.alloc); c != 0 {
				return c
			}
			if c := cmp.Compare(a.r1, b.r1); c != 0 {
				return c
			}
			return cmp.Compare(a.r2, b.r2)
		})
		for _, e := range q {
			if left[m] == 0 {
				break
			}
			if chosen[e.i] || (e.k >= 0 && chosen[e.k]) || in.scale[e.i] > left[m] {
				continue
			}
			left[m] -= in.scale[e.i]
			chosen[e.i] = true
			if e.k >= 0 {
				chosen[e.k] = true
			}
			order = append(order, e)
		}
	}
	s.place(pl, in, order, chosen)
}

// place realizes a round's combinations, in priority order: a combination
// already running as it should on its model keeps its GPUs, and a pair
// one of whose jobs runs on the model takes that job's GPUs (the other
// joins it there, restarting only itself); everything else running is
// preempted, and the rest start on free GPUs of their model, largest gang
// first (a pair on GPUs with room for both).
func (s *gavelState) place(pl *planner, in *gavelIn, order []ssEntry, chosen []bool) {
	v, st := pl.v, pl.v.st
	claimed := make([]bool, len(v.gpus))
	kept := make([]bool, len(st.Jobs))
	on := func(i, m int) []int {
		if gs := v.jobGPUs[i]; gs != nil && v.gpus[gs[0]].model == in.models[m] && !slices.ContainsFunc(gs, func(g int) bool { return claimed[g] }) {
			return gs
		}
		return nil
	}
	claim := func(gs []int, jobs ...int) {
		for _, g := range gs {
			claimed[g] = true
		}
		for _, i := range jobs {
			kept[i] = true
		}
	}
	type join struct{ anchor, other int }
	var joins []join
	var fresh []ssEntry
	for _, e := range order {
		gi := on(e.i, e.m)
		switch {
		case e.k < 0 && gi != nil:
			claim(gi, e.i)
		case e.k < 0:
			fresh = append(fresh, e)
		case gi != nil && sameIdx(gi, v.jobGPUs[e.k]):
			claim(gi, e.i, e.k)
		case gi != nil && len(gi) == int(in.scale[e.i]):
			claim(gi, e.i)
			joins = append(joins, join{e.i, e.k})
		default:
			if gk := on(e.k, e.m); gk != nil && len(gk) == int(in.scale[e.k]) {
				claim(gk, e.k)
				joins = append(joins, join{e.k, e.i})
			} else {
				fresh = append(fresh, e)
			}
		}
	}
	for i := range st.Jobs {
		if v.jobGPUs[i] != nil && !kept[i] {
			pl.wait(i, elastico.Preempted, "Gavel round: combinations of higher priority (allocation over time received) take this model's GPUs")
		}
	}
	for _, j := range joins {
		gs := v.jobGPUs[j.anchor]
		p := in.prof[j.other][slices.Index(in.models, v.gpus[gs[0]].model)]
		if !v.joinable(gs, p) {
			pl.wait(j.other, elastico.Unplaceable, fmt.Sprintf("Gavel round: picked to share %s with %s, but their GPUs lack room (memory, SM share or host resources)", v.gpus[gs[0]].model, st.Jobs[j.anchor].ID))
			continue
		}
		pl.assign(j.other, p, slices.Clone(gs))
	}
	slices.SortStableFunc(fresh, func(a, b ssEntry) int { return cmp.Compare(in.scale[b.i], in.scale[a.i]) })
	for _, e := range fresh {
		p := in.prof[e.i][e.m]
		if e.k < 0 {
			gs := v.wholeGPUs(p)
			if gs == nil {
				pl.wait(e.i, elastico.Unplaceable, fmt.Sprintf("Gavel round: picked for %s, but no %d whole GPUs of it fit (nodes' GPUs or host resources)", in.models[e.m], p.Demand.GPUs))
				continue
			}
			pl.assign(e.i, p, gs)
			continue
		}
		q := in.prof[e.k][e.m]
		both := *p
		both.Demand.SM += q.Demand.SM
		both.Demand.GPUMemory += q.Demand.GPUMemory
		both.Demand.CPU += q.Demand.CPU
		both.Demand.RAM += q.Demand.RAM
		gs := v.placeGang(&both, func(g int) bool { x := &v.gpus[g]; return v.free(g) && x.shared && x.mem >= both.Demand.GPUMemory-1e-9 }, nil)
		if gs == nil {
			for _, i := range []int{e.i, e.k} {
				pl.wait(i, elastico.Unplaceable, fmt.Sprintf("Gavel round: picked to share %d GPUs of %s with %s, but none that fit both are free", p.Demand.GPUs, in.models[e.m], st.Jobs[e.i+e.k-i].ID))
			}
			continue
		}
		pl.assign(e.i, p, gs)
		pl.assign(e.k, q, slices.Clone(gs))
	}
	for i := range st.Jobs {
		if !chosen[i] && st.Jobs[i].Running == nil {
			pl.decisions[i].Status = elastico.Status{Code: elastico.Unaffordable, Reasons: []string{"Gavel round: combinations of higher priority (allocation over time received) hold the GPUs"}}
		}
	}
}

// joinable reports whether p can join the one job on each of gs.
func (v *view) joinable(gs []int, p *elastico.Profile) bool {
	per := map[int]int{}
	for _, g := range gs {
		x := &v.gpus[g]
		if len(x.jobs) != 1 || !x.shared || !p.RunsOn(x.model) || x.used+p.Demand.GPUMemory > x.mem+1e-9 || x.sm+p.Demand.SM > 1+1e-9 {
			return false
		}
		per[x.node]++
	}
	for n, c := range per {
		if !v.hostFits(n, p, c) {
			return false
		}
	}
	return true
}

func sameIdx(a, b []int) bool {
	return len(a) == len(b) && subsetIdx(a, b)
}
