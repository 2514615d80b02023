package baseline

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/rst"
	"github.com/elastico/elastico/sim"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// scaling returns a family with one configuration per GPU count of tputs
// ("x1", "x2", ...), each with the given throughput (samples/s).
func scaling(tputs map[int]float64) []elastico.Profile {
	var fam []elastico.Profile
	for _, n := range []int{1, 2, 3, 4, 6, 8, 12, 16} {
		if t, ok := tputs[n]; ok {
			fam = append(fam, elastico.Profile{
				Family: "f", Config: elastico.Configuration{ID: fmt.Sprintf("x%d", n), GPUs: n, BatchSize: 32 * n},
				Demand:     elastico.Demand{GPUs: n, SM: 1, GPUMemory: 4, CPU: 4, RAM: 12},
				Throughput: t,
			})
		}
	}
	return fam
}

// batches returns a family with two batch sizes per GPU count: at one GPU
// the smaller has the higher goodput (100 against 150 × 0.6), at two the
// larger (300 × 0.7 against 200 × 0.9).
func batches() []elastico.Profile {
	p := func(id string, gpus int, tput, eff float64) elastico.Profile {
		return elastico.Profile{Family: "f", Config: elastico.Configuration{ID: id, GPUs: gpus},
			Demand: elastico.Demand{GPUs: gpus, SM: 1, GPUMemory: 4, CPU: 4, RAM: 12}, Throughput: tput, Efficiency: eff}
	}
	return []elastico.Profile{p("b64", 1, 150, 0.6), p("b32", 1, 100, 1), p("b64x2", 2, 200, 0.9), p("b128x2", 2, 300, 0.7)}
}

// held returns an assignment of configuration xN on GPUs gpu<first>...
func held(n, first int) *elastico.Assignment {
	a := &elastico.Assignment{ConfigID: fmt.Sprintf("x%d", n)}
	for g := first; g < first+n; g++ {
		a.GPUs = append(a.GPUs, fmt.Sprintf("gpu%04d", g))
	}
	return a
}

// counts summarizes a plan: job → its configuration, "" when it waits.
func counts(p *elastico.Plan) map[string]string {
	out := map[string]string{}
	for _, d := range p.Decisions {
		out[d.JobID] = ""
		if d.Assignment != nil {
			out[d.JobID] = d.Assignment.ConfigID
		}
	}
	return out
}

var (
	linear = map[int]float64{1: 100, 2: 200, 4: 400, 8: 800}
	flat   = map[int]float64{1: 100, 2: 100, 4: 100, 8: 100}
)

