package pds

import (
	"fmt"
	"math"

	"github.com/elastico/elastico"
)

// STAND-IN until package iac lands: Tolerance mirrors iac.Tolerance and
// standinPredictor stands in for iac.Default. Both go when iac commits its
// defaults.

// Tolerance is τ_j(t) of Eq. 11 on the slowdown scale: a pair violates
// when Ŝ > At(q).
type Tolerance struct{ Tau0, Beta, BetaMax float64 }

// At returns τ0·(1 + min(β·q, β_max)).
func (t Tolerance) At(q float64) float64 { return t.Tau0 * (1 + math.Min(t.Beta*q, t.BetaMax)) }

// DefaultTolerance: a pair is safe at a decay above 0.9 (Ŝ < 1/0.9).
var DefaultTolerance = Tolerance{Tau0: 1 / 0.9, Beta: 1, BetaMax: 0.45}

func (t Tolerance) validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"Tau0", t.Tau0}, {"Beta", t.Beta}, {"BetaMax", t.BetaMax}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return fmt.Errorf("%s is %g, want a finite non-negative number", f.name, f.v)
		}
	}
	if t.Tau0 < 1 {
		return fmt.Errorf("Tau0 is %g, want ≥ 1 (a slowdown)", t.Tau0)
	}
	return nil
}

// standinPredictor: a slowdown that grows with the two profiles' combined
// SM and DRAM activity.
type standinPredictor struct{}

func (standinPredictor) Slowdown(v, a *elastico.Profile) float64 {
	get := func(p *elastico.Profile, c elastico.Counter, dflt float64) float64 {
		if x, ok := p.Counters.Get(c); ok {
			return x
		}
		return dflt
	}
	sm := get(v, elastico.SMActive, v.Demand.SM) + get(a, elastico.SMActive, a.Demand.SM)
	dram := get(v, elastico.DRAMActive, 0.3) + get(a, elastico.DRAMActive, 0.3)
	return 1 + 0.3*math.Max(0, sm-0.8) + 0.4*math.Max(0, dram-0.6)
}

// defaultPredictor is the Predictor a zero Config gets.
func defaultPredictor() (elastico.Predictor, error) { return standinPredictor{}, nil }
