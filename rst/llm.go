package rst

import (
	"math"
	"slices"

	"github.com/elastico/elastico"
)

// LLMSpec is a decoder-only language model served offline by a vLLM-style
// engine (a queue of prompts, continuous batching, a paged KV cache), as
// the roofline model (LLMSpec.Roofline) sees it.
type LLMSpec struct {
	Name   string
	Params float64 // parameters, held in 16 bits
	Layers int
	Hidden int // model width
	// KVHidden is the width of the key and value projections: Hidden under
	// multi-head attention, Hidden·KVHeads/Heads under grouped-query
	// attention. Zero means Hidden.
	KVHidden int
	// Prompt and Output are the mean tokens per request.
	Prompt, Output int
	// Overhead is the seconds per decoding step outside the GPU's kernels:
	// the engine's scheduling, sampling and kernel launches.
	Overhead float64
}

// validate reports the first field of m that is unusable.
func (m *LLMSpec) validate() error {
	switch {
	case m.Name == "":
		return errorf("LLMSpec.Name is empty")
	case !(m.Params > 0 && m.Params <= math.MaxFloat64):
		return errorf("LLMSpec.Params of %s is %g, want > 0", m.Name, m.Params)
	case m.Layers < 1:
		return errorf("LLMSpec.Layers of %s is %d, want ≥ 1", m.Name, m.Layers)
	case m.Hidden < 1:
		return errorf("LLMSpec.Hidden of %s is %d, want ≥ 1", m.Name, m.Hidden)
	case m.KVHidden < 0 || m.KVHidden > m.Hidden:
		return errorf("LLMSpec.KVHidden of %s is %d, want 0 (= Hidden) or a width in [1, Hidden = %d]", m.Name, m.KVHidden, m.Hidden)
	case m.Prompt < 1:
		return errorf("LLMSpec.Prompt of %s is %d, want ≥ 1 token", m.Name, m.Prompt)
	case m.Output < 1:
		return errorf("LLMSpec.Output of %s is %d, want ≥ 1 token", m.Name, m.Output)
	case !(m.Overhead >= 0 && m.Overhead <= math.MaxFloat64):
		return errorf("LLMSpec.Overhead of %s is %g, want ≥ 0 seconds", m.Name, m.Overhead)
	}
	return nil
}

// The models LLMSpecOf knows. Shapes: OPT from Zhang et al. (2022), "OPT:
// Open Pre-trained Transformer Language Models", Table 1; Llama 2 from
// Touvron et al. (2023), "Llama 2: Open Foundation and Fine-Tuned Chat
// Models", and the models' published config.json (70B: 64 heads, 8 of
// them for keys and values). Requests of 512 prompt and 256 output tokens
// and 4 ms of engine overhead per step are the offline batch job the
// simulator's inference families stand for.
var llmSpecs = map[string]LLMSpec{
	"OPT-1.3B":    {Name: "OPT-1.3B", Params: 1.3e9, Layers: 24, Hidden: 2048, Prompt: 512, Output: 256, Overhead: 0.004},
	"OPT-2.7B":    {Name: "OPT-2.7B", Params: 2.7e9, Layers: 32, Hidden: 2560, Prompt: 512, Output: 256, Overhead: 0.004},
	"Llama-2-7B":  {Name: "Llama-2-7B", Params: 6.74e9, Layers: 32, Hidden: 4096, Prompt: 512, Output: 256, Overhead: 0.004},
	"Llama-2-13B": {Name: "Llama-2-13B", Params: 13.02e9, Layers: 40, Hidden: 5120, Prompt: 512, Output: 256, Overhead: 0.004},
	"Llama-2-70B": {Name: "Llama-2-70B", Params: 68.98e9, Layers: 80, Hidden: 8192, KVHidden: 1024, Prompt: 512, Output: 256, Overhead: 0.004},
}

// LLMSpecOf returns a known model ("OPT-1.3B", "OPT-2.7B", "Llama-2-7B",
// "Llama-2-13B", "Llama-2-70B").
func LLMSpecOf(name string) (LLMSpec, bool) {
	m, ok := llmSpecs[name]
	return m, ok
}

