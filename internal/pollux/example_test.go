package pollux_test

import (
	"fmt"

	"github.com/elastico/elastico/internal/pollux"
)

func ExampleLoad() {
	app, err := pollux.Load("cifar10")
	if err != nil {
		fmt.Println(err)
		return
	}
	last := app.Runs[len(app.Runs)-1]
	end := last.Points[len(last.Points)-1]
	fmt.Printf("batch %d: %.0f steps for %.0f steps of progress at batch %d\n",
		last.Batch, end.Iteration, end.Progress, app.Runs[0].Batch)
	p := app.Placements[0]
	fmt.Printf("placement %s, local batch %d: %.0f samples/s\n", p.Placement, p.LocalBatch, p.Samples())
	// Output:
	// batch 4096: 2011 steps for 39085 steps of progress at batch 128
	// placement 1, local batch 32: 748 samples/s
}
