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

// bruteForce enumerates every choice.
func bruteForce(m *elastico.Market) float64 {
	n := len(m.Bidders)
	choice := make([]int, n)
	best := 0.0
	var rec func(j int)
	rec = func(j int) {
		if j == n {
			if m.Load(choice).LessEq(m.Capacity) {
				best = max(best, m.Objective(choice))
			}
			return
		}
		for c := -1; c < len(m.Bidders[j].Options); c++ {
			choice[j] = c
			rec(j + 1)
		}
	}
	rec(0)
	return best
}

func TestExactMatchesBruteForce(t *testing.T) {
	defer esp.SetExactCold()() // the branch and bound alone
	rng := rand.New(rand.NewPCG(7, 7))
	for i := range 300 {
		p := esptest.Params{Bidders: 1 + rng.IntN(7), Options: 1 + rng.IntN(3), Tightness: 0.1 + 0.8*rng.Float64()}
		m, err := esptest.Generate(rng, p)
		if err != nil {
			t.Fatal(err)
		}
		choice, obj, err := esp.Exact(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		if !m.Load(choice).LessEq(m.Capacity) {
			t.Fatalf("market %d (%+v): Exact's choice %v exceeds capacity", i, p, choice)
		}
		if got := m.Objective(choice); got != obj {
			t.Fatalf("market %d: Exact says %g, its choice is worth %g", i, obj, got)
		}
		if want := bruteForce(m); math.Abs(obj-want) > 1e-9*max(1, want) {
			t.Fatalf("market %d (%+v): Exact %g, brute force %g", i, p, obj, want)
		}
	}
}

// TestExactIncumbent checks that the branch and bound finds the same optimum
// from the heuristic's incumbent as from nothing.
func TestExactIncumbent(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for i := range 20 {
		p := esptest.Params{Bidders: 8 + rng.IntN(13), Options: 1 + rng.IntN(6), Tightness: 0.25 + 0.5*rng.Float64()}
		m, err := esptest.Generate(rng, p)
		if err != nil {
			t.Fatal(err)
		}
		_, warm, err := esp.Exact(context.Background(), m)
		if err != nil {
			t.Fatal(err)
		}
		undo := esp.SetExactCold()
		_, cold, err := esp.Exact(context.Background(), m)
		undo()
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(warm-cold) > 1e-9*max(1, cold) {
			t.Errorf("market %d (%+v): Exact %g from the heuristic's incumbent, %g from none", i, p, warm, cold)
		}
	}
}

func TestExactErrors(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	big, err := esptest.Generate(rng, esptest.Params{Bidders: esp.MaxExactBidders + 1, Options: 2})
	if err != nil {
		t.Fatal(err)
	}
	wide, err := esptest.Generate(rng, esptest.Params{Bidders: 3, Options: esp.MaxExactOptions + 1})
	if err != nil {
		t.Fatal(err)
	}
	bad, err := esptest.Generate(rng, esptest.Params{Bidders: 3, Options: 2})
	if err != nil {
		t.Fatal(err)
	}
	bad.Bidders[2].Options[1].Goodput = math.NaN()
	ok, err := esptest.Generate(rng, esptest.Params{Bidders: 30, Options: 6, Tightness: 0.4})
	if err != nil {
		t.Fatal(err)
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		ctx     context.Context
		m       *elastico.Market
		wantErr error
	}{
		{"too many bidders", context.Background(), big, esp.ErrTooLarge},
		{"too many options", context.Background(), wide, esp.ErrTooLarge},
		{"NaN goodput", context.Background(), bad, elastico.ErrInvalid},
		{"nil market", context.Background(), nil, elastico.ErrInvalid},
		{"canceled", canceled, ok, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, _, err := esp.Exact(tt.ctx, tt.m); !errors.Is(err, tt.wantErr) {
				t.Errorf("Exact returned %v, want an error wrapping %v", err, tt.wantErr)
			}
		})
	}
}
