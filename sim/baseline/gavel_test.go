package baseline

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/sim"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// mixCluster is one node of v100s and one of k80s, GPUs "v0".. and "k0"...
func mixCluster(v100, k80 int) elastico.Cluster {
	node := func(id, model string, n int) elastico.Node {
		nd := elastico.Node{ID: id, CPU: 64, RAM: 512}
		for k := range n {
			nd.GPUs = append(nd.GPUs, elastico.GPU{ID: id[:1] + string(rune('0'+k)), Model: model, Memory: 16})
		}
		return nd
	}
	return elastico.Cluster{Nodes: []elastico.Node{node("v", "V100", v100), node("k", "K80", k80)}}
}

// mixJob is a one-GPU job running v samples/s on a V100 and k on a K80.
func mixJob(id string, arrival int, v, k float64) elastico.Job {
	pv := prof("b32@V100", 1, 0.5, 4)
	pv.Hardware.GPUModel, pv.Throughput = "V100", v
	pk := prof("b32@K80", 1, 0.5, 4)
	pk.Hardware.GPUModel, pk.Throughput = "K80", k
	return job(id, arrival, 0, nil, pv, pk)
}

// gavelRun replays epochs every minute for the given time on jobs that
// never finish, applying each plan, and returns the seconds each job ran
// on each model.
func gavelRun(t *testing.T, g *Gavel, st elastico.State, d time.Duration) map[string]map[string]float64 {
	t.Helper()
	ran := map[string]map[string]float64{}
	model := map[string]string{}
	for _, n := range st.Cluster.Nodes {
		for _, x := range n.GPUs {
			model[x.ID] = x.Model
		}
	}
	for now := time.Duration(0); now < d; now += time.Minute {
		st.Now = t0.Add(now)
		p, err := g.Epoch(context.Background(), &st)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkPlan(&st, p); err != nil {
			t.Fatalf("at %v: %v", now, err)
		}
		for i, dc := range p.Decisions {
			st.Jobs[i].Running = dc.Assignment
			if a := dc.Assignment; a != nil {
				if ran[dc.JobID] == nil {
					ran[dc.JobID] = map[string]float64{}
				}
				ran[dc.JobID][model[a.GPUs[0]]] += 60
			}
		}
	}
	return ran
}

// TestGavelRoundsRealizeTheAllocation runs four jobs on one V100 and one
// K80 for many rounds: the time each gets on each model approaches the
// LP's allocation (TestMaxMinComparativeAdvantage's instance).
func TestGavelRoundsRealizeTheAllocation(t *testing.T) {
	st := elastico.State{Cluster: mixCluster(1, 1), Jobs: []elastico.Job{
		mixJob("a", 0, 4, 1), mixJob("b", 1, 4, 1), mixJob("c", 2, 1.2, 1), mixJob("d", 3, 1.2, 1),
	}}
	g := &Gavel{}
	d := 200 * GavelRound
	ran := gavelRun(t, g, st, d)
	tput := [][]float64{{4, 1}, {4, 1}, {1.2, 1}, {1.2, 1}}
	x, _, err := maxMin(coefs(tput, []float64{1, 1, 1, 1}, []float64{1, 1}), []float64{1, 1, 1, 1}, []float64{1, 1})
	if err != nil {
		t.Fatal(err)
	}
	for j, id := range []string{"a", "b", "c", "d"} {
		for m, model := range []string{"V100", "K80"} {
			got := ran[id][model] / d.Seconds()
			if math.Abs(got-x[j][m]) > 0.03 {
				t.Errorf("job %s on %s: %.3f of the time, allocation %.3f", id, model, got, x[j][m])
			}
		}
	}
	// The jobs that gain 4× from the V100 get more of it.
	if !(ran["a"]["V100"] > ran["c"]["V100"] && ran["b"]["V100"] > ran["d"]["V100"]) {
		t.Errorf("V100 time %v: jobs a and b gain most from it", ran)
	}
}

