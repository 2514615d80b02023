package annotation

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecisionRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		d    Decision
	}{
		{"waiting", Decision{Status: "Unplaceable: no node has 4 free GPUs", Generation: 3}},
		{"never admitted", Decision{Status: "Unaffordable: prices above value"}},
		{"admitted", Decision{
			Status: "Scheduled", Generation: 2, Config: "b128-amp-g2", Node: "gpu-a",
			GPUs: []GPU{{Index: 2, Shared: true}, {Index: 0}}, SM: 0.5, MemoryGiB: 14.5, Slowdown: 1.125,
			Action: "start", Launch: []string{"ELASTICO_AMP=1", "ELASTICO_BATCH_SIZE=128"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ann := tt.d.Annotations()
			ann["unrelated"] = "kept"
			got, ok, err := ParseDecision(ann)
			if err != nil || !ok {
				t.Fatalf("ParseDecision(%v) = _, %v, %v", ann, ok, err)
			}
			if diff := cmp.Diff(tt.d, got); diff != "" {
				t.Errorf("round trip (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecisionAnnotations(t *testing.T) {
	d := Decision{Status: "Scheduled", Generation: 4, Config: "kv40", Node: "gpu-b",
		GPUs: []GPU{{Index: 1, Shared: true}}, SM: 0.3, MemoryGiB: 16, Slowdown: 1.04, Action: "reconfigure",
		Launch: []string{"CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30", "ELASTICO_MAX_NUM_SEQS=64"}}
	want := map[string]string{
		Status: "Scheduled", Generation: "4", Config: "kv40", Node: "gpu-b", GPUs: "1", GPUSharing: "shared",
		GPUSM: "0.3", GPUMemory: "16", Slowdown: "1.040", Action: "reconfigure",
		Env: "CUDA_DEVICE_ORDER=PCI_BUS_ID\nCUDA_MPS_ACTIVE_THREAD_PERCENTAGE=30\nCUDA_VISIBLE_DEVICES=1\n" +
			"ELASTICO_CONFIG=kv40\nELASTICO_GENERATION=4\nELASTICO_MAX_NUM_SEQS=64\n",
	}
	if diff := cmp.Diff(want, d.Annotations()); diff != "" {
		t.Errorf("Annotations (-want +got):\n%s", diff)
	}
}

func TestParseDecisionErrors(t *testing.T) {
	gd := Decision{Status: "Scheduled", Generation: 1, Config: "c", Node: "n", GPUs: []GPU{{Index: 0}, {Index: 1}},
		SM: 1, MemoryGiB: 8, Slowdown: 1}
	good := gd.Annotations()
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for k2, v2 := range good {
			m[k2] = v2
		}
		if v == "<delete>" {
			delete(m, k)
		} else {
			m[k] = v
		}
		return m
	}
	tests := []struct {
		name    string
		ann     map[string]string
		wantErr string
	}{
		{"bad generation", with(Generation, "two"), "elastico.io/generation is \"two\""},
		{"node without config", map[string]string{Status: "x", Generation: "1", Node: "n"}, "elastico.io/node is set but elastico.io/config is missing"},
		{"empty config", with(Config, ""), "elastico.io/config is empty"},
		{"no node", with(Node, "<delete>"), "elastico.io/node is missing"},
		{"bad index", with(GPUs, "0,x"), "elastico.io/gpus entry 1 is \"x\""},
		{"repeated index", with(GPUs, "1,1"), "lists device 1 twice"},
		{"sharing length", with(GPUSharing, "whole"), "want one of shared/whole per entry"},
		{"sharing word", with(GPUSharing, "whole,half"), "entry 1 is \"half\""},
		{"SM zero", with(GPUSM, "0"), "elastico.io/gpu-sm is 0"},
		{"memory NaN", with(GPUMemory, "NaN"), "elastico.io/gpu-memory-gib is \"NaN\""},
		{"no env", with(Env, "<delete>"), "elastico.io/env is missing"},
		{"env line", with(Env, "A=1\nnonsense\n"), "elastico.io/env line 2 is \"nonsense\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := ParseDecision(tt.ann)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "annotation: ") {
				t.Errorf("ParseDecision error = %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
	if _, ok, err := ParseDecision(map[string]string{Job: "{}"}); ok || err != nil {
		t.Errorf("ParseDecision(no decision) = _, %v, %v; want false, nil", ok, err)
	}
}

func TestSameWork(t *testing.T) {
	base := Decision{Status: "Scheduled", Generation: 1, Config: "c", Node: "n", GPUs: []GPU{{Index: 0}}, SM: 1, Launch: []string{"A=1"}}
	tests := []struct {
		name string
		edit func(*Decision)
		want bool
	}{
		{"identical", func(*Decision) {}, true},
		{"sharing and slowdown are informational", func(d *Decision) { d.GPUs[0].Shared = true; d.Slowdown = 1.2; d.Status = "x" }, true},
		{"other config", func(d *Decision) { d.Config = "d" }, false},
		{"other device", func(d *Decision) { d.GPUs[0].Index = 1 }, false},
		{"other launch", func(d *Decision) { d.Launch = []string{"A=2"} }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := base
			e.GPUs = append([]GPU(nil), base.GPUs...)
			tt.edit(&e)
			if got := base.SameWork(&e); got != tt.want {
				t.Errorf("SameWork = %v, want %v", got, tt.want)
			}
		})
	}
}
