package sim_test

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/pds"
	"github.com/elastico/elastico/sim"
	"github.com/elastico/elastico/sim/baseline"
)

// fastest returns the shortest time job j could take: alone, under its
// fastest configuration and placement (sharing only slows a job down).
func fastest(j *sim.Job) float64 {
	best := 0.0
	for i := range j.Configs {
		best = math.Max(best, math.Max(j.Configs[i].Goodput(false), j.Configs[i].Goodput(true)))
	}
	return j.Work / best
}

// A fixed batch submitted at once: makespan and work per GPU-hour are
// bounded as a perfect packer is, and they separate a policy that
// reshapes jobs (pds) from one that runs what was asked (volcano).
func TestSaturatedBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("runs pds")
	}
	truth, err := sim.GavelTruth("V100")
	if err != nil {
		t.Fatal(err)
	}
	trace, err := sim.ReadShipped("gavel/0e4a51.trace")
	if err != nil {
		t.Fatal(err)
	}
	newPDS := func() (elastico.Scheduler, error) { return pds.New(pds.Config{}) }
	e := &sim.Experiment{
		Truth: truth, Trace: trace, GPUs: 8, Seeds: []uint64{1, 2, 3, 4},
		Workload: sim.WorkloadOptions{Jobs: 64, Saturated: true},
		Policies: []sim.Policy{
			{Name: "pds", New: newPDS},
			{Name: baseline.VolcanoName, New: func() (elastico.Scheduler, error) { return baseline.Volcano{}, nil }},
		},
		Run: sim.Config{Epoch: 60e9, Epochs: sim.EpochsOnChange, AllowFlaps: true},
	}
	out, err := e.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for s, seed := range e.Seeds {
		jobs, st, err := e.Jobs(seed)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Saturated || jobs[len(jobs)-1].Arrival != 0 {
			t.Fatalf("seed %d: the batch is not submitted at once (last arrival %g s)", seed, jobs[len(jobs)-1].Arrival)
		}
		longest := 0.0
		for i := range jobs {
			longest = math.Max(longest, fastest(&jobs[i]))
		}
		w := map[string]float64{}
		for p, name := range out.Policies {
			r := out.Results[p][s]
			m := r.Metrics()
			if r.Makespan < longest*(1-1e-9) {
				t.Errorf("%s, seed %d: makespan %.0f s, shorter than the longest job's fastest run alone, %.0f s", name, seed, r.Makespan, longest)
			}
			w[name] = m["work_per_gpu_h"]
			t.Logf("%s seed %d: makespan %.1f h, longest %.1f h, W %.3f, sum min %.1f GPU-h, jct %.1f", name, seed, r.Makespan/3600, longest/3600, w[name], r.MinGPUTime/3600, m["jct_avg"])
			if !(w[name] > 0) {
				t.Errorf("%s, seed %d: work per GPU-hour %g", name, seed, w[name])
			}
		}
		// Volcano shares no GPU: a perfect packer that shares none reaches 1.
		if w[baseline.VolcanoName] > 1+1e-9 {
			t.Errorf("seed %d: volcano does %g GPU-hours of work per GPU-hour, above the unshared bound of 1", seed, w[baseline.VolcanoName])
		}
		if w["pds"] <= w[baseline.VolcanoName] {
			t.Errorf("seed %d: work per GPU-hour: pds %g, volcano %g; reshaping should do more", seed, w["pds"], w[baseline.VolcanoName])
		}
		// pds on GPUs it may not share is held to the same bound.
		cluster, err := truth.GPU.Cluster(e.GPUs)
		if err != nil {
			t.Fatal(err)
		}
		for n := range cluster.Nodes {
			for g := range cluster.Nodes[n].GPUs {
				cluster.Nodes[n].GPUs[g].Shared = false
			}
		}
		pol, err := newPDS()
		if err != nil {
			t.Fatal(err)
		}
		cfg := e.Run
		cfg.Truth, cfg.Cluster, cfg.Policy, cfg.Name, cfg.Jobs, cfg.AllowFlaps = truth, cluster, pol, "pds-unshared", jobs, true
		r, err := sim.Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if x := r.Metrics()["work_per_gpu_h"]; !(x > 0 && x <= 1+1e-9) || r.Makespan < longest*(1-1e-9) {
			t.Errorf("seed %d: pds on unshared GPUs: work per GPU-hour %g (bound 1), makespan %.0f s (at least %.0f)", seed, x, r.Makespan, longest)
		}
	}
	s := sim.Summarize(out, baseline.VolcanoName)
	if !s.Saturated {
		t.Error("the summary does not say the batch was saturated")
	}
	var b bytes.Buffer
	if err := sim.WriteTable(&b, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"makespan (h)", "work/GPU-h", "makespan gain vs volcano", "submitted at t = 0"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "thr gain") {
		t.Errorf("a saturated table reports throughput over an arrival window it has not:\n%s", b.String())
	}
	e.Workload.Load = 1
	if _, _, err := e.Jobs(1); err == nil || !strings.Contains(err.Error(), "Load") {
		t.Errorf("a saturated batch at load 1: %v, want an error naming Load", err)
	}
}
