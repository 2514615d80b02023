package baseline

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// coefs builds Gavel's objective coefficients from throughputs: throughput
// × scale over the throughput under an equal share of every model.
func coefs(tput [][]float64, scale, gpus []float64) [][]float64 {
	var total float64
	for _, g := range gpus {
		total += g
	}
	out := make([][]float64, len(tput))
	for j, row := range tput {
		var prop float64
		for m, x := range row {
			prop += x * gpus[m] / total
		}
		out[j] = make([]float64, len(row))
		for m, x := range row {
			out[j][m] = x * scale[j] / prop
		}
	}
	return out
}

func TestMaxMinHandSolved(t *testing.T) {
	// One V100, two K80s; job A runs 4 and 1 samples/s on them, job B 2
	// and 1. Equal-share throughputs: A (4+2)/3 = 2, B (2+2)/3 = 4/3, so
	// the coefficients are A (2, 1/2) and B (3/2, 3/4). Both jobs use all
	// of their time and the V100 is full: A gets a of the V100 and 1−a of
	// a K80, B the rest of the V100 and a of a K80. A = 1/2 + 3a/2 and
	// B = 3/2 − 3a/4 meet at a = 4/9: t = 7/6.
	tput := [][]float64{{4, 1}, {2, 1}}
	scale := []float64{1, 1}
	gpus := []float64{1, 2}
	x, opt, err := maxMin(coefs(tput, scale, gpus), scale, gpus)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float64{{4.0 / 9, 5.0 / 9}, {5.0 / 9, 4.0 / 9}}
	if math.Abs(opt-7.0/6) > 1e-9 {
		t.Errorf("t = %.12g, want 7/6", opt)
	}
	for j := range want {
		for m := range want[j] {
			if math.Abs(x[j][m]-want[j][m]) > 1e-7 {
				t.Errorf("x = %v, want %v", x, want)
			}
		}
	}
}

func TestMaxMinEqualShare(t *testing.T) {
	// One GPU of each model, two jobs: whatever their speeds, each gets
	// half of each model and exactly its equal-share throughput (t = 1).
	tput := [][]float64{{4, 1}, {2, 1}}
	scale := []float64{1, 1}
	gpus := []float64{1, 1}
	x, opt, err := maxMin(coefs(tput, scale, gpus), scale, gpus)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(opt-1) > 1e-9 {
		t.Errorf("t = %g, want 1", opt)
	}
	for j := range x {
		for m := range x[j] {
			if math.Abs(x[j][m]-0.5) > 1e-7 {
				t.Errorf("x = %v, want every entry 1/2", x)
			}
		}
	}
}

func TestMaxMinComparativeAdvantage(t *testing.T) {
	// Four jobs on one V100 and one K80: two gain 4× from the V100, two
	// only 1.2×. With time to spare per job, the V100 goes to the jobs
	// that gain most from it, the K80 to the others.
	tput := [][]float64{{4, 1}, {4, 1}, {1.2, 1}, {1.2, 1}}
	scale := []float64{1, 1, 1, 1}
	gpus := []float64{1, 1}
	x, opt, err := maxMin(coefs(tput, scale, gpus), scale, gpus)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("x = %v, t = %g", x, opt)
	if !(x[0][0] > x[2][0] && x[1][0] > x[3][0] && x[2][1] > x[0][1]) {
		t.Errorf("x = %v: the V100 should go to jobs 0 and 1", x)
	}
	// Against the heterogeneity-agnostic split (a quarter of each model
	// to each job), every job does at least as well.
	c := coefs(tput, scale, gpus)
	for j := range x {
		got := c[j][0]*x[j][0] + c[j][1]*x[j][1]
		agn := (c[j][0] + c[j][1]) / 4
		if got < agn-1e-9 {
			t.Errorf("job %d: %g of its equal share, %g agnostic", j, got, agn)
		}
	}
}

func TestMaxMinScaleAndInfeasible(t *testing.T) {
	// A 4-GPU job on a model with 2 GPUs gets none of it, and a job that
	// can run nowhere does not pull t to 0.
	tput := [][]float64{{4, 1}, {2, 1}, {3, 0}}
	scale := []float64{4, 1, 8}
	gpus := []float64{2, 8}
	x, opt, err := maxMin(coefs(tput, scale, gpus), scale, gpus)
	if err != nil {
		t.Fatal(err)
	}
	if x[0][0] != 0 || opt <= 0 || x[2][0] != 0 || x[2][1] != 0 {
		t.Errorf("x = %v, t = %g", x, opt)
	}
	used := 4*x[0][1] + x[1][1]
	if used > 8+1e-7 {
		t.Errorf("K80s used %g of 8", used)
	}
}

