package rst

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/elastico/elastico"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// row is what the family tests compare of each profile.
type row struct {
	ID           string
	GPUs         int
	Memory       float64
	Throughput   float64
	Efficiency   float64
	Interpolated bool
}

func rows(fam []elastico.Profile) []row {
	out := make([]row, len(fam))
	for i, p := range fam {
		out[i] = row{p.Config.ID, p.Demand.GPUs, p.Demand.GPUMemory, p.Throughput, p.Efficiency, p.Interpolated}
	}
	return out
}

func measuredTraining(batch, gpus int, ckpt, amp bool, mem, tput float64) elastico.Profile {
	return elastico.Profile{
		Family: "resnet", Class: elastico.Training, Params: 25e6,
		Config:     elastico.Configuration{ID: "whatever-the-host-called-it", BatchSize: batch, GPUs: gpus, Checkpointing: ckpt, AMP: amp},
		Demand:     elastico.Demand{GPUs: gpus, SM: 1, GPUMemory: mem, CPU: 4, RAM: 16},
		Throughput: tput,
	}
}

func TestBuildFamily(t *testing.T) {
	eta := DefaultScalingPerDoubling
	train := &Space{Class: elastico.Training, BatchSizes: []int{64, 128}, Checkpointing: []bool{false, true}, GPUs: []int{1, 2}}
	tests := []struct {
		name     string
		space    *Space
		measured []elastico.Profile
		opts     *FamilyOptions
		wantRows []row
	}{
		{
			name:     "one measurement, static memory known",
			space:    train,
			measured: []elastico.Profile{measuredTraining(64, 1, false, false, 10, 1000)},
			opts:     &FamilyOptions{StaticMemory: 2},
			wantRows: []row{
				{"b64-g1", 1, 10, 1000, 0, false},
				{"b64-ckpt-g1", 1, 2 + 8*0.5, 750, 0, true}, // checkpointing: half the activations, 3/4 of the speed
				{"b128-g1", 1, 2 + 8*2, 1000, 0, true},      // twice the local batch
				{"b128-ckpt-g1", 1, 2 + 8*2*0.5, 750, 0, true},
				{"b64-g2", 2, 2 + 8*0.5, 1000 * 2 * eta, 0, true}, // half the local batch, one doubling of GPUs
				{"b64-ckpt-g2", 2, 2 + 8*0.5*0.5, 750 * 2 * eta, 0, true},
				{"b128-g2", 2, 10, 1000 * 2 * eta, 0, true},
				{"b128-ckpt-g2", 2, 2 + 8*0.5, 750 * 2 * eta, 0, true},
			},
		},
		{
			name:  "static memory unknown: memory only scales up; measured wins; nearest by knobs",
			space: train,
			measured: []elastico.Profile{
				measuredTraining(64, 1, false, false, 10, 1000),
				measuredTraining(128, 2, true, false, 7, 1500),
			},
			wantRows: []row{
				{"b64-g1", 1, 10, 1000, 0, false},
				{"b64-ckpt-g1", 1, 7, 1500 / 2 / eta, 0, true},   // from b128-ckpt-g2: same local batch, one GPU fewer (distance 1)
				{"b128-g1", 1, 20, 1000, 0, true},                // from b64-g1 (distance 1)
				{"b128-ckpt-g1", 1, 14, 1500 / 2 / eta, 0, true}, // from b128-ckpt-g2: one GPU fewer, local batch doubles
				{"b64-g2", 2, 10, 1000 * 2 * eta, 0, true},       // from b64-g1: smaller local batch, memory kept
				{"b64-ckpt-g2", 2, 7, 1500, 0, true},             // from b128-ckpt-g2 (distance 1): memory not scaled down
				{"b128-g2", 2, 10, 1000 * 2 * eta, 0, true},      // tie at distance 2: b64-g1 comes first in the space
				{"b128-ckpt-g2", 2, 7, 1500, 0, false},
			},
		},
		{
			name:     "noise scale sets every efficiency",
			space:    &Space{Class: elastico.Training, BatchSizes: []int{64, 256}},
			measured: []elastico.Profile{measuredTraining(64, 1, false, false, 10, 1000)},
			opts:     &FamilyOptions{StaticMemory: 2, NoiseScale: &NoiseScale{Phi: 128, Base: 64}},
			wantRows: []row{
				{"b64-g1", 1, 10, 1000, 1, false},
				{"b256-g1", 1, 2 + 8*4, 1000, 0.5, true},
			},
		},
		{
			name:     "AMP halves the activations",
			space:    &Space{Class: elastico.Training, BatchSizes: []int{64}, AMP: []bool{false, true}},
			measured: []elastico.Profile{measuredTraining(64, 1, false, true, 6, 1000)},
			opts:     &FamilyOptions{StaticMemory: 2},
			wantRows: []row{
				{"b64-g1", 1, 2 + 4*2, 1000, 0, true},
				{"b64-amp-g1", 1, 6, 1000, 0, false},
			},
		},
		{
			name:  "inference: the engine batch changes throughput, not memory",
			space: &Space{Class: elastico.Inference, BatchSizes: []int{8, 16, 32}, KVCacheFracs: []float64{0.5}},
			measured: []elastico.Profile{{
				Family: "llama", Class: elastico.Inference,
				Config:     elastico.Configuration{BatchSize: 16, KVCacheFrac: 0.5, GPUs: 1},
				Demand:     elastico.Demand{GPUs: 1, SM: 0.5, GPUMemory: 45, CPU: 2, RAM: 8},
				Throughput: 2000,
			}},
			opts: &FamilyOptions{StaticMemory: 5},
			wantRows: []row{
				{"b8-kv50-g1", 1, 45, 1000, 0, true},
				{"b16-kv50-g1", 1, 45, 2000, 0, false},
				{"b32-kv50-g1", 1, 45, 2000, 0, true},
			},
		},
		{
			name:  "inference: KV budget and sequence limits",
			space: &Space{Class: elastico.Inference, KVCacheFracs: []float64{0.25, 0.5}, MaxSeqs: []int{64, 128}},
			measured: []elastico.Profile{{
				Family: "llama", Class: elastico.Inference,
				Config:     elastico.Configuration{KVCacheFrac: 0.5, MaxSeqs: 128, GPUs: 1},
				Demand:     elastico.Demand{GPUs: 1, SM: 0.5, GPUMemory: 45, CPU: 2, RAM: 8},
				Throughput: 2000,
			}},
			opts: &FamilyOptions{DeviceMemory: 80},
			wantRows: []row{
				{"kv25-s64-g1", 1, 25, 500, 0, true},
				{"kv25-s128-g1", 1, 25, 1000, 0, true},
				{"kv50-s64-g1", 1, 45, 1000, 0, true},
				{"kv50-s128-g1", 1, 45, 2000, 0, false},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fam, err := BuildFamily(tc.space, tc.measured, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantRows, rows(fam), cmpopts.EquateApprox(1e-12, 1e-9)); diff != "" {
				t.Errorf("family (-want +got):\n%s", diff)
			}
			for i := range fam {
				if err := fam[i].Validate(); err != nil {
					t.Errorf("built profile %d invalid: %v", i, err)
				}
				if !fam[i].Interpolated {
					continue
				}
				// Interpolated profiles keep the neighbour's identity.
				if fam[i].Family != tc.measured[0].Family || fam[i].Demand.CPU != tc.measured[0].Demand.CPU {
					t.Errorf("%s: family %q CPU %g not carried over", fam[i].Config.ID, fam[i].Family, fam[i].Demand.CPU)
				}
			}
		})
	}
}