func TestPollux(t *testing.T) {
	hour := 3600
	now := t0.Add(2 * time.Hour)
	tests := []struct {
		name     string
		policy   Pollux
		gpus     int
		jobs     []elastico.Job
		restarts map[string]int
		want     map[string]string
	}{
		{
			name: "a job that scales gets more GPUs than one that does not",
			gpus: 8,
			jobs: []elastico.Job{
				job("flat", 0, 0, nil, scaling(flat)...),
				job("good", 1, 0, nil, scaling(linear)...),
			},
			want: map[string]string{"good": "x4", "flat": "x1"},
		},
		{
			name:   "p = 1 gives every GPU to the larger sum of speedups, leaving a job without",
			policy: Pollux{P: 1},
			gpus:   4,
			jobs: []elastico.Job{
				job("a", 0, 0, nil, scaling(map[int]float64{1: 100, 2: 200, 4: 410})...),
				job("b", 1, 0, nil, scaling(map[int]float64{1: 100, 2: 190, 4: 200})...),
			},
			want: map[string]string{"a": "x4", "b": ""},
		},
		{
			name: "p = −1 on the same jobs runs both",
			gpus: 4,
			jobs: []elastico.Job{
				job("a", 0, 0, nil, scaling(map[int]float64{1: 100, 2: 200, 4: 410})...),
				job("b", 1, 0, nil, scaling(map[int]float64{1: 100, 2: 190, 4: 200})...),
			},
			want: map[string]string{"a": "x2", "b": "x2"},
		},
		{
			name: "p = −1: two waiting jobs each get one of a running job's four GPUs",
			gpus: 4,
			jobs: []elastico.Job{
				job("run", 0, 0, held(4, 0), scaling(linear)...),
				job("w1", hour, 0, nil, scaling(flat)...),
				job("w2", hour+1, 0, nil, scaling(flat)...),
			},
			want: map[string]string{"run": "x2", "w1": "x1", "w2": "x1"},
		},
		{
			name:   "p = −20: the waiting job's 10⁻³ swamps float64, and the tie keeps the running job",
			policy: Pollux{P: -20},
			gpus:   1,
			jobs: []elastico.Job{
				job("waits", hour, 0, nil, scaling(flat)...),
				job("runs", 0, 3600, held(1, 0), scaling(flat)...),
			},
			want: map[string]string{"runs": "x1", "waits": ""},
		},
		{
			name: "restart penalty: a young job stays on 2 GPUs when 4 gain 2.5 %",
			gpus: 4,
			jobs: []elastico.Job{job("a", 2*hour-600, 0, held(2, 0), scaling(map[int]float64{1: 100, 2: 200, 4: 205})...)},
			want: map[string]string{"a": "x2"},
		},
		{
			name: "restart penalty: an old job grows to 4 GPUs for the same 2.5 %",
			gpus: 4,
			jobs: []elastico.Job{job("a", -100*hour, 0, held(2, 0), scaling(map[int]float64{1: 100, 2: 200, 4: 205})...)},
			want: map[string]string{"a": "x4"},
		},
		{
			name:     "restart penalty: an old job that has restarted often stays where it is",
			gpus:     4,
			jobs:     []elastico.Job{job("a", -10*hour, 0, held(2, 0), scaling(map[int]float64{1: 100, 2: 200, 4: 205})...)},
			restarts: map[string]int{"a": 60},
			want:     map[string]string{"a": "x2"},
		},
		{
			name: "the restart time scales the penalty: with a 10-minute restart the old job stays",
			gpus: 4,
			jobs: []elastico.Job{func() elastico.Job {
				j := job("a", -10*hour, 0, held(2, 0), scaling(map[int]float64{1: 100, 2: 200, 4: 205})...)
				j.RestartTime = 10 * time.Minute
				return j
			}()},
			restarts: map[string]int{"a": 2},
			want:     map[string]string{"a": "x2"},
		},
		{
			name: "without a floor, a job whose second GPU adds little runs on one",
			gpus: 3,
			jobs: []elastico.Job{
				job("a", 0, 0, nil, scaling(map[int]float64{1: 100, 2: 110})...),
				job("b", 1, 0, nil, scaling(map[int]float64{1: 100, 2: 200})...),
			},
			want: map[string]string{"a": "x1", "b": "x2"},
		},
		{
			name: "a floor above its one-GPU throughput gives it two",
			gpus: 3,
			jobs: []elastico.Job{func() elastico.Job {
				j := job("a", 0, 0, nil, scaling(map[int]float64{1: 100, 2: 110})...)
				j.Floor = 105
				return j
			}(), job("b", 1, 0, nil, scaling(map[int]float64{1: 100, 2: 200})...)},
			want: map[string]string{"a": "x2", "b": "x1"},
		},
		{
			name: "on one GPU, the batch size of the higher goodput (throughput × efficiency)",
			gpus: 1,
			jobs: []elastico.Job{job("a", 0, 0, nil, batches()...)},
			want: map[string]string{"a": "b32"},
		},
		{
			name: "on two GPUs, the other batch size has the higher goodput",
			gpus: 2,
			jobs: []elastico.Job{job("a", 0, 0, nil, batches()...)},
			want: map[string]string{"a": "b128x2"},
		},
		{
			name: "a job whose every configuration needs more GPUs than the cluster has waits",
			gpus: 4,
			jobs: []elastico.Job{job("big", 0, 0, nil, scaling(map[int]float64{8: 800})...), job("small", 1, 0, nil, scaling(linear)...)},
			want: map[string]string{"big": "", "small": "x4"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := sim.V100.Cluster(tc.gpus)
			st := &elastico.State{Now: now, Cluster: c, Jobs: tc.jobs, Carry: elastico.Carry{Restarts: tc.restarts}}
			p, err := tc.policy.Epoch(context.Background(), st)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, counts(p)); diff != "" {
				t.Errorf("configurations (-want +got):\n%s", diff)
			}
			if err := checkPlan(st, p); err != nil {
				t.Error(err)
			}
		})
	}
}

