package rst

import (
	"math"
	"testing"

	"github.com/elastico/elastico"
)

func gpu(t *testing.T, key string) GPUSpec {
	t.Helper()
	g, ok := GPUSpecOf(key)
	if !ok {
		t.Fatalf("no GPU %s", key)
	}
	return g
}

func llm(t *testing.T, name string) LLMSpec {
	t.Helper()
	m, ok := LLMSpecOf(name)
	if !ok {
		t.Fatalf("no LLM %s", name)
	}
	return m
}

// TestLLMInferenceFamily builds every known model on every known GPU and
// checks what any family must satisfy.
func TestLLMInferenceFamily(t *testing.T) {
	for _, name := range LLMSpecNames() {
		for _, key := range GPUSpecKeys() {
			m, g := llm(t, name), gpu(t, key)
			fam, err := LLMInferenceFamily(m, g, nil)
			weights := m.Params * 2 / (1 << 30)
			if weights+llmWorkspace+0.1*g.Memory > 8*g.Memory {
				if err == nil {
					t.Errorf("%s on %s: %.0f GiB of weights fit eight GPUs?", name, key, weights)
				}
				continue
			}
			if err != nil {
				t.Errorf("%s on %s: %v", name, key, err)
				continue
			}
			seen := map[string]bool{}
			for _, p := range fam {
				if err := p.Validate(); err != nil {
					t.Errorf("%s on %s: %v", name, key, err)
				}
				if seen[p.Config.ID] {
					t.Errorf("%s on %s: %s twice", name, key, p.Config.ID)
				}
				seen[p.Config.ID] = true
				if p.Demand.GPUMemory > g.Memory {
					t.Errorf("%s on %s %s: %.2f GiB above the GPU's %.2f", name, key, p.Config.ID, p.Demand.GPUMemory, g.Memory)
				}
				if p.Demand.GPUMemory < weights/float64(p.Demand.GPUs) {
					t.Errorf("%s on %s %s: %.2f GiB holds less than the weights' shard", name, key, p.Config.ID, p.Demand.GPUMemory)
				}
				if !p.Interpolated || p.Class != elastico.Inference || p.Hardware.GPUModel != g.Model {
					t.Errorf("%s on %s %s: Interpolated %v, class %v, hardware %q", name, key, p.Config.ID, p.Interpolated, p.Class, p.Hardware.GPUModel)
				}
				// The bandwidth roofline: a step reads at least the weights'
				// shard, so no configuration decodes faster than n steps
				// of weights at 0.75 of the peak bandwidth.
				bound := float64(p.Config.MaxSeqs) * decodeBandwidthShare * g.BandwidthGBs * 1e9 / (m.Params * 2 / float64(p.Demand.GPUs))
				if p.Throughput > bound {
					t.Errorf("%s on %s %s: %.0f tokens/s above the bandwidth bound %.0f", name, key, p.Config.ID, p.Throughput, bound)
				}
			}
			validOnServer(t, key, fam)
		}
	}
	// Llama-2-70B's 128 GiB of weights need two 80 GB GPUs and fit no 16 GB V100 server.
	fam, err := LLMInferenceFamily(llm(t, "Llama-2-70B"), gpu(t, "h100-sxm5-80gb"), nil)
	if err != nil || fam[0].Config.GPUs != 2 {
		t.Errorf("Llama-2-70B on H100: first configuration on %d GPUs (%v), want 2", fam[0].Config.GPUs, err)
	}
	if _, err := LLMInferenceFamily(llm(t, "Llama-2-70B"), gpu(t, "v100-sxm2-16gb"), nil); err == nil || !contains(err.Error(), "fits no configuration") {
		t.Errorf("Llama-2-70B on V100: %v, want fits no configuration", err)
	}
}

