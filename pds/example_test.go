package pds_test

import (
	"context"
	"fmt"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/pds"
)

// A gang of two GPUs finds no node with two GPUs free: pds moves r1 to
// the free GPU of node b, which costs r1 a restart and gains the gang a
// node, and starts the gang on node a.
func ExampleScheduler_Epoch() {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	gpus := func(node string) []elastico.GPU {
		return []elastico.GPU{{ID: node + "/0", Memory: 40}, {ID: node + "/1", Memory: 40}}
	}
	one := func(id string, gpus int, running ...string) elastico.Job {
		j := elastico.Job{ID: id, Arrival: now, Profiles: []elastico.Profile{{
			Family: id, Config: elastico.Configuration{ID: fmt.Sprintf("x%d", gpus), BatchSize: 64, GPUs: gpus},
			Demand: elastico.Demand{GPUs: gpus, SM: 0.8, GPUMemory: 20, CPU: 4, RAM: 16}, Throughput: 100,
		}}}
		if running != nil {
			j.Running = &elastico.Assignment{ConfigID: j.Profiles[0].Config.ID, GPUs: running}
		}
		return j
	}
	state := &elastico.State{
		Now: now,
		Cluster: elastico.Cluster{Nodes: []elastico.Node{
			{ID: "a", CPU: 32, RAM: 256, GPUs: gpus("a")},
			{ID: "b", CPU: 32, RAM: 256, GPUs: gpus("b")},
		}},
		Jobs: []elastico.Job{one("r1", 1, "a/0"), one("r2", 1, "b/0"), one("gang", 2)},
	}
	s, err := pds.New(pds.Config{})
	if err != nil {
		panic(err)
	}
	plan, err := s.Epoch(context.Background(), state)
	if err != nil {
		panic(err)
	}
	for _, d := range plan.Decisions {
		if d.Assignment != nil {
			fmt.Printf("%s runs %s on %v\n", d.JobID, d.Assignment.ConfigID, d.Assignment.GPUs)
		} else {
			fmt.Printf("%s waits: %v\n", d.JobID, d.Status)
		}
	}
	fmt.Println(len(plan.Actions), "actions")
	// Output:
	// r1 runs x1 on [b/1]
	// r2 runs x1 on [b/0]
	// gang runs x2 on [a/0 a/1]
	// 2 actions
}

// Each ablation of the paper's Table 5 is a Config switch.
func ExampleAblation() {
	variants := map[string]pds.Ablation{
		"-RST": {FixedConfiguration: true},
		"-ESP": {GreedyFirstFit: true},
		"-IAC": {MemoryOnlyColocation: true},
		"-PDS": {NoReservation: true, NoCoordinatedReconfiguration: true},
	}
	for _, name := range []string{"-RST", "-ESP", "-IAC", "-PDS"} {
		s, err := pds.New(pds.Config{Ablation: variants[name]})
		fmt.Println(name, s != nil, err)
	}
	// Output:
	// -RST true <nil>
	// -ESP true <nil>
	// -IAC true <nil>
	// -PDS true <nil>
}
