package iac

import (
	"fmt"
	"slices"

	"github.com/elastico/elastico"
)

// Dataset is a set of co-location measurements: profiles of jobs measured
// alone, and pairs of them measured sharing one GPU. It is what profiles.csv
// and pairs.csv hold (ReadDataset) and what a user retrains the predictor on.
type Dataset struct {
	// Name says where the data came from, for reports.
	Name string
	// IDs[i] names Profiles[i]; IDs are unique.
	IDs      []string
	Profiles []elastico.Profile
	Pairs    []Pair
}

// Pair is one co-located run of Profiles[A] and Profiles[B]. A speed is a
// job's throughput next to the other divided by its isolated throughput; 0
// means that direction was not measured.
type Pair struct {
	A, B           int
	SpeedA, SpeedB float64
	// Line is the pair's line in pairs.csv (0 when not read from a file).
	Line int
}

// SlowdownOf turns a measured speed into the slowdown the predictor learns:
// 1/speed, and 1 for a speed ≥ 1. A speed above 1 (co-located faster than
// alone) is measurement noise or a capped value (Gavel records 80 of its
// 636 V100 pairs with a co-located throughput equal to the isolated one to
// the last digit); the model's output 1 + softplus can approach 1 but never
// cross it, so "no measurable slowdown" is what such a pair teaches.
func SlowdownOf(speed float64) float64 {
	if speed >= 1 {
		return 1
	}
	return 1 / speed
}

// Index returns the index of the profile with the given ID.
func (d *Dataset) Index(id string) (int, bool) {
	i := slices.Index(d.IDs, id)
	return i, i >= 0
}

// Families returns the profiles' families, sorted, without repeats.
func (d *Dataset) Families() []string {
	var out []string
	for i := range d.Profiles {
		out = append(out, d.Profiles[i].Family)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Samples returns one Sample per measured direction of every pair: the
// victim A next to aggressor B with A's slowdown, then B next to A. Both
// directions of a pair share a Group (the pair's index). A job paired with
// itself with one speed gives one sample.
func (d *Dataset) Samples() []Sample {
	out := make([]Sample, 0, 2*len(d.Pairs))
	for k, p := range d.Pairs {
		a, b := &d.Profiles[p.A], &d.Profiles[p.B]
		if p.SpeedA > 0 {
			s := Sample{Slowdown: SlowdownOf(p.SpeedA), Group: k, Victim: a.Family, Aggressor: b.Family}
			s.Features.Build(a, b)
			out = append(out, s)
		}
		if p.SpeedB > 0 && !(p.A == p.B && p.SpeedA == p.SpeedB) {
			s := Sample{Slowdown: SlowdownOf(p.SpeedB), Group: k, Victim: b.Family, Aggressor: a.Family}
			s.Features.Build(b, a)
			out = append(out, s)
		}
	}
	return out
}

// Capped counts the measured directions with a speed ≥ 1 (learned as a
// slowdown of exactly 1).
func (d *Dataset) Capped() int {
	n := 0
	for _, p := range d.Pairs {
		if p.SpeedA >= 1 {
			n++
		}
		if p.SpeedB >= 1 && !(p.A == p.B && p.SpeedA == p.SpeedB) {
			n++
		}
	}
	return n
}

// Validate checks the dataset's structure: unique IDs, one profile per ID,
// pairs that reference existing profiles with finite speeds, and at least
// one measured direction per pair.
func (d *Dataset) Validate() error {
	if len(d.IDs) != len(d.Profiles) {
		return fmt.Errorf("iac: dataset %s: %d IDs but %d profiles", d.Name, len(d.IDs), len(d.Profiles))
	}
	seen := make(map[string]bool, len(d.IDs))
	for i, id := range d.IDs {
		if id == "" {
			return fmt.Errorf("iac: dataset %s: profile %d has an empty ID", d.Name, i)
		}
		if seen[id] {
			return fmt.Errorf("iac: dataset %s: profile ID %q repeated", d.Name, id)
		}
		seen[id] = true
		if d.Profiles[i].Family == "" {
			return fmt.Errorf("iac: dataset %s: profile %q: empty Family", d.Name, id)
		}
	}
	for k, p := range d.Pairs {
		if p.A < 0 || p.A >= len(d.Profiles) || p.B < 0 || p.B >= len(d.Profiles) {
			return fmt.Errorf("iac: dataset %s: pair %d: profile index out of range", d.Name, k)
		}
		for _, s := range []struct {
			name string
			v    float64
		}{{"SpeedA", p.SpeedA}, {"SpeedB", p.SpeedB}} {
			if !finite(s.v) || s.v < 0 {
				return fmt.Errorf("iac: dataset %s: pair %d (%s, %s): %s is %g, want a finite speed > 0 (0: not measured)", d.Name, k, d.IDs[p.A], d.IDs[p.B], s.name, s.v)
			}
		}
		if p.SpeedA == 0 && p.SpeedB == 0 {
			return fmt.Errorf("iac: dataset %s: pair %d (%s, %s): neither speed measured", d.Name, k, d.IDs[p.A], d.IDs[p.B])
		}
	}
	return nil
}

// Sample is one measured ordered pair: the features of victim A next to
// aggressor B and A's measured slowdown.
type Sample struct {
	Features Vector
	// Slowdown is A's isolated throughput over its co-located throughput,
	// ≥ 1 (a measured speed-up is recorded as 1: see [Dataset]).
	Slowdown float64
	// Group ties samples that come from one measurement (the two directions
	// of one co-located run): every split keeps a group on one side.
	Group int
	// Victim and Aggressor are the two jobs' families, for per-family
	// reports and leave-family-out splits.
	Victim, Aggressor string
}

// CheckSamples returns an error for the first sample a model cannot learn
// from: a slowdown that is not a finite number ≥ 1, or a feature that is not
// finite. Every trainer checks its samples with it.
func CheckSamples(samples []Sample) error {
	for i := range samples {
		s := &samples[i]
		if !finite(s.Slowdown) || s.Slowdown < 1 {
			return fmt.Errorf("iac: sample %d (%s next to %s): slowdown %g, want a finite number ≥ 1", i, s.Victim, s.Aggressor, s.Slowdown)
		}
		for f := Feature(0); f < NumFeatures; f++ {
			if x, ok := s.Features.Get(f); ok && !finite(x) {
				return fmt.Errorf("iac: sample %d (%s next to %s): feature %s is %g", i, s.Victim, s.Aggressor, f, x)
			}
		}
	}
	return nil
}
