package baseline

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/sim"
	"github.com/google/go-cmp/cmp"
)

// prof is a one-replica-per-GPU profile.
func prof(id string, gpus int, sm, mem float64) elastico.Profile {
	return elastico.Profile{
		Family: "f", Config: elastico.Configuration{ID: id, GPUs: gpus, BatchSize: 32},
		Demand:     elastico.Demand{GPUs: gpus, SM: sm, GPUMemory: mem, CPU: 4, RAM: 12},
		Throughput: 100,
	}
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func job(id string, arrival int, attained float64, running *elastico.Assignment, fam ...elastico.Profile) elastico.Job {
	return elastico.Job{ID: id, Profiles: fam, Arrival: t0.Add(time.Duration(arrival) * time.Second), Attained: attained, Running: running}
}

func cluster(nodes, per int) elastico.Cluster {
	c, _ := sim.V100.Cluster(nodes * per)
	return c
}

// placed summarizes a plan: job → "config@gpu,gpu" or "" when waiting.
func placed(p *elastico.Plan) map[string]string {
	out := map[string]string{}
	for _, d := range p.Decisions {
		s := ""
		if a := d.Assignment; a != nil {
			s = a.ConfigID + "@"
			for i, g := range a.GPUs {
				if i > 0 {
					s += ","
				}
				s += g
			}
		}
		out[d.JobID] = s
	}
	return out
}

func TestPolicies(t *testing.T) {
	run := func(id, cfg string, gpus ...string) *elastico.Assignment {
		return &elastico.Assignment{ConfigID: cfg, GPUs: gpus}
	}
	c16 := cluster(2, 8)
	tests := []struct {
		name   string
		policy elastico.Scheduler
		state  elastico.State
		want   map[string]string
	}{
		{
			name:   "volcano: FIFO gangs, a big gang that does not fit is passed over",
			policy: Volcano{},
			state: elastico.State{Cluster: c16, Jobs: []elastico.Job{
				job("run", 0, 0, run("run", "c", "gpu0000", "gpu0001", "gpu0002", "gpu0003", "gpu0004", "gpu0005", "gpu0006", "gpu0007", "gpu0008", "gpu0009"), prof("c", 10, 0.5, 4)),
				job("big", 1, 0, nil, prof("c", 8, 0.5, 4)),
				job("small", 2, 0, nil, prof("c", 4, 0.5, 4), prof("x", 1, 0.5, 4)),
			}},
			want: map[string]string{
				"run":   "c@gpu0000,gpu0001,gpu0002,gpu0003,gpu0004,gpu0005,gpu0006,gpu0007,gpu0008,gpu0009",
				"big":   "",
				"small": "c@gpu0010,gpu0011,gpu0012,gpu0013",
			},
		},
		{
			name:   "volcano: a gang goes to the fullest node that holds it",
			policy: Volcano{},
			state: elastico.State{Cluster: c16, Jobs: []elastico.Job{
				job("run", 0, 0, run("run", "c", "gpu0000", "gpu0001", "gpu0002", "gpu0003", "gpu0004", "gpu0005"), prof("c", 6, 0.5, 4)),
				job("two", 1, 0, nil, prof("c", 2, 0.5, 4)),
			}},
			want: map[string]string{"run": "c@gpu0000,gpu0001,gpu0002,gpu0003,gpu0004,gpu0005", "two": "c@gpu0006,gpu0007"},
		},
		{
			name:   "lucid: free GPUs first, then a partner within the SM and memory rule",
			policy: &Lucid{},
			state: elastico.State{Cluster: cluster(1, 2), Jobs: []elastico.Job{
				job("heavy", 0, 0, run("heavy", "c", "gpu0000"), prof("c", 1, 0.8, 10)),
				job("light", 0, 0, run("light", "c", "gpu0001"), prof("c", 1, 0.3, 4)),
				job("new", 1, 0, nil, prof("c", 1, 0.4, 6)),
				job("fat", 2, 0, nil, prof("c", 1, 0.1, 15)),
			}},
			want: map[string]string{"heavy": "c@gpu0000", "light": "c@gpu0001", "new": "c@gpu0001", "fat": ""},
		},
		{
			name:   "tiresias: less attained service preempts more",
			policy: Tiresias{},
			state: elastico.State{Cluster: cluster(1, 2), Jobs: []elastico.Job{
				job("old", 0, 50000, run("old", "c", "gpu0000", "gpu0001"), prof("c", 2, 0.5, 4)),
				job("new", 10, 0, nil, prof("c", 1, 0.5, 4)),
			}},
			want: map[string]string{"old": "", "new": "c@gpu0000"},
		},
		{
			name:   "tiresias: within a queue, first come first served",
			policy: Tiresias{},
			state: elastico.State{Cluster: cluster(1, 1), Jobs: []elastico.Job{
				job("b", 5, 0, nil, prof("c", 1, 0.5, 4)),
				job("a", 1, 100, nil, prof("c", 1, 0.5, 4)),
			}},
			want: map[string]string{"a": "c@gpu0000", "b": ""},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.policy.Epoch(context.Background(), &tc.state)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, placed(p)); diff != "" {
				t.Errorf("placement (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPoliciesRejectBadState(t *testing.T) {
	bad := []elastico.State{
		{Cluster: cluster(1, 1), Jobs: []elastico.Job{job("a", 0, 0, nil)}},
		{Cluster: cluster(1, 1), Jobs: []elastico.Job{job("a", 0, 0, &elastico.Assignment{ConfigID: "zz", GPUs: []string{"gpu0000"}}, prof("c", 1, 0.5, 4))}},
		{Cluster: cluster(1, 1), Jobs: []elastico.Job{job("a", 0, 0, &elastico.Assignment{ConfigID: "c", GPUs: []string{"gpu9"}}, prof("c", 1, 0.5, 4))}},
	}
	for _, p := range []elastico.Scheduler{Volcano{}, &Lucid{}, Tiresias{}, Pollux{}, &Gavel{}, Volcano{AnyModel: true}, &Lucid{MaxPairSM: 2}, &Lucid{Prior: -time.Second}, Tiresias{Thresholds: []float64{5, 1}}, Pollux{P: math.NaN()}} {
		for i := range bad {
			if _, err := p.Epoch(context.Background(), &bad[i]); err == nil {
				t.Errorf("%T: bad state %d accepted", p, i)
			}
		}
	}
}

// TestPoliciesInTheSimulator replays a window of the shipped Gavel trace
// under every baseline: the simulator's invariants check their plans.
func TestPoliciesInTheSimulator(t *testing.T) {
	truth, err := sim.GavelTruth("V100")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := sim.ReadShipped("gavel/0e4a51.trace")
	if err != nil {
		t.Fatal(err)
	}
	jobs, _, err := truth.Workload(tr, sim.WorkloadOptions{GPUs: 16, Load: 1.5, Jobs: 60, Seed: 1, InferenceFraction: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	cl, _ := sim.V100.Cluster(16)
	for name, p := range map[string]elastico.Scheduler{VolcanoName: Volcano{}, LucidName: &Lucid{}, TiresiasName: Tiresias{}} {
		r, err := sim.Run(context.Background(), sim.Config{Truth: truth, Cluster: cl, Policy: p, Name: name, Jobs: jobs})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		m := r.Metrics()
		if m["unfinished"] != 0 || !(m["jct_avg"] > 0) {
			t.Errorf("%s: %v unfinished, avg JCT %g", name, m["unfinished"], m["jct_avg"])
		}
		for _, j := range r.Jobs {
			if name != TiresiasName && (j.Preemptions > 0 || j.Migrations > 0 || j.Reconfigs > 0) {
				t.Errorf("%s moved job %s", name, j.ID)
			}
		}
	}
}
