package iac

import (
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/elastico/elastico"
)

// LinearConfig configures the linear baseline.
type LinearConfig struct {
	// Ridge is the L2 penalty on the coefficients (not the intercept), on
	// standardized inputs; it keeps the normal equations solvable when two
	// inputs coincide (a mask and a value that is always missing together).
	// Default 1e-3.
	Ridge float64
}

// Linear is the linear-regression baseline: log Ŝ = β₀ + Σ βᵢ·xᵢ on the
// same standardized inputs as the MLP, fitted by ridge least squares with
// gonum; Ŝ = max(1, e^(…)).
type Linear struct {
	cols []Column
	beta []float64 // intercept first
}

var _ elastico.Predictor = (*Linear)(nil)

// TrainLinear fits the linear baseline.
func TrainLinear(samples []Sample, cfg LinearConfig) (*Linear, error) {
	if cfg.Ridge == 0 {
		cfg.Ridge = 1e-3
	}
	if !(cfg.Ridge > 0) || math.IsInf(cfg.Ridge, 0) {
		return nil, fmt.Errorf("iac: LinearConfig.Ridge is %g, want a positive number", cfg.Ridge)
	}
	if err := CheckSamples(samples); err != nil {
		return nil, err
	}
	if len(samples) < 2 {
		return nil, fmt.Errorf("%w: %d", ErrTooFewSamples, len(samples))
	}
	xs := make([]Vector, len(samples))
	for i := range samples {
		xs[i] = samples[i].Features
	}
	cols := FitColumns(xs)
	p := len(cols) + 1
	x := mat.NewDense(len(samples), p, nil)
	y := mat.NewVecDense(len(samples), nil)
	row := make([]float64, p)
	for i := range samples {
		row[0] = 1
		Standardize(row[1:], &samples[i].Features, cols)
		x.SetRow(i, row)
		y.SetVec(i, math.Log(samples[i].Slowdown))
	}
	var xtx mat.SymDense
	xtx.SymOuterK(1, x.T())
	for j := 1; j < p; j++ {
		xtx.SetSym(j, j, xtx.At(j, j)+cfg.Ridge*float64(len(samples)))
	}
	var xty mat.VecDense
	xty.MulVec(x.T(), y)
	var ch mat.Cholesky
	if !ch.Factorize(&xtx) {
		return nil, errors.New("iac: linear baseline: normal equations are singular")
	}
	var beta mat.VecDense
	if err := ch.SolveVecTo(&beta, &xty); err != nil {
		return nil, fmt.Errorf("iac: linear baseline: %w", err)
	}
	return &Linear{cols: cols, beta: mat.Col(nil, 0, &beta)}, nil
}

// Slowdown implements elastico.Predictor.
func (l *Linear) Slowdown(victim, aggressor *elastico.Profile) float64 {
	var v Vector
	v.Build(victim, aggressor)
	return l.Predict(&v)
}

// Predict returns the slowdown for a feature vector.
func (l *Linear) Predict(v *Vector) float64 {
	var in [maxInputs]float64
	Standardize(in[:], v, l.cols)
	s := l.beta[0]
	for i, b := range l.beta[1:] {
		s += b * in[i]
	}
	return math.Max(1, math.Exp(s))
}
