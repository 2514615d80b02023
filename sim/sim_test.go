package sim

import (
	"context"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func finishTimes(r *Result) map[string]float64 {
	out := map[string]float64{}
	for _, j := range r.Jobs {
		out[j.ID] = j.Finish
	}
	return out
}

func TestRunScenarios(t *testing.T) {
	tr := testTruth(t)
	a := testJob(t, tr, "a", "ResNet-50", 16, 1, 0, 3600)
	b := testJob(t, tr, "b", "Transformer", 64, 1, 0, 1800)
	late := testJob(t, tr, "late", "ResNet-18", 64, 1, 7, 600)
	ka, kb := a.Configs[0].Kind, b.Configs[0].Kind
	sAB, _ := tr.Speed(ka, kb)
	sBA, _ := tr.Speed(kb, ka)
	// Sharing, a does 1 s of dedicated work per 1/sAB s and b per 1/sBA s;
	// whichever finishes first leaves the other alone at full speed.
	ta, tb := 3600/sAB, 1800/sBA
	if tb < ta {
		ta = tb + (3600 - tb*sAB)
	} else {
		tb = ta + (1800 - ta*sBA)
	}
	tests := []struct {
		name       string
		jobs       []Job
		gpus       int
		pins       map[string][]string
		wantFinish map[string]float64
	}{
		{
			name: "one job alone finishes after its dedicated time",
			jobs: []Job{a}, gpus: 1,
			pins:       map[string][]string{"a": {"gpu0000"}},
			wantFinish: map[string]float64{"a": 3600},
		},
		{
			name: "two jobs on one GPU run at Gavel's measured pair speeds",
			jobs: []Job{a, b}, gpus: 1,
			pins:       map[string][]string{"a": {"gpu0000"}, "b": {"gpu0000"}},
			wantFinish: map[string]float64{"a": ta, "b": tb},
		},
		{
			name: "a job arriving between epochs starts at the next multiple of ΔT",
			jobs: []Job{late}, gpus: 1,
			pins:       map[string][]string{"late": {"gpu0000"}},
			wantFinish: map[string]float64{"late": 10 + 600},
		},
		{
			name: "two GPUs of one server: the 2-GPU throughput Gavel measured",
			jobs: []Job{testJob(t, tr, "g2", "LM", 20, 2, 0, 100)}, gpus: 2,
			pins:       map[string][]string{"g2": {"gpu0000", "gpu0001"}},
			wantFinish: map[string]float64{"g2": 100},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Run(context.Background(), Config{Truth: tr, Cluster: testCluster(t, tc.gpus), Policy: pinPolicy(tc.pins), Jobs: tc.jobs})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantFinish, finishTimes(r), cmpopts.EquateApprox(1e-9, 1e-6)); diff != "" {
				t.Errorf("finish times (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSpreadGangRunsAtUnconsolidatedThroughput(t *testing.T) {
	tr := testTruth(t)
	j := testJob(t, tr, "s", "ResNet-50", 64, 2, 0, 1000)
	c := j.Configs[0]
	r, err := Run(context.Background(), Config{
		Truth: tr, Cluster: testCluster(t, 16), Jobs: []Job{j},
		Policy: pinPolicy(map[string][]string{"s": {"gpu0000", "gpu0008"}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := 1000 * c.Throughput / c.SpreadThroughput
	if got := r.Jobs[0].Finish; math.Abs(got-want) > 1e-6*want {
		t.Errorf("spread gang finished at %g, want %g (dedicated 1000 s × consolidated/spread throughput)", got, want)
	}
}

// reconfigurer starts every waiting job under its first profile on its own
// GPU (gpu i for the i-th job of the state) and, at the epoch where a second
// job is present, reconfigures the first in place to its second profile.
func reconfigurer() elastico.Scheduler {
	return policyFunc(func(_ context.Context, st *elastico.State) (*elastico.Plan, error) {
		p := &elastico.Plan{}
		for i, j := range st.Jobs {
			d := elastico.Decision{JobID: j.ID, Assignment: j.Running}
			switch {
			case j.Running == nil:
				a := &elastico.Assignment{ConfigID: j.Profiles[0].Config.ID, GPUs: []string{fmt.Sprintf("gpu%04d", i)}}
				d.Assignment = a
				p.Actions = append(p.Actions, elastico.Action{Kind: elastico.Start, JobID: j.ID, To: a})
			case i == 0 && len(st.Jobs) == 2 && j.Running.ConfigID == j.Profiles[0].Config.ID:
				a := &elastico.Assignment{ConfigID: j.Profiles[1].Config.ID, GPUs: j.Running.GPUs}
				d.Assignment = a
				p.Actions = append(p.Actions, elastico.Action{Kind: elastico.Reconfigure, JobID: j.ID, From: j.Running, To: a})
			}
			p.Decisions = append(p.Decisions, d)
		}
		return p, nil
	})
}

func TestReconfigurationCostsTimeAndKeepsWork(t *testing.T) {
	tr := testTruth(t)
	a := testJob(t, tr, "a", "ResNet-18", 64, 1, 0, 600)
	b := testJob(t, tr, "b", "ResNet-18", 64, 1, 60, 600)
	r, err := Run(context.Background(), Config{
		Truth: tr, Cluster: testCluster(t, 2), Jobs: []Job{a, b},
		Costs:  Costs{Reconfigure: 30 * time.Second, Migrate: time.Second, Resume: time.Second},
		Policy: reconfigurer(),
	})
	if err != nil {
		t.Fatal(err)
	}
	g0, g1 := a.Configs[0].Goodput(false), a.Configs[1].Goodput(false)
	want := map[string]float64{
		"a": 60 + 30 + (a.Work-60*g0)/g1, // 60 s at g0, 30 s restarting, the rest at g1
		"b": 60 + 600,
	}
	if diff := cmp.Diff(want, finishTimes(r), cmpopts.EquateApprox(1e-9, 1e-6)); diff != "" {
		t.Errorf("finish times (-want +got):\n%s", diff)
	}
	if r.Jobs[0].Reconfigs != 1 || r.Jobs[1].Reconfigs != 0 {
		t.Errorf("reconfigurations a %d, b %d; want 1, 0", r.Jobs[0].Reconfigs, r.Jobs[1].Reconfigs)
	}
}

// mover starts the job on gpu0000 under its first profile, then at the
// first epoch with a second job moves it to the assignment next gives.
func mover(next elastico.Assignment) elastico.Scheduler {
	return policyFunc(func(_ context.Context, st *elastico.State) (*elastico.Plan, error) {
		p := &elastico.Plan{}
		for i, j := range st.Jobs {
			d := elastico.Decision{JobID: j.ID, Assignment: j.Running}
			switch {
			case j.Running == nil:
				a := &elastico.Assignment{ConfigID: j.Profiles[0].Config.ID, GPUs: []string{fmt.Sprintf("gpu%04d", i*2)}}
				d.Assignment = a
				p.Actions = append(p.Actions, elastico.Action{Kind: elastico.Start, JobID: j.ID, To: a})
			case i == 0 && len(st.Jobs) == 2 && j.Running.ConfigID == j.Profiles[0].Config.ID && slices.Equal(j.Running.GPUs, []string{"gpu0000"}):
				a := next
				d.Assignment = &a
				kind := elastico.Migrate
				if slices.Contains(a.GPUs, j.Running.GPUs[0]) {
					kind = elastico.Reconfigure
				}
				p.Actions = append(p.Actions, elastico.Action{Kind: kind, JobID: j.ID, From: j.Running, To: &a})
			}
			p.Decisions = append(p.Decisions, d)
		}
		return p, nil
	})
}

func TestTransitionsAreClassified(t *testing.T) {
	tr := testTruth(t)
	a := testJob(t, tr, "a", "ResNet-18", 64, 1, 0, 600)
	b := testJob(t, tr, "b", "ResNet-18", 64, 1, 60, 600)
	tests := []struct {
		name                      string
		next                      elastico.Assignment
		wantReconfigs, wantMigrat int
	}{
		{"growing in place onto a second GPU is a reconfiguration", elastico.Assignment{ConfigID: "b64x2", GPUs: []string{"gpu0000", "gpu0001"}}, 1, 0},
		{"moving to another GPU is a migration", elastico.Assignment{ConfigID: "b64x1", GPUs: []string{"gpu0003"}}, 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Run(context.Background(), Config{Truth: tr, Cluster: testCluster(t, 4), Jobs: []Job{a, b}, Policy: mover(tc.next)})
			if err != nil {
				t.Fatal(err)
			}
			if got := r.Jobs[0]; got.Reconfigs != tc.wantReconfigs || got.Migrations != tc.wantMigrat {
				t.Errorf("reconfigurations %d, migrations %d; want %d, %d", got.Reconfigs, got.Migrations, tc.wantReconfigs, tc.wantMigrat)
			}
		})
	}
}

func TestDisruptionsArePerJob(t *testing.T) {
	tr := testTruth(t)
	jobs := []Job{
		testJob(t, tr, "a", "ResNet-18", 64, 1, 0, 3600),
		testJob(t, tr, "b", "ResNet-18", 64, 1, 0, 3600),
		testJob(t, tr, "c", "ResNet-18", 64, 1, 12, 600),
	}
	script := map[int][]step{
		0:  {on("a", "b64x1", "gpu0000"), on("b", "b64x1", "gpu0001")},
		5:  {on("a", "b64x2", "gpu0000", "gpu0002")}, // a grows in place: reconfiguration
		15: {on("c", "b64x1", "gpu0003"), off("b")},  // b preempted
		20: {on("a", "b64x1", "gpu0002")},            // a shrinks in place: reconfiguration
		25: {on("a", "b64x1", "gpu0001")},            // a moves: migration
		30: {on("b", "b64x1", "gpu0000")},            // b resumes elsewhere
		35: {off("c")},                               // c preempted
		40: {on("c", "b64x1", "gpu0002")},            // c resumes elsewhere
	}
	r, err := Run(context.Background(), Config{Truth: tr, Cluster: testCluster(t, 4), Jobs: jobs, Policy: scripted(script)})
	if err != nil {
		t.Fatal(err)
	}
	type counts struct{ Reconfigs, Migrations, Preemptions, Restarts, Flaps int }
	got := map[string]counts{}
	for _, j := range r.Jobs {
		got[j.ID] = counts{j.Reconfigs, j.Migrations, j.Preemptions, j.Restarts, j.Flaps}
	}
	want := map[string]counts{
		"a": {Reconfigs: 2, Migrations: 1},
		"b": {Preemptions: 1, Restarts: 1},
		"c": {Preemptions: 1, Restarts: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("per-job transitions (-want +got):\n%s", diff)
	}
	m := r.Metrics()
	gotM := map[string]float64{}
	for _, k := range []string{"reconfig_per_job", "migrate_per_job", "preempt_per_job", "flaps"} {
		gotM[k] = m[k]
	}
	wantM := map[string]float64{"reconfig_per_job": 2.0 / 3, "migrate_per_job": 1.0 / 3, "preempt_per_job": 2.0 / 3, "flaps": 0}
	if diff := cmp.Diff(wantM, gotM, cmpopts.EquateApprox(1e-12, 0)); diff != "" {
		t.Errorf("per-job metrics (-want +got):\n%s", diff)
	}
}
