package pds

import (
	"context"
	"testing"

	"github.com/elastico/elastico"
)

// A job whose requested configuration delivers a small fraction of its
// family's best goodput must still start on an idle cluster: under −RST it
// may run only that configuration, and where its best configuration does not
// fit, only the ones that do. (Normalized over the whole family, its G̃ was
// below the switching cost γ0 and it waited forever.)
func TestSmallGoodputStillStarts(t *testing.T) {
	family := []elastico.Profile{
		{Config: elastico.Configuration{ID: "b16-g1", BatchSize: 16, GPUs: 1}, Demand: elastico.Demand{GPUs: 1, SM: 0.5, GPUMemory: 4, CPU: 2, RAM: 8}, Throughput: 10},
		{Config: elastico.Configuration{ID: "b512-g8", BatchSize: 512, GPUs: 8}, Demand: elastico.Demand{GPUs: 8, SM: 1, GPUMemory: 30, CPU: 2, RAM: 8}, Throughput: 400},
	}
	for _, tc := range []struct {
		name     string
		ablation Ablation
		gpus     int
	}{
		{"fixed configuration (−RST), all configurations fit", Ablation{FixedConfiguration: true}, 8},
		{"best configuration does not fit the cluster", Ablation{}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			node := elastico.Node{ID: "n0", CPU: 64, RAM: 512}
			for g := range tc.gpus {
				node.GPUs = append(node.GPUs, elastico.GPU{ID: "n0/gpu" + string(rune('0'+g)), Memory: 32, Shared: true})
			}
			st := &elastico.State{Now: day0, Cluster: elastico.Cluster{Nodes: []elastico.Node{node}},
				Jobs: []elastico.Job{{ID: "small", Profiles: family, ReferenceBatch: 16, Arrival: day0}}}
			s, err := New(Config{Ablation: tc.ablation, Predictor: tablePredictor{}})
			if err != nil {
				t.Fatal(err)
			}
			plan, err := s.Epoch(context.Background(), st)
			if err != nil {
				t.Fatal(err)
			}
			if d := plan.Decisions[0]; d.Assignment == nil || d.Assignment.ConfigID != "b16-g1" {
				t.Errorf("decision %+v, want small to start under b16-g1", d)
			}
		})
	}
}
