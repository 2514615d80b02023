package rst

import "github.com/elastico/elastico"

// Dominates reports whether configuration q makes configuration p
// pointless: q runs on p's GPU model (the same, or q names none), needs no
// more of any resource in total (Demand.Total), no more GPUs, and no more
// memory and SM share on each of them (so it fits wherever p fits), and
// delivers at least p's goodput (Profile.Goodput). Two configurations may
// dominate each other when they are equal in all of these. A fast GPU's
// profile never dominates a slow one's: the slow GPUs may be all there is.
func Dominates(q, p *elastico.Profile) bool {
	return q.Goodput() >= p.Goodput() && demandLessEq(&q.Demand, &p.Demand) && sameModel(q, p)
}

// sameModel reports whether q runs wherever p's GPU model lets p run.
func sameModel(q, p *elastico.Profile) bool {
	return q.Hardware.GPUModel == "" || q.Hardware.GPUModel == p.Hardware.GPUModel
}

// demandLessEq reports whether q needs no more than p of anything. With no
// more GPUs and no more SM and memory on each, the totals of SM and memory
// are no larger either; CPU and RAM are compared in total.
func demandLessEq(q, p *elastico.Demand) bool {
	return q.GPUs <= p.GPUs && q.SM <= p.SM && q.GPUMemory <= p.GPUMemory &&
		float64(q.GPUs)*q.CPU <= float64(p.GPUs)*p.CPU && float64(q.GPUs)*q.RAM <= float64(p.GPUs)*p.RAM
}

// Prune returns the family's Pareto frontier, in the
// family's order: every configuration that another Dominates is dropped,
// and of configurations that dominate each other (equal in demand and
// goodput) only the first is kept. Apply it after Filter, so that a
// configuration is never pruned in favour of one the job cannot run. The
// family is not modified.
func Prune(family []elastico.Profile) []elastico.Profile {
	var buf [16]int
	keep := PruneIndices(buf[:0], family)
	out := make([]elastico.Profile, len(keep))
	for i, k := range keep {
		out[i] = family[k]
	}
	return out
}

// PruneIndices appends to dst the indices of the configurations Prune
// keeps, in increasing order. With a dst of enough capacity it does not
// allocate (for families of up to 32 configurations): the form for an epoch
// loop over thousands of jobs.
func PruneIndices(dst []int, family []elastico.Profile) []int {
	var buf [32]float64
	var g []float64
	if len(family) <= len(buf) {
		g = buf[:len(family)]
	} else {
		g = make([]float64, len(family))
	}
	for i := range family {
		g[i] = family[i].Goodput()
	}
	for i := range family {
		p := &family[i].Demand
		dropped := false
		for k := range family {
			if k == i || g[k] < g[i] || !demandLessEq(&family[k].Demand, p) || !sameModel(&family[k], &family[i]) {
				continue
			}
			// k dominates i. Mutual domination is a tie: the first one stays.
			if k < i || g[i] < g[k] || !demandLessEq(p, &family[k].Demand) || !sameModel(&family[i], &family[k]) {
				dropped = true
				break
			}
		}
		if !dropped {
			dst = append(dst, i)
		}
	}
	return dst
}
