package adapter_test

import (
	"fmt"

	"github.com/elastico/elastico/examples/slurm/adapter"
)

// A job opts in with its comment; the spec after "elastico:" is its class,
// its scheduling parameters and its configurations.
func ExampleParseSpec() {
	comment := "elastico:train resnet50 opt=sgd ref=128 | b=128 sm=.5 mem=6 tput=520 | b=256 sm=1 mem=11 tput=900 amp"
	spec, err := adapter.ParseSpec(comment[len(adapter.Prefix):])
	if err != nil {
		fmt.Println(err)
		return
	}
	job := spec.Job("42")
	fmt.Println(job.ID, job.Class, job.Optimizer, job.ReferenceBatch)
	for _, p := range job.Profiles {
		fmt.Printf("%s: %d GPU at %.2f SM, %g GiB, %g samples/s\n", p.Config.ID, p.Demand.GPUs, p.Demand.SM, p.Demand.GPUMemory, p.Throughput)
	}
	// Output:
	// 42 training sgd 128
	// b128-g1: 1 GPU at 0.50 SM, 6 GiB, 520 samples/s
	// b256-amp-g1: 1 GPU at 1.00 SM, 11 GiB, 900 samples/s
}

// A comment that does not parse says what is wrong, where.
func ExampleParseSpec_error() {
	_, err := adapter.ParseSpec("infer llama7b | kv=.3 seqs=64 sm=.4 mem=24")
	fmt.Println(err)
	// Output:
	// adapter: configuration 1 ("kv=.3 seqs=64 sm=.4 mem=24"): tput= is missing (isolated throughput)
}

// ParseGres reads GRES the way Slurm prints them for nodes and jobs.
func ExampleParseGres() {
	gs, _ := adapter.ParseGres("gres:shard:gpu1:2,gres:shard:gpu3:2")
	fmt.Println(gs, adapter.FormatGres(gs))
	// Output:
	// [shard:gpu1:2 shard:gpu3:2] shard:gpu1:2,shard:gpu3:2
}
