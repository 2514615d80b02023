package iac

import (
	"fmt"
	"math"

	"github.com/elastico/elastico"
)

// MaxWidth is the widest hidden layer an MLP may have: prediction keeps its
// activations in fixed arrays on the stack, which is why it allocates nothing.
const MaxWidth = 256

// MLP is the default interference predictor: standardized inputs, hidden
// layers with ReLU, and one output z mapped to Ŝ = 1 + softplus(z), so it
// never predicts a speed-up, capped at the worst slowdown it was trained
// on. An MLP is immutable once built (by [Decode], [Default], [NewMLP] or
// package iac/train) and safe for concurrent use.
type MLP struct {
	cols   []Column
	layers []Layer // the hidden layers, then the output layer (Out = 1)
	// maxSlowdown caps predictions at the worst slowdown of the training
	// data: with the inputs clamped to their training range, the model
	// answers only within what it has seen.
	maxSlowdown float64
	info        ModelInfo
	sides       inputSides // the inputs by profile, for the first layer
}

// Layer is a dense layer: out = Wᵀ·in + B, W input-major (In×Out: W[k*Out+j]
// weighs input k into unit j).
type Layer struct {
	In, Out int
	W, B    []float64
}

// NewMLP builds a model from its parts: the inputs, the hidden layers (ReLU)
// then the output layer (one unit), the cap on predictions, and how it was
// trained. It checks them as [Decode] checks a model file. The model keeps
// cols and layers (it copies only a layer with a subnormal weight, which it
// zeroes): the caller must not change them afterwards.
func NewMLP(cols []Column, layers []Layer, maxSlowdown float64, info ModelInfo) (*MLP, error) {
	m := newMLP(cols, layers, maxSlowdown, info)
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("iac: NewMLP: %w", err)
	}
	return m, nil
}

var _ elastico.Predictor = (*MLP)(nil)

// StableAnswers marks the MLP as an elastico.StablePredictor: its answer
// depends on the two profiles alone, and it never changes once built, so a
// scheduler may keep its answers between epochs.
func (m *MLP) StableAnswers() {}

var _ elastico.StablePredictor = (*MLP)(nil)

// Slowdown returns Ŝ_{victim|aggressor} ≥ 1 (elastico.Predictor). It
// allocates nothing.
func (m *MLP) Slowdown(victim, aggressor *elastico.Profile) float64 {
	var v Vector
	v.Build(victim, aggressor)
	return m.Predict(&v)
}

// Predict returns the slowdown for an already built feature vector.
func (m *MLP) Predict(v *Vector) float64 {
	var in [maxInputs]float64
	Standardize(in[:], v, m.cols)
	return min(m.forward(in[:len(m.cols)]), m.maxSlowdown)
}

// SlowdownBatch fills dst[i] with Slowdown(victims[i], aggressors[i]) and
// returns dst, grown if it is too short. It allocates nothing when dst has
// room, and shares its scratch space across the batch.
func (m *MLP) SlowdownBatch(dst []float64, victims, aggressors []*elastico.Profile) ([]float64, error) {
	if len(victims) != len(aggressors) {
		return dst, fmt.Errorf("iac: SlowdownBatch: %d victims but %d aggressors", len(victims), len(aggressors))
	}
	if cap(dst) < len(victims) {
		dst = make([]float64, len(victims))
	}
	dst = dst[:len(victims)]
	var (
		v  Vector
		in [maxInputs]float64
		s  scratch[[MaxWidth]float64, [bigList]int32]
	)
	x := in[:len(m.cols)]
	for i := range victims {
		if victims[i] == nil || aggressors[i] == nil {
			return dst, fmt.Errorf("iac: SlowdownBatch: pair %d: nil profile", i)
		}
		v.Build(victims[i], aggressors[i])
		Standardize(x, &v, m.cols)
		dst[i] = min(m.forwardInto(x, s.a[:], s.b[:], s.nz[:]), m.maxSlowdown)
	}
	return dst, nil
}

// Forward returns the network's output for inputs [Standardize] wrote with
// the model's columns, x[:len(cols)], without the cap at MaxSlowdown: what
// training's loss measures, on inputs it standardized once.
func (m *MLP) Forward(x []float64) float64 { return m.forward(x[:len(m.cols)]) }

