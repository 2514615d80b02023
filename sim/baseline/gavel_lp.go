package baseline

import (
	"encoding/binary"
	"math"
)

// lpFace is how far below 0 a reduced cost of the max-min LP's optimum may
// be for its column to stay free in the second LP: rounding, not a loss.
const lpFace = 1e-9

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
// most Σ_j Σ_m coef·x (a second LP, over the first's optimal face): Gavel
// takes whatever point its solver returns, and a vertex of the first LP
// alone may leave capacity to no one. If the second LP fails numerically,
// the first's answer stands.
//
// Jobs with the same coefficients and scale are one class: both LPs are
// convex and symmetric in such jobs, so some optimum gives them the same
// x, and the LPs are solved over classes (a class of n jobs weighs n in
// the capacity rows and the second objective). Gavel's traces have tens
// of job types and hundreds of jobs. The LPs are solved by this package's
// simplex, tested against gonum's lp.Simplex on the unmerged LP.
func maxMin(coef [][]float64, scale, gpus []float64) ([][]float64, float64, error) {
	return maxMinClasses(coef, scale, gpus, true)
}

// maxMinClasses is maxMin, with every job its own class unless merge.
func maxMinClasses(coef [][]float64, scale, gpus []float64, merge bool) ([][]float64, float64, error) {
	cls, vars := lpClasses(coef, scale, gpus, merge, nil)
	x, _, t, err := solveMaxMin(coef, scale, gpus, cls, vars, nil)
	return x, t, err
}

// solveMaxMin solves both LPs over the classes' single-job variables vars
// and the pair columns pcs (gavel_pack.go; none: Gavel without space
// sharing), and returns every job's x, every pair column's y and t.
func solveMaxMin(coef [][]float64, scale, gpus []float64, cls []lpClass, vars []lpVar, pcs []lpPairCol) ([][]float64, []float64, float64, error) {
	M := len(gpus)
	x := make([][]float64, len(coef))
	for j := range x {
		x[j] = make([]float64, M)
	}
	if len(vars) == 0 {
		return x, nil, 0, nil
	}
	C, nv, np := len(cls), len(vars), len(pcs)
	// Columns: vars, pair columns, then t. Rows: C fairness rows
	// (t − Σ coef·x ≤ 0), C time rows, M capacity rows (over the model's
	// GPUs, so every row is of order 1).
	rows := 2*C + M
	b := make([]float64, rows)
	for i := C; i < rows; i++ {
		b[i] = 1
	}
	sp := newSimplex(b)
	cf := func(p lpVar) float64 { return coef[cls[p.j].j][p.m] }
	for _, p := range vars {
		c := &cls[p.j]
		sp.column([]int{p.j, C + p.j, 2*C + p.m}, []float64{-cf(p), 1, c.n * scale[c.j] / gpus[p.m]})
	}
	for _, pc := range pcs {
		r, v := pc.entries(cls, scale, gpus)
		sp.column(r, v)
	}
	tr, tv := make([]int, C), make([]float64, C)
	for c := range C {
		tr[c], tv[c] = c, 1
	}
	sp.column(tr, tv)
	nc := nv + np
	maxIter := 50 * (rows + nc + 1)
	obj := make([]float64, nc+1)
	obj[nc] = 1
	sp.objective(obj)
	if err := sp.solve(nil, maxIter); err != nil {
		return nil, nil, 0, errorf("Gavel's max-min LP (%d jobs in %d classes, %d pair columns, %d GPU models): %v", len(coef), C, np, M, err)
	}
	sol := make([]float64, nc+1)
	sp.values(sol)
	t := sol[nc]
	// Second LP: the first's optimal face is where every column of
	// negative reduced cost stays 0 (t is the optimum less their sum);
	// over it, the most Σ coef·x, counting each class's jobs.
	if t > 0 {
		allowed := make([]bool, len(sp.d))
		for k := range allowed {
			allowed[k] = sp.d[k] >= -lpFace
		}
		var jobs float64
		for _, c := range cls {
			jobs += c.n
		}
		clear(obj)
		for k, p := range vars {
			obj[k] = cls[p.j].n * cf(p) / jobs
		}
		for k, pc := range pcs {
			obj[nv+k] = pc.worth(cls) / jobs
		}
		sp.objective(obj)
		sol2 := make([]float64, nc+1)
		if sp.solve(allowed, maxIter) == nil {
			if sp.values(sol2); feasible(sol2, vars, pcs, cls, cf, scale, gpus, t) {
				sol = sol2
			}
		}
	}
	for k, p := range vars {
		// Gavel clips to [0, 1] too.
		v := math.Min(math.Max(sol[k], 0), 1)
		for _, j := range cls[p.j].jobs {
			x[j][p.m] = v
		}
	}
	y := make([]float64, np)
	for k := range pcs {
		y[k] = math.Min(math.Max(sol[nv+k], 0), 1)
	}
	return x, y, t, nil
}

// lpVar is one variable of the LP: x of row j (a class) on model m.
type lpVar struct{ j, m int }

// lpClass is a set of jobs with the same coefficients and scale: j is the
// first, n their number.
type lpClass struct {
	j    int
	n    float64
	jobs []int
}

// lpClasses groups the jobs that can run somewhere into classes, in order
// of first appearance (keys are the coefficients' and scale's bits: equal
// floats, and tag[j] unless tag is nil; unless merge, one class per job),
// and lists the classes' variables.
func lpClasses(coef [][]float64, scale, gpus []float64, merge bool, tag []int) ([]lpClass, []lpVar) {
	var cls []lpClass
	var vars []lpVar
	index := make(map[string]int)
	var key []byte
	for j := range coef {
		key = binary.LittleEndian.AppendUint64(key[:0], math.Float64bits(scale[j]))
		for _, v := range coef[j] {
			key = binary.LittleEndian.AppendUint64(key, math.Float64bits(v))
		}
		if tag != nil {
			key = binary.LittleEndian.AppendUint64(key, uint64(tag[j]))
		}
		if c, ok := index[string(key)]; ok && merge {
			cls[c].n++
			cls[c].jobs = append(cls[c].jobs, j)
			continue
		}
		n := len(vars)
		for m := range gpus {
			if coef[j][m] > 0 && scale[j] <= gpus[m] {
				vars = append(vars, lpVar{len(cls), m})
			}
		}
		if len(vars) == n {
			continue // runs nowhere: no rows (it would hold t at 0)
		}
		index[string(key)] = len(cls)
		cls = append(cls, lpClass{j: j, n: 1, jobs: []int{j}})
	}
	return cls, vars
}

// feasible checks a solution of the second LP against the constraints with
// a tolerance, as a guard against the simplex's rare numerical failures.
func feasible(sol []float64, vars []lpVar, pcs []lpPairCol, cls []lpClass, cf func(lpVar) float64, scale, gpus []float64, t float64) bool {
	got := make([]float64, len(cls))
	tm := make([]float64, len(cls))
	used := make([]float64, len(gpus))
	for k, p := range vars {
		if math.IsNaN(sol[k]) || sol[k] < -1e-7 {
			return false
		}
		got[p.j] += cf(p) * sol[k]
		tm[p.j] += sol[k]
		used[p.m] += cls[p.j].n * scale[cls[p.j].j] * sol[k]
	}
	for k, pc := range pcs {
		y := sol[len(vars)+k]
		if math.IsNaN(y) || y < -1e-7 {
			return false
		}
		pc.add(y, cls, scale, got, tm, used)
	}
	for c := range got {
		if got[c] < t*(1-1e-6)-1e-9 || tm[c] > 1+1e-6 {
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
