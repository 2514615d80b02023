package rst

import (
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/elastico/elastico"
)

// TestSpeedRatio checks the table's ratios against Lambda's figures and
// the order every model must keep: H100-SXM5 > A100-SXM4 > V100 and
// H100-PCIe > A100-PCIe > V100.
func TestSpeedRatio(t *testing.T) {
	want := map[string][2]float64{ // A100-SXM4, H100-SXM5
		"ResNet-50":      {1066.0 / 369, 1753.0 / 369},
		"ResNet-18":      {1066.0 / 369, 1753.0 / 369},
		"CycleGAN":       {1066.0 / 369, 1753.0 / 369},
		"Transformer":    {30462.0 / 6920, 45697.0 / 6920},
		"Recommendation": {28653595.0 / 9932793, 49094300.0 / 9932793},
	}
	for _, m := range GavelModels() {
		r := map[string]float64{}
		for _, g := range []string{"a100-pcie-40gb", "a100-sxm4-80gb", "h100-pcie-80gb", "h100-sxm5-80gb"} {
			x, src, err := SpeedRatio(m, g)
			if err != nil {
				t.Fatalf("%s on %s: %v", m, g, err)
			}
			if src == "" {
				t.Errorf("%s on %s: no source", m, g)
			}
			r[g] = x
		}
		if !(r["h100-sxm5-80gb"] > r["a100-sxm4-80gb"] && r["a100-sxm4-80gb"] > 1) {
			t.Errorf("%s: H100-SXM5 %.2f×, A100-SXM4 %.2f×: want H100 > A100 > V100", m, r["h100-sxm5-80gb"], r["a100-sxm4-80gb"])
		}
		if !(r["h100-pcie-80gb"] > r["a100-pcie-40gb"] && r["a100-pcie-40gb"] > 1) {
			t.Errorf("%s: H100-PCIe %.2f×, A100-PCIe %.2f×: want H100 > A100 > V100", m, r["h100-pcie-80gb"], r["a100-pcie-40gb"])
		}
		if w, ok := want[m]; ok && (math.Abs(r["a100-sxm4-80gb"]-w[0]) > 1e-12 || math.Abs(r["h100-sxm5-80gb"]-w[1]) > 1e-12) {
			t.Errorf("%s: %.3f×, %.3f×, want Lambda's %.3f×, %.3f×", m, r["a100-sxm4-80gb"], r["h100-sxm5-80gb"], w[0], w[1])
		}
	}
	// Amdahl's rule dilutes resnet50's ratio: the host-bound A3C gains
	// less than ResNet-50, and less than the LSTM.
	a3c, _, _ := SpeedRatio("A3C", "h100-sxm5-80gb")
	lm, _, _ := SpeedRatio("LM", "h100-sxm5-80gb")
	rn, _, _ := SpeedRatio("ResNet-50", "h100-sxm5-80gb")
	if !(1 < a3c && a3c < lm && lm < rn) {
		t.Errorf("H100: A3C %.2f×, LM %.2f×, ResNet-50 %.2f×: want 1 < A3C < LM < ResNet-50", a3c, lm, rn)
	}
}

// TestSpeedRatioA10: Lambda's A10 row, a little slower than the V100 on
// convolutions and recommendation, faster on the Transformer.
func TestSpeedRatioA10(t *testing.T) {
	for m, want := range map[string]float64{
		"ResNet-50":      349.0 / 369,
		"Transformer":    8940.0 / 6920,
		"Recommendation": 9069169.0 / 9932793,
	} {
		r, _, err := SpeedRatio(m, "a10")
		if err != nil || math.Abs(r-want) > 1e-12 {
			t.Errorf("%s on A10: %g (%v), want Lambda's %g", m, r, err, want)
		}
	}
	// Amdahl's rule brings a slower GPU's ratio nearer 1, never past it.
	rn, _, _ := SpeedRatio("ResNet-50", "a10")
	a3c, _, _ := SpeedRatio("A3C", "a10")
	if !(rn < a3c && a3c <= 1) {
		t.Errorf("A10: ResNet-50 %.3f×, A3C %.3f×: want ResNet-50 < A3C ≤ 1", rn, a3c)
	}
	for _, m := range GavelModels() {
		if _, err := EstimatedGavelFamily("a10", m); err != nil {
			t.Errorf("%s on A10: %v", m, err)
		}
	}
}

func TestSpeedRatioErrors(t *testing.T) {
	for _, tc := range []struct{ model, gpu, want string }{
		{"VGG", "a100-sxm4-80gb", `model "VGG"`},
		{"ResNet-50", "v100-sxm2-16gb", `GPU "v100-sxm2-16gb"`},
		{"ResNet-50", "t4", `GPU "t4"`},
		{"ResNet-50", "", `GPU ""`},
	} {
		if _, _, err := SpeedRatio(tc.model, tc.gpu); err == nil || !contains(err.Error(), tc.want) {
			t.Errorf("SpeedRatio(%q, %q): %v, want an error naming %s", tc.model, tc.gpu, err, tc.want)
		}
		if _, err := EstimatedGavelFamily(tc.gpu, tc.model); err == nil || !contains(err.Error(), tc.want) {
			t.Errorf("EstimatedGavelFamily(%q, %q): %v, want an error naming %s", tc.gpu, tc.model, err, tc.want)
		}
	}
}

