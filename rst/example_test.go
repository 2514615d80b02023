package rst_test

import (
	"fmt"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/rst"
)

func ExampleLRScale() {
	// A job tuned at batch 256 is reshaped to batch 64.
	fmt.Printf("SGD %.3g, Adam %.3g, AdaScale %.3g\n",
		rst.LRScale(elastico.SGD, 256, 64), rst.LRScale(elastico.Adam, 256, 64), rst.LRScale(elastico.AdaScale, 256, 64))
	// Output: SGD 0.25, Adam 0.5, AdaScale 1
}

func ExampleLaunch() {
	job := &elastico.Job{ID: "bert", Class: elastico.Training, Optimizer: elastico.Adam, ReferenceBatch: 32}
	p := &elastico.Profile{
		Config: elastico.Configuration{ID: "b128-amp-g2", BatchSize: 128, AMP: true, GPUs: 2},
		Demand: elastico.Demand{GPUs: 2, SM: 0.6, GPUMemory: 10},
	}
	l := rst.Launch(job, p, []rst.LaunchGPU{{Index: 0, Memory: 40, Shared: true}, {Index: 1, Memory: 40, Shared: true}})
	for _, e := range l.Env() {
		fmt.Println(e)
	}
	// Output:
	// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=60
	// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=10240MB,1=10240MB
	// ELASTICO_AMP=1
	// ELASTICO_BATCH_SIZE=128
	// ELASTICO_CHECKPOINTING=0
	// ELASTICO_LR_SCALE=2
	// ELASTICO_MEMORY_FRACTION=0.2500
	// PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:512
}

func ExampleMinDemand() {
	family := []elastico.Profile{
		{Config: elastico.Configuration{ID: "b64-g1"}, Demand: elastico.Demand{GPUs: 1, SM: 1, GPUMemory: 12, CPU: 4, RAM: 16}},
		{Config: elastico.Configuration{ID: "b64-ckpt-g2"}, Demand: elastico.Demand{GPUs: 2, SM: 0.4, GPUMemory: 5, CPU: 4, RAM: 16}},
	}
	fmt.Println(rst.MinDemand(family))
	// Output: [0.8 10 4 16]
}

func ExampleNormalizedGoodput() {
	family := []elastico.Profile{
		{Throughput: 1000, Efficiency: 1},   // batch 64
		{Throughput: 1800, Efficiency: 0.8}, // batch 256: more samples/s, less progress per sample
	}
	fmt.Printf("%.2f\n", rst.NormalizedGoodput(family))
	// Output: [0.69 1.00]
}
