package esp_test

import (
	"context"
	"fmt"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/esp"
)

// Three jobs want one GPU's worth of SM between them. The market gives the
// most valuable combination that fits: job "b" shrinks to half a GPU so that
// "a" and "c" fit beside it.
func ExampleSolver_Solve() {
	gpu := func(sm, mem float64) elastico.Vector { return elastico.Vector{sm, mem, 4, 16} }
	m := &elastico.Market{
		Capacity: elastico.Vector{1, 80, 32, 256}, // one GPU, 80 GiB
		Bidders: []elastico.Bidder{
			{Weight: 1, Options: []elastico.Option{{Goodput: 1, Demand: gpu(0.25, 10)}}},
			{Weight: 2, Options: []elastico.Option{
				{Goodput: 1, Demand: gpu(1, 60)},     // the whole GPU
				{Goodput: 0.7, Demand: gpu(0.5, 30)}, // half of it, smaller batch
			}},
			{Weight: 1, Options: []elastico.Option{{Goodput: 1, Demand: gpu(0.25, 20)}}},
		},
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
	fmt.Println("choice:", sol.Choice)
	fmt.Printf("objective: %.1f\n", m.Objective(sol.Choice))
	fmt.Println("within capacity:", m.Load(sol.Choice).LessEq(m.Capacity))
	// Output:
	// choice: [0 1 0]
	// objective: 3.4
	// within capacity: true
}

// Exact is the reference a heuristic is measured against.
func ExampleExact() {
	m := &elastico.Market{
		Capacity: elastico.Vector{2, 32, 16, 128},
		Bidders: []elastico.Bidder{
			{Weight: 1, Options: []elastico.Option{{Goodput: 1, Demand: elastico.Vector{2, 16, 8, 64}}}},
			{Weight: 1, Options: []elastico.Option{{Goodput: 0.6, Demand: elastico.Vector{1, 16, 8, 64}}}},
			{Weight: 1, Options: []elastico.Option{{Goodput: 0.6, Demand: elastico.Vector{1, 16, 8, 64}}}},
		},
	}
	choice, objective, err := esp.Exact(context.Background(), m)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(choice, objective)
	// Output:
	// [-1 0 0] 1.2
}

// A zero Config means the documented defaults; a bad value is refused with
// the field's name.
func ExampleNew() {
	_, err := esp.New(esp.Config{Eta0: -1})
	fmt.Println(err)
	// Output:
	// esp: invalid config: Eta0 is -1, want a number in (0, 100] (0 for the default)
}
