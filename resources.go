package elastico

import "math"

// Resource names one dimension of the paper's four-dimensional demand
// vector.
type Resource int

// The four resource dimensions. SM is counted in GPUs' worth of streaming
// multiprocessors (1.0 = every SM of one GPU), GPUMemory and RAM in GiB, CPU
// in cores.
const (
	SM Resource = iota
	GPUMemory
	CPU
	RAM
	NumResources
)

var resourceNames = [NumResources]string{"SM", "GPUMemory", "CPU", "RAM"}

func (r Resource) String() string {
	if r < 0 || r >= NumResources {
		return "Resource(?)"
	}
	return resourceNames[r]
}

// Vector is an amount of every resource. It is an array, not a slice, so that
// the solver's inner loops stay on the stack and a Vector compares with ==.
type Vector [NumResources]float64

// Add returns v + w.
func (v Vector) Add(w Vector) Vector {
	for r := range v {
		v[r] += w[r]
	}
	return v
}

// Sub returns v − w.
func (v Vector) Sub(w Vector) Vector {
	for r := range v {
		v[r] -= w[r]
	}
	return v
}

// Scale returns k·v.
func (v Vector) Scale(k float64) Vector {
	for r := range v {
		v[r] *= k
	}
	return v
}

// LessEq reports whether v ≤ w in every dimension, with a relative slack of
// 1e-9 so that sums of floats that equal a capacity are not rejected.
func (v Vector) LessEq(w Vector) bool {
	for r := range v {
		if v[r] > w[r]+1e-9*math.Max(1, math.Abs(w[r])) {
			return false
		}
	}
	return true
}

// DominantShare returns max_r v[r]/c[r] over the dimensions where c is
// positive; a positive demand in a dimension with no capacity gives +Inf.
func (v Vector) DominantShare(c Vector) float64 {
	s := 0.0
	for r := range v {
		switch {
		case c[r] > 0:
			s = math.Max(s, v[r]/c[r])
		case v[r] > 0:
			return math.Inf(1)
		}
	}
	return s
}

// finite reports whether every component is a finite, non-negative number,
// and if not, which one is not.
func (v Vector) check() (Resource, bool) {
	for r, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
			return Resource(r), false
		}
	}
	return 0, true
}