func TestGavelKeepsGPUsAndWaitsForRounds(t *testing.T) {
	st := elastico.State{Now: t0, Cluster: mixCluster(3, 1), Jobs: []elastico.Job{mixJob("a", 0, 4, 1), mixJob("b", 1, 2, 1)}}
	g := &Gavel{}
	p, err := g.Epoch(context.Background(), &st)
	if err != nil {
		t.Fatal(err)
	}
	// Three V100s, two jobs: both run on V100s.
	if got := placed(p); got["a"] != "b32@V100@v0" && got["a"] != "b32@V100@v1" || !strings.HasPrefix(got["b"], "b32@V100@") {
		t.Fatalf("first round: %v", got)
	}
	for i, d := range p.Decisions {
		st.Jobs[i].Running = d.Assignment
	}
	// A job arriving mid-round waits for the next round.
	st.Jobs = append(st.Jobs, mixJob("c", 60, 4, 1))
	st.Now = t0.Add(time.Minute)
	p, _ = g.Epoch(context.Background(), &st)
	if len(p.Actions) != 0 || p.Decisions[2].Assignment != nil || !strings.Contains(p.Decisions[2].Status.Reasons[0], "next round") {
		t.Fatalf("mid-round: %v, %+v", placed(p), p.Decisions[2].Status)
	}
	// At the next round it starts on the third V100; the running jobs
	// keep their GPUs.
	st.Now = t0.Add(GavelRound)
	p, _ = g.Epoch(context.Background(), &st)
	if p.Decisions[2].Assignment == nil {
		t.Errorf("next round: c still waits: %v", placed(p))
	}
	for _, a := range p.Actions {
		if a.Kind != elastico.Start || a.JobID != "c" {
			t.Errorf("next round: %v %s: want only c's start", a.Kind, a.JobID)
		}
	}
}

func TestGavelRejectsBadInput(t *testing.T) {
	neg := mixJob("w", 0, 4, 1)
	neg.Weight = -1
	zero := mixJob("z", 0, 4, 1)
	zero.Profiles[1].Throughput = 0
	for _, tc := range []struct {
		g     *Gavel
		st    elastico.State
		field string
	}{
		{&Gavel{Round: -time.Second}, elastico.State{Now: t0, Cluster: mixCluster(1, 1)}, "Gavel.Round"},
		{&Gavel{}, elastico.State{Cluster: mixCluster(1, 1), Jobs: []elastico.Job{mixJob("a", 0, 4, 1)}}, "State.Now"},
		{&Gavel{}, elastico.State{Now: t0, Cluster: mixCluster(1, 1), Jobs: []elastico.Job{neg}}, `job "w": Weight`},
		{&Gavel{}, elastico.State{Now: t0, Cluster: mixCluster(1, 1), Jobs: []elastico.Job{zero}}, `job "z": configuration "b32@K80": Throughput`},
		{&Gavel{}, elastico.State{Now: t0, Cluster: mixCluster(1, 1), Jobs: []elastico.Job{job("e", 0, 0, nil)}}, `job "e"`},
	} {
		_, err := tc.g.Epoch(context.Background(), &tc.st)
		if err == nil || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("error %v, want one naming %s", err, tc.field)
		}
	}
	// Time going backwards.
	g := &Gavel{}
	st := elastico.State{Now: t0.Add(time.Hour), Cluster: mixCluster(1, 1), Jobs: []elastico.Job{mixJob("a", 0, 4, 1)}}
	if _, err := g.Epoch(context.Background(), &st); err != nil {
		t.Fatal(err)
	}
	st.Now = t0
	if _, err := g.Epoch(context.Background(), &st); err == nil || !strings.Contains(err.Error(), "State.Now") {
		t.Errorf("backwards: %v", err)
	}
}

// spy checks every plan a policy makes in the simulator (check) and
// records whether one put a job on a K80.
type spy struct {
	elastico.Scheduler
	t     *testing.T
	check bool
	k80   *bool
}

