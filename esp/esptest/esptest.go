package esptest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/esp"
)

// Quality thresholds Run holds a solver to on small markets, against
// esp.Exact (the targets the default solver is held to).
const (
	MinMeanRatio = 0.97
	MinRatio     = 0.90
)

// Check returns an error if sol is not a valid answer to m: one entry per
// bidder, each -1 or an option index whose value w·G̃ − Γ is positive, a
// total demand within capacity (elastico.Vector.LessEq), finite
// non-negative prices.
func Check(m *elastico.Market, sol *elastico.Solution) error {
	if len(sol.Choice) != len(m.Bidders) {
		return fmt.Errorf("esptest: %d choices for %d bidders", len(sol.Choice), len(m.Bidders))
	}
	for j, c := range sol.Choice {
		switch {
		case c < -1 || c >= len(m.Bidders[j].Options):
			return fmt.Errorf("esptest: bidder %d: choice %d out of range [-1, %d)", j, c, len(m.Bidders[j].Options))
		case c >= 0 && !(m.Bidders[j].Value(c) > 0):
			return fmt.Errorf("esptest: bidder %d: chose option %d worth %g, not more than deferral", j, c, m.Bidders[j].Value(c))
		}
	}
	if l := m.Load(sol.Choice); !l.LessEq(m.Capacity) {
		return fmt.Errorf("esptest: load %v exceeds capacity %v", l, m.Capacity)
	}
	for r, p := range sol.Prices {
		if math.IsNaN(p) || math.IsInf(p, 0) || p < 0 {
			return fmt.Errorf("esptest: price of %v is %g", elastico.Resource(r), p)
		}
	}
	return nil
}

// Run checks that the PriceSolvers newSolver returns behave as the
// interface promises: answers within capacity on random markets, the same
// answer to the same market, deferral of what cannot fit, the context
// respected, invalid markets rejected with errors wrapping
// elastico.ErrInvalid, and an objective close to esp.Exact's on small
// markets (mean ≥ MinMeanRatio, each ≥ MinRatio). It takes a few seconds.
func Run(t *testing.T, newSolver func() elastico.PriceSolver) {
	t.Run("Feasible", func(t *testing.T) { testFeasible(t, newSolver) })
	t.Run("Deterministic", func(t *testing.T) { testDeterministic(t, newSolver) })
	t.Run("ReusesSolution", func(t *testing.T) { testReuse(t, newSolver) })
	t.Run("Defers", func(t *testing.T) { testDefers(t, newSolver) })
	t.Run("AmpleCapacity", func(t *testing.T) { testAmple(t, newSolver) })
	t.Run("Context", func(t *testing.T) { testContext(t, newSolver) })
	t.Run("RejectsInvalid", func(t *testing.T) { testInvalid(t, newSolver) })
	t.Run("Quality", func(t *testing.T) { testQuality(t, newSolver) })
}

