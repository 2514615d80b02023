package pds

import (
	"math"

	"github.com/elastico/elastico/internal/slab"
)

// learnCoRuns starts this epoch's corrections from the carried ones
// (Carry.CoRuns) and adds what the State says of the jobs that share a
// GPU: a running job with an Observation, beside exactly one other job on
// all its GPUs, ran its profile's throughput over the observed rate times
// slower, where the predictor (uncorrected) said memo.base. The memo then
// multiplies every answer by the correction of the two jobs' model
// families (corrFactor), so the market, the rounds' checks and the placer
// all see the corrected slowdowns. It needs the current residents
// (curRes) and each job's running configuration (cur).
func (e *epoch) learnCoRuns() {
	e.corrOn = false
	if !e.memo.on() || e.cfg.Ablation.NoCoRunLearning {
		e.corr = nil
		return
	}
	e.corr = e.cfg.Learner.Start(e.st.Carry.CoRuns)
	for j := range int32(len(e.jobs)) {
		js := &e.jobs[j]
		o := js.job.Observed
		if js.cur < 0 || !(o.Rate > 0) || o.Over <= 0 {
			continue
		}
		other := int32(-1)
		alone := true
		for _, r := range js.curGPUs {
			g := e.global(r)
			for _, x := range e.curRes[e.curOff[g]:e.curOff[g+1]] {
				switch {
				case x == j:
				case other < 0 || other == x:
					other = x
				default:
					alone = false // two neighbours: whose slowdown is it?
				}
			}
		}
		if other < 0 || !alone || e.jobs[other].cur < 0 {
			continue
		}
		p := &js.job.Profiles[js.cur]
		q := &e.jobs[other].job.Profiles[e.jobs[other].cur]
		predicted := e.memo.predicted(j, js.cur, other, e.jobs[other].cur)
		e.corr.Observe(p.Family, q.Family, p.Throughput/o.Rate, predicted, 1)
	}
	if e.corr.Len() == 0 {
		return
	}
	// A dense table over the families that have a correction, and each
	// job's row in it: the memo's hot path looks a factor up by index.
	clear(e.corrIdx)
	if e.corrIdx == nil {
		e.corrIdx = make(map[string]int32)
	}
	e.corr.Each(func(v, a string, _ float64) {
		for _, f := range [2]string{v, a} {
			if _, ok := e.corrIdx[f]; !ok {
				e.corrIdx[f] = int32(len(e.corrIdx))
			}
		}
	})
	e.corrNames = slab.Resize(e.corrNames, len(e.corrIdx))
	names := e.corrNames
	for f, i := range e.corrIdx {
		names[i] = f
	}
	nf := len(names)
	e.corrFac = slab.Zeroed(e.corrFac, nf*nf)
	for v := range nf {
		for a := range nf {
			e.corrFac[v*nf+a] = e.corr.Factor(names[v], names[a])
		}
	}
	e.corrN = int32(nf)
	e.corrRow = slab.Zeroed(e.corrRow, len(e.jobs))
	for j := range e.jobs {
		e.corrRow[j] = -1
		if f := e.jobs[j].job.Profiles; len(f) > 0 {
			if i, ok := e.corrIdx[f[0].Family]; ok {
				e.corrRow[j] = i
			}
		}
	}
	e.corrOn = true
}

// corrFactor is the learned correction of job v's slowdown beside job a
// (by their model families, the first profile's), 1 where none was
// learned.
func (mk *marketState) corrFactor(v, a int32) float64 {
	rv, ra := mk.corrRow[v], mk.corrRow[a]
	if rv < 0 || ra < 0 {
		return 1
	}
	return mk.corrFac[rv*mk.corrN+ra]
}

// corrected applies the learned correction to s, a slowdown of job v
// beside job a.
func (mk *marketState) corrected(s float64, v, a int32) float64 {
	if !mk.corrOn {
		return s
	}
	return math.Max(1, s*mk.corrFactor(v, a))
}
