package rst

import (
	"math"

	"github.com/elastico/elastico"
)

// DefaultScalingPerDoubling is η, the share of the ideal speed-up that a
// doubling of a job's GPUs keeps when a profile is interpolated across GPU
// counts: the median over the 168 doublings (1→2, 2→4, 4→8 GPUs, local
// batch fixed) of Gavel's 26 job types on V100, P100 and K80 (quartiles 0.73
// and 0.95). TestDefaultScalingPerDoubling recomputes it from the data.
const DefaultScalingPerDoubling = 0.87

// Factors for interpolating across the boolean knobs (see BuildFamily).
const (
	// Activation checkpointing recomputes the forward pass during the
	// backward pass: about one extra forward, a third of a step's compute
	// (Chen et al., 2016, "Training Deep Nets with Sublinear Memory Cost",
	// report 20–30 % more time), so throughput × 3/4. It keeps only
	// segment boundaries, cutting activation memory by far more than half on
	// deep nets; RST assumes half, which errs towards too much memory.
	ckptThroughput = 0.75
	ckptActivation = 0.5
	// Mixed precision stores activations in 16 bits: half the activation
	// memory (Micikevicius et al., 2018). Its speed-up depends on the GPU's
	// tensor cores, so RST assumes none.
	ampActivation = 0.5
)

// FamilyOptions tune BuildFamily. The zero value (or nil) is the documented
// default.
type FamilyOptions struct {
	// NoiseScale, when set, gives every training profile its Efficiency from
	// its batch size, measured profiles included: statistical efficiency is a
	// property of the batch size, not of a measurement. Its Base must not
	// exceed the space's smallest batch size.
	NoiseScale *NoiseScale
	// StaticMemory is the part of a replica's GPU memory, in GiB, that does
	// not grow with the local batch: weights, gradients, optimizer states,
	// the CUDA context (MemoryModel.Static estimates it). Zero means unknown:
	// interpolated memory is then never scaled down, since the part that
	// would shrink is unknown.
	StaticMemory float64
	// DeviceMemory is the memory in GiB of the GPU the profiles were measured
	// on. KV-cache budgets are fractions of it, so it is needed to
	// interpolate across budgets.
	DeviceMemory float64
	// ScalingPerDoubling is η for interpolating across GPU counts; zero
	// means DefaultScalingPerDoubling.
	ScalingPerDoubling float64
}

