package iac_test

import (
	"fmt"
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

func ExampleReadProfiles_errors() {
	_, err := iac.ReadProfiles(strings.NewReader(
		"id,family,class,batch_size,amp,checkpointing,kv_cache_frac,params,gpus,throughput,gr_engine_active,sm_active,sm_occupancy,tensor_active,fp_active,dram_active,fb_used_frac,pcie_frac,nvlink_frac,power_frac\n"+
			"r50,resnet50,training,64,0,0,,2.5e7,1,410,0.9,1.7,,,,,,,,\n"), "profiles.csv")
	fmt.Println(err)
	// Output:
	// iac: profiles.csv:2:12 (sm_active): 1.7 is out of range, want [0, 1]
}