func TestBuildFamilyErrors(t *testing.T) {
	space := &Space{Class: elastico.Training, BatchSizes: []int{64, 128}}
	m := measuredTraining(64, 1, false, false, 10, 1000)
	withEff := m
	withEff.Efficiency = 0.9
	nan := m
	nan.Throughput = math.NaN()
	serve := m
	serve.Class = elastico.Inference
	outside := measuredTraining(32, 1, false, false, 10, 1000)
	kvSpace := &Space{Class: elastico.Inference, KVCacheFracs: []float64{0.25, 0.5}}
	kv := elastico.Profile{Class: elastico.Inference, Config: elastico.Configuration{KVCacheFrac: 0.5, GPUs: 1},
		Demand: elastico.Demand{GPUs: 1, SM: 0.5, GPUMemory: 45}, Throughput: 10}
	tests := []struct {
		name     string
		space    *Space
		measured []elastico.Profile
		opts     *FamilyOptions
		wantErr  string
	}{
		{"no measurement", space, nil, nil, "no measured profile"},
		{"outside the space", space, []elastico.Profile{outside}, nil, "measured[0] (b32-g1) is not a configuration of the space"},
		{"measured twice", space, []elastico.Profile{m, m}, nil, "measured[0] and measured[1] are both b64-g1"},
		{"wrong class", space, []elastico.Profile{serve}, nil, "measured[0] (b64-g1) is a inference profile"},
		{"invalid measurement", space, []elastico.Profile{nan}, nil, "measured[0] (b64-g1): elastico: profile"},
		{"efficiency across batch sizes", space, []elastico.Profile{withEff}, nil, "b128-g1: the efficiency of batch 128 cannot be copied"},
		{"KV without device memory", kvSpace, []elastico.Profile{kv}, nil, "kv25-g1: interpolating from kv50-g1 across KV-cache budgets needs FamilyOptions.DeviceMemory"},
		{"noise scale base above the smallest batch", space, []elastico.Profile{m}, &FamilyOptions{NoiseScale: &NoiseScale{Phi: 10, Base: 128}}, "Config.BatchSize 64 is below"},
		{"superlinear scaling", space, []elastico.Profile{m}, &FamilyOptions{ScalingPerDoubling: 1.2}, "ScalingPerDoubling is 1.2"},
		{"negative static memory", space, []elastico.Profile{m}, &FamilyOptions{StaticMemory: -1}, "StaticMemory is -1"},
		{"bad noise scale", space, []elastico.Profile{m}, &FamilyOptions{NoiseScale: &NoiseScale{Phi: 1}}, "Base is 0"},
		{"bad space", &Space{Class: elastico.Training}, []elastico.Profile{m}, nil, "BatchSizes is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := BuildFamily(tc.space, tc.measured, tc.opts)
			if err == nil || !strings.HasPrefix(err.Error(), "rst: ") || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestBuildFamilyIsDeterministic(t *testing.T) {
	space := &Space{Class: elastico.Training, BatchSizes: []int{16, 32, 64, 128, 256}, AMP: []bool{false, true}, GPUs: []int{1, 2, 4, 8}}
	measured := []elastico.Profile{
		measuredTraining(256, 8, false, true, 9, 9000),
		measuredTraining(32, 1, false, false, 6, 800),
		measuredTraining(128, 4, false, false, 11, 3000),
	}
	a, err := BuildFamily(space, measured, &FamilyOptions{StaticMemory: 1.5})
	if err != nil {
		t.Fatal(err)
	}
	// Reordering the measurements changes nothing.
	b, err := BuildFamily(space, []elastico.Profile{measured[2], measured[0], measured[1]}, &FamilyOptions{StaticMemory: 1.5})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("families differ with the measurements' order (-first +second):\n%s", diff)
	}
	n := 0
	for _, p := range a {
		if !p.Interpolated {
			n++
		}
	}
	if len(a) != 40 {
		t.Errorf("family of %d, want 5 batch sizes × 2 AMP × 4 GPU counts = 40", len(a))
	}
	if n != 3 {
		t.Errorf("%d measured profiles in the family, want 3", n)
	}
}

func TestDefaultScalingPerDoubling(t *testing.T) {
	// η is the median per-doubling scaling of Gavel's measurements.
	got, n, err := GavelScalingPerDoubling()
	if err != nil {
		t.Fatal(err)
	}
	if n != 168 || math.Abs(got-DefaultScalingPerDoubling) > 0.005 {
		t.Errorf("Gavel's median scaling per doubling %.4f over %d doublings, DefaultScalingPerDoubling %.2f", got, n, DefaultScalingPerDoubling)
	}
}

func ExampleBuildFamily() {
	space := &Space{Class: elastico.Training, BatchSizes: []int{64, 128}, GPUs: []int{1, 2}}
	measured := []elastico.Profile{{
		Family: "resnet50", Class: elastico.Training,
		Config:     elastico.Configuration{BatchSize: 64, GPUs: 1},
		Demand:     elastico.Demand{GPUs: 1, SM: 1, GPUMemory: 7, CPU: 4, RAM: 16},
		Throughput: 280,
	}}
	fam, err := BuildFamily(space, measured, &FamilyOptions{StaticMemory: 1, NoiseScale: &NoiseScale{Phi: 20000, Base: 64}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, p := range fam {
		fmt.Printf("%-8s %d GPU × %4.1f GiB  %4.0f samples/s  efficiency %.3f  interpolated %v\n",
			p.Config.ID, p.Demand.GPUs, p.Demand.GPUMemory, p.Throughput, p.Efficiency, p.Interpolated)
	}
	// Output:
	// b64-g1   1 GPU ×  7.0 GiB   280 samples/s  efficiency 1.000  interpolated false
	// b128-g1  1 GPU × 13.0 GiB   280 samples/s  efficiency 0.997  interpolated true
	// b64-g2   2 GPU ×  4.0 GiB   487 samples/s  efficiency 1.000  interpolated true
	// b128-g2  2 GPU ×  7.0 GiB   487 samples/s  efficiency 0.997  interpolated true
}
