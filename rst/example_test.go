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

func ExampleNoiseScale() {
	// A model with gradient noise scale φ = 2000 samples, progress counted at batch 100.
	ns := rst.NoiseScale{Phi: 2000, Base: 100}
	for _, b := range []int{100, 500, 2000, 8000} {
		fmt.Printf("batch %5d: efficiency %.3f, %7.0f samples for 1e6 reference samples\n", b, ns.Efficiency(b), ns.Samples(1e6, b))
	}
	// Output:
	// batch   100: efficiency 1.000, 1000000 samples for 1e6 reference samples
	// batch   500: efficiency 0.840, 1190476 samples for 1e6 reference samples
	// batch  2000: efficiency 0.525, 1904762 samples for 1e6 reference samples
	// batch  8000: efficiency 0.210, 4761905 samples for 1e6 reference samples
}

func ExamplePolluxNoiseScale() {
	fit, err := rst.PolluxNoiseScale("yolov3")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("φ = %.0f samples at base batch %d\n", fit.Phi, fit.Base)
	for _, b := range fit.Batches {
		fmt.Printf("batch %3d: measured %.3f, model %.3f\n", b.Batch, b.Observed, b.Model)
	}
	// Output:
	// φ = 511 samples at base batch 8
	// batch   8: measured 1.000, model 1.000
	// batch  16: measured 0.978, model 0.985
	// batch  32: measured 0.943, model 0.956
	// batch  64: measured 0.887, model 0.903
	// batch 128: measured 0.801, model 0.812
	// batch 256: measured 0.672, model 0.677
	// batch 512: measured 0.514, model 0.507
}
