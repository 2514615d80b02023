package esptest_test

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/esp/esptest"
)

func TestGenerate(t *testing.T) {
	m1, err := esptest.Generate(rand.New(rand.NewPCG(1, 1)), esptest.Params{Bidders: 40, Options: 6})
	if err != nil {
		t.Fatal(err)
	}
	m2, err := esptest.Generate(rand.New(rand.NewPCG(1, 1)), esptest.Params{Bidders: 40, Options: 6})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(m1, m2); d != "" {
		t.Errorf("same seed, different markets:\n%s", d)
	}
	if err := m1.Validate(); err != nil {
		t.Fatal(err)
	}
	for j, b := range m1.Bidders {
		best := 0.0
		for _, o := range b.Options {
			best = max(best, o.Goodput)
		}
		if best != 1 {
			t.Errorf("bidder %d: best goodput %g, want 1 (normalized)", j, best)
		}
	}
	c := esptest.Clone(m1)
	c.Bidders[0].Options[0].Goodput = 0.123
	if m1.Bidders[0].Options[0].Goodput == 0.123 {
		t.Error("Clone shares options with the original")
	}
	p, err := esptest.Perturb(rand.New(rand.NewPCG(2, 2)), m1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	if cmp.Equal(p, m1) {
		t.Error("Perturb with frac 1 changed nothing")
	}
}

func TestParamsRejected(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	m := &elastico.Market{}
	tests := []struct {
		name string
		err  func() error
	}{
		{"nil rng", func() error { _, err := esptest.Generate(nil, esptest.Params{Options: 1}); return err }},
		{"negative bidders", func() error { _, err := esptest.Generate(rng, esptest.Params{Bidders: -1, Options: 1}); return err }},
		{"no options", func() error { _, err := esptest.Generate(rng, esptest.Params{Bidders: 1}); return err }},
		{"NaN tightness", func() error {
			_, err := esptest.Generate(rng, esptest.Params{Options: 1, Tightness: math.NaN()})
			return err
		}},
		{"perturb nil market", func() error { _, err := esptest.Perturb(rng, nil, 0.1); return err }},
		{"perturb frac above 1", func() error { _, err := esptest.Perturb(rng, m, 2); return err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.err(); !errors.Is(err, esptest.ErrParams) {
				t.Errorf("got %v, want an error wrapping ErrParams", err)
			}
		})
	}
}

func TestCheck(t *testing.T) {
	m := &elastico.Market{Capacity: elastico.Vector{1, 1, 1, 1}, Bidders: []elastico.Bidder{
		{Weight: 1, Options: []elastico.Option{{Goodput: 1, Demand: elastico.Vector{0.6, 0, 0, 0}}, {Goodput: 0.5, Penalty: 1}}},
		{Weight: 1, Options: []elastico.Option{{Goodput: 1, Demand: elastico.Vector{0.6, 0, 0, 0}}}},
	}}
	tests := []struct {
		name    string
		sol     elastico.Solution
		wantErr bool
	}{
		{"valid", elastico.Solution{Choice: []int{0, -1}}, false},
		{"too few choices", elastico.Solution{Choice: []int{0}}, true},
		{"out of range", elastico.Solution{Choice: []int{2, -1}}, true},
		{"worthless option", elastico.Solution{Choice: []int{1, -1}}, true},
		{"over capacity", elastico.Solution{Choice: []int{0, 0}}, true},
		{"NaN price", elastico.Solution{Choice: []int{0, -1}, Prices: elastico.Vector{math.NaN()}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := esptest.Check(m, &tt.sol); (err != nil) != tt.wantErr {
				t.Errorf("Check = %v, want error: %v", err, tt.wantErr)
			}
		})
	}
}

// greedy admits every bidder's most valuable option, capacity or not.
type greedy struct{}

func (greedy) Solve(_ context.Context, m *elastico.Market, sol *elastico.Solution) error {
	sol.Choice = sol.Choice[:0]
	for j := range m.Bidders {
		best, c := 0.0, -1
		for k := range m.Bidders[j].Options {
			if v := m.Bidders[j].Value(k); v > best {
				best, c = v, k
			}
		}
		sol.Choice = append(sol.Choice, c)
	}
	return nil
}

// idle defers everyone: feasible, worthless.
type idle struct{}

func (idle) Solve(_ context.Context, m *elastico.Market, sol *elastico.Solution) error {
	sol.Choice = sol.Choice[:0]
	for range m.Bidders {
		sol.Choice = append(sol.Choice, -1)
	}
	return nil
}

// TestQualityCatchesBadSolvers shows the suite's quality check can fail:
// an answer over capacity is an error, a feasible but poor one scores low.
func TestQualityCatchesBadSolvers(t *testing.T) {
	if _, _, err := esptest.Quality(context.Background(), greedy{}, rand.New(rand.NewPCG(3, 3)), 20, 20, 4); err == nil {
		t.Error("Quality accepted a solver that ignores capacity")
	}
	mean, minimum, err := esptest.Quality(context.Background(), idle{}, rand.New(rand.NewPCG(3, 3)), 20, 20, 4)
	if err != nil {
		t.Fatal(err)
	}
	if mean >= esptest.MinMeanRatio || minimum >= esptest.MinRatio {
		t.Errorf("a solver that defers everyone scored mean %g, min %g", mean, minimum)
	}
}
