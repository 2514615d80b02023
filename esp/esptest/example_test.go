package esptest_test

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/esp"
	"github.com/elastico/elastico/esp/esptest"
)

// Generate draws a market from a seeded source; Check says whether an
// answer keeps the PriceSolver contract.
func ExampleGenerate() {
	rng := rand.New(rand.NewPCG(1, 2))
	m, err := esptest.Generate(rng, esptest.Params{Bidders: 100, Options: 8, Tightness: 0.5})
	if err != nil {
		fmt.Println(err)
		return
	}
	s, err := esp.New(esp.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	var sol elastico.Solution
	if err := s.Solve(context.Background(), m, &sol); err != nil {
		fmt.Println(err)
		return
	}
	admitted := 0
	for _, c := range sol.Choice {
		if c >= 0 {
			admitted++
		}
	}
	fmt.Println(len(m.Bidders), "bidders;", "check:", esptest.Check(m, &sol), "; some deferred:", admitted < len(m.Bidders))
	// Output:
	// 100 bidders; check: <nil> ; some deferred: true
}
