package rst

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/elastico/elastico"
	"github.com/google/go-cmp/cmp"
)

func testCluster() *elastico.Cluster {
	node := func(id string, cpu, ram float64, mems ...float64) elastico.Node {
		n := elastico.Node{ID: id, CPU: cpu, RAM: ram}
		for i, m := range mems {
			n.GPUs = append(n.GPUs, elastico.GPU{ID: fmt.Sprintf("%s-g%d", id, i), Memory: m, Shared: true})
		}
		return n
	}
	return &elastico.Cluster{Nodes: []elastico.Node{
		node("a", 32, 256, 16, 16, 16, 16),
		node("b", 32, 256, 16, 16, 16, 16),
		node("big", 16, 128, 40, 40),
	}}
}

func TestCheckerFilter(t *testing.T) {
	ch, err := NewChecker(testCluster())
	if err != nil {
		t.Fatal(err)
	}
	fam := []elastico.Profile{
		prof("fits", 1, 1, 12, 4, 16, 100, 1),
		prof("big-gpu", 1, 1, 30, 4, 16, 100, 1),
		prof("too-big", 1, 1, 48, 4, 16, 100, 1),
		prof("two-big", 2, 1, 30, 4, 16, 100, 1),
		prof("three-big", 3, 1, 30, 4, 16, 100, 1),
		prof("gang-of-8", 8, 1, 12, 4, 16, 100, 1),
		prof("cpu-hog", 1, 1, 12, 64, 16, 100, 1),
		prof("slow", 1, 1, 12, 4, 16, 10, 1),
		prof("gang-cpu", 4, 1, 12, 9, 16, 100, 1),
	}
	tests := []struct {
		name        string
		floor       float64
		spread      bool
		wantKept    []string
		wantReasons []string
	}{
		{
			name:     "one node per gang, floor 50",
			floor:    50,
			wantKept: []string{"fits", "big-gpu", "two-big"},
			wantReasons: []string{
				"too-big: needs 48 GiB per GPU, above every GPU's memory (largest 40 GiB)",
				"three-big: needs 3 GPUs with 30 GiB, the cluster has 2",
				"gang-of-8: needs 8 GPUs with 12 GiB, 32 CPU cores and 128 GiB of RAM on one node; no node has them",
				"cpu-hog: needs 64 CPU cores and 16 GiB of RAM per replica, more than any node has",
				"slow: throughput 10 is below the floor 50",
				"gang-cpu: needs 4 GPUs with 12 GiB, 36 CPU cores and 64 GiB of RAM on one node; no node has them",
			},
		},
		{
			name:     "spread gangs, no floor",
			spread:   true,
			wantKept: []string{"fits", "big-gpu", "two-big", "gang-of-8", "slow", "gang-cpu"},
			wantReasons: []string{
				"too-big: needs 48 GiB per GPU, above every GPU's memory (largest 40 GiB)",
				"three-big: needs 3 GPUs with 30 GiB, the cluster has 2",
				"cpu-hog: needs 64 CPU cores and 16 GiB of RAM per replica, more than any node has",
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			kept, dropped := ch.Filter(fam, tc.floor, tc.spread)
			var gotKept, gotReasons []string
			for _, p := range kept {
				gotKept = append(gotKept, p.Config.ID)
			}
			for _, d := range dropped {
				gotReasons = append(gotReasons, d.String())
			}
			if diff := cmp.Diff(tc.wantKept, gotKept); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantReasons, gotReasons); diff != "" {
				t.Errorf("reasons (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCheckerReduce(t *testing.T) {
	ch, err := NewChecker(testCluster())
	if err != nil {
		t.Fatal(err)
	}
	j := &elastico.Job{ID: "j", Floor: 50, Profiles: []elastico.Profile{
		prof("fits", 1, 1, 12, 4, 16, 100, 1),
		prof("worse", 1, 1, 14, 4, 16, 90, 1), // dominated by fits
		prof("too-big", 1, 1, 48, 4, 16, 500, 1),
	}}
	kept, dropped, err := ch.Reduce(j)
	if err != nil || len(kept) != 1 || kept[0].Config.ID != "fits" || len(dropped) != 1 {
		t.Errorf("Reduce: kept %v, dropped %v, err %v", kept, dropped, err)
	}
	j.Floor = 1000
	_, _, err = ch.Reduce(j)
	if !errors.Is(err, ErrInfeasible) || !IsInfeasible(err) || !strings.Contains(err.Error(), `rst: job "j"`) ||
		!strings.Contains(err.Error(), "too-big: needs 48 GiB") || !strings.Contains(err.Error(), "fits: throughput 100 is below the floor 1000") {
		t.Errorf("infeasible job: %v", err)
	}
}

func TestNewCheckerErrors(t *testing.T) {
	if _, err := NewChecker(nil); err == nil {
		t.Error("nil cluster accepted")
	}
	c := testCluster()
	c.Nodes[1].GPUs[2].Memory = math.NaN()
	if _, err := NewChecker(c); err == nil || !strings.Contains(err.Error(), `gpu "b-g2"`) {
		t.Errorf("NaN memory: %v", err)
	}
	c = testCluster()
	c.Nodes[0].RAM = -1
	if _, err := NewChecker(c); err == nil || !strings.Contains(err.Error(), `node "a"`) {
		t.Errorf("negative RAM: %v", err)
	}
	ch, err := NewChecker(&elastico.Cluster{})
	if err != nil {
		t.Fatal(err)
	}
	p := prof("x", 1, 1, 1, 1, 1, 1, 1)
	if why := ch.Why(&p, 0, false); why != "the cluster has no GPU" {
		t.Errorf("empty cluster: %q", why)
	}
}

// BenchmarkCheckerFilter checks 20,000 families of 8 configurations against
// a cluster of 16,384 GPUs (the largest size Epoch is benchmarked at).
func BenchmarkCheckerFilter(b *testing.B) {
	var c elastico.Cluster
	for i := range 2048 {
		n := elastico.Node{ID: fmt.Sprint("n", i), CPU: 96, RAM: 1024}
		mem := []float64{40, 80}[i%2]
		for k := range 8 {
			n.GPUs = append(n.GPUs, elastico.GPU{ID: fmt.Sprint("n", i, "g", k), Memory: mem})
		}
		c.Nodes = append(c.Nodes, n)
	}
	ch, err := NewChecker(&c)
	if err != nil {
		b.Fatal(err)
	}
	fam := make([]elastico.Profile, 8)
	for i := range fam {
		fam[i] = prof(fmt.Sprint("c", i), 1<<(i%4), 0.5, float64(10*(i+1)), 4, 32, float64(100*(i+1)), 1)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for range 20000 {
			for i := range fam {
				_ = ch.Why(&fam[i], 150, false)
			}
		}
	}
}