// TestRooflineKVBudget: throughput rises with the KV budget while more
// sequences fit, and stops rising once the sequence limit binds.
func TestRooflineKVBudget(t *testing.T) {
	for _, tc := range []struct {
		model, gpu string
		gpus, seqs int
	}{
		{"Llama-2-7B", "a100-sxm4-80gb", 1, 64},
		{"Llama-2-13B", "h100-sxm5-80gb", 1, 64},
		{"Llama-2-70B", "h100-sxm5-80gb", 4, 256},
		{"OPT-1.3B", "t4", 1, 64},
	} {
		m, g := llm(t, tc.model), gpu(t, tc.gpu)
		var last LLMPoint
		rising := 0
		for kv := 0.05; kv < 0.8; kv += 0.05 {
			p, ok, err := m.Roofline(g, tc.gpus, kv, tc.seqs)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				continue
			}
			switch {
			case p.Seqs > last.Seqs && !(p.Throughput > last.Throughput):
				t.Errorf("%s on %s: KV %.2f: %d sequences at %.0f tokens/s, fewer at %.0f before", tc.model, tc.gpu, kv, p.Seqs, p.Throughput, last.Throughput)
			case p.Seqs == last.Seqs && p.Throughput != last.Throughput:
				t.Errorf("%s on %s: KV %.2f: %.0f tokens/s, %.0f at the same %d sequences", tc.model, tc.gpu, kv, p.Throughput, last.Throughput, p.Seqs)
			}
			if p.Seqs > last.Seqs {
				rising++
			}
			if p.Seqs > tc.seqs {
				t.Errorf("%s: %d sequences above the limit %d", tc.model, p.Seqs, tc.seqs)
			}
			last = p
		}
		if rising < 2 || last.Seqs != tc.seqs {
			t.Errorf("%s on %s: throughput rose %d times and ended at %d sequences, want a rise to the limit %d", tc.model, tc.gpu, rising, last.Seqs, tc.seqs)
		}
	}
}

// TestRooflineGPUOrder: the same configuration decodes faster on H100 than
// on A100 than on V100, and on more GPUs.
func TestRooflineGPUOrder(t *testing.T) {
	for _, name := range []string{"OPT-1.3B", "OPT-2.7B", "Llama-2-7B"} {
		m := llm(t, name)
		var tput []float64
		for _, key := range []string{"v100-sxm2-16gb", "a100-sxm4-80gb", "h100-sxm5-80gb"} {
			p, ok, err := m.Roofline(gpu(t, key), 1, 0.05, 16)
			if err != nil || !ok {
				t.Fatalf("%s on %s: fits %v, %v", name, key, ok, err)
			}
			tput = append(tput, p.Throughput)
		}
		if !(tput[0] < tput[1] && tput[1] < tput[2]) {
			t.Errorf("%s: V100 %.0f, A100 %.0f, H100 %.0f tokens/s: want V100 < A100 < H100", name, tput[0], tput[1], tput[2])
		}
	}
	m, g := llm(t, "Llama-2-13B"), gpu(t, "a100-sxm4-80gb")
	// With the sequence limit binding on both, two GPUs halve the bytes a
	// step reads but not the engine's overhead, and add the all-reduces.
	one, _, _ := m.Roofline(g, 1, 0.3, 16)
	two, _, _ := m.Roofline(g, 2, 0.3, 16)
	if !(two.Throughput > one.Throughput && two.Throughput < 2*one.Throughput) {
		t.Errorf("Llama-2-13B on A100: %.0f tokens/s on 1 GPU, %.0f on 2: want more, but less than twice", one.Throughput, two.Throughput)
	}
	// Many sequences with little KV each (grouped-query attention): the
	// arithmetic outlasts the memory traffic; few sequences: it does not.
	m70, h := llm(t, "Llama-2-70B"), gpu(t, "h100-sxm5-80gb")
	if p, _, _ := m70.Roofline(h, 8, 0.6, 256); !p.ComputeBound {
		t.Errorf("Llama-2-70B on 8 H100 with %d sequences: memory-bound, want compute-bound", p.Seqs)
	}
	if p, _, _ := m70.Roofline(h, 8, 0.6, 16); p.ComputeBound {
		t.Errorf("Llama-2-70B on 8 H100 with %d sequences: compute-bound, want memory-bound", p.Seqs)
	}
}

// TestRooflineFormula pins one point computed by hand: OPT-1.3B on a V100
// with a tenth of its memory for KV (13 sequences of 120 MiB) and a limit
// of 16.
func TestRooflineFormula(t *testing.T) {
	m, g := llm(t, "OPT-1.3B"), gpu(t, "v100-sxm2-16gb")
	p, ok, err := m.Roofline(g, 1, 0.1, 16)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	kv := 2.0 * 24 * 2048 * 2          // bytes per token
	w := 1.3e9 * 2                     // bytes of weights
	ctx := 512 + 128.0                 // mean context
	bw := 0.75 * 900e9                 // bytes/s
	step := 0.004 + (w+13*ctx*kv)/bw   // memory-bound
	prefill := 2 * 1.3e9 * 2 / 37.5e12 // per output token: 2·P·512/256 at 0.3 × 125 TFLOP/s
	want := 13 / (step + 13*prefill)
	if p.Seqs != 13 || math.Abs(p.Throughput/want-1) > 1e-9 || p.ComputeBound {
		t.Errorf("%d sequences, %.2f tokens/s (compute-bound %v), want 13, %.2f, memory-bound", p.Seqs, p.Throughput, p.ComputeBound, want)
	}
	if mem := w/(1<<30) + 0.1*g.Memory + 1.5; math.Abs(p.Memory-mem) > 1e-9 {
		t.Errorf("memory %.4f GiB, want %.4f", p.Memory, mem)
	}
}

