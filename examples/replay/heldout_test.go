package main

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
	"github.com/elastico/elastico/iac/gaveldata"
	"github.com/elastico/elastico/iac/train"
	"github.com/elastico/elastico/sim"
)

// TestPredictorForNeverSeesTheTruth: on every ground truth the replay
// offers, the pairs on each GPU model are answered by an MLP trained
// without that model's pairs.
func TestPredictorForNeverSeesTheTruth(t *testing.T) {
	v100, err := sim.GavelTruth("V100")
	if err != nil {
		t.Fatal(err)
	}
	mix, err := sim.GavelMix("V100:4,P100:4,K80:4")
	if err != nil {
		t.Fatal(err)
	}
	def, err := iac.Default()
	if err != nil {
		t.Fatal(err)
	}
	p, err := predictorFor(v100, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.Predictor != elastico.Predictor(def) {
		t.Errorf("on V100 alone the predictor is %v, want iac.Default (trained on P100 and K80)", p.Label)
	}
	for _, truth := range []string{"P100", "K80", "mix"} {
		var p replayPredictor
		var models []string
		if truth == "mix" {
			p, err = predictorFor(mix[0].Truth, mix)
			models = []string{"V100", "P100", "K80"}
		} else {
			var tr *sim.Truth
			if tr, err = sim.GavelTruth(truth); err != nil {
				t.Fatal(err)
			}
			p, err = predictorFor(tr, nil)
			models = []string{tr.GPU.Model}
		}
		if err != nil {
			t.Fatal(err)
		}
		by, ok := p.Predictor.(interface {
			For(string) elastico.Predictor
		})
		if !ok {
			t.Fatalf("%s: predictor %T, want one per GPU model", truth, p.Predictor)
		}
		if _, ok := p.Predictor.(elastico.StablePredictor); !ok {
			t.Errorf("%s: the predictor's answers cannot be kept between epochs", truth)
		}
		for _, m := range models {
			mlp, ok := by.For(m).(*iac.MLP)
			if !ok {
				t.Fatalf("%s: model %s answered by %T", truth, m, by.For(m))
			}
			label := mlp.Info().Label
			if strings.Contains(label, strings.ToLower(m)) || !strings.HasPrefix(label, "gavel-") {
				t.Errorf("%s: pairs on %s answered by a model trained on %q", truth, m, label)
			}
		}
	}
}

// TestHeldOutModelsReproduce retrains each held-out model's recipe and
// compares the bytes with the embedded file.
func TestHeldOutModelsReproduce(t *testing.T) {
	if testing.Short() || raceEnabled {
		t.Skip("retraining takes ~20 s of CPU per model (much more under -race); run without -short and -race")
	}
	for m, gpus := range heldOutRecipe {
		d, err := gaveldata.Load(gpus...)
		if err != nil {
			t.Fatal(err)
		}
		want, err := heldOut.ReadFile("heldout/" + strings.ToLower(m) + ".json")
		if err != nil {
			t.Fatal(err)
		}
		old, err := iac.Decode(bytes.NewReader(want), m)
		if err != nil {
			t.Fatal(err)
		}
		fresh, err := train.Fit(d, iac.TrainConfig{Label: old.Info().Label}, rand.New(rand.NewPCG(iac.DefaultSeed, 0)))
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := iac.Encode(&got, fresh); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("retraining heldout/%s.json's recipe (%v) gives a different model: remake it (heldout.go says how)", m, gpus)
		}
	}
}
