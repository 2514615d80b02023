package baseline

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/google/go-cmp/cmp"
)

// lprof is a one-replica-per-GPU profile of the named family.
func lprof(family string, gpus int, sm, mem float64) elastico.Profile {
	p := prof("c", gpus, sm, mem)
	p.Family = family
	return p
}

// at returns t0 plus s seconds.
func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

func on(gpus ...string) *elastico.Assignment {
	return &elastico.Assignment{ConfigID: "c", GPUs: gpus}
}

// epoch runs one epoch and fails the test on error.
func epoch(t *testing.T, l *Lucid, st elastico.State) *elastico.Plan {
	t.Helper()
	p, err := l.Epoch(context.Background(), &st)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// train teaches l finished jobs: each runs (family, GPUs, seconds) and is
// gone the next epoch, at the same Now, so that it is learned exactly.
func train(t *testing.T, l *Lucid, now time.Time, runs ...run) {
	t.Helper()
	st := elastico.State{Now: now, Cluster: cluster(8, 8)}
	g := 0
	for k, r := range runs {
		var gs []string
		for range r.gpus {
			gs = append(gs, cluster(8, 8).Nodes[g/8].GPUs[g%8].ID)
			g++
		}
		st.Jobs = append(st.Jobs, job("train"+string(rune('a'+k)), 0, r.secs*float64(r.gpus), on(gs...), lprof(r.family, r.gpus, 0.9, 4)))
	}
	epoch(t, l, st)
	epoch(t, l, elastico.State{Now: now, Cluster: cluster(8, 8)})
}

// run is a finished job to train on: its family, GPUs and run time (s).
type run struct {
	family string
	gpus   int
	secs   float64
}

func nanF() float64 { return math.NaN() }

func TestLucidLearnsFromFinishedJobs(t *testing.T) {
	c := cluster(1, 4)
	tests := []struct {
		name   string
		states []elastico.State
		// wantRuns are the run times learned (seconds, ascending).
		wantRuns []float64
	}{
		{
			name: "a job that ran and left is learned: service at its last sighting plus half the gap",
			states: []elastico.State{
				{Now: at(0), Cluster: c, Jobs: []elastico.Job{job("a", 0, 0, on("gpu0000"), lprof("f", 1, 0.5, 4))}},
				{Now: at(100), Cluster: c, Jobs: []elastico.Job{job("a", 0, 100, on("gpu0000"), lprof("f", 1, 0.5, 4))}},
				{Now: at(160), Cluster: c},
			},
			wantRuns: []float64{130},
		},
		{
			name: "service is Attained over the job's GPUs",
			states: []elastico.State{
				{Now: at(0), Cluster: c, Jobs: []elastico.Job{job("a", 0, 800, on("gpu0000", "gpu0001"), lprof("f", 2, 0.5, 4))}},
				{Now: at(0), Cluster: c},
			},
			wantRuns: []float64{400},
		},
		{
			name: "a job the last plan started and that left before the next epoch is learned",
			states: []elastico.State{
				{Now: at(0), Cluster: c, Jobs: []elastico.Job{job("a", 0, 0, nil, lprof("f", 1, 0.5, 4))}},
				{Now: at(40), Cluster: c},
			},
			wantRuns: []float64{20},
		},
		{
			name: "a job that left while waiting (cancelled) teaches nothing",
			states: []elastico.State{
				{Now: at(0), Cluster: c, Jobs: []elastico.Job{
					job("run", 0, 0, on("gpu0000", "gpu0001", "gpu0002", "gpu0003"), lprof("f", 4, 0.9, 15)),
					job("wait", 1, 0, nil, lprof("f", 1, 0.9, 4)),
				}},
				{Now: at(50), Cluster: c, Jobs: []elastico.Job{job("run", 0, 200, on("gpu0000", "gpu0001", "gpu0002", "gpu0003"), lprof("f", 4, 0.9, 15))}},
			},
			wantRuns: nil,
		},
		{
			name: "Remaining is never read: a job with work left that is gone counts as finished",
			states: []elastico.State{
				{Now: at(0), Cluster: c, Jobs: []elastico.Job{func() elastico.Job {
					j := job("a", 0, 300, on("gpu0000"), lprof("f", 1, 0.5, 4))
					j.Remaining = 1e12
					return j
				}()}},
				{Now: at(0), Cluster: c},
			},
			wantRuns: []float64{300},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := &Lucid{}
			for _, st := range tc.states {
				epoch(t, l, st)
			}
			if diff := cmp.Diff(tc.wantRuns, l.model.all); diff != "" {
				t.Errorf("learned run times (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLucidEstimate(t *testing.T) {
	l := &Lucid{}
	train(t, l, t0,
		run{"a", 1, 100}, run{"a", 1, 300}, run{"a", 1, 200},
		run{"a", 2, 1000},
		run{"b", 1, 5000},
	)
	keys := func(family string, gpus, batch int) [3]string {
		p := lprof(family, gpus, 0.5, 4)
		p.Config.BatchSize = batch
		return featureKeys(&p)
	}
	tests := []struct {
		name string
		keys [3]string
		want float64
	}{
		{"three finished jobs of the key: their median", keys("a", 1, 32), 200},
		{"another batch of a known family and GPU count: the (family, GPUs) key", keys("a", 1, 64), 200},
		{"one finished job of the key is too few: the family's median", keys("a", 2, 32), 250},
		{"an unknown family: every finished job's median", keys("z", 1, 32), 300},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := l.model.estimate(tc.keys); got != tc.want {
				t.Errorf("estimate %g, want %g", got, tc.want)
			}
		})
	}
	if got := (&Lucid{Prior: 42 * time.Second}).prior(); got != 42*time.Second {
		t.Errorf("prior %v", got)
	}
	if got := newDurationModel(DefaultLucidPrior).estimate(keys("a", 1, 32)); got != 3600 {
		t.Errorf("nothing learned: estimate %g, want the prior 3600", got)
	}
}

func TestLucidShortestEstimateFirst(t *testing.T) {
	// One free GPU; heavy jobs (score 2) never pair with each other.
	c := cluster(1, 2)
	blocker := job("blocker", 0, 0, on("gpu0000"), lprof("x", 1, 0.95, 15))
	tests := []struct {
		name string
		jobs []elastico.Job
		want map[string]string
	}{
		{
			name: "a later job of a short family goes before an earlier long one",
			jobs: []elastico.Job{job("long", 1, 0, nil, lprof("long", 1, 0.9, 4)), job("short", 2, 0, nil, lprof("short", 1, 0.9, 4))},
			want: map[string]string{"blocker": "c@gpu0000", "long": "", "short": "c@gpu0001"},
		},
		{
			name: "priority is estimated GPU-time: a short job asking for more GPUs than are free is passed over",
			jobs: []elastico.Job{job("long", 1, 0, nil, lprof("long", 1, 0.9, 4)), job("short2", 0, 0, nil, lprof("short", 2, 0.9, 4))},
			want: map[string]string{"blocker": "c@gpu0000", "long": "c@gpu0001", "short2": ""},
		},
		{
			name: "equal estimates: first come, first served",
			jobs: []elastico.Job{job("u2", 2, 0, nil, lprof("unknown", 1, 0.9, 4)), job("u1", 1, 0, nil, lprof("unknown", 1, 0.9, 4))},
			want: map[string]string{"blocker": "c@gpu0000", "u1": "c@gpu0001", "u2": ""},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := &Lucid{}
			train(t, l, t0, run{"short", 1, 600}, run{"short", 1, 600}, run{"short", 1, 600},
				run{"long", 1, 36000}, run{"long", 1, 36000}, run{"long", 1, 36000})
			st := elastico.State{Now: t0, Cluster: c, Jobs: append([]elastico.Job{blocker}, tc.jobs...)}
			if diff := cmp.Diff(tc.want, placed(epoch(t, l, st))); diff != "" {
				t.Errorf("placement (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLucidPacking(t *testing.T) {
	c := cluster(1, 4)
	// fill holds the GPUs a case leaves alone: heavy and full, no partner.
	fill := func(id string, gpus ...string) elastico.Job {
		return job(id, 0, 0, on(gpus...), lprof("x", len(gpus), 0.95, 15))
	}
	tests := []struct {
		name  string
		train []run
		jobs  []elastico.Job
		want  map[string]string
	}{
		{
			name: "light joins heavy (scores 0 + 2)",
			jobs: []elastico.Job{fill("fill", "gpu0001", "gpu0002", "gpu0003"), job("p", 0, 0, on("gpu0000"), lprof("f", 1, 0.85, 6)), job("n", 1, 0, nil, lprof("f", 1, 0.1, 6))},
			want: map[string]string{"fill": "c@gpu0001,gpu0002,gpu0003", "p": "c@gpu0000", "n": "c@gpu0000"},
		},
		{
			name: "medium joins medium (1 + 1)",
			jobs: []elastico.Job{fill("fill", "gpu0001", "gpu0002", "gpu0003"), job("p", 0, 0, on("gpu0000"), lprof("f", 1, 0.3, 6)), job("n", 1, 0, nil, lprof("f", 1, 0.5, 6))},
			want: map[string]string{"fill": "c@gpu0001,gpu0002,gpu0003", "p": "c@gpu0000", "n": "c@gpu0000"},
		},
		{
			name: "medium and heavy do not pair (1 + 2), though their SM fits",
			jobs: []elastico.Job{fill("fill", "gpu0001", "gpu0002", "gpu0003"), job("p", 0, 0, on("gpu0000"), lprof("f", 1, 0.65, 6)), job("n", 1, 0, nil, lprof("f", 1, 0.3, 6))},
			want: map[string]string{"fill": "c@gpu0001,gpu0002,gpu0003", "p": "c@gpu0000", "n": ""},
		},
		{
			name: "light and heavy whose SM shares exceed the GPU do not pair",
			jobs: []elastico.Job{fill("fill", "gpu0001", "gpu0002", "gpu0003"), job("p", 0, 0, on("gpu0000"), lprof("f", 1, 0.9, 6)), job("n", 1, 0, nil, lprof("f", 1, 0.2, 6))},
			want: map[string]string{"fill": "c@gpu0001,gpu0002,gpu0003", "p": "c@gpu0000", "n": ""},
		},
		{
			name: "memory must fit",
			jobs: []elastico.Job{fill("fill", "gpu0001", "gpu0002", "gpu0003"), job("p", 0, 0, on("gpu0000"), lprof("f", 1, 0.1, 10)), job("n", 1, 0, nil, lprof("f", 1, 0.1, 6))},
			want: map[string]string{"fill": "c@gpu0001,gpu0002,gpu0003", "p": "c@gpu0000", "n": ""},
		},
		{
			name: "the partner must have as many GPUs as the job asks for",
			jobs: []elastico.Job{fill("fill", "gpu0002", "gpu0003"), job("p", 0, 0, on("gpu0000", "gpu0001"), lprof("f", 2, 0.1, 4)), job("n", 1, 0, nil, lprof("f", 1, 0.1, 4))},
			want: map[string]string{"fill": "c@gpu0002,gpu0003", "p": "c@gpu0000,gpu0001", "n": ""},
		},
		{
			name: "a gang joins a partner of its size on all the partner's GPUs",
			jobs: []elastico.Job{fill("fill", "gpu0002", "gpu0003"), job("p", 0, 0, on("gpu0000", "gpu0001"), lprof("f", 2, 0.1, 4)), job("n", 1, 0, nil, lprof("f", 2, 0.1, 4))},
			want: map[string]string{"fill": "c@gpu0002,gpu0003", "p": "c@gpu0000,gpu0001", "n": "c@gpu0000,gpu0001"},
		},
		{
			name: "a partner that already shares takes no one",
			jobs: []elastico.Job{fill("fill", "gpu0001", "gpu0002", "gpu0003"), job("p", 0, 0, on("gpu0000"), lprof("f", 1, 0.1, 2)), job("q", 0, 0, on("gpu0000"), lprof("f", 1, 0.1, 2)), job("n", 1, 0, nil, lprof("f", 1, 0.1, 2))},
			want: map[string]string{"fill": "c@gpu0001,gpu0002,gpu0003", "p": "c@gpu0000", "q": "c@gpu0000", "n": ""},
		},
		{
			name:  "time-aware: a job estimated over twice the partner's GPU-time does not join it",
			train: []run{{"short", 1, 600}, {"short", 1, 600}, {"short", 1, 600}, {"long", 1, 3600}, {"long", 1, 3600}, {"long", 1, 3600}},
			jobs:  []elastico.Job{fill("fill", "gpu0001", "gpu0002", "gpu0003"), job("p", 0, 0, on("gpu0000"), lprof("short", 1, 0.3, 4)), job("n", 1, 0, nil, lprof("long", 1, 0.3, 4))},
			want:  map[string]string{"fill": "c@gpu0001,gpu0002,gpu0003", "p": "c@gpu0000", "n": ""},
		},
		{
			name:  "time-aware: a shorter job joins a longer partner",
			train: []run{{"short", 1, 600}, {"short", 1, 600}, {"short", 1, 600}, {"long", 1, 3600}, {"long", 1, 3600}, {"long", 1, 3600}},
			jobs:  []elastico.Job{fill("fill", "gpu0001", "gpu0002", "gpu0003"), job("p", 0, 0, on("gpu0000"), lprof("long", 1, 0.3, 4)), job("n", 1, 0, nil, lprof("short", 1, 0.3, 4))},
			want:  map[string]string{"fill": "c@gpu0001,gpu0002,gpu0003", "p": "c@gpu0000", "n": "c@gpu0000"},
		},
		{
			name: "Lucid packs before it takes free GPUs, with the first job on its run list",
			jobs: []elastico.Job{fill("fill", "gpu0003"), job("p2", 1, 0, on("gpu0001"), lprof("f", 1, 0.3, 4)), job("p1", 0, 0, on("gpu0000"), lprof("f", 1, 0.3, 4)), job("n", 2, 0, nil, lprof("f", 1, 0.3, 4))},
			want: map[string]string{"fill": "c@gpu0003", "p1": "c@gpu0000", "p2": "c@gpu0001", "n": "c@gpu0000"},
		},
		{
			name: "a job started this epoch is a partner for the next in the queue",
			jobs: []elastico.Job{fill("fill", "gpu0001", "gpu0002", "gpu0003"), job("a", 1, 0, nil, lprof("f", 1, 0.3, 4)), job("b", 2, 0, nil, lprof("f", 1, 0.3, 4))},
			want: map[string]string{"fill": "c@gpu0001,gpu0002,gpu0003", "a": "c@gpu0000", "b": "c@gpu0000"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l := &Lucid{}
			if tc.train != nil {
				train(t, l, t0, tc.train...)
			}
			st := elastico.State{Now: t0, Cluster: c, Jobs: tc.jobs}
			if diff := cmp.Diff(tc.want, placed(epoch(t, l, st))); diff != "" {
				t.Errorf("placement (-want +got):\n%s", diff)
			}
		})
	}
}

func TestShareScore(t *testing.T) {
	for _, tc := range []struct {
		sm   float64
		want int
	}{{0.04, 0}, {0.2499, 0}, {0.25, 1}, {0.59, 1}, {0.60, 2}, {1, 2}} {
		if got := shareScore(tc.sm); got != tc.want {
			t.Errorf("shareScore(%g) = %d, want %d", tc.sm, got, tc.want)
		}
	}
}

// TestLucidDeterministic runs one sequence of States, with a job's true
// work left changed and the jobs listed in another order, through fresh
// instances: the decisions must not change.
func TestLucidDeterministic(t *testing.T) {
	c := cluster(2, 8)
	seq := func(remaining func(k int) float64, reverse bool) []elastico.State {
		var out []elastico.State
		for e := range 6 {
			var jobs []elastico.Job
			for k := range 12 {
				if k < e { // job k finished before epoch e
					continue
				}
				fam := []string{"a", "b", "c"}[k%3]
				j := job(string(rune('a'+k)), k, 0, nil, lprof(fam, 1+k%3, 0.1+0.07*float64(k), 2+float64(k%4)))
				j.Remaining = remaining(k)
				jobs = append(jobs, j)
			}
			if reverse {
				for a, b := 0, len(jobs)-1; a < b; a, b = a+1, b-1 {
					jobs[a], jobs[b] = jobs[b], jobs[a]
				}
			}
			out = append(out, elastico.State{Now: at(600 * e), Cluster: c, Jobs: jobs})
		}
		return out
	}
	play := func(states []elastico.State) []map[string]string {
		l := &Lucid{}
		var out []map[string]string
		var last *elastico.Plan
		for _, st := range states {
			// apply the last plan: the jobs it placed run, with service
			if last != nil {
				for i := range st.Jobs {
					for _, d := range last.Decisions {
						if d.JobID == st.Jobs[i].ID && d.Assignment != nil {
							st.Jobs[i].Running = d.Assignment
							st.Jobs[i].Attained = 600 * float64(len(d.Assignment.GPUs))
						}
					}
				}
			}
			last = epoch(t, l, st)
			out = append(out, placed(last))
		}
		return out
	}
	up := func(k int) float64 { return float64(k + 1) }
	down := func(k int) float64 { return 1e9 / float64(k+1) }
	want := play(seq(up, false))
	if diff := cmp.Diff(want, play(seq(up, false))); diff != "" {
		t.Errorf("same input, other plans (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff(want, play(seq(down, true))); diff != "" {
		t.Errorf("plans depend on Remaining or job order (-want +got):\n%s", diff)
	}
}

func TestLucidRejectsBadInput(t *testing.T) {
	c := cluster(1, 2)
	tests := []struct {
		name    string
		l       *Lucid
		states  []elastico.State
		wantErr string
	}{
		{"NaN Attained", &Lucid{}, []elastico.State{{Now: t0, Cluster: c, Jobs: []elastico.Job{job("a", 0, nanF(), nil, lprof("f", 1, 0.5, 4))}}}, `job "a": Attained`},
		{"negative Attained", &Lucid{}, []elastico.State{{Now: t0, Cluster: c, Jobs: []elastico.Job{job("a", 0, -1, nil, lprof("f", 1, 0.5, 4))}}}, `job "a": Attained`},
		{"duplicate job", &Lucid{}, []elastico.State{{Now: t0, Cluster: c, Jobs: []elastico.Job{job("a", 0, 0, nil, lprof("f", 1, 0.5, 4)), job("a", 1, 0, nil, lprof("f", 1, 0.5, 4))}}}, `job "a": duplicate ID`},
		{"time goes back", &Lucid{}, []elastico.State{{Now: at(10), Cluster: c}, {Now: at(5), Cluster: c}}, "State.Now"},
		{"MaxPairSM above 1", &Lucid{MaxPairSM: 1.5}, []elastico.State{{Now: t0, Cluster: c}}, "Lucid.MaxPairSM"},
		{"negative Prior", &Lucid{Prior: -time.Second}, []elastico.State{{Now: t0, Cluster: c}}, "Lucid.Prior"},
		{"nil State", &Lucid{}, []elastico.State{}, "nil State"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			if len(tc.states) == 0 {
				_, err = tc.l.Epoch(context.Background(), nil)
			}
			for i := range tc.states {
				if _, err = tc.l.Epoch(context.Background(), &tc.states[i]); err != nil {
					break
				}
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
