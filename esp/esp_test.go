package esp_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/esp"
	"github.com/elastico/elastico/esp/esptest"
)

func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  esp.Config
	}{
		{"default", esp.Config{}},
		{"parallel", esp.Config{ParallelThreshold: 1, Workers: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			esptest.Run(t, func() elastico.PriceSolver {
				s, err := esp.New(tc.cfg)
				if err != nil {
					t.Fatal(err)
				}
				return s
			})
		})
	}
}

// TestOneIteration leaves the whole work to the repair: one best response
// at zero prices asks for every job's largest option.
func TestOneIteration(t *testing.T) {
	s, err := esp.New(esp.Config{MaxIterations: 1})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(15, 15))
	var sol elastico.Solution
	for _, n := range []int{1, 10, 100, 1000} {
		for _, tight := range []float64{0.05, 0.3, 0.8} {
			m, err := esptest.Generate(rng, esptest.Params{Bidders: n, Options: 6, Tightness: tight})
			if err != nil {
				t.Fatal(err)
			}
			if err := s.Solve(context.Background(), m, &sol); err != nil {
				t.Fatal(err)
			}
			if err := esptest.Check(m, &sol); err != nil {
				t.Errorf("%d bidders, tightness %g: %v", n, tight, err)
			}
			if sol.Iterations > 1 {
				t.Errorf("%d bidders: %d iterations, want at most 1", n, sol.Iterations)
			}
		}
	}
}
