package sim

import (
	"fmt"
	"math"
	"slices"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/gavel"
	"github.com/elastico/elastico/rst"
)

// GPUSpec is the GPU a ground truth was measured on and the server that
// holds it. Memory is what a job can allocate (nvidia-smi's total), not the
// marketing figure.
type GPUSpec struct {
	Model   string  // "V100"
	Memory  float64 // GiB per GPU
	SMs     int     // streaming multiprocessors
	PerNode int     // GPUs per server
	NodeCPU float64 // cores per server
	NodeRAM float64 // GiB per server
	// BandwidthGBs and TensorTFLOPs feed the inference model (datasheet peaks).
	BandwidthGBs, TensorTFLOPs float64
}

// The GPUs of the data sets, in the servers they were measured in.
var (
	// V100: AWS p3.16xlarge (Gavel's testbed): 8 × V100-SXM2-16GB (16,160 MiB
	// usable), 64 vCPUs, 488 GiB; 900 GB/s HBM2, 125 TFLOP/s FP16 tensor.
	V100 = GPUSpec{Model: "V100", Memory: 15.78, SMs: 80, PerNode: 8, NodeCPU: 64, NodeRAM: 488, BandwidthGBs: 900, TensorTFLOPs: 125}
	// P100: a 4-GPU server of P100-PCIE-16GB (16,280 MiB usable).
	P100 = GPUSpec{Model: "P100", Memory: 15.89, SMs: 56, PerNode: 4, NodeCPU: 32, NodeRAM: 208, BandwidthGBs: 732, TensorTFLOPs: 18.7}
	// K80: AWS p2.8xlarge: 8 K80 dies of 11,441 MiB, 32 vCPUs, 488 GiB.
	K80 = GPUSpec{Model: "K80", Memory: 11.17, SMs: 13, PerNode: 8, NodeCPU: 32, NodeRAM: 488, BandwidthGBs: 240, TensorTFLOPs: 4.4}
	// T4: AWS g4dn.12xlarge (Pollux's testbed): 4 × T4 (15,109 MiB usable),
	// 48 vCPUs, 192 GiB; 320 GB/s GDDR6, 65 TFLOP/s FP16 tensor.
	T4 = GPUSpec{Model: "T4", Memory: 14.75, SMs: 40, PerNode: 4, NodeCPU: 48, NodeRAM: 192, BandwidthGBs: 320, TensorTFLOPs: 65}
)

// Cluster returns a homogeneous cluster of n GPUs of this spec, PerNode per
// server (the last server holds the remainder), every GPU shareable.
func (g GPUSpec) Cluster(n int) (elastico.Cluster, error) {
	if n < 1 {
		return elastico.Cluster{}, fmt.Errorf("sim: cluster of %d GPUs: want ≥ 1", n)
	}
	if g.PerNode < 1 || g.Memory <= 0 {
		return elastico.Cluster{}, fmt.Errorf("sim: GPU spec %q: PerNode %d, Memory %g", g.Model, g.PerNode, g.Memory)
	}
	var c elastico.Cluster
	for k := 0; k*g.PerNode < n; k++ {
		node := elastico.Node{ID: fmt.Sprintf("node%03d", k), CPU: g.NodeCPU, RAM: g.NodeRAM}
		for i := k * g.PerNode; i < min(n, (k+1)*g.PerNode); i++ {
			node.GPUs = append(node.GPUs, elastico.GPU{
				ID: fmt.Sprintf("gpu%04d", i), Model: g.Model, SMs: g.SMs, Memory: g.Memory, Shared: true,
			})
		}
		c.Nodes = append(c.Nodes, node)
	}
	return c, nil
}

