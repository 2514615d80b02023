package pds

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/elastico/elastico"
)

// TestCalmFollowsTheJobs: Carry.Calm keeps the Now of the first epoch that
// saw the State's jobs while they stay the same ones, in any order, and
// starts again when a job arrives or leaves.
func TestCalmFollowsTheJobs(t *testing.T) {
	st := &elastico.State{Now: day0.Add(time.Minute), Cluster: cluster(node("n0", 4, 16)), Jobs: identical(3, 1, 1, 10, 100)}
	h := newHost(t, Config{}, st)
	h.step()
	since := h.st.Carry.Calm.Since
	if !since.Equal(day0.Add(time.Minute)) {
		t.Fatalf("Calm.Since = %v after the first epoch, want its Now %v", since, day0.Add(time.Minute))
	}
	h.st.Jobs[0], h.st.Jobs[2] = h.st.Jobs[2], h.st.Jobs[0]
	h.run(3, nil)
	if got := h.st.Carry.Calm.Since; !got.Equal(since) {
		t.Errorf("Calm.Since = %v with the same jobs reordered, want %v", got, since)
	}
	arrival := h.st.Now
	h.st.Jobs = append(h.st.Jobs, plainJob("late", 1, 1, 10, 100, arrival))
	h.step()
	if got := h.st.Carry.Calm.Since; !got.Equal(arrival) {
		t.Errorf("Calm.Since = %v after an arrival at %v", got, arrival)
	}
	left := h.st.Now
	h.remove("late")
	h.step()
	if got := h.st.Carry.Calm.Since; !got.Equal(left) {
		t.Errorf("Calm.Since = %v after a departure at %v", got, left)
	}
}

// TestCalmHoldsSettledJobs: a job started since the jobs last changed
// stays while nothing changes, even where the market would now give its
// GPU to a heavier job that waits; once a job arrives, the heavier one
// takes it.
func TestCalmHoldsSettledJobs(t *testing.T) {
	light := plainJob("light", 1, 1, 10, 100, day0)
	heavy := plainJob("heavy", 1, 1, 10, 100, day0)
	heavy.Weight = 5
	start := day0.Add(time.Hour)
	light.Running = &elastico.Assignment{ConfigID: light.Profiles[0].Config.ID, GPUs: []string{"n0-g0"}}
	jobs := []elastico.Job{light, heavy}
	calm := calmOf(start, jobs)
	epoch := calmEpochs(t, cluster(node("n0", 1, 16)), jobs, start.Add(10*time.Minute), map[string]time.Time{"light": start})
	p := epoch(calm)
	if len(p.Actions) > 0 {
		t.Errorf("settled job displaced with nothing changed: %v", p.Actions)
	}
	if why := p.Decisions[1].Status.String(); !strings.Contains(why, "nothing has changed") {
		t.Errorf("heavy's status %q does not say why it waits", why)
	}
	// The same State, seen as the first epoch after a change.
	p = epoch(elastico.Calm{})
	if len(p.Actions) != 2 || p.Decisions[1].Assignment == nil {
		t.Errorf("after a change, heavy does not take light's GPU: %v", p.Actions)
	}
}

// TestCalmKeepsAStoppedJobStopped: a job preempted since the jobs last
// changed is not started again while nothing changes, even on a free GPU
// (the price noise that stopped it would start it where it ran); once a
// job arrives it starts.
func TestCalmKeepsAStoppedJobStopped(t *testing.T) {
	stopped := plainJob("stopped", 1, 1, 10, 100, day0)
	start := day0.Add(time.Hour)
	jobs := []elastico.Job{stopped}
	calm := calmOf(start, jobs)
	epoch := calmEpochs(t, cluster(node("n0", 1, 16)), jobs, start.Add(time.Minute), map[string]time.Time{"stopped": start})
	if p := epoch(calm); len(p.Actions) > 0 || !strings.Contains(p.Decisions[0].Status.String(), "nothing has changed") {
		t.Errorf("a job stopped since the last change: actions %v, status %q; want none, and why", p.Actions, p.Decisions[0].Status)
	}
	if p := epoch(elastico.Calm{}); len(p.Actions) != 1 || p.Decisions[0].Assignment == nil {
		t.Errorf("after a change the stopped job does not start: %v", p.Actions)
	}
}