// BuildFamily returns the profile family of a job over a configuration
// space, in the space's enumeration order, one profile per configuration,
// each with its canonical ConfigID.
//
// Every measured profile must be a configuration of the space (matched by
// its knobs; its Config.ID is replaced by the canonical one), at most once,
// and of the space's class. Measured profiles always win: they are copied
// as they are. Every other configuration c gets the profile of its nearest
// measured neighbour n in knob space, with the distance
//
//	|log2 local_c/local_n| + |log2 GPUs_c/GPUs_n| + 2·[checkpointing differs]
//	+ 2·[AMP differs] + 10·|KV_c − KV_n| + |log2 seqs_c/seqs_n|
//
// where local = ⌈batch/GPUs⌉ is the batch each replica sees, which its
// memory and speed depend on: batch size and GPU count are on a log scale,
// a doubling of either counting 1 (ties go to the neighbour first in the
// space's order). With the local batch as the coordinate, a multi-GPU
// configuration is interpolated from the measurement whose replicas do the
// same work: on Gavel's data that halves the median error against
// interpolating at the same global batch (TestInterpolationAgainstGavel).
// The result is marked
// Interpolated, and carried over as follows. Where a rule can err, it errs
// towards more memory and less throughput, the safe side for a scheduler.
//
//   - Demand per replica: SM share, CPU and RAM copied; GPUs = c's GPUs.
//   - Training GPU memory per replica: static part S (FamilyOptions.StaticMemory)
//     plus the activations, which scale with the local batch
//     ⌈batch/GPUs⌉, × 1/2 when c checkpoints and n does not (× 2 the other
//     way), × 1/2 when c uses AMP and n does not (× 2 the other way). With S
//     unknown the whole memory scales, and only upwards.
//   - Inference memory: the weights and the preallocated KV budget, so
//     only + (KV_c − KV_n) × FamilyOptions.DeviceMemory, whatever the
//     engine batch and sequence limit.
//   - Throughput: samples per second per replica copied (a busy GPU's rate,
//     whatever its local batch), × r·η^log2(r) for r = GPUs_c/GPUs_n (η =
//     FamilyOptions.ScalingPerDoubling), × 3/4 when c checkpoints and n does
//     not (× 4/3 the other way), AMP no change. For inference, × the ratio
//     of KV budgets, of sequence limits and of engine batch sizes wherever
//     c's is the smaller (fewer sequences in flight cannot serve more).
//   - Counters, hardware signature, family, parameters: copied.
//   - Efficiency: from FamilyOptions.NoiseScale when set; otherwise the
//     neighbour's when the batch sizes match, and an error when they do not
//     (an efficiency cannot be copied across batch sizes).
//
// BuildFamily returns an error naming the measured profile or the option
// that is wrong; it never returns an empty family.
func BuildFamily(space *Space, measured []elastico.Profile, opts *FamilyOptions) ([]elastico.Profile, error) {
	var o FamilyOptions
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	configs, err := space.Enumerate()
	if err != nil {
		return nil, err
	}
	if len(measured) == 0 {
		return nil, errorf("build family: no measured profile: at least one configuration must be measured")
	}
	index := make(map[string]int, len(configs))
	for i, c := range configs {
		index[c.ID] = i
	}
	// have[i] is the index in measured of configuration i's measurement, or -1.
	have := make([]int, len(configs))
	for i := range have {
		have[i] = -1
	}
	for k := range measured {
		p := &measured[k]
		c := p.Config
		if c.GPUs == 0 {
			c.GPUs = p.Demand.GPUs
		}
		id := ConfigID(c)
		check := *p
		check.Config.ID = id // the ID BuildFamily gives it
		if err := check.Validate(); err != nil {
			return nil, errorf("build family: measured[%d] (%s): %w", k, id, err)
		}
		if p.Class != space.Class {
			return nil, errorf("build family: measured[%d] (%s) is a %s profile, the space is for %s", k, id, p.Class, space.Class)
		}
		i, ok := index[id]
		if !ok {
			return nil, errorf("build family: measured[%d] (%s) is not a configuration of the space", k, id)
		}
		if have[i] >= 0 {
			return nil, errorf("build family: measured[%d] and measured[%d] are both %s", have[i], k, id)
		}
		have[i] = k
	}

	// Measured configurations in the space's order, for deterministic ties.
	var order []int
	for i := range configs {
		if have[i] >= 0 {
			order = append(order, i)
		}
	}
	out := make([]elastico.Profile, len(configs))
	for _, i := range order {
		out[i] = measured[have[i]]
		out[i].Config = configs[i]
		out[i].Interpolated = false
	}
	for i, c := range configs {
		if have[i] >= 0 {
			continue
		}
		best, bestD := -1, math.Inf(1)
		for _, j := range order {
			if d := knobDistance(c, configs[j]); d < bestD {
				best, bestD = j, d
			}
		}
		p, err := o.carry(&out[best], c)
		if err != nil {
			return nil, err
		}
		out[i] = p
	}
	if o.NoiseScale != nil {
		if err := o.NoiseScale.SetEfficiency(out); err != nil {
			return nil, errorf("build family: %w", err)
		}
	}
	return out, nil
}

func (o *FamilyOptions) validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"StaticMemory", o.StaticMemory}, {"DeviceMemory", o.DeviceMemory}, {"ScalingPerDoubling", o.ScalingPerDoubling}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return errorf("family options: %s is %g, want a finite number ≥ 0", f.name, f.v)
		}
	}
	if o.ScalingPerDoubling > 1 {
		return errorf("family options: ScalingPerDoubling is %g, want ≤ 1 (no superlinear scaling)", o.ScalingPerDoubling)
	}
	if o.NoiseScale != nil {
		if err := o.NoiseScale.Validate(); err != nil {
			return errorf("family options: %w", err)
		}
	}
	return nil
}

