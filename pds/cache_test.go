package pds

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// fresh wraps a predictor without marking it immutable: Epoch asks it
// afresh every epoch.
type fresh struct {
	p elastico.Predictor
	n int
}

func (f *fresh) Slowdown(v, a *elastico.Profile) float64 {
	f.n++
	return f.p.Slowdown(v, a)
}

// TestPredictionCacheKeepsPlans: a Scheduler that keeps the default
// predictor's answers between epochs makes the very plans of one that asks
// every time, through churn and a job re-profiled in place (same IDs, new
// counters), while asking the predictor far less.
func TestPredictionCacheKeepsPlans(t *testing.T) {
	mlp, err := iac.Default()
	if err != nil {
		t.Fatal(err)
	}
	cached, uncached := &counting{p: mlp}, &fresh{p: mlp}
	sc, _ := New(Config{Predictor: cached, Clock: fixedClock()})
	su, _ := New(Config{Predictor: uncached, Clock: fixedClock()})
	if !cacheable(cached) || cacheable(uncached) {
		t.Fatal("the wrappers are not told apart")
	}
	st := benchState(t, su, 300, 256, 0.05)
	cached.n, uncached.n = 0, 0
	r := rand.New(rand.NewPCG(3, 4))
	ignore := cmpopts.IgnoreFields(elastico.Stats{}, "Prices", "Placement", "Interference", "Total")
	reprofiled := 0
	for epoch := range 6 {
		if epoch == 1 {
			// sc's first epoch started from an empty cache (su settled
			// the State): nothing was kept between epochs yet. Count from
			// the second on.
			cached.n, uncached.n = 0, 0
		}
		pc, err := sc.Epoch(context.Background(), st)
		if err != nil {
			t.Fatal(err)
		}
		pu, err := su.Epoch(context.Background(), st)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(pu, pc, ignore); diff != "" {
			t.Fatalf("epoch %d: cached and uncached plans differ (-uncached +cached):\n%s", epoch, diff)
		}
		st = apply(st, pu)
		// A job that shares a GPU is re-profiled in place: its predicted
		// slowdowns (Decision.Slowdown among them) must change with it.
		for i, d := range pu.Decisions {
			if d.Assignment == nil || d.Slowdown == 1 {
				continue
			}
			j := &st.Jobs[i]
			j.Profiles = slices.Clone(j.Profiles)
			for k := range j.Profiles {
				p := &j.Profiles[k]
				v, _ := p.Counters.Get(elastico.SMActive)
				p.Counters.Set(elastico.SMActive, min(1, v+0.3))
				p.Throughput *= 0.9
			}
			reprofiled++
			break
		}
		// And some jobs leave and others arrive.
		for i := range 10 {
			k := r.IntN(len(st.Jobs))
			st.Jobs[k].ID = fmt.Sprintf("e%d-%d", epoch, i)
			st.Jobs[k].Running, st.Jobs[k].Observed = nil, elastico.Observation{}
		}
	}
	if reprofiled == 0 {
		t.Fatal("no job shared a GPU: the test re-profiled nothing")
	}
	// Measured: 1,352 against 1,871 (both keep an epoch's answers; the
	// cache keeps them from one epoch to the next). The placer asks little
	// that the last epoch did not, so most of what is left is new jobs'
	// pairs, which no cache can save.
	if float64(cached.n) > 0.8*float64(uncached.n) {
		t.Errorf("the cache asked the predictor %d times, the uncached %d: it saves little", cached.n, uncached.n)
	}
}

// TestPredictionCacheIdentity: equal contents get one number, in one epoch
// and the next; a changed profile gets a new one.
func TestPredictionCacheIdentity(t *testing.T) {
	c := &predCache{}
	c.begin(0)
	p := gavelTypes[0]
	q := p
	a, b := c.id(&p), c.id(&q)
	if a != b {
		t.Errorf("equal profiles: numbers %d and %d", a, b)
	}
	c.begin(0)
	if got := c.id(&q); got != a {
		t.Errorf("the next epoch: number %d, want %d", got, a)
	}
	r := q
	r.Config.ID = "renamed" // same fingerprint: the interned copy tells them apart
	if got := c.id(&r); got == a {
		t.Errorf("a renamed profile shares number %d", got)
	}
	q.Counters.Set(elastico.DRAMActive, 0.99)
	if got := c.id(&q); got == a {
		t.Errorf("a re-profiled profile kept its number %d", got)
	}
}

// TestPredictionCacheBounded: profiles no epoch asks about any more are
// swept, with their pairs.
func TestPredictionCacheBounded(t *testing.T) {
	c := &predCache{}
	const perEpoch = 1000
	for epoch := range 40 {
		c.begin(0)
		for i := range perEpoch {
			p := gavelTypes[i%len(gavelTypes)]
			p.Throughput = float64(epoch*perEpoch + i) // new every epoch
			id := c.id(&p)
			c.pairs[uint64(id)<<32|uint64(id)] = 1
		}
		if max := sweepFactor*perEpoch + sweepSlack + perEpoch; len(c.ids) > max {
			t.Fatalf("epoch %d: %d profiles cached, want at most %d", epoch, len(c.ids), max)
		}
		if max := pairFactor*(sweepFactor*perEpoch+perEpoch) + sweepSlack + perEpoch; len(c.pairs) > max {
			t.Fatalf("epoch %d: %d pairs cached, want at most %d", epoch, len(c.pairs), max)
		}
	}
	// What the last epoch asked about survives a sweep, under new numbers
	// that still key its pairs.
	c.begin(0)
	p := gavelTypes[(perEpoch-1)%len(gavelTypes)]
	p.Throughput = float64(39*perEpoch + perEpoch - 1)
	id := c.id(&p)
	if _, ok := c.pairs[uint64(id)<<32|uint64(id)]; !ok {
		t.Errorf("the last epoch's pair was lost")
	}
}

// TestPreparedProfilesFollowTheSweep: a profile prepared in one epoch is
// found prepared, with the same values, under the number a sweep gives it;
// profiles swept away take their prepared values with them.
func TestPreparedProfilesFollowTheSweep(t *testing.T) {
	mlp, err := iac.Default()
	if err != nil {
		t.Fatal(err)
	}
	c := &predCache{}
	const perEpoch = 700 // more than a block
	var last []elastico.Profile
	for epoch := range 12 {
		c.begin(0)
		last = last[:0]
		for i := range perEpoch {
			p := gavelTypes[i%len(gavelTypes)]
			p.Throughput = float64(epoch*perEpoch + i + 1) // new every epoch
			last = append(last, p)
			got := c.prepared(c.id(&p), &p, mlp)
			if want := mlp.AppendPrepared(nil, &p); !slices.EqualFunc(got, want, sameBits) {
				t.Fatalf("epoch %d, profile %d: prepared values differ from the model's", epoch, i)
			}
		}
		if max := sweepFactor*perEpoch + sweepSlack + perEpoch; c.n > max {
			t.Fatalf("epoch %d: %d profiles prepared, want at most %d", epoch, c.n, max)
		}
	}
	c.begin(0) // the last epoch's profiles, renumbered
	before := c.n
	for i := range last {
		p := &last[i]
		got := c.prepared(c.id(p), p, mlp)
		if want := mlp.AppendPrepared(nil, p); !slices.EqualFunc(got, want, sameBits) {
			t.Fatalf("after the sweep, profile %d: prepared values differ from the model's", i)
		}
	}
	if c.n != before {
		t.Errorf("the last epoch's profiles were prepared again after the sweep (%d → %d)", before, c.n)
	}
}

// sameBits compares prepared values, whose NaNs mark what was not measured.
func sameBits(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }
