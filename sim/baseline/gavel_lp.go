package baseline

import (
	"math"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// lpTol is the simplex's optimality tolerance on reduced costs.
const lpTol = 1e-10

// maxMin solves Gavel's max-min fairness LP (MaxMinFairnessPolicyWithPerf):
//
//	maximize   t
//	subject to Σ_m coef[j][m]·x[j][m] ≥ t   for every job j
//	           Σ_m x[j][m] ≤ 1               for every job j
//	           Σ_j scale[j]·x[j][m] ≤ gpus[m] for every model m
//	           x ≥ 0, and x[j][m] = 0 where coef[j][m] ≤ 0 or scale[j] > gpus[m]
//
// where coef[j][m] is the job's throughput on m, times its scale factor,
// over its weight and its throughput under an equal share of every model.
// x[j][m] is the fraction of time job j should run on model m. It returns
// x and the optimal t.
//
// Among the allocations with the optimal t, it then picks one with the
// most Σ_j Σ_m coef·x (a second LP with every job held at t): Gavel takes
// whatever point its solver returns, and a vertex of the first LP alone
// may leave capacity to no one. If the second LP fails numerically, the
// first's answer stands.
func maxMin(coef [][]float64, scale, gpus []float64) ([][]float64, float64, error) {
	M := len(gpus)
	x := make([][]float64, len(coef))
	for j := range x {
		x[j] = make([]float64, M)
	}
	// Variables: one per allowed (job, model) pair; rows only for jobs
	// with one at least (a job that can run nowhere would hold t at 0).
	var vars []lpVar
	var jobs []int // row index → job
	for j := range coef {
		n := len(vars)
		for m := range M {
			if coef[j][m] > 0 && scale[j] <= gpus[m] {
				vars = append(vars, lpVar{len(jobs), m})
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
	cf := func(p lpVar) float64 { return coef[jobs[p.j]][p.m] }
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
	f, sol, err := lp.Simplex(c, A, b, lpTol, basic)
	if err != nil {
		return nil, 0, errorf("Gavel's max-min LP (%d jobs, %d GPU models): %v", J, M, err)
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
			b2[j] = t * (1 - 1e-9)
			A2.Set(J+j, nv+J+j, 1)
			b2[J+j] = 1
		}
		for m := range M {
			A2.Set(2*J+m, nv+2*J+m, 1)
			b2[2*J+m] = gpus[m]
		}
		if _, sol2, err := lp.Simplex(c2, A2, b2, lpTol, nil); err == nil && feasible(sol2, vars, cf, sc, gpus, t) {
			best = sol2
		}
	}
	for k, p := range vars {
		// Gavel clips to [0, 1] too.
		x[jobs[p.j]][p.m] = math.Min(math.Max(best[k], 0), 1)
	}
	return x, t, nil
}

// lpVar is one variable of the LP: x of row j (a job) on model m.
type lpVar struct{ j, m int }

// feasible checks a solution of the second LP against the constraints with
// a tolerance, as a guard against the simplex's rare numerical failures.
func feasible(sol []float64, vars []lpVar, cf func(lpVar) float64, scale, gpus []float64, t float64) bool {
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
