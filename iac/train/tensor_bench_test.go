package train

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/elastico/elastico/iac"
)

// These benchmarks time one training step (forward, backward, Adam) on a
// mini-batch both ways: per-sample loops on flat slices (backprop below),
// and what MLP does, matrix products on gorgonia tensors (dense MatMul
// through gonum's BLAS, transposed views, preallocated results). The
// package doc records what they measured.

func benchColumns(d int) []iac.Column {
	cols := make([]iac.Column, d)
	for i := range cols {
		cols[i] = iac.Column{Feature: iac.Feature(i), Mean: 0, Std: 1, Lo: -10, Hi: 10}
	}
	return cols
}

func benchBatch(n, d int, rng *rand.Rand) ([]float64, []float64) {
	x := make([]float64, n*d)
	y := make([]float64, n)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	for i := range y {
		y[i] = 1 + 2*rng.Float64()
	}
	return x, y
}

var benchShapes = []struct{ inputs, batch int }{
	{9, 32},   // the Gavel model's inputs, the default mini-batch
	{9, 256},  // a large mini-batch
	{72, 32},  // every counter measured: 36 values and 36 masks
	{72, 256}, //
}

// denseAffine is out = Wᵀ·x + b, plainly.
func denseAffine(out []float64, l *iac.Layer, x []float64) {
	copy(out, l.B)
	for k, xk := range x {
		for j := range out {
			out[j] += float64(l.W[k*len(out)+j] * xk)
		}
	}
}

// flatScratch is the per-sample alternative's scratch: activations after
// ReLU, dropout scales, deltas.
type flatScratch struct{ act, drop, delta [][]float64 }

func newFlatScratch(hidden []int) *flatScratch {
	f := &flatScratch{}
	for _, w := range hidden {
		f.act = append(f.act, make([]float64, w))
		f.drop = append(f.drop, make([]float64, w))
		f.delta = append(f.delta, make([]float64, w))
	}
	return f
}

// backprop is the per-sample alternative to trainer.gradient (the one the
// package used before the benchmarks below): it adds one sample's gradient of ((Ŝ − y)/y)² to t.grad, with
// fresh dropout masks.
func (t *trainer) backprop(x []float64, y float64, f *flatScratch) {
	hidden := len(t.net) - 1
	p := t.c.Dropout
	keep := 1 / (1 - p)
	in := x
	for li := 0; li < hidden; li++ {
		l := &t.net[li]
		a, dr := f.act[li], f.drop[li]
		denseAffine(a, l, in)
		for j := range a {
			if a[j] < 0 {
				a[j] = 0
			}
			dr[j] = keep
			if p > 0 && t.rng.Float64() < p {
				dr[j] = 0
			}
		}
		// The next layer sees the dropped-out activations; keep them in
		// delta (free until the backward pass) to save a buffer.
		out := f.delta[li]
		for j := range a {
			out[j] = a[j] * dr[j]
		}
		in = out
	}
	lo := &t.net[hidden]
	var z [1]float64
	denseAffine(z[:], lo, in)
	pred := 1 + softplus(z[0])
	// d/dz of ((pred − y)/y)² = 2(pred − y)/y² · sigmoid(z).
	dz := 2 * (pred - y) / (y * y) * sigmoid(z[0])

	// Output layer.
	g := &t.grads[hidden]
	g.B[0] += dz
	for k, a := range in {
		g.W[k] += float64(a * dz)
	}
	// Hidden layers, last to first: delta holds dropped activations on the
	// way in and is overwritten with dL/d(pre-activation) on the way out.
	upW, upDelta := lo.W, []float64{dz}
	upOut := 1
	for li := hidden - 1; li >= 0; li-- {
		l := &t.net[li]
		a, dr, dl := f.act[li], f.drop[li], f.delta[li]
		for j := range dl {
			var s float64
			w := upW[j*upOut : (j+1)*upOut]
			for u, du := range upDelta[:upOut] {
				s += float64(w[u] * du)
			}
			if a[j] > 0 {
				dl[j] = s * dr[j]
			} else {
				dl[j] = 0
			}
		}
		var prev []float64
		if li == 0 {
			prev = x
		} else {
			prev = f.delta[li-1] // still the dropped activations of layer li-1
		}
		gl := &t.grads[li]
		for j, dj := range dl {
			gl.B[j] += dj
		}
		m := l.Out
		for k, pk := range prev {
			if pk == 0 {
				continue
			}
			row := gl.W[k*m : k*m+m]
			for j, dj := range dl {
				row[j] += float64(pk * dj)
			}
		}
		upW, upDelta, upOut = l.W, dl, l.Out
	}
}

func BenchmarkTrainStepFlat(b *testing.B) {
	for _, s := range benchShapes {
		b.Run(fmt.Sprintf("in=%d/batch=%d", s.inputs, s.batch), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			c, _ := resolve(iac.TrainConfig{Hidden: []int{64, 32}})
			t := newTrainer(benchColumns(s.inputs), c, rng)
			x, y := benchBatch(s.batch, s.inputs, rng)
			t.xTrain, t.yTrain = x, y
			t.init()
			f := newFlatScratch(c.Hidden)
			step := 0
			b.ReportAllocs()
			for b.Loop() {
				clear(t.grad)
				for i := range y {
					t.backprop(x[i*s.inputs:(i+1)*s.inputs], y[i], f)
				}
				step++
				t.adam(step, float64(s.batch))
			}
		})
	}
}

// BenchmarkTrainStepTensor times what MLP does: trainer.gradient (gorgonia
// tensors) and the same Adam step.
func BenchmarkTrainStepTensor(b *testing.B) {
	for _, s := range benchShapes {
		b.Run(fmt.Sprintf("in=%d/batch=%d", s.inputs, s.batch), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			c, _ := resolve(iac.TrainConfig{Hidden: []int{64, 32}})
			t := newTrainer(benchColumns(s.inputs), c, rng)
			t.xTrain, t.yTrain = benchBatch(s.batch, s.inputs, rng)
			t.init()
			rows := make([]int, s.batch)
			for i := range rows {
				rows[i] = i
			}
			step := 0
			b.ReportAllocs()
			for b.Loop() {
				if err := t.gradient(rows); err != nil {
					b.Fatal(err)
				}
				step++
				t.adam(step, float64(s.batch))
			}
		})
	}
}

// TestTensorGradientMatchesFlat checks that the two ways of computing a
// mini-batch gradient agree (without dropout), so that the benchmarks time
// the same work.
func TestTensorGradientMatchesFlat(t *testing.T) {
	const in, batch = 5, 4
	rng := rand.New(rand.NewPCG(3, 4))
	c, _ := resolve(iac.TrainConfig{Hidden: []int{64, 32}, Dropout: -1})
	tr := newTrainer(benchColumns(in), c, rng)
	x, y := benchBatch(batch, in, rng)
	tr.xTrain, tr.yTrain = x, y
	tr.init()
	clear(tr.grad)
	f := newFlatScratch(c.Hidden)
	for i := range y {
		tr.backprop(x[i*in:(i+1)*in], y[i], f)
	}
	flat := append([]float64(nil), tr.grad...)
	if err := tr.gradient([]int{0, 1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	for i := range flat {
		if d := flat[i] - tr.grad[i]; math.Abs(d) > 1e-12*math.Max(1, math.Abs(flat[i])) {
			t.Fatalf("gradient %d: flat %g, tensor %g", i, flat[i], tr.grad[i])
		}
	}
}
