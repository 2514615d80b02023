package iac_test

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
	"github.com/elastico/elastico/iac/gaveldata"
	"github.com/elastico/elastico/iac/internal/synthetic"
	"github.com/elastico/elastico/iac/train"
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

// BenchmarkSlowdownAllCounters is one prediction of a model with the
// default widths whose inputs are every feature of the vector and the masks
// of those that are sometimes missing: about the most a user's model can
// cost (the embedded one has 8 inputs, see BenchmarkSlowdown), at the
// default widths and at half of them.
func BenchmarkSlowdownAllCounters(b *testing.B) {
	d := synthetic.Dataset(4, 4, 1)
	for i := range d.Profiles {
		p := &d.Profiles[i]
		for c := elastico.Counter(0); c < elastico.NumCounters; c++ {
			if !p.Counters.Has(c) && (i+int(c))%3 != 0 {
				p.Counters.Set(c, 0.05*float64(c)+0.1*float64(i%4))
			}
		}
		p.Config.KVCacheFrac = 0.1 * float64(i%3)
		p.Config.AMP = i%2 == 0
		p.Config.Checkpointing = i%3 == 1
		if i%2 == 1 {
			p.Class = elastico.Inference
		}
		if i%4 == 0 {
			p.Config.BatchSize = 0
		}
		if i%5 == 0 {
			p.Params = 0
		}
		if i%6 == 0 {
			p.Throughput = 0
		}
	}
	for _, hidden := range [][]int{{64, 32}, {32, 16}} {
		b.Run(fmt.Sprintf("hidden=%dx%d", hidden[0], hidden[1]), func(b *testing.B) {
			m, err := train.MLP(d.Samples(), iac.TrainConfig{Hidden: hidden, MaxEpochs: 2, NoRefit: true}, rand.New(rand.NewPCG(1, 0)))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			i := 0
			var sink float64
			for b.Loop() {
				sink += m.Slowdown(&d.Profiles[i%16], &d.Profiles[(i*7+3)%16])
				i++
			}
			_ = sink
			b.ReportMetric(float64(len(m.Inputs())), "inputs")
		})
	}
}
