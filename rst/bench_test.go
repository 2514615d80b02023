package rst

import (
	"math/rand/v2"
	"testing"

	"github.com/elastico/elastico"
)

// productionJobs returns n jobs' spaces and measurements: 8 configurations
// each (2 batch sizes × checkpointing × 1 or 2 GPUs), 2 of them measured.
func productionJobs(n int) ([]Space, [][]elastico.Profile) {
	rng := rand.New(rand.NewPCG(5, 6))
	spaces := make([]Space, n)
	measured := make([][]elastico.Profile, n)
	for i := range n {
		b := 16 << rng.IntN(5)
		spaces[i] = Space{Class: elastico.Training, BatchSizes: []int{b, 2 * b}, Checkpointing: []bool{false, true}, GPUs: []int{1, 2}}
		measured[i] = []elastico.Profile{
			measuredTraining(b, 1, false, false, 4+8*rng.Float64(), 100+900*rng.Float64()),
			measuredTraining(2*b, 2, true, false, 3+6*rng.Float64(), 200+1800*rng.Float64()),
		}
	}
	return spaces, measured
}

// BenchmarkBuildFamily builds the families of 20,000 jobs of 8
// configurations (a production family's size), then prunes them.
func BenchmarkBuildFamily(b *testing.B) {
	spaces, measured := productionJobs(20000)
	ns := &NoiseScale{Phi: 4000, Base: 16}
	opts := &FamilyOptions{StaticMemory: 1.5, NoiseScale: ns}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for i := range spaces {
			if _, err := BuildFamily(&spaces[i], measured[i], opts); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func BenchmarkBuildAndPrune(b *testing.B) {
	spaces, measured := productionJobs(20000)
	opts := &FamilyOptions{StaticMemory: 1.5, NoiseScale: &NoiseScale{Phi: 4000, Base: 16}}
	fams := make([][]elastico.Profile, len(spaces))
	for i := range spaces {
		f, err := BuildFamily(&spaces[i], measured[i], opts)
		if err != nil {
			b.Fatal(err)
		}
		fams[i] = f
	}
	keep := make([]int, 0, 8)
	kept := 0
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		kept = 0
		for _, f := range fams {
			keep = PruneIndices(keep[:0], f)
			kept += len(keep)
		}
	}
	b.ReportMetric(float64(kept)/float64(len(fams)), "kept/job")
}

func BenchmarkEnumerate(b *testing.B) {
	s := Space{Class: elastico.Training, BatchSizes: []int{32, 64, 128, 256}, Checkpointing: []bool{false, true}, AMP: []bool{false, true}, GPUs: []int{1, 2, 4, 8}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Enumerate(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNoiseScaleEfficiency(b *testing.B) {
	ns := NoiseScale{Phi: 5948, Base: 128}
	s := 0.0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s += ns.Efficiency(128 + i&1023)
	}
	_ = s
}

func BenchmarkPolluxFamily(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := PolluxFamily("cifar10", &PolluxOptions{MultiNode: true}); err != nil {
			b.Fatal(err)
		}
	}
}
