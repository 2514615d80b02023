package baseline

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/optimize/convex/lp"
)

// randomSpeeds draws a pair speed table over K kinds and M models: each
// kind's speed beside another between 0.3 and 1, some pairs forbidden.
func randomSpeeds(rng *rand.Rand, K, M int) pairSpeed {
	sp := make([][][]float64, K)
	for a := range sp {
		sp[a] = make([][]float64, K)
		for b := range sp[a] {
			sp[a][b] = make([]float64, M)
			for m := range M {
				if rng.IntN(5) > 0 {
					sp[a][b][m] = 0.3 + 0.7*rng.Float64()
				}
			}
		}
	}
	return func(a, b, m int) (float64, float64, bool) {
		sa, sb := sp[a][b][m], sp[b][a][m]
		return sa, sb, sa > 0 && sb > 0
	}
}

// gonumPacked is the packed LP over every job and every pair of jobs
// (those of equal scale that speed allows, with no pruning), unmerged,
// with gonum's lp.Simplex; it returns t and the most Σ of the objective's
// terms at t (a second LP, every job held at t(1−gonumHold)).
func gonumPacked(coef [][]float64, scale, gpus []float64, kind []int, speed pairSpeed) (float64, float64, error) {
	M, J := len(gpus), len(coef)
	type col struct {
		i, k, m int // k < 0: job i alone
		ci, ck  float64
	}
	var cols []col
	can := make([]bool, J)
	for i := range J {
		for m := range M {
			if coef[i][m] > 0 && scale[i] <= gpus[m] {
				cols = append(cols, col{i, -1, m, coef[i][m], 0})
				can[i] = true
			}
		}
	}
	for i := range J {
		for k := i + 1; k < J; k++ {
			for m := range M {
				if !can[i] || !can[k] || scale[i] != scale[k] || coef[i][m] <= 0 || coef[k][m] <= 0 || scale[i] > gpus[m] {
					continue
				}
				if si, sk, ok := speed(kind[i], kind[k], m); ok {
					cols = append(cols, col{i, k, m, coef[i][m] * si, coef[k][m] * sk})
				}
			}
		}
	}
	var rowsOf []int // jobs with a row
	row := make([]int, J)
	for i := range J {
		row[i] = -1
		if can[i] {
			row[i] = len(rowsOf)
			rowsOf = append(rowsOf, i)
		}
	}
	R := len(rowsOf)
	if R == 0 {
		return 0, 0, nil
	}
	n := len(cols)
	rows := 2*R + M
	// Columns: cols, t, slacks. Rows: fairness (t − Σ c·x + s = 0), time,
	// capacity.
	A := mat.NewDense(rows, n+1+rows, nil)
	b := make([]float64, rows)
	for c, x := range cols {
		A.Set(row[x.i], c, -x.ci)
		A.Set(R+row[x.i], c, 1)
		if x.k >= 0 {
			A.Set(row[x.k], c, -x.ck)
			A.Set(R+row[x.k], c, 1)
		}
		A.Set(2*R+x.m, c, scale[x.i])
	}
	basic := make([]int, rows)
	for r := range R {
		A.Set(r, n, 1)
		b[R+r] = 1
	}
	for m := range M {
		b[2*R+m] = gpus[m]
	}
	for r := range rows {
		A.Set(r, n+1+r, 1)
		basic[r] = n + 1 + r
	}
	c := make([]float64, n+1+rows)
	c[n] = -1
	f, _, err := lp.Simplex(c, A, b, gonumTol, basic)
	if err != nil {
		return 0, 0, err
	}
	t := -f
	A2 := mat.NewDense(rows, n+rows, nil)
	b2 := make([]float64, rows)
	c2 := make([]float64, n+rows)
	for k, x := range cols {
		A2.Set(row[x.i], k, x.ci)
		A2.Set(R+row[x.i], k, 1)
		c2[k] = -x.ci
		if x.k >= 0 {
			A2.Set(row[x.k], k, x.ck)
			A2.Set(R+row[x.k], k, 1)
			c2[k] -= x.ck
		}
		A2.Set(2*R+x.m, k, scale[x.i])
	}
	for r := range R {
		A2.Set(r, n+r, -1)
		b2[r] = t * (1 - gonumHold)
		A2.Set(R+r, n+R+r, 1)
		b2[R+r] = 1
	}
	for m := range M {
		A2.Set(2*R+m, n+2*R+m, 1)
		b2[2*R+m] = gpus[m]
	}
	f2, _, err := lp.Simplex(c2, A2, b2, gonumTol, nil)
	if err != nil {
		return t, math.NaN(), nil
	}
	return t, -f2, nil
}

