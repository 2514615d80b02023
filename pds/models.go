package pds

import (
	"cmp"
	"slices"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/slab"
)

// GPU models. The market prices GPUs as one pool (its capacity is a
// Vector), and on a cluster of several GPU models a job's configuration
// runs only on GPUs of the model it was profiled for. Left at that, the
// market chose V100 configurations for more jobs than the cluster has
// V100s; the placer left the excess out, and those jobs asked again the
// next round and the next epoch. So after each round's prices, each
// model's GPUs are cleared apart (fitModels): where the chosen
// configurations ask for more GPUs of a model than it has, the jobs that
// lose the least per GPU by going elsewhere (to their best configuration
// on a model with room, or to waiting) go, until the rest fit. The loss
// per GPU of the last job moved is that model's price, Gavel's "effective
// throughput" in the market's terms: a job that a V100 speeds up little
// against a K80 gives its V100 to one that it speeds up much.

// indexModels lists the cluster's GPU models and counts each one's GPUs;
// with fewer than two models it lists none, and every stage below is off.
func (ly *layout) indexModels(cl *elastico.Cluster) {
	ly.models, ly.modelCap = ly.models[:0], ly.modelCap[:0]
	for i := range cl.Nodes {
		for k := range cl.Nodes[i].GPUs {
			m := cl.Nodes[i].GPUs[k].Model
			x := slices.Index(ly.models, m)
			if x < 0 {
				x = len(ly.models)
				ly.models = append(ly.models, m)
				ly.modelCap = append(ly.modelCap, 0)
			}
			ly.modelCap[x]++
		}
	}
	if len(ly.models) < 2 {
		ly.models, ly.modelCap = ly.models[:0], ly.modelCap[:0]
	}
}

// modelOf returns the index in e.models of profile p's GPU model, or -1
// when it names none (it runs on any GPU) or the cluster has one model.
func (ly *layout) modelOf(p *elastico.Profile) int16 {
	if m := p.Hardware.GPUModel; m != "" && len(ly.models) > 0 {
		return int16(slices.Index(ly.models, m))
	}
	return -1
}

// modelMove is a candidate to leave an over-asked model: bidder b, and
// what it loses per GPU by going.
type modelMove struct {
	loss float64
	b    int32
}

// fitModels clears each GPU model apart (see above): it changes e.choice
// so that no model's GPUs are asked for more than it has, within the
// market's capacity as a whole.
func (e *epoch) fitModels() {
	if len(e.models) == 0 {
		return
	}
	e.modelUse = slab.Zeroed(e.modelUse, len(e.models))
	use := e.modelUse
	free := e.market.Capacity
	for b, c := range e.choice {
		if c < 0 {
			continue
		}
		o := e.jobs[e.bidJob[b]].first + c
		free = free.Sub(e.options[o].Demand)
		if m := e.optModel[o]; m >= 0 {
			use[m] += e.real[o][elastico.SM]
		}
	}
	for m := range e.models {
		if use[m] <= e.modelCap[m]+1e-9 {
			continue
		}
		moves := e.modelMoves[:0]
		for b, c := range e.choice {
			if c < 0 {
				continue
			}
			js := &e.jobs[e.bidJob[b]]
			o := js.first + c
			if e.optModel[o] != int16(m) {
				continue
			}
			alt, altV := e.elsewhere(js, int16(m), use, free)
			loss := e.surplus(js, o)
			if alt >= 0 {
				loss -= altV
			}
			moves = append(moves, modelMove{loss / max(e.real[o][elastico.SM], 1e-9), int32(b)})
		}
		slices.SortFunc(moves, func(x, y modelMove) int {
			if c := cmp.Compare(x.loss, y.loss); c != 0 {
				return c
			}
			return cmp.Compare(x.b, y.b)
		})
		for _, mv := range moves {
			if use[m] <= e.modelCap[m]+1e-9 {
				break
			}
			js := &e.jobs[e.bidJob[mv.b]]
			o := js.first + e.choice[mv.b]
			// Where it goes is decided now, with the room the moves
			// before it left.
			alt, _ := e.elsewhere(js, int16(m), use, free)
			use[m] -= e.real[o][elastico.SM]
			free = free.Add(e.options[o].Demand)
			e.choice[mv.b] = -1
			if alt >= 0 {
				e.choice[mv.b] = alt - js.first
				free = free.Sub(e.options[alt].Demand)
				if a := e.optModel[alt]; a >= 0 {
					use[a] += e.real[alt][elastico.SM]
				}
			}
		}
		e.modelMoves = moves[:0]
	}
}

// elsewhere returns job js's best option, by its surplus at the round's
// prices, that is not on model m and fits what use leaves of its own
// model and, beyond what js's present choice frees, the market's free
// capacity; -1 if none has a positive surplus.
func (e *epoch) elsewhere(js *jobState, m int16, use []float64, free elastico.Vector) (int32, float64) {
	c := e.choice[js.bidder]
	if c >= 0 {
		free = free.Add(e.options[js.first+c].Demand)
	}
	best, bestV := int32(-1), 0.0
	for o := js.first; o < js.first+js.n; o++ {
		a := e.optModel[o]
		if a == m || (a >= 0 && use[a]+e.real[o][elastico.SM] > e.modelCap[a]+1e-9) || !e.options[o].Demand.LessEq(free) {
			continue
		}
		if v := e.surplus(js, o); v > bestV {
			best, bestV = o, v
		}
	}
	return best, bestV
}

// surplus is what option o is worth to job js at the round's prices:
// w·G̃ − Γ − λ·R̂, as the price solver weighs it.
func (e *epoch) surplus(js *jobState, o int32) float64 {
	v := e.market.Bidders[js.bidder].Value(int(o - js.first))
	capc := &e.market.Capacity
	for r, d := range e.options[o].Demand {
		if d > 0 && capc[r] > 0 {
			v -= e.sol.Prices[r] * d / capc[r]
		}
	}
	return v
}

// modelRoom reports whether option o fits what use leaves of its GPU
// model (always, when it names none).
func (e *epoch) modelRoom(o int32, use []float64) bool {
	m := e.optModel[o]
	return m < 0 || use[m]+e.real[o][elastico.SM] <= e.modelCap[m]+1e-9
}

// smallestOption is the option admit starts waiting job js under: its
// smallest (minOpt), or on a cluster of several GPU models the most
// worth of the options as small, on a model with room in use (any model
// when share: it is to share a GPU others hold).
func (e *epoch) smallestOption(js *jobState, use []float64, share bool) int32 {
	if len(e.models) == 0 || js.minOpt < 0 {
		return js.minOpt
	}
	bd := &e.market.Bidders[js.bidder]
	n := e.real[js.minOpt][elastico.SM]
	best, bestV := int32(-1), 0.0
	for o := js.first; o < js.first+js.n; o++ {
		if e.real[o][elastico.SM] != n || (!share && !e.modelRoom(o, use)) {
			continue
		}
		if v := bd.Value(int(o - js.first)); best < 0 || v > bestV {
			best, bestV = o, v
		}
	}
	if best < 0 {
		return js.minOpt
	}
	return best
}