func (c spy) Epoch(ctx context.Context, st *elastico.State) (*elastico.Plan, error) {
	p, err := c.Scheduler.Epoch(ctx, st)
	if err == nil {
		if e := checkPlan(st, p); c.check && e != nil {
			c.t.Errorf("at %v: %v", st.Now, e)
		}
		for _, d := range p.Decisions {
			if d.Assignment != nil && strings.HasSuffix(d.Assignment.ConfigID, "@K80") {
				*c.k80 = true
			}
		}
	}
	return p, err
}

// TestMixedClusterInTheSimulator replays a window of Gavel's trace on a
// V100+K80 cluster under Gavel, with and without space sharing, and the
// heterogeneity-agnostic variants: the simulator's invariants check the
// plans, Gavel's are checked here too, and two runs of each (but Gavel's
// with space sharing, which must share GPUs) give the same result. The
// agnostic variants use the K80s; plain Volcano does not.
func TestMixedClusterInTheSimulator(t *testing.T) {
	mix, err := sim.GavelMix("V100:8,K80:8")
	if err != nil {
		t.Fatal(err)
	}
	tr, err := sim.ReadShipped("gavel/0e4a51.trace")
	if err != nil {
		t.Fatal(err)
	}
	jobs, _, err := mix.Workload(tr, sim.WorkloadOptions{Load: 1.5, Jobs: 40, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	cl, err := mix.Cluster()
	if err != nil {
		t.Fatal(err)
	}
	run := func(name string, p elastico.Scheduler) *sim.Result {
		r, err := sim.Run(context.Background(), sim.Config{Truth: mix[0].Truth, Truths: mix.Truths(), Cluster: cl, Policy: p, Name: name, Jobs: jobs, Epoch: time.Minute, AllowFlaps: true})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if m := r.Metrics(); m["unfinished"] != 0 || !(m["jct_avg"] > 0) {
			t.Errorf("%s: %v unfinished, avg JCT %g", name, m["unfinished"], m["jct_avg"])
		}
		return r
	}
	for _, tc := range []struct {
		name string
		new  func() elastico.Scheduler
	}{
		{GavelName, func() elastico.Scheduler { return &Gavel{} }},
		{GavelSSName, func() elastico.Scheduler { return &Gavel{SpaceSharing: true} }},
		{VolcanoAgnosticName, func() elastico.Scheduler { return Volcano{AnyModel: true} }},
		{TiresiasAgnosticName, func() elastico.Scheduler { return Tiresias{AnyModel: true} }},
		{LucidAgnosticName, func() elastico.Scheduler { return &Lucid{AnyModel: true} }},
		{VolcanoName, func() elastico.Scheduler { return Volcano{} }},
	} {
		var ms []map[string]float64
		k80 := false
		// The first run checks every plan (but Lucid's and Gavel's with
		// space sharing, which share GPUs), the second runs bare.
		check := tc.name != LucidAgnosticName && tc.name != GavelSSName
		runs := []elastico.Scheduler{spy{tc.new(), t, check, &k80}, tc.new()}
		if tc.name == GavelSSName {
			// Once: its LP and rounds are Gavel's, and a second run costs
			// ~10 s under -race (TestGavelSSDeterministic checks it).
			runs = runs[:1]
		}
		for _, p := range runs {
			m := run(tc.name, p).Metrics()
			delete(m, "epoch_ms") // wall-clock
			delete(m, "epoch_p99_ms")
			ms = append(ms, m)
		}
		if diff := cmp.Diff(ms[0], ms[len(ms)-1], cmpopts.EquateNaNs()); diff != "" {
			t.Errorf("%s: two runs differ (-first +second):\n%s", tc.name, diff)
		}
		if tc.name == GavelSSName && !(ms[0]["shared_time"] > 0) {
			t.Errorf("%s: shared no GPU (shared_time %g)", tc.name, ms[0]["shared_time"])
		}
		if want := tc.name != VolcanoName; k80 != want {
			t.Errorf("%s: ran a job on a K80: %v, want %v", tc.name, k80, want)
		}
	}
}
