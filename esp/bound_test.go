package esp_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/esp"
	"github.com/elastico/elastico/esp/esptest"
)

// TestBound checks that the dual value bounds the exact optimum from above
// at any prices, and the Solver's answer at its own prices.
func TestBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(16, 16))
	s := newSolver(t, esp.Config{})
	for i := range 30 {
		m, err := esptest.Generate(rng, esptest.Params{Bidders: 1 + rng.IntN(20), Options: 1 + rng.IntN(5), Tightness: 0.2 + 0.6*rng.Float64()})
		if err != nil {
			t.Fatal(err)
		}
		_, opt, err := esp.Exact(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		var sol elastico.Solution
		if err := s.Solve(context.Background(), m, &sol); err != nil {
			t.Fatal(err)
		}
		for _, p := range []elastico.Vector{{}, sol.Prices, {rng.Float64() * 10, rng.Float64(), 0, rng.Float64() * 3}} {
			b, err := esp.Bound(m, p)
			if err != nil {
				t.Fatal(err)
			}
			if b < opt*(1-1e-12) {
				t.Errorf("market %d, prices %v: bound %g below the optimum %g", i, p, b, opt)
			}
		}
	}
	if _, err := esp.Bound(smallMarket(), elastico.Vector{math.NaN()}); !errors.Is(err, elastico.ErrInvalid) {
		t.Errorf("NaN price: %v, want an error wrapping elastico.ErrInvalid", err)
	}
	if _, err := esp.Bound(nil, elastico.Vector{}); !errors.Is(err, elastico.ErrInvalid) {
		t.Errorf("nil market: %v, want an error wrapping elastico.ErrInvalid", err)
	}
}
