package gaveldata

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
)

func TestLoad(t *testing.T) {
	tests := []struct {
		gpu                string
		wantPairs, wantCap int
		wantSamples        int
	}{
		// One sample per directed measurement: 636, 656 and 589
		// (SOURCES.md); a job next to a copy of itself is one of them.
		{V100, 330, 80, 636},
		{P100, 340, 0, 656},
		{K80, 306, 0, 589},
	}
	for _, tc := range tests {
		t.Run(tc.gpu, func(t *testing.T) {
			d, err := Load(tc.gpu)
			if err != nil {
				t.Fatal(err)
			}
			if len(d.Profiles) != 26 || len(d.Pairs) != tc.wantPairs || d.Capped() != tc.wantCap || len(d.Samples()) != tc.wantSamples {
				t.Errorf("%d profiles, %d pairs, %d capped, %d samples; want 26, %d, %d, %d",
					len(d.Profiles), len(d.Pairs), d.Capped(), len(d.Samples()), tc.wantPairs, tc.wantCap, tc.wantSamples)
			}
			if d := cmp.Diff(Families, familiesInOrder(d)); d != "" {
				t.Errorf("families (-want +got):\n%s", d)
			}
			for i := range d.Profiles {
				p := &d.Profiles[i]
				if p.Counters.Present != 0 {
					t.Errorf("%s: Gavel has no counters, yet %b are present", d.IDs[i], p.Counters.Present)
				}
				if !(p.Throughput > 0) || p.Params != Params[p.Family] || p.Class != elastico.Training || p.Config.AMP || p.Config.Checkpointing {
					t.Errorf("%s: %+v", d.IDs[i], p)
				}
				switch p.Family {
				case "A3C":
					if p.Config.BatchSize != 0 {
						t.Errorf("A3C batch size %d, want none", p.Config.BatchSize)
					}
				case "CycleGAN":
					if p.Config.BatchSize != 1 {
						t.Errorf("CycleGAN batch size %d, want cyclegan.py's default 1", p.Config.BatchSize)
					}
				default:
					if !strings.Contains(d.IDs[i], "batch size") || p.Config.BatchSize < 5 {
						t.Errorf("%s: batch size %d", d.IDs[i], p.Config.BatchSize)
					}
				}
			}
			for _, s := range d.Samples() {
				if s.Slowdown < 1 || math.IsInf(s.Slowdown, 0) {
					t.Errorf("slowdown %g", s.Slowdown)
				}
			}
		})
	}
}

func familiesInOrder(d *iac.Dataset) []string {
	var out []string
	for _, f := range Families {
		for i := range d.Profiles {
			if d.Profiles[i].Family == f {
				out = append(out, f)
				break
			}
		}
	}
	if len(out) != len(d.Families()) {
		return d.Families()
	}
	return out
}

// TestLoadAnyCase: Load takes a GPU model in any case and names it as
// elastico.GPU.Model does; the dataset's Name, which trained models record,
// stays in lower case.
func TestLoadAnyCase(t *testing.T) {
	d, err := Load("p100", "k80")
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "gavel-p100+k80" || d.IDs[0] != "P100/A3C" || d.Profiles[0].Hardware.GPUModel != "P100" {
		t.Errorf("%s: ID %q, GPU %q", d.Name, d.IDs[0], d.Profiles[0].Hardware.GPUModel)
	}
	if _, err := Load("p100", "P100"); err == nil {
		t.Error("Load(p100, P100): no error")
	}
	if _, err := Load("t4"); err == nil || !strings.Contains(err.Error(), "V100, P100, K80") {
		t.Errorf("Load(t4) = %v, want an error naming V100, P100, K80", err)
	}
}

func TestLoadSeveral(t *testing.T) {
	d, err := Load(P100, K80)
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "gavel-p100+k80" || len(d.Profiles) != 52 || len(d.Pairs) != 340+306 {
		t.Errorf("%s: %d profiles, %d pairs", d.Name, len(d.Profiles), len(d.Pairs))
	}
	if d.IDs[0] != "P100/A3C" || d.IDs[26] != "K80/A3C" || d.Profiles[26].Hardware.GPUModel != K80 {
		t.Errorf("IDs %q, %q; GPU %q", d.IDs[0], d.IDs[26], d.Profiles[26].Hardware.GPUModel)
	}
	for _, p := range d.Pairs {
		if d.Profiles[p.A].Hardware.GPUModel != d.Profiles[p.B].Hardware.GPUModel {
			t.Fatalf("pair across GPU types: %s, %s", d.IDs[p.A], d.IDs[p.B])
		}
	}
	for _, bad := range [][]string{nil, {"a100"}, {P100, P100}} {
		if _, err := Load(bad...); err == nil || !strings.HasPrefix(err.Error(), "gaveldata: ") {
			t.Errorf("Load(%v) = %v, want an error", bad, err)
		}
	}
}

// The speeds are Gavel's numbers: spot-check one pair against the file.
func TestSpeedsAreGavels(t *testing.T) {
	d, err := Load(P100)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := d.Index("LM (batch size 20)")
	b, _ := d.Index("ResNet-50 (batch size 64)")
	for _, p := range d.Pairs {
		if p.A == a && p.B == b {
			if math.Abs(p.SpeedA-0.3259) > 1e-4 || math.Abs(p.SpeedB-0.7770) > 1e-4 {
				t.Errorf("LM bs20 with ResNet-50 bs64 on P100: speeds %g, %g; Gavel has 0.3259, 0.7770", p.SpeedA, p.SpeedB)
			}
			return
		}
	}
	t.Errorf("pair not found")
}

// V100's table is much less smooth in batch size than P100's and K80's:
// the reason the in-distribution error on V100 stays above 7 % (package iac's
// doc).
func TestNeighbourMAPE(t *testing.T) {
	tests := []struct {
		gpu       string
		wantMAPE  float64
		wantCount int
	}{
		{V100, 10.3, 632},
		{P100, 4.7, 652},
		{K80, 5.0, 585},
	}
	for _, tc := range tests {
		d, err := Load(tc.gpu)
		if err != nil {
			t.Fatal(err)
		}
		mape, n := NeighbourMAPE(d)
		if math.Abs(mape-tc.wantMAPE) > 0.05 || n != tc.wantCount {
			t.Errorf("%s: neighbour MAPE %.2f %% over %d, want %.1f %% over %d", tc.gpu, mape, n, tc.wantMAPE, tc.wantCount)
		}
	}
}
