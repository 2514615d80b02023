package baseline

import "math"

// Tolerances of the simplex. Its LPs are small and well scaled (entries of
// order 1, rows scaled so), so absolute tolerances serve.
const (
	spOpt   = 1e-11 // a reduced cost above it improves the objective
	spPivot = 1e-9  // smallest entry of the entering column that may pivot
	spDrop  = 1e-14 // entries below it are rounding residue, taken as 0
	spTie   = 1e-12 // ratios within it are ties
)

// simplex is a revised primal simplex for
//
//	maximize c·x subject to A·x ≤ b, x ≥ 0, with b ≥ 0,
//
// starting from the slack basis, which b ≥ 0 makes feasible. Columns are
// A's (sparse, a few entries each), then one slack per row. It keeps the
// basis inverse explicitly (dense, updated in place at every pivot,
// skipping zeros), which for this package's LPs — a few hundred rows,
// a few hundred pivots — costs less than a tableau or refactorizing
// (gonum's lp.Simplex refactorizes at every pivot). A second objective can
// continue from the first's optimal basis, over its optimal face (see
// solve's allowed).
//
// Pricing is Dantzig's (the largest reduced cost); after a run of
// degenerate pivots it falls back to Bland's rule, which cannot cycle,
// until the objective moves again.
type simplex struct {
	m, n   int   // rows; A's columns (slack i is column n+i)
	start  []int // A by column: column k's entries are row and val
	row    []int // [start[k], start[k+1])
	val    []float64
	b      []float64
	binv   []float64 // B⁻¹, m × m by column: binv[j*m+i] = (B⁻¹)ᵢⱼ
	xb     []float64 // the basic variables' values, by row
	basis  []int     // the column basic in each row
	basic  []bool    // by column
	c      []float64 // the objective, by column
	y      []float64 // the duals c_B·B⁻¹
	d      []float64 // reduced costs c − y·A, by column (0 for basic ones)
	alpha  []float64 // scratch: the entering column, B⁻¹·A_q
	nz, rz []int     // scratch: alpha's nonzero rows; B⁻¹'s row r's nonzero columns
}

// newSimplex returns an LP of len(b) constraints with right-hand sides b
// (≥ 0) and no columns yet: add them with column.
func newSimplex(b []float64) *simplex {
	m := len(b)
	return &simplex{m: m, b: b, start: []int{0}}
}

// column adds a column of A, with entries vals in rows rows.
func (s *simplex) column(rows []int, vals []float64) {
	for e, r := range rows {
		if vals[e] != 0 {
			s.row = append(s.row, r)
			s.val = append(s.val, vals[e])
		}
	}
	s.start = append(s.start, len(s.row))
	s.n++
}

// init sets up the slack basis; the first objective call does it.
func (s *simplex) init() {
	m, cols := s.m, s.n+s.m
	s.binv = make([]float64, m*m)
	s.xb = make([]float64, m)
	s.basis = make([]int, m)
	s.basic = make([]bool, cols)
	s.c = make([]float64, cols)
	s.y = make([]float64, m)
	s.d = make([]float64, cols)
	s.alpha = make([]float64, m)
	for i := range m {
		s.binv[i*m+i] = 1
		s.xb[i] = s.b[i]
		s.basis[i] = s.n + i
		s.basic[s.n+i] = true
	}
}

// objective installs c (one entry per column, slacks included, or fewer:
// the rest 0) as the objective, at the current basis.
func (s *simplex) objective(c []float64) {
	if s.binv == nil {
		s.init()
	}
	clear(s.c)
	copy(s.c, c)
	m := s.m
	for j := range m {
		col := s.binv[j*m : (j+1)*m]
		var y float64
		for i, v := range col {
			if v != 0 {
				y += s.c[s.basis[i]] * v
			}
		}
		s.y[j] = y
	}
}

// value is the objective's value at the current basis.
func (s *simplex) value() float64 {
	var z float64
	for i, k := range s.basis {
		z += s.c[k] * s.xb[i]
	}
	return z
}

// values sets dst[k] to column k's value at the current basis, for the
// first len(dst) columns.
func (s *simplex) values(dst []float64) {
	clear(dst)
	for i, k := range s.basis {
		if k < len(dst) {
			dst[k] = s.xb[i]
		}
	}
}

