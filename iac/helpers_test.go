package iac

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/elastico/elastico"
)

// synthetic returns a dataset whose slowdowns follow a known smooth law of
// the counters, so that a model can be held to an accuracy: jobs of nf
// families with np profiles each, every pair measured once.
func synthetic(nf, np int, seed uint64) *Dataset {
	rng := rand.New(rand.NewPCG(seed, 7))
	d := &Dataset{Name: fmt.Sprintf("synthetic-%d", seed)}
	for f := 0; f < nf; f++ {
		base := 0.2 + 0.6*rng.Float64()
		for k := 0; k < np; k++ {
			var c elastico.Counters
			sm := math.Min(1, base+0.1*float64(k))
			c.Set(elastico.SMActive, sm)
			c.Set(elastico.DRAMActive, rng.Float64())
			c.Set(elastico.FBUsedFrac, 0.1+0.3*rng.Float64())
			if k%2 == 0 { // some profiles lack a counter
				c.Set(elastico.PowerFrac, 0.5*sm+0.3)
			}
			d.IDs = append(d.IDs, fmt.Sprintf("f%d-%d", f, k))
			d.Profiles = append(d.Profiles, elastico.Profile{
				Family: fmt.Sprintf("f%d", f), Class: elastico.Training, Params: math.Pow(10, 6+float64(f)/2),
				Throughput: 10 + 100*rng.Float64(),
				Config:     elastico.Configuration{BatchSize: 16 << k, GPUs: 1}, Counters: c,
			})
		}
	}
	law := func(a, b *elastico.Profile) float64 {
		sa, _ := a.Counters.Get(elastico.SMActive)
		sb, _ := b.Counters.Get(elastico.SMActive)
		da, _ := a.Counters.Get(elastico.DRAMActive)
		db, _ := b.Counters.Get(elastico.DRAMActive)
		return 1 + 1.2*sa*sb + 0.6*da*db
	}
	for i := range d.Profiles {
		for j := i; j < len(d.Profiles); j++ {
			a, b := &d.Profiles[i], &d.Profiles[j]
			d.Pairs = append(d.Pairs, Pair{A: i, B: j, SpeedA: 1 / law(a, b), SpeedB: 1 / law(b, a)})
		}
	}
	return d
}

// quick is a small, fast training configuration for tests.
var quick = TrainConfig{Hidden: []int{16, 8}, MaxEpochs: 300, Patience: 40, LearningRate: 1e-2}

// trainQuick trains a small model on a synthetic dataset.
func trainQuick(t testing.TB, seed uint64) *MLP {
	t.Helper()
	m, err := Train(synthetic(4, 4, 1).Samples(), quick, rand.New(rand.NewPCG(seed, 0)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
