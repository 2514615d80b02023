package sim

import (
	"context"
	"sync"
	"testing"

	"github.com/elastico/elastico"
)

var (
	v100Once  sync.Once
	v100Truth *Truth
	v100Err   error
)

// testTruth returns the V100 ground truth, built once per test binary.
func testTruth(t testing.TB) *Truth {
	t.Helper()
	v100Once.Do(func() { v100Truth, v100Err = GavelTruth("v100") })
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
					a := &elastico.Assignment{ConfigID: j.Family[0].Config.ID, GPUs: gs}
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
