package iac

import (
	"fmt"
	"math"

	"github.com/elastico/elastico"
)

// Sharing is the rule that says whether two jobs may share a GPU, given the
// predicted slowdown of each beside the other. It is the one place the rule
// lives: pds asks it when it checks a plan, prices interference and holds
// GPUs, and the placer asks it when it looks for a GPU to share.
//
// By default the rule is by value. With no job waiting, a pair shares only
// if each job keeps 1/Quiet of its isolated speed (the paper's "safe"
// pairs). While jobs wait, a pair shares when the two together do more work
// than one of them alone by a margin:
//
//	1/Ŝ_a + 1/Ŝ_b ≥ 1 + Margin
//
// so two jobs that each run at 0.66 of their isolated speed (Ŝ ≈ 1.5, as
// most of Gavel's measured V100 pairs) share a GPU to do 1.32 GPUs' worth
// of work instead of one job's 1.0 while the other waits. A fixed cap on
// each job's slowdown (the paper's Eq. 11) turns those pairs away whatever
// the queue, and a scheduler under it shares hardly at all.
//
// Whatever the queue, each job is held to its own limit (see [JobLimit]):
// the slowdown its owner set as its maximum, and for a job with a
// throughput floor, the slowdown that would take it below the floor.
//
// With Tolerance set, the rule is the paper's instead: each job's slowdown
// within τ(t) of Eq. 11 (see [Tolerance]).
type Sharing struct {
	// Quiet is τ0 ≥ 1: with no job waiting, each job of a pair must run
	// within Quiet of its isolated time. Zero: 1/0.9.
	Quiet float64
	// Margin ≥ 0 is how much more than one GPU's worth of work a pair must
	// do, together, to share while jobs wait. It absorbs the predictor's
	// error: a pair predicted at exactly 1 gains nothing and may lose.
	Margin float64
	// Tolerance, when not nil, replaces the rule by value with Eq. 11:
	// each job within τ(t) (Quiet is then unused; Tolerance.Tau0 is τ0).
	Tolerance *Tolerance
}

// DefaultSharing is the rule pds uses unless told otherwise: by value, τ0 =
// 1/0.9 with nothing waiting, and a margin of 0.1 while jobs wait (a pair
// predicted to do at least 1.1 GPUs' worth of work).
var DefaultSharing = Sharing{Quiet: 1 / 0.9, Margin: 0.1}

// PaperSharing is the paper's rule: each job of a pair within τ(t) of
// Eq. 11, whatever the pair does together.
func PaperSharing(t Tolerance) Sharing { return Sharing{Tolerance: &t} }

// Validate rejects a rule At cannot use.
func (s Sharing) Validate() error {
	if s.Tolerance != nil {
		return s.Tolerance.Validate()
	}
	switch {
	case s.Quiet != 0 && (!finite(s.Quiet) || s.Quiet < 1):
		return fmt.Errorf("iac: Sharing.Quiet is %g, want a finite slowdown ≥ 1 (0 for 1/0.9)", s.Quiet)
	case !finite(s.Margin) || s.Margin < 0:
		return fmt.Errorf("iac: Sharing.Margin is %g, want a finite number ≥ 0", s.Margin)
	}
	return nil
}

func (s Sharing) quiet() float64 {
	if s.Quiet == 0 {
		return DefaultSharing.Quiet
	}
	return s.Quiet
}

// At returns the limit in force at queue pressure q ≥ 0 (the dominant
// share of the waiting jobs' smallest demands; 0 when nothing waits; NaN
// or a negative q counts as 0).
func (s Sharing) At(q float64) Limit {
	if s.Tolerance != nil {
		return Limit{bound: s.Tolerance.At(q), on: true}
	}
	if !(q > 0) {
		return Limit{bound: s.quiet(), on: true}
	}
	return Limit{bound: 2 / (1 + s.Margin), byValue: true, on: true}
}

// Keep returns the limit for a pair that already shares a GPU as it did.
// Under Eq. 11 it is the loosest τ the rule ever allows. By value it is
// the start rule's mirror: a pair that shares goes on sharing while the two
// do at least 1 − Margin GPUs' worth of work together (1/Ŝ_a + 1/Ŝ_b ≥
// 1 − Margin; any pair once Margin ≥ 1). The band between 1 − Margin and
// 1 + Margin is hysteresis: splitting a pair that does about one GPU's
// worth gains nothing and costs a restart, and the corrections learned
// from what the pair really did, a few percent noisy, would otherwise
// split and join it again as they cross 1. Nor does a queue that empties
// by the very job that joined the GPU split the pair.
func (s Sharing) Keep() Limit {
	if s.Tolerance != nil {
		return Limit{bound: s.Tolerance.Max(), on: true}
	}
	if s.Margin >= 1 {
		return Limit{bound: math.Inf(1), byValue: true, on: true}
	}
	return Limit{bound: 2 / (1 - s.Margin), byValue: true, on: true}
}

