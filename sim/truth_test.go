package sim

import (
	"math"
	"testing"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/gavel"
	"github.com/elastico/elastico/rst"
)

func TestGavelTruth(t *testing.T) {
	tr := testTruth(t)
	want := map[string]int{"A3C": 1, "CycleGAN": 1, "LM": 20, "Recommendation": 5, "ResNet-18": 20, "ResNet-50": 16, "Transformer": 20}
	for name, n := range want {
		f, ok := tr.Family(name)
		if !ok {
			t.Fatalf("no family %s", name)
		}
		if len(f.Configs) != n {
			t.Errorf("%s: %d configurations, want %d", name, len(f.Configs), n)
		}
		for _, c := range f.Configs {
			if !c.Measured {
				t.Errorf("%s %s: a standard configuration not measured", name, c.ID)
			}
			if c.Memory > tr.GPU.Memory {
				t.Errorf("%s %s: needs %.1f GiB on a %.1f GiB V100 that Gavel ran it on", name, c.ID, c.Memory, tr.GPU.Memory)
			}
			if !(c.SM > 0 && c.SM <= 1) || !(c.Efficiency > 0 && c.Efficiency <= 1) {
				t.Errorf("%s %s: SM %g, efficiency %g", name, c.ID, c.SM, c.Efficiency)
			}
		}
	}
	for _, im := range inferenceModels {
		if f, ok := tr.Family(im.Name); !ok || f.Class != elastico.Inference || len(f.Configs) == 0 {
			t.Errorf("inference family %s missing or empty", im.Name)
		}
	}
	// Every measured pair is the truth, exactly.
	all, err := gavel.Load()
	if err != nil {
		t.Fatal(err)
	}
	measured := 0
	for i, a := range tr.Kinds() {
		for j, b := range tr.Kinds() {
			s, ok := tr.Speed(i, j)
			if !(s > 0 && s <= 1) {
				t.Fatalf("speed of %s next to %s = %g", a.Name, b.Name, s)
			}
			if !ok {
				continue
			}
			measured++
			ta, _ := gavel.ParseJobType(a.Name)
			tb, _ := gavel.ParseJobType(b.Name)
			if g, _ := all.Table(gavel.V100).Speed(ta, tb); g != s {
				t.Errorf("%s next to %s: truth %g, Gavel %g", a.Name, b.Name, s, g)
			}
		}
	}
	if measured != 636 {
		t.Errorf("%d measured pairs, want Gavel's 636 on the V100", measured)
	}
	fit := tr.CoLocationFit
	if !(fit.CVMAPE < fit.BaseMAPE) {
		t.Errorf("co-location model: CV MAPE %.1f%% not below the constant model's %.1f%%", fit.CVMAPE, fit.BaseMAPE)
	}
}

func TestModelledConfigurations(t *testing.T) {
	tr := testTruth(t)
	tests := []struct {
		name         string
		family       string
		batch, gpus  int
		wantMeasured bool
	}{
		{"measured 8 GPUs", "ResNet-50", 64, 8, true},
		{"16 GPUs extrapolated, spread", "ResNet-50", 64, 16, false},
		{"A3C on 4 GPUs from the scaling model", "A3C", 0, 4, false},
		{"3 GPUs interpolated", "LM", 20, 3, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tr.Config(tc.family, tc.batch, tc.gpus)
			if err != nil {
				t.Fatal(err)
			}
			if c.Measured != tc.wantMeasured || c.GPUs != tc.gpus || !(c.Throughput > 0) || !(c.SpreadThroughput > 0) {
				t.Errorf("%+v", c)
			}
			if tc.gpus > tr.GPU.PerNode && c.Throughput != c.SpreadThroughput {
				t.Errorf("a gang larger than a server must run spread: %g vs %g", c.Throughput, c.SpreadThroughput)
			}
		})
	}
	for _, bad := range []struct {
		family      string
		batch, gpus int
	}{{"ResNet-50", 48, 1}, {"nope", 16, 1}, {"ResNet-50", 16, 0}, {"OPT-1.3B-offline", 0, 2}} {
		if _, err := tr.Config(bad.family, bad.batch, bad.gpus); err == nil {
			t.Errorf("Config(%q, %d, %d) = nil error", bad.family, bad.batch, bad.gpus)
		}
	}
}

