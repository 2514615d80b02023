package rst

import (
	"math"

	"github.com/elastico/elastico"
)

// MinDemand returns R_j^min, the smallest footprint of a family (Eq. 12):
// in every resource, the least total demand (Demand.Total) of any of its
// configurations. Whatever configuration the job gets, it needs at least
// this much of each resource, which is what PDS reserves for a waiting job
// (C_eff = C − γ·Σ R_min). An empty family needs nothing: the zero Vector.
func MinDemand(family []elastico.Profile) elastico.Vector {
	if len(family) == 0 {
		return elastico.Vector{}
	}
	m := family[0].Demand.Total()
	for i := 1; i < len(family); i++ {
		t := family[i].Demand.Total()
		for r := range m {
			m[r] = math.Min(m[r], t[r])
		}
	}
	return m
}

// NormalizedGoodput returns G̃_j(c) = G_j(c) / max_c G_j(c) for every
// profile of the family, in its order: the goodput (throughput × statistical
// efficiency, elastico.Profile.Goodput) relative to the family's best, in
// [0, 1]. A family whose every goodput is zero gets zeros.
func NormalizedGoodput(family []elastico.Profile) []float64 {
	return NormalizedGoodputInto(make([]float64, 0, len(family)), family)
}

// NormalizedGoodputInto is NormalizedGoodput appending to dst, for callers
// that reuse a buffer every epoch.
func NormalizedGoodputInto(dst []float64, family []elastico.Profile) []float64 {
	// One pass over the profiles (at scale they are the epoch's largest
	// memory), then one over dst.
	n := len(dst)
	best := 0.0
	for i := range family {
		g := family[i].Goodput()
		best = math.Max(best, g)
		dst = append(dst, g)
	}
	for i := n; i < len(dst); i++ {
		if best > 0 {
			dst[i] /= best
		} else {
			dst[i] = 0
		}
	}
	return dst
}
