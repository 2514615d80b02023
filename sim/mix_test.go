package sim

import (
	"context"
	"errors"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elastico/elastico"
)

var (
	mixOnce sync.Once
	mix     Mix
	mixErr  error
)

// testMix is 8 V100s and 8 K80s, built once per test binary.
func testMix(t testing.TB) Mix {
	t.Helper()
	mixOnce.Do(func() { mix, mixErr = GavelMix("v100:8,k80:8") }) // any case; String is canonical
	if mixErr != nil {
		t.Fatal(mixErr)
	}
	return mix
}

func TestGavelMix(t *testing.T) {
	m := testMix(t)
	if got := m.String(); got != "V100:8,K80:8" {
		t.Errorf("String = %q", got)
	}
	c, err := m.Cluster()
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, n := range c.Nodes {
		for _, g := range n.GPUs {
			count[g.Model]++
		}
	}
	if count["V100"] != 8 || count["K80"] != 8 || c.NumGPUs() != m.GPUs() {
		t.Errorf("cluster has %v", count)
	}
	if err := (&elastico.State{Now: time0, Cluster: c}).Validate(); err != nil {
		t.Errorf("cluster: %v", err)
	}
	for _, bad := range []string{"v100", "v100:0", "v100:8,v100:8", "a100:8", "v100:x"} {
		if _, err := GavelMix(bad); err == nil {
			t.Errorf("GavelMix(%q) accepted", bad)
		}
	}
}

var time0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// mixJobs binds two jobs of the shipped Gavel trace to the mix, both
// arriving at 0.
func mixJobs(t *testing.T) []Job {
	t.Helper()
	tr, err := ReadShipped("gavel/0e4a51.trace")
	if err != nil {
		t.Fatal(err)
	}
	jobs, _, err := testMix(t).Workload(tr, WorkloadOptions{Jobs: 2, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	for i := range jobs {
		jobs[i].Arrival = 0
	}
	return jobs
}

// onModel returns the index of job j's first one-GPU configuration on model.
func onModel(t *testing.T, j *Job, model string) int {
	t.Helper()
	for k := range j.Profiles {
		if p := &j.Profiles[k]; p.Hardware.GPUModel == model && p.Demand.GPUs == 1 && p.Demand.GPUMemory <= K80.Memory {
			return k
		}
	}
	t.Fatalf("job %s has no one-GPU %s configuration", j.ID, model)
	return -1
}

func TestMixWorkload(t *testing.T) {
	m := testMix(t)
	for _, j := range mixJobs(t) {
		ids := map[string]bool{}
		models := map[string]int{}
		for k, p := range j.Profiles {
			if ids[p.Config.ID] || p.Config.ID != j.Configs[k].ID || !strings.HasSuffix(p.Config.ID, "@"+p.Hardware.GPUModel) {
				t.Errorf("job %s: configuration %d: ID %q (variant %q), model %s", j.ID, k, p.Config.ID, j.Configs[k].ID, p.Hardware.GPUModel)
			}
			ids[p.Config.ID] = true
			models[p.Hardware.GPUModel]++
		}
		if models["V100"] == 0 || models["K80"] == 0 || !strings.HasSuffix(j.Configs[0].ID, "@V100") {
			t.Errorf("job %s: profiles per model %v, requested %s", j.ID, models, j.Configs[0].ID)
		}
		// The K80 profile of a configuration is the K80 truth's.
		k := onModel(t, &j, "K80")
		want, err := m[1].Truth.Config(j.Family.Name, j.Configs[k].LocalBatch, 1)
		if err != nil || want.Throughput != j.Configs[k].Throughput || want.Kind != j.Configs[k].Kind {
			t.Errorf("job %s: K80 variant %+v, the K80 truth's %+v (%v)", j.ID, j.Configs[k], want, err)
		}
	}
}

// place is a policy that starts each job under configuration cfgs[id] on
// GPUs gpus[id].
func place(cfgs map[string]string, gpus map[string][]string) elastico.Scheduler {
	return policyFunc(func(_ context.Context, st *elastico.State) (*elastico.Plan, error) {
		p := &elastico.Plan{}
		for _, j := range st.Jobs {
			d := elastico.Decision{JobID: j.ID, Assignment: j.Running}
			if j.Running == nil {
				a := &elastico.Assignment{ConfigID: cfgs[j.ID], GPUs: gpus[j.ID]}
				d.Assignment = a
				p.Actions = append(p.Actions, elastico.Action{Kind: elastico.Start, JobID: j.ID, To: a})
			}
			p.Decisions = append(p.Decisions, d)
		}
		return p, nil
	})
}

// TestMixRunsAtThePlacedModel: a job runs at the throughput of the model
// it is placed on, and two jobs sharing a K80 at the K80's co-location
// speed.
func TestMixRunsAtThePlacedModel(t *testing.T) {
	m := testMix(t)
	cl, err := m.Cluster()
	if err != nil {
		t.Fatal(err)
	}
	jobs := mixJobs(t)
	a := jobs[0]
	k := onModel(t, &a, "K80")
	run := func(jobs []Job, cfgs map[string]string, gpus map[string][]string) (*Result, error) {
		return Run(context.Background(), Config{Truth: m[0].Truth, Truths: m.Truths(), Cluster: cl, Jobs: jobs, Policy: place(cfgs, gpus), SMOversubscription: 2})
	}
	r, err := run([]Job{a}, map[string]string{a.ID: a.Configs[k].ID}, map[string][]string{a.ID: {"k80-gpu0000"}})
	if err != nil {
		t.Fatal(err)
	}
	want := a.Work / a.Configs[k].Goodput(false)
	if got := r.Jobs[0].Finish; math.Abs(got-want) > 1e-6*want {
		t.Errorf("alone on a K80: finished at %g, want %g (work / K80 goodput)", got, want)
	}

	b := a
	b.ID = a.ID + "-twin"
	r, err = run([]Job{a, b}, map[string]string{a.ID: a.Configs[k].ID, b.ID: b.Configs[k].ID},
		map[string][]string{a.ID: {"k80-gpu0000"}, b.ID: {"k80-gpu0000"}})
	if err != nil {
		t.Fatal(err)
	}
	kind := a.Configs[k].Kind
	s := m[1].Truth.kindSpeed(kind, kind)
	if v := m[0].Truth.kindSpeed(kind, kind); !(s < 1) || v == s {
		t.Fatalf("K80 twin speed %g, the V100 truth's for the same kind index %g: the test cannot tell them apart", s, v)
	}
	want = a.Work / (a.Configs[k].Goodput(false) * s)
	if got := r.Jobs[0].Finish; math.Abs(got-want) > 1e-6*want {
		t.Errorf("twins on a K80: finished at %g, want %g (the K80 truth's speed %g)", got, want, s)
	}

	// A V100 configuration on a K80 breaks the Capacity invariant.
	v := onModel(t, &a, "V100")
	_, err = run([]Job{a}, map[string]string{a.ID: a.Configs[v].ID}, map[string][]string{a.ID: {"k80-gpu0000"}})
	var ie *InvariantError
	if !errors.As(err, &ie) || ie.Invariant != Capacity || !strings.Contains(ie.Detail, "profiled for V100") {
		t.Errorf("V100 configuration on a K80: %v, want a Capacity invariant error", err)
	}
}
