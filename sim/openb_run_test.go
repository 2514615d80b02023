package sim_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/pds"
	"github.com/elastico/elastico/sim"
	"github.com/elastico/elastico/sim/baseline"
)

// spy records the GPU models each job runs on, epoch after epoch.
type spy struct {
	elastico.Scheduler
	mu    sync.Mutex
	ranOn map[string][]string
}

func (s *spy) Epoch(ctx context.Context, st *elastico.State) (*elastico.Plan, error) {
	model := map[string]string{}
	for _, n := range st.Cluster.Nodes {
		for _, g := range n.GPUs {
			model[g.ID] = g.Model
		}
	}
	s.mu.Lock()
	for _, j := range st.Jobs {
		if j.Running == nil {
			continue
		}
		for _, g := range j.Running.GPUs {
			if m := model[g]; !slices.Contains(s.ranOn[j.ID], m) {
				s.ranOn[j.ID] = append(s.ranOn[j.ID], m)
			}
		}
	}
	s.mu.Unlock()
	return s.Scheduler.Epoch(ctx, st)
}

// TestOpenBPodsRunOnTheirModels replays a small Alibaba-style trace on a
// cluster of three of its models: the pods asking for V100M32 only ever
// run on V100M32 GPUs, while pods with an empty gpu_spec run on whichever
// model has room, more than one of them here.
func TestOpenBPodsRunOnTheirModels(t *testing.T) {
	nodes, err := sim.ReadOpenBNodes(strings.NewReader("sn,cpu_milli,memory_mib,gpu,model\n"+
		"v16,64000,262144,4,V100M16\n"+
		"v32,48000,376832,2,V100M32\n"+
		"t4,104000,524288,2,T4\n"), "nodes.csv")
	if err != nil {
		t.Fatal(err)
	}
	mix, err := sim.OpenBMix(nodes.Nodes)
	if err != nil {
		t.Fatal(err)
	}
	pods := "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
	for i := range 8 {
		pods += "any" + string(rune('0'+i)) + ",1,1,1,1000,,BE,Running,0,7200,0\n"
	}
	for i := range 3 {
		pods += "v32-" + string(rune('0'+i)) + ",1,1,1,1000,V100M32,BE,Running,0,3600,0\n"
	}
	tr, err := sim.ReadOpenB(strings.NewReader(pods), "pods.csv")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []struct {
		name string
		new  func() (elastico.Scheduler, error)
	}{
		{"volcano-agnostic", func() (elastico.Scheduler, error) { return baseline.Volcano{AnyModel: true}, nil }},
		{"elastico", func() (elastico.Scheduler, error) { return pds.New(pds.Config{}) }},
	} {
		s := &spy{ranOn: map[string][]string{}}
		e := &sim.Experiment{Mix: mix, Trace: tr, Seeds: []uint64{1},
			Policies: []sim.Policy{{Name: p.name, New: func() (elastico.Scheduler, error) {
				inner, err := p.new()
				s.Scheduler = inner
				return s, err
			}}},
			Workload: sim.WorkloadOptions{Saturated: true}}
		out, err := e.Execute(context.Background())
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		if r := out.Results[0][0]; len(r.Jobs) != 11 {
			t.Fatalf("%s: %d jobs", p.name, len(r.Jobs))
		}
		anyModels := map[string]bool{}
		for id, models := range s.ranOn {
			if strings.HasPrefix(id, "v32-") && !slices.Equal(models, []string{"V100M32"}) {
				t.Errorf("%s: pod %s asked for V100M32, ran on %v", p.name, id, models)
			}
			if strings.HasPrefix(id, "any") {
				for _, m := range models {
					anyModels[m] = true
				}
			}
		}
		// volcano-agnostic takes free GPUs of any model the job has a
		// profile for: the eight pods fill more than the reference's four.
		if p.name == "volcano-agnostic" && len(anyModels) < 2 {
			t.Errorf("%s: pods without a gpu_spec ran on %v only", p.name, anyModels)
		}
	}
}
