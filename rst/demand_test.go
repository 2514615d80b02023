package rst

import (
	"testing"

	"github.com/elastico/elastico"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func prof(id string, gpus int, sm, mem, cpu, ram, tput, eff float64) elastico.Profile {
	return elastico.Profile{
		Config:     elastico.Configuration{ID: id, GPUs: gpus},
		Demand:     elastico.Demand{GPUs: gpus, SM: sm, GPUMemory: mem, CPU: cpu, RAM: ram},
		Throughput: tput, Efficiency: eff,
	}
}

func TestMinDemand(t *testing.T) {
	tests := []struct {
		name       string
		family     []elastico.Profile
		wantDemand elastico.Vector
	}{
		{"empty", nil, elastico.Vector{}},
		{"one", []elastico.Profile{prof("a", 2, 0.5, 8, 4, 16, 100, 1)}, elastico.Vector{1, 16, 8, 32}},
		{
			"componentwise least total",
			[]elastico.Profile{
				prof("small-sm", 1, 0.25, 12, 8, 32, 50, 1), // total {0.25, 12, 8, 32}
				prof("small-mem", 2, 0.5, 3, 2, 8, 90, 1),   // total {1, 6, 4, 16}
			},
			elastico.Vector{0.25, 6, 4, 16},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.wantDemand, MinDemand(tc.family)); diff != "" {
				t.Errorf("MinDemand mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNormalizedGoodput(t *testing.T) {
	tests := []struct {
		name     string
		family   []elastico.Profile
		wantNorm []float64
	}{
		{"empty", nil, []float64{}},
		{"efficiency counts", []elastico.Profile{
			prof("a", 1, 1, 8, 1, 1, 100, 1),   // G = 100
			prof("b", 2, 1, 8, 1, 1, 300, 0.5), // G = 150
			prof("c", 1, 1, 8, 1, 1, 75, 0),    // efficiency not modelled: G = 75
		}, []float64{2.0 / 3, 1, 0.5}},
		{"all zero", []elastico.Profile{prof("a", 1, 1, 8, 1, 1, 0, 1)}, []float64{0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := NormalizedGoodput(tc.family)
			if diff := cmp.Diff(tc.wantNorm, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("NormalizedGoodput mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func BenchmarkNormalizedGoodputInto(b *testing.B) {
	fam := make([]elastico.Profile, 8)
	for i := range fam {
		fam[i] = prof("c", 1, 0.5, 8, 2, 8, float64(100+i), 0.9)
	}
	buf := make([]float64, 0, 8)
	b.ReportAllocs()
	for b.Loop() {
		buf = NormalizedGoodputInto(buf[:0], fam)
	}
}
