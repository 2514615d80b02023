// Package iactest is a conformance suite for [elastico.Predictor]
// implementations: the default MLP runs it, and so can a user's own
// predictor.
//
//	func TestMyPredictor(t *testing.T) { iactest.Run(t, myPredictor) }
package iactest

import (
	"fmt"
	"math"
	"reflect"
	"sync"
	"testing"

	"github.com/elastico/elastico"
)

// Options adjusts what Run demands.
type Options struct {
	// AllowAllocs lets Slowdown allocate. The interface asks predictors not
	// to (they run in the scheduler's inner loop), so Run checks it unless
	// told otherwise.
	AllowAllocs bool
	// Profiles are checked in addition to the built-in set (every ordered
	// pair of the union).
	Profiles []elastico.Profile
}

// Run checks p with the default options.
func Run(t *testing.T, p elastico.Predictor) { RunWith(t, p, Options{}) }

// RunWith checks, over every ordered pair of a set of profiles (training and
// inference, with all, some or no counters, extreme batch sizes, parameter
// counts and throughputs, plus o.Profiles), that Slowdown:
//
//   - returns a finite number ≥ 1;
//   - returns the same bits when called again, and from several goroutines
//     at once (run the suite with -race);
//   - leaves its arguments unchanged;
//   - allocates nothing (unless o.AllowAllocs).
func RunWith(t *testing.T, p elastico.Predictor, o Options) {
	t.Helper()
	profiles := append(Profiles(), o.Profiles...)
	want := make([]float64, len(profiles)*len(profiles))
	t.Run("AtLeastOne", func(t *testing.T) {
		for i := range profiles {
			for j := range profiles {
				s := p.Slowdown(&profiles[i], &profiles[j])
				want[i*len(profiles)+j] = s
				if math.IsNaN(s) || math.IsInf(s, 0) || s < 1 {
					t.Errorf("Slowdown(%s, %s) = %g, want a finite number ≥ 1", name(&profiles[i]), name(&profiles[j]), s)
				}
			}
		}
	})
	t.Run("Deterministic", func(t *testing.T) {
		for i := range profiles {
			for j := range profiles {
				s1 := p.Slowdown(&profiles[i], &profiles[j])
				s2 := p.Slowdown(&profiles[i], &profiles[j])
				if w := want[i*len(profiles)+j]; math.Float64bits(s1) != math.Float64bits(w) || math.Float64bits(s2) != math.Float64bits(w) {
					t.Errorf("Slowdown(%s, %s) = %v, then %v, then %v", name(&profiles[i]), name(&profiles[j]), w, s1, s2)
				}
			}
		}
	})
	t.Run("NoMutation", func(t *testing.T) {
		before := append([]elastico.Profile(nil), Profiles()...)
		after := Profiles()
		for i := range after {
			for j := range after {
				p.Slowdown(&after[i], &after[j])
			}
		}
		for i := range after {
			if !reflect.DeepEqual(before[i], after[i]) {
				t.Errorf("Slowdown changed profile %s: %+v, was %+v", name(&before[i]), after[i], before[i])
			}
		}
	})
	t.Run("Concurrent", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make([]string, 4)
		for g := range errs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range profiles {
					for j := range profiles {
						s := p.Slowdown(&profiles[i], &profiles[j])
						if math.Float64bits(s) != math.Float64bits(want[i*len(profiles)+j]) && errs[g] == "" {
							errs[g] = fmt.Sprintf("goroutine %d: Slowdown(%s, %s) = %v, alone %v", g, name(&profiles[i]), name(&profiles[j]), s, want[i*len(profiles)+j])
						}
					}
				}
			}()
		}
		wg.Wait()
		for _, e := range errs {
			if e != "" {
				t.Error(e)
			}
		}
	})
	if o.AllowAllocs {
		return
	}
	t.Run("ZeroAllocs", func(t *testing.T) {
		for i := range profiles {
			a, b := &profiles[i], &profiles[(i+1)%len(profiles)]
			if n := testing.AllocsPerRun(20, func() { p.Slowdown(a, b) }); n != 0 {
				t.Errorf("Slowdown(%s, %s) allocates %v times per call, want 0", name(a), name(b), n)
			}
		}
	})
}

func name(p *elastico.Profile) string { return p.Family + "/" + p.Config.ID }

// Profiles returns the built-in profile set of the suite (a fresh copy).
func Profiles() []elastico.Profile {
	full := func(v float64) elastico.Counters {
		var c elastico.Counters
		for k := elastico.Counter(0); k < elastico.NumCounters; k++ {
			c.Set(k, v)
		}
		return c
	}
	var some elastico.Counters
	some.Set(elastico.SMActive, 0.7)
	some.Set(elastico.DRAMActive, 0.4)
	some.Set(elastico.FBUsedFrac, 0.3)
	busy := full(1)
	idle := full(0)
	mid := full(0.5)
	mid.Set(elastico.NVLinkFrac, 0)
	return []elastico.Profile{
		{Family: "bare", Config: elastico.Configuration{ID: "nothing-known"}},
		{Family: "resnet50", Class: elastico.Training, Params: 25.6e6, Throughput: 400,
			Config: elastico.Configuration{ID: "bs64", BatchSize: 64, GPUs: 1}, Counters: mid},
		{Family: "resnet50", Class: elastico.Training, Params: 25.6e6, Throughput: 1400,
			Config: elastico.Configuration{ID: "bs256-amp-ckpt", BatchSize: 256, AMP: true, Checkpointing: true, GPUs: 1}, Counters: busy},
		{Family: "bert", Class: elastico.Training, Params: 3.4e8, Throughput: 1e-3,
			Config: elastico.Configuration{ID: "bs1", BatchSize: 1, GPUs: 1}, Counters: some},
		{Family: "llama", Class: elastico.Inference, Params: 7e10, Throughput: 1e6,
			Config: elastico.Configuration{ID: "kv0.9", BatchSize: 65536, KVCacheFrac: 0.9, MaxSeqs: 256, GPUs: 1}, Counters: busy},
		{Family: "tiny", Class: elastico.Inference, Params: 1e3, Throughput: 5,
			Config: elastico.Configuration{ID: "kv0", KVCacheFrac: 0, GPUs: 1}, Counters: idle},
	}
}
