package baseline_test

import (
	"context"
	"fmt"
	"time"

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
		{ID: "big", Profiles: []elastico.Profile{prof(6)}},
		{ID: "bigger", Profiles: []elastico.Profile{prof(4)}},
		{ID: "small", Profiles: []elastico.Profile{prof(2)}},
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

// Pollux reallocates the whole cluster every epoch: the more a job's
// goodput grows with GPUs, the more it gets, and every job gets one while
// GPUs last (the fairness knob, p = −1). The eighth GPU stays idle: the
// flat job gains nothing from a second, and the others' next
// configurations need two or four more.
func ExamplePollux() {
	cluster, _ := sim.V100.Cluster(8)
	family := func(tput map[int]float64) []elastico.Profile {
		var fam []elastico.Profile
		for _, n := range []int{1, 2, 4, 8} {
			fam = append(fam, elastico.Profile{
				Config:     elastico.Configuration{ID: fmt.Sprintf("x%d", n), GPUs: n, BatchSize: 64 * n},
				Demand:     elastico.Demand{GPUs: n, SM: 1, GPUMemory: 8, CPU: 4, RAM: 12},
				Throughput: tput[n],
			})
		}
		return fam
	}
	arrival := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	st := &elastico.State{Now: arrival.Add(time.Hour), Cluster: cluster, Jobs: []elastico.Job{
		{ID: "scales", Arrival: arrival, Profiles: family(map[int]float64{1: 100, 2: 195, 4: 380, 8: 700})},
		{ID: "some", Arrival: arrival, Profiles: family(map[int]float64{1: 100, 2: 150, 4: 180, 8: 190})},
		{ID: "flat", Arrival: arrival, Profiles: family(map[int]float64{1: 100, 2: 100, 4: 100, 8: 100})},
	}}
	plan, err := baseline.Pollux{}.Epoch(context.Background(), st)
	if err != nil {
		panic(err)
	}
	for _, d := range plan.Decisions {
		fmt.Println(d.JobID, "runs", d.Assignment.ConfigID, "on", d.Assignment.GPUs)
	}
	// Output:
	// scales runs x4 on [gpu0000 gpu0001 gpu0002 gpu0003]
	// some runs x2 on [gpu0004 gpu0005]
	// flat runs x1 on [gpu0006]
}
