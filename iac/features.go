package iac

import (
	"fmt"
	"math"

	"github.com/elastico/elastico"
)

// Feature indexes the pair vector. Features 0–35 are the paper's 36,
// in the order and with the names Feature.String gives (job A is
// the victim, job B the aggressor); 36 and 37 are two supplementary task
// attributes, the isolated throughput of each job, which data sets without
// hardware counters (Gavel) do have.
type Feature int

// The victim's ten counters (A), the aggressor's (B), then six task
// attributes each, four pairwise sums and the two supplements.
const (
	AGrEngineActive Feature = iota
	ASMActive
	ASMOccupancy
	ATensorActive
	AFPPipeActive
	ADRAMActive
	AFBUsedFrac
	APCIeBWFrac
	ANVLinkBWFrac
	APowerFrac
	BGrEngineActive
	BSMActive
	BSMOccupancy
	BTensorActive
	BFPPipeActive
	BDRAMActive
	BFBUsedFrac
	BPCIeBWFrac
	BNVLinkBWFrac
	BPowerFrac
	AIsTraining
	ALog2Batch
	AAMP
	AGradCkpt
	AKVCacheFrac
	ALog10Params
	BIsTraining
	BLog2Batch
	BAMP
	BGradCkpt
	BKVCacheFrac
	BLog10Params
	PairSumSMActive
	PairSumDRAMActive
	PairMemPressure
	PairSumPowerFrac
	// NumDesign is the size of the paper's vector.
	NumDesign
)

// The supplements.
const (
	ALog10Throughput Feature = NumDesign + iota
	BLog10Throughput
	// NumFeatures is the length of a Vector.
	NumFeatures
)

var featureNames = [NumFeatures]string{
	"a_gr_engine_active", "a_sm_active", "a_sm_occupancy", "a_tensor_active", "a_fp_pipe_active",
	"a_dram_active", "a_fb_used_frac", "a_pcie_bw_frac", "a_nvlink_bw_frac", "a_power_frac",
	"b_gr_engine_active", "b_sm_active", "b_sm_occupancy", "b_tensor_active", "b_fp_pipe_active",
	"b_dram_active", "b_fb_used_frac", "b_pcie_bw_frac", "b_nvlink_bw_frac", "b_power_frac",
	"a_is_training", "a_log2_batch", "a_amp", "a_grad_ckpt", "a_kv_cache_frac", "a_log10_params",
	"b_is_training", "b_log2_batch", "b_amp", "b_grad_ckpt", "b_kv_cache_frac", "b_log10_params",
	"pair_sum_sm_active", "pair_sum_dram_active", "pair_mem_pressure", "pair_sum_power_frac",
	"a_log10_throughput", "b_log10_throughput",
}

// String returns the feature's name (the paper's name for the first 36).
func (f Feature) String() string {
	if f < 0 || f >= NumFeatures {
		return fmt.Sprintf("Feature(%d)", int(f))
	}
	return featureNames[f]
}

// FeatureByName returns the feature called s.
func FeatureByName(s string) (Feature, bool) {
	for i, n := range featureNames {
		if n == s {
			return Feature(i), true
		}
	}
	return 0, false
}

// Vector is the feature vector of one ordered pair (victim A, aggressor B).
// A feature whose bit in Present is clear was not measured: its X is zero and
// means nothing. Models never read it as a value; they impute it (see
// [MLP]) and may see the mask itself as an input.
type Vector struct {
	X       [NumFeatures]float64
	Present uint64
}

// Has reports whether f was measured.
func (v *Vector) Has(f Feature) bool { return v.Present&(1<<uint(f)) != 0 }

// Get returns f's value and whether it was measured.
func (v *Vector) Get(f Feature) (float64, bool) { return v.X[f], v.Has(f) }

func (v *Vector) set(f Feature, x float64) {
	v.X[f] = x
	v.Present |= 1 << uint(f)
}

// The counters in the order of elastico.Counter, which is also the order of
// features 0–9 and 10–19.
const numCounters = int(elastico.NumCounters)

// Build fills v with the features of victim next to aggressor. It allocates
// nothing (it is on the prediction path) and never invents a value:
//
//   - counters come from Profile.Counters, present only where measured;
//   - is_training, AMP, checkpointing and the KV-cache fraction are always
//     present (a Profile always states them; the KV fraction of a training
//     job is 0, as the feature card says);
//   - log2(batch)/10 is present when Config.BatchSize > 0, log10(params)/12
//     when Params > 0, log10(throughput) when Throughput > 0;
//   - a pairwise sum is present only when both of its terms are.
//     pair_mem_pressure is fb_used_frac(A) + fb_used_frac(B) + the two
//     KV-cache reservations (the feature card's formula).
//
// A NaN or infinite input is treated as not measured.
func (v *Vector) Build(victim, aggressor *elastico.Profile) {
	*v = Vector{}
	v.job(victim, AGrEngineActive, AIsTraining, ALog10Throughput)
	v.job(aggressor, BGrEngineActive, BIsTraining, BLog10Throughput)
	v.pairs()
}

// pairs sets the pairwise sums from the two profiles' features.
func (v *Vector) pairs() {
	v.sum(PairSumSMActive, ASMActive, BSMActive)
	v.sum(PairSumDRAMActive, ADRAMActive, BDRAMActive)
	v.sum(PairSumPowerFrac, APowerFrac, BPowerFrac)
	if v.Has(AFBUsedFrac) && v.Has(BFBUsedFrac) {
		v.set(PairMemPressure, v.X[AFBUsedFrac]+v.X[BFBUsedFrac]+v.X[AKVCacheFrac]+v.X[BKVCacheFrac])
	}
}

func (v *Vector) job(p *elastico.Profile, counters, attrs, tput Feature) {
	for c := 0; c < numCounters; c++ {
		if x, ok := p.Counters.Get(elastico.Counter(c)); ok && finite(x) {
			v.set(counters+Feature(c), x)
		}
	}
	v.set(attrs, boolf(p.Class == elastico.Training))
	if b := p.Config.BatchSize; b > 0 {
		v.set(attrs+1, math.Log2(float64(b))/10)
	}
	v.set(attrs+2, boolf(p.Config.AMP))
	v.set(attrs+3, boolf(p.Config.Checkpointing))
	if kv := p.Config.KVCacheFrac; finite(kv) {
		v.set(attrs+4, kv)
	}
	if n := p.Params; n > 0 && finite(n) {
		v.set(attrs+5, math.Log10(n)/12)
	}
	if t := p.Throughput; t > 0 && finite(t) {
		v.set(tput, math.Log10(t))
	}
}

func (v *Vector) sum(dst, a, b Feature) {
	if v.Has(a) && v.Has(b) {
		v.set(dst, v.X[a]+v.X[b])
	}
}

func boolf(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