func mustGenerate(t *testing.T, rng *rand.Rand, p Params) *elastico.Market {
	t.Helper()
	m, err := Generate(rng, p)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func testFeasible(t *testing.T, newSolver func() elastico.PriceSolver) {
	s := newSolver()
	rng := rand.New(rand.NewPCG(1, 1))
	var sol elastico.Solution
	for _, n := range []int{0, 1, 2, 7, 30, 200, 3000} {
		for _, k := range []int{1, 3, 8} {
			for _, tight := range []float64{0.05, 0.3, 0.7, 3} {
				m := mustGenerate(t, rng, Params{Bidders: n, Options: k, Tightness: tight})
				name := fmt.Sprintf("%d×%d tightness %g", n, k, tight)
				if err := s.Solve(context.Background(), m, &sol); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if err := Check(m, &sol); err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				// As an epoch loop would: perturb, warm-start, solve again.
				w, err := Perturb(rng, m, 0.2)
				if err != nil {
					t.Fatal(err)
				}
				w.Prices = sol.Prices
				if err := s.Solve(context.Background(), w, &sol); err != nil {
					t.Fatalf("%s, warm: %v", name, err)
				}
				if err := Check(w, &sol); err != nil {
					t.Fatalf("%s, warm: %v", name, err)
				}
			}
		}
	}
}

func testDeterministic(t *testing.T, newSolver func() elastico.PriceSolver) {
	rng := rand.New(rand.NewPCG(2, 2))
	for _, n := range []int{10, 500, 6000} {
		m := mustGenerate(t, rng, Params{Bidders: n, Options: 8, Tightness: 0.4})
		m.Prices = elastico.Vector{0.5, 0, 2, 0} // a warm start, however odd
		var first elastico.Solution
		s := newSolver()
		if err := s.Solve(context.Background(), m, &first); err != nil {
			t.Fatal(err)
		}
		again := func(name string, s elastico.PriceSolver, m *elastico.Market) {
			var sol elastico.Solution
			if err := s.Solve(context.Background(), m, &sol); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(first, sol); d != "" {
				t.Errorf("%d bidders, %s: a different answer (-first +now):\n%s", n, name, d)
			}
		}
		again("same solver", s, m)
		again("fresh solver", newSolver(), m)
		again("copied market", newSolver(), Clone(m))
	}
}

func testReuse(t *testing.T, newSolver func() elastico.PriceSolver) {
	s := newSolver()
	rng := rand.New(rand.NewPCG(3, 3))
	var sol elastico.Solution
	for _, n := range []int{300, 5, 0, 40} {
		m := mustGenerate(t, rng, Params{Bidders: n, Options: 4, Tightness: 0.5})
		if err := s.Solve(context.Background(), m, &sol); err != nil {
			t.Fatal(err)
		}
		if err := Check(m, &sol); err != nil {
			t.Fatalf("%d bidders after a larger market: %v", n, err)
		}
	}
}

func testDefers(t *testing.T, newSolver func() elastico.PriceSolver) {
	opt := func(g float64, d elastico.Vector) elastico.Option { return elastico.Option{Goodput: g, Demand: d} }
	tests := []struct {
		name       string
		m          elastico.Market
		wantChoice []int
	}{{
		name: "every option above capacity",
		m: elastico.Market{Capacity: elastico.Vector{4, 64, 32, 256}, Bidders: []elastico.Bidder{
			{Weight: 1, Options: []elastico.Option{opt(1, elastico.Vector{8, 8, 8, 8}), opt(0.5, elastico.Vector{1, 128, 1, 1})}},
			{Weight: 1, Options: []elastico.Option{opt(1, elastico.Vector{1, 8, 4, 16})}},
		}},
		wantChoice: []int{-1, 0},
	}, {
		name: "a resource the market lacks",
		m: elastico.Market{Capacity: elastico.Vector{4, 64, 0, 256}, Bidders: []elastico.Bidder{
			{Weight: 1, Options: []elastico.Option{opt(1, elastico.Vector{1, 8, 1, 8})}},
			{Weight: 1, Options: []elastico.Option{opt(1, elastico.Vector{1, 8, 0, 8})}},
		}},
		wantChoice: []int{-1, 0},
	}, {
		name: "no options, or none worth anything",
		m: elastico.Market{Capacity: elastico.Vector{4, 64, 32, 256}, Bidders: []elastico.Bidder{
			{Weight: 1},
			{Weight: 1, Options: []elastico.Option{{Goodput: 0.5, Penalty: 0.5, Demand: elastico.Vector{1, 1, 1, 1}}, opt(0, elastico.Vector{})}},
		}},
		wantChoice: []int{-1, -1},
	}, {
		name: "zero capacity",
		m: elastico.Market{Bidders: []elastico.Bidder{
			{Weight: 1, Options: []elastico.Option{opt(1, elastico.Vector{1, 1, 1, 1})}},
			{Weight: 2, Options: []elastico.Option{opt(1, elastico.Vector{0, 1, 0, 0})}},
		}},
		wantChoice: []int{-1, -1},
	}, {
		name: "only one of two fits",
		m: elastico.Market{Capacity: elastico.Vector{1, 16, 8, 64}, Bidders: []elastico.Bidder{
			{Weight: 1, Options: []elastico.Option{opt(1, elastico.Vector{1, 10, 4, 32})}},
			{Weight: 3, Options: []elastico.Option{opt(1, elastico.Vector{1, 10, 4, 32})}},
		}},
		wantChoice: []int{-1, 0},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sol elastico.Solution
			if err := newSolver().Solve(context.Background(), &tt.m, &sol); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.wantChoice, sol.Choice); d != "" {
				t.Errorf("choice (-want +got):\n%s", d)
			}
		})
	}
}

