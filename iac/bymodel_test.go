package iac_test

import (
	"testing"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
)

type constPred float64

func (c constPred) Slowdown(_, _ *elastico.Profile) float64 { return float64(c) }

type stableConst struct{ constPred }

func (stableConst) StableAnswers() {}

// TestByModel: each pair is answered by the predictor of the model its
// victim names, any other by the fallback; the result may be cached only
// when every predictor may.
func TestByModel(t *testing.T) {
	p, err := iac.NewByModel(stableConst{1.5}, map[string]elastico.Predictor{"K80": stableConst{2}, "V100": stableConst{1.2}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		model string
		want  float64
	}{{"K80", 2}, {"V100", 1.2}, {"P100", 1.5}, {"", 1.5}} {
		v := &elastico.Profile{Hardware: elastico.Hardware{GPUModel: tc.model}}
		if got := p.Slowdown(v, v); got != tc.want {
			t.Errorf("on %q: %g, want %g", tc.model, got, tc.want)
		}
	}
	if _, ok := p.(elastico.StablePredictor); !ok {
		t.Errorf("every predictor is stable, and the result is not")
	}
	q, err := iac.NewByModel(stableConst{1.5}, map[string]elastico.Predictor{"K80": constPred(2)})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := q.(elastico.StablePredictor); ok {
		t.Errorf("a changing predictor inside, and the result says its answers may be kept")
	}
	for _, bad := range []func() (elastico.Predictor, error){
		func() (elastico.Predictor, error) { return iac.NewByModel(nil, nil) },
		func() (elastico.Predictor, error) {
			return iac.NewByModel(constPred(1), map[string]elastico.Predictor{"K80": nil})
		},
		func() (elastico.Predictor, error) {
			return iac.NewByModel(constPred(1), map[string]elastico.Predictor{"": constPred(1)})
		},
	} {
		if _, err := bad(); err == nil {
			t.Errorf("accepted a nil or unnamed predictor")
		}
	}
}
