package annotation

import (
	"strings"
	"testing"

	"github.com/elastico/elastico"
	"github.com/google/go-cmp/cmp"
)

const resnet = `{
  "class": "training", "model": "resnet50", "optimizer": "sgd", "referenceBatch": 64, "weight": 2,
  "family": [
    {"id": "b64", "batchSize": 64, "gpus": 1, "sm": 0.5, "gpuMemoryGiB": 9, "cpu": 2, "ramGiB": 8,
     "throughput": 380, "efficiency": 1, "counters": {"sm_active": 0.45, "dram_active": 0.3}},
    {"id": "b128-amp-g2", "batchSize": 128, "amp": true, "gpus": 2, "sm": 1, "gpuMemoryGiB": 14,
     "throughput": 1190, "efficiency": 0.93}
  ]
}`

func TestParseJob(t *testing.T) {
	j, err := ParseJob("ml/resnet", resnet)
	if err != nil {
		t.Fatal(err)
	}
	var cs elastico.Counters
	cs.Set(elastico.SMActive, 0.45)
	cs.Set(elastico.DRAMActive, 0.3)
	want := elastico.Job{
		ID: "ml/resnet", Class: elastico.Training, Weight: 2, Optimizer: elastico.SGD, ReferenceBatch: 64,
		Profiles: []elastico.Profile{
			{Family: "resnet50", Class: elastico.Training,
				Config:     elastico.Configuration{ID: "b64", BatchSize: 64, GPUs: 1},
				Demand:     elastico.Demand{GPUs: 1, SM: 0.5, GPUMemory: 9, CPU: 2, RAM: 8},
				Throughput: 380, Efficiency: 1, Counters: cs},
			{Family: "resnet50", Class: elastico.Training,
				Config:     elastico.Configuration{ID: "b128-amp-g2", BatchSize: 128, AMP: true, GPUs: 2},
				Demand:     elastico.Demand{GPUs: 2, SM: 1, GPUMemory: 14},
				Throughput: 1190, Efficiency: 0.93},
		},
	}
	if diff := cmp.Diff(want, j); diff != "" {
		t.Errorf("ParseJob (-want +got):\n%s", diff)
	}
}

func TestParseJobErrors(t *testing.T) {
	one := func(profile string) string {
		return `{"class":"inference","family":[` + profile + `]}`
	}
	ok := `{"id":"a","gpus":1,"sm":0.3,"gpuMemoryGiB":10,"throughput":5}`
	tests := []struct {
		name    string
		value   string
		wantErr string
	}{
		{"not JSON", `{"class":`, "invalid JSON"},
		{"unknown field", `{"class":"training","famly":[]}`, `unknown field "famly"`},
		{"wrong type", `{"class":"training","family":[{"id":"a","gpus":"one"}]}`, "family.gpus: cannot take a JSON string"},
		{"trailing data", one(ok) + `{}`, "unexpected data after the JSON object"},
		{"no class", `{"family":[` + ok + `]}`, "class: is missing"},
		{"bad class", `{"class":"serving","family":[` + ok + `]}`, `class: is "serving"`},
		{"bad optimizer", `{"class":"training","optimizer":"lamb","family":[` + ok + `]}`, `optimizer: is "lamb"`},
		{"empty family", `{"class":"training","family":[]}`, "family: is empty"},
		{"no GPUs", one(`{"id":"a","gpus":0,"sm":0.3,"gpuMemoryGiB":10,"throughput":5}`), "family[0].gpus: is 0"},
		{"SM above one", one(`{"id":"a","gpus":1,"sm":1.5,"gpuMemoryGiB":10,"throughput":5}`), "Profiles[0].Demand.SM is 1.5"},
		{"negative memory", one(`{"id":"a","gpus":1,"sm":0.5,"gpuMemoryGiB":-1,"throughput":5}`), "Profiles[0].Demand.GPUMemory is negative"},
		{"duplicate IDs", one(ok + "," + ok), `Profiles[1].Config.ID "a" is a duplicate`},
		{"unknown counter", one(`{"id":"a","gpus":1,"sm":0.5,"gpuMemoryGiB":1,"throughput":5,"counters":{"sm_busy":0.5}}`), "family[0].counters.sm_busy: is not a counter name"},
		{"counter above one", one(`{"id":"a","gpus":1,"sm":0.5,"gpuMemoryGiB":1,"throughput":5,"counters":{"sm_active":2}}`), "family[0].counters.sm_active: is 2"},
		{"floor above every throughput", `{"class":"inference","floor":9,"family":[` + ok + `]}`, "Floor is 9, above every configuration's throughput"},
		{"memory in MiB", one(`{"id":"a","gpus":1,"sm":0.5,"gpuMemoryGiB":10240,"throughput":5}`), "Profiles[0].Demand.GPUMemory is 10240 GiB, above MaxGPUMemory"},
		{"zero throughput", one(`{"id":"a","gpus":1,"sm":0.5,"gpuMemoryGiB":10,"throughput":0}`), "Profiles[0].Throughput is 0"},
		{"sgd without a reference batch", `{"class":"training","family":[{"id":"a","batchSize":64,"gpus":1,"sm":0.5,"gpuMemoryGiB":10,"throughput":5},` +
			`{"id":"b","batchSize":128,"gpus":1,"sm":1,"gpuMemoryGiB":16,"throughput":9}]}`, "ReferenceBatch is unset, but Optimizer sgd"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseJob("ns/p", tt.value)
			if err == nil {
				t.Fatalf("ParseJob(%s) = nil error, want one containing %q", tt.value, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "annotation: elastico.io/job: ") {
				t.Errorf("ParseJob error = %q, want it prefixed and containing %q", err, tt.wantErr)
			}
		})
	}
}