// Truth is the simulator's ground truth for one GPU model: every workload
// family it can run, each configuration's isolated throughput, memory and
// SM use, the statistical efficiency of its batch size, and how fast a job
// runs next to another on one GPU. It comes from measurements others made
// (Gavel, Pollux) and, where no data set measures a quantity, from the
// explicit models of models.go; Family.Notes says which is which. A Truth is
// read-only once built and safe for concurrent use.
type Truth struct {
	GPU      GPUSpec
	families []*Family
	byName   map[string]*Family
	// Co-location: kinds are the per-replica workloads (a model at a per-GPU
	// batch), speed[a*len(kinds)+b] the speed of a next to b.
	kinds    []Kind
	kindIdx  map[string]int
	speed    []float64
	measured []bool
	// scaling holds the data-parallel scaling model used where a GPU count
	// was not measured.
	scaling scalingModel
	// gavelTab and gavelUnc are Gavel's tables for this GPU (nil for truths
	// built from other data).
	gavelTab, gavelUnc *gavel.Table
	// lines give the rank-one co-location model's sensitivity and pressure
	// of a kind no pair measured, from its SM use: s0 + s1·SM, p0 + p1·SM.
	lines struct{ s0, s1, p0, p1 float64 }
	// estimated: no throughput of this truth was measured on its GPU
	// (gavelTruth with an estimate); its configurations are Interpolated.
	estimated bool
	// CoLocationFit is the cross-validated error of the model that fills the
	// pairs missing from the data (models.go).
	CoLocationFit FitReport
}

// Kind is one per-replica workload for co-location purposes.
type Kind struct {
	Name string  // "ResNet-50 (batch size 64)"
	SM   float64 // SM active when alone, in [0, 1]
}

// Family is one workload family: a program and every configuration the
// ground truth can run it under.
type Family struct {
	Name      string
	Class     elastico.Class
	Params    float64 // model parameters
	Optimizer elastico.Optimizer
	Unit      string // what Throughput counts: "samples" or "tokens"
	// RefBatch is M0, the global batch whose statistical efficiency is 1;
	// work is counted in samples at M0 ("reference-equivalent samples").
	RefBatch int
	// Noise is the statistical-efficiency model E(M) = (φ+M0)/(φ+M) with
	// Base = RefBatch: φ is the gradient noise scale rst.PolluxNoiseScale
	// fits on the Pollux model that stands in (Notes say which); +Inf where
	// none does (efficiency 1 at every batch).
	Noise rst.NoiseScale
	// Configs are the standard configurations, smallest batch and GPU count
	// first. Truth.Config computes others (e.g. a trace's 16-GPU request).
	Configs []Variant
	// Work is the whole job in reference-equivalent samples, for families
	// whose data define it (Pollux: the training its simulator runs); a
	// trace that states no work, steps or duration uses it. Zero: none.
	Work float64
	// Notes say where each quantity comes from.
	Notes []string

	model *modelSpec
	mem   rst.MemoryModel
	// batches are the per-GPU batch sizes measured, ascending; gpus the
	// measured GPU counts.
	batches []int
	gpus    []int
	infer   *inferenceSpec
	pollux  *polluxApp
}

// Variant is one configuration of a family as the ground truth runs it.
type Variant struct {
	elastico.Configuration
	// LocalBatch is the per-GPU batch (Configuration.BatchSize is global).
	LocalBatch int
	// Throughput is the isolated throughput, in the family's unit per
	// second, with every replica on one server; SpreadThroughput with the
	// replicas on two or more servers.
	Throughput, SpreadThroughput float64
	// SM is the SM-active fraction of one replica's GPU when alone.
	SM float64
	// Memory, CPU and RAM are per replica (GiB, cores, GiB).
	Memory, CPU, RAM float64
	// Efficiency is the statistical efficiency of the global batch (1 for
	// inference and for families whose efficiency is not modelled).
	Efficiency float64
	// Measured is true when Throughput comes from a measurement of exactly
	// this configuration.
	Measured bool
	// Kind indexes Truth.Kinds: what each replica is for co-location.
	Kind int
}

// Goodput returns Throughput × Efficiency with the replicas on one server
// (spread=false) or several.
func (c *Variant) Goodput(spread bool) float64 {
	if spread {
		return c.SpreadThroughput * c.Efficiency
	}
	return c.Throughput * c.Efficiency
}

// Families returns the families, sorted by name.
func (t *Truth) Families() []*Family { return t.families }

