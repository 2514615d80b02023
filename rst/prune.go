package rst

import "github.com/elastico/elastico"

// Dominates reports whether configuration q makes configuration p
// pointless: q needs no more of any resource in total (Demand.Total), no more
// GPUs, and no more memory and SM share on each of them (so it fits wherever
// p fits), and delivers at least p's goodput (Profile.Goodput). Two
// configurations may dominate each other when they are equal in all of these.
func Dominates(q, p *elastico.Profile) bool {
	if q.Demand.GPUs > p.Demand.GPUs || q.Demand.GPUMemory > p.Demand.GPUMemory || q.Demand.SM > p.Demand.SM ||
		q.Goodput() < p.Goodput() {
		return false
	}
	tq, tp := q.Demand.Total(), p.Demand.Total()
	for r := range tq {
		if tq[r] > tp[r] {
			return false
		}
	}
	return true
}

// Prune returns the family's Pareto frontier (DESIGN.md 3.1), in the
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
// allocate: the form for an epoch loop over thousands of jobs.
func PruneIndices(dst []int, family []elastico.Profile) []int {
	for i := range family {
		p := &family[i]
		dropped := false
		for k := range family {
			if k == i || !Dominates(&family[k], p) {
				continue
			}
			// Mutual domination is a tie: the first one stays.
			if k < i || !Dominates(p, &family[k]) {
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
