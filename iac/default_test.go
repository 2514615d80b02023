package iac_test

import (
	"bytes"
	"math/rand/v2"
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

// TestDefaultModelReproduces retrains the embedded model's recipe and
// compares the bytes (examples/iactrain -check does the same).
func TestDefaultModelReproduces(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("retraining takes ~20 s of CPU (much more under -race); run without -short and -race")
	}
	d, err := gaveldata.Load(iac.DefaultGPUs...)
	if err != nil {
		t.Fatal(err)
	}
	m, err := iac.Default()
	if err != nil {
		t.Fatal(err)
	}
	cfg := iac.TrainConfig{Label: m.Info().Label}
	fresh, err := iac.Fit(d, cfg, rand.New(rand.NewPCG(iac.DefaultSeed, 0)))
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := iac.Encode(&a, m); err != nil {
		t.Fatal(err)
	}
	if err := iac.Encode(&b, fresh); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Errorf("retraining the default recipe gives a different model: run go run ./examples/iactrain and commit iac/models/default.json")
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
