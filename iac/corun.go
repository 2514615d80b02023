package iac

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/elastico/elastico"
)

// Learner corrects a predictor from what jobs that shared a GPU really
// did. Each observation of a running job beside one neighbour (its
// profile's throughput over the rate the host measured, against the
// slowdown the predictor gave) moves a correction kept per pair of model
// families (Profile.Family of the victim and of the aggressor), so that
// it generalizes to every configuration of those models. The correction
// multiplies the predictor's answer:
//
//	Ŝ' = max(1, Ŝ · exp(m · W/(W + Prior)))
//
// where m is the mean log of observed over predicted slowdown and W the
// observations' weight (one per epoch a pair is observed). Prior is how
// much evidence it takes to move halfway: one noisy observation does not
// flip a decision. The mean weighs the newest observation at least
// 1/MaxWeight, so that old evidence fades as new arrives. A predictor is never corrected from the ground truth,
// only from what a host measures.
type Learner struct {
	// Prior is the weight of evidence at which a correction counts half.
	// Zero: 3 (three epochs of one pair).
	Prior float64
	// MaxWeight is the most evidence the mean remembers: once a pair has
	// been observed that often, each new observation moves it by
	// 1/MaxWeight of the difference. Zero: 30.
	MaxWeight float64
	// MaxEntries bounds the table carried between epochs; the entries of
	// least weight go first. Zero: 4096.
	MaxEntries int
}

// DefaultLearner is the Learner pds uses.
var DefaultLearner = Learner{Prior: 3, MaxWeight: 30, MaxEntries: 4096}

func (l Learner) withDefaults() Learner {
	if l.Prior == 0 {
		l.Prior = DefaultLearner.Prior
	}
	if l.MaxWeight == 0 {
		l.MaxWeight = DefaultLearner.MaxWeight
	}
	if l.MaxEntries == 0 {
		l.MaxEntries = DefaultLearner.MaxEntries
	}
	return l
}

// Validate rejects a Learner Start cannot use.
func (l Learner) Validate() error {
	switch {
	case !finite(l.Prior) || l.Prior < 0:
		return fmt.Errorf("iac: Learner.Prior is %g, want a finite number ≥ 0", l.Prior)
	case !finite(l.MaxWeight) || l.MaxWeight < 0:
		return fmt.Errorf("iac: Learner.MaxWeight is %g, want a finite number ≥ 0", l.MaxWeight)
	case l.MaxEntries < 0:
		return fmt.Errorf("iac: Learner.MaxEntries is %d, want ≥ 0", l.MaxEntries)
	}
	return nil
}

// Corrections is a Learner's table for one epoch: the carried entries,
// then this epoch's observations. Not safe for concurrent Observe.
type Corrections struct {
	l Learner
	m map[[2]string]*entry
}

type entry struct{ mean, n float64 } // n: the evidence, Weight in Carry

// Start returns the corrections carried in carried (a Carry.CoRuns);
// entries that are not finite are dropped.
func (l Learner) Start(carried []elastico.CoRun) *Corrections {
	c := &Corrections{l: l.withDefaults(), m: make(map[[2]string]*entry, len(carried))}
	for _, r := range carried {
		if finite(r.LogRatio) && finite(r.Weight) && r.Weight > 0 {
			c.m[[2]string{r.Victim, r.Aggressor}] = &entry{r.LogRatio, r.Weight}
		}
	}
	return c
}

// Observe records that a job of family victim beside one of family
// aggressor ran observed times slower than alone, where the predictor
// said predicted (both ≥ 1; others are ignored), with weight w (1 for an
// epoch's observation).
func (c *Corrections) Observe(victim, aggressor string, observed, predicted, w float64) {
	if !(observed > 0) || !(predicted > 0) || !finite(observed) || !finite(predicted) || !(w > 0) {
		return
	}
	x := math.Log(math.Max(1, observed) / math.Max(1, predicted))
	k := [2]string{victim, aggressor}
	e := c.m[k]
	if e == nil {
		e = &entry{}
		c.m[k] = e
	}
	e.n += w
	e.mean += (x - e.mean) * w / math.Min(e.n, c.l.MaxWeight)
}

// Factor is what the predictor's slowdown of a victim family beside an
// aggressor family is multiplied by: 1 where nothing was observed.
func (c *Corrections) Factor(victim, aggressor string) float64 {
	e := c.m[[2]string{victim, aggressor}]
	if e == nil {
		return 1
	}
	return math.Exp(e.mean * e.n / (e.n + c.l.Prior))
}

// Len is how many family pairs have a correction.
func (c *Corrections) Len() int { return len(c.m) }

// Each calls f for every correction, in no particular order.
func (c *Corrections) Each(f func(victim, aggressor string, factor float64)) {
	for k := range c.m {
		f(k[0], k[1], c.Factor(k[0], k[1]))
	}
}

// Table returns the corrections to carry (Carry.CoRuns): at most
// MaxEntries, those of most weight, sorted by victim and aggressor.
func (c *Corrections) Table() []elastico.CoRun {
	if len(c.m) == 0 {
		return nil
	}
	out := make([]elastico.CoRun, 0, len(c.m))
	for k, e := range c.m {
		out = append(out, elastico.CoRun{Victim: k[0], Aggressor: k[1], LogRatio: e.mean, Weight: e.n})
	}
	byName := func(a, b elastico.CoRun) int {
		if x := cmp.Compare(a.Victim, b.Victim); x != 0 {
			return x
		}
		return cmp.Compare(a.Aggressor, b.Aggressor)
	}
	if len(out) > c.l.MaxEntries {
		slices.SortFunc(out, func(a, b elastico.CoRun) int {
			if x := cmp.Compare(b.Weight, a.Weight); x != 0 {
				return x
			}
			return byName(a, b)
		})
		out = out[:c.l.MaxEntries]
	}
	slices.SortFunc(out, byName)
	return out
}

// Corrected is a Predictor whose answers the corrections C adjust (nil C:
// Base's answers). pds applies the same corrections itself, outside its
// cache of Base's answers; Corrected is for a host or a placer that asks a
// predictor directly.
type Corrected struct {
	Base elastico.Predictor
	C    *Corrections
}

// Slowdown implements elastico.Predictor.
func (p Corrected) Slowdown(victim, aggressor *elastico.Profile) float64 {
	s := p.Base.Slowdown(victim, aggressor)
	if p.C == nil {
		return s
	}
	return math.Max(1, s*p.C.Factor(victim.Family, aggressor.Family))
}
