package iac_test

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
)

func ExampleDefault() {
	m, err := iac.Default()
	if err != nil {
		panic(err)
	}
	// Two training jobs as Gavel profiles them on a P100: no counters, only
	// their attributes and isolated throughput (samples/s).
	resnet := &elastico.Profile{Family: "ResNet-50", Class: elastico.Training, Params: 26e6, Throughput: 2.619 * 64,
		Config: elastico.Configuration{BatchSize: 64, GPUs: 1}}
	lm := &elastico.Profile{Family: "LM", Class: elastico.Training, Params: 14e6, Throughput: 58.17 * 20,
		Config: elastico.Configuration{BatchSize: 20, GPUs: 1}}
	// Gavel measured 1.29× and 3.07× (this pair is in the training data).
	fmt.Printf("ResNet-50 next to the LM runs %.2f× slower\n", m.Slowdown(resnet, lm))
	fmt.Printf("the LM next to ResNet-50 runs %.2f× slower\n", m.Slowdown(lm, resnet))
	// A scheduler asks the slower of the two against the tolerance.
	worst := max(m.Slowdown(resnet, lm), m.Slowdown(lm, resnet))
	for _, q := range []float64{0, 1} {
		fmt.Printf("queue pressure %g: τ = %.3f, share: %v\n", q, iac.DefaultTolerance.At(q), !iac.DefaultTolerance.Violates(worst, q))
	}
	// Output:
	// ResNet-50 next to the LM runs 1.34× slower
	// the LM next to ResNet-50 runs 2.82× slower
	// queue pressure 0: τ = 1.111, share: false
	// queue pressure 1: τ = 1.611, share: false
}

// A scheduler that asks about the same profiles beside many others
// prepares each once and predicts from the prepared ones: the same answer,
// for about two thirds of the work.
func ExampleMLP_SlowdownPrepared() {
	m, err := iac.Default()
	if err != nil {
		panic(err)
	}
	jobs := []elastico.Profile{
		{Family: "ResNet-50", Class: elastico.Training, Params: 26e6, Throughput: 2.619 * 64, Config: elastico.Configuration{BatchSize: 64, GPUs: 1}},
		{Family: "LM", Class: elastico.Training, Params: 14e6, Throughput: 58.17 * 20, Config: elastico.Configuration{BatchSize: 20, GPUs: 1}},
		{Family: "A3C", Class: elastico.Training, Params: 4e6, Throughput: 1200, Config: elastico.Configuration{GPUs: 1}},
	}
	n := m.PreparedLen()
	var prepared []float64 // one slab: profile i is prepared[i*n : (i+1)*n]
	for i := range jobs {
		prepared = m.AppendPrepared(prepared, &jobs[i])
	}
	for v := range jobs {
		for a := range jobs {
			if v == a {
				continue
			}
			s, err := m.SlowdownPrepared(prepared[v*n:(v+1)*n], prepared[a*n:(a+1)*n])
			if err != nil {
				panic(err)
			}
			fmt.Printf("%-9s beside %-9s %.2f× (Slowdown agrees: %v)\n", jobs[v].Family, jobs[a].Family, s, s == m.Slowdown(&jobs[v], &jobs[a]))
		}
	}
	// Output:
	// ResNet-50 beside LM        1.34× (Slowdown agrees: true)
	// ResNet-50 beside A3C       1.01× (Slowdown agrees: true)
	// LM        beside ResNet-50 2.82× (Slowdown agrees: true)
	// LM        beside A3C       1.03× (Slowdown agrees: true)
	// A3C       beside ResNet-50 2.18× (Slowdown agrees: true)
	// A3C       beside LM        1.59× (Slowdown agrees: true)
}

func ExampleTolerance_At() {
	tol := iac.DefaultTolerance
	for _, q := range []float64{0, 0.1, 0.3, 1, 5} {
		fmt.Printf("queue pressure %.1f: a pair may share up to %.3f× slowdown\n", q, tol.At(q))
	}
	// Output:
	// queue pressure 0.0: a pair may share up to 1.111× slowdown
	// queue pressure 0.1: a pair may share up to 1.222× slowdown
	// queue pressure 0.3: a pair may share up to 1.444× slowdown
	// queue pressure 1.0: a pair may share up to 1.611× slowdown
	// queue pressure 5.0: a pair may share up to 1.611× slowdown
}

// A user's own measurements: profiles.csv and pairs.csv (in files, read them
// with iac.ReadDatasetFS), then one call to retrain.
func ExampleFit() {
	profiles := `id,family,class,batch_size,amp,checkpointing,kv_cache_frac,params,gpus,throughput,gr_engine_active,sm_active,sm_occupancy,tensor_active,fp_active,dram_active,fb_used_frac,pcie_frac,nvlink_frac,power_frac
bert-32,bert,training,32,1,0,,3.4e8,1,210,0.92,0.85,0.40,0.55,0.20,0.35,0.60,0.02,0,0.80
bert-8,bert,training,8,1,0,,3.4e8,1,95,0.70,0.55,0.25,0.30,0.10,0.20,0.30,0.02,0,0.55
vllm-7b,llama,inference,64,1,0,0.35,7e9,1,2400,0.60,0.45,0.20,0.35,0.05,0.70,0.40,0.01,0,0.60
vllm-1b,llama,inference,16,1,0,0.2,1e9,1,5200,0.40,0.30,0.15,0.20,0.05,0.50,0.25,0.01,0,0.45
`
	pairs := `a,b,speed_a,speed_b
bert-32,vllm-7b,0.61,0.72
bert-32,vllm-1b,0.74,0.81
bert-8,vllm-7b,0.80,0.77
bert-8,vllm-1b,0.88,0.90
bert-32,bert-8,0.66,0.79
vllm-7b,vllm-1b,0.70,0.83
bert-32,bert-32,0.55,0.55
bert-8,bert-8,0.83,0.83
vllm-7b,vllm-7b,0.62,0.62
vllm-1b,vllm-1b,0.86,0.86
`
	d, err := iac.ReadDataset(strings.NewReader(profiles), "profiles.csv", strings.NewReader(pairs), "pairs.csv")
	if err != nil {
		panic(err)
	}
	m, err := iac.Fit(d, iac.TrainConfig{Hidden: []int{8, 4}, MaxEpochs: 200}, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		panic(err)
	}
	fmt.Println(len(d.Samples()), "measured slowdowns;", len(m.Inputs()), "inputs")
	s := m.Slowdown(&d.Profiles[0], &d.Profiles[2])
	fmt.Printf("bert-32 next to vllm-7b: predicted %.2f×, measured %.2f×\n", s, 1/0.61)
	// Output:
	// 16 measured slowdowns; 32 inputs
	// bert-32 next to vllm-7b: predicted 1.54×, measured 1.64×
}

func ExampleReadProfiles_errors() {
	_, err := iac.ReadProfiles(strings.NewReader(
		"id,family,class,batch_size,amp,checkpointing,kv_cache_frac,params,gpus,throughput,gr_engine_active,sm_active,sm_occupancy,tensor_active,fp_active,dram_active,fb_used_frac,pcie_frac,nvlink_frac,power_frac\n"+
			"r50,resnet50,training,64,0,0,,2.5e7,1,410,0.9,1.7,,,,,,,,\n"), "profiles.csv")
	fmt.Println(err)
	// Output:
	// iac: profiles.csv:2:12 (sm_active): 1.7 is out of range, want [0, 1]
}