// checkPlan checks what every Pollux plan must satisfy: a decision per job
// in order, configurations of the job's family on as many distinct GPUs of
// the cluster, no GPU held by two jobs, and actions that match.
func checkPlan(st *elastico.State, p *elastico.Plan) error {
	if len(p.Decisions) != len(st.Jobs) {
		return fmt.Errorf("%d decisions for %d jobs", len(p.Decisions), len(st.Jobs))
	}
	gpus := map[string]bool{}
	for _, n := range st.Cluster.Nodes {
		for _, g := range n.GPUs {
			gpus[g.ID] = true
		}
	}
	holder := map[string]string{}
	changed := 0
	for i, d := range p.Decisions {
		j := &st.Jobs[i]
		if d.JobID != j.ID {
			return fmt.Errorf("decision %d is for %q, want %q", i, d.JobID, j.ID)
		}
		a := d.Assignment
		if a == nil {
			if j.Running != nil {
				changed++
			}
			continue
		}
		prof, ok := j.Profile(a.ConfigID)
		if !ok || prof.Demand.GPUs != len(a.GPUs) {
			return fmt.Errorf("job %s: configuration %q on %d GPUs", j.ID, a.ConfigID, len(a.GPUs))
		}
		for _, g := range a.GPUs {
			if !gpus[g] {
				return fmt.Errorf("job %s: GPU %q is not in the cluster", j.ID, g)
			}
			if h, ok := holder[g]; ok {
				return fmt.Errorf("GPU %s holds %s and %s", g, h, j.ID)
			}
			holder[g] = j.ID
		}
		if j.Running == nil || j.Running.ConfigID != a.ConfigID || !sameGPUs(j.Running.GPUs, a.GPUs) {
			changed++
		}
	}
	if changed != len(p.Actions) {
		return fmt.Errorf("%d assignments change, %d actions", changed, len(p.Actions))
	}
	return nil
}

