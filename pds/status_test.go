package pds

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/elastico/elastico"
)

// TestStatusSaysWhyNotGrown: a running job kept at its one-GPU
// configuration while GPUs sit idle (it was started a minute ago, and is
// held for MinRunTime) says how much of its best goodput it runs at and
// why it was not grown; once grown, it says nothing of the kind.
func TestStatusSaysWhyNotGrown(t *testing.T) {
	p := func(id string, n int, tput float64) elastico.Profile {
		return elastico.Profile{Family: "x", Config: elastico.Configuration{ID: id, BatchSize: 64 * n, GPUs: n},
			Demand: elastico.Demand{GPUs: n, SM: 0.9, GPUMemory: 10, CPU: 2, RAM: 8}, Throughput: tput}
	}
	st := &elastico.State{
		Now: day0.Add(time.Hour),
		Cluster: elastico.Cluster{Nodes: []elastico.Node{{ID: "n0", CPU: 32, RAM: 256, GPUs: []elastico.GPU{
			{ID: "g0", Memory: 40}, {ID: "g1", Memory: 40}, {ID: "g2", Memory: 40}, {ID: "g3", Memory: 40}}}}},
		Jobs: []elastico.Job{{ID: "x", Arrival: day0, Optimizer: elastico.AdaScale, Profiles: []elastico.Profile{p("x1", 1, 100), p("x4", 4, 150)},
			Running: &elastico.Assignment{ConfigID: "x1", GPUs: []string{"g0"}}}},
		Carry: elastico.Carry{Since: map[string]time.Time{"x": day0.Add(time.Hour - 30*time.Second)}},
	}
	s, err := New(Config{Clock: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := s.Epoch(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	d := plan.Decisions[0]
	if d.Assignment == nil || d.Assignment.ConfigID != "x1" {
		t.Fatalf("x: %v %v, want kept at x1 (held for MinRunTime)", d.Assignment, d.Status)
	}
	if why := d.Status.String(); !strings.Contains(why, "67 % of the goodput of its best configuration x4") || !strings.Contains(why, "3 GPUs idle") {
		t.Errorf("status %q, want it to say x runs at 67 %% of x4's goodput with 3 GPUs idle", why)
	}
	// An hour later the hold is over: x grows, and says so.
	st = apply(st, plan)
	st.Now = st.Now.Add(time.Hour)
	plan, err = s.Epoch(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	if d := plan.Decisions[0]; d.Assignment == nil || d.Assignment.ConfigID != "x4" || strings.Contains(d.Status.String(), "goodput of its best") {
		t.Errorf("an hour on: x %v %v, want grown to x4", d.Assignment, d.Status)
	}
}
