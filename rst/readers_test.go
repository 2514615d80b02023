package rst

import (
	"math"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/elastico/elastico"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestGavelFamily(t *testing.T) {
	tests := []struct {
		gpu, model  string
		wantConfigs int
		// One configuration's expected throughput (samples/s) and memory.
		wantID     string
		wantTput   float64
		wantMemory float64
	}{
		// ResNet-50 at batch 64 on one V100: 4.395 steps/s × 64.
		{"V100", "ResNet-50", 16, "b64-g1", 4.395068038 * 64, 0.75 + 25.56e6*12/(1<<30) + 64*75.0/1024},
		// Eight workers of batch 64: global batch 512, Gavel's 17.303 steps/s over all workers.
		{"V100", "ResNet-50", 16, "b512-g8", 17.302829 * 64, 0.75 + 25.56e6*12/(1<<30) + 64*75.0/1024},
		// K80 measured ResNet-50 at batch 128 on one GPU only.
		{"K80", "ResNet-50", 13, "b128-g1", 0.347 * 128, 0.75 + 25.56e6*12/(1<<30) + 128*75.0/1024},
		// No batch size: one sample per step.
		{"P100", "A3C", 1, "g1", 5.681, 0.75 + 0.59e6*16/(1<<30) + 64.0/1024},
		{"P100", "Recommendation", 5, "b8192-g1", 5.548 * 8192, 0.75 + 46.8e6*16/(1<<30) + 8192*0.8/1024},
		{"K80", "LM", 20, "b40-g2", 23.773 * 20, 0.75 + 13.99e6*8/(1<<30) + 20*14.0/1024},
	}
	for _, tc := range tests {
		t.Run(tc.gpu+"/"+tc.model+"/"+tc.wantID, func(t *testing.T) {
			fam, err := GavelFamily(tc.gpu, tc.model)
			if err != nil {
				t.Fatal(err)
			}
			if len(fam) != tc.wantConfigs {
				t.Errorf("%d configurations, want %d", len(fam), tc.wantConfigs)
			}
			var got *elastico.Profile
			for i := range fam {
				if err := fam[i].Validate(); err != nil {
					t.Errorf("profile %d: %v", i, err)
				}
				if fam[i].Config.ID == tc.wantID {
					got = &fam[i]
				}
			}
			if got == nil {
				t.Fatalf("no configuration %s", tc.wantID)
			}
			if diff := cmp.Diff([]float64{tc.wantTput, tc.wantMemory}, []float64{got.Throughput, got.Demand.GPUMemory},
				cmpopts.EquateApprox(1e-3, 0)); diff != "" {
				t.Errorf("throughput, memory (-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range [][2]string{{"t4", "ResNet-50"}, {"a100", "ResNet-50"}, {"V100", "cifar10"}, {"V100", "BERT"}} {
		if _, err := GavelFamily(bad[0], bad[1]); err == nil || !strings.HasPrefix(err.Error(), "rst: gavel: ") {
			t.Errorf("GavelFamily(%q, %q): %v", bad[0], bad[1], err)
		}
	}
}

func TestPolluxFamily(t *testing.T) {
	tests := []struct {
		model       string
		opts        *PolluxOptions
		wantConfigs int
		wantMinGPUs int
		wantMaxGPUs int
	}{
		// cifar10 on one node: local batches 32…1024 (11), global 128…4096:
		// 7 on 1 GPU, 9 on 2, 10 on 3, 11 on 4.
		{"cifar10", nil, 37, 1, 4},
		{"cifar10", &PolluxOptions{MultiNode: true}, 58, 1, 16},
		{"imagenet", nil, 13, 1, 4},
		{"yolov3", nil, 10, 1, 4},
		{"bert", nil, 15, 1, 4},
		{"ncf", &PolluxOptions{MultiNode: true}, 96, 1, 16},
		{"deepspeech2", nil, 26, 1, 4},
	}
	for _, tc := range tests {
		t.Run(tc.model, func(t *testing.T) {
			fam, err := PolluxFamily(tc.model, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(fam) != tc.wantConfigs {
				t.Errorf("%d configurations, want %d", len(fam), tc.wantConfigs)
			}
			fit, _ := PolluxNoiseScale(tc.model)
			seen := map[string]bool{}
			for i, p := range fam {
				if err := p.Validate(); err != nil {
					t.Errorf("profile %d: %v", i, err)
				}
				if seen[p.Config.ID] {
					t.Errorf("%s twice", p.Config.ID)
				}
				seen[p.Config.ID] = true
				if p.Config.GPUs < tc.wantMinGPUs || p.Config.GPUs > tc.wantMaxGPUs {
					t.Errorf("%s: %d GPUs", p.Config.ID, p.Config.GPUs)
				}
				if p.Config.BatchSize < fit.Base || p.Efficiency != fit.Efficiency(p.Config.BatchSize) {
					t.Errorf("%s: efficiency %g, want %g", p.Config.ID, p.Efficiency, fit.Efficiency(p.Config.BatchSize))
				}
				if p.Config.AMP != (tc.model == "imagenet") {
					t.Errorf("%s: AMP %v", p.Config.ID, p.Config.AMP)
				}
				if tc.model == "yolov3" && p.Config.BatchSize/p.Config.GPUs > 8 {
					t.Errorf("%s: local batch above the simulator's 8", p.Config.ID)
				}
			}
		})
	}
	// One hand-checked row: cifar10, one GPU, local batch 1024: 1024 samples
	// in 0.7021 s.
	fam, err := PolluxFamily("cifar10", nil)
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(fam, func(p elastico.Profile) bool { return p.Config.ID == "b1024-g1" })
	if i < 0 || math.Abs(fam[i].Throughput-1024/0.7020925283432007) > 1e-6 {
		t.Errorf("b1024-g1: %+v", fam[i])
	}
	if _, err := PolluxFamily("mnist", nil); err == nil || !strings.HasPrefix(err.Error(), "rst: pollux: ") {
		t.Errorf("unknown model: %v", err)
	}
}

// TestMemoryModelsFitTheMeasurements checks the memory models against the
// only memory facts the data sets hold: every configuration they measured
// ran, so it fit the GPU it ran on.
func TestMemoryModelsFitTheMeasurements(t *testing.T) {
	for _, gpu := range []string{"V100", "P100", "K80"} {
		g, _ := DataGPUOf(gpu)
		for _, m := range GavelModels() {
			fam, err := GavelFamily(gpu, m)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range fam {
				if p.Demand.GPUMemory > g.Memory {
					t.Errorf("%s %s %s: modelled %.2f GiB, above the %.2f GiB it ran in", gpu, m, p.Config.ID, p.Demand.GPUMemory, g.Memory)
				}
			}
		}
	}
	t4, _ := DataGPUOf("T4")
	for _, m := range PolluxModels() {
		fam, err := PolluxFamily(m, &PolluxOptions{MultiNode: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range fam {
			if p.Demand.GPUMemory > t4.Memory {
				t.Errorf("pollux %s %s: modelled %.2f GiB, above the T4's %.2f GiB", m, p.Config.ID, p.Demand.GPUMemory, t4.Memory)
			}
		}
	}
	for _, name := range MemoryModels() {
		mm, _ := MemoryModelOf(name)
		if mm.Params <= 0 || mm.BytesPerParam < 8 || mm.Activation <= 0 || mm.Basis == "" {
			t.Errorf("%s: incomplete model %+v", name, mm)
		}
	}
}

func TestMemoryModel(t *testing.T) {
	m := MemoryModel{Params: 1 << 28, BytesPerParam: 16, Activation: 512, Context: 1}
	tests := []struct {
		name    string
		local   int
		ckpt    bool
		amp     bool
		wantGiB float64
	}{
		{"static plus one sample", 1, false, false, 1 + 4 + 0.5},
		{"eight samples", 8, false, false, 1 + 4 + 4},
		{"checkpointing and AMP", 8, true, true, 1 + 4 + 1},
		{"no batch counts as one", 0, false, false, 5.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := m.Replica(tc.local, tc.ckpt, tc.amp); math.Abs(got-tc.wantGiB) > 1e-12 {
				t.Errorf("Replica = %g GiB, want %g", got, tc.wantGiB)
			}
		})
	}
	if got := m.MaxLocalBatch(16, false, false); got != 22 {
		t.Errorf("MaxLocalBatch(16 GiB) = %d, want 22", got)
	}
	if got := m.MaxLocalBatch(5, false, false); got != 0 {
		t.Errorf("MaxLocalBatch(5 GiB) = %d, want 0", got)
	}
	if got := (MemoryModel{}).Static(); got != DefaultContext {
		t.Errorf("zero model's static memory %g, want the default context", got)
	}
}

// TestInterpolationAgainstGavel measures nearest-neighbour interpolation on
// real data: from each Gavel family's single-GPU measurements only, predict
// its multi-GPU throughputs, and compare with what Gavel measured.
func TestInterpolationAgainstGavel(t *testing.T) {
	var errs []float64
	under := 0
	for _, gpu := range []string{"V100", "P100", "K80"} {
		for _, m := range GavelModels() {
			fam, err := GavelFamily(gpu, m)
			if err != nil {
				t.Fatal(err)
			}
			var measured []elastico.Profile
			space := Space{Class: elastico.Training}
			batches, gpus := map[int]bool{}, map[int]bool{}
			for _, p := range fam {
				batches[p.Config.BatchSize] = true
				gpus[p.Config.GPUs] = true
				if p.Config.GPUs == 1 {
					measured = append(measured, p)
				}
			}
			if len(gpus) == 1 {
				continue
			}
			for b := range batches {
				space.BatchSizes = append(space.BatchSizes, b)
			}
			for g := range gpus {
				space.GPUs = append(space.GPUs, g)
			}
			mm, _ := MemoryModelOf(m)
			built, err := BuildFamily(&space, measured, &FamilyOptions{StaticMemory: mm.Static()})
			if err != nil {
				t.Fatal(err)
			}
			byID := map[string]*elastico.Profile{}
			for i := range built {
				byID[built[i].Config.ID] = &built[i]
			}
			for _, p := range fam {
				if p.Config.GPUs == 1 {
					continue
				}
				q := byID[p.Config.ID]
				if q == nil || !q.Interpolated {
					t.Fatalf("%s %s %s not interpolated", gpu, m, p.Config.ID)
				}
				rel := q.Throughput/p.Throughput - 1
				errs = append(errs, math.Abs(rel))
				if rel < 0 {
					under++
				}
				// Per-replica memory at the same local batch is what the model gives.
				if math.Abs(q.Demand.GPUMemory-p.Demand.GPUMemory) > 1e-9 {
					t.Errorf("%s %s %s: interpolated memory %.3f, modelled %.3f", gpu, m, p.Config.ID, q.Demand.GPUMemory, p.Demand.GPUMemory)
				}
			}
		}
	}
	sort.Float64s(errs)
	med, p90 := errs[len(errs)/2], errs[len(errs)*9/10]
	t.Logf("interpolating %d multi-GPU Gavel configurations from 1-GPU ones: median |error| %.1f %%, p90 %.1f %%, %d under-estimated",
		len(errs), 100*med, 100*p90, under)
	if med > 0.25 {
		t.Errorf("median interpolation error %.1f %%, want ≤ 25 %%", 100*med)
	}
}

// TestPruningRealFamilies reports K̄, the family size after pruning, on the
// shipped data's families.
func TestPruningRealFamilies(t *testing.T) {
	total, kept := 0, 0
	for _, gpu := range []string{"V100", "P100", "K80"} {
		for _, m := range GavelModels() {
			fam, err := GavelFamily(gpu, m)
			if err != nil {
				t.Fatal(err)
			}
			total += len(fam)
			kept += len(Prune(fam))
		}
	}
	t.Logf("Gavel: %d configurations in 21 families, %d after pruning (K̄ = %.2f)", total, kept, float64(kept)/21)
	ptotal, pkept := 0, 0
	for _, m := range PolluxModels() {
		fam, err := PolluxFamily(m, nil)
		if err != nil {
			t.Fatal(err)
		}
		k := len(Prune(fam))
		t.Logf("Pollux %-12s %3d configurations, %2d after pruning", m, len(fam), k)
		ptotal += len(fam)
		pkept += k
		if k == 0 || k > len(fam) {
			t.Errorf("%s: %d kept of %d", m, k, len(fam))
		}
	}
	if kept >= total || pkept >= ptotal {
		t.Errorf("pruning dropped nothing: Gavel %d/%d, Pollux %d/%d", kept, total, pkept, ptotal)
	}
}
