package train_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/elastico/elastico/iac"
	"github.com/elastico/elastico/iac/gaveldata"
	"github.com/elastico/elastico/iac/train"
)

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
	fresh, err := train.Fit(d, cfg, rand.New(rand.NewPCG(iac.DefaultSeed, 0)))
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

// BenchmarkFitGavel is what examples/iactrain does: train the default
// recipe on Gavel's P100 and K80 pairs.
func BenchmarkFitGavel(b *testing.B) {
	d, err := gaveldata.Load(iac.DefaultGPUs...)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := train.Fit(d, iac.TrainConfig{}, rand.New(rand.NewPCG(iac.DefaultSeed, 0))); err != nil {
			b.Fatal(err)
		}
	}
}
