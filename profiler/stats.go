package profiler

import (
	"math"
	"slices"
)

// TrimmedMean sorts xs in place and returns the mean of what is left after
// dropping the fraction trim of the values at each end: trim 0.1 keeps the
// 10–90 % range. At least one value is always kept; an empty xs gives NaN.
func TrimmedMean(xs []float64, trim float64) float64 {
	n := len(xs)
	if n == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	k := int(math.Floor(float64(n) * trim))
	if 2*k >= n {
		k = (n - 1) / 2
	}
	kept := xs[k : n-k]
	// Sum deviations from the smallest kept value: a constant series gives
	// back its value exactly, and the sum stays small.
	ref, s := kept[0], 0.0
	for _, x := range kept {
		s += x - ref
	}
	return ref + s/float64(len(kept))
}