// forward runs the network on standardized inputs. The scratch space lives
// in arrays on the stack, sized for the model's widest layer (Go zeroes
// them on every call).
func (m *MLP) forward(in []float64) float64 {
	if m.widest() <= smallWidth {
		var s scratch[[smallWidth]float64, [smallList]int32]
		return m.forwardInto(in, s.a[:], s.b[:], s.nz[:])
	}
	var s scratch[[MaxWidth]float64, [bigList]int32]
	return m.forwardInto(in, s.a[:], s.b[:], s.nz[:])
}

// scratch holds two layers' activations and a list of nonzero inputs.
type scratch[F, I any] struct {
	a, b F
	nz   I
}

// smallWidth is the stack buffer for models no wider than the default. The
// lists of nonzero inputs must also hold the first layer's inputs.
const (
	smallWidth = 64
	smallList  = max(smallWidth, maxInputs)
	bigList    = max(MaxWidth, maxInputs)
)

func (m *MLP) widest() int {
	w := 0
	for i := range m.layers {
		w = max(w, m.layers[i].Out)
	}
	return w
}

func (m *MLP) forwardInto(in, cur, next []float64, nz []int32) float64 {
	l := &m.layers[0]
	out, tmp := cur[:l.Out], next[:l.Out]
	clear(out)
	accumulate(out, l, in, listNonzero(nz, in, m.sides.victim))
	clear(tmp)
	accumulate(tmp, l, in, listNonzero(nz, in, m.sides.aggressor))
	combine(out, l.B, out, tmp)
	accumulate(out, l, in, listNonzero(nz, in, m.sides.pair))
	return m.hidden(out, next, nz)
}

// combine sets out = (b + victim) + aggressor: the first layer's bias and
// the two profiles' shares of it, in the one order that both forwardInto
// and SlowdownPrepared use (so that they agree to the last bit).
func combine(out, b, victim, aggressor []float64) {
	b, victim, aggressor = b[:len(out)], victim[:len(out)], aggressor[:len(out)]
	for j := range out {
		out[j] = float64(b[j]+victim[j]) + aggressor[j]
	}
}

// hidden runs the network from the first layer's pre-activations x (in
// one scratch buffer) on, with next as the other buffer.
func (m *MLP) hidden(x, next []float64, nz []int32) float64 {
	cur := x[:cap(x)]
	last := len(m.layers) - 1
	for li := 1; ; li++ {
		relu(x)
		// List the nonzero inputs without a branch (after a ReLU about half
		// are zero) and multiply only them.
		n := 0
		for k, xk := range x {
			b := math.Float64bits(xk) << 1 // without the sign: -0 is zero too
			nz[n] = int32(k)
			n += int((b | -b) >> 63)
		}
		if li == last {
			var z [1]float64
			affine(z[:], &m.layers[li], x, nz[:n])
			return 1 + softplus(z[0])
		}
		out := next[:m.layers[li].Out]
		affine(out, &m.layers[li], x, nz[:n])
		x = out
		cur, next = next, cur
	}
}

// listNonzero lists, in nz, the inputs among cols that are not zero (a
// zero input is a missing value: it adds nothing), without a branch per
// input (which would be mispredicted), and returns the list.
func listNonzero(nz []int32, x []float64, cols []int32) []int32 {
	n := 0
	for _, k := range cols {
		b := math.Float64bits(x[k]) << 1 // without the sign: -0 is zero too
		nz[n] = k
		n += int((b | -b) >> 63)
	}
	return nz[:n]
}

// relu zeroes the negative entries without a branch (the signs are
// unpredictable): the sign bit, spread over the word, masks the value away.
func relu(x []float64) {
	for j, a := range x {
		b := math.Float64bits(a)
		x[j] = math.Float64frombits(b &^ uint64(int64(b)>>63))
	}
}

// affine computes out = Wᵀ·x + b over the inputs listed in nz (the others
// are zero), with W stored input-major (W[k*Out+j] is the weight from input
// k to unit j).
func affine(out []float64, l *Layer, x []float64, nz []int32) {
	copy(out, l.B)
	accumulate(out, l, x, nz)
}

