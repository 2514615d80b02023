package baseline_test

import (
	"context"
	"fmt"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/sim"
	"github.com/elastico/elastico/sim/baseline"
)

// Volcano starts waiting gangs first come, first served on free whole GPUs,
// under the configuration each job asked for (the first of its family).
func ExampleVolcano() {
	cluster, _ := sim.V100.Cluster(8)
	prof := func(gpus int) elastico.Profile {
		return elastico.Profile{
			Config:     elastico.Configuration{ID: fmt.Sprintf("x%d", gpus), GPUs: gpus},
			Demand:     elastico.Demand{GPUs: gpus, SM: 0.5, GPUMemory: 4, CPU: 4, RAM: 12},
			Throughput: 100,
		}
	}
	st := &elastico.State{Cluster: cluster, Jobs: []elastico.Job{
		{ID: "big", Family: []elastico.Profile{prof(6)}},
		{ID: "bigger", Family: []elastico.Profile{prof(4)}},
		{ID: "small", Family: []elastico.Profile{prof(2)}},
	}}
	plan, err := baseline.Volcano{}.Epoch(context.Background(), st)
	if err != nil {
		panic(err)
	}
	for _, d := range plan.Decisions {
		if d.Assignment != nil {
			fmt.Println(d.JobID, "runs on", d.Assignment.GPUs)
		} else {
			fmt.Println(d.JobID, "waits:", d.Status)
		}
	}
	// Output:
	// big runs on [gpu0000 gpu0001 gpu0002 gpu0003 gpu0004 gpu0005]
	// bigger waits: Unplaceable: gang of 4 whole GPUs does not fit the free GPUs
	// small runs on [gpu0006 gpu0007]
}
