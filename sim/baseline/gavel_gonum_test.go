package baseline

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// This file keeps the LP as first written, over every job with gonum's
// lp.Simplex, as the reference the simplex and the class merge are
// tested against.

// gonumTol is gonum's optimality tolerance on reduced costs.
const gonumTol = 1e-10

// gonumHold is how far below t the second LP holds every job, relative:
// it needs some slack (at 0, gonum fails on some instances), and the
// first version's 10⁻⁹ bought up to 4·10⁻⁷ more Σ coef·x on some (a
// relaxation, where maxMin holds the optimal face exactly).
const gonumHold = 1e-12

// maxMinGonum is maxMin over every job, unmerged, with two gonum LPs (the
// second with every job held at t(1−gonumHold)).
func maxMinGonum(coef [][]float64, scale, gpus []float64) ([][]float64, float64, error) {
	M := len(gpus)
	x := make([][]float64, len(coef))
	for j := range x {
		x[j] = make([]float64, M)
	}
	// Variables: one per allowed (job, model) pair; rows only for jobs
	// with one at least (a job that can run nowhere would hold t at 0).
	var vars []gVar
	var jobs []int // row index → job
	for j := range coef {
		n := len(vars)
		for m := range M {
			if coef[j][m] > 0 && scale[j] <= gpus[m] {
				vars = append(vars, gVar{len(jobs), m})
			}
		}
		if len(vars) > n {
			jobs = append(jobs, j)
		}
	}
	if len(vars) == 0 {
		return x, 0, nil
	}
	J := len(jobs)
	// cf and sc are coef and scale by row.
	cf := func(p gVar) float64 { return coef[jobs[p.j]][p.m] }
	sc := make([]float64, J)
	for r, j := range jobs {
		sc[r] = scale[j]
	}
	// Standard form: columns [vars..., t, slacks...]; rows: J fairness
	// rows (t − Σ coef·x + s = 0), J time rows, M capacity rows.
	nv := len(vars)
	rows := 2*J + M
	cols := nv + 1 + rows
	A := mat.NewDense(rows, cols, nil)
	b := make([]float64, rows)
	for k, p := range vars {
		A.Set(p.j, k, -cf(p))
		A.Set(J+p.j, k, 1)
		A.Set(2*J+p.m, k, sc[p.j])
	}
	for j := range J {
		A.Set(j, nv, 1)
		b[J+j] = 1
	}
	for m := range M {
		b[2*J+m] = gpus[m]
	}
	basic := make([]int, rows)
	for r := range rows {
		A.Set(r, nv+1+r, 1)
		basic[r] = nv + 1 + r
	}
	c := make([]float64, cols)
	c[nv] = -1
	f, sol, err := lp.Simplex(c, A, b, gonumTol, basic)
	if err != nil {
		return nil, 0, fmt.Errorf("Gavel's max-min LP (%d jobs, %d GPU models): %v", J, M, err)
	}
	t := -f
	best := sol
	// Second LP: every job at least t (a hair below, for rounding), the
	// most normalized throughput in all. The fairness rows become
	// Σ coef·x − s = t·(1−ε), whose surplus columns give no obvious
	// starting basis, so the simplex finds one.
	if t > 0 {
		A2 := mat.NewDense(rows, nv+rows, nil)
		b2 := make([]float64, rows)
		c2 := make([]float64, nv+rows)
		for k, p := range vars {
			A2.Set(p.j, k, cf(p))
			A2.Set(J+p.j, k, 1)
			A2.Set(2*J+p.m, k, sc[p.j])
			c2[k] = -cf(p)
		}
		for j := range J {
			A2.Set(j, nv+j, -1)
			b2[j] = t * (1 - gonumHold)
			A2.Set(J+j, nv+J+j, 1)
			b2[J+j] = 1
		}
		for m := range M {
			A2.Set(2*J+m, nv+2*J+m, 1)
			b2[2*J+m] = gpus[m]
		}
		if _, sol2, err := lp.Simplex(c2, A2, b2, gonumTol, nil); err == nil && feasibleGonum(sol2, vars, cf, sc, gpus, t) {
			best = sol2
		}
	}
	for k, p := range vars {
		// Gavel clips to [0, 1] too.
		x[jobs[p.j]][p.m] = math.Min(math.Max(best[k], 0), 1)
	}
	return x, t, nil
}

// gVar is one variable of the LP: x of row j (a job) on model m.
type gVar struct{ j, m int }

// feasible checks a solution of the second LP against the constraints with
// a tolerance, as a guard against the simplex's rare numerical failures.
func feasibleGonum(sol []float64, vars []gVar, cf func(gVar) float64, scale, gpus []float64, t float64) bool {
	got := make([]float64, len(scale))
	tm := make([]float64, len(scale))
	used := make([]float64, len(gpus))
	for k, p := range vars {
		if math.IsNaN(sol[k]) || sol[k] < -1e-7 {
			return false
		}
		got[p.j] += cf(p) * sol[k]
		tm[p.j] += sol[k]
		used[p.m] += scale[p.j] * sol[k]
	}
	for j := range got {
		if got[j] < t*(1-1e-6)-1e-9 || tm[j] > 1+1e-6 {
			return false
		}
	}
	for m := range used {
		if used[m] > gpus[m]*(1+1e-6)+1e-9 {
			return false
		}
	}
	return true
}
