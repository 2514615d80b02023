package placement

import (
	"math"

	"github.com/elastico/elastico"
)

type cand struct {
	g        int32
	current  bool
	cell     int32
	loudness float64 // iac.Limit.Excess against the residents; -Inf on an empty GPU
	score    float64
	// nodeEmpty is how many GPUs of its node hold nothing: of two equally
	// good GPUs, the one on the fuller node, so that whole nodes stay free
	// for gangs (on 4-GPU nodes, one-GPU jobs scattered over the nodes in
	// cluster order left gangs of 4 no node, and one spread over nodes
	// runs slower).
	nodeEmpty int32
	seq       int32 // the last tie-break: scan order
	loud      bool  // a neighbour it may not share with (loudness > 0)
}

// maxEmptyTies bounds how many empty GPUs a search compares by their
// nodes' emptiness.
const maxEmptyTies = 64

// findOne returns the best GPU for one replica of item it, or -1; avoided
// says a GPU with room was passed over because of the Avoid list.
func (w *work) findOne(it int32, d *elastico.Demand) (best int32, avoided bool) {
	// A capped pass first; an exhaustive one only if the cap may have
	// hidden the only GPUs with room (or with quiet neighbours).
	if w.cfg.ShareLast {
		if b, _, av, _ := w.findOnePass(it, d, true, true); b >= 0 {
			return b, av
		}
	}
	best, fallback, avoided, skipped := w.findOnePass(it, d, true, false)
	if best < 0 && skipped {
		var fb int32
		best, fb, avoided, _ = w.findOnePass(it, d, false, false)
		if fb >= 0 {
			fallback = fb
		}
	}
	if best < 0 {
		best = fallback
	}
	return best, avoided
}

// lastResort reports whether item it may go beside a loud neighbour when
// nothing else has room.
func (w *work) lastResort(it int32) bool {
	return (w.cfg.LoudLastResort || w.req.LoudLastResort) && !w.req.Items[it].Quiet
}

// maxAfterRejected bounds how many GPUs a search scans once it looks only
// at empty ones.
const maxAfterRejected = 1024

// maxLoud is how many loud GPUs (or nodes, for a gang) item it's search
// passes over before it looks only at empty ones: Config.LoudProbes, an
// eighth of it for a Quiet item, one that already found only loud ones
// (see PlacementItem.Quiet). (At 5,000 jobs on 4,096 GPUs, a thousand
// such items probing eight GPUs each, under a configuration that changes
// as the market prices the refusals, made most of an epoch's
// predictions. At 20,000 jobs, a second probe for each Quiet item still
// cost a tenth of an epoch, to place about 5 more of the 8,000 beside a
// neighbour; the replays' gains did not move without it.)
func (w *work) maxLoud(it int32) int {
	if w.req.Items[it].Quiet {
		return max(1, w.cfg.LoudProbes/8)
	}
	return w.cfg.LoudProbes
}

// findOnePass returns the best GPU for one replica (or -1), and the
// quietest GPU it passed over for a neighbour it may not share with (or
// -1), to fall back on. With empty, it looks only at GPUs no job holds.
func (w *work) findOnePass(it int32, d *elastico.Demand, capped, empty bool) (best, fallback int32, avoided, skipped bool) {
	c := w.cursor(it, d, capped)
	if empty {
		c = w.indexFor(it).cursor(w.cfg.Oversubscription-w.smTol, d.GPUMemory-w.maxMemTol, capped)
	}
	cands := w.cands[:0]
	firstCell := -1
	limit := w.judging()
	lastResort := w.lastResort(it)
	fallback, fallbackS := int32(-1), math.Inf(1)
	rejected, after, empties := 0, 0, 0
	maxLoud := w.maxLoud(it)
	for {
		g, cell := c.next()
		if g < 0 || (firstCell >= 0 && cell != firstCell) {
			break
		}
		if rejected >= maxLoud {
			if after == 0 && len(cands) == 0 {
				// Enough loud neighbours: from here on only (nearly)
				// empty GPUs can take the replica, and they sit in the
				// index's top SM column; walk that instead of every
				// partly filled bucket on the way.
				c = w.indexFor(it).cursor(w.cfg.Oversubscription-w.smTol, d.GPUMemory-w.maxMemTol, capped)
				firstCell = -1
			}
			if after++; after > maxAfterRejected {
				break
			}
		}
		if !w.fitsGPU(it, g, d) || !w.fitsNode(w.gpus[g].node, 1, d) || (empty && w.gpus[g].n > 0) {
			continue
		}
		if w.conflicts(it, g) {
			avoided = true
			continue
		}
		s := math.NaN() // not predicted yet
		if w.gpus[g].n == 0 {
			s = math.Inf(-1)
		} else if limit {
			if rejected >= maxLoud {
				continue
			}
			// Loud, and no quieter than the fallback: nothing more to know.
			stop := 0.0
			if lastResort {
				stop = max(stop, fallbackS)
			}
			if s = w.loudnessAbove(it, g, stop); s > 0 {
				rejected++
				w.loud = true
				if s < fallbackS {
					fallback, fallbackS = g, s
				}
				continue
			}
		}
		firstCell = cell
		if s == math.Inf(-1) {
			empties++
		}
		cands = append(cands, cand{g: g, score: w.score(g, d), loudness: s, nodeEmpty: w.nodes[w.gpus[g].node].empty, seq: int32(len(cands))})
		// Empty GPUs need no prediction to compare: up to maxEmptyTies of
		// them, for the fullest node.
		if len(cands) >= w.cfg.TieCandidates && (empties < len(cands) || len(cands) == maxEmptyTies) {
			break
		}
	}
	w.cands = cands
	if len(cands) == 0 {
		if !lastResort {
			fallback = -1
		}
		return -1, fallback, avoided, c.skipped
	}
	for k := range cands {
		if math.IsNaN(cands[k].loudness) {
			cands[k].loudness = math.Inf(-1)
			if len(cands) > 1 && w.req.Predictor != nil {
				cands[k].loudness = w.loudness(it, cands[k].g)
			}
		}
	}
	b := 0
	for k := 1; k < len(cands); k++ {
		if candLess(&cands[k], &cands[b]) {
			b = k
		}
	}
	return cands[b].g, fallback, avoided, c.skipped
}

func candLess(a, b *cand) bool {
	if a.loud != b.loud {
		return b.loud
	}
	if a.current != b.current {
		return a.current
	}
	if a.cell != b.cell {
		return a.cell < b.cell
	}
	if a.loudness != b.loudness {
		return a.loudness < b.loudness
	}
	if a.score != b.score {
		return a.score < b.score
	}
	if a.nodeEmpty != b.nodeEmpty {
		return a.nodeEmpty < b.nodeEmpty
	}
	return a.seq < b.seq
}

func candCmp(a, b cand) int {
	switch {
	case candLess(&a, &b):
		return -1
	case candLess(&b, &a):
		return 1
	}
	return 0
}
