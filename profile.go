package elastico

import (
	"fmt"
	"math"
)

// Class says whether a job trains a model or serves one. The two progress
// differently (reference-equivalent samples against tokens or requests) and
// interfere differently, so the predictor and the simulator keep them apart.
type Class int

const (
	Training Class = iota
	Inference
)

func (c Class) String() string {
	switch c {
	case Training:
		return "training"
	case Inference:
		return "inference"
	}
	return fmt.Sprintf("Class(%d)", int(c))
}

// Configuration is one setting of a job's knobs. ID is chosen by RST (or the
// host) and stays the same across epochs, so that a Plan can say "keep" by
// comparing IDs.
type Configuration struct {
	ID            string
	BatchSize     int  // global batch size (training) or engine batch (inference)
	Checkpointing bool // activation checkpointing (training)
	AMP           bool // mixed precision
	GPUs          int  // data/tensor-parallel degree: replicas, one GPU each
	// Inference only: the KV-cache budget as a fraction of one GPU's memory,
	// and the engine's maximum number of concurrent sequences.
	KVCacheFrac float64
	MaxSeqs     int
}

// Demand is what one configuration needs: GPUs replicas, each on its own GPU
// with the given SM share and memory, and each with the given host CPU and
// RAM beside it.
type Demand struct {
	GPUs      int
	SM        float64 // share of one GPU's SMs per replica, in (0, 1]
	GPUMemory float64 // GiB per replica, at most MaxGPUMemory (MiB is the usual mistake)
	CPU       float64 // cores per replica
	RAM       float64 // GiB per replica
}

// Total returns the demand summed over replicas, as a Vector.
func (d Demand) Total() Vector {
	n := float64(d.GPUs)
	return Vector{SM: n * d.SM, GPUMemory: n * d.GPUMemory, CPU: n * d.CPU, RAM: n * d.RAM}
}

// Counter names one of the ten hardware counters of the interference feature
// vector (the paper's 36 features). Each is a ratio in [0, 1] of the whole GPU, averaged
// over the profiling window.
type Counter int

const (
	GrEngineActive Counter = iota // DCGM 1001
	SMActive                      // DCGM 1002
	SMOccupancy                   // DCGM 1003
	TensorActive                  // DCGM 1004
	FPActive                      // max(DCGM 1007, 1008)
	DRAMActive                    // DCGM 1005
	FBUsedFrac                    // DCGM 252/250
	PCIeFrac                      // DCGM 1009+1010 over the link's peak
	NVLinkFrac                    // DCGM 1011+1012 over NVLink's peak
	PowerFrac                     // DCGM 155/164
	NumCounters
)

var counterNames = [NumCounters]string{
	"gr_engine_active", "sm_active", "sm_occupancy", "tensor_active", "fp_active",
	"dram_active", "fb_used_frac", "pcie_frac", "nvlink_frac", "power_frac",
}

// String returns the counter's column name in profiles.csv.
func (c Counter) String() string {
	if c < 0 || c >= NumCounters {
		return fmt.Sprintf("Counter(%d)", int(c))
	}
	return counterNames[c]
}

// CounterByName returns the counter whose column name is s.
func CounterByName(s string) (Counter, bool) {
	for i, n := range counterNames {
		if n == s {
			return Counter(i), true
		}
	}
	return 0, false
}

// Counters holds the hardware counters of one profile. A counter that was not
// measured is absent (its bit in Present is clear), never a made-up zero.
type Counters struct {
	Values  [NumCounters]float64
	Present uint16 // bit c set: Values[c] was measured
}

// Set records a measured value.
func (cs *Counters) Set(c Counter, v float64) {
	cs.Values[c] = v
	cs.Present |= 1 << c
}

// Get returns the value and whether it was measured.
func (cs *Counters) Get(c Counter) (float64, bool) {
	return cs.Values[c], cs.Present&(1<<c) != 0
}

// Has reports whether c was measured.
func (cs *Counters) Has(c Counter) bool { return cs.Present&(1<<c) != 0 }

// Hardware is the signature a profile was measured under; a profile from one
// signature is not evidence about another.
type Hardware struct {
	// GPUModel is the GPU model the profile was measured (or, Interpolated,
	// estimated) for, spelt as the cluster's GPU.Model, e.g. "V100".
	// A scheduler places the profile's configuration only on GPUs of that
	// model; empty: on any GPU. A job whose cluster mixes models has a
	// profile per model for each configuration it may run there (package
	// rst builds such families, and estimates a model nobody measured).
	GPUModel string
	Driver   string
	MIG      bool
	MPS      bool
}

// Profile is RST's output for one configuration of one job family: what it
// demands, how fast it runs alone, and how it uses the GPU.
type Profile struct {
	Family string // e.g. "resnet50"; profiles of one family describe one program
	// Class must be its job's Class: the interference predictor reads it,
	// and a training profile's batch and learning rate mean nothing to a
	// server.
	Class  Class
	Params float64 // model parameters (for the predictor's task attributes)
	Config Configuration
	Demand Demand
	// Throughput is the isolated throughput in the job's own unit (samples/s
	// for training, tokens/s or requests/s for inference). It must be
	// positive: a configuration that makes no progress has no place in a
	// family, and a zero is more often a failed or missing measurement.
	Throughput float64
	// Efficiency is the statistical efficiency of the configuration's batch
	// size, in (0, 1]: the fraction of a sample's progress that counts
	// towards convergence (Pollux). Zero means "not modelled" and counts as 1;
	// inference profiles leave it zero.
	Efficiency float64
	Counters   Counters
	Hardware   Hardware
	// Interpolated is true when nobody measured the profile: RST filled it
	// in from measured neighbours (rst.BuildFamily), scaled another GPU's
	// measurement by a published speed-up (rst.EstimatedGavelFamily) or
	// computed it from a model (rst.LLMInferenceFamily). A measurement of
	// the same configuration replaces it.
	Interpolated bool
}

