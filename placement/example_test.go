package placement_test

import (
	"context"
	"fmt"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/placement"
)

// A running job stays where it is; the newcomers go where they leave the
// least room free (serve fills the running job's GPU exactly); a 2-GPU gang
// that finds no node with two GPUs free waits.
func ExamplePlacer_Place() {
	gpu := func(id string) elastico.GPU { return elastico.GPU{ID: id, Memory: 40, Shared: true} }
	cl := &elastico.Cluster{Nodes: []elastico.Node{
		{ID: "a", CPU: 32, RAM: 256, GPUs: []elastico.GPU{gpu("a0"), gpu("a1")}},
		{ID: "b", CPU: 32, RAM: 256, GPUs: []elastico.GPU{gpu("b0")}},
	}}
	job := func(id string, gpus int, sm, mem float64) elastico.PlacementItem {
		return elastico.PlacementItem{
			Job:     &elastico.Job{ID: id},
			Profile: &elastico.Profile{Demand: elastico.Demand{GPUs: gpus, SM: sm, GPUMemory: mem, CPU: 4, RAM: 16}},
		}
	}
	running := job("running", 1, 0.6, 20)
	running.Current = []elastico.GPURef{{Node: 0, GPU: 1}} // on a1
	req := &elastico.PlacementRequest{Cluster: cl, Items: []elastico.PlacementItem{
		running,
		job("train", 1, 0.5, 10),
		job("serve", 1, 0.4, 12),
		job("gang", 2, 0.5, 8),
	}}

	p, err := placement.New(placement.Config{}) // SM ≤ 1 and 2 jobs per GPU
	if err != nil {
		panic(err)
	}
	var out elastico.Placement
	if err := p.Place(context.Background(), req, &out); err != nil {
		panic(err)
	}
	for i, it := range req.Items {
		if out.GPUs[i] == nil {
			fmt.Printf("%s waits: %s\n", it.Job.ID, out.Reasons[i])
			continue
		}
		fmt.Printf("%s on", it.Job.ID)
		for _, g := range out.GPUs[i] {
			fmt.Printf(" %s", cl.Nodes[g.Node].GPUs[g.GPU].ID)
		}
		fmt.Println()
	}
	// Output:
	// running on a1
	// train on a0
	// serve on a1
	// gang waits: no node has 2 GPUs with 0.50 SM and 8.0 GiB free each, and 8.0 CPU and 32.0 GiB RAM free
}