// checkPacked fails t unless x and px are feasible for the packed LP at
// level opt within tol, and returns Σ of the objective's terms.
func checkPacked(t *testing.T, coef [][]float64, scale, gpus []float64, kind []int, speed pairSpeed, x [][]float64, px []lpPairX, opt, tol float64) float64 {
	t.Helper()
	J := len(coef)
	got, tm := make([]float64, J), make([]float64, J)
	used := make([]float64, len(gpus))
	for j := range J {
		for m, v := range x[j] {
			got[j] += coef[j][m] * v
			tm[j] += v
			used[m] += scale[j] * v
		}
	}
	for _, p := range px {
		si, sk, ok := speed(kind[p.i], kind[p.k], p.m)
		if !ok || p.x < 0 || scale[p.i] != scale[p.k] || p.i >= p.k {
			t.Fatalf("pair %+v: speeds %g, %g, %v; scales %g, %g", p, si, sk, ok, scale[p.i], scale[p.k])
		}
		got[p.i] += coef[p.i][p.m] * si * p.x
		got[p.k] += coef[p.k][p.m] * sk * p.x
		tm[p.i] += p.x
		tm[p.k] += p.x
		used[p.m] += scale[p.i] * p.x
	}
	var sum float64
	for j := range J {
		can := false
		for m := range gpus {
			can = can || (coef[j][m] > 0 && scale[j] <= gpus[m])
		}
		if can && got[j] < opt-tol*math.Max(1, opt) {
			t.Fatalf("job %d gets %.12g, below t = %.12g", j, got[j], opt)
		}
		if tm[j] > 1+tol {
			t.Fatalf("job %d runs %.12g of its time", j, tm[j])
		}
		sum += got[j]
	}
	for m := range used {
		if used[m] > gpus[m]*(1+tol) {
			t.Fatalf("model %d: %.12g of %g GPUs used", m, used[m], gpus[m])
		}
	}
	return sum
}

// TestMaxMinPackedAgainstGonum checks the packed LP, merged into classes
// and not, against gonum's over every job and every pair (the pairs it
// prunes included) on small random instances.
func TestMaxMinPackedAgainstGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 4))
	gains := 0 // instances where packing raises t
	for i := range 60 {
		J := 2 + rng.IntN(7)
		M := 1 + rng.IntN(3)
		coef, scale, gpus := randomLP(rng, J, M, i%2 == 1)
		for m := range gpus {
			gpus[m] = float64(1 + rng.IntN(4)) // fewer GPUs than jobs: contested
		}
		for j := range scale {
			if rng.IntN(2) == 0 {
				scale[j] = 1 // more pairs of equal scale
				for m := range coef[j] {
					if coef[j][m] > 0 {
						coef[j][m] = 0.2 + rng.Float64()
					}
				}
			}
		}
		K := 1 + rng.IntN(4)
		kind := make([]int, J)
		for j := range kind {
			kind[j] = rng.IntN(K)
		}
		speed := randomSpeeds(rng, K, M)
		gt, gsum, err := gonumPacked(coef, scale, gpus, kind, speed)
		if err != nil {
			t.Fatalf("instance %d: gonum: %v", i, err)
		}
		if _, ut, _ := maxMin(coef, scale, gpus); gt > ut*(1+1e-6) {
			gains++
		}
		for _, merge := range []bool{true, false} {
			x, px, opt, err := maxMinPacked(coef, scale, gpus, kind, speed, merge)
			if err != nil {
				t.Fatalf("instance %d: %v", i, err)
			}
			if !near(opt, gt, 1e-7) {
				t.Fatalf("instance %d (J %d, M %d, merge %v): t = %.12g, gonum %.12g", i, J, M, merge, opt, gt)
			}
			sum := checkPacked(t, coef, scale, gpus, kind, speed, x, px, opt, 1e-7)
			if !math.IsNaN(gsum) && !near(sum, gsum, 1e-6) {
				t.Fatalf("instance %d (J %d, M %d, merge %v): Σ = %.12g, gonum %.12g", i, J, M, merge, sum, gsum)
			}
		}
	}
	if gains < 10 {
		t.Errorf("packing raised t in %d of 60 instances: too few to test the pairs", gains)
	}
}

// TestMaxMinPackedPairHelps: two jobs on one GPU, each 0.8 as fast beside
// the other as alone. Taking turns gives each half the GPU; sharing it,
// 0.8 of it.
func TestMaxMinPackedPairHelps(t *testing.T) {
	coef := [][]float64{{1}, {1}}
	scale, gpus := []float64{1, 1}, []float64{1}
	_, t0, err := maxMin(coef, scale, gpus)
	if err != nil {
		t.Fatal(err)
	}
	speed := func(a, b, m int) (float64, float64, bool) { return 0.8, 0.8, true }
	x, px, t1, err := maxMinPacked(coef, scale, gpus, []int{0, 1}, speed, true)
	if err != nil {
		t.Fatal(err)
	}
	if !near(t0, 0.5, 1e-9) || !near(t1, 0.8, 1e-9) {
		t.Fatalf("t = %g unpacked (want 0.5), %g packed (want 0.8)", t0, t1)
	}
	if len(px) != 1 || !near(px[0].x, 1, 1e-9) || x[0][0] > 1e-9 || x[1][0] > 1e-9 {
		t.Fatalf("x %v, pairs %+v: want the pair all the time", x, px)
	}
	// Jobs of one class pair among themselves: four identical jobs on two
	// GPUs.
	coef4 := [][]float64{{1}, {1}, {1}, {1}}
	_, px, t4, err := maxMinPacked(coef4, []float64{1, 1, 1, 1}, []float64{2}, []int{0, 0, 0, 0}, speed, true)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, p := range px {
		sum += p.x
	}
	if !near(t4, 0.8, 1e-9) || len(px) != 6 || !near(sum, 2, 1e-9) {
		t.Fatalf("four jobs: t %g (want 0.8), pairs %+v (want the 6, 2 GPUs' worth)", t4, px)
	}
}