// RunsOn reports whether the profile's configuration may run on a GPU of
// the given model: the models are equal, or either is empty (not told).
func (p *Profile) RunsOn(gpuModel string) bool {
	m := p.Hardware.GPUModel
	return m == "" || gpuModel == "" || m == gpuModel
}

// Goodput returns Throughput × Efficiency: progress per second in
// reference-equivalent work.
func (p *Profile) Goodput() float64 {
	if p.Efficiency == 0 {
		return p.Throughput
	}
	return p.Throughput * p.Efficiency
}

// validate checks one profile. path gives the prefix of every field name;
// it is called only once a problem is found, so that checking a valid family
// formats no strings (State.Validate runs on every epoch).
func (p *Profile) validate(kind, id string, path func() string) error {
	if p.valid() {
		return nil
	}
	bad := func(field, reason string) error { return invalid(kind, id, path()+field, reason) }
	if p.Config.ID == "" {
		return bad(".Config.ID", "is empty")
	}
	if p.Demand.GPUs < 1 {
		return bad(".Demand.GPUs", fmt.Sprintf("is %d, want ≥ 1", p.Demand.GPUs))
	}
	if p.Config.GPUs != 0 && p.Config.GPUs != p.Demand.GPUs {
		return bad(".Config.GPUs", fmt.Sprintf("is %d but Demand.GPUs is %d", p.Config.GPUs, p.Demand.GPUs))
	}
	fields := [...]struct {
		name string
		v    float64
	}{
		{".Demand.SM", p.Demand.SM},
		{".Demand.GPUMemory", p.Demand.GPUMemory},
		{".Demand.CPU", p.Demand.CPU},
		{".Demand.RAM", p.Demand.RAM},
		{".Throughput", p.Throughput},
		{".Efficiency", p.Efficiency},
		{".Params", p.Params},
		{".Config.KVCacheFrac", p.Config.KVCacheFrac},
	}
	for _, f := range fields {
		if r := checkNumber(f.v); r != "" {
			return bad(f.name, r)
		}
	}
	if p.Demand.SM == 0 || p.Demand.SM > 1 {
		return bad(".Demand.SM", fmt.Sprintf("is %g, want a share in (0, 1]", p.Demand.SM))
	}
	if p.Efficiency > 1 {
		return bad(".Efficiency", fmt.Sprintf("is %g, want ≤ 1", p.Efficiency))
	}
	if p.Demand.GPUMemory > MaxGPUMemory {
		return bad(".Demand.GPUMemory", fmt.Sprintf("is %g GiB, above MaxGPUMemory (%d): MiB given as GiB?", p.Demand.GPUMemory, MaxGPUMemory))
	}
	if p.Throughput == 0 {
		return bad(".Throughput", "is 0: a configuration that makes no progress (or was not measured) has no place in a family")
	}
	if p.Config.BatchSize < 0 {
		return bad(".Config.BatchSize", "is negative")
	}
	if p.Config.MaxSeqs < 0 {
		return bad(".Config.MaxSeqs", "is negative")
	}
	for c := Counter(0); c < NumCounters; c++ {
		v, ok := p.Counters.Get(c)
		if !ok {
			continue
		}
		if r := checkNumber(v); r != "" {
			return bad(".Counters."+c.String(), r)
		}
	}
	return nil
}

// valid is the fast path of validate: one pass of comparisons, true when
// nothing is wrong. NaN fails every comparison, so "x >= 0 && x <= MaxFloat64"
// rejects NaN, ±Inf and negatives at once.
func (p *Profile) valid() bool {
	ok := func(x float64) bool { return x >= 0 && x <= math.MaxFloat64 }
	d := &p.Demand
	if p.Config.ID == "" || d.GPUs < 1 || (p.Config.GPUs != 0 && p.Config.GPUs != d.GPUs) ||
		!(d.SM > 0 && d.SM <= 1) || !(d.GPUMemory >= 0 && d.GPUMemory <= MaxGPUMemory) || !ok(d.CPU) || !ok(d.RAM) ||
		!(p.Throughput > 0 && p.Throughput <= math.MaxFloat64) || !(p.Efficiency >= 0 && p.Efficiency <= 1) || !ok(p.Params) ||
		!ok(p.Config.KVCacheFrac) || p.Config.BatchSize < 0 || p.Config.MaxSeqs < 0 {
		return false
	}
	for c := Counter(0); p.Counters.Present != 0 && c < NumCounters; c++ {
		if p.Counters.Has(c) && !ok(p.Counters.Values[c]) {
			return false
		}
	}
	return true
}

// Validate checks a single profile (as a profiler or a reader produces it).
func (p *Profile) Validate() error {
	return p.validate("profile", p.Family, func() string { return "Profile" })
}
