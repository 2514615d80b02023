package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/elastico/elastico"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestNewStat(t *testing.T) {
	tests := []struct {
		name string
		in   []float64
		want Stat
	}{
		{"empty", nil, Stat{Mean: math.NaN(), CI95: math.NaN()}},
		{"one value: no interval", []float64{3}, Stat{Mean: 3, CI95: math.NaN(), N: 1}},
		// mean 2, sd 1, t(0.975, 2) = 4.302653: 4.302653/√3
		{"three values", []float64{1, 2, 3}, Stat{Mean: 2, CI95: 4.302652729749464 / math.Sqrt(3), N: 3}},
		{"NaN left out", []float64{1, math.NaN(), 3}, Stat{Mean: 2, CI95: 12.706204736174707 * math.Sqrt(2) / math.Sqrt(2), N: 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, NewStat(tc.in), cmpopts.EquateNaNs(), cmpopts.EquateApprox(1e-9, 0)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func testExperiment(t *testing.T) *Experiment {
	return &Experiment{
		Truth: testTruth(t), Trace: shippedGavel(t), GPUs: 16, Seeds: []uint64{1, 2, 3},
		Workload: WorkloadOptions{Load: 1.5, Jobs: 40, InferenceFraction: 0.25, InferenceFloor: 0.5},
		Policies: []Policy{
			{Name: "fifo", New: func() (elastico.Scheduler, error) { return fifoWhole{}, nil }},
			{Name: "pinless", New: func() (elastico.Scheduler, error) { return fifoWhole{}, nil }},
		},
	}
}

func TestExperimentIsDeterministic(t *testing.T) {
	e := testExperiment(t)
	a, err := e.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	e.Parallel = 1
	b, err := e.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for p := range a.Results {
		for s := range a.Results[p] {
			ra, rb := a.Results[p][s], b.Results[p][s]
			if diff := cmp.Diff(ra.Jobs, rb.Jobs, cmpopts.EquateNaNs()); diff != "" {
				t.Fatalf("policy %d seed %d: jobs differ:\n%s", p, s, diff)
			}
			if diff := cmp.Diff(ra.Series, rb.Series); diff != "" {
				t.Fatalf("policy %d seed %d: series differ", p, s)
			}
		}
	}
	// Two identical policies: every ratio is exactly 1.
	sum := Summarize(a, "fifo")
	for _, p := range sum.Policies {
		if g := p.Metrics["jct_avg"].Gain; g.Mean != 1 || g.N != 3 {
			t.Errorf("%s: JCT gain %+v, want 1 over 3 seeds", p.Policy, g)
		}
	}
}

func TestReports(t *testing.T) {
	e := testExperiment(t)
	out, err := e.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	s := Summarize(out, "fifo")
	var table bytes.Buffer
	if err := WriteTable(&table, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"policy", "fifo", "pinless", "avg JCT (h)", "16 GPUs", "3 seeds"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	var js bytes.Buffer
	if err := WriteJSON(&js, s, map[string]any{"trace": "x"}); err != nil {
		t.Fatal(err)
	}
	var parsed struct {
		Policies []struct {
			Policy  string
			Metrics map[string]struct {
				Mean  *float64 `json:"mean"`
				CI95  *float64 `json:"ci95"`
				Ratio struct {
					Mean *float64 `json:"mean"`
				} `json:"ratio_vs_baseline"`
			}
		}
	}
	if err := json.Unmarshal(js.Bytes(), &parsed); err != nil {
		t.Fatalf("JSON does not parse: %v\n%s", err, js.String())
	}
	m := parsed.Policies[1].Metrics["jct_avg"]
	if m.Mean == nil || m.CI95 == nil || m.Ratio.Mean == nil || *m.Ratio.Mean != 1 {
		t.Errorf("jct_avg in JSON: %+v", m)
	}
	var csvOut, jobsOut bytes.Buffer
	if err := WriteCSV(&csvOut, s); err != nil {
		t.Fatal(err)
	}
	if err := WriteJobsCSV(&jobsOut, out); err != nil {
		t.Fatal(err)
	}
	if got, want := strings.Count(csvOut.String(), "\n"), 1+2*len(MetricDefs); got != want {
		t.Errorf("summary CSV: %d lines, want %d", got, want)
	}
	if got, want := strings.Count(jobsOut.String(), "\n"), 1+2*3*40; got != want {
		t.Errorf("jobs CSV: %d lines, want %d", got, want)
	}
	if head, _, _ := strings.Cut(jobsOut.String(), "\n"); !strings.HasSuffix(head, ",reconfigs,migrations,preemptions,restarts,flaps,held_s,run_s,shared_s,gpu_s") {
		t.Errorf("jobs CSV header %q lacks the per-job transitions and flaps", head)
	}
}

// stutter is fifoWhole that, at its second epoch, preempts every running
// job: at the third, fifoWhole starts them again where they were.
type stutter struct{ n int }

func (s *stutter) Epoch(ctx context.Context, st *elastico.State) (*elastico.Plan, error) {
	s.n++
	if s.n != 2 {
		return fifoWhole{}.Epoch(ctx, st)
	}
	p := &elastico.Plan{}
	for _, j := range st.Jobs {
		p.Decisions = append(p.Decisions, elastico.Decision{JobID: j.ID})
		if j.Running != nil {
			p.Actions = append(p.Actions, elastico.Action{Kind: elastico.Preempt, JobID: j.ID, From: j.Running})
		}
	}
	return p, nil
}

func TestExperimentPolicyAllowFlaps(t *testing.T) {
	e := testExperiment(t)
	e.KeepGoing = true
	e.Workload.Load = 0.01 // arrivals minutes apart: none between stutter's second and third epochs
	e.Policies = []Policy{
		{Name: "stutter", New: func() (elastico.Scheduler, error) { return &stutter{}, nil }},
		{Name: "stutter-allowed", New: func() (elastico.Scheduler, error) { return &stutter{}, nil }, AllowFlaps: true},
	}
	o, err := e.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(o.Failures) != len(e.Seeds) {
		t.Fatalf("%d failures, want one per seed of stutter: %v", len(o.Failures), o.Failures)
	}
	for _, f := range o.Failures {
		var ie *InvariantError
		if f.Policy != "stutter" || !errors.As(f.Err, &ie) || ie.Invariant != Stability {
			t.Errorf("failure %s, seed %d: %v; want stutter's %q", f.Policy, f.Seed, f.Err, Stability)
		}
	}
	for _, r := range o.Results[1] {
		if r == nil || len(r.Flaps) == 0 {
			t.Fatalf("stutter-allowed: result %v, want a run with its flaps counted", r)
		}
	}
}
