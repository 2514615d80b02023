package main

import (
	"bytes"
	"embed"
	"fmt"
	"slices"
	"strings"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
	"github.com/elastico/elastico/sim"
)

// heldOut holds MLPs trained, by iac's default recipe, on Gavel's measured
// pairs of every GPU model but one: heldout/<model>.json never saw that
// model's pairs (NOTICE says where the measurements come from). The
// default embedded model (iac.Default) is trained on P100 and K80, so it
// answers for V100. Remake them with
//
//	go run ./examples/iactrain -gpu V100,K80 -out examples/replay/heldout/p100.json
//	go run ./examples/iactrain -gpu V100,P100 -out examples/replay/heldout/k80.json
//
// (TestHeldOutModelsReproduce checks that they do).
//
//go:embed heldout/p100.json heldout/k80.json
var heldOut embed.FS

// heldOutRecipe is the Gavel GPU models each held-out MLP is trained on,
// by the model it holds out (heldout/<model in lower case>.json).
var heldOutRecipe = map[string][]string{"P100": {"V100", "K80"}, "K80": {"V100", "P100"}}

// replayPredictor is elastico's predictor for one replay, labelled with
// what it was trained on.
type replayPredictor struct {
	elastico.Predictor
	Label string
}

// predictorFor returns the predictor elastico's policies use on this
// ground truth: one that never saw its pairs. On a V100 or a T4 that is
// iac.Default; on a P100, a K80 or a mix of Gavel's models, the pairs on
// each model are answered by an MLP trained on the other models' pairs
// (iac.NewByModel). The predictor must not have seen the answers.
func predictorFor(truth *sim.Truth, mix sim.Mix) (replayPredictor, error) {
	def, err := iac.Default()
	if err != nil {
		return replayPredictor{}, err
	}
	var models []string
	if mix == nil {
		models = []string{truth.GPU.Model}
	}
	for _, p := range mix {
		models = append(models, p.Truth.GPU.Model)
	}
	per := map[string]elastico.Predictor{}
	var labels []string              // in first appearance
	byLabel := map[string][]string{} // the models each answers for
	answer := func(m, label string) {
		if byLabel[label] == nil {
			labels = append(labels, label)
		}
		byLabel[label] = append(byLabel[label], m)
	}
	for _, m := range models {
		if !slices.Contains(iac.DefaultGPUs, m) {
			answer(m, def.Info().Label)
			continue
		}
		lower := strings.ToLower(m)
		b, err := heldOut.ReadFile("heldout/" + lower + ".json")
		if err != nil {
			return replayPredictor{}, fmt.Errorf("no held-out predictor for GPU model %s: %w", m, err)
		}
		mlp, err := iac.Decode(bytes.NewReader(b), "examples/replay/heldout/"+lower+".json")
		if err != nil {
			return replayPredictor{}, err
		}
		per[m] = mlp
		answer(m, mlp.Info().Label)
	}
	if len(per) == 0 {
		return replayPredictor{Predictor: def, Label: def.Info().Label}, nil
	}
	p, err := iac.NewByModel(def, per)
	if err != nil {
		return replayPredictor{}, err
	}
	var parts []string
	for _, l := range labels {
		parts = append(parts, strings.Join(byLabel[l], ", ")+": "+l)
	}
	return replayPredictor{Predictor: p, Label: "per GPU model, each trained without its pairs: " + strings.Join(parts, "; ")}, nil
}
