package elastico

import (
	"fmt"
	"testing"
	"time"
)

// benchState builds a valid State of n jobs × 8 configurations on g GPUs (8
// per node), half of the jobs running, and half carrying penalties on two
// configurations.
func benchState(n, g int) *State {
	s := &State{Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Carry: Carry{Penalties: map[string]map[string]float64{}}}
	for i := 0; i < g/8; i++ {
		node := Node{ID: fmt.Sprintf("n%d", i), CPU: 96, RAM: 768}
		for k := range 8 {
			node.GPUs = append(node.GPUs, GPU{ID: fmt.Sprintf("n%d/gpu%d", i, k), Memory: 80, Shared: true})
		}
		s.Cluster.Nodes = append(s.Cluster.Nodes, node)
	}
	for i := range n {
		j := Job{ID: fmt.Sprintf("job-%d", i), Floor: 1, ReferenceBatch: 16}
		for k := range 8 {
			j.Profiles = append(j.Profiles, Profile{
				Family:     "resnet50",
				Config:     Configuration{ID: fmt.Sprintf("b%d", 16<<k), BatchSize: 16 << k, GPUs: 1},
				Demand:     Demand{GPUs: 1, SM: 0.1 + 0.1*float64(k), GPUMemory: float64(4 + k), CPU: 4, RAM: 16},
				Throughput: float64(100 * (k + 1)), Efficiency: 1 - 0.05*float64(k),
			})
		}
		if i%2 == 0 && i/2 < g {
			j.Running = &Assignment{ConfigID: "b16", GPUs: []string{fmt.Sprintf("n%d/gpu%d", (i/2)/8, (i/2)%8)}}
		}
		if i%2 == 1 {
			s.Carry.Penalties[j.ID] = map[string]float64{"b32": 0.5, "b64": 0.25}
		}
		s.Jobs = append(s.Jobs, j)
	}
	return s
}

func BenchmarkValidate(b *testing.B) {
	for _, size := range []struct{ jobs, gpus int }{{500, 512}, {5000, 4096}, {20000, 16384}} {
		s := benchState(size.jobs, size.gpus)
		if err := s.Validate(); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%djobs-%dgpus", size.jobs, size.gpus), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := s.Validate(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