// knobDistance is the interpolation distance of BuildFamily.
func knobDistance(a, b elastico.Configuration) float64 {
	d := logRatio(localBatch(a), localBatch(b)) + logRatio(max(1, a.GPUs), max(1, b.GPUs)) + logRatio(a.MaxSeqs, b.MaxSeqs)
	if a.Checkpointing != b.Checkpointing {
		d += 2
	}
	if a.AMP != b.AMP {
		d += 2
	}
	return d + 10*math.Abs(a.KVCacheFrac-b.KVCacheFrac)
}

// logRatio is |log2 x/y| for positive x and y, 0 when both are unset and a
// large distance when only one is.
func logRatio(x, y int) float64 {
	switch {
	case x == y:
		return 0
	case x <= 0 || y <= 0:
		return 8
	}
	return math.Abs(math.Log2(float64(x) / float64(y)))
}

// carry builds configuration c's profile from its measured neighbour n,
// by the rules of BuildFamily.
func (o *FamilyOptions) carry(n *elastico.Profile, c elastico.Configuration) (elastico.Profile, error) {
	p := *n
	p.Config = c
	p.Interpolated = true
	p.Demand.GPUs = c.GPUs

	// Activation memory: local batch, checkpointing, AMP.
	act := 1.0
	// An inference engine's footprint is its weights and its preallocated
	// KV budget (vLLM's gpu_memory_utilization), whatever its batch.
	if p.Class == elastico.Training && c.BatchSize > 0 && n.Config.BatchSize > 0 {
		act *= float64(localBatch(c)) / float64(localBatch(n.Config))
	}
	tput := 1.0
	switch {
	case c.Checkpointing && !n.Config.Checkpointing:
		act *= ckptActivation
		tput *= ckptThroughput
	case !c.Checkpointing && n.Config.Checkpointing:
		act /= ckptActivation
		tput /= ckptThroughput
	}
	switch {
	case c.AMP && !n.Config.AMP:
		act *= ampActivation
	case !c.AMP && n.Config.AMP:
		act /= ampActivation
	}
	mem := n.Demand.GPUMemory
	if s := math.Min(o.StaticMemory, mem); s > 0 {
		mem = s + (mem-s)*act
	} else if act > 1 {
		mem *= act
	}
	if c.KVCacheFrac != n.Config.KVCacheFrac {
		if o.DeviceMemory <= 0 {
			return elastico.Profile{}, errorf("build family: %s: interpolating from %s across KV-cache budgets needs FamilyOptions.DeviceMemory",
				c.ID, n.Config.ID)
		}
		mem += (c.KVCacheFrac - n.Config.KVCacheFrac) * o.DeviceMemory
		tput *= shrink(c.KVCacheFrac, n.Config.KVCacheFrac)
	}
	p.Demand.GPUMemory = math.Max(0, mem)

	// Throughput: replicas, then the inference limits.
	if r := float64(max(1, c.GPUs)) / float64(max(1, n.Demand.GPUs)); r != 1 {
		eta := o.ScalingPerDoubling
		if eta == 0 {
			eta = DefaultScalingPerDoubling
		}
		tput *= r * math.Pow(eta, math.Log2(r))
	}
	if c.MaxSeqs > 0 && n.Config.MaxSeqs > 0 {
		tput *= shrink(float64(c.MaxSeqs), float64(n.Config.MaxSeqs))
	}
	if p.Class == elastico.Inference && c.BatchSize > 0 && n.Config.BatchSize > 0 {
		tput *= shrink(float64(c.BatchSize), float64(n.Config.BatchSize))
	}
	p.Throughput = n.Throughput * tput

	if o.NoiseScale == nil && n.Efficiency != 0 && c.BatchSize != n.Config.BatchSize {
		return elastico.Profile{}, errorf("build family: %s: the efficiency of batch %d cannot be copied from %s (batch %d): set FamilyOptions.NoiseScale",
			c.ID, c.BatchSize, n.Config.ID, n.Config.BatchSize)
	}
	return p, nil
}

// shrink returns min(1, c/n): the factor by which a smaller limit can cut
// throughput at most.
func shrink(c, n float64) float64 {
	if c >= n || n <= 0 {
		return 1
	}
	return c / n
}

// localBatch is the batch per replica, ⌈batch/GPUs⌉.
func localBatch(c elastico.Configuration) int {
	g := max(1, c.GPUs)
	return (c.BatchSize + g - 1) / g
}
