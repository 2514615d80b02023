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

// FuzzSolve feeds markets with extreme magnitudes (huge or subnormal
// weights, capacities, prices): Solve and Exact must answer within capacity
// or refuse with an error wrapping elastico.ErrInvalid, never panic.
func FuzzSolve(f *testing.F) {
	f.Add(uint64(1), uint8(20), 1.0, 1.0, 0.0)
	f.Add(uint64(2), uint8(5), 1e300, 1.0, 0.0)
	f.Add(uint64(3), uint8(9), 1.0, 5e-324, 0.0)
	f.Add(uint64(4), uint8(7), 1e-300, 1e300, 1e308)
	f.Add(uint64(5), uint8(30), 1.0, 0.0, 1.0)
	f.Add(uint64(6), uint8(12), 1.0, 1.0, 1e300)
	f.Fuzz(func(t *testing.T, seed uint64, n uint8, weight, capScale, price float64) {
		rng := rand.New(rand.NewPCG(seed, seed))
		m, err := esptest.Generate(rng, esptest.Params{Bidders: int(n % 40), Options: 1 + int(seed%6)})
		if err != nil {
			t.Fatal(err)
		}
		for j := range m.Bidders {
			m.Bidders[j].Weight *= weight
		}
		m.Capacity = m.Capacity.Scale(capScale)
		m.Prices = elastico.Vector{price, price / 2, 0, price}
		s, err := esp.New(esp.Config{})
		if err != nil {
			t.Fatal(err)
		}
		var sol elastico.Solution
		err = s.Solve(context.Background(), m, &sol)
		if err != nil {
			if !errors.Is(err, elastico.ErrInvalid) {
				t.Fatalf("Solve: %v, want nil or an error wrapping elastico.ErrInvalid", err)
			}
			return
		}
		if err := esptest.Check(m, &sol); err != nil {
			t.Fatal(err)
		}
		if math.IsNaN(m.Objective(sol.Choice)) {
			t.Fatal("objective is NaN")
		}
		if len(m.Bidders) <= 12 {
			choice, _, err := esp.Exact(context.Background(), m)
			if err != nil {
				t.Fatalf("Exact: %v", err)
			}
			if !m.Load(choice).LessEq(m.Capacity) {
				t.Fatal("Exact's choice exceeds capacity")
			}
		}
	})
}