func TestPolluxActionsAndRestarts(t *testing.T) {
	c, _ := sim.V100.Cluster(8)
	grow := map[int]float64{1: 100, 2: 200, 4: 400}
	eight := scaling(map[int]float64{8: 800}) // never fits beside the others
	st := &elastico.State{Now: t0.Add(100 * time.Hour), Cluster: c, Jobs: []elastico.Job{
		job("grows", 0, 0, held(2, 0), scaling(grow)...),     // 2 → 4 GPUs, in place
		job("new", 3600, 0, nil, scaling(flat)...),           // first start
		job("resumes", 7200, 10, nil, scaling(flat)...),      // preempted before
		job("stays", 1, 0, held(1, 7), scaling(flat)...),     // nothing changes
		job("stays-too", 2, 0, held(1, 6), scaling(flat)...), // nothing changes, no entry yet
		job("waits", 9000, 0, nil, eight...),                 // never ran
		job("waits-again", 9001, 0, nil, eight...),           // preempted before
	}, Carry: elastico.Carry{Restarts: map[string]int{"grows": 1, "resumes": 2, "stays": 3, "waits-again": 4, "finished": 9}}}
	p, err := Pollux{}.Epoch(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkPlan(st, p); err != nil {
		t.Fatal(err)
	}
	kinds := map[string]string{}
	for _, a := range p.Actions {
		kinds[a.JobID] = a.Kind.String()
	}
	if diff := cmp.Diff(map[string]string{"grows": "reconfigure", "new": "start", "resumes": "start"}, kinds); diff != "" {
		t.Errorf("actions (-want +got):\n%s\n%v", diff, counts(p))
	}
	want := map[string]int{"grows": 2, "new": 0, "resumes": 3, "stays": 3, "stays-too": 0, "waits-again": 4}
	if diff := cmp.Diff(want, p.Carry.Restarts); diff != "" {
		t.Errorf("Carry.Restarts (-want +got):\n%s", diff)
	}
	if st.Carry.Restarts["grows"] != 1 {
		t.Error("the State's Carry was changed")
	}
}

func TestPolluxSpreadJobsShareNoNode(t *testing.T) {
	// Three nodes of 8: a, spread over nodes 0 and 1, leaves node 1 four
	// GPUs that b, allowed to spread, may not use for its 12, so b runs on
	// node 2's 8.
	c, _ := sim.V100.Cluster(24)
	twelve := map[int]float64{8: 800, 12: 1200}
	st := &elastico.State{Now: t0.Add(10 * time.Hour), Cluster: c, Jobs: []elastico.Job{
		job("a", 0, 0, held(12, 0), scaling(twelve)...),
		job("b", 1, 0, nil, scaling(twelve)...),
	}}
	for i := range st.Jobs {
		st.Jobs[i].Spread = true
	}
	p, err := Pollux{}.Epoch(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkPlan(st, p); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"a": "x12", "b": "x8"}, counts(p)); diff != "" {
		t.Errorf("configurations (-want +got):\n%s", diff)
	}
	if b := p.Decisions[1].Assignment; b == nil || b.GPUs[0] != "gpu0016" {
		t.Errorf("b runs on %v, want node 2's GPUs", b)
	}
}

