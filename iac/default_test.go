package iac_test

import (
	"strings"
	"testing"

	"github.com/elastico/elastico/iac"
	"github.com/elastico/elastico/iac/gaveldata"
)

func TestDefaultModel(t *testing.T) {
	m, err := iac.Default()
	if err != nil {
		t.Fatal(err)
	}
	again, _ := iac.Default()
	if m != again {
		t.Errorf("Default decodes the file more than once")
	}
	info := m.Info()
	if !strings.Contains(info.Label, "gavel-p100+k80") || info.Config.Hidden[0] != iac.DefaultTrainConfig().Hidden[0] {
		t.Errorf("embedded model info: %+v", info)
	}
	// It fits the pairs it was trained on, and never predicts a speed-up.
	for _, gpu := range iac.DefaultGPUs {
		d, err := gaveldata.Load(gpu)
		if err != nil {
			t.Fatal(err)
		}
		var ape float64
		samples := d.Samples()
		for _, s := range samples {
			p := m.Predict(&s.Features)
			if p < 1 {
				t.Fatalf("%s: predicted %g", gpu, p)
			}
			ape += abs(p-s.Slowdown) / s.Slowdown
		}
		if mape := 100 * ape / float64(len(samples)); mape > 6 {
			t.Errorf("%s: training MAPE %.2f %%, want ≤ 6 %%", gpu, mape)
		}
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
