package sim

import (
	"context"
	"math"
	"sync"
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/sets"
)

var (
	v100Once  sync.Once
	v100Truth *Truth
	v100Err   error
)

// testTruth returns the V100 ground truth, built once per test binary.
func testTruth(t testing.TB) *Truth {
	t.Helper()
	v100Once.Do(func() { v100Truth, v100Err = GavelTruth("V100") })
	if v100Err != nil {
		t.Fatal(v100Err)
	}
	return v100Truth
}

// testJob binds one job of family at (batch, gpus) with dedicated seconds
// of work, arriving at arrival.
func testJob(t testing.TB, tr *Truth, id, family string, batch, gpus int, arrival, dedicated float64) Job {
	t.Helper()
	f, ok := tr.Family(family)
	if !ok {
		t.Fatalf("no family %q", family)
	}
	c, err := tr.Config(family, batch, gpus)
	if err != nil {
		t.Fatal(err)
	}
	j := Job{ID: id, Family: f, Class: f.Class, Arrival: arrival, Weight: 1, Configs: []Variant{c}}
	for _, o := range f.Configs {
		if o.ID != c.ID {
			j.Configs = append(j.Configs, o)
		}
	}
	j.Profiles = tr.Profiles(f, j.Configs, nil)
	j.Work = dedicated * c.Goodput(gpus > tr.GPU.PerNode)
	j.Dedicated = dedicated
	return j
}

// policyFunc adapts a function to elastico.Scheduler.
type policyFunc func(ctx context.Context, st *elastico.State) (*elastico.Plan, error)

func (f policyFunc) Epoch(ctx context.Context, st *elastico.State) (*elastico.Plan, error) {
	return f(ctx, st)
}

// pinPolicy starts every waiting job under its first profile on the GPUs
// pins gives it (by job ID); jobs without a pin wait. It never moves a job.
func pinPolicy(pins map[string][]string) elastico.Scheduler {
	return policyFunc(func(_ context.Context, st *elastico.State) (*elastico.Plan, error) {
		p := &elastico.Plan{}
		for _, j := range st.Jobs {
			d := elastico.Decision{JobID: j.ID, Assignment: j.Running}
			if j.Running == nil {
				if gs, ok := pins[j.ID]; ok {
					a := &elastico.Assignment{ConfigID: j.Profiles[0].Config.ID, GPUs: gs}
					d.Assignment = a
					p.Actions = append(p.Actions, elastico.Action{Kind: elastico.Start, JobID: j.ID, To: a})
				}
			}
			p.Decisions = append(p.Decisions, d)
		}
		return p, nil
	})
}

func testCluster(t testing.TB, n int) elastico.Cluster {
	t.Helper()
	c, err := V100.Cluster(n)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// step is one scripted decision: job to configuration cfg on gpus, or to
// waiting when cfg is "".
type step struct {
	job, cfg string
	gpus     []string
}

// scripted is a fake policy: at the epoch of simulated second t it applies
// script[t], with the action each change calls for; every other job keeps
// its assignment (a job no step starts waits).
func scripted(script map[int][]step) elastico.Scheduler {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return policyFunc(func(_ context.Context, st *elastico.State) (*elastico.Plan, error) {
		t := int(math.Round(st.Now.Sub(start).Seconds()))
		p := &elastico.Plan{}
		for _, j := range st.Jobs {
			d := elastico.Decision{JobID: j.ID, Assignment: j.Running}
			for _, s := range script[t] {
				if s.job != j.ID {
					continue
				}
				var to *elastico.Assignment
				if s.cfg != "" {
					to = &elastico.Assignment{ConfigID: s.cfg, GPUs: s.gpus}
				}
				kind := elastico.Migrate
				switch from := j.Running; {
				case from == nil:
					kind = elastico.Start
				case to == nil:
					kind = elastico.Preempt
				case sets.Subset(from.GPUs, to.GPUs) || sets.Subset(to.GPUs, from.GPUs):
					kind = elastico.Reconfigure
				}
				d.Assignment = to
				p.Actions = append(p.Actions, elastico.Action{Kind: kind, JobID: j.ID, From: j.Running, To: to})
			}
			p.Decisions = append(p.Decisions, d)
		}
		return p, nil
	})
}

func on(job, cfg string, gpus ...string) step { return step{job: job, cfg: cfg, gpus: gpus} }
func off(job string) step                     { return step{job: job} }
