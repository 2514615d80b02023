package train_test

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/elastico/elastico/iac"
	"github.com/elastico/elastico/iac/train"
)

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
	m, err := train.Fit(d, iac.TrainConfig{Hidden: []int{8, 4}, MaxEpochs: 200}, rand.New(rand.NewPCG(1, 0)))
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
