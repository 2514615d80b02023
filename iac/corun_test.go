package iac

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/elastico/elastico"
)

// TestLearnerConverges: observations of a pair that really runs 2× slower
// than predicted, with 3 % noise, move the correction to about 2; one
// observation moves it only part of the way (the prior), and pairs
// never observed keep 1.
func TestLearnerConverges(t *testing.T) {
	c := DefaultLearner.Start(nil)
	r := rand.New(rand.NewPCG(1, 2))
	const predicted, truth = 1.2, 2.4
	c.Observe("resnet", "lm", truth*(1+0.03*r.NormFloat64()), predicted, 1)
	if f := c.Factor("resnet", "lm"); !(f > 1.1 && f < 1.5) {
		t.Errorf("after one observation the factor is %g, want part of the way to 2 (prior %g)", f, DefaultLearner.Prior)
	}
	for range 100 {
		c.Observe("resnet", "lm", truth*(1+0.03*r.NormFloat64()), predicted, 1)
	}
	if f := c.Factor("resnet", "lm"); math.Abs(f*predicted-truth)/truth > 0.05 {
		t.Errorf("after 100 observations the corrected slowdown is %g, want %g within 5 %%", f*predicted, truth)
	}
	if f := c.Factor("lm", "resnet"); f != 1 {
		t.Errorf("the other direction, never observed, has factor %g", f)
	}
	// Corrected applies it, never below 1.
	base := constPredictor(predicted)
	p := Corrected{Base: base, C: c}
	if got := p.Slowdown(&elastico.Profile{Family: "resnet"}, &elastico.Profile{Family: "lm"}); math.Abs(got-truth)/truth > 0.05 {
		t.Errorf("Corrected.Slowdown = %g, want ≈ %g", got, truth)
	}
	c.Observe("a", "b", 1, 3, 1)
	for range 50 {
		c.Observe("a", "b", 1, 3, 1)
	}
	if got := (Corrected{Base: constPredictor(3), C: c}).Slowdown(&elastico.Profile{Family: "a"}, &elastico.Profile{Family: "b"}); got < 1 || got > 1.2 {
		t.Errorf("a pair predicted 3× that runs unslowed is corrected to %g, want ≈ 1", got)
	}
}

// TestLearnerForgets: with MaxWeight, a pair whose slowdown changes (a new
// version of a model) is relearned rather than averaged forever.
func TestLearnerForgets(t *testing.T) {
	c := Learner{MaxWeight: 10}.Start(nil)
	for range 200 {
		c.Observe("x", "y", 3, 1.5, 1)
	}
	for range 60 {
		c.Observe("x", "y", 1.5, 1.5, 1)
	}
	if f := c.Factor("x", "y"); f > 1.05 {
		t.Errorf("after 60 observations of the new behaviour the factor is still %g", f)
	}
}

// TestLearnerCarry: the table round-trips through Carry.CoRuns, sorted,
// bounded by MaxEntries (the heaviest kept), and drops what is not finite.
func TestLearnerCarry(t *testing.T) {
	l := Learner{MaxEntries: 3}
	c := l.Start([]elastico.CoRun{{Victim: "bad", Aggressor: "x", LogRatio: math.NaN(), Weight: 1}})
	if c.Len() != 0 {
		t.Fatalf("a NaN entry was carried")
	}
	for i, f := range []string{"d", "a", "c", "b"} {
		for range i + 1 {
			c.Observe(f, "z", 2, 1, 1)
		}
	}
	tab := c.Table()
	if len(tab) != 3 {
		t.Fatalf("table of %d entries, want MaxEntries 3", len(tab))
	}
	var names []string
	for _, r := range tab {
		names = append(names, r.Victim)
	}
	if !slices.Equal(names, []string{"b", "c", "a"}) && !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Errorf("kept %v, want the three heaviest (a, b, c) sorted", names)
	}
	if !slices.IsSortedFunc(tab, func(x, y elastico.CoRun) int {
		if x.Victim < y.Victim {
			return -1
		}
		if x.Victim > y.Victim {
			return 1
		}
		return 0
	}) {
		t.Errorf("table not sorted: %v", names)
	}
	again := l.Start(tab)
	for _, r := range tab {
		if got, want := again.Factor(r.Victim, r.Aggressor), c.Factor(r.Victim, r.Aggressor); math.Abs(got-want) > 1e-12 {
			t.Errorf("%s|%s: factor %g after the round trip, want %g", r.Victim, r.Aggressor, got, want)
		}
	}
	for _, bad := range []Learner{{Prior: -1}, {MaxWeight: math.NaN()}, {MaxEntries: -1}} {
		if bad.Validate() == nil {
			t.Errorf("Validate(%+v) = nil", bad)
		}
	}
}

type constPredictor float64

func (c constPredictor) Slowdown(_, _ *elastico.Profile) float64 { return float64(c) }
