package stint

import (
	"testing"
	"time"

	"github.com/elastico/elastico"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func run(id, cfg string, gpus ...string) elastico.Job {
	return elastico.Job{ID: id, Running: &elastico.Assignment{ConfigID: cfg, GPUs: gpus}}
}

func TestUpdate(t *testing.T) {
	a := run("a", "small", "n/gpu0")
	b := run("b", "small", "n/gpu0")
	c := run("c", "small", "n/gpu1")
	a2 := run("a", "big", "n/gpu0", "n/gpu1")
	waiting := elastico.Job{ID: "w"}
	tests := []struct {
		name   string
		before []elastico.Job
		tags   map[string]string // job ID -> tag, at the second Update
		after  []elastico.Job
		kept   []string // jobs whose stint began at the first Update
		fresh  []string // jobs whose stint began at the second
	}{
		{"nothing changed", []elastico.Job{a, b, c}, nil, []elastico.Job{a, b, c}, []string{"a", "b", "c"}, nil},
		{"a neighbour arrives", []elastico.Job{a, c}, nil, []elastico.Job{a, b, c}, []string{"c"}, []string{"a", "b"}},
		{"a neighbour leaves", []elastico.Job{a, b, c}, nil, []elastico.Job{a, c}, []string{"c"}, []string{"a"}},
		{"a neighbour waits again", []elastico.Job{a, b}, nil, []elastico.Job{a, {ID: "b"}}, nil, []string{"a"}},
		{"a job grows onto another's GPU", []elastico.Job{a, c}, nil, []elastico.Job{a2, c}, nil, []string{"a", "c"}},
		{"a relaunch (a new tag)", []elastico.Job{a, b, c}, map[string]string{"a": "2"}, []elastico.Job{a, b, c}, []string{"c"}, []string{"a", "b"}},
		{"order of the State does not matter", []elastico.Job{a, b, c, waiting}, nil, []elastico.Job{c, waiting, b, a}, []string{"a", "b", "c"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tr Tracker
			tr.Update(&elastico.State{Now: t0, Jobs: tt.before}, nil)
			t1 := t0.Add(time.Minute)
			tr.Update(&elastico.State{Now: t1, Jobs: tt.after}, func(j *elastico.Job) string { return tt.tags[j.ID] })
			for _, id := range tt.kept {
				if s, ok := tr.Since(id); !ok || !s.Equal(t0) {
					t.Errorf("Since(%s) = %v, %v; want %v", id, s, ok, t0)
				}
			}
			for _, id := range tt.fresh {
				if s, ok := tr.Since(id); !ok || !s.Equal(t1) {
					t.Errorf("Since(%s) = %v, %v; want %v", id, s, ok, t1)
				}
			}
			for _, j := range tt.after {
				if _, ok := tr.Since(j.ID); ok != (j.Running != nil) {
					t.Errorf("Since(%s) known = %v, want %v (running)", j.ID, ok, j.Running != nil)
				}
			}
		})
	}
}

func TestObservation(t *testing.T) {
	var tr Tracker
	tr.Update(&elastico.State{Now: t0, Jobs: []elastico.Job{run("a", "small", "n/gpu0"), {ID: "w"}}}, nil)
	now := t0.Add(10 * time.Minute)
	tests := []struct {
		name  string
		id    string
		since time.Time
		want  elastico.Observation
	}{
		{"within the stint", "a", t0.Add(4 * time.Minute), elastico.Observation{Rate: 90, Over: 6 * time.Minute}},
		{"from the stint's first instant", "a", t0, elastico.Observation{Rate: 90, Over: 10 * time.Minute}},
		{"begun before the stint", "a", t0.Add(-time.Second), elastico.Observation{}},
		{"begun now", "a", now, elastico.Observation{}},
		{"begun in the future (clocks apart)", "a", now.Add(time.Second), elastico.Observation{}},
		{"a waiting job", "w", t0.Add(time.Minute), elastico.Observation{}},
		{"an unknown job", "x", t0.Add(time.Minute), elastico.Observation{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := tr.Observation(tt.id, now, 90, tt.since)
			if got != tt.want || ok != (tt.want != elastico.Observation{}) {
				t.Errorf("Observation = %+v, %v; want %+v", got, ok, tt.want)
			}
		})
	}
}
