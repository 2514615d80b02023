package esp

import (
	"fmt"

	"github.com/elastico/elastico"
)

// Bound returns the Lagrangian dual value at prices,
//
//	D(λ) = Σ_j max(0, max_c w_j·G̃_j(c) − Γ_j(c) − λ·R̂_j(c)) + Σ_r λ_r,
//
// an upper bound on the objective of every choice within capacity, for any
// prices λ ≥ 0 (per unit of normalized demand, as in Solution.Prices).
// With a Solution's prices it tells how far the Solution's objective can be
// from the optimum on markets too large for Exact. Options that exceed
// capacity on their own are left out, as no feasible choice holds them.
func Bound(m *elastico.Market, prices elastico.Vector) (float64, error) {
	if m == nil {
		return 0, fmt.Errorf("esp: Bound: nil market: %w", elastico.ErrInvalid)
	}
	var f flat
	if err := f.load(m); err != nil {
		return 0, err
	}
	if !goodVector(&prices) {
		return 0, fmt.Errorf("esp: Bound: prices %v: NaN, infinite or negative: %w", prices, elastico.ErrInvalid)
	}
	d := prices[0] + prices[1] + prices[2] + prices[3]
	for j := range f.n {
		best := 0.0
		o0, o1 := f.options(j)
		for o := o0; o < o1; o++ {
			r := &f.dem[o]
			best = max(best, f.val[o]-(prices[0]*r[0]+prices[1]*r[1]+prices[2]*r[2]+prices[3]*r[3]))
		}
		d += best
	}
	return d, nil
}
