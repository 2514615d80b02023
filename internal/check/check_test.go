package check

import (
	"math"
	"testing"
)

func TestNumber(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want string
	}{{0, ""}, {3.5, ""}, {math.NaN(), "is NaN"}, {math.Inf(-1), "is infinite"}, {-1, "is negative (-1)"}} {
		if got := Number(tc.in); got != tc.want {
			t.Errorf("Number(%g) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
