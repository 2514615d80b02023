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

func ExampleSpace_Enumerate() {
	s := rst.Space{Class: elastico.Training, BatchSizes: []int{64, 128}, Checkpointing: []bool{false, true}, AMP: []bool{true}, GPUs: []int{1, 2}}
	cs, err := s.Enumerate()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, c := range cs {
		fmt.Print(c.ID, " ")
	}
	fmt.Println()
	// Output: b64-amp-g1 b64-ckpt-amp-g1 b128-amp-g1 b128-ckpt-amp-g1 b64-amp-g2 b64-ckpt-amp-g2 b128-amp-g2 b128-ckpt-amp-g2
}

func ExampleParseConfigID() {
	c, err := rst.ParseConfigID("b8-amp-kv40-s64-g2")
	fmt.Printf("%+v %v\n", c, err)
	// Output: {ID:b8-amp-kv40-s64-g2 BatchSize:8 Checkpointing:false AMP:true GPUs:2 KVCacheFrac:0.4 MaxSeqs:64} <nil>
}

func ExamplePrune() {
	family := []elastico.Profile{
		{Config: elastico.Configuration{ID: "b64-g1"}, Demand: elastico.Demand{GPUs: 1, SM: 1, GPUMemory: 8, CPU: 4, RAM: 16}, Throughput: 300},
		{Config: elastico.Configuration{ID: "b64-ckpt-g1"}, Demand: elastico.Demand{GPUs: 1, SM: 1, GPUMemory: 5, CPU: 4, RAM: 16}, Throughput: 225},
		// Twice the GPUs for less than the single GPU's goodput: dominated.
		{Config: elastico.Configuration{ID: "b64-g2"}, Demand: elastico.Demand{GPUs: 2, SM: 1, GPUMemory: 8, CPU: 4, RAM: 16}, Throughput: 290},
	}
	for _, p := range rst.Prune(family) {
		fmt.Println(p.Config.ID)
	}
	// Output:
	// b64-g1
	// b64-ckpt-g1
}

func ExampleChecker() {
	cluster := &elastico.Cluster{Nodes: []elastico.Node{{
		ID: "n0", CPU: 32, RAM: 256,
		GPUs: []elastico.GPU{{ID: "g0", Memory: 16}, {ID: "g1", Memory: 16}},
	}}}
	ch, err := rst.NewChecker(cluster)
	if err != nil {
		fmt.Println(err)
		return
	}
	job := &elastico.Job{ID: "llm", Floor: 100, Profiles: []elastico.Profile{
		{Config: elastico.Configuration{ID: "b32-g1"}, Demand: elastico.Demand{GPUs: 1, SM: 1, GPUMemory: 24, CPU: 4, RAM: 32}, Throughput: 120},
		{Config: elastico.Configuration{ID: "b32-ckpt-g1"}, Demand: elastico.Demand{GPUs: 1, SM: 1, GPUMemory: 12, CPU: 4, RAM: 32}, Throughput: 90},
		{Config: elastico.Configuration{ID: "b32-g4"}, Demand: elastico.Demand{GPUs: 4, SM: 1, GPUMemory: 8, CPU: 4, RAM: 32}, Throughput: 400},
	}}
	kept, dropped, err := ch.Reduce(job)
	fmt.Println(len(kept), "kept;", err)
	for _, d := range dropped {
		fmt.Println(d)
	}
	// Output:
	// 0 kept; rst: job "llm": no feasible configuration: b32-g1: needs 24 GiB per GPU, above every GPU's memory (largest 16 GiB); b32-ckpt-g1: throughput 90 is below the floor 100; b32-g4: needs 4 GPUs with 8 GiB, the cluster has 2
	// b32-g1: needs 24 GiB per GPU, above every GPU's memory (largest 16 GiB)
	// b32-ckpt-g1: throughput 90 is below the floor 100
	// b32-g4: needs 4 GPUs with 8 GiB, the cluster has 2
}

func ExampleGavelFamily() {
	fam, err := rst.GavelFamily("K80", "ResNet-18")
	if err != nil {
		fmt.Println(err)
		return
	}
	kept := rst.Prune(fam)
	fmt.Printf("%d configurations, %d on the Pareto frontier:\n", len(fam), len(kept))
	for _, p := range kept {
		fmt.Printf("%-8s %5.0f samples/s  %4.2f GiB per GPU\n", p.Config.ID, p.Throughput, p.Demand.GPUMemory)
	}
	// Output:
	// 20 configurations, 12 on the Pareto frontier:
	// b16-g1      77 samples/s  0.95 GiB per GPU
	// b32-g1     230 samples/s  1.03 GiB per GPU
	// b64-g1     451 samples/s  1.19 GiB per GPU
	// b32-g2     140 samples/s  0.95 GiB per GPU
	// b64-g2     422 samples/s  1.03 GiB per GPU
	// b128-g2    800 samples/s  1.19 GiB per GPU
	// b64-g4     258 samples/s  0.95 GiB per GPU
	// b128-g4    721 samples/s  1.03 GiB per GPU
	// b256-g4   1384 samples/s  1.19 GiB per GPU
	// b128-g8    431 samples/s  0.95 GiB per GPU
	// b256-g8   1405 samples/s  1.03 GiB per GPU
	// b512-g8   2729 samples/s  1.19 GiB per GPU
}

