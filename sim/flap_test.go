package sim

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFlapsBreakStability(t *testing.T) {
	tr := testTruth(t)
	a := testJob(t, tr, "a", "ResNet-18", 64, 1, 0, 600)
	b := testJob(t, tr, "b", "ResNet-18", 64, 1, 0, 600)
	tests := []struct {
		name       string
		jobs       []Job
		script     map[int][]step
		wantJob    string
		wantDetail []string
	}{
		{"migrated and migrated back", []Job{a}, map[int][]step{
			0:  {on("a", "b64x1", "gpu0000")},
			5:  {on("a", "b64x1", "gpu0001")},
			10: {on("a", "b64x1", "gpu0000")},
		}, "a", []string{"restored", "lost at t=5s", "b64x1 on gpu0000 at t=10s", "since t=0s"}},
		{"preempted and resumed where it was", []Job{a}, map[int][]step{
			0:  {on("a", "b64x1", "gpu0000")},
			5:  {off("a")},
			10: {on("a", "b64x1", "gpu0000")},
		}, "a", []string{"restored", "lost at t=5s"}},
		{"a reconfiguration undone", []Job{a}, map[int][]step{
			0:  {on("a", "b64x1", "gpu0000")},
			5:  {on("a", "b64x2", "gpu0000", "gpu0001")},
			15: {on("a", "b64x1", "gpu0000")},
		}, "a", []string{"restored", "lost at t=5s", "at t=15s"}},
		{"two jobs swapped and swapped back", []Job{a, b}, map[int][]step{
			0:  {on("a", "b64x1", "gpu0000")},
			5:  {off("a"), on("b", "b64x1", "gpu0000")},
			10: {off("b"), on("a", "b32x1", "gpu0000")}, // another configuration: only the swap is undone
		}, "a", []string{`takes back the GPUs job "b" took from it at t=5s`, "b32x1 on gpu0000 at t=10s"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), Config{Truth: tr, Cluster: testCluster(t, 2), Jobs: tc.jobs, Policy: scripted(tc.script)})
			var ie *InvariantError
			if !errors.As(err, &ie) || ie.Invariant != Stability || ie.Job != tc.wantJob {
				t.Fatalf("Run: %v; want invariant %q for job %q", err, Stability, tc.wantJob)
			}
			for _, w := range tc.wantDetail {
				if !strings.Contains(ie.Detail, w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestNoFlapWhenSomethingChanged(t *testing.T) {
	tr := testTruth(t)
	a := testJob(t, tr, "a", "ResNet-18", 64, 1, 0, 600)
	tests := []struct {
		name   string
		jobs   []Job
		script map[int][]step
	}{
		{"back after an arrival", []Job{a, testJob(t, tr, "c", "ResNet-18", 64, 1, 7, 600)}, map[int][]step{
			0:  {on("a", "b64x1", "gpu0000")},
			5:  {on("a", "b64x1", "gpu0001")},
			10: {on("a", "b64x1", "gpu0000"), on("c", "b64x1", "gpu0002")},
		}},
		{"swapped back after a completion", []Job{a, testJob(t, tr, "short", "ResNet-18", 64, 1, 0, 10)}, map[int][]step{
			0:  {on("a", "b64x1", "gpu0000")},
			5:  {off("a"), on("short", "b64x1", "gpu0000")}, // short finishes at 15
			20: {on("a", "b64x1", "gpu0000")},
		}},
		{"moved on, never back", []Job{a}, map[int][]step{
			0:  {on("a", "b64x1", "gpu0000")},
			5:  {on("a", "b64x1", "gpu0001")},
			10: {on("a", "b64x1", "gpu0002")},
			15: {on("a", "b64x2", "gpu0002", "gpu0003")},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := Run(context.Background(), Config{Truth: tr, Cluster: testCluster(t, 4), Jobs: tc.jobs, Policy: scripted(tc.script)})
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Flaps) != 0 {
				t.Errorf("flaps %v, want none", r.Flaps)
			}
		})
	}
}

func TestAllowFlapsCounts(t *testing.T) {
	tr := testTruth(t)
	script := map[int][]step{
		0:  {on("a", "b64x1", "gpu0000")},
		5:  {on("a", "b64x1", "gpu0001")},
		10: {on("a", "b64x1", "gpu0000")},
	}
	r, err := Run(context.Background(), Config{
		Truth: tr, Cluster: testCluster(t, 2), Jobs: []Job{testJob(t, tr, "a", "ResNet-18", 64, 1, 0, 600)},
		Policy: scripted(script), AllowFlaps: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []Flap{{Job: "a", Displaced: 5, Restored: 10, Calm: 0, Assignment: "b64x1 on gpu0000"}}
	if diff := cmp.Diff(want, r.Flaps); diff != "" {
		t.Errorf("flaps (-want +got):\n%s", diff)
	}
	if j := r.Jobs[0]; j.Flaps != 1 || j.Migrations != 2 {
		t.Errorf("job a: %d flaps, %d migrations; want 1, 2", j.Flaps, j.Migrations)
	}
	if got := r.Metrics()["flaps"]; got != 1 {
		t.Errorf("flaps metric %g, want 1", got)
	}
}
