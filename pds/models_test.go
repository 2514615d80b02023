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
	v100, err := rst.GavelFamily("V100", "ResNet-18")
	if err != nil {
		t.Fatal(err)
	}
	both, err := rst.GavelFamilyOn("ResNet-18", "V100", "K80")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		j := elastico.Job{ID: fmt.Sprintf("v%d", i), Profiles: v100, Arrival: st.Now.Add(-time.Duration(i) * time.Hour), ReferenceBatch: 16}
		if i%2 == 1 {
			j.ID, j.Profiles = fmt.Sprintf("b%d", i), both
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
	// Which model a job with both models' profiles takes is
	// TestModelsClearedApart's; all this test asks is that none lands on
	// a wrong model.
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
	e := &epoch{st: st, overs: 1, layout: layout{nodeFirst: []int32{0}, gpuNode: []int32{0, 0}, ngpu: 2}}
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

// TestModelsClearedApart: four V100s and four K80s, eight waiting jobs
// that may run on either, four CycleGANs (8.8 times as fast on a V100 as
// on a K80, in Gavel's measurements) and four A3Cs (2.1 times). Priced as
// one pool, every job asked for a V100 and half of them waited; with each
// model cleared apart, all eight start at once, the CycleGANs on the
// V100s, the A3Cs on the K80s, and nothing moves after.
func TestModelsClearedApart(t *testing.T) {
	st := &elastico.State{Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	for i, model := range []string{"V100", "K80"} {
		n := elastico.Node{ID: fmt.Sprintf("n%d", i), CPU: 64, RAM: 488}
		for k := range 4 {
			n.GPUs = append(n.GPUs, elastico.GPU{ID: fmt.Sprintf("%s-%d", model, k), Model: model, Memory: 12, Shared: true})
		}
		st.Cluster.Nodes = append(st.Cluster.Nodes, n)
	}
	for i, jt := range []string{"A3C", "CycleGAN"} {
		f, err := rst.GavelFamilyOn(jt, "V100", "K80")
		if err != nil {
			t.Fatal(err)
		}
		for k := range 4 {
			st.Jobs = append(st.Jobs, elastico.Job{ID: fmt.Sprintf("%s-%d", jt, k), Profiles: f, Arrival: st.Now.Add(-time.Duration(2*k+i) * time.Minute)})
		}
	}
	s, err := New(Config{Clock: fixedClock()})
	if err != nil {
		t.Fatal(err)
	}
	for epoch := range 5 {
		plan, err := s.Epoch(context.Background(), st)
		if err != nil {
			t.Fatalf("epoch %d: %v", epoch, err)
		}
		if epoch > 0 && len(plan.Actions) > 0 {
			t.Errorf("epoch %d: actions %v, want none", epoch, plan.Actions)
		}
		for i, d := range plan.Decisions {
			job := &st.Jobs[i]
			a := d.Assignment
			if a == nil {
				t.Errorf("epoch %d: job %s does not run: %v", epoch, job.ID, d.Status)
				continue
			}
			p, _ := job.Profile(a.ConfigID)
			want := "K80"
			if strings.HasPrefix(job.ID, "CycleGAN") {
				want = "V100"
			}
			if p.Hardware.GPUModel != want || len(a.GPUs) != 1 {
				t.Errorf("epoch %d: job %s runs %s on %v, want one %s", epoch, job.ID, a.ConfigID, a.GPUs, want)
			}
		}
		st = apply(st, plan)
		st.Now = st.Now.Add(time.Minute)
	}
}

// TestFasterModelWhenWorthIt: a job runs on a K80 because the one V100 is
// taken; when the V100 frees up it moves there if what it gains beats
// what the move costs (its restart), and stays on the K80 otherwise.
func TestFasterModelWhenWorthIt(t *testing.T) {
	for _, tc := range []struct {
		jobType string
		restart time.Duration
		age     time.Duration // at the first epoch; the second is an hour later
		moves   bool
	}{
		{"CycleGAN", 30 * time.Second, time.Hour, true}, // 8.8 times as fast on the V100
		{"A3C", 30 * time.Second, time.Hour, true},      // 2.1 times
		{"A3C", 5 * time.Hour, time.Hour, false},        // a restart worth hours of its work
		// The same restart, to a job that has run for six weeks: it is
		// expected to run as long again, and 5 hours of that is worth
		// paying to run twice as fast.
		{"A3C", 5 * time.Hour, 1000 * time.Hour, true},
	} {
		t.Run(fmt.Sprintf("%s/restart=%v/age=%v", tc.jobType, tc.restart, tc.age), func(t *testing.T) {
			st := &elastico.State{Now: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
			for i, model := range []string{"V100", "K80"} {
				st.Cluster.Nodes = append(st.Cluster.Nodes, elastico.Node{ID: fmt.Sprintf("n%d", i), CPU: 64, RAM: 488,
					GPUs: []elastico.GPU{{ID: model, Model: model, Memory: 12, Shared: true}}})
			}
			both, err := rst.GavelFamilyOn(tc.jobType, "V100", "K80")
			if err != nil {
				t.Fatal(err)
			}
			v100, err := rst.GavelFamily("V100", "ResNet-50")
			if err != nil {
				t.Fatal(err)
			}
			st.Jobs = []elastico.Job{
				{ID: "first", Profiles: v100[:1], Arrival: st.Now.Add(-tc.age - time.Hour)},
				{ID: "mover", Profiles: both, Arrival: st.Now.Add(-tc.age), RestartTime: tc.restart},
			}
			s, err := New(Config{Clock: fixedClock()})
			if err != nil {
				t.Fatal(err)
			}
			where := func(plan *elastico.Plan) string {
				if a := plan.Decisions[len(plan.Decisions)-1].Assignment; a != nil {
					return a.GPUs[0]
				}
				return "nowhere"
			}
			plan, err := s.Epoch(context.Background(), st)
			if err != nil {
				t.Fatal(err)
			}
			if got := where(plan); got != "K80" {
				t.Fatalf("with the V100 taken, the job runs on %s, want the K80", got)
			}
			st = apply(st, plan)
			st.Now = st.Now.Add(time.Hour)
			st.Jobs = st.Jobs[1:] // the V100's job ends
			plan, err = s.Epoch(context.Background(), st)
			if err != nil {
				t.Fatal(err)
			}
			want := "K80"
			if tc.moves {
				want = "V100"
			}
			if got := where(plan); got != want {
				t.Errorf("with the V100 free, the job runs on %s, want %s (%v)", got, want, plan.Decisions[len(plan.Decisions)-1].Status)
			}
		})
	}
}
