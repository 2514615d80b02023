package sim_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/sim"
	"github.com/elastico/elastico/sim/baseline"
)

// Replay a window of the shipped Gavel trace on 16 V100s under the
// Volcano-like baseline.
func Example() {
	truth, err := sim.GavelTruth("V100")
	if err != nil {
		panic(err)
	}
	trace, err := sim.ReadShipped("gavel/0e4a51.trace")
	if err != nil {
		panic(err)
	}
	jobs, stats, err := truth.Workload(trace, sim.WorkloadOptions{GPUs: 16, Load: 1, Jobs: 40, Seed: 1})
	if err != nil {
		panic(err)
	}
	cluster, _ := truth.GPU.Cluster(16)
	r, err := sim.Run(context.Background(), sim.Config{Truth: truth, Cluster: cluster, Policy: baseline.Volcano{}, Jobs: jobs})
	if err != nil {
		panic(err)
	}
	m := r.Metrics()
	fmt.Printf("%d jobs, offered load %.2f, %d unfinished\n", stats.Jobs, stats.OfferedLoad, int(m["unfinished"]))
	// Output: 40 jobs, offered load 1.00, 0 unfinished
}

// Read a trace in the generic CSV format.
func ExampleReadCSV() {
	in := "id,arrival,gpus,duration,family,batch\n" +
		"a,0,1,3600,ResNet-50,64\n" +
		"b,30,4,7200,LM,20\n"
	tr, err := sim.ReadTrace(strings.NewReader(in), "csv", "jobs.csv")
	if err != nil {
		panic(err)
	}
	for _, j := range tr.Jobs {
		fmt.Println(j.ID, j.Family, j.GPUs, j.Duration)
	}
	// Output:
	// a ResNet-50 1 3600
	// b LM 4 7200
}

// The ground truth says how fast a job runs next to another on one GPU:
// here a pair Gavel measured on the V100.
func ExampleTruth_Speed() {
	truth, _ := sim.GavelTruth("V100")
	a, _ := truth.Config("ResNet-50", 64, 1)
	b, _ := truth.Config("Transformer", 128, 1)
	s, measured := truth.Speed(a.Kind, b.Kind)
	fmt.Printf("ResNet-50 (64) next to Transformer (128): %.2f of its speed alone, measured %v\n", s, measured)
	// Output: ResNet-50 (64) next to Transformer (128): 0.64 of its speed alone, measured true
}

// Compare policies over seeds, with 95 % confidence intervals.
func ExampleExperiment() {
	truth, _ := sim.GavelTruth("V100")
	trace, _ := sim.ReadShipped("gavel/0e4a51.trace")
	e := &sim.Experiment{
		Truth: truth, Trace: trace, GPUs: 16, Seeds: []uint64{1, 2, 3},
		Workload: sim.WorkloadOptions{Load: 1.5, Jobs: 30},
		Policies: []sim.Policy{
			{Name: "volcano", New: func() (elastico.Scheduler, error) { return baseline.Volcano{}, nil }},
			{Name: "lucid", New: func() (elastico.Scheduler, error) { return &baseline.Lucid{}, nil }},
		},
	}
	out, err := e.Execute(context.Background())
	if err != nil {
		panic(err)
	}
	s := sim.Summarize(out, "volcano")
	for _, p := range s.Policies {
		fmt.Printf("%s: %d seeds\n", p.Policy, p.Metrics["jct_avg"].N)
	}
	// Output:
	// volcano: 3 seeds
	// lucid: 3 seeds
}
