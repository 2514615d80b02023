// Package check holds the one wording of "this number is unusable" that
// every validation error in the module shares.
package check

import (
	"fmt"
	"math"
)

// Number returns why x is not a finite, non-negative number ("is NaN", "is
// infinite", "is negative (-1)"), or "" when it is one.
func Number(x float64) string {
	switch {
	case math.IsNaN(x):
		return "is NaN"
	case math.IsInf(x, 0):
		return "is infinite"
	case x < 0:
		return fmt.Sprintf("is negative (%g)", x)
	}
	return ""
}
