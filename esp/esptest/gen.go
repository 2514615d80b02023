package esptest

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/elastico/elastico"
)

// Params sizes a random market for Generate.
type Params struct {
	// Bidders is the number of jobs (≥ 0).
	Bidders int
	// Options is the number of configurations per job (≥ 1).
	Options int
	// Tightness is each resource's capacity as a fraction of the bidders'
	// total mean demand: 0.5 means about half of what the jobs would like
	// fits. Zero means 0.5; valid range (0, 100].
	Tightness float64
}

// ErrParams is wrapped by Generate's and Perturb's errors for bad
// parameters.
var ErrParams = errors.New("esptest: invalid parameters")

// Generate returns a random market drawn from rng: each job's options are
// configurations of 1–8 GPUs with a per-GPU SM share and memory, host CPU
// and RAM per replica, and a goodput concave in the GPUs and SM share,
// normalized to a best of 1; weights lie in [0.5, 2]; about a quarter of the
// options carry a penalty Γ, and a few are worth nothing after it. The same
// rng state always gives the same market.
func Generate(rng *rand.Rand, p Params) (*elastico.Market, error) {
	switch {
	case rng == nil:
		return nil, fmt.Errorf("%w: nil rng", ErrParams)
	case p.Bidders < 0:
		return nil, fmt.Errorf("%w: Bidders is %d, want ≥ 0", ErrParams, p.Bidders)
	case p.Options < 1:
		return nil, fmt.Errorf("%w: Options is %d, want ≥ 1", ErrParams, p.Options)
	case math.IsNaN(p.Tightness) || p.Tightness < 0 || p.Tightness > 100:
		return nil, fmt.Errorf("%w: Tightness is %g, want (0, 100] (0 for 0.5)", ErrParams, p.Tightness)
	}
	tight := p.Tightness
	if tight == 0 {
		tight = 0.5
	}
	m := &elastico.Market{Bidders: make([]elastico.Bidder, p.Bidders)}
	opts := make([]elastico.Option, p.Bidders*p.Options) // one backing array
	var total elastico.Vector
	gpuCounts := [...]float64{1, 1, 1, 2, 2, 4, 8}
	for j := range m.Bidders {
		b := &m.Bidders[j]
		b.Weight = math.Exp(rng.Float64()*1.4 - 0.7)
		b.Options = opts[j*p.Options : (j+1)*p.Options : (j+1)*p.Options]
		// How well this job scales with GPUs and with SM share.
		scaleGPU := 0.55 + 0.4*rng.Float64()
		scaleSM := 0.3 + 0.5*rng.Float64()
		memBase := 4 + 28*rng.Float64()
		best := 0.0
		for k := range b.Options {
			o := &b.Options[k]
			g := gpuCounts[rng.IntN(len(gpuCounts))]
			sm := 0.25 + 0.75*rng.Float64()
			mem := memBase * (0.6 + 0.8*rng.Float64())
			o.Demand = elastico.Vector{
				elastico.SM:        g * sm,
				elastico.GPUMemory: g * mem,
				elastico.CPU:       g * (2 + 6*rng.Float64()),
				elastico.RAM:       g * (16 + 48*rng.Float64()),
			}
			o.Goodput = math.Pow(g, scaleGPU) * math.Pow(sm, scaleSM) * (0.85 + 0.3*rng.Float64())
			best = max(best, o.Goodput)
			total = total.Add(o.Demand.Scale(1 / float64(p.Options)))
		}
		for k := range b.Options {
			o := &b.Options[k]
			o.Goodput /= best
			switch x := rng.Float64(); {
			case x < 0.03: // interference or switching cost beyond the option's worth
				o.Penalty = b.Weight * o.Goodput * (1 + rng.Float64())
			case x < 0.25:
				o.Penalty = b.Weight * o.Goodput * 0.3 * rng.Float64()
			}
		}
	}
	m.Capacity = total.Scale(tight)
	return m, nil
}

// Clone returns a deep copy of m.
func Clone(m *elastico.Market) *elastico.Market {
	c := *m
	c.Bidders = make([]elastico.Bidder, len(m.Bidders))
	n := 0
	for _, b := range m.Bidders {
		n += len(b.Options)
	}
	opts := make([]elastico.Option, 0, n)
	for j, b := range m.Bidders {
		c.Bidders[j] = b
		opts = append(opts, b.Options...)
		c.Bidders[j].Options = opts[len(opts)-len(b.Options) : len(opts) : len(opts)]
	}
	return &c
}

// Perturb returns a copy of m in which a fraction frac of the bidders (each
// drawn with probability frac) have their goodputs and demands moved by up
// to ±10 %, as between two epochs of a scheduler. Prices are kept, so a
// solver warm-starts from them.
func Perturb(rng *rand.Rand, m *elastico.Market, frac float64) (*elastico.Market, error) {
	switch {
	case rng == nil:
		return nil, fmt.Errorf("%w: nil rng", ErrParams)
	case m == nil:
		return nil, fmt.Errorf("%w: nil market", ErrParams)
	case math.IsNaN(frac) || frac < 0 || frac > 1:
		return nil, fmt.Errorf("%w: frac is %g, want [0, 1]", ErrParams, frac)
	}
	c := Clone(m)
	for j := range c.Bidders {
		if rng.Float64() >= frac {
			continue
		}
		for k := range c.Bidders[j].Options {
			o := &c.Bidders[j].Options[k]
			o.Goodput = min(1, o.Goodput*(0.9+0.2*rng.Float64()))
			for r := range o.Demand {
				o.Demand[r] *= 0.9 + 0.2*rng.Float64()
			}
		}
	}
	return c, nil
}
