package baseline

import (
	"math"
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
