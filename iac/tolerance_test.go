package iac

import (
	"math"
	"strings"
	"testing"
)

func TestToleranceUnderRisingQueuePressure(t *testing.T) {
	tol := DefaultTolerance
	if err := tol.Validate(); err != nil {
		t.Fatal(err)
	}
	// A pair predicted at 1.3× (decay 0.77: neither safe nor harmful).
	const pair = 1.3
	prev := 0.0
	admittedAt := math.NaN()
	for step := 0; step <= 100; step++ {
		q := 0.02 * float64(step) // the queue grows to twice the cluster
		tau := tol.At(q)
		if tau < prev {
			t.Fatalf("τ fell from %g to %g as q rose to %g", prev, tau, q)
		}
		prev = tau
		if tau < tol.Tau0 || tau > tol.Tau0*(1+tol.BetaMax)+1e-15 {
			t.Fatalf("τ(%g) = %g outside [τ0, τ0(1+βmax)]", q, tau)
		}
		if !tol.Violates(pair, q) && math.IsNaN(admittedAt) {
			admittedAt = q
		}
		if tau >= 1/0.6 {
			t.Fatalf("τ(%g) = %g admits pairs the paper calls harmful (decay < 0.6)", q, tau)
		}
	}
	// Empty queue: only safe pairs; the 1.3× pair waits for pressure
	// (1.3/τ0 − 1)/β = 0.17.
	if !tol.Violates(pair, 0) {
		t.Errorf("a 1.3× pair shares with an empty queue")
	}
	if want := (pair/tol.Tau0 - 1) / tol.Beta; math.Abs(admittedAt-want) > 0.02 {
		t.Errorf("the 1.3× pair is admitted at q = %g, want ≈ %g", admittedAt, want)
	}
	if got, want := tol.At(10), tol.Tau0*(1+tol.BetaMax); got != want {
		t.Errorf("τ under a huge queue = %g, want the cap %g", got, want)
	}
	for _, q := range []float64{-1, math.NaN()} {
		if got := tol.At(q); got != tol.Tau0 {
			t.Errorf("At(%g) = %g, want τ0", q, got)
		}
	}
	if got := tol.At(math.Inf(1)); got != tol.Tau0*(1+tol.BetaMax) {
		t.Errorf("At(+Inf) = %g, want the cap", got)
	}
}

func TestToleranceSensitivityToBeta(t *testing.T) {
	betas := []float64{0, 0.25, 0.5, 1, 2, 4}
	qs := []float64{0, 0.05, 0.1, 0.2, 0.4, 0.8, 1.6}
	for _, q := range qs {
		prev := 0.0
		for _, b := range betas {
			tol := Tolerance{Tau0: DefaultTolerance.Tau0, Beta: b, BetaMax: DefaultTolerance.BetaMax}
			tau := tol.At(q)
			if tau < prev {
				t.Errorf("q=%g: τ falls from %g to %g as β rises to %g", q, prev, tau, b)
			}
			prev = tau
			if b == 0 && tau != tol.Tau0 {
				t.Errorf("β=0: τ(%g) = %g, want τ0 at any pressure", q, tau)
			}
		}
	}
	// The pressure at which a 1.3× pair is admitted falls as β rises, and
	// with βmax too small it is never admitted.
	admit := func(tol Tolerance) float64 {
		for q := 0.0; q <= 4; q += 0.001 {
			if !tol.Violates(1.3, q) {
				return q
			}
		}
		return math.Inf(1)
	}
	prev := math.Inf(1)
	for _, b := range betas[1:] {
		q := admit(Tolerance{Tau0: DefaultTolerance.Tau0, Beta: b, BetaMax: DefaultTolerance.BetaMax})
		if !(q < prev) {
			t.Errorf("β=%g admits the 1.3× pair at q=%g, not earlier than with a smaller β (%g)", b, q, prev)
		}
		prev = q
	}
	if q := admit(Tolerance{Tau0: DefaultTolerance.Tau0, Beta: 4, BetaMax: 0.1}); !math.IsInf(q, 1) {
		t.Errorf("βmax=0.1 caps τ at %g, yet the 1.3× pair is admitted at q=%g", DefaultTolerance.Tau0*1.1, q)
	}
}

func TestToleranceValidate(t *testing.T) {
	tests := []struct {
		name    string
		tol     Tolerance
		wantErr string
	}{
		{"default", DefaultTolerance, ""},
		{"tau0 below 1", Tolerance{Tau0: 0.9}, "Tau0"},
		{"NaN beta", Tolerance{Tau0: 1, Beta: math.NaN()}, "Beta"},
		{"negative cap", Tolerance{Tau0: 1, BetaMax: -1}, "BetaMax"},
		{"infinite tau0", Tolerance{Tau0: math.Inf(1)}, "Tau0"},
	}
	for _, tc := range tests {
		err := tc.tol.Validate()
		if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%s: Validate() = %v, want %q", tc.name, err, tc.wantErr)
		}
	}
}
