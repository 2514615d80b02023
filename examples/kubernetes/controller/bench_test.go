package controller

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// BenchmarkBuildState is an epoch's State at a real cluster's size: 1,000
// nodes of 8 GPUs and 5,000 pods, 4,000 of them running, as the steady
// epochs of TestScale see it.
func BenchmarkBuildState(b *testing.B) {
	var nodes []*v1.Node
	for i := range 1000 {
		nodes = append(nodes, gpuNode(fmt.Sprintf("n%04d", i), 8, 81920, "mps"))
	}
	var pods []*v1.Pod
	for i := range 5000 {
		p := newPod(fmt.Sprintf("p%05d", i), i, oneGPU)
		if i < 4000 {
			p = admitted(p, "small", fmt.Sprintf("n%04d", i/4), true, i%4)
		}
		pods = append(pods, p)
	}
	for _, cached := range []bool{false, true} {
		b.Run(fmt.Sprintf("cached=%v", cached), func(b *testing.B) {
			o := testOptions
			if cached {
				o.parsed = newJobCache()
			}
			for b.Loop() {
				s := validState(epoch0, pods, nodes, o)
				o.parsed.prune()
				if err := s.state.Validate(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
