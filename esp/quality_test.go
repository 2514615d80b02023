package esp_test

import (
	"context"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/esp"
	"github.com/elastico/elastico/esp/esptest"
)

func TestQualityExp(t *testing.T) {
	s, err := esp.New(esp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	sum, minR := 0.0, 2.0
	n := 0
	var exactTime time.Duration
	for i := 0; i < 200; i++ {
		p := esptest.Params{Bidders: 5 + rng.IntN(26), Options: 1 + rng.IntN(6), Tightness: 0.25 + 0.5*rng.Float64()}
		m, err := esptest.Generate(rng, p)
		if err != nil {
			t.Fatal(err)
		}
		var sol elastico.Solution
		if err := s.Solve(context.Background(), m, &sol); err != nil {
			t.Fatal(err)
		}
		if !m.Load(sol.Choice).LessEq(m.Capacity) {
			t.Fatalf("instance %d infeasible", i)
		}
		t0 := time.Now()
		_, opt, err := esp.Exact(context.Background(), m)
		exactTime += time.Since(t0)
		if err != nil {
			t.Fatal(err)
		}
		got := m.Objective(sol.Choice)
		if got > opt+1e-9 {
			t.Fatalf("instance %d: heuristic %g above exact %g", i, got, opt)
		}
		r := 1.0
		if opt > 0 {
			r = got / opt
		}
		if r < 0.93 {
			t.Logf("instance %d: %+v ratio %.3f got %.3f opt %.3f", i, p, r, got, opt)
		}
		sum += r
		minR = min(minR, r)
		n++
	}
	t.Logf("mean %.4f min %.4f over %d; exact time %v", sum/float64(n), minR, n, exactTime)
}
