package placement

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/elastico/elastico"
)

// mixedCluster is a node of K80s (first, so best fit meets them first)
// and a node of V100s, four GPUs each.
func mixedCluster() *elastico.Cluster {
	c := cluster(2, 4, 16, true, 64, 512)
	for k := range c.Nodes[0].GPUs {
		c.Nodes[0].GPUs[k].Model = "K80"
		c.Nodes[1].GPUs[k].Model = "V100"
	}
	return c
}

func modelItem(id, model string, gpus int, sm, mem float64) elastico.PlacementItem {
	it := item(id, gpus, sm, mem)
	it.Profile.Hardware.GPUModel = model
	return it
}

// TestPlaceGPUModel: an item goes only on GPUs of its profile's model; an
// empty model goes anywhere; a model the cluster lacks waits, and says so.
func TestPlaceGPUModel(t *testing.T) {
	tests := []struct {
		name      string
		items     []elastico.PlacementItem
		wantNodes []int // the node of each item's GPUs; -1: not placed
		wantWhy   []string
	}{
		{
			name:      "V100 profiles skip the K80s best fit prefers",
			items:     []elastico.PlacementItem{modelItem("a", "V100", 1, 0.5, 4), modelItem("b", "V100", 1, 0.5, 4), modelItem("c", "K80", 1, 0.5, 4)},
			wantNodes: []int{1, 1, 0},
		},
		{
			name:      "a V100 gang stays on the V100 node",
			items:     []elastico.PlacementItem{modelItem("g", "V100", 4, 1, 8)},
			wantNodes: []int{1},
		},
		{
			name:      "an empty model runs anywhere",
			items:     []elastico.PlacementItem{modelItem("any", "", 1, 1, 8)},
			wantNodes: []int{0},
		},
		{
			name: "the V100s full, a V100 job waits while a K80 job of the same shape runs",
			items: []elastico.PlacementItem{
				modelItem("big", "V100", 4, 1, 16), modelItem("v", "V100", 1, 0.5, 4), modelItem("k", "K80", 1, 0.5, 4),
			},
			wantNodes: []int{1, -1, 0},
			wantWhy:   []string{"", "no V100 GPU has 0.50 SM", ""},
		},
		{
			name:      "a model the cluster lacks",
			items:     []elastico.PlacementItem{modelItem("h", "H100", 1, 0.5, 4)},
			wantNodes: []int{-1},
			wantWhy:   []string{"was profiled for GPU model H100; the cluster has K80, V100"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req := &elastico.PlacementRequest{Cluster: mixedCluster(), Items: tc.items}
			p, _ := New(Config{})
			var out elastico.Placement
			if err := p.Place(context.Background(), req, &out); err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, p.Config(), req, &out)
			for i, want := range tc.wantNodes {
				got := -1
				if gs := out.GPUs[i]; gs != nil {
					got = gs[0].Node
				}
				if got != want {
					t.Errorf("item %s on node %d, want %d (reason %q)", tc.items[i].Job.ID, got, want, out.Reasons[i])
				}
				if i < len(tc.wantWhy) && !strings.HasPrefix(out.Reasons[i], tc.wantWhy[i]) {
					t.Errorf("item %s: reason %q, want it to start %q", tc.items[i].Job.ID, out.Reasons[i], tc.wantWhy[i])
				}
			}
		})
	}
}

// TestPlaceGPUModelNeverOnK80: V100-only jobs, many more than the V100s
// hold, with and without current GPUs (a K80 among them), never land on
// a K80.
func TestPlaceGPUModelNeverOnK80(t *testing.T) {
	req := &elastico.PlacementRequest{Cluster: mixedCluster()}
	for i := range 24 {
		it := modelItem(fmt.Sprintf("j%d", i), "V100", 1+i%2, 0.2+0.1*float64(i%5), 2+float64(i%7))
		it.Job.Spread = i%3 == 0
		if i%4 == 0 {
			it.Current = []elastico.GPURef{ref(0, i%4), ref(1, i%4)}[:it.Profile.Demand.GPUs]
		}
		req.Items = append(req.Items, it)
	}
	p, _ := New(Config{})
	var out elastico.Placement
	if err := p.Place(context.Background(), req, &out); err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, p.Config(), req, &out)
	placed := 0
	for i, gs := range out.GPUs {
		for _, g := range gs {
			if g.Node != 1 {
				t.Errorf("item %d on %v, a K80", i, g)
			}
		}
		if gs != nil {
			placed++
		}
	}
	if placed == 0 {
		t.Error("no item placed")
	}
}
