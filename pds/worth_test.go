package pds

import (
	"context"
	"testing"
	"time"

	"github.com/elastico/elastico"
)

// TestStartBeforeGrow: job a runs on both GPUs of a node under a 2-GPU
// configuration that does 1.9 GPUs' worth of work; job b, of one GPU,
// waits. By default a waiting job's first GPU is worth more than a running
// job's second (the worth of Config.Fairness): a shrinks to one GPU and b
// starts on the other. The paper's market values work alone, and keeping a as it runs
// saves its restart: b waits. Neither a 1-GPU job alone nor a stream of
// them displaces an 8-GPU gang (examples/stability).
func TestStartBeforeGrow(t *testing.T) {
	family := func(id string) []elastico.Profile {
		p := func(gpus int, tput float64) elastico.Profile {
			return elastico.Profile{Family: id, Class: elastico.Training,
				Config:     elastico.Configuration{ID: map[int]string{1: "x1", 2: "x2"}[gpus], BatchSize: 64 * gpus, GPUs: gpus},
				Demand:     elastico.Demand{GPUs: gpus, SM: 0.9, GPUMemory: 30, CPU: 1, RAM: 4},
				Throughput: tput, Efficiency: 1}
		}
		return []elastico.Profile{p(1, 100), p(2, 190)}
	}
	st := func() *elastico.State {
		return &elastico.State{
			Now:     day0.Add(time.Hour),
			Cluster: elastico.Cluster{Nodes: []elastico.Node{node("n0", 2, 40)}},
			Jobs: []elastico.Job{
				{ID: "a", Class: elastico.Training, ReferenceBatch: 64, Arrival: day0, Profiles: family("a"), Running: &elastico.Assignment{ConfigID: "x2", GPUs: []string{"n0-g0", "n0-g1"}}},
				{ID: "b", Class: elastico.Training, ReferenceBatch: 64, Arrival: day0.Add(50 * time.Minute), Profiles: family("b")},
			},
		}
	}
	for _, tt := range []struct {
		name string
		ab   Ablation
		want map[string]string
	}{
		{"default", Ablation{}, map[string]string{"a": "x1@n0-g0", "b": "x1@n0-g1"}},
		{"paper's market", Ablation{SMMarket: true}, map[string]string{"a": "x2@n0-g0,n0-g1", "b": "Unaffordable"}},
	} {
		s, err := New(Config{Clock: fixedClock(), Ablation: tt.ab})
		if err != nil {
			t.Fatal(err)
		}
		plan, err := s.Epoch(context.Background(), st())
		if err != nil {
			t.Fatal(err)
		}
		got, acts := outcome(plan)
		for id, w := range tt.want {
			if got[id] != w {
				t.Errorf("%s: job %s %s, want %s (actions %v)", tt.name, id, got[id], w, acts)
			}
		}
	}
}
