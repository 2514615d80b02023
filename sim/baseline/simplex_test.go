package baseline

import (
	"math"
	"testing"
)

// denseLP builds a simplex from dense A and b.
func denseLP(a [][]float64, b []float64) *simplex {
	s := newSimplex(b)
	for k := range a[0] {
		var rows []int
		var vals []float64
		for r := range a {
			rows, vals = append(rows, r), append(vals, a[r][k])
		}
		s.column(rows, vals)
	}
	return s
}

func TestSimplexBeale(t *testing.T) {
	// Beale's LP, on which Dantzig's rule cycles with the wrong ties:
	// maximize 3/4 x0 − 20 x1 + 1/2 x2 − 6 x3, optimum 5/4 at x = (1, 0, 1, 0).
	s := denseLP([][]float64{{0.25, -8, -1, 9}, {0.5, -12, -0.5, 3}, {0, 0, 1, 0}}, []float64{0, 0, 1})
	s.objective([]float64{0.75, -20, 0.5, -6})
	if err := s.solve(nil, 1000); err != nil {
		t.Fatal(err)
	}
	x := make([]float64, 4)
	s.values(x)
	if z := s.value(); math.Abs(z-1.25) > 1e-12 || math.Abs(x[0]-1) > 1e-12 || math.Abs(x[2]-1) > 1e-12 {
		t.Errorf("z = %g at x = %v, want 5/4 at (1, 0, 1, 0)", z, x)
	}
}

func TestSimplexSecondObjective(t *testing.T) {
	// maximize x0 + x1 s.t. x0 + x1 ≤ 2, x0 ≤ 1.5: every x0 in [0, 1.5]
	// with x1 = 2 − x0 is optimal; over that face, the most x1 − x0 is at
	// x = (0, 2), and x0 + x1 stays 2.
	s := denseLP([][]float64{{1, 1}, {1, 0}}, []float64{2, 1.5})
	s.objective([]float64{1, 1})
	if err := s.solve(nil, 100); err != nil {
		t.Fatal(err)
	}
	allowed := make([]bool, len(s.d))
	for k, d := range s.d {
		allowed[k] = d >= -1e-9
	}
	s.objective([]float64{-1, 1})
	if err := s.solve(allowed, 100); err != nil {
		t.Fatal(err)
	}
	x := make([]float64, 2)
	s.values(x)
	if math.Abs(x[0]) > 1e-12 || math.Abs(x[1]-2) > 1e-12 {
		t.Errorf("x = %v, want (0, 2)", x)
	}
}

func TestSimplexUnbounded(t *testing.T) {
	s := denseLP([][]float64{{1, -1}}, []float64{1})
	s.objective([]float64{0, 1})
	if err := s.solve(nil, 100); err == nil {
		t.Error("an unbounded LP solved")
	}
}
