package iac_test

import (
	"math/rand/v2"
	"testing"

	"github.com/elastico/elastico/iac"
	"github.com/elastico/elastico/iac/gaveldata"
	"github.com/elastico/elastico/iac/iactest"
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
