package annotation_test

import (
	"fmt"
	"strings"

	"github.com/elastico/elastico/examples/kubernetes/annotation"
)

// A pod opts in by carrying its job and configuration family.
func ExampleParseJob() {
	job, err := annotation.ParseJob("serving/llama", `{
	  "class": "inference", "model": "llama-7b",
	  "family": [
	    {"id": "kv20", "gpus": 1, "sm": 0.3, "gpuMemoryGiB": 20, "kvCacheFrac": 0.2, "maxSeqs": 32, "throughput": 900},
	    {"id": "kv50", "gpus": 1, "sm": 0.5, "gpuMemoryGiB": 32, "kvCacheFrac": 0.5, "maxSeqs": 128, "throughput": 2100}
	  ]}`)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range job.Profiles {
		fmt.Printf("%s %s: %d GPU, SM %.1f, %g GiB, %g tokens/s\n", job.Class, p.Config.ID, p.Demand.GPUs, p.Demand.SM, p.Demand.GPUMemory, p.Throughput)
	}
	_, err = annotation.ParseJob("serving/llama", `{"class": "inference", "family": [{"id": "kv20", "gpus": 1, "sm": 0}]}`)
	fmt.Println(err)
	// Output:
	// inference kv20: 1 GPU, SM 0.3, 20 GiB, 900 tokens/s
	// inference kv50: 1 GPU, SM 0.5, 32 GiB, 2100 tokens/s
	// annotation: elastico.io/job: elastico: job "serving/llama": Profiles[0].Demand.SM is 0, want a share in (0, 1]
}

// What a container reads from its downward-API volume.
func ExampleDecision_Env() {
	d := annotation.Decision{
		Status: "Scheduled", Generation: 1, Config: "kv20", Node: "gpu-a",
		GPUs: []annotation.GPU{{Index: 3, Shared: true}}, SM: 0.3, MemoryGiB: 20, Slowdown: 1.05, Action: "start",
		Launch: []string{"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30", "ELASTICO_MEMORY_FRACTION=0.5000"},
	}
	fmt.Print(d.Annotations()[annotation.Env])
	fmt.Println(strings.Repeat("-", 10))
	fmt.Println(d.Annotations()[annotation.GPUs], d.Annotations()[annotation.GPUSharing])
	// Output:
	// CUDA_DEVICE_ORDER=PCI_BUS_ID
	// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30
	// CUDA_VISIBLE_DEVICES=3
	// ELASTICO_CONFIG=kv20
	// ELASTICO_GENERATION=1
	// ELASTICO_MEMORY_FRACTION=0.5000
	// ----------
	// 3 shared
}
