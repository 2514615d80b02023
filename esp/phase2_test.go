package esp_test

import (
	"math/rand/v2"
	"context"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/esp"
	"github.com/elastico/elastico/esp/esptest"
)

func init() {
	esp.PhaseMarket = func(n int) *elastico.Market {
		rng := rand.New(rand.NewPCG(uint64(n), 8))
		prev, _ := esptest.Generate(rng, esptest.Params{Bidders: n, Options: 8, Tightness: 0.5})
		s, _ := esp.New(esp.Config{})
		var sol elastico.Solution
		s.Solve(context.Background(), prev, &sol)
		m, _ := esptest.Perturb(rng, prev, 0.1)
		m.Prices = sol.Prices
		return m
	}
}
