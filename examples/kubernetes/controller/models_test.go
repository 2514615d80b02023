package controller

import (
	"context"
	"strings"
	"testing"

	"github.com/elastico/elastico/examples/kubernetes/annotation"
	"github.com/elastico/elastico/pds"
	v1 "k8s.io/api/core/v1"
)

// modelNode is gpuNode with the product label NVIDIA's GPU feature
// discovery sets.
func modelNode(name string, n, memMiB int, product string) *v1.Node {
	node := gpuNode(name, n, memMiB, "")
	node.Labels[annotation.GPUProductLabel] = product
	return node
}

// onModel is a one-GPU job whose only profile was measured on model.
func onModel(model string) string {
	return `{"class":"training","model":"m","family":[{"id":"b32","batchSize":32,"gpus":1,"sm":0.5,"gpuMemoryGiB":10,"cpu":2,"ramGiB":4,"throughput":100,"gpuModel":"` + model + `"}]}`
}

// Two GPU models: each node's GPUs carry the model its product label
// names, and the library's default scheduler places each job on its
// profile's model.
func TestGPUModels(t *testing.T) {
	nodes := []*v1.Node{modelNode("a100", 1, 81920, "NVIDIA-A100-SXM4-80GB"), modelNode("v100", 1, 16384, "Tesla-V100-SXM2-16GB")}
	pods := []*v1.Pod{newPod("on-v100", 0, onModel("V100")), newPod("on-a100", 1, onModel("A100"))}
	s := validState(epoch0, pods, nodes, testOptions)
	if len(s.problems) != 0 {
		t.Fatalf("problems: %+v", s.problems)
	}
	for _, n := range s.state.Cluster.Nodes {
		want := map[string]string{"a100": "A100", "v100": "V100"}[n.ID]
		for _, g := range n.GPUs {
			if g.Model != want {
				t.Errorf("GPU %s: model %q, want %q", g.ID, g.Model, want)
			}
		}
	}
	sched, err := pds.New(pds.Config{})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := sched.Epoch(context.Background(), &s.state)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"ns/on-v100": "v100/gpu0", "ns/on-a100": "a100/gpu0"}
	for _, d := range plan.Decisions {
		if d.Assignment == nil || len(d.Assignment.GPUs) != 1 || d.Assignment.GPUs[0] != want[d.JobID] {
			t.Errorf("job %s: assignment %+v, want it on %s", d.JobID, d.Assignment, want[d.JobID])
		}
	}
}

// A job whose family runs on no GPU model of the cluster is left alone
// with an Event, and the others are planned; bound, it takes its node out.
func TestGPUModelsNoModel(t *testing.T) {
	nodes := []*v1.Node{modelNode("a100", 2, 81920, "NVIDIA-A100-SXM4-80GB"), modelNode("v100", 2, 16384, "Tesla-V100-SXM2-16GB")}
	pods := []*v1.Pod{
		newPod("on-h100", 0, onModel("H100")),
		newPod("on-v100", 1, onModel("V100")),
		// Bound to an A100 under a profile for V100s: the node was
		// relabelled, say.
		admitted(newPod("misplaced", 2, onModel("V100")), "b32", "a100", true, 1),
	}
	s := validState(epoch0, pods, nodes, testOptions)
	if err := s.state.Validate(); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, j := range s.state.Jobs {
		ids = append(ids, j.ID)
	}
	if len(ids) != 1 || ids[0] != "ns/on-v100" {
		t.Errorf("jobs %v, want only ns/on-v100", ids)
	}
	if len(s.state.Cluster.Nodes) != 1 || s.state.Cluster.Nodes[0].ID != "v100" {
		t.Errorf("cluster %+v, want node a100 out", s.state.Cluster.Nodes)
	}
	for _, want := range []string{
		`ElasticoInvalidJob: ns/on-h100: are for GPU models H100 only`,
		`ElasticoInvalidJob: ns/misplaced: "a100/gpu1" is a A100, and configuration "b32" was profiled for V100`,
		`ElasticoNodeOut: a100: pod ns/misplaced is bound here and its job does not validate`,
	} {
		reason, rest, _ := strings.Cut(want, ": ")
		name, sub, _ := strings.Cut(rest, ": ")
		found := false
		for _, p := range s.problems {
			found = found || (p.reason == reason && objName(p.obj) == name && strings.Contains(p.message, sub))
		}
		if !found {
			t.Errorf("no problem %q among %+v", want, s.problems)
		}
	}
}

func objName(o any) string {
	switch o := o.(type) {
	case *v1.Pod:
		return JobID(o)
	case *v1.Node:
		return o.Name
	}
	return ""
}
