package elastico_test

import (
	"context"
	"fmt"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/pds"
)

// Example runs the cycle of the package documentation once: a host builds a
// State, calls Epoch, and applies the Plan. Two training jobs run on the
// four GPUs of a node; an inference service arrives. One trainer shrinks in
// place (with the learning-rate scale for its smaller batch) and the service
// starts on the GPU it freed.
func Example() {
	node := elastico.Node{ID: "node-a", CPU: 64, RAM: 512}
	for i := range 4 {
		node.GPUs = append(node.GPUs, elastico.GPU{ID: fmt.Sprintf("gpu%d", i), Memory: 80})
	}
	trainer := func(id string, gpus ...string) elastico.Job {
		p := func(cfg string, n, batch int, tput float64) elastico.Profile {
			return elastico.Profile{Family: id, Config: elastico.Configuration{ID: cfg, BatchSize: batch, GPUs: n},
				Demand: elastico.Demand{GPUs: n, SM: 1, GPUMemory: 30, CPU: 8, RAM: 32}, Throughput: tput}
		}
		// The learning rate was tuned for the batch of 256.
		return elastico.Job{ID: id, ReferenceBatch: 256, Profiles: []elastico.Profile{p("x2", 2, 256, 180), p("x1", 1, 128, 110)},
			Running: &elastico.Assignment{ConfigID: "x2", GPUs: gpus}}
	}
	state := elastico.State{
		Now:     time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC),
		Cluster: elastico.Cluster{Nodes: []elastico.Node{node}},
		Jobs: []elastico.Job{
			trainer("resnet", "gpu0", "gpu1"),
			trainer("bert", "gpu2", "gpu3"),
			{ID: "chat", Class: elastico.Inference, Weight: 2, Profiles: []elastico.Profile{{
				Family: "llama", Class: elastico.Inference, Config: elastico.Configuration{ID: "kv60", KVCacheFrac: 0.6, MaxSeqs: 128},
				Demand: elastico.Demand{GPUs: 1, SM: 1, GPUMemory: 60, CPU: 4, RAM: 32}, Throughput: 2000}}},
		},
	}

	sched, err := pds.New(pds.Config{})
	if err != nil {
		panic(err)
	}
	plan, err := sched.Epoch(context.Background(), &state)
	if err != nil {
		panic(err)
	}
	for _, a := range plan.Actions {
		fmt.Printf("%v (batch %d, lr ×%.2f, memory fraction %.3f)\n", a, a.Launch.BatchSize, a.Launch.LRScale, a.Launch.MemoryFraction)
	}
	for i, d := range plan.Decisions {
		state.Jobs[i].Running = d.Assignment // the host applied the actions
	}
	state.Carry = plan.Carry // for the next epoch
	// Output:
	// reconfigure resnet from x2@gpu0,gpu1 to x1@gpu0 (batch 128, lr ×0.50, memory fraction 0.375)
	// start chat to kv60@gpu1 (batch 0, lr ×1.00, memory fraction 0.750)
}