func testAmple(t *testing.T, newSolver func() elastico.PriceSolver) {
	rng := rand.New(rand.NewPCG(4, 4))
	s := newSolver()
	for _, n := range []int{1, 20, 400} {
		m := mustGenerate(t, rng, Params{Bidders: n, Options: 6, Tightness: 50})
		want := 0.0
		for j := range m.Bidders {
			best := 0.0
			for k := range m.Bidders[j].Options {
				best = max(best, m.Bidders[j].Value(k))
			}
			want += best
		}
		var sol elastico.Solution
		if err := s.Solve(context.Background(), m, &sol); err != nil {
			t.Fatal(err)
		}
		if got := m.Objective(sol.Choice); got < want*(1-1e-9) {
			t.Errorf("%d bidders, room for all: objective %g, want every bidder's best, %g", n, got, want)
		}
	}
}

func testContext(t *testing.T, newSolver func() elastico.PriceSolver) {
	m := mustGenerate(t, rand.New(rand.NewPCG(5, 5)), Params{Bidders: 50, Options: 4, Tightness: 0.4})
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithDeadline(context.Background(), time.Unix(0, 0))
	defer cancel2()
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want error
	}{{"canceled", canceled, context.Canceled}, {"deadline passed", expired, context.DeadlineExceeded}} {
		var sol elastico.Solution
		err := newSolver().Solve(tc.ctx, m, &sol)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: Solve returned %v, want an error wrapping %v", tc.name, err, tc.want)
		}
		// What a solver leaves behind when it stops must still fit.
		if len(sol.Choice) == len(m.Bidders) {
			if err := Check(m, &sol); err != nil {
				t.Errorf("%s: the partial answer: %v", tc.name, err)
			}
		}
	}
}

func testInvalid(t *testing.T, newSolver func() elastico.PriceSolver) {
	valid := func() *elastico.Market {
		return &elastico.Market{Capacity: elastico.Vector{4, 64, 32, 256}, Bidders: []elastico.Bidder{
			{Weight: 1, Options: []elastico.Option{{Goodput: 1, Demand: elastico.Vector{1, 8, 4, 16}}}},
			{Weight: 2, Options: []elastico.Option{{Goodput: 0.5, Demand: elastico.Vector{1, 8, 4, 16}}, {Goodput: 1, Demand: elastico.Vector{2, 16, 8, 32}}}},
		}}
	}
	nan, inf := math.NaN(), math.Inf(1)
	tests := []struct {
		name   string
		mutate func(m *elastico.Market)
	}{
		{"NaN capacity", func(m *elastico.Market) { m.Capacity[elastico.SM] = nan }},
		{"negative capacity", func(m *elastico.Market) { m.Capacity[elastico.RAM] = -1 }},
		{"infinite capacity", func(m *elastico.Market) { m.Capacity[elastico.CPU] = inf }},
		{"NaN price", func(m *elastico.Market) { m.Prices[elastico.GPUMemory] = nan }},
		{"negative price", func(m *elastico.Market) { m.Prices[elastico.SM] = -0.5 }},
		{"zero weight", func(m *elastico.Market) { m.Bidders[1].Weight = 0 }},
		{"negative weight", func(m *elastico.Market) { m.Bidders[0].Weight = -1 }},
		{"NaN weight", func(m *elastico.Market) { m.Bidders[0].Weight = nan }},
		{"infinite weight", func(m *elastico.Market) { m.Bidders[1].Weight = inf }},
		{"NaN goodput", func(m *elastico.Market) { m.Bidders[1].Options[1].Goodput = nan }},
		{"negative goodput", func(m *elastico.Market) { m.Bidders[0].Options[0].Goodput = -0.1 }},
		{"infinite penalty", func(m *elastico.Market) { m.Bidders[1].Options[0].Penalty = inf }},
		{"negative penalty", func(m *elastico.Market) { m.Bidders[1].Options[0].Penalty = -1 }},
		{"NaN demand", func(m *elastico.Market) { m.Bidders[1].Options[1].Demand[elastico.CPU] = nan }},
		{"negative demand", func(m *elastico.Market) { m.Bidders[0].Options[0].Demand[elastico.GPUMemory] = -8 }},
		{"infinite demand", func(m *elastico.Market) { m.Bidders[0].Options[0].Demand[elastico.RAM] = inf }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := valid()
			tt.mutate(m)
			var sol elastico.Solution
			if err := newSolver().Solve(context.Background(), m, &sol); !errors.Is(err, elastico.ErrInvalid) {
				t.Errorf("Solve returned %v, want an error wrapping elastico.ErrInvalid", err)
			}
		})
	}
	t.Run("nil market", func(t *testing.T) {
		if err := newSolver().Solve(context.Background(), nil, &elastico.Solution{}); !errors.Is(err, elastico.ErrInvalid) {
			t.Errorf("Solve returned %v, want an error wrapping elastico.ErrInvalid", err)
		}
	})
	t.Run("nil solution", func(t *testing.T) {
		if err := newSolver().Solve(context.Background(), valid(), nil); !errors.Is(err, elastico.ErrInvalid) {
			t.Errorf("Solve returned %v, want an error wrapping elastico.ErrInvalid", err)
		}
	})
}

