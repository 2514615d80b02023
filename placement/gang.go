package placement

import (
	"math"
	"slices"

	"github.com/elastico/elastico"
)

// placeSpread places a gang replica by replica anywhere, current GPUs
// first; all or nothing.
func (w *work) placeSpread(it int32, d *elastico.Demand) (ok, avoided bool) {
	item := &w.req.Items[it]
	out := w.at[w.start[it]:w.start[it+1]]
	k := 0
	for _, ref := range item.Current {
		if k == len(out) {
			break
		}
		g := w.global(ref)
		if w.fitsGPU(it, g, d) && w.fitsNode(w.gpus[g].node, 1, d) && !w.conflicts(it, g) {
			w.commit(it, g, d)
			out[k] = g
			k++
		}
	}
	for k < len(out) {
		g, av := w.findOne(it, d)
		avoided = avoided || av
		if g < 0 {
			for k--; k >= 0; k-- {
				w.uncommit(it, out[k], d)
			}
			return false, avoided
		}
		w.commit(it, g, d)
		out[k] = g
		k++
	}
	return true, avoided
}

// placeGang places a gang on one node: the nodes it runs on first, then
// the node of each fitting GPU in best-fit order. After maxLoud nodes
// whose room was all beside loud neighbours it tries only nodes reached
// through their empty GPUs, as findOnePass does for one replica.
func (w *work) placeGang(it int32, d *elastico.Demand) (ok, avoided bool) {
	item := &w.req.Items[it]
	if d.GPUs > w.maxNodeGPUs {
		return false, false
	}
	w.stamp++
	for _, ref := range item.Current {
		nd := &w.nodes[ref.Node]
		if nd.tried == w.stamp {
			continue
		}
		nd.tried = w.stamp
		if ok, _ := w.tryNode(it, int32(ref.Node), d, false, &avoided); ok {
			return true, avoided
		}
	}
	sm, mem := d.SM-w.smTol, d.GPUMemory-w.maxMemTol // as w.cursor
	c := w.indexFor(it).cursor(sm, mem, true)
	rejected, empty, after, need := 0, false, 0, d.GPUs
	for {
		g, _ := c.next()
		if g < 0 && c.capped && c.skipped {
			// Try the buckets the cap cut short, in full.
			c = w.indexFor(it).cursor(sm, mem, false)
			g, _ = c.next()
		}
		if g < 0 {
			return false, avoided
		}
		n := w.gpus[g].node
		nd := &w.nodes[n]
		if nd.tried == w.stamp || !w.fitsGPU(it, g, d) {
			continue
		}
		nd.tried = w.stamp
		if empty {
			// Only a node with room on empty GPUs alone can take the
			// gang now; the walk is bounded as findOnePass's is.
			if after += int(nd.count); after > maxAfterRejected {
				return false, avoided
			}
			if w.emptyFits(it, n, d) < need {
				continue
			}
		}
		ok, loud := w.tryNode(it, n, d, empty, &avoided)
		if ok {
			return true, avoided
		}
		if loud {
			if rejected++; rejected == w.maxLoud(it) && !empty {
				// Enough loud nodes: walk the empty GPUs' column.
				empty = true
				sm = w.cfg.Oversubscription - w.smTol
				c = w.indexFor(it).cursor(sm, mem, true)
			}
		}
	}
}

// emptyFits counts node n's empty GPUs that one replica of item it fits.
func (w *work) emptyFits(it int32, n int32, d *elastico.Demand) int {
	nd := &w.nodes[n]
	k := 0
	for g := nd.first; g < nd.first+nd.count; g++ {
		if w.gpus[g].n == 0 && w.fitsGPU(it, g, d) && !w.conflicts(it, g) {
			k++
		}
	}
	return k
}

// tryNode places gang item it on node n if it fits there (on its empty
// GPUs only if emptyOnly): on the GPUs that rank first by candLess (quiet
// before loud, current before not, then best fit, then the quieter
// neighbours). loud reports that it did not fit because GPUs with room
// had loud neighbours. Slowdowns are predicted lazily, a bucket of equally
// good GPUs at a time, until the gang has enough quiet GPUs: a node with
// room to spare costs the predictions of the GPUs it takes, not of all
// eight.
func (w *work) tryNode(it int32, n int32, d *elastico.Demand, emptyOnly bool, avoided *bool) (ok, loud bool) {
	nd := &w.nodes[n]
	need := d.GPUs
	if int(nd.open) < need || !w.fitsNode(n, need, d) {
		return false, false
	}
	item := &w.req.Items[it]
	cands := w.cands[:0]
	for g := nd.first; g < nd.first+nd.count; g++ {
		if !w.fitsGPU(it, g, d) || (emptyOnly && w.gpus[g].n > 0) {
			continue
		}
		if w.conflicts(it, g) {
			*avoided = true
			continue
		}
		cur := false
		for _, ref := range item.Current {
			if w.global(ref) == g {
				cur = true
				break
			}
		}
		cands = append(cands, cand{g: g, current: cur, cell: w.gpus[g].cell, score: w.score(g, d), loudness: math.Inf(-1), seq: g})
	}
	w.cands = cands
	if len(cands) < need {
		return false, false
	}
	limit := w.judging()
	lastResort := w.lastResort(it)
	// Every loudness -Inf for now: this orders by current, cell, score.
	slices.SortFunc(cands, candCmp)
	if w.req.Predictor != nil && (len(cands) > need || (limit && !lastResort)) {
		// A quiet GPU's loudness is exact whatever the stop; a loud
		// one's is only known to exceed 0.
		stop := math.Inf(1)
		if limit {
			stop = 0
		}
		quiet, i := 0, 0
		for i < len(cands) && quiet < need {
			if limit && !lastResort && quiet+len(cands)-i < need {
				// Too few GPUs left to predict for, were they all quiet.
				break
			}
			j := i + 1
			for j < len(cands) && cands[j].current == cands[i].current && cands[j].cell == cands[i].cell {
				j++
			}
			for k := i; k < j; k++ {
				if w.gpus[cands[k].g].n > 0 {
					cands[k].loudness = w.loudnessAbove(it, cands[k].g, stop)
					cands[k].loud = limit && cands[k].loudness > 0
				}
				if !cands[k].loud {
					quiet++
				} else if !lastResort && quiet+len(cands)-k-1 < need {
					break // as above, within the bucket
				}
			}
			slices.SortFunc(cands[i:j], candCmp)
			i = j
		}
		if quiet < need {
			if !limit || !lastResort {
				w.loud = true
				return false, true
			}
			// The loud GPUs as a last resort, the quietest first: their
			// loudness in full.
			for k := range cands {
				if cands[k].loud {
					cands[k].loudness = w.loudness(it, cands[k].g)
				}
			}
		}
		// Quiet before loud; the GPUs not predicted rank after every
		// quiet one predicted, as they are in cands already.
		slices.SortStableFunc(cands[:i], func(a, b cand) int {
			switch {
			case a.loud == b.loud:
				return 0
			case b.loud:
				return -1
			}
			return 1
		})
		if quiet < need {
			slices.SortFunc(cands, candCmp)
		}
	}
	out := w.at[w.start[it]:w.start[it+1]]
	for k := range need {
		w.commit(it, cands[k].g, d)
		out[k] = cands[k].g
	}
	return true, false
}