// TestEstimatedGavelFamily checks every estimated family against Gavel's
// V100 family: the same configurations, faster on H100 than on A100,
// memory within the GPU's, every profile marked, and a State holding the
// family on a server of such GPUs valid.
func TestEstimatedGavelFamily(t *testing.T) {
	for _, m := range GavelModels() {
		v100, err := GavelFamily("V100", m)
		if err != nil {
			t.Fatal(err)
		}
		a100, err := EstimatedGavelFamily("a100-sxm4-80gb", m)
		if err != nil {
			t.Fatal(err)
		}
		h100, err := EstimatedGavelFamily("h100-sxm5-80gb", m)
		if err != nil {
			t.Fatal(err)
		}
		if len(a100) != len(v100) || len(h100) != len(v100) {
			t.Fatalf("%s: %d, %d configurations, want V100's %d", m, len(a100), len(h100), len(v100))
		}
		for i := range v100 {
			v, a, h := &v100[i], &a100[i], &h100[i]
			if a.Config != v.Config || h.Config != v.Config {
				t.Errorf("%s: configuration %d: %s, %s, want %s", m, i, a.Config.ID, h.Config.ID, v.Config.ID)
			}
			if !(h.Throughput > a.Throughput && a.Throughput > v.Throughput) {
				t.Errorf("%s %s: H100 %.1f, A100 %.1f, V100 %.1f: want H100 > A100 > V100", m, v.Config.ID, h.Throughput, a.Throughput, v.Throughput)
			}
			if a.Demand != v.Demand || h.Demand != v.Demand {
				t.Errorf("%s %s: demand %+v, %+v, want V100's %+v", m, v.Config.ID, a.Demand, h.Demand, v.Demand)
			}
			if !a.Interpolated || !h.Interpolated {
				t.Errorf("%s %s: not marked Interpolated", m, v.Config.ID)
			}
			if a.Hardware.GPUModel != "A100-SXM4-80GB" || h.Hardware.GPUModel != "H100-SXM5-80GB" {
				t.Errorf("%s %s: hardware %q, %q", m, v.Config.ID, a.Hardware.GPUModel, h.Hardware.GPUModel)
			}
		}
		validOnServer(t, "a100-sxm4-80gb", a100)
		validOnServer(t, "h100-sxm5-80gb", h100)
	}
}

// validOnServer checks a family with State.Validate on one 8-GPU server of
// the GPU, and that the Checker finds a configuration that fits it.
func validOnServer(t *testing.T, gpu string, fam []elastico.Profile) {
	t.Helper()
	g, _ := GPUSpecOf(gpu)
	node := elastico.Node{ID: "n0", CPU: 128, RAM: 1024}
	for i := 0; i < 8; i++ {
		node.GPUs = append(node.GPUs, elastico.GPU{ID: fmt.Sprintf("g%d", i), Model: g.Model, Memory: g.Memory, Shared: true})
	}
	job := elastico.Job{ID: "j", Class: fam[0].Class, Profiles: fam, Arrival: time.Unix(0, 0)}
	if fam[0].Class == elastico.Training {
		job.Optimizer, job.ReferenceBatch = elastico.Adam, max(1, fam[0].Config.BatchSize)
	}
	st := elastico.State{Now: time.Unix(60, 0), Cluster: elastico.Cluster{Nodes: []elastico.Node{node}}, Jobs: []elastico.Job{job}}
	if err := st.Validate(); err != nil {
		t.Fatalf("%s on %s: %v", fam[0].Family, gpu, err)
	}
	ch, err := NewChecker(&st.Cluster)
	if err != nil {
		t.Fatal(err)
	}
	if ok, _ := ch.Filter(fam, 0, false); len(ok) != len(fam) {
		t.Errorf("%s on %s: %d of %d configurations fit one server", fam[0].Family, gpu, len(ok), len(fam))
	}
}

func TestGPUSpecs(t *testing.T) {
	for _, k := range GPUSpecKeys() {
		g, ok := GPUSpecOf(k)
		if !ok {
			t.Fatalf("%s listed but unknown", k)
		}
		if err := g.validate(); err != nil {
			t.Errorf("%s: %v", k, err)
		}
	}
	// Datasheet order the roofline relies on.
	v, _ := GPUSpecOf("v100-sxm2-16gb")
	a, _ := GPUSpecOf("a100-sxm4-80gb")
	h, _ := GPUSpecOf("h100-sxm5-80gb")
	if !(v.BandwidthGBs < a.BandwidthGBs && a.BandwidthGBs < h.BandwidthGBs && v.TensorTFLOPs < a.TensorTFLOPs && a.TensorTFLOPs < h.TensorTFLOPs) {
		t.Errorf("bandwidth %g, %g, %g; FP16 %g, %g, %g: want V100 < A100 < H100", v.BandwidthGBs, a.BandwidthGBs, h.BandwidthGBs, v.TensorTFLOPs, a.TensorTFLOPs, h.TensorTFLOPs)
	}
	for _, tc := range []struct {
		g    GPUSpec
		want string
	}{
		{GPUSpec{Memory: 80, BandwidthGBs: 1, TensorTFLOPs: 1}, "GPUSpec.Model"},
		{GPUSpec{Model: "x", Memory: 80 * 1024, BandwidthGBs: 1, TensorTFLOPs: 1}, "GPUSpec.Memory"},
		{GPUSpec{Model: "x", Memory: math.NaN(), BandwidthGBs: 1, TensorTFLOPs: 1}, "GPUSpec.Memory"},
		{GPUSpec{Model: "x", Memory: 80, TensorTFLOPs: 1}, "GPUSpec.BandwidthGBs"},
		{GPUSpec{Model: "x", Memory: 80, BandwidthGBs: 1, TensorTFLOPs: math.Inf(1)}, "GPUSpec.TensorTFLOPs"},
		{GPUSpec{Model: "x", Memory: 80, BandwidthGBs: 1, TensorTFLOPs: 1, LinkGBs: -1}, "GPUSpec.LinkGBs"},
	} {
		if err := tc.g.validate(); err == nil || !contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %s", tc.g, err, tc.want)
		}
	}
}