// TestMaxMinPackedNoPairHelps: when no pair beats taking turns (speeds
// summing to at most 1, or pairs not allowed, or jobs of other scales),
// the packed LP's allocation is the unpacked one's.
func TestMaxMinPackedNoPairHelps(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range 30 {
		coef, scale, gpus := randomLP(rng, 2+rng.IntN(30), 1+rng.IntN(3), i%2 == 1)
		kind := make([]int, len(coef))
		for j := range kind {
			kind[j] = j % 3
		}
		speed := []pairSpeed{
			func(a, b, m int) (float64, float64, bool) { return 0.5, 0.5, true },
			func(a, b, m int) (float64, float64, bool) { return 0.9, 0.1, true },
			func(a, b, m int) (float64, float64, bool) { return 0.9, 0.9, false },
		}[i%3]
		want, wt, err := maxMin(coef, scale, gpus)
		if err != nil {
			t.Fatal(err)
		}
		x, px, pt, err := maxMinPacked(coef, scale, gpus, kind, speed, true)
		if err != nil {
			t.Fatal(err)
		}
		if len(px) != 0 || pt != wt || fmt.Sprint(x) != fmt.Sprint(want) {
			t.Fatalf("instance %d: t %g, pairs %v; unpacked t %g; x differ: %v", i, pt, px, wt, fmt.Sprint(x) != fmt.Sprint(want))
		}
	}
}

// TestMaxMinPackedDeterministic: the same instance twice gives the same
// allocation, pair for pair.
func TestMaxMinPackedDeterministic(t *testing.T) {
	gpus := []float64{36, 36, 36}
	coef, scale, kind, speed := packedShape(rand.New(rand.NewPCG(5, 5)), 150, gpus)
	x1, p1, t1, err := maxMinPacked(coef, scale, gpus, kind, speed, true)
	if err != nil {
		t.Fatal(err)
	}
	x2, p2, t2, _ := maxMinPacked(coef, scale, gpus, kind, speed, true)
	if t1 != t2 || fmt.Sprint(x1) != fmt.Sprint(x2) || fmt.Sprint(p1) != fmt.Sprint(p2) {
		t.Fatal("two solves of one instance differ")
	}
	if len(p1) == 0 {
		t.Fatal("no pair allocated: the instance should pack")
	}
}

// packedShape is gavelShape with every job's kind its type, half the
// pairs of kinds allowed, and speeds between 0.4 and 0.95 beside another.
func packedShape(rng *rand.Rand, n int, gpus []float64) ([][]float64, []float64, []int, pairSpeed) {
	coef, scale := gavelShape(rng, n, gpus)
	kind := make([]int, n)
	ids := map[string]int{}
	for j := range kind {
		k := fmt.Sprint(coef[j], scale[j])
		if _, ok := ids[k]; !ok {
			ids[k] = len(ids)
		}
		kind[j] = ids[k]
	}
	K := len(ids)
	M := len(gpus)
	sp := make([]float64, K*K*M)
	for k := range sp {
		sp[k] = 0.4 + 0.55*rng.Float64()
	}
	ok := make([]bool, K*K)
	for a := range K {
		for b := a; b < K; b++ {
			// About the share of the replay's same-scale pairs that fit
			// one GPU (SM shares, memory).
			ok[a*K+b] = rng.IntN(2) == 0
			ok[b*K+a] = ok[a*K+b]
		}
	}
	return coef, scale, kind, func(a, b, m int) (float64, float64, bool) {
		return sp[(a*K+b)*M+m], sp[(b*K+a)*M+m], ok[a*K+b]
	}
}

// BenchmarkGavelMaxMinPacked times the packed LP at the replay's shapes:
// 3 models of 36 GPUs, jobs of Gavel's 26 types and scales.
func BenchmarkGavelMaxMinPacked(b *testing.B) {
	gpus := []float64{36, 36, 36}
	for _, n := range []int{200, 650} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			coef, scale, kind, speed := packedShape(rand.New(rand.NewPCG(1, uint64(n))), n, gpus)
			for b.Loop() {
				if _, _, _, err := maxMinPacked(coef, scale, gpus, kind, speed, true); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