func TestLLMErrors(t *testing.T) {
	good, g := llm(t, "Llama-2-7B"), gpu(t, "a100-sxm4-80gb")
	spec := func(f func(*LLMSpec)) LLMSpec { m := good; f(&m); return m }
	opts := func(f func(*LLMOptions)) *LLMOptions { var o LLMOptions; f(&o); return &o }
	for _, tc := range []struct {
		name string
		m    LLMSpec
		g    GPUSpec
		o    *LLMOptions
		want string
	}{
		{"name", spec(func(m *LLMSpec) { m.Name = "" }), g, nil, "LLMSpec.Name"},
		{"params", spec(func(m *LLMSpec) { m.Params = math.NaN() }), g, nil, "LLMSpec.Params"},
		{"layers", spec(func(m *LLMSpec) { m.Layers = 0 }), g, nil, "LLMSpec.Layers"},
		{"hidden", spec(func(m *LLMSpec) { m.Hidden = -1 }), g, nil, "LLMSpec.Hidden"},
		{"kv hidden", spec(func(m *LLMSpec) { m.KVHidden = 8192 }), g, nil, "LLMSpec.KVHidden"},
		{"prompt", spec(func(m *LLMSpec) { m.Prompt = 0 }), g, nil, "LLMSpec.Prompt"},
		{"output", spec(func(m *LLMSpec) { m.Output = 0 }), g, nil, "LLMSpec.Output"},
		{"overhead", spec(func(m *LLMSpec) { m.Overhead = -1 }), g, nil, "LLMSpec.Overhead"},
		{"gpu", good, GPUSpec{Model: "x"}, nil, "GPUSpec.Memory"},
		{"kv", good, g, opts(func(o *LLMOptions) { o.KVCacheFracs = []float64{0.2, 1} }), "LLMOptions.KVCacheFracs[1]"},
		{"kv twice", good, g, opts(func(o *LLMOptions) { o.KVCacheFracs = []float64{0.2, 0.2} }), "LLMOptions.KVCacheFracs[1] repeats"},
		{"kv empty", good, g, opts(func(o *LLMOptions) { o.KVCacheFracs = []float64{} }), "must not be empty"},
		{"seqs", good, g, opts(func(o *LLMOptions) { o.MaxSeqs = []int{0} }), "LLMOptions.MaxSeqs[0]"},
		{"seqs twice", good, g, opts(func(o *LLMOptions) { o.MaxSeqs = []int{8, 8} }), "LLMOptions.MaxSeqs[1] repeats"},
		{"gpus", good, g, opts(func(o *LLMOptions) { o.GPUs = []int{16} }), "LLMOptions.GPUs[0]"},
		{"no link", good, GPUSpec{Model: "x", Memory: 80, BandwidthGBs: 1, TensorTFLOPs: 1}, opts(func(o *LLMOptions) { o.GPUs = []int{1, 2} }), "GPUSpec.LinkGBs"},
		{"cpu", good, g, opts(func(o *LLMOptions) { o.CPU = -1 }), "LLMOptions.CPU"},
	} {
		if _, err := LLMInferenceFamily(tc.m, tc.g, tc.o); err == nil || !contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.want)
		}
	}
	for _, tc := range []struct {
		gpus, seqs int
		kv         float64
		want       string
	}{
		{0, 16, 0.2, "gpus is 0"},
		{1, 0, 0.2, "maxSeqs is 0"},
		{1, 16, 0, "kvFrac is 0"},
		{1, 16, math.NaN(), "kvFrac is NaN"},
	} {
		if _, _, err := good.Roofline(g, tc.gpus, tc.kv, tc.seqs); err == nil || !contains(err.Error(), tc.want) {
			t.Errorf("Roofline(%d, %g, %d): %v, want %s", tc.gpus, tc.kv, tc.seqs, err, tc.want)
		}
	}
}
