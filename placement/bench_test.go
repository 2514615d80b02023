package placement

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/elastico/elastico"
)

// benchRequest is n items on nodes × 8 GPUs of 80 GiB: seven in ten are
// single-GPU, the rest gangs of 2 or 4 (overloaded: 2, 4 or 8, and larger
// shares, so half the items find no room). When running is set, the items
// that a first placement put somewhere carry those GPUs as Current, and a
// fifth of them have grown or shrunk since. With models, the nodes are
// of three GPU models in turn and each item's profile names one of them,
// or (one in four) none.
func benchRequest(nodes, n int, running, overloaded, models bool) *elastico.PlacementRequest {
	r := rand.New(rand.NewPCG(7, uint64(n)))
	c := cluster(nodes, 8, 80, true, 128, 1024)
	names := []string{"V100", "P100", "K80", ""}
	if models {
		for i := range c.Nodes {
			for k := range c.Nodes[i].GPUs {
				c.Nodes[i].GPUs[k].Model = names[i%3]
			}
		}
	}
	req := &elastico.PlacementRequest{Cluster: c}
	for i := range n {
		g := []int{1, 1, 1, 1, 1, 1, 1, 2, 2, 4}[r.IntN(10)]
		sm, mem := 0.1+0.6*r.Float64(), 2+28*r.Float64()
		if overloaded {
			g = []int{1, 1, 1, 1, 1, 1, 2, 2, 4, 8}[r.IntN(10)]
			sm, mem = 0.1+0.8*r.Float64(), 2+40*r.Float64()
		}
		it := item(fmt.Sprintf("j%d", i), g, sm, mem)
		it.Profile.Demand.CPU = float64(1 + r.IntN(6))
		it.Profile.Demand.RAM = float64(8 + r.IntN(48))
		if models {
			it.Profile.Hardware.GPUModel = names[r.IntN(4)]
		}
		req.Items = append(req.Items, it)
	}
	if running {
		p, _ := New(Config{})
		var out elastico.Placement
		if err := p.Place(context.Background(), req, &out); err != nil {
			panic(err)
		}
		for i := range req.Items {
			req.Items[i].Current = out.GPUs[i]
			if r.IntN(5) == 0 {
				d := &req.Items[i].Profile.Demand
				d.SM = min(1, d.SM*(0.6+0.8*r.Float64()))
				d.GPUMemory *= 0.6 + 0.8*r.Float64()
			}
		}
	}
	return req
}

// costlyPredictor costs about what a small MLP does per call: a few hundred
// multiply-adds over the two profiles' counters.
type costlyPredictor struct{}

func (costlyPredictor) Slowdown(v, a *elastico.Profile) float64 {
	s := 0.0
	for k := range 256 {
		s += float64(k) * (v.Demand.SM + a.Demand.SM) * 1e-6
	}
	return 1 + v.Demand.SM*a.Demand.SM + s*1e-9
}

func BenchmarkPlace(b *testing.B) {
	for _, bc := range []struct {
		nodes, items int
		running      bool
		pred         elastico.Predictor
		overloaded   bool
		models       bool
	}{
		{64, 500, false, nil, false, false},
		{64, 500, true, costlyPredictor{}, false, false},
		{512, 5000, true, costlyPredictor{}, false, false},
		{2048, 20000, false, nil, false, false},
		{2048, 20000, false, costlyPredictor{}, false, false},
		{2048, 20000, true, costlyPredictor{}, false, false},
		{2048, 20000, true, costlyPredictor{}, true, false},
		{2048, 20000, false, nil, false, true},
		{2048, 20000, true, costlyPredictor{}, false, true},
	} {
		name := fmt.Sprintf("items=%d/gpus=%d/running=%v/predictor=%v/overloaded=%v", bc.items, bc.nodes*8, bc.running, bc.pred != nil, bc.overloaded)
		if bc.models {
			name += "/models=3"
		}
		b.Run(name, func(b *testing.B) {
			req := benchRequest(bc.nodes, bc.items, bc.running, bc.overloaded, bc.models)
			req.Predictor = bc.pred
			p, _ := New(Config{})
			var out elastico.Placement
			b.ReportAllocs()
			placed := 0
			cpu0 := cpuNanos()
			for b.Loop() {
				if err := p.Place(context.Background(), req, &out); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(cpuNanos()-cpu0)/float64(b.N), "cpu-ns/op")
			for _, g := range out.GPUs {
				if g != nil {
					placed++
				}
			}
			b.ReportMetric(float64(placed)/float64(bc.items), "placed/item")
		})
	}
}

// BenchmarkSortByKey times the two sorts of sortByKey on the same keys
// (random dominant shares, one or two GPUs), around radixMin.
func BenchmarkSortByKey(b *testing.B) {
	for _, n := range []int{128, 512, 1024, 20000} {
		r := rand.New(rand.NewPCG(1, 2))
		w := &work{keyOf: make([]float64, n), dem: make([]elastico.Demand, n)}
		for i := range n {
			w.keyOf[i] = r.Float64()
			w.dem[i].GPUs = 1 + r.IntN(2)
		}
		idx := make([]int32, n)
		for _, sort := range []struct {
			name string
			f    func([]int32)
		}{{"compare", w.compareSort}, {"radix", w.radixSort}} {
			b.Run(fmt.Sprintf("items=%d/%s", n, sort.name), func(b *testing.B) {
				for b.Loop() {
					for i := range idx {
						idx[i] = int32(i)
					}
					sort.f(idx)
				}
			})
		}
	}
}