// Quality measures s against esp.Exact on count random markets of up to
// maxBidders bidders, maxOptions options each, and capacities from 25 % to
// 75 % of the mean demand, drawn from rng. It returns the mean and the
// minimum of objective / optimum (1 where the optimum is 0), or the first
// error: a solver's, an infeasible answer, or an answer above the optimum.
func Quality(ctx context.Context, s elastico.PriceSolver, rng *rand.Rand, count, maxBidders, maxOptions int) (mean, minimum float64, err error) {
	minimum = math.Inf(1)
	var sol elastico.Solution
	for i := range count {
		p := Params{Bidders: 1 + rng.IntN(maxBidders), Options: 1 + rng.IntN(maxOptions), Tightness: 0.25 + 0.5*rng.Float64()}
		m, err := Generate(rng, p)
		if err != nil {
			return 0, 0, err
		}
		if err := s.Solve(ctx, m, &sol); err != nil {
			return 0, 0, fmt.Errorf("market %d (%+v): %w", i, p, err)
		}
		if err := Check(m, &sol); err != nil {
			return 0, 0, fmt.Errorf("market %d (%+v): %w", i, p, err)
		}
		_, opt, err := esp.Exact(ctx, m)
		if err != nil {
			return 0, 0, fmt.Errorf("market %d (%+v): %w", i, p, err)
		}
		got := m.Objective(sol.Choice)
		if got > opt*(1+1e-9)+1e-12 {
			return 0, 0, fmt.Errorf("market %d (%+v): objective %g above the exact optimum %g: Exact or Check is wrong", i, p, got, opt)
		}
		ratio := 1.0
		if opt > 0 {
			ratio = got / opt
		}
		mean += ratio
		minimum = min(minimum, ratio)
	}
	if count > 0 {
		mean /= float64(count)
	}
	return mean, minimum, nil
}

func testQuality(t *testing.T, newSolver func() elastico.PriceSolver) {
	const count = 60
	mean, minimum, err := Quality(context.Background(), newSolver(), rand.New(rand.NewPCG(6, 6)), count, 20, 6)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("objective / exact optimum over %d markets: mean %.4f, min %.4f", count, mean, minimum)
	if mean < MinMeanRatio || minimum < MinRatio {
		t.Errorf("objective / exact optimum: mean %.4f (want ≥ %g), min %.4f (want ≥ %g)", mean, MinMeanRatio, minimum, MinRatio)
	}
}
