package iac_test

import (
	"math/rand/v2"
	"testing"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
	"github.com/elastico/elastico/iac/gaveldata"
)

// benchPairs returns n ordered pairs of Gavel's V100 profiles.
func benchPairs(b *testing.B, n int) (victims, aggressors []*elastico.Profile) {
	d, err := gaveldata.Load(gaveldata.V100)
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < n; i++ {
		p := d.Pairs[i%len(d.Pairs)]
		victims = append(victims, &d.Profiles[p.A])
		aggressors = append(aggressors, &d.Profiles[p.B])
	}
	return victims, aggressors
}

// BenchmarkSlowdown is one prediction of the embedded model (target: ≤ 2 µs,
// 0 allocations).
func BenchmarkSlowdown(b *testing.B) {
	m, err := iac.Default()
	if err != nil {
		b.Fatal(err)
	}
	vs, as := benchPairs(b, 256)
	b.ReportAllocs()
	i := 0
	var sink float64
	for b.Loop() {
		sink += m.Slowdown(vs[i&255], as[i&255])
		i++
	}
	_ = sink
}

// BenchmarkSlowdownBatch1000 predicts 1,000 pairs (target: ≤ 1 ms).
func BenchmarkSlowdownBatch1000(b *testing.B) {
	m, err := iac.Default()
	if err != nil {
		b.Fatal(err)
	}
	vs, as := benchPairs(b, 1000)
	out := make([]float64, 1000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.SlowdownBatch(out, vs, as); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFitGavel is what examples/iactrain does: train the default
// recipe on Gavel's P100 and K80 pairs.
func BenchmarkFitGavel(b *testing.B) {
	d, err := gaveldata.Load(iac.DefaultGPUs...)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := iac.Fit(d, iac.TrainConfig{}, rand.New(rand.NewPCG(iac.DefaultSeed, 0))); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSlowdownPrepared is one prediction from two prepared profiles
// (what a scheduler that keeps its profiles prepared pays per pair), and
// BenchmarkAppendPrepared the preparing of one profile.
func BenchmarkSlowdownPrepared(b *testing.B) {
	m, err := iac.Default()
	if err != nil {
		b.Fatal(err)
	}
	vs, as := benchPairs(b, 256)
	n := m.PreparedLen()
	var pv, pa []float64
	for i := range vs {
		pv = m.AppendPrepared(pv, vs[i])
		pa = m.AppendPrepared(pa, as[i])
	}
	b.ReportAllocs()
	i := 0
	var sink float64
	for b.Loop() {
		k := i & 255
		s, err := m.SlowdownPrepared(pv[k*n:(k+1)*n], pa[k*n:(k+1)*n])
		if err != nil {
			b.Fatal(err)
		}
		sink += s
		i++
	}
	_ = sink
}

func BenchmarkAppendPrepared(b *testing.B) {
	m, err := iac.Default()
	if err != nil {
		b.Fatal(err)
	}
	vs, _ := benchPairs(b, 256)
	buf := make([]float64, 0, m.PreparedLen())
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		buf = m.AppendPrepared(buf[:0], vs[i&255])
		i++
	}
}
