// Package synthetic makes datasets for the tests of package iac and its
// subpackages: slowdowns that follow a known smooth law of the counters, so
// that a model can be held to an accuracy.
package synthetic

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
)

// Quick is a small, fast training configuration for these datasets.
var Quick = iac.TrainConfig{Hidden: []int{16, 8}, MaxEpochs: 300, Patience: 40, LearningRate: 1e-2}

// Dataset returns jobs of nf families with np profiles each, every pair
// measured once, the slowdowns following a known law of the counters.
func Dataset(nf, np int, seed uint64) *iac.Dataset {
	rng := rand.New(rand.NewPCG(seed, 7))
	d := &iac.Dataset{Name: fmt.Sprintf("synthetic-%d", seed)}
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
			d.Pairs = append(d.Pairs, iac.Pair{A: i, B: j, SpeedA: 1 / law(a, b), SpeedB: 1 / law(b, a)})
		}
	}
	return d
}