// Family returns the family called name.
func (t *Truth) Family(name string) (*Family, bool) {
	f, ok := t.byName[name]
	return f, ok
}

// Kinds returns the co-location kinds.
func (t *Truth) Kinds() []Kind { return t.kinds }

// Speed returns how fast a replica of kind a runs next to one of kind b on
// one GPU, relative to alone (in (0, 1]), and whether that pair was measured
// (false: it comes from the co-location model).
func (t *Truth) Speed(a, b int) (float64, bool) {
	k := a*len(t.kinds) + b
	return t.speed[k], t.measured[k]
}

// Config returns the configuration of family with the given per-GPU batch
// (0 for families without a batch knob) and GPU count: measured where the
// data has it, from the scaling model otherwise. Inference families take
// their configurations from Family.Configs only.
func (t *Truth) Config(family string, localBatch, gpus int) (Variant, error) {
	f, ok := t.byName[family]
	if !ok {
		return Variant{}, fmt.Errorf("sim: no family %q on %s", family, t.GPU.Model)
	}
	for _, c := range f.Configs {
		if c.LocalBatch == localBatch && c.GPUs == gpus {
			return c, nil
		}
	}
	if f.infer != nil || (f.model == nil && f.pollux == nil) {
		return Variant{}, fmt.Errorf("sim: family %q has no configuration with batch %d on %d GPUs", family, localBatch, gpus)
	}
	if gpus < 1 {
		return Variant{}, fmt.Errorf("sim: family %q: %d GPUs, want ≥ 1", family, gpus)
	}
	if !slices.Contains(f.batches, localBatch) {
		return Variant{}, fmt.Errorf("sim: family %q: batch %d not among %v", family, localBatch, f.batches)
	}
	if f.pollux != nil {
		return t.polluxConfig(f, localBatch, gpus)
	}
	return t.trainingConfig(f, localBatch, gpus)
}

// efficiency returns E(M) for a global batch M.
func (f *Family) efficiency(global int) float64 {
	if f.Noise.Base == 0 || global <= f.Noise.Base {
		return 1
	}
	return f.Noise.Efficiency(global)
}

// Profiles returns the elastico profiles a scheduler sees for these
// configurations, in order: what a profiler (TDOP) would measure of each in
// isolation on this GPU. noise, when not nil, gives each profile's
// multiplicative throughput measurement error (1 = exact).
func (t *Truth) Profiles(f *Family, cfgs []Variant, noise func() float64) []elastico.Profile {
	out := make([]elastico.Profile, len(cfgs))
	for i := range cfgs {
		c := &cfgs[i]
		p := elastico.Profile{
			Family: f.Name,
			Class:  f.Class,
			Params: f.Params,
			Config: c.Configuration,
			Demand: elastico.Demand{
				GPUs:      c.GPUs,
				SM:        math.Max(c.SM, minSMShare),
				GPUMemory: c.Memory,
				CPU:       c.CPU,
				RAM:       c.RAM,
			},
			Throughput:   c.Throughput,
			Hardware:     elastico.Hardware{GPUModel: t.GPU.Model},
			Interpolated: !c.Measured,
		}
		if f.Class == elastico.Training {
			p.Efficiency = c.Efficiency
		}
		if noise != nil {
			p.Throughput *= noise()
		}
		out[i] = p
	}
	return out
}

// minSMShare keeps a profile's SM share inside elastico's (0, 1].
const minSMShare = 0.01

func (t *Truth) addKind(k Kind) int {
	if i, ok := t.kindIdx[k.Name]; ok {
		return i
	}
	t.kindIdx[k.Name] = len(t.kinds)
	t.kinds = append(t.kinds, k)
	return len(t.kinds) - 1
}

func (t *Truth) addFamily(f *Family) {
	t.families = append(t.families, f)
	t.byName[f.Name] = f
	slices.SortFunc(t.families, func(a, b *Family) int {
		switch {
		case a.Name < b.Name:
			return -1
		case a.Name > b.Name:
			return 1
		}
		return 0
	})
}
