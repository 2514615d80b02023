package iac

import (
	"math"
	"strings"
	"testing"

	"github.com/elastico/elastico"
)

func TestSharingByValue(t *testing.T) {
	s := DefaultSharing
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	inf := math.Inf(1)
	tests := []struct {
		name     string
		q        float64
		a, b     float64
		capA     float64
		capB     float64
		allowed  bool
		contains string // in Why, when not allowed
	}{
		{"nothing waits: a safe pair shares", 0, 1.05, 1.1, inf, inf, true, ""},
		{"nothing waits: Gavel's typical pair does not", 0, 1.5, 1.5, inf, inf, false, "tolerance 1.11"},
		{"jobs wait: Gavel's typical pair does 1.33 GPUs' worth", 0.3, 1.5, 1.5, inf, inf, true, ""},
		{"jobs wait: a lopsided pair that still pays", 0.3, 1.05, 3, inf, inf, true, ""},
		{"jobs wait: a pair worth less than one GPU", 0.3, 2.2, 2.2, inf, inf, false, "0.909 GPUs' worth"},
		{"jobs wait: within the margin is not enough", 0.3, 1.9, 1.9, inf, inf, false, "below the 1.1"},
		{"jobs wait: a job's own limit holds", 0.3, 1.5, 1.3, 1.25, inf, false, "its own limit 1.25"},
		{"jobs wait: the neighbour's own limit holds", 0.3, 1.3, 1.5, inf, 1.25, false, "that job's own limit 1.25"},
		{"NaN is never safe", 0.3, math.NaN(), 1, inf, inf, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := s.At(tt.q)
			if got := l.Allows(tt.a, tt.b, tt.capA, tt.capB); got != tt.allowed {
				t.Fatalf("Allows(%g, %g) at q %g = %v, want %v (excess %g)", tt.a, tt.b, tt.q, got, tt.allowed, l.Excess(tt.a, tt.b, tt.capA, tt.capB))
			}
			if l.Allows(tt.a, tt.b, tt.capA, tt.capB) != l.Allows(tt.b, tt.a, tt.capB, tt.capA) {
				t.Errorf("the rule depends on the order of the pair")
			}
			if !tt.allowed && tt.contains != "" {
				if why := l.Why(tt.a, tt.b, tt.capA, tt.capB); !strings.Contains(why, tt.contains) {
					t.Errorf("Why = %q, want it to contain %q", why, tt.contains)
				}
			}
		})
	}
}

// TestSharingKeep: a pair that shares as before is held to the rule for
// keeping a pair, which allows every pair the rule allows at any queue.
func TestSharingKeep(t *testing.T) {
	inf := math.Inf(1)
	for _, s := range []Sharing{DefaultSharing, {Quiet: 1.3, Margin: 0.5}, PaperSharing(DefaultTolerance)} {
		keep := s.Keep()
		for a := 1.0; a <= 4; a += 0.05 {
			for b := 1.0; b <= 4; b += 0.05 {
				for _, q := range []float64{0, 0.1, 1, 100} {
					if s.At(q).Allows(a, b, inf, inf) && !keep.Allows(a, b, inf, inf) {
						t.Fatalf("%+v: (%g, %g) allowed at q %g, not by Keep", s, a, b, q)
					}
				}
			}
		}
	}
}

// TestSharingKeepHysteresis: by value, a pair starts at 1 + Margin GPUs'
// worth of work and is split below 1 − Margin; between the two it stays as
// it is.
func TestSharingKeepHysteresis(t *testing.T) {
	inf := math.Inf(1)
	s := Sharing{Quiet: 1 / 0.9, Margin: 0.1}
	at, keep := s.At(1), s.Keep()
	for _, tt := range []struct {
		speed       float64 // each job's speed beside the other
		start, stay bool
	}{
		{0.56, true, true},   // 1.12 GPUs' worth
		{0.5, false, true},   // 1.0
		{0.46, false, true},  // 0.92
		{0.44, false, false}, // 0.88
	} {
		a := 1 / tt.speed
		if got := at.Allows(a, a, inf, inf); got != tt.start {
			t.Errorf("two jobs at %g of their speed: start %v, want %v", tt.speed, got, tt.start)
		}
		if got := keep.Allows(a, a, inf, inf); got != tt.stay {
			t.Errorf("two jobs at %g of their speed: stay %v, want %v (%v)", tt.speed, got, tt.stay, keep)
		}
	}
	if l := (Sharing{Margin: 1}).Keep(); !l.Allows(100, 100, inf, inf) {
		t.Errorf("Margin 1: Keep %v splits a pair; want every pair kept", l)
	}
}

func TestPaperSharingIsEq11(t *testing.T) {
	s := PaperSharing(DefaultTolerance)
	inf := math.Inf(1)
	for _, q := range []float64{0, 0.05, 0.2, 1, 10} {
		tau := DefaultTolerance.At(q)
		l := s.At(q)
		if l.ByValue() || l.Bound() != tau {
			t.Fatalf("q %g: limit %v, want each job within %g", q, l, tau)
		}
		if !l.Allows(tau, 1, inf, inf) || l.Allows(tau+1e-9, 1, inf, inf) {
			t.Errorf("q %g: the bound is not τ(t) = %g", q, tau)
		}
	}
}

func TestSharingValidate(t *testing.T) {
	for _, tt := range []struct {
		s     Sharing
		field string
	}{
		{Sharing{Quiet: 0.9}, "Quiet"},
		{Sharing{Quiet: math.Inf(1)}, "Quiet"},
		{Sharing{Margin: -0.1}, "Margin"},
		{Sharing{Margin: math.NaN()}, "Margin"},
		{PaperSharing(Tolerance{Tau0: 0.5}), "Tau0"},
	} {
		if err := tt.s.Validate(); err == nil || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("Validate(%+v) = %v, want an error naming %s", tt.s, err, tt.field)
		}
	}
	var zero Limit
	if zero.On() || !zero.Allows(100, 100, math.Inf(1), math.Inf(1)) {
		t.Errorf("the zero Limit judges pairs")
	}
}

func TestJobLimit(t *testing.T) {
	p := &elastico.Profile{Throughput: 100}
	for _, tt := range []struct {
		job  elastico.Job
		want float64
	}{
		{elastico.Job{}, math.Inf(1)},
		{elastico.Job{MaxSlowdown: 1.25}, 1.25},
		{elastico.Job{Floor: 50}, 2},                     // 100/2 = 50: the floor
		{elastico.Job{Floor: 50, MaxSlowdown: 1.5}, 1.5}, // the tighter
		{elastico.Job{Floor: 150}, 1},                    // already below: no slowdown at all
	} {
		if got := JobLimit(&tt.job, p); got != tt.want {
			t.Errorf("JobLimit(%+v) = %g, want %g", tt.job, got, tt.want)
		}
	}
}