// price computes the reduced costs and returns the entering column (-1
// if none improves): the largest reduced cost, or under Bland's rule the
// first improving column. Only columns with allowed[k] enter (nil: all).
func (s *simplex) price(allowed []bool, bland bool) int {
	q, best := -1, spOpt
	for k := range s.d {
		if s.basic[k] {
			s.d[k] = 0
			continue
		}
		dk := s.c[k]
		if k < s.n {
			for e := s.start[k]; e < s.start[k+1]; e++ {
				dk -= s.y[s.row[e]] * s.val[e]
			}
		} else {
			dk -= s.y[k-s.n]
		}
		s.d[k] = dk
		if dk > best && (allowed == nil || allowed[k]) && (!bland || q < 0) {
			q, best = k, dk
		}
	}
	return q
}

// solve pivots to an optimum of the installed objective, entering only
// columns k with allowed[k] (nil: all). It fails if the LP is unbounded
// or maxIter pivots do not reach an optimum. After it, d holds the
// optimum's reduced costs.
func (s *simplex) solve(allowed []bool, maxIter int) error {
	degenerate := 0
	bland := false
	for range maxIter {
		q := s.price(allowed, bland)
		if q < 0 {
			return nil
		}
		s.enter(q)
		r := s.ratio(bland)
		if r < 0 {
			return errorf("unbounded LP")
		}
		if s.xb[r] > spTie {
			degenerate, bland = 0, false
		} else if degenerate++; degenerate > 2*s.m {
			bland = true
		}
		s.pivot(r, q)
	}
	return errorf("no optimum after %d pivots", maxIter)
}

// enter sets alpha to B⁻¹·A_q and nz to its nonzero rows.
func (s *simplex) enter(q int) {
	m := s.m
	a := s.alpha
	if q >= s.n {
		copy(a, s.binv[(q-s.n)*m:(q-s.n+1)*m])
	} else {
		clear(a)
		for e := s.start[q]; e < s.start[q+1]; e++ {
			v := s.val[e]
			for i, b := range s.binv[s.row[e]*m : (s.row[e]+1)*m] {
				a[i] += v * b
			}
		}
	}
	s.nz = s.nz[:0]
	for i, v := range a {
		if math.Abs(v) < spDrop {
			a[i] = 0
		} else {
			s.nz = append(s.nz, i)
		}
	}
}

// ratio is the minimum-ratio test for the entering column in alpha: the
// row that leaves, or -1 if the column can grow without bound. Among ties
// it takes the largest pivot (for stability), or under Bland's rule the
// smallest leaving column.
func (s *simplex) ratio(bland bool) int {
	theta := math.Inf(1)
	for _, i := range s.nz {
		if a := s.alpha[i]; a > spPivot {
			if t := max(s.xb[i], 0) / a; t < theta {
				theta = t
			}
		}
	}
	if math.IsInf(theta, 1) {
		return -1
	}
	lim := theta + spTie*(1+theta)
	out := -1
	for _, i := range s.nz {
		a := s.alpha[i]
		if a <= spPivot || max(s.xb[i], 0)/a > lim {
			continue
		}
		switch {
		case out < 0:
			out = i
		case bland:
			if s.basis[i] < s.basis[out] {
				out = i
			}
		case a > s.alpha[out]:
			out = i
		}
	}
	return out
}

// pivot makes column q, whose B⁻¹·A_q is in alpha, basic in row r.
func (s *simplex) pivot(r, q int) {
	m := s.m
	a := s.alpha
	ar := a[r]
	// Duals: y += d_q/α_r · (row r of B⁻¹); then B⁻¹'s row r goes to
	// every row i, times α_i/α_r.
	f := s.d[q] / ar
	s.rz = s.rz[:0]
	for j := range m {
		p := s.binv[j*m+r]
		if p == 0 {
			continue
		}
		s.y[j] += f * p
		s.rz = append(s.rz, j)
	}
	theta := s.xb[r] / ar
	for _, i := range s.nz {
		s.xb[i] -= theta * a[i]
		if s.xb[i] < 0 && s.xb[i] > -spTie {
			s.xb[i] = 0 // rounding below a bound of 0
		}
	}
	s.xb[r] = theta
	dense := 2*len(s.nz) > m // then a plain loop is faster than the gather
	for _, j := range s.rz {
		col := s.binv[j*m : (j+1)*m]
		p := col[r] / ar
		if dense {
			col = col[:len(a)]
			for i, v := range a {
				col[i] -= v * p
			}
		} else {
			for _, i := range s.nz {
				col[i] -= a[i] * p
			}
		}
		col[r] = p
	}

	s.basic[s.basis[r]] = false
	s.basic[q] = true
	s.basis[r] = q
}
