package pds

import (
	"slices"

	"github.com/elastico/elastico"
)

// maxRepackCandidates bounds the waiting jobs repack tries on the GPUs a
// gang would give up: the first ones in admission order.
const maxRepackCandidates = 64

// repack gives the GPUs of a gang the best plan starts to the waiting jobs
// it leaves out, when that is worth more: for each job that starts on
// several GPUs, it tries each of the job's configurations on fewer of
// them, fills the GPUs given up with waiting jobs (in admission order,
// each under its most valuable one-GPU configuration that fits beside
// quiet neighbours), and keeps the change that gains the most. The market
// prices the cluster's capacity as a whole: it may start a gang and three
// small jobs whose sum fits, then the placer, largest first, gives the
// gang a node's GPUs and leaves no single GPU for the others (a 2-GPU
// gang took a new node whole, and three inference jobs that would have
// shared its second GPU waited). Running jobs are left to restore, whose
// moves cost restarts.
func (e *epoch) repack() {
	b := &e.best
	var gangs []int32
	for j := range e.jobs {
		if !e.jobs[j].running && len(b.gpus[j]) > 1 {
			gangs = append(gangs, int32(j))
		}
	}
	if len(gangs) == 0 {
		return
	}
	e.cands = e.cands[:0]
	for _, j := range e.waiting {
		if len(e.cands) == maxRepackCandidates {
			break
		}
		if b.gpus[j] == nil && e.heldFor(int(j)) == nil && e.jobs[j].n > 0 {
			e.cands = append(e.cands, j)
		}
	}
	if len(e.cands) == 0 {
		return
	}
	acc := e.accountOf(b)
	e.residents(b)
	changed := false
	for _, j := range gangs {
		js := &e.jobs[j]
		gs, was := b.gpus[j], b.choice[j]
		bestK, bestGain := int32(-1), 0.0
		var bestFill []repackFill
		acc.sub(gs, &js.job.Profiles[was])
		for o := js.first; o < js.first+js.n; o++ {
			k := e.optFam[o]
			p := &js.job.Profiles[k]
			if p.Demand.GPUs >= len(gs) || e.valueOf(j, k) <= 0 {
				continue
			}
			keep := gs[:p.Demand.GPUs]
			if acc.add(keep, p) != "" {
				continue
			}
			gain := e.valueOf(j, k) - e.valueOf(j, was)
			if !e.loudAt(b, j, k, keep, nil, -1) {
				fill := e.fillFreed(b, acc, gs[p.Demand.GPUs:], j)
				for _, f := range fill {
					gain += e.valueOf(f.job, f.k)
				}
				if gain > bestGain {
					bestK, bestGain = k, gain
					bestFill = append(bestFill[:0], fill...)
				}
				for _, f := range fill {
					acc.sub([]elastico.GPURef{f.gpu}, &e.jobs[f.job].job.Profiles[f.k])
				}
			}
			acc.sub(keep, p)
		}
		if bestK < 0 {
			acc.add(gs, &js.job.Profiles[was])
			continue
		}
		n := js.job.Profiles[bestK].Demand.GPUs
		acc.add(gs[:n], &js.job.Profiles[bestK])
		b.choice[j], b.gpus[j] = bestK, gs[:n:n]
		for _, f := range bestFill {
			acc.add([]elastico.GPURef{f.gpu}, &e.jobs[f.job].job.Profiles[f.k])
			b.choice[f.job], b.gpus[f.job], b.code[f.job], b.reason[f.job] = f.k, []elastico.GPURef{f.gpu}, elastico.Scheduled, ""
			e.cands = slices.DeleteFunc(e.cands, func(c int32) bool { return c == f.job })
		}
		changed = true
		e.residents(b)
	}
	if changed {
		b.score = e.score(b)
	}
}

// repackFill is a waiting job put on a GPU a gang gave up.
type repackFill struct {
	job, k int32
	gpu    elastico.GPURef
}

// fillFreed puts repack's candidates on the GPUs gang gave up, each under
// its most valuable one-GPU configuration that fits (acc) beside quiet
// neighbours, and returns them (added to acc).
func (e *epoch) fillFreed(b *result, acc *account, freed []elastico.GPURef, gang int32) []repackFill {
	fill := e.repackBuf[:0]
	for _, c := range e.cands {
		cs := &e.jobs[c]
		bestK, bestV := int32(-1), 0.0
		var at elastico.GPURef
		for o := cs.first; o < cs.first+cs.n; o++ {
			k := e.optFam[o]
			p := &cs.job.Profiles[k]
			if p.Demand.GPUs != 1 || e.valueOf(c, k) <= bestV {
				continue
			}
			for _, r := range freed {
				g := []elastico.GPURef{r}
				if acc.add(g, p) != "" {
					continue
				}
				acc.sub(g, p)
				if e.loudAt(b, c, k, g, fill, gang) {
					continue
				}
				bestK, bestV, at = k, e.valueOf(c, k), r
				break
			}
		}
		if bestK >= 0 {
			acc.add([]elastico.GPURef{at}, &cs.job.Profiles[bestK])
			fill = append(fill, repackFill{job: c, k: bestK, gpu: at})
		}
	}
	e.repackBuf = fill
	return fill
}

// loudAt reports whether job j under family index k on GPUs gs would be
// beside a job plan b keeps there (other than j and gone, a gang that gives
// gs up), or one of fill, that the sharing rule says it may not share
// with. (Counting the gang that leaves as a neighbour kept the GPUs it gave
// up empty wherever a waiting job and it were a loud pair: on Pollux's
// trace at 512 GPUs and load 1.5, elastico's JCT was 1.003× that of its
// ablation without a predictor, which has no such check.)
func (e *epoch) loudAt(b *result, j, k int32, gs []elastico.GPURef, fill []repackFill, gone int32) bool {
	if !e.memo.on() {
		return false
	}
	for _, r := range gs {
		for _, x := range e.on(e.global(r)) {
			if x != j && x != gone && slices.Contains(b.gpus[x], r) && e.loudPair(j, k, x, b.choice[x], e.lim) {
				return true
			}
		}
		for _, f := range fill {
			if f.gpu == r && f.job != j && e.loudPair(j, k, f.job, f.k, e.lim) {
				return true
			}
		}
	}
	return false
}