func ExamplePolluxFamily() {
	fam, err := rst.PolluxFamily("imagenet", nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range rst.Prune(fam) {
		fmt.Printf("%-13s %4.0f samples/s × efficiency %.3f = goodput %4.0f\n", p.Config.ID, p.Throughput, p.Efficiency, p.Goodput())
	}
	// Output:
	// b200-amp-g1    217 samples/s × efficiency 1.000 = goodput  217
	// b230-amp-g2    408 samples/s × efficiency 0.998 = goodput  408
	// b326-amp-g2    424 samples/s × efficiency 0.994 = goodput  421
	// b243-amp-g3    562 samples/s × efficiency 0.998 = goodput  561
	// b345-amp-g3    589 samples/s × efficiency 0.993 = goodput  585
	// b489-amp-g3    608 samples/s × efficiency 0.986 = goodput  600
	// b228-amp-g4    678 samples/s × efficiency 0.999 = goodput  677
	// b324-amp-g4    721 samples/s × efficiency 0.994 = goodput  717
	// b460-amp-g4    766 samples/s × efficiency 0.987 = goodput  756
	// b652-amp-g4    785 samples/s × efficiency 0.978 = goodput  767
	// b800-amp-g4    796 samples/s × efficiency 0.971 = goodput  773
}

func ExampleFitNoiseScale() {
	// Two runs of one model to the same progress, counted in steps at batch
	// 32: 10,000 steps at batch 32 (320,000 samples), 1,750 steps at batch
	// 256 (448,000 samples for the same work).
	runs := []rst.GradientRun{
		{Batch: 32, Points: []rst.GradientPoint{{Progress: 10000, Iteration: 10000, GradSqr: 1, GradVar: 40}}},
		{Batch: 256, Points: []rst.GradientPoint{{Progress: 10000, Iteration: 1750, GradSqr: 1, GradVar: 40}}},
	}
	fit, err := rst.FitNoiseScale(32, runs)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("φ = %.0f samples; efficiency at 256: %.3f (measured %.3f)\n", fit.Phi, fit.Efficiency(256), fit.Batches[1].Observed)
	// Output: φ = 528 samples; efficiency at 256: 0.714 (measured 0.714)
}

func ExampleConfigID() {
	fmt.Println(rst.ConfigID(elastico.Configuration{BatchSize: 64, Checkpointing: true, AMP: true, GPUs: 2}))
	fmt.Println(rst.ConfigID(elastico.Configuration{KVCacheFrac: 0.35, MaxSeqs: 128, GPUs: 1}))
	// Output:
	// b64-ckpt-amp-g2
	// kv35-s128-g1
}

func ExampleMemoryModel() {
	mm, _ := rst.MemoryModelOf("ResNet-50")
	fmt.Printf("static %.2f GiB; local batch 64: %.1f GiB, with checkpointing and AMP %.1f GiB; at most %d per 16 GiB\n",
		mm.Static(), mm.Replica(64, false, false), mm.Replica(64, true, true), mm.MaxLocalBatch(16, false, false))
	// Output: static 1.04 GiB; local batch 64: 5.7 GiB, with checkpointing and AMP 2.2 GiB; at most 204 per 16 GiB
}

func ExampleEstimatedGavelFamily() {
	// ResNet-50 on an H100 nobody profiled: Gavel's V100 measurements
	// scaled by Lambda's published speed-up, marked as not measured.
	fam, err := rst.EstimatedGavelFamily("h100-sxm5-80gb", "ResNet-50")
	if err != nil {
		fmt.Println(err)
		return
	}
	r, _, _ := rst.SpeedRatio("ResNet-50", "h100-sxm5-80gb")
	p := fam[len(fam)-1]
	fmt.Printf("%.2f× V100; %s on %s: %.0f images/s, %.1f GiB per GPU, interpolated %v\n",
		r, p.Config.ID, p.Hardware.GPUModel, p.Throughput, p.Demand.GPUMemory, p.Interpolated)
	// Output: 4.75× V100; b1024-g8 on H100-SXM5-80GB: 6259 images/s, 10.4 GiB per GPU, interpolated true
}

func ExampleLLMInferenceFamily() {
	m, _ := rst.LLMSpecOf("Llama-2-70B")
	g, _ := rst.GPUSpecOf("h100-sxm5-80gb")
	fam, err := rst.LLMInferenceFamily(m, g, &rst.LLMOptions{KVCacheFracs: []float64{0.1, 0.3}, MaxSeqs: []int{64}, GPUs: []int{2, 4}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range fam {
		fmt.Printf("%-15s %5.0f tokens/s  %4.1f GiB per GPU\n", p.Config.ID, p.Throughput, p.Demand.GPUMemory)
	}
	// 128 GiB of weights need two GPUs; on four, a tenth of each GPU
	// already holds the 64 sequences, so a larger budget adds nothing.
	// Output:
	// amp-kv10-s64-g2   972 tokens/s  73.7 GiB per GPU
	// amp-kv10-s64-g4  1773 tokens/s  41.6 GiB per GPU
	// amp-kv30-s64-g4  1773 tokens/s  57.5 GiB per GPU
}
