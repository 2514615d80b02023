package iac

import (
	"fmt"
	"math"
	"slices"

	"github.com/elastico/elastico"
)

// The first layer of a pair's network is a sum over the model's inputs, and
// most inputs describe one of the two profiles: the victim's counters and
// attributes, or the aggressor's. Their share of the sum depends on that
// profile alone, so a scheduler that asks about the same profile beside
// many others can compute it once (AppendPrepared) and pay, per pair, for
// the few pairwise inputs and the hidden layers only (SlowdownPrepared).
// Every prediction adds the shares in the same order, so the two paths
// agree to the last bit.

// inputSides sorts the model's inputs by what they describe.
type inputSides struct {
	victim, aggressor, pair []int32 // column indexes, in column order
	width                   int     // the first layer's width
}

func newInputSides(cols []Column, width int) inputSides {
	s := inputSides{width: width}
	for i, c := range cols {
		switch sideOf(c.Feature) {
		case victimSide:
			s.victim = append(s.victim, int32(i))
		case aggressorSide:
			s.aggressor = append(s.aggressor, int32(i))
		default:
			s.pair = append(s.pair, int32(i))
		}
	}
	return s
}

type side int

const (
	victimSide side = iota
	aggressorSide
	pairSide
)

func sideOf(f Feature) side {
	switch {
	case f >= AGrEngineActive && f <= APowerFrac, f >= AIsTraining && f <= ALog10Params, f == ALog10Throughput:
		return victimSide
	case f >= BGrEngineActive && f <= BPowerFrac, f >= BIsTraining && f <= BLog10Params, f == BLog10Throughput:
		return aggressorSide
	}
	return pairSide
}

// newMLP builds a model from its parts, unchecked (Decode and NewMLP
// validate it). Subnormal parameters become zero (in a copy: layers may be
// a trainer's).
func newMLP(cols []Column, layers []Layer, maxSlowdown float64, info ModelInfo) *MLP {
	m := &MLP{cols: cols, layers: flushSubnormal(layers), maxSlowdown: maxSlowdown, info: info}
	if len(layers) > 0 {
		m.sides = newInputSides(cols, layers[0].Out)
	}
	return m
}

// flushSubnormal returns layers with every weight and bias smaller than
// the smallest normal number set to zero, copying the layers that have
// one. Weight decay leaves some there (the default model had 65), and
// each product with one costs the CPU a microcode assist, a hundred times
// a plain multiply: they made a prediction three times slower. They add
// nothing a prediction can see (a product below 1e-300 vanishes against
// any normal sum).
func flushSubnormal(layers []Layer) []Layer {
	var out []Layer
	for i := range layers {
		l := &layers[i]
		if !slices.ContainsFunc(l.W, subnormal) && !slices.ContainsFunc(l.B, subnormal) {
			continue
		}
		if out == nil {
			out = slices.Clone(layers)
		}
		c := &out[i]
		c.W, c.B = slices.Clone(l.W), slices.Clone(l.B)
		for _, s := range [][]float64{c.W, c.B} {
			for k, x := range s {
				if subnormal(x) {
					s[k] = 0
				}
			}
		}
	}
	if out == nil {
		return layers
	}
	return out
}

func subnormal(x float64) bool { return x != 0 && math.Abs(x) < 0x1p-1022 }

// The raw values a prepared profile keeps for the pairwise inputs (NaN
// where not measured): the terms of Build's sums.
var pairTerms = [...]struct{ a, b Feature }{
	{ASMActive, BSMActive},
	{ADRAMActive, BDRAMActive},
	{APowerFrac, BPowerFrac},
	{AFBUsedFrac, BFBUsedFrac},
	{AKVCacheFrac, BKVCacheFrac},
}

// PreparedLen is the length of one prepared profile (AppendPrepared).
func (m *MLP) PreparedLen() int { return 2*m.sides.width + len(pairTerms) }

// AppendPrepared appends p prepared for prediction to dst and returns the
// extended slice: its share of the first layer as a victim, its share as
// an aggressor, and its terms of the pairwise inputs, PreparedLen values in
// all. It allocates only when dst must grow.
func (m *MLP) AppendPrepared(dst []float64, p *elastico.Profile) []float64 {
	w := m.sides.width
	n := len(dst)
	dst = slices.Grow(dst, m.PreparedLen())[:n+m.PreparedLen()]
	out := dst[n:]
	clear(out)
	var (
		v  Vector
		in [maxInputs]float64
		nz [maxInputs]int32
	)
	x := in[:len(m.cols)]
	l := &m.layers[0]
	v.job(p, AGrEngineActive, AIsTraining, ALog10Throughput)
	Standardize(x, &v, m.cols)
	accumulate(out[:w], l, x, listNonzero(nz[:], x, m.sides.victim))
	for i, t := range pairTerms {
		out[2*w+i] = math.NaN()
		if v.Has(t.a) {
			out[2*w+i] = v.X[t.a]
		}
	}
	v = Vector{}
	v.job(p, BGrEngineActive, BIsTraining, BLog10Throughput)
	Standardize(x, &v, m.cols)
	accumulate(out[w:2*w], l, x, listNonzero(nz[:], x, m.sides.aggressor))
	return dst
}

// SlowdownPrepared returns Slowdown for two profiles prepared by this
// model's AppendPrepared: the same number, to the last bit, for less work.
// It allocates nothing. A slice of the wrong length is an error.
func (m *MLP) SlowdownPrepared(victim, aggressor []float64) (float64, error) {
	n := m.PreparedLen()
	if len(victim) != n || len(aggressor) != n {
		return 0, fmt.Errorf("iac: SlowdownPrepared: prepared profiles of %d and %d values, want %d (from this model's AppendPrepared)", len(victim), len(aggressor), n)
	}
	w := m.sides.width
	l := &m.layers[0]
	if m.widest() <= smallWidth {
		var s scratch[[smallWidth]float64, [smallList]int32]
		return m.fromPrepared(l, victim, aggressor[w:2*w], victim[2*w:], aggressor[2*w:], s.a[:], s.b[:], s.nz[:]), nil
	}
	var s scratch[[MaxWidth]float64, [bigList]int32]
	return m.fromPrepared(l, victim, aggressor[w:2*w], victim[2*w:], aggressor[2*w:], s.a[:], s.b[:], s.nz[:]), nil
}

func (m *MLP) fromPrepared(l *Layer, victim, aggressor, termsV, termsA, cur, next []float64, nz []int32) float64 {
	out := cur[:l.Out]
	combine(out, l.B, victim, aggressor)
	if len(m.sides.pair) > 0 {
		var v Vector
		for i, t := range pairTerms {
			if !math.IsNaN(termsV[i]) {
				v.set(t.a, termsV[i])
			}
			if !math.IsNaN(termsA[i]) {
				v.set(t.b, termsA[i])
			}
		}
		v.pairs()
		var in [maxInputs]float64
		x := in[:len(m.cols)]
		Standardize(x, &v, m.cols)
		accumulate(out, l, x, listNonzero(nz, x, m.sides.pair))
	}
	return min(m.hidden(out, next, nz), m.maxSlowdown)
}
