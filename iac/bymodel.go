package iac

import (
	"fmt"
	"slices"
	"strings"

	"github.com/elastico/elastico"
)

// byModel is NewByModel's predictor; safe for concurrent use, as its
// predictors must be.
type byModel struct {
	models   []string // sorted
	preds    []elastico.Predictor
	fallback elastico.Predictor
}

// stableByModel is a byModel whose predictors are all stable.
type stableByModel struct{ byModel }

func (stableByModel) StableAnswers() {}

// NewByModel returns a predictor that asks preds[m] for the pairs on GPU
// model m (the victim profile's Hardware.GPUModel: a pair shares one GPU,
// so both name the same model) and fallback for the others, including
// profiles that name none. A cluster of several GPU models may want one
// per model: a pair that fights over a K80's memory bandwidth may sit
// quietly on a V100. Evaluations use it to keep every model's answers
// unseen: model m's pairs answered by a predictor trained on the other
// models' pairs. It is an elastico.StablePredictor
// (its answers may be kept between epochs) when fallback and every one of
// preds is.
func NewByModel(fallback elastico.Predictor, preds map[string]elastico.Predictor) (elastico.Predictor, error) {
	if fallback == nil {
		return nil, fmt.Errorf("iac: NewByModel: the fallback predictor is nil")
	}
	b := byModel{fallback: fallback}
	for m := range preds {
		b.models = append(b.models, m)
	}
	slices.Sort(b.models)
	stable := isStable(fallback)
	for _, m := range b.models {
		p := preds[m]
		if m == "" || p == nil {
			return nil, fmt.Errorf("iac: NewByModel: GPU model %q: want a non-empty model and a predictor", m)
		}
		b.preds = append(b.preds, p)
		stable = stable && isStable(p)
	}
	if stable {
		return &stableByModel{b}, nil
	}
	return &b, nil
}

func isStable(p elastico.Predictor) bool {
	_, ok := p.(elastico.StablePredictor)
	return ok
}

// Slowdown implements elastico.Predictor.
func (b *byModel) Slowdown(victim, aggressor *elastico.Profile) float64 {
	return b.For(victim.Hardware.GPUModel).Slowdown(victim, aggressor)
}

// For returns the predictor that answers for GPU model m.
func (b *byModel) For(m string) elastico.Predictor {
	if m != "" {
		// A handful of models: a linear scan beats a map's hash.
		for i, x := range b.models {
			if x == m {
				return b.preds[i]
			}
		}
	}
	return b.fallback
}

// String names the models it has a predictor for.
func (b *byModel) String() string {
	return fmt.Sprintf("a predictor per GPU model (%s; any other: the fallback)", strings.Join(b.models, ", "))
}
