package esp

import (
	"fmt"
	"math"
	"slices"

	"github.com/elastico/elastico"
)

// The solver's inner loops are written out for four resources.
var (
	_ [elastico.NumResources - 4]struct{}
	_ [4 - elastico.NumResources]struct{}
)

// feasTol is the slack, in fractions of capacity, under which a load counts
// as within capacity: it absorbs the rounding of sums of normalized demands
// and stays below elastico.Vector.LessEq's own slack of 1e-9.
const feasTol = 1e-10

// flat is a market in the solver's form: only the options a bidder could
// ever choose (positive value, fitting capacity alone), in flat arrays so the
// inner loops touch contiguous memory.
type flat struct {
	n     int
	start []int32           // options of bidder j are start[j] ≤ o < start[j+1]
	orig  []int32           // the option's index in Bidder.Options
	val   []float64         // w·G̃ − Γ
	dem   []elastico.Vector // R̂ = Demand / Capacity
	// scale is S = Σ_j max_c val: the market's total bid value, the unit of
	// the price steps. Zero when no bidder has a usable option.
	scale float64
}

// load fills f from m, reusing f's slices, or returns why it cannot: an
// error wrapping elastico.ErrInvalid. It makes the checks of
// elastico.Market.Validate as it goes and asks Validate for the detailed
// error only when one fails: checking here rather than calling Validate
// first saves a pass over the market and Validate's allocations (it formats
// each bidder's ID and each option's path as it goes). It also refuses
// values w·G̃ − Γ, and a total bid value, that overflow a float64.
func (f *flat) load(m *elastico.Market) error {
	if !goodVector(&m.Capacity) || !goodVector(&m.Prices) {
		return invalid(m)
	}
	if p := &m.Prices; math.IsInf(p[0]+p[1]+p[2]+p[3], 0) {
		return fmt.Errorf("esp: market: the sum of Prices %v overflows: %w", *p, elastico.ErrInvalid)
	}
	n := len(m.Bidders)
	f.n = n
	f.start = slices.Grow(f.start[:0], n+1)
	f.orig = f.orig[:0]
	f.val = f.val[:0]
	f.dem = f.dem[:0]
	f.scale = 0
	// Multiplying by 1/capacity is faster than dividing, but 1/c overflows
	// for a subnormal capacity; then it divides.
	var inv elastico.Vector
	div := false
	for r, c := range m.Capacity {
		if c > 0 {
			inv[r] = 1 / c
			div = div || math.IsInf(inv[r], 0)
		}
	}
	capc := m.Capacity
	for j := range m.Bidders {
		f.start = append(f.start, int32(len(f.val)))
		b := &m.Bidders[j]
		if w := b.Weight; !(w > 0) || w > math.MaxFloat64 {
			return invalid(m)
		}
		if len(b.Options) > math.MaxInt32-len(f.val) {
			return fmt.Errorf("esp: market: more than %d options in all: %w", math.MaxInt32, elastico.ErrInvalid)
		}
		best := 0.0
	options:
		for k := range b.Options {
			o := &b.Options[k]
			if !goodNumber(o.Goodput) || !goodNumber(o.Penalty) || !goodVector(&o.Demand) {
				return invalid(m)
			}
			v := b.Weight*o.Goodput - o.Penalty
			if !(v > 0) {
				continue // never worth more than waiting
			}
			if v > math.MaxFloat64 {
				return fmt.Errorf("esp: bidder %d: Weight·Options[%d].Goodput overflows: %w", j, k, elastico.ErrInvalid)
			}
			var d elastico.Vector
			for r := range d {
				switch {
				case capc[r] > 0:
					if div {
						d[r] = o.Demand[r] / capc[r]
					} else {
						d[r] = o.Demand[r] * inv[r]
					}
					if d[r] > 1+feasTol {
						continue options // exceeds capacity on its own
					}
				case o.Demand[r] > 0:
					continue options // a resource the market does not have
				}
			}
			f.orig = append(f.orig, int32(k))
			f.val = append(f.val, v)
			f.dem = append(f.dem, d)
			best = max(best, v)
		}
		f.scale += best
	}
	f.start = append(f.start, int32(len(f.val)))
	if math.IsInf(f.scale, 0) {
		return fmt.Errorf("esp: market: the total bid value overflows: %w", elastico.ErrInvalid)
	}
	return nil
}

// options returns the range of bidder j's usable options.
func (f *flat) options(j int) (int, int) {
	return int(f.start[j]), int(f.start[j+1])
}

// within reports whether load l is within capacity.
func within(l *elastico.Vector) bool {
	return l[0] <= 1+feasTol && l[1] <= 1+feasTol && l[2] <= 1+feasTol && l[3] <= 1+feasTol
}

// goodNumber reports whether x is finite and non-negative.
func goodNumber(x float64) bool { return x >= 0 && x <= math.MaxFloat64 }

func goodVector(v *elastico.Vector) bool {
	return goodNumber(v[0]) && goodNumber(v[1]) && goodNumber(v[2]) && goodNumber(v[3])
}

// invalid returns m.Validate's error, prefixed by the package. It is
// called when load found m invalid; should Validate disagree, the error
// still wraps elastico.ErrInvalid.
func invalid(m *elastico.Market) error {
	if err := m.Validate(); err != nil {
		return fmt.Errorf("esp: %w", err)
	}
	return fmt.Errorf("esp: market has a NaN, infinite or negative number: %w", elastico.ErrInvalid)
}