func TestEfficiencyModel(t *testing.T) {
	f := &Family{RefBatch: 32, Noise: rst.NoiseScale{Phi: 968, Base: 32}}
	tests := []struct {
		global int
		want   float64
	}{{16, 1}, {32, 1}, {1032, 0.5}}
	for _, tc := range tests {
		if got := f.efficiency(tc.global); math.Abs(got-tc.want) > 1e-12 {
			t.Errorf("E(%d) = %g, want %g", tc.global, got, tc.want)
		}
	}
	tr := testTruth(t)
	r18, _ := tr.Family("ResNet-18")
	a3c, _ := tr.Family("A3C")
	c1, _ := tr.Config("ResNet-18", 16, 1)
	c8, _ := tr.Config("ResNet-18", 256, 8)
	if c1.Efficiency != 1 || !(c8.Efficiency < 0.9) || math.IsInf(r18.Noise.Phi, 0) {
		t.Errorf("ResNet-18: E(16) %g, E(2048) %g, φ %g: want 1, < 0.9 and Pollux's cifar10 φ", c1.Efficiency, c8.Efficiency, r18.Noise.Phi)
	}
	if c, _ := tr.Config("A3C", 0, 8); c.Efficiency != 1 || !math.IsInf(a3c.Noise.Phi, 1) {
		t.Errorf("A3C: efficiency %g, φ %g; want 1 and +Inf (not modelled)", c.Efficiency, a3c.Noise.Phi)
	}
}

func TestInferenceModel(t *testing.T) {
	im := inferenceModels[0]
	lo, _, _, ok1 := im.config(V100, 0.1, 128)
	hi, _, _, ok2 := im.config(V100, 0.45, 128)
	if !ok1 || !ok2 || !(hi > lo) {
		t.Errorf("a larger KV-cache budget should raise throughput: %g → %g", lo, hi)
	}
	few, _, _, _ := im.config(V100, 0.45, 16)
	if !(few < hi) {
		t.Errorf("fewer sequences should lower throughput: %g vs %g", few, hi)
	}
	if _, _, _, ok := inferenceModels[1].config(K80, 0.45, 64); ok {
		t.Errorf("OPT-2.7B with 45 %% of a K80 for KV should not fit")
	}
}

func TestClusterSpec(t *testing.T) {
	c, err := V100.Cluster(20)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Nodes) != 3 || len(c.Nodes[2].GPUs) != 4 || c.NumGPUs() != 20 {
		t.Errorf("20 V100s: %d nodes, last with %d GPUs", len(c.Nodes), len(c.Nodes[2].GPUs))
	}
	if _, err := V100.Cluster(0); err == nil {
		t.Error("a cluster of 0 GPUs was accepted")
	}
}

func TestPolluxTruth(t *testing.T) {
	tr, err := PolluxTruth()
	if err != nil {
		t.Fatal(err)
	}
	if tr.GPU.Model != "T4" || tr.GPU.PerNode != 4 {
		t.Fatalf("GPU %+v, want Pollux's T4 nodes of 4", tr.GPU)
	}
	for _, name := range []string{"bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"} {
		f, ok := tr.Family(name)
		if !ok || len(f.Configs) == 0 || !(f.Work > 0) || f.Optimizer != elastico.AdaScale {
			t.Fatalf("family %s: %v", name, f)
		}
		for _, c := range f.Configs {
			if c.BatchSize < f.RefBatch || c.Memory > tr.GPU.Memory || !(c.Efficiency > 0 && c.Efficiency <= 1) {
				t.Errorf("%s %s: batch %d (ref %d), %.1f GiB, efficiency %g", name, c.ID, c.BatchSize, f.RefBatch, c.Memory, c.Efficiency)
			}
		}
	}
	// cifar10 on one GPU at local batch 32: Pollux's measured step time.
	c, err := tr.Config("cifar10", 32, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := 32 / 0.0427886962890625; math.Abs(c.Throughput-want) > 1e-9*want {
		t.Errorf("cifar10 b32x1: %g samples/s, want Pollux's %g", c.Throughput, want)
	}
	// 48 GPUs is beyond Pollux's placements: modelled, spread.
	big, err := tr.Config("imagenet", 200, 48)
	if err != nil || big.Measured || big.Throughput != big.SpreadThroughput {
		t.Errorf("imagenet on 48 GPUs: %+v, %v", big, err)
	}
	jobs, _, err := tr.Workload(mustShipped(t, "pollux/workload-6.csv"), WorkloadOptions{GPUs: 64, Load: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.Work != j.Family.Work {
			t.Errorf("job %s: work %g, want the family's whole training %g", j.ID, j.Work, j.Family.Work)
		}
	}
}

func TestSpreadPlacement(t *testing.T) {
	for n, want := range map[int]string{2: "11", 3: "12", 4: "22", 6: "33", 7: "34", 8: "44", 12: "444", 16: "4444"} {
		if got := spreadPlacement(n, 4); got != want {
			t.Errorf("spreadPlacement(%d, 4) = %q, want %q", n, got, want)
		}
	}
}

func mustShipped(t *testing.T, path string) *Trace {
	t.Helper()
	tr, err := ReadShipped(path)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}