// TestCalmHoldsAgainstAStartBesideIt: a settled job stays while nothing
// changes even where the plan would start another job on its node's other
// GPU whose CPU leaves it no room to go back (groups of changes are linked
// by GPUs; the node's CPU links them too).
func TestCalmHoldsAgainstAStartBesideIt(t *testing.T) {
	light := plainJob("light", 1, 1, 10, 100, day0)
	light.Profiles[0].Demand.CPU = 3
	heavy := plainJob("heavy", 1, 1, 10, 100, day0)
	heavy.Weight = 5
	heavy.Profiles[0].Demand.CPU = 2
	wide := plainJob("wide", 1, 1, 10, 100, day0)
	wide.Weight = 5
	wide.Profiles[0].Demand.CPU = 2
	start := day0.Add(time.Hour)
	light.Running = &elastico.Assignment{ConfigID: light.Profiles[0].Config.ID, GPUs: []string{"n0-g0"}}
	jobs := []elastico.Job{light, heavy, wide}
	n0 := node("n0", 2, 16)
	n0.CPU = 4 // light fits beside neither
	calm := calmOf(start, jobs)
	epoch := calmEpochs(t, cluster(n0), jobs, start.Add(10*time.Minute), map[string]time.Time{"light": start})
	p := epoch(calm)
	if d := p.Decisions[0]; d.Assignment == nil || len(d.Assignment.GPUs) != 1 || d.Assignment.GPUs[0] != "n0-g0" {
		t.Errorf("settled job displaced with nothing changed: %+v, actions %v", d.Assignment, p.Actions)
	}
	// After a change the market's plan stands: heavy and wide are worth more.
	p = epoch(elastico.Calm{})
	if p.Decisions[0].Assignment != nil || p.Decisions[1].Assignment == nil || p.Decisions[2].Assignment == nil {
		t.Errorf("after a change, heavy and wide do not take the node: %v", p.Actions)
	}
}

// calmOf is the Carry.Calm of an epoch at since that saw jobs: the jobs
// have not changed since.
func calmOf(since time.Time, jobs []elastico.Job) elastico.Calm {
	c := elastico.Calm{Since: since, Jobs: len(jobs)}
	for i := range jobs {
		c.Digest += idHash(jobs[i].ID)
	}
	return c
}

// calmEpochs returns the plan of one scheduler for jobs on cl at now, with
// Carry.Since as given and the Calm of the caller's choosing.
func calmEpochs(t *testing.T, cl elastico.Cluster, jobs []elastico.Job, now time.Time, since map[string]time.Time) func(elastico.Calm) *elastico.Plan {
	s, err := New(Config{Clock: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	return func(c elastico.Calm) *elastico.Plan {
		t.Helper()
		st := &elastico.State{Now: now, Cluster: cl, Jobs: jobs, Carry: elastico.Carry{Since: since, Calm: c}}
		p, err := s.Epoch(context.Background(), st)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
}

// TestCalmFreezesSettledJobs: in a calm epoch a settled job bids only
// where and as it runs (its other configurations priced out of reach,
// freezeSettled), so that the market's plan carries no move of it for
// revertGroups to undo; at the first epoch after a change it bids them
// all, and takes the better one.
func TestCalmFreezesSettledJobs(t *testing.T) {
	job := plainJob("job", 1, 1, 10, 100, day0)
	better := job.Profiles[0]
	better.Config.ID, better.Config.BatchSize, better.Throughput = "c2", 128, 200
	job.Profiles = append(job.Profiles, better)
	job.ReferenceBatch = 64
	start := day0.Add(time.Hour)
	job.Running = &elastico.Assignment{ConfigID: "c", GPUs: []string{"n0-g0"}}
	jobs := []elastico.Job{job}
	s, err := New(Config{Clock: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	epoch := func(c elastico.Calm) *elastico.Plan {
		t.Helper()
		st := &elastico.State{Now: start.Add(10 * time.Minute), Cluster: cluster(node("n0", 1, 16)), Jobs: jobs,
			Carry: elastico.Carry{Since: map[string]time.Time{"job": start}, Calm: c}}
		p, err := s.Epoch(context.Background(), st)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	p := epoch(calmOf(start, jobs))
	if len(p.Actions) > 0 {
		t.Errorf("settled job reshaped with nothing changed: %v", p.Actions)
	}
	if got := s.spare.base[1]; got != frozen {
		t.Errorf("in the calm, the settled job's other configuration costs %g to switch to, want %g (frozen)", got, float64(frozen))
	}
	p = epoch(elastico.Calm{})
	if len(p.Actions) != 1 || p.Decisions[0].Assignment == nil || p.Decisions[0].Assignment.ConfigID != "c2" {
		t.Errorf("after a change the job does not take its better configuration: %v", p.Actions)
	}
}
