package esp

import (
	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/slab"
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

// move sets bidder j's option to `to` and updates load l.
func (sc *scratch) move(j int, to int32, l *elastico.Vector) {
	if c := sc.cur[j]; c >= 0 {
		d := &sc.dem[c]
		l[0] -= d[0]
		l[1] -= d[1]
		l[2] -= d[2]
		l[3] -= d[3]
	}
	if to >= 0 {
		d := &sc.dem[to]
		l[0] += d[0]
		l[1] += d[1]
		l[2] += d[2]
		l[3] += d[3]
	}
	sc.cur[j] = to
}

// fits reports whether moving bidder j from option c to option `to` (either
// may be -1) keeps every resource it grows within capacity under load l.
func (sc *scratch) fits(c, to int32, l *elastico.Vector) bool {
	if to < 0 {
		return true
	}
	var dc elastico.Vector
	if c >= 0 {
		dc = sc.dem[c]
	}
	do := &sc.dem[to]
	for q := range 4 {
		if x := do[q] - dc[q]; x > 0 && l[q]+x > 1+feasTol {
			return false
		}
	}
	return true
}

// repair makes sc.cur fit capacity: while a resource is over
// capacity, the bidder that loses the least value per unit of that resource
// freed is downsized to a smaller option, or deferred. A downsize never
// pushes another resource over capacity nor grows one that is, so each
// resource is repaired once and the loop ends.
//
// The bidders wait in a min-heap on that loss. A key goes stale when other
// moves change the load: a popped bidder whose move still fits is moved
// (its key can only have been too low if a cheaper move appeared, which is
// ignored), one whose move no longer fits is priced again and pushed back.
func (sc *scratch) repair() {
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
				k, to := sc.downsize(j, r, &l)
				h = append(h, heapItem{k, int32(j), to})
			}
		}
		h.init()
		for l[r] > 1+feasTol && len(h) > 0 {
			it := h.pop()
			j := int(it.j)
			if !sc.fits(sc.cur[j], it.to, &l) {
				k, to := sc.downsize(j, r, &l)
				h.push(heapItem{k, it.j, to})
				continue
			}
			sc.move(j, it.to, &l)
			if it.to >= 0 && sc.dem[it.to][r] > 0 {
				k, to := sc.downsize(j, r, &l)
				h.push(heapItem{k, it.j, to})
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
	dc := sc.dem[c]
	vc := sc.val[c]
	// Room left in each resource for an increase: none in one over capacity.
	var room elastico.Vector
	for q := range room {
		room[q] = max(0, 1+feasTol-l[q])
	}
	bestK, bestTo, bestV := vc/dc[r], int32(-1), 0.0
	o0, o1 := sc.options(j)
	val, dem := sc.val[o0:o1], sc.dem[o0:o1]
	for i := range val {
		do := &dem[i]
		if do[r] >= dc[r] ||
			do[0]-dc[0] > room[0] || do[1]-dc[1] > room[1] ||
			do[2]-dc[2] > room[2] || do[3]-dc[3] > room[3] {
			continue
		}
		k := (vc - val[i]) / (dc[r] - do[r])
		if k < bestK || (k == bestK && val[i] > bestV) {
			bestK, bestTo, bestV = k, int32(o0+i), val[i]
		}
	}
	return bestK, bestTo
}

// improve spends the capacity the repair left: while some bidder can move
// to an option worth more (or be admitted) within capacity, the move with
// the most value gained per unit of priced demand added is made. Prices
// weigh the resources; a small floor keeps an unpriced resource from being
// free.
//
// Moves wait in a max-heap on that ratio, ties to the lower bidder index,
// so the order is deterministic. As capacity fills, a popped bidder whose
// move still fits is moved; one whose smallest possible increase no longer
// fits is dropped without a look at its options; others are priced again.
func (sc *scratch) improve(lambda *elastico.Vector) {
	var w elastico.Vector
	floor := 1e-3 * sc.scale
	for r := range w {
		w[r] = lambda[r] + floor
	}
	l := sc.loadOf()
	sc.minInc = slab.Resize(sc.minInc, sc.n)
	h := sc.heap[:0]
	for j := range sc.cur {
		if k, to := sc.upgrade(j, &l, &w); to >= 0 {
			h = append(h, heapItem{-k, int32(j), to})
		}
	}
	h.init()
	for len(h) > 0 {
		it := h.pop()
		j := int(it.j)
		if !sc.fits(sc.cur[j], it.to, &l) {
			if m := &sc.minInc[j]; l[0]+m[0] > 1+feasTol || l[1]+m[1] > 1+feasTol ||
				l[2]+m[2] > 1+feasTol || l[3]+m[3] > 1+feasTol {
				continue // nothing of j's fits any more
			}
			if k, to := sc.upgrade(j, &l, &w); to >= 0 {
				h.push(heapItem{-k, it.j, to})
			}
			continue
		}
		sc.move(j, it.to, &l)
		if k, to := sc.upgrade(j, &l, &w); to >= 0 {
			h.push(heapItem{-k, it.j, to})
		}
	}
	sc.heap = h
}

// upgrade returns bidder j's best move to an option worth more that fits
// load l: value gained per unit of w-priced demand added, and the option
// (-1 if none fits). It records in sc.minInc[j] the least increase, per
// resource, of any option worth more.
func (sc *scratch) upgrade(j int, l, w *elastico.Vector) (float64, int32) {
	c := sc.cur[j]
	var dc elastico.Vector
	vc := 0.0
	if c >= 0 {
		dc, vc = sc.dem[c], sc.val[c]
	}
	// Room left in each resource for an increase.
	r0, r1, r2, r3 := 1+feasTol-l[0], 1+feasTol-l[1], 1+feasTol-l[2], 1+feasTol-l[3]
	w0, w1, w2, w3 := w[0], w[1], w[2], w[3]
	bestK, bestTo := 0.0, int32(-1)
	m0, m1, m2, m3 := 2.0, 2.0, 2.0, 2.0 // more than any capacity
	costFloor := 1e-12 * sc.scale
	o0, o1 := sc.options(j)
	val, dem := sc.val[o0:o1], sc.dem[o0:o1]
	for i := range val {
		gain := val[i] - vc
		if gain <= 0 {
			continue
		}
		do := &dem[i]
		x0, x1, x2, x3 := do[0]-dc[0], do[1]-dc[1], do[2]-dc[2], do[3]-dc[3]
		if x0 < 0 {
			x0 = 0
		}
		if x1 < 0 {
			x1 = 0
		}
		if x2 < 0 {
			x2 = 0
		}
		if x3 < 0 {
			x3 = 0
		}
		if x0 < m0 {
			m0 = x0
		}
		if x1 < m1 {
			m1 = x1
		}
		if x2 < m2 {
			m2 = x2
		}
		if x3 < m3 {
			m3 = x3
		}
		if x0 > r0 || x1 > r1 || x2 > r2 || x3 > r3 {
			continue
		}
		if k := gain / (w0*x0 + w1*x1 + w2*x2 + w3*x3 + costFloor); k > bestK || bestTo < 0 {
			bestK, bestTo = k, int32(o0+i)
		}
	}
	sc.minInc[j] = elastico.Vector{m0, m1, m2, m3}
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

// exchange is a local search for small markets: it moves one bidder to
// another of its options (or defers it), makes room by repairing the
// others, refills with improve, and keeps the result if the objective
// grew. Moves are tried in order of the value they add (most first, so
// upgrades that need evictions come before downgrades that free room),
// whole passes repeated while one finds something, at most maxPasses; the
// total number of moves tried is capped at trials, as each costs a few
// passes over the market.
func (sc *scratch) exchange(lambda *elastico.Vector, maxPasses, trials int) {
	best := sc.objective()
	sc.save = append(sc.save[:0], sc.cur...)
	for range maxPasses {
		// The moves from the current choice, best value gain first.
		mv := sc.moves[:0]
		for j := range sc.n {
			vc := 0.0
			if c := sc.cur[j]; c >= 0 {
				vc = sc.val[c]
			}
			o0, o1 := sc.options(j)
			for a := o0 - 1; a < o1; a++ {
				to, va := int32(a), 0.0
				if a < o0 {
					to = -1
				} else {
					va = sc.val[a]
				}
				if to != sc.cur[j] {
					mv = append(mv, heapItem{vc - va, int32(j), to})
				}
			}
		}
		mv.init()
		improved := false
		for len(mv) > 0 && trials > 0 {
			it := mv.pop()
			j := int(it.j)
			if sc.cur[j] == it.to {
				continue // an earlier exchange moved j there
			}
			trials--
			sc.cur[j] = it.to
			sc.pin = it.j
			sc.repair() // make room for j's new option
			sc.pin = -1
			sc.improve(lambda)
			if v := sc.objective(); v > best*(1+1e-12) {
				best, improved = v, true
				copy(sc.save, sc.cur)
			} else {
				copy(sc.cur, sc.save)
			}
		}
		sc.moves = mv
		if !improved || trials == 0 {
			return
		}
	}
}