// accumulate adds Wᵀ·x over the inputs listed in nz to out. It takes four
// inputs per pass over out, so that each output is loaded and stored once
// per four products, and sums them as ((w₀x₀ + w₁x₁) + (w₂x₂ + w₃x₃)): no
// chain of dependent additions. Every product is rounded explicitly
// (float64(…)), which forbids fused multiply-add, so that training gives
// the same bits wherever the compiler would fuse (the training program
// reproduces the embedded model).
func accumulate(out []float64, l *Layer, x []float64, nz []int32) {
	m := l.Out
	w := l.W
	i := 0
	for ; i+4 <= len(nz); i += 4 {
		k0, k1, k2, k3 := int(nz[i]), int(nz[i+1]), int(nz[i+2]), int(nz[i+3])
		x0, x1, x2, x3 := x[k0], x[k1], x[k2], x[k3]
		w0 := w[k0*m : k0*m+m][:len(out)] // the re-slices let the compiler drop bounds checks
		w1 := w[k1*m : k1*m+m][:len(out)]
		w2 := w[k2*m : k2*m+m][:len(out)]
		w3 := w[k3*m : k3*m+m][:len(out)]
		for j := range out {
			out[j] += float64(float64(w0[j]*x0)+float64(w1[j]*x1)) + float64(float64(w2[j]*x2)+float64(w3[j]*x3))
		}
	}
	for ; i < len(nz); i++ {
		k := int(nz[i])
		xk := x[k]
		wk := w[k*m : k*m+m][:len(out)]
		for j := range out {
			out[j] += float64(wk[j] * xk)
		}
	}
}

// softplus is log(1 + e^z), computed without overflow.
// Every use adds 1, so absolute precision is what counts: math.Log(1+e)
// gives it, at a quarter of math.Log1p's cost (which has no assembly
// version on amd64).
func softplus(z float64) float64 {
	if z > 0 {
		return z + math.Log(1+math.Exp(-z))
	}
	return math.Log(1 + math.Exp(z))
}

// MaxSlowdown returns the cap on predictions: the worst slowdown in the
// training data.
func (m *MLP) MaxSlowdown() float64 { return m.maxSlowdown }

// Info describes how the model was trained.
func (m *MLP) Info() ModelInfo { return m.info }

// Inputs returns the names of the model's inputs in order: a feature's name
// for its standardized value, "<name>?" for its measured/missing indicator.
func (m *MLP) Inputs() []string {
	out := make([]string, len(m.cols))
	for i, c := range m.cols {
		out[i] = c.Feature.String()
		if c.Mask {
			out[i] += "?"
		}
	}
	return out
}

// Hidden returns the widths of the hidden layers.
func (m *MLP) Hidden() []int {
	out := make([]int, 0, len(m.layers)-1)
	for _, l := range m.layers[:len(m.layers)-1] {
		out = append(out, l.Out)
	}
	return out
}

// validate checks the structure of a model read from a file.
func (m *MLP) validate() error {
	if err := validateColumns(m.cols); err != nil {
		return err
	}
	if len(m.layers) < 2 {
		return fmt.Errorf("%d layers, want at least one hidden layer and the output", len(m.layers))
	}
	in := len(m.cols)
	for i, l := range m.layers {
		if l.In != in {
			return fmt.Errorf("layer %d: %d inputs, want %d", i, l.In, in)
		}
		if l.Out < 1 || l.Out > MaxWidth {
			return fmt.Errorf("layer %d: width %d, want 1..%d", i, l.Out, MaxWidth)
		}
		if len(l.W) != l.In*l.Out || len(l.B) != l.Out {
			return fmt.Errorf("layer %d: %d weights and %d biases, want %d and %d", i, len(l.W), len(l.B), l.In*l.Out, l.Out)
		}
		for _, w := range l.W {
			if !finite(w) {
				return fmt.Errorf("layer %d: a weight is %g", i, w)
			}
		}
		for _, b := range l.B {
			if !finite(b) {
				return fmt.Errorf("layer %d: a bias is %g", i, b)
			}
		}
		in = l.Out
	}
	if in != 1 {
		return fmt.Errorf("output layer has width %d, want 1", in)
	}
	if !finite(m.maxSlowdown) || m.maxSlowdown < 1 {
		return fmt.Errorf("maximum slowdown %g, want a finite number ≥ 1", m.maxSlowdown)
	}
	return nil
}
