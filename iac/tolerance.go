package iac

import (
	"fmt"
	"math"
)

// Tolerance is the adaptive tolerance of Eq. 11, on the slowdown scale:
//
//	τ(t) = τ0 · (1 + min(β·q(t), βmax))
//
// where q(t) ≥ 0 is the queue pressure (the dominant share of the pending
// jobs' minimum demand). A co-located pair violates when its predicted
// slowdown Ŝ exceeds τ. When nothing waits, only pairs within τ0 share a
// GPU; as the queue grows, the scheduler accepts more interference to start
// waiting jobs, up to τ0·(1 + βmax).
type Tolerance struct {
	Tau0    float64 // τ0 ≥ 1: the tolerance with an empty queue
	Beta    float64 // β ≥ 0: how fast τ grows with queue pressure
	BetaMax float64 // βmax ≥ 0: the cap on β·q
}

// DefaultTolerance is the tolerance elastico uses unless told otherwise.
//
//   - τ0 = 1/0.9 ≈ 1.111: the paper calls a pair safe when each job keeps
//     more than 0.9 of its isolated speed; with an empty queue only safe
//     pairs share.
//   - β = 1: at a queue pressure of q the tolerance grows by q·τ0, so a
//     queue that needs 10 % of the cluster buys 10 % more slowdown.
//   - βmax = 0.45: τ never exceeds τ0·1.45 ≈ 1.611, below 1/0.6 ≈ 1.667,
//     where the paper calls a pair harmful: however long the queue, a pair
//     predicted harmful never shares.
var DefaultTolerance = Tolerance{Tau0: 1 / 0.9, Beta: 1, BetaMax: 0.45}

// At returns τ at queue pressure q. A q that is negative or NaN counts as
// 0 (no pressure); +Inf reaches the cap.
func (t Tolerance) At(q float64) float64 {
	if !(q > 0) {
		return t.Tau0
	}
	return t.Tau0 * (1 + math.Min(t.Beta*q, t.BetaMax))
}

// Max is the most τ ever reaches, τ0·(1 + βmax) (τ0 when β is 0): the
// tolerance a scheduler may keep a pair that already shares a GPU to, so
// that a queue that shrinks by the very job it started does not split the
// pair again (and the next epoch start it again).
func (t Tolerance) Max() float64 {
	if t.Beta == 0 {
		return t.Tau0
	}
	return t.Tau0 * (1 + t.BetaMax)
}

// Violates reports whether a predicted slowdown exceeds τ at pressure q.
func (t Tolerance) Violates(slowdown, q float64) bool { return slowdown > t.At(q) }

// Validate rejects a tolerance that At cannot use.
func (t Tolerance) Validate() error {
	switch {
	case !finite(t.Tau0) || t.Tau0 < 1:
		return fmt.Errorf("iac: Tolerance.Tau0 is %g, want a finite slowdown ≥ 1", t.Tau0)
	case !finite(t.Beta) || t.Beta < 0:
		return fmt.Errorf("iac: Tolerance.Beta is %g, want a finite number ≥ 0", t.Beta)
	case !finite(t.BetaMax) || t.BetaMax < 0:
		return fmt.Errorf("iac: Tolerance.BetaMax is %g, want a finite number ≥ 0", t.BetaMax)
	}
	return nil
}