// LLMSpecNames returns the names LLMSpecOf knows, sorted.
func LLMSpecNames() []string {
	out := make([]string, 0, len(llmSpecs))
	for k := range llmSpecs {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// Constants of the roofline model.
const (
	// Achieved fractions of the datasheet peaks: decoding streams the
	// weights and the KV cache at about three quarters of the peak
	// bandwidth; prefill's large matrix products reach about 30 % of the
	// tensor cores' peak in a serving engine.
	decodeBandwidthShare, prefillFLOPShare = 0.75, 0.3
	// llmWorkspace is the engine's activations and CUDA context, GiB per GPU.
	llmWorkspace = 1.5
	// allReduceLatency is the fixed cost of one small all-reduce within a
	// server (seconds): the order NCCL reaches for messages of a few MiB.
	allReduceLatency = 10e-6
)

// LLMPoint is the roofline model's answer for one configuration.
type LLMPoint struct {
	// Seqs is the sequences decoded at once: the engine's limit, or as
	// many as the KV budget holds at the mean context, whichever is fewer.
	Seqs int
	// Throughput is output tokens per second of the whole job.
	Throughput float64
	// SM is the share of the time the GPUs spend in kernels.
	SM float64
	// Memory is GiB per GPU: the weights' shard, the KV budget and the
	// workspace.
	Memory float64
	// ComputeBound is true when a decoding step's arithmetic outlasts its
	// memory traffic (many sequences on a GPU of little compute).
	ComputeBound bool
}

// Roofline evaluates one configuration of the model on gpus GPUs of g
// (tensor parallel: each holds 1/gpus of the weights and of every
// sequence's KV cache) with a KV budget of kvFrac of each GPU's memory and
// at most maxSeqs sequences. ok is false when the configuration does not
// fit (no sequence fits the budget, or the memory exceeds the GPU's); the
// error is for unusable arguments. The model:
//
//	step    = overhead + max((W + n·ctx·kv) / (0.75·BW), n·2·P / (0.3·F)) + comm
//	prefill = 2·P·prompt/output / (0.3·F)
//	tokens/s = n / (step + n·prefill)
//
// per GPU, with W = 2·P/gpus bytes of weights, P/gpus parameters, kv =
// 2·layers·KVHidden·2 B / gpus of KV cache per token, ctx = prompt +
// output/2 the mean context while decoding, n = min(maxSeqs, ⌊budget /
// (ctx·kv)⌋), BW and F the datasheet bandwidth and FP16 tensor rate.
// Decoding is bound by memory bandwidth: each step reads the weights and
// the live KV cache once and emits one token per sequence, so throughput
// rises with the sequences in flight (with the KV budget) until the
// arithmetic catches up. Prefill is compute-bound; it is amortized over
// the request's output tokens. Under tensor parallelism, comm is two
// all-reduces of n·Hidden 16-bit values per layer over the GPU link (ring:
// 2(gpus−1)/gpus of the data each way, at half of LinkGBs), each with a
// fixed latency of 10 µs. SM is the share of a step spent in kernels.
// Sources: vLLM (Kwon et al., SOSP'23) for the paged KV cache and its
// budget; Williams et al. (2009), "Roofline", for the bound; GPUSpecOf for
// the peaks.
func (m LLMSpec) Roofline(g GPUSpec, gpus int, kvFrac float64, maxSeqs int) (p LLMPoint, ok bool, err error) {
	if err := m.validate(); err != nil {
		return LLMPoint{}, false, err
	}
	if err := g.validate(); err != nil {
		return LLMPoint{}, false, err
	}
	switch {
	case gpus < 1:
		return LLMPoint{}, false, errorf("roofline: gpus is %d, want ≥ 1", gpus)
	case gpus > 1 && g.LinkGBs == 0:
		return LLMPoint{}, false, errorf("roofline: gpus is %d but GPUSpec.LinkGBs of %s is 0: no link to split a model over", gpus, g.Model)
	case !(kvFrac > 0 && kvFrac < 1):
		return LLMPoint{}, false, errorf("roofline: kvFrac is %g, want a fraction in (0, 1)", kvFrac)
	case maxSeqs < 1:
		return LLMPoint{}, false, errorf("roofline: maxSeqs is %d, want ≥ 1", maxSeqs)
	}
	p, ok = m.roofline(g, gpus, kvFrac, maxSeqs)
	return p, ok, nil
}

// roofline is Roofline on checked arguments. Every division by t is by
// 1.0 on one GPU, so one-GPU results are bit for bit the simulator's
// former model.
func (m *LLMSpec) roofline(g GPUSpec, gpus int, kvFrac float64, maxSeqs int) (LLMPoint, bool) {
	t := float64(gpus)
	kvh := m.KVHidden
	if kvh == 0 {
		kvh = m.Hidden
	}
	kvPerToken := float64(2*m.Layers*kvh*2) / (1 << 30) / t // GiB per GPU
	ctx := float64(m.Prompt) + float64(m.Output)/2
	weights := m.Params * 2 / (1 << 30) / t
	budget := kvFrac * g.Memory
	n := min(maxSeqs, int(budget/(ctx*kvPerToken)))
	p := LLMPoint{Seqs: max(n, 0), Memory: weights + budget + llmWorkspace}
	if n < 1 || p.Memory > g.Memory {
		return p, false
	}
	bw := decodeBandwidthShare * g.BandwidthGBs * 1e9 / (1 << 30) // GiB/s
	flops := prefillFLOPShare * g.TensorTFLOPs * 1e12
	memT := (weights + float64(n)*ctx*kvPerToken) / bw
	compT := float64(n) * 2 * m.Params / t / flops
	busy := math.Max(memT, compT)
	var comm float64
	if gpus > 1 {
		bytes := 2 * (t - 1) / t * float64(n) * float64(m.Hidden) * 2
		comm = 2 * float64(m.Layers) * (allReduceLatency + bytes/(g.LinkGBs/2*1e9))
	}
	step := m.Overhead + busy + comm
	prefill := 2 * m.Params * float64(m.Prompt) / float64(m.Output) / flops / t
	p.Throughput = float64(n) / (step + float64(n)*prefill)
	p.SM = (busy + float64(n)*prefill) / (step + float64(n)*prefill)
	p.ComputeBound = compT > memT
	return p, true
}

// LLMOptions tune LLMInferenceFamily. The zero value (or nil) is the
// default.
type LLMOptions struct {
	// KVCacheFracs are the KV budgets, fractions of one GPU's memory, each
	// in (0, 1). Default 0.1, 0.2, 0.3, 0.45, 0.6, 0.8.
	KVCacheFracs []float64
	// MaxSeqs are the engine's limits on concurrent sequences. Default 16,
	// 32, 64, 128, 256.
	MaxSeqs []int
	// GPUs are the tensor-parallel degrees, each in [1, 8]: a group larger
	// than one server is not modelled. Default 1, 2, 4, 8.
	GPUs []int
	// CPU and RAM are the host cores and GiB per GPU. Default 2 and 8: an
	// engine process and its tokenizer.
	CPU, RAM float64
}

func (o *LLMOptions) defaults() {
	if o.KVCacheFracs == nil {
		o.KVCacheFracs = []float64{0.1, 0.2, 0.3, 0.45, 0.6, 0.8}
	}
	if o.MaxSeqs == nil {
		o.MaxSeqs = []int{16, 32, 64, 128, 256}
	}
	if o.GPUs == nil {
		o.GPUs = []int{1, 2, 4, 8}
	}
	if o.CPU == 0 {
		o.CPU = 2
	}
	if o.RAM == 0 {
		o.RAM = 8
	}
}

func (o *LLMOptions) validate(g *GPUSpec) error {
	// Budgets equal in a configuration ID (to 0.01 %) would collide.
	ids := make(map[string]bool, len(o.KVCacheFracs))
	for i, f := range o.KVCacheFracs {
		if !(f > 0 && f < 1) {
			return errorf("llm family: LLMOptions.KVCacheFracs[%d] is %g, want a fraction in (0, 1)", i, f)
		}
		id := ConfigID(elastico.Configuration{KVCacheFrac: f})
		if ids[id] {
			return errorf("llm family: LLMOptions.KVCacheFracs[%d] repeats %g", i, f)
		}
		ids[id] = true
	}
	for i, s := range o.MaxSeqs {
		if s < 1 {
			return errorf("llm family: LLMOptions.MaxSeqs[%d] is %d, want ≥ 1", i, s)
		}
		if slices.Index(o.MaxSeqs, s) != i {
			return errorf("llm family: LLMOptions.MaxSeqs[%d] repeats %d", i, s)
		}
	}
	for i, n := range o.GPUs {
		if n < 1 || n > 8 {
			return errorf("llm family: LLMOptions.GPUs[%d] is %d, want a tensor-parallel degree in [1, 8]", i, n)
		}
		if slices.Index(o.GPUs, n) != i {
			return errorf("llm family: LLMOptions.GPUs[%d] repeats %d", i, n)
		}
		if n > 1 && g.LinkGBs == 0 {
			return errorf("llm family: LLMOptions.GPUs[%d] is %d but GPUSpec.LinkGBs of %s is 0", i, n, g.Model)
		}
	}
	if len(o.KVCacheFracs) == 0 || len(o.MaxSeqs) == 0 || len(o.GPUs) == 0 {
		return errorf("llm family: LLMOptions.KVCacheFracs, MaxSeqs and GPUs must not be empty (nil means the default)")
	}
	if !(o.CPU > 0 && o.CPU <= math.MaxFloat64) || !(o.RAM > 0 && o.RAM <= math.MaxFloat64) {
		return errorf("llm family: LLMOptions.CPU %g and RAM %g, want > 0 (0 means the default)", o.CPU, o.RAM)
	}
	return nil
}

// LLMInferenceFamily builds the offline-inference family of a model on a
// GPU from the roofline model (LLMSpec.Roofline): one configuration per
// tensor-parallel degree, KV budget and sequence limit that fits, with
//
//   - throughput in output tokens/s of the whole job, SM share and GPU
//     memory per GPU from Roofline (memory = the weights' shard + the KV
//     budget + 1.5 GiB of workspace, never above the GPU's);
//   - AMP set (16-bit weights), no batch size;
//   - CPU and RAM per GPU from LLMOptions;
//   - Interpolated set: modelled, not measured.
//
// A model too large for one GPU simply has no one-GPU configuration
// (Llama-2-70B's 128 GiB of weights need two 80 GB GPUs). The family is
// ordered by GPU count, KV budget, then sequence limit. It returns an error
// naming the field of the model, GPU or options that is unusable, or when
// no configuration fits.
func LLMInferenceFamily(m LLMSpec, g GPUSpec, opts *LLMOptions) ([]elastico.Profile, error) {
	var o LLMOptions
	if opts != nil {
		o = *opts
	}
	o.defaults()
	if err := m.validate(); err != nil {
		return nil, err
	}
	if err := g.validate(); err != nil {
		return nil, err
	}
	if err := o.validate(&g); err != nil {
		return nil, err
	}
	gpus := slices.Sorted(slices.Values(o.GPUs))
	fracs := slices.Sorted(slices.Values(o.KVCacheFracs))
	seqs := slices.Sorted(slices.Values(o.MaxSeqs))
	var fam []elastico.Profile
	for _, n := range gpus {
		for _, kv := range fracs {
			for _, s := range seqs {
				pt, ok := m.roofline(g, n, kv, s)
				if !ok {
					continue
				}
				c := elastico.Configuration{AMP: true, GPUs: n, KVCacheFrac: kv, MaxSeqs: s}
				c.ID = ConfigID(c)
				fam = append(fam, elastico.Profile{
					Family: m.Name, Class: elastico.Inference, Params: m.Params,
					Config:       c,
					Demand:       elastico.Demand{GPUs: n, SM: pt.SM, GPUMemory: pt.Memory, CPU: o.CPU, RAM: o.RAM},
					Throughput:   pt.Throughput,
					Hardware:     elastico.Hardware{GPUModel: g.Model},
					Interpolated: true,
				})
			}
		}
	}
	if len(fam) == 0 {
		return nil, errorf("llm family: %s fits no configuration on %s (%.1f GiB of weights; GPUs %v, KV budgets %v)",
			m.Name, g.Model, m.Params*2/(1<<30), gpus, fracs)
	}
	return fam, nil
}