func TestPolluxPlacesOnEveryModel(t *testing.T) {
	// Two V100s and two K80s, four one-GPU jobs whose best configuration
	// is on a V100: all four run, and the V100s go to the two it speeds up
	// most (CycleGAN 8.8×, ResNet-50 7.2× over a K80; A3C 2.1×,
	// Recommendation 1.05×), though the others come first in Pollux's order.
	want := map[string]string{"A3C": "K80", "Recommendation": "K80", "ResNet-50": "V100", "CycleGAN": "V100"}
	st := &elastico.State{Now: t0.Add(time.Hour), Cluster: mixCluster(2, 2)}
	for k, m := range []string{"A3C", "Recommendation", "ResNet-50", "CycleGAN"} {
		fam, err := rst.GavelFamilyOn(m, "V100", "K80")
		if err != nil {
			t.Fatal(err)
		}
		st.Jobs = append(st.Jobs, job(m, k, 0, nil, fam...))
	}
	p, err := Pollux{}.Epoch(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkPlan(st, p); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for i, d := range p.Decisions {
		got[d.JobID] = ""
		if a := d.Assignment; a != nil {
			prof, _ := st.Jobs[i].Profile(a.ConfigID)
			got[d.JobID] = prof.Hardware.GPUModel
			if len(a.GPUs) != 1 || a.GPUs[0][:1] != strings.ToLower(prof.Hardware.GPUModel[:1]) {
				t.Errorf("%s: %s on %v", d.JobID, a.ConfigID, a.GPUs)
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GPU models (-want +got):\n%s", diff)
	}
}

func TestPolluxRejectsBadInput(t *testing.T) {
	c, _ := sim.V100.Cluster(4)
	good := func() *elastico.State {
		return &elastico.State{Now: t0.Add(time.Hour), Cluster: c, Jobs: []elastico.Job{job("a", 0, 0, nil, scaling(linear)...)}}
	}
	tests := []struct {
		name   string
		policy Pollux
		mutate func(*elastico.State)
		want   []string
	}{
		{"NaN exponent", Pollux{P: math.NaN()}, nil, []string{"Pollux.P"}},
		{"infinite exponent", Pollux{P: math.Inf(-1)}, nil, []string{"Pollux.P"}},
		{"negative restart time", Pollux{RestartTime: -time.Second}, nil, []string{"Pollux.RestartTime"}},
		{"job's negative restart time", Pollux{}, func(s *elastico.State) { s.Jobs[0].RestartTime = -time.Second }, []string{`"a"`, "RestartTime"}},
		{"zero Now", Pollux{}, func(s *elastico.State) { s.Now = time.Time{} }, []string{"State.Now"}},
		{"empty family", Pollux{}, func(s *elastico.State) { s.Jobs[0].Profiles = nil }, []string{`"a"`, "family"}},
		{"nil state", Pollux{}, nil, []string{"nil State"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := good()
			if tc.mutate != nil {
				tc.mutate(st)
			}
			if tc.name == "nil state" {
				st = nil
			}
			_, err := tc.policy.Epoch(context.Background(), st)
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not name %s", err, w)
				}
			}
		})
	}
}

// checked wraps a policy and checks every plan it makes.
type checked struct {
	elastico.Scheduler
	t *testing.T
}

func (c *checked) Epoch(ctx context.Context, st *elastico.State) (*elastico.Plan, error) {
	p, err := c.Scheduler.Epoch(ctx, st)
	if err == nil {
		if e := checkPlan(st, p); e != nil {
			c.t.Errorf("at %v: %v", st.Now, e)
		}
		// Same State, same Plan.
		if q, _ := c.Scheduler.Epoch(ctx, st); !reflect.DeepEqual(p, q) {
			c.t.Errorf("at %v: two plans for one State (-first +second):\n%s", st.Now, cmp.Diff(p, q))
		}
	}
	return p, err
}

// TestPolluxInTheSimulator replays a window of Pollux's workloads on T4s
// and of Gavel's trace on V100s: every plan is checked (no GPU shared,
// actions matching, the same Plan for the same State), and two runs give
// the same result.
func TestPolluxInTheSimulator(t *testing.T) {
	for _, tc := range []struct {
		trace string
		truth func() (*sim.Truth, error)
		gpu   sim.GPUSpec
	}{
		{sim.ShippedPolluxAll, sim.PolluxTruth, sim.T4},
		{"gavel/0e4a51.trace", func() (*sim.Truth, error) { return sim.GavelTruth("V100") }, sim.V100},
	} {
		t.Run(tc.trace, func(t *testing.T) {
			truth, err := tc.truth()
			if err != nil {
				t.Fatal(err)
			}
			tr, err := sim.ReadShipped(tc.trace)
			if err != nil {
				t.Fatal(err)
			}
			jobs, _, err := truth.Workload(tr, sim.WorkloadOptions{GPUs: 16, Load: 1.5, Jobs: 60, Seed: 2})
			if err != nil {
				t.Fatal(err)
			}
			cl, _ := tc.gpu.Cluster(16)
			var metrics []map[string]float64
			// The first run checks every plan, the second runs bare.
			for _, p := range []elastico.Scheduler{&checked{Scheduler: Pollux{}, t: t}, Pollux{}} {
				r, err := sim.Run(context.Background(), sim.Config{Truth: truth, Cluster: cl, Policy: p, Name: PolluxName, Jobs: jobs, Epoch: time.Minute, AllowFlaps: true})
				if err != nil {
					t.Fatal(err)
				}
				m := r.Metrics()
				if m["unfinished"] != 0 || !(m["jct_avg"] > 0) {
					t.Errorf("%v unfinished, avg JCT %g", m["unfinished"], m["jct_avg"])
				}
				delete(m, "epoch_ms") // wall-clock
				delete(m, "epoch_p99_ms")
				metrics = append(metrics, m)
			}
			if diff := cmp.Diff(metrics[0], metrics[1], cmpopts.EquateNaNs()); diff != "" {
				t.Errorf("two runs differ (-first +second):\n%s", diff)
			}
		})
	}
}
