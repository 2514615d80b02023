package iac

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func TestLinearRecoversALogLinearLaw(t *testing.T) {
	var samples []Sample
	for i := 0; i < 40; i++ {
		a := 0.05 * float64(i%10)
		b := 0.1 * float64(i/10)
		var s Sample
		s.Features.set(ASMActive, a)
		s.Features.set(BSMActive, b)
		s.Slowdown = math.Exp(0.1 + 0.5*a + 0.3*b)
		samples = append(samples, s)
	}
	l, err := TrainLinear(samples, LinearConfig{Ridge: 1e-9})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		if p := l.Predict(&s.Features); math.Abs(p-s.Slowdown) > 1e-6 {
			t.Fatalf("predicted %g, measured %g", p, s.Slowdown)
		}
	}
	if _, err := TrainLinear(samples, LinearConfig{Ridge: -1}); err == nil || !strings.Contains(err.Error(), "Ridge") {
		t.Errorf("negative ridge: %v", err)
	}
}

func TestGBDTLearnsAStep(t *testing.T) {
	var samples []Sample
	for i := 0; i < 200; i++ {
		x := float64(i) / 200
		var s Sample
		s.Features.set(ADRAMActive, x)
		s.Features.set(BDRAMActive, 1-x) // collinear: harmless for trees
		s.Slowdown = 1.2
		if x > 0.5 {
			s.Slowdown = 2.5
		}
		samples = append(samples, s)
	}
	g, err := TrainGBDT(samples, GBDTConfig{}, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range samples {
		if math.Abs(s.Features.X[ADRAMActive]-0.5) < 0.01 {
			continue // subsamples without the boundary samples split a little off it
		}
		if p := g.Predict(&s.Features); math.Abs(p-s.Slowdown)/s.Slowdown > 0.02 {
			t.Fatalf("x=%g: predicted %g, measured %g", s.Features.X[ADRAMActive], p, s.Slowdown)
		}
	}
	for _, c := range []GBDTConfig{{Trees: -1}, {Depth: 9}, {LearningRate: 2}, {MinLeaf: -1}, {Subsample: 1.5}} {
		if _, err := TrainGBDT(samples, c, rand.New(rand.NewPCG(1, 0))); err == nil || !strings.Contains(err.Error(), "GBDTConfig") {
			t.Errorf("%+v: %v", c, err)
		}
	}
	if _, err := TrainGBDT(samples, GBDTConfig{}, nil); err == nil {
		t.Errorf("nil rng: no error")
	}
}
