package esp_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/esp"
	"github.com/elastico/elastico/esp/esptest"
)

// warmMarket returns an n×k market whose Prices come from solving a
// slightly different market first, as in an epoch loop: the previous
// epoch's prices, then 10 % of the jobs changed.
func warmMarket(b *testing.B, n, k int) *elastico.Market {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(k)))
	prev, err := esptest.Generate(rng, esptest.Params{Bidders: n, Options: k, Tightness: 0.5})
	if err != nil {
		b.Fatal(err)
	}
	s, err := esp.New(esp.Config{})
	if err != nil {
		b.Fatal(err)
	}
	var sol elastico.Solution
	if err := s.Solve(context.Background(), prev, &sol); err != nil {
		b.Fatal(err)
	}
	m, err := esptest.Perturb(rng, prev, 0.1)
	if err != nil {
		b.Fatal(err)
	}
	m.Prices = sol.Prices
	return m
}

// BenchmarkSolve solves warm-started markets of 100 to 20,000 jobs with 8
// configurations each, on one core and with parallel best responses.
func BenchmarkSolve(b *testing.B) {
	for _, mode := range []struct {
		name string
		cfg  esp.Config
	}{
		{"serial", esp.Config{Workers: 1}},
		{"parallel", esp.Config{ParallelThreshold: 1}},
	} {
		for _, n := range []int{100, 500, 2000, 5000, 20000} {
			b.Run(fmt.Sprintf("%s/%dx8", mode.name, n), func(b *testing.B) {
				m := warmMarket(b, n, 8)
				s, err := esp.New(mode.cfg)
				if err != nil {
					b.Fatal(err)
				}
				var sol elastico.Solution
				ctx := context.Background()
				if err := s.Solve(ctx, m, &sol); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				b.ReportAllocs()
				c0, ok := cpuTime()
				ops := 0
				for b.Loop() {
					if err := s.Solve(ctx, m, &sol); err != nil {
						b.Fatal(err)
					}
					ops++
				}
				if c1, ok1 := cpuTime(); ok && ok1 {
					b.ReportMetric(float64(c1-c0)/float64(ops), "cpu-ns/op")
				}
				b.ReportMetric(float64(sol.Iterations), "iters")
				// How far the answer can be from the optimum.
				if bound, err := esp.Bound(m, sol.Prices); err == nil && bound > 0 {
					b.ReportMetric(100*(1-m.Objective(sol.Choice)/bound), "gap-%")
				}
			})
		}
	}
}

// BenchmarkSolveSmall covers the markets that get the exchange local
// search (at most exchangeMaxOptions usable options).
func BenchmarkSolveSmall(b *testing.B) {
	for _, sz := range [][2]int{{10, 6}, {30, 6}, {60, 8}} {
		b.Run(fmt.Sprintf("%dx%d", sz[0], sz[1]), func(b *testing.B) {
			m := warmMarket(b, sz[0], sz[1])
			s, err := esp.New(esp.Config{})
			if err != nil {
				b.Fatal(err)
			}
			var sol elastico.Solution
			b.ReportAllocs()
			for b.Loop() {
				if err := s.Solve(context.Background(), m, &sol); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkExact measures the reference on the quality test's largest
// markets: 30 jobs, 6 configurations.
func BenchmarkExact(b *testing.B) {
	rng := rand.New(rand.NewPCG(10, 10))
	ms := make([]*elastico.Market, 16)
	for i := range ms {
		m, err := esptest.Generate(rng, esptest.Params{Bidders: 30, Options: 6, Tightness: 0.25 + 0.5*rng.Float64()})
		if err != nil {
			b.Fatal(err)
		}
		ms[i] = m
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, _, err := esp.Exact(context.Background(), ms[i%len(ms)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
