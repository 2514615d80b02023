package iac

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/elastico/elastico"
)

// The names and order of the paper's 36 features (idx 1–36), as the
// feature card that maps each to DCGM and NVML lists them.
var cardNames = []string{
	"a_gr_engine_active", "a_sm_active", "a_sm_occupancy", "a_tensor_active", "a_fp_pipe_active",
	"a_dram_active", "a_fb_used_frac", "a_pcie_bw_frac", "a_nvlink_bw_frac", "a_power_frac",
	"b_gr_engine_active", "b_sm_active", "b_sm_occupancy", "b_tensor_active", "b_fp_pipe_active",
	"b_dram_active", "b_fb_used_frac", "b_pcie_bw_frac", "b_nvlink_bw_frac", "b_power_frac",
	"a_is_training", "a_log2_batch", "a_amp", "a_grad_ckpt", "a_kv_cache_frac", "a_log10_params",
	"b_is_training", "b_log2_batch", "b_amp", "b_grad_ckpt", "b_kv_cache_frac", "b_log10_params",
	"pair_sum_sm_active", "pair_sum_dram_active", "pair_mem_pressure", "pair_sum_power_frac",
}

func TestFeatureNamesFollowTheCard(t *testing.T) {
	if NumDesign != 36 {
		t.Fatalf("NumDesign = %d, want 36", NumDesign)
	}
	var got []string
	for f := Feature(0); f < NumDesign; f++ {
		got = append(got, f.String())
	}
	if d := cmp.Diff(cardNames, got); d != "" {
		t.Errorf("feature names (-card +got):\n%s", d)
	}
	for f := Feature(0); f < NumFeatures; f++ {
		if g, ok := FeatureByName(f.String()); !ok || g != f {
			t.Errorf("FeatureByName(%q) = %v, %v", f, g, ok)
		}
	}
	// Counters 0–9 follow elastico.Counter's order.
	for c := elastico.Counter(0); c < elastico.NumCounters; c++ {
		a := Feature(c).String()
		want := "a_" + c.String()
		switch c { // the card's names for three counters differ from profiles.csv's
		case elastico.FPActive:
			want = "a_fp_pipe_active"
		case elastico.PCIeFrac:
			want = "a_pcie_bw_frac"
		case elastico.NVLinkFrac:
			want = "a_nvlink_bw_frac"
		}
		if a != want {
			t.Errorf("feature %d is %s, want %s", c, a, want)
		}
	}
	if s := Feature(99).String(); s != "Feature(99)" {
		t.Errorf("Feature(99).String() = %q", s)
	}
}

func TestBuild(t *testing.T) {
	var full elastico.Counters
	for c := elastico.Counter(0); c < elastico.NumCounters; c++ {
		full.Set(c, 0.1*float64(c+1))
	}
	var some elastico.Counters
	some.Set(elastico.SMActive, 0.6)
	some.Set(elastico.FBUsedFrac, 0.25)
	var bad elastico.Counters
	bad.Set(elastico.SMActive, math.NaN())
	victim := elastico.Profile{
		Family: "resnet50", Class: elastico.Training, Params: 1e8, Throughput: 100,
		Config:   elastico.Configuration{BatchSize: 64, AMP: true},
		Counters: full,
	}
	aggressor := elastico.Profile{
		Family: "llama", Class: elastico.Inference, Throughput: 0,
		Config:   elastico.Configuration{KVCacheFrac: 0.5, Checkpointing: true},
		Counters: some,
	}
	type fv = map[Feature]float64
	tests := []struct {
		name      string
		a, b      elastico.Profile
		want      fv // every present feature and its value
		wantTotal int
	}{
		{
			name: "full victim, partial aggressor",
			a:    victim, b: aggressor,
			want: fv{
				AIsTraining: 1, ALog2Batch: 0.6, AAMP: 1, AGradCkpt: 0, AKVCacheFrac: 0, ALog10Params: 8.0 / 12, ALog10Throughput: 2,
				BIsTraining: 0, BAMP: 0, BGradCkpt: 1, BKVCacheFrac: 0.5,
				BSMActive: 0.6, BFBUsedFrac: 0.25,
				PairSumSMActive: 0.2 + 0.6, PairMemPressure: 0.7 + 0.25 + 0 + 0.5,
			},
			wantTotal: 10 + 7 + 4 + 2 + 2,
		},
		{
			name: "nothing measured",
			a:    elastico.Profile{Family: "x"}, b: elastico.Profile{Family: "y", Class: elastico.Inference},
			want:      fv{AIsTraining: 1, AAMP: 0, AGradCkpt: 0, AKVCacheFrac: 0, BIsTraining: 0, BAMP: 0, BGradCkpt: 0, BKVCacheFrac: 0},
			wantTotal: 8,
		},
		{
			name: "a NaN counter is missing",
			a:    elastico.Profile{Family: "x", Counters: bad}, b: elastico.Profile{Family: "y", Counters: some},
			want:      fv{AIsTraining: 1, AAMP: 0, AGradCkpt: 0, AKVCacheFrac: 0, BIsTraining: 1, BAMP: 0, BGradCkpt: 0, BKVCacheFrac: 0, BSMActive: 0.6, BFBUsedFrac: 0.25},
			wantTotal: 10,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var v Vector
			v.Build(&tc.a, &tc.b)
			got := fv{}
			n := 0
			for f := Feature(0); f < NumFeatures; f++ {
				if x, ok := v.Get(f); ok {
					n++
					if _, checked := tc.want[f]; checked || len(tc.want) > 0 {
						got[f] = x
					}
				} else if v.X[f] != 0 {
					t.Errorf("%s is missing but holds %g", f, v.X[f])
				}
			}
			if n != tc.wantTotal {
				t.Errorf("%d features present, want %d", n, tc.wantTotal)
			}
			for f, w := range tc.want {
				if g, ok := got[f]; !ok || math.Abs(g-w) > 1e-12 {
					t.Errorf("%s = %v (present %v), want %v", f, g, ok, w)
				}
			}
		})
	}
}

func TestBuildDoesNotAllocate(t *testing.T) {
	a := elastico.Profile{Family: "a", Params: 1e7, Throughput: 3, Config: elastico.Configuration{BatchSize: 32}}
	b := a
	var v Vector
	if n := testing.AllocsPerRun(100, func() { v.Build(&a, &b) }); n != 0 {
		t.Errorf("Build allocates %v times", n)
	}
}
