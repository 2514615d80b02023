package pds

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/rst"
)

// TestEpochGPUModels: on a cluster of K80s and V100s, jobs whose families
// have only V100 profiles never run on a K80, through epochs of growth,
// reservations (held GPUs) and restores; jobs with a profile per model run
// only where the profile chosen says.
func TestEpochGPUModels(t *testing.T) {
	st := &elastico.State{Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	for i, model := range []string{"K80", "K80", "V100"} {
		n := elastico.Node{ID: fmt.Sprintf("n%d", i), CPU: 64, RAM: 488}
		for k := range 4 {
			n.GPUs = append(n.GPUs, elastico.GPU{ID: fmt.Sprintf("n%dg%d", i, k), Model: model, Memory: 16, Shared: true})
		}
		st.Cluster.Nodes = append(st.Cluster.Nodes, n)
	}
	v100, err := rst.GavelFamily("v100", "ResNet-18")
	if err != nil {
		t.Fatal(err)
	}
	both, err := rst.GavelFamilyOn("ResNet-18", "v100", "k80")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		j := elastico.Job{ID: fmt.Sprintf("v%d", i), Family: v100, Arrival: st.Now.Add(-time.Duration(i) * time.Hour), ReferenceBatch: 16}
		if i%2 == 1 {
			j.ID, j.Family = fmt.Sprintf("b%d", i), both
		}
		st.Jobs = append(st.Jobs, j)
	}
	s, err := New(Config{Clock: fixedClock(), ReserveAfter: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	idx := st.Cluster.Index()
	ran := map[string]bool{}
	for epoch := range 8 {
		plan, err := s.Epoch(context.Background(), st)
		if err != nil {
			t.Fatalf("epoch %d: %v", epoch, err)
		}
		for i, d := range plan.Decisions {
			a := d.Assignment
			if a == nil {
				continue
			}
			p, _ := st.Jobs[i].Profile(a.ConfigID)
			for _, g := range a.GPUs {
				r := idx[g]
				m := st.Cluster.Nodes[r.Node].GPUs[r.GPU].Model
				if !p.RunsOn(m) {
					t.Errorf("epoch %d: job %s under %s (%s) on %s, a %s", epoch, st.Jobs[i].ID, a.ConfigID, p.Hardware.GPUModel, g, m)
				}
				ran[m] = true
			}
			if strings.HasPrefix(st.Jobs[i].ID, "v") && p.Hardware.GPUModel != "V100" {
				t.Errorf("job %s runs %s", st.Jobs[i].ID, a.ConfigID)
			}
		}
		st = apply(st, plan)
		st.Now = st.Now.Add(5 * time.Minute)
	}
	// The market prices SM shares alike on every model, so jobs with
	// both models' profiles bid for the faster V100s' configurations and
	// wait for them; which model a job should take is the market's to
	// learn. All this test asks is that none lands on a wrong model.
	if !ran["V100"] {
		t.Errorf("jobs ran on %v, want the V100s used", ran)
	}
}

// TestAccountGPUModel: pds's own fit check refuses a GPU of another model.
func TestAccountGPUModel(t *testing.T) {
	st := &elastico.State{Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Cluster: elastico.Cluster{Nodes: []elastico.Node{{
		ID: "n0", CPU: 64, RAM: 488,
		GPUs: []elastico.GPU{{ID: "k0", Model: "K80", Memory: 12, Shared: true}, {ID: "v0", Model: "V100", Memory: 16, Shared: true}},
	}}}}
	e := &epoch{st: st, overs: 1, nodeFirst: []int32{0}, gpuNode: []int32{0, 0}, ngpu: 2}
	a := e.account()
	p := &elastico.Profile{Config: elastico.Configuration{ID: "b32-g1@V100"}, Demand: elastico.Demand{GPUs: 1, SM: 0.5, GPUMemory: 4, CPU: 1, RAM: 1},
		Hardware: elastico.Hardware{GPUModel: "V100"}}
	if why := a.add([]elastico.GPURef{{Node: 0, GPU: 0}}, p); !strings.Contains(why, "GPU k0 is a K80, and configuration b32-g1@V100 was profiled for V100") {
		t.Errorf("add on a K80 = %q", why)
	}
	if why := a.add([]elastico.GPURef{{Node: 0, GPU: 1}}, p); why != "" {
		t.Errorf("add on a V100 = %q", why)
	}
	if why := a.add([]elastico.GPURef{{Node: 0, GPU: 1}, {Node: 0, GPU: 0}}, p); !strings.Contains(why, "GPU k0 is a K80") {
		t.Errorf("add of a gang over both = %q", why)
	}
}
