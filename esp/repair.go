package esp

import (
	"github.com/elastico/elastico"
)

// loadOf returns the total normalized demand of sc.cur, summed afresh.
func (sc *scratch) loadOf() elastico.Vector {
	var l elastico.Vector
	for _, c := range sc.cur {
		if c >= 0 {
			d := &sc.dem[c]
			l[0] += d[0]
			l[1] += d[1]
			l[2] += d[2]
			l[3] += d[3]
		}
	}
	return l
}

// repair makes sc.cur fit capacity (DESIGN.md 3.2): while a resource is over
// capacity, the bidder that loses the least value per unit of that resource
// freed is downsized to a smaller option, or deferred. A downsize never
// pushes another resource over capacity nor grows one that is, so each
// resource is repaired once and the loop ends.
func (sc *scratch) repair(_ *elastico.Vector) {
	l := sc.loadOf()
	for {
		r := 0
		for q := 1; q < 4; q++ {
			if l[q] > l[r] {
				r = q
			}
		}
		if l[r] <= 1+feasTol {
			return
		}
		h := sc.heap[:0]
		for j, c := range sc.cur {
			if c >= 0 && sc.dem[c][r] > 0 && int32(j) != sc.pin {
				k, _ := sc.downsize(j, r, &l)
				h = append(h, heapItem{k, int32(j)})
			}
		}
		h.init()
		for l[r] > 1+feasTol && len(h) > 0 {
			it := h.pop()
			j := int(it.j)
			k, to := sc.downsize(j, r, &l)
			if len(h) > 0 && k > h[0].key {
				h.push(heapItem{k, it.j}) // stale: its move got dearer
				continue
			}
			c := sc.cur[j]
			d := &sc.dem[c]
			l[0] -= d[0]
			l[1] -= d[1]
			l[2] -= d[2]
			l[3] -= d[3]
			sc.cur[j] = to
			if to >= 0 {
				d := &sc.dem[to]
				l[0] += d[0]
				l[1] += d[1]
				l[2] += d[2]
				l[3] += d[3]
				if d[r] > 0 {
					k, _ := sc.downsize(j, r, &l)
					h.push(heapItem{k, it.j})
				}
			}
		}
		sc.heap = h
		l = sc.loadOf() // drop the rounding of the updates
	}
}

// downsize returns bidder j's cheapest way to use less of resource r: the
// value lost per unit of r freed, and the option to move to (-1: defer).
// Options that would grow a resource over capacity, or one that is over it,
// are not considered. j's current option must use some r.
func (sc *scratch) downsize(j, r int, l *elastico.Vector) (float64, int32) {
	c := sc.cur[j]
	dc := &sc.dem[c]
	vc := sc.val[c]
	bestK, bestTo, bestV := vc/dc[r], int32(-1), 0.0
	o0, o1 := sc.options(j)
	for o := o0; o < o1; o++ {
		do := &sc.dem[o]
		if do[r] >= dc[r] {
			continue
		}
		ok := true
		for q := range 4 {
			if do[q] > dc[q] && l[q]-dc[q]+do[q] > 1+feasTol {
				ok = false
				break
			}
		}
		if !ok {
			continue
		}
		k := (vc - sc.val[o]) / (dc[r] - do[r])
		if k < bestK || (k == bestK && sc.val[o] > bestV) {
			bestK, bestTo, bestV = k, int32(o), sc.val[o]
		}
	}
	return bestK, bestTo
}

// improve spends the capacity the repair left: while some bidder can move
// to an option worth more (or be admitted) within capacity, the move with
// the most value gained per unit of priced demand added is made. Prices
// weigh the resources; a small floor keeps an unpriced resource from being
// free. Moves are taken from a lazy max-heap with ties to the lower bidder
// index, so the order is deterministic.
func (sc *scratch) improve(lambda *elastico.Vector) {
	var w elastico.Vector
	floor := 1e-3 * sc.scale
	for r := range w {
		w[r] = lambda[r] + floor
	}
	l := sc.loadOf()
	h := sc.heap[:0]
	for j := range sc.cur {
		if k, _ := sc.upgrade(j, &l, &w); k > 0 {
			h = append(h, heapItem{-k, int32(j)})
		}
	}
	h.init()
	for len(h) > 0 {
		it := h.pop()
		j := int(it.j)
		k, to := sc.upgrade(j, &l, &w)
		if k <= 0 {
			continue // nothing fits any more
		}
		if len(h) > 0 && -k > h[0].key {
			h.push(heapItem{-k, it.j})
			continue
		}
		if c := sc.cur[j]; c >= 0 {
			d := &sc.dem[c]
			l[0] -= d[0]
			l[1] -= d[1]
			l[2] -= d[2]
			l[3] -= d[3]
		}
		d := &sc.dem[to]
		l[0] += d[0]
		l[1] += d[1]
		l[2] += d[2]
		l[3] += d[3]
		sc.cur[j] = to
		if k, _ := sc.upgrade(j, &l, &w); k > 0 {
			h.push(heapItem{-k, it.j})
		}
	}
	sc.heap = h
}

// upgrade returns bidder j's best move to an option worth more that fits
// load l: value gained per unit of w-priced demand added (0 if none), and
// the option.
func (sc *scratch) upgrade(j int, l, w *elastico.Vector) (float64, int32) {
	c := sc.cur[j]
	var dc elastico.Vector
	vc := 0.0
	if c >= 0 {
		dc, vc = sc.dem[c], sc.val[c]
	}
	bestK, bestTo := 0.0, int32(-1)
	o0, o1 := sc.options(j)
	for o := o0; o < o1; o++ {
		gain := sc.val[o] - vc
		if gain <= 0 {
			continue
		}
		do := &sc.dem[o]
		cost := 0.0
		ok := true
		for q := range 4 {
			if x := do[q] - dc[q]; x > 0 {
				if l[q]+x > 1+feasTol {
					ok = false
					break
				}
				cost += w[q] * x
			}
		}
		if !ok {
			continue
		}
		k := gain / (cost + 1e-12*sc.scale)
		if k > bestK {
			bestK, bestTo = k, int32(o)
		}
	}
	return bestK, bestTo
}

// objective returns Σ val over sc.cur.
func (sc *scratch) objective() float64 {
	v := 0.0
	for _, c := range sc.cur {
		if c >= 0 {
			v += sc.val[c]
		}
	}
	return v
}

// exchange is a local search for small markets: for each bidder and each
// other option of it (or deferral), move it there, make room by repairing
// the others, refill with improve, and keep the result if the objective
// grew. It repeats until a
// whole pass finds nothing, at most maxPasses times.
func (sc *scratch) exchange(lambda *elastico.Vector, maxPasses int) {
	best := sc.objective()
	sc.save = append(sc.save[:0], sc.cur...)
	for range maxPasses {
		improved := false
		for j := range sc.n {
			o0, o1 := sc.options(j)
			for a := o0 - 1; a < o1; a++ {
				to := int32(a)
				if a < o0 {
					to = -1
				}
				if to == sc.cur[j] {
					continue
				}
				sc.cur[j] = to
				sc.pin = int32(j)
				sc.repair(lambda) // make room for j's new option
				sc.pin = -1
				sc.improve(lambda)
				if v := sc.objective(); v > best*(1+1e-12)+1e-300 {
					best, improved = v, true
					copy(sc.save, sc.cur)
				} else {
					copy(sc.cur, sc.save)
				}
			}
		}
		if !improved {
			return
		}
	}
}
