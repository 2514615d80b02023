package adapter

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/pds"
	"github.com/google/go-cmp/cmp"
)

func TestFeatureModel(t *testing.T) {
	for feature, want := range map[string]string{
		"gpu_v100": "V100", "gpu_a100": "A100", "GPU_H100": "H100", "gpu_t4": "T4", "gpu_k80": "K80",
		"gpu_p100": "P100", "gpu_a10g": "A10G", "gpu_l40s": "L40S", "gpu_rtx-a6000": "RTX-A6000",
		"gpu_": "", "gpu_nvlink": "", "gpu_32gb": "", "gpu_mem_32g": "", "gpu_a100.80": "", "ib": "", "v100": "", "gpu": "",
	} {
		got, ok := FeatureModel(feature)
		if got != want || ok != (want != "") {
			t.Errorf("FeatureModel(%q) = %q, %v, want %q", feature, got, ok, want)
		}
	}
}

func TestDecodeNodesFeatures(t *testing.T) {
	nodes, err := DecodeNodes(strings.NewReader(`{"errors":[],"nodes":[
		{"name":"a","features":"gpu_v100, ib"},
		{"name":"b","features":["gpu_a100","ib"]},
		{"name":"c","features":""},
		{"name":"d","features":null},
		{"name":"e"},
		{"name":"f","features":{"total":"gpu_v100"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]Features{}
	for _, n := range nodes {
		got[n.Name] = n.Features
	}
	want := map[string]Features{
		"a": {Names: []string{"gpu_v100", "ib"}}, "b": {Names: []string{"gpu_a100", "ib"}}, "c": {}, "d": {}, "e": {},
		"f": {Bad: `{"total":"gpu_v100"}`},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("features (-want +got):\n%s", diff)
	}
}

func TestInventoryGPUModels(t *testing.T) {
	nodes := []Node{
		{Name: "v", State: "idle", CPUs: 8, Gres: "gpu:gpu0:1", Features: Features{Names: []string{"ib", "gpu_v100"}}},
		{Name: "a", State: "idle", CPUs: 8, Gres: "gpu:gpu0:1", Features: Features{Names: []string{"gpu_a100"}}},
		{Name: "plain", State: "idle", CPUs: 8, Gres: "gpu:gpu0:1"},
		{Name: "two", State: "idle", CPUs: 8, Gres: "gpu:gpu0:1", Features: Features{Names: []string{"gpu_a100", "gpu_h100"}}},
		{Name: "odd", State: "idle", CPUs: 8, Gres: "gpu:gpu0:1,gpu:gpu1:1", Features: Features{Bad: "42"}},
		{Name: "cpu", State: "idle", CPUs: 8, Features: Features{Bad: "42"}}, // no GPU: no note
	}
	inv, notes := buildInventory(nodes, &gpuModels{fallback: "P100", memory: map[string]float64{"V100": 16}, defMem: 80})
	wantNotes := []string{
		"node two: features gpu_a100 and gpu_h100 name two GPU models (A100, H100): give each node one; no new job goes there",
		"node odd: features is 42, want a string or a list of strings: its GPU model is unknown; no new job goes there",
	}
	if diff := cmp.Diff(wantNotes, notes); diff != "" {
		t.Errorf("notes (-want +got):\n%s", diff)
	}
	// One of the adapter's jobs runs on odd/gpu1: it keeps its GPU.
	inv.hold("odd", []Gres{{Name: "gpu", Type: "gpu1", Count: 1}}, true)
	got := inv.cluster()
	want := elastico.Cluster{Nodes: []elastico.Node{
		{ID: "v", CPU: 8, GPUs: []elastico.GPU{{ID: "v/gpu0", Model: "V100", Memory: 16}}},
		{ID: "a", CPU: 8, GPUs: []elastico.GPU{{ID: "a/gpu0", Model: "A100", Memory: 80}}},
		{ID: "plain", CPU: 8, GPUs: []elastico.GPU{{ID: "plain/gpu0", Model: "P100", Memory: 80}}},
		{ID: "odd", CPU: 8, GPUs: []elastico.GPU{{ID: "odd/gpu1", Memory: 80}}},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cluster (-want +got):\n%s", diff)
	}

	// A site table replaces the rule: gpu_v100 names nothing there.
	inv, notes = buildInventory(nodes[:3], &gpuModels{features: map[string]string{"volta": "V100", "gpu_a100": "A100-80"}, defMem: 80})
	nodes[0].Features.Names = []string{"volta"}
	inv2, _ := buildInventory(nodes[:1], &gpuModels{features: map[string]string{"volta": "V100"}, defMem: 80})
	models := map[string]string{}
	for _, s := range inv.gpus {
		models[s.ID] = s.Model
	}
	for _, s := range inv2.gpus {
		models["table:"+s.ID] = s.Model
	}
	if diff := cmp.Diff(map[string]string{"v/gpu0": "", "a/gpu0": "A100-80", "plain/gpu0": "", "table:v/gpu0": "V100"}, models); diff != "" || len(notes) != 0 {
		t.Errorf("models with a table (-want +got):\n%s\nnotes %q", diff, notes)
	}
}

func TestConfigGPUModels(t *testing.T) {
	f := newFake(1, 0)
	h := newHarness(t, f, keep)
	for cfg, wantErr := range map[*Config]string{
		{GPUModels: map[string]string{"gpu_v100": ""}}:      `Config.GPUModels["gpu_v100"] is empty`,
		{GPUModelMemory: map[string]float64{"V100": 16384}}: `Config.GPUModelMemory["V100"] is 16384, want GiB in (0, 1024]`,
		{GPUModelMemory: map[string]float64{"V100": 0}}:     `Config.GPUModelMemory["V100"] is 0`,
	} {
		cfg.Slurm, cfg.Scheduler, cfg.StateDir, cfg.GPUMemory = f, h.s, t.TempDir(), 80
		if _, err := New(*cfg); err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("New = %v, want %q", err, wantErr)
		}
	}
}

// Two GPU models on two nodes, named by their features; the default
// scheduler puts each job on the model its configurations were measured
// on, with that model's memory in its limits, and a job measured on a
// model the cluster lacks is left out, held, with a log line.
func TestPlacesOnTheProfilesModel(t *testing.T) {
	f := newFake(2, 4)
	f.nodes[0].Name, f.nodes[0].Features = "volta", Features{Names: []string{"gpu_v100"}}
	ampere := f.nodes[0]
	ampere.Name, ampere.Features = "ampere", Features{Names: []string{"ib", "gpu_a100"}}
	f.nodes = append(f.nodes, ampere)
	onV100 := f.submit("elastico:train resnet50 ref=64 | b=64 sm=.6 mem=6 tput=300 gpu=V100", true, "")
	onA100 := f.submit("elastico:train bert ref=32 | b=32 sm=.6 mem=30 tput=90 gpu=A100", true, "")
	onH100 := f.submit("elastico:infer llama | kv=.3 seqs=64 sm=.4 mem=24 tput=900 gpu=H100", true, "")
	sched, err := pds.New(pds.Config{Pinned: true})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarnessWith(t, f, func(st *elastico.State) *elastico.Plan {
		p, err := sched.Epoch(context.Background(), st)
		if err != nil {
			t.Fatalf("Epoch: %v", err)
		}
		return p
	}, func(c *Config) {
		c.GPUModel, c.GPUMemory, c.GPUModelMemory = "", 80, map[string]float64{"V100": 16}
	})
	h.tick()
	f.schedule()
	for id, node := range map[int]string{onV100: "volta", onA100: "ampere"} {
		if j := f.job(id); j.State != "RUNNING" || j.Nodes != node {
			t.Errorf("job %d is %s on %q, want RUNNING on %s\ncalls %q", id, j.State, j.Nodes, node, f.callsOn(id))
		}
	}
	if j := f.job(onH100); !j.Held() || len(f.callsOn(onH100)) != 0 {
		t.Errorf("job %d, measured on H100s only, is %s with calls %q; want it held and untouched", onH100, j.State, f.callsOn(onH100))
	}
	h.tick()
	h.tick()
	if n := strings.Count(h.logs.String(), fmt.Sprintf(`job left out of the plan" job=%d`, onH100)); n != 1 || !strings.Contains(h.logs.String(), "are for GPU models H100 only") {
		t.Errorf("%d log lines name job %d and its models, want 1 in three ticks:\n%s", n, onH100, h.logs)
	}
	st := h.s.states[0]
	models := map[string]string{}
	for _, n := range st.Cluster.Nodes {
		for _, g := range n.GPUs {
			models[g.ID] = fmt.Sprintf("%s %gGiB", g.Model, g.Memory)
		}
	}
	want := map[string]string{"volta/gpu0": "V100 16GiB", "volta/gpu1": "V100 16GiB", "ampere/gpu0": "A100 80GiB", "ampere/gpu1": "A100 80GiB"}
	if diff := cmp.Diff(want, models); diff != "" {
		t.Errorf("the State's GPUs (-want +got):\n%s", diff)
	}
	// The memory limit is a fraction of the V100's 16 GiB, not of 80.
	if env := h.envOf(onV100, 0); env["ELASTICO_MEMORY_FRACTION"] != strconv.FormatFloat(6.0/16, 'f', 4, 64) {
		t.Errorf("job %d: ELASTICO_MEMORY_FRACTION = %q, want 6/16", onV100, env["ELASTICO_MEMORY_FRACTION"])
	}
}
