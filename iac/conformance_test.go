package iac_test

import (
	"math/rand/v2"
	"testing"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
	"github.com/elastico/elastico/iac/gaveldata"
	"github.com/elastico/elastico/iac/iactest"
	"github.com/elastico/elastico/iac/internal/synthetic"
)

func TestDefaultConforms(t *testing.T) {
	m, err := iac.Default()
	if err != nil {
		t.Fatal(err)
	}
	iactest.Run(t, m)
}

func TestBaselinesConform(t *testing.T) {
	d, err := gaveldata.Load(gaveldata.K80)
	if err != nil {
		t.Fatal(err)
	}
	s := d.Samples()
	lin, err := iac.TrainLinear(s, iac.LinearConfig{})
	if err != nil {
		t.Fatal(err)
	}
	gb, err := iac.TrainGBDT(s, iac.GBDTConfig{Trees: 30}, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	t.Run("linear", func(t *testing.T) { iactest.Run(t, lin) })
	t.Run("gbdt", func(t *testing.T) { iactest.Run(t, gb) })
}

func TestBaselinesNeverPredictASpeedUp(t *testing.T) {
	d := synthetic.Dataset(3, 3, 1)
	samples := d.Samples()
	for i := range samples { // a law that sits at 1
		samples[i].Slowdown = 1
	}
	l, err := iac.TrainLinear(samples, iac.LinearConfig{})
	if err != nil {
		t.Fatal(err)
	}
	g, err := iac.TrainGBDT(samples, iac.GBDTConfig{Trees: 20}, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []elastico.Predictor{l, g} {
		for i := range d.Profiles {
			if s := p.Slowdown(&d.Profiles[i], &d.Profiles[0]); s < 1 {
				t.Errorf("%T predicts %g", p, s)
			}
		}
	}
}