// Limit is the rule in force for one decision: from [Sharing.At] or
// [Sharing.Keep]. The zero Limit allows every pair.
type Limit struct {
	bound   float64 // the largest load allowed
	byValue bool    // load is the pair's harmonic mean slowdown; else the larger one
	on      bool
}

// On reports whether the limit judges pairs at all.
func (l Limit) On() bool { return l.on }

// ByValue reports whether the limit judges a pair by the work the two do
// together rather than each job's slowdown.
func (l Limit) ByValue() bool { return l.byValue }

// Load is the pair's slowdown on the limit's scale: the larger of the two
// slowdowns, or by value their harmonic mean 2/(1/a + 1/b), which is at
// most 2 exactly when the pair does at least one GPU's worth of work.
func (l Limit) Load(a, b float64) float64 {
	if l.byValue {
		return 2 / (1/a + 1/b)
	}
	return math.Max(a, b)
}

// Bound is the largest Load the limit allows.
func (l Limit) Bound() float64 { return l.bound }

// Excess says how far a pair is from being allowed, on the slowdown scale:
// ≤ 0 when it may share, the larger the louder. a and b are the predicted
// slowdowns of the two jobs beside each other (≥ 1; NaN counts as +Inf),
// capA and capB their own limits (see [JobLimit]; +Inf for none).
func (l Limit) Excess(a, b, capA, capB float64) float64 {
	if !l.on {
		return math.Inf(-1)
	}
	if math.IsNaN(a) {
		a = math.Inf(1)
	}
	if math.IsNaN(b) {
		b = math.Inf(1)
	}
	return math.Max(l.Load(a, b)-l.bound, math.Max(a-capA, b-capB))
}

// Allows reports whether the pair may share: Excess ≤ 0.
func (l Limit) Allows(a, b, capA, capB float64) bool { return l.Excess(a, b, capA, capB) <= 0 }

// Why says, in words, why a pair with Excess above 0 may not share (job a
// slowed a× beside b, b slowed b× beside a).
func (l Limit) Why(a, b, capA, capB float64) string {
	switch {
	case a > capA:
		return fmt.Sprintf("it would run %.3g× slower, above its own limit %.3g", a, capA)
	case b > capB:
		return fmt.Sprintf("its neighbour would run %.3g× slower, above that job's own limit %.3g", b, capB)
	case l.byValue:
		return fmt.Sprintf("together they would run at %.3g and %.3g of their isolated speeds, %.3g GPUs' worth of work, below the %.3g a pair must do", 1/a, 1/b, 1/a+1/b, 2/l.bound)
	}
	return fmt.Sprintf("predicted %.3g× and %.3g× slower beside each other, above the tolerance %.3g", a, b, l.bound)
}

// JobLimit is the most job j may be slowed under profile p by sharing a
// GPU: its MaxSlowdown when set, and for a job with a floor, the slowdown
// that keeps p's throughput at the floor; +Inf when neither applies. An
// inference job's floor is hard: no queue relaxes it.
func JobLimit(j *elastico.Job, p *elastico.Profile) float64 {
	c := math.Inf(1)
	if j.MaxSlowdown > 0 {
		c = j.MaxSlowdown
	}
	if j.Floor > 0 && p.Throughput > 0 {
		c = math.Min(c, math.Max(1, p.Throughput/j.Floor))
	}
	return c
}

// MaxSlowdown returns the limit that allows a pair only when each job
// runs within tau of its isolated time (tau ≥ 1), whatever the queue: a
// placer's rule where no queue is known.
func MaxSlowdown(tau float64) Limit { return Limit{bound: tau, on: true} }

// String says what the limit allows, in words.
func (l Limit) String() string {
	switch {
	case !l.on:
		return "any pair that fits"
	case l.byValue:
		return fmt.Sprintf("pairs that do at least %.3g GPUs' worth of work together", 2/l.bound)
	}
	return fmt.Sprintf("pairs within %.3g× of their isolated times", l.bound)
}