// gavelShape draws n jobs from 26 job types (throughputs on each of the
// models, fastest first) and Gavel's scale factors, so that identical
// jobs repeat as in Gavel's trace; it returns their coefficients.
func gavelShape(rng *rand.Rand, n int, gpus []float64) ([][]float64, []float64) {
	const types = 26
	tp := make([][]float64, types)
	for k := range tp {
		tp[k] = make([]float64, len(gpus))
		r := 1 + 9*rng.Float64()
		for m := range tp[k] {
			tp[k][m] = r
			r *= 0.2 + 0.7*rng.Float64()
		}
	}
	scales := []float64{1, 1, 1, 1, 1, 1, 2, 2, 4, 8}
	tput := make([][]float64, n)
	scale := make([]float64, n)
	for j := range tput {
		tput[j] = tp[rng.IntN(types)]
		scale[j] = scales[rng.IntN(len(scales))]
	}
	return coefs(tput, scale, gpus), scale
}

// BenchmarkGavelMaxMin times the LP at the replay's shapes: 3 models of 36
// GPUs, jobs of Gavel's 26 types (classes repeat), and distinct jobs.
func BenchmarkGavelMaxMin(b *testing.B) {
	gpus := []float64{36, 36, 36}
	for _, n := range []int{200, 650, 2000} {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			coef, scale := gavelShape(rand.New(rand.NewPCG(1, uint64(n))), n, gpus)
			for b.Loop() {
				if _, _, err := maxMin(coef, scale, gpus); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("distinct=100", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(2, 100))
		coef := make([][]float64, 100)
		scale := make([]float64, 100)
		for j := range coef {
			coef[j] = []float64{0.5 + 2*rng.Float64(), 0.5 + 2*rng.Float64(), 0.5 + 2*rng.Float64()}
			scale[j] = []float64{1, 2, 4, 8}[rng.IntN(4)]
			for m := range coef[j] {
				coef[j][m] *= scale[j]
			}
		}
		for b.Loop() {
			if _, _, err := maxMin(coef, scale, gpus); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// randomLP draws a max-min instance: M models of a few GPUs each, jobs of
// scale 1 to 8 (some larger than a model), some throughputs 0, and, when
// ties, throughputs and weights from small sets, with duplicated jobs.
func randomLP(rng *rand.Rand, J, M int, ties bool) (coef [][]float64, scale, gpus []float64) {
	gpus = make([]float64, M)
	for m := range gpus {
		gpus[m] = []float64{1, 2, 4, 6, 8, 12, 36}[rng.IntN(7)]
	}
	tput := make([][]float64, J)
	scale = make([]float64, J)
	w := make([]float64, J)
	for j := range tput {
		if ties && j > 0 && rng.IntN(3) == 0 {
			k := rng.IntN(j)
			tput[j], scale[j], w[j] = tput[k], scale[k], w[k]
			continue
		}
		tput[j] = make([]float64, M)
		for m := range tput[j] {
			switch {
			case rng.IntN(6) == 0:
			case ties:
				tput[j][m] = float64(1 + rng.IntN(3))
			default:
				tput[j][m] = 0.1 + 10*rng.Float64()
			}
		}
		scale[j] = []float64{1, 2, 4, 8}[rng.IntN(4)]
		w[j] = 1
		if ties {
			w[j] = []float64{1, 1, 2, 0.5}[rng.IntN(4)]
		}
	}
	coef = make([][]float64, J)
	for j, row := range coefs(tput, scale, gpus) {
		coef[j] = make([]float64, M)
		for m, c := range row {
			if c > 0 && !math.IsInf(c, 0) {
				coef[j][m] = c / w[j]
			}
		}
	}
	return coef, scale, gpus
}

// checkLP fails t unless x is feasible for the LP at level opt, within tol
// (relative to each constraint's bound), and returns Σ coef·x.
func checkLP(t *testing.T, coef [][]float64, scale, gpus []float64, x [][]float64, opt, tol float64) float64 {
	t.Helper()
	used := make([]float64, len(gpus))
	var sum float64
	for j := range coef {
		var got, tm float64
		can := false
		for m, v := range x[j] {
			if v < -tol || ((coef[j][m] <= 0 || scale[j] > gpus[m]) && v != 0) {
				t.Fatalf("x[%d][%d] = %g (coef %g, scale %g, %g GPUs)", j, m, v, coef[j][m], scale[j], gpus[m])
			}
			if coef[j][m] > 0 && scale[j] <= gpus[m] {
				can = true
			}
			got += coef[j][m] * v
			tm += v
			used[m] += scale[j] * v
		}
		if can && got < opt-tol*math.Max(1, opt) {
			t.Fatalf("job %d gets %.12g, below t = %.12g", j, got, opt)
		}
		if tm > 1+tol {
			t.Fatalf("job %d runs %.12g of its time", j, tm)
		}
		sum += got
	}
	for m := range used {
		if used[m] > gpus[m]*(1+tol) {
			t.Fatalf("model %d: %.12g of %g GPUs used", m, used[m], gpus[m])
		}
	}
	return sum
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol*math.Max(1, math.Abs(b)) }

func TestMaxMinAgainstGonum(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 150 {
		J := 1 + rng.IntN(12)
		if i%5 == 0 {
			J = 20 + rng.IntN(41)
		}
		M := 1 + rng.IntN(4)
		coef, scale, gpus := randomLP(rng, J, M, i%2 == 1)
		x, opt, err := maxMin(coef, scale, gpus)
		if err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
		gx, gopt, err := maxMinGonum(coef, scale, gpus)
		if err != nil {
			t.Fatalf("instance %d: gonum: %v", i, err)
		}
		if !near(opt, gopt, 1e-7) {
			t.Fatalf("instance %d (J %d, M %d): t = %.12g, gonum %.12g", i, J, M, opt, gopt)
		}
		sum := checkLP(t, coef, scale, gpus, x, opt, 1e-7)
		gsum := checkLP(t, coef, scale, gpus, gx, gopt, 1e-6)
		if !near(sum, gsum, 1e-7) {
			t.Fatalf("instance %d (J %d, M %d): Σ coef·x = %.12g, gonum %.12g", i, J, M, sum, gsum)
		}
	}
}

func TestMaxMinClassMerge(t *testing.T) {
	// Many copies of a few job types: the LP over classes has the LP over
	// every job's optimum, and its second objective's.
	rng := rand.New(rand.NewPCG(8, 8))
	for i := range 30 {
		M := 1 + rng.IntN(4)
		types, tscale, _ := randomLP(rng, 2+rng.IntN(6), M, i%2 == 1)
		gpus := make([]float64, M)
		for m := range gpus {
			gpus[m] = []float64{4, 8, 12, 36}[rng.IntN(4)]
		}
		J := 10 + rng.IntN(200)
		if i < 10 {
			J = 10 + rng.IntN(40) // small enough for gonum
		}
		coef := make([][]float64, J)
		scale := make([]float64, J)
		for j := range coef {
			k := rng.IntN(len(types))
			coef[j], scale[j] = types[k], tscale[k]
		}
		x, opt, err := maxMinClasses(coef, scale, gpus, true)
		if err != nil {
			t.Fatal(err)
		}
		ux, uopt, err := maxMinClasses(coef, scale, gpus, false)
		if err != nil {
			t.Fatal(err)
		}
		if !near(opt, uopt, 1e-9) {
			t.Fatalf("instance %d (J %d, M %d): t = %.12g merged, %.12g unmerged", i, J, M, opt, uopt)
		}
		sum := checkLP(t, coef, scale, gpus, x, opt, 1e-7)
		usum := checkLP(t, coef, scale, gpus, ux, uopt, 1e-7)
		if !near(sum, usum, 1e-7) {
			t.Fatalf("instance %d (J %d, M %d): Σ coef·x = %.12g merged, %.12g unmerged", i, J, M, sum, usum)
		}
		if i < 10 {
			gx, gopt, err := maxMinGonum(coef, scale, gpus)
			if err != nil {
				t.Fatal(err)
			}
			if !near(opt, gopt, 1e-7) {
				t.Fatalf("instance %d (J %d, M %d): t = %.12g merged, gonum %.12g", i, J, M, opt, gopt)
			}
			if gsum := checkLP(t, coef, scale, gpus, gx, gopt, 1e-6); !near(sum, gsum, 1e-7) {
				t.Fatalf("instance %d (J %d, M %d): Σ coef·x = %.12g merged, gonum %.12g", i, J, M, sum, gsum)
			}
		}
	}
}
