package adapter

import (
	"strings"
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/google/go-cmp/cmp"
)

func TestParseSpec(t *testing.T) {
	var counters elastico.Counters
	counters.Set(elastico.SMActive, 0.62)
	counters.Set(elastico.DRAMActive, 0.3)
	tests := []struct {
		name string
		text string
		want *Spec
	}{{
		name: "training with two configurations",
		text: "train resnet50 opt=adam ref=128 floor=300 w=2 prio=5 params=25e6 work=1e6 | b=128 sm=.5 mem=6 tput=520 eff=.9 | b=256 g=2 sm=1 mem=11 tput=900 cpu=2 ram=8 amp ckpt sm_active=.62 dram_active=.3",
		want: &Spec{
			Class: elastico.Training, Family: "resnet50", Weight: 2, Floor: 300, Priority: 5,
			Optimizer: elastico.Adam, ReferenceBatch: 128, Params: 25e6, Remaining: 1e6,
			Configs: []elastico.Profile{{
				Family: "resnet50", Class: elastico.Training, Params: 25e6,
				Config:     elastico.Configuration{ID: "b128-g1", BatchSize: 128, GPUs: 1},
				Demand:     elastico.Demand{GPUs: 1, SM: 0.5, GPUMemory: 6},
				Throughput: 520, Efficiency: 0.9,
			}, {
				Family: "resnet50", Class: elastico.Training, Params: 25e6,
				Config:     elastico.Configuration{ID: "b256-ckpt-amp-g2", BatchSize: 256, GPUs: 2, AMP: true, Checkpointing: true},
				Demand:     elastico.Demand{GPUs: 2, SM: 1, GPUMemory: 11, CPU: 2, RAM: 8},
				Throughput: 900, Counters: counters,
			}},
		},
	}, {
		name: "inference, no family name, explicit id",
		text: "infer floor=100 | kv=.3 seqs=64 sm=.4 mem=24 tput=900 | id=big kv=.6 seqs=128 sm=.7 mem=48 tput=1500",
		want: &Spec{
			Class: elastico.Inference, Floor: 100,
			Configs: []elastico.Profile{{
				Class:      elastico.Inference,
				Config:     elastico.Configuration{ID: "kv0.3-s64-g1", KVCacheFrac: 0.3, MaxSeqs: 64, GPUs: 1},
				Demand:     elastico.Demand{GPUs: 1, SM: 0.4, GPUMemory: 24},
				Throughput: 900,
			}, {
				Class:      elastico.Inference,
				Config:     elastico.Configuration{ID: "big", KVCacheFrac: 0.6, MaxSeqs: 128, GPUs: 1},
				Demand:     elastico.Demand{GPUs: 1, SM: 0.7, GPUMemory: 48},
				Throughput: 1500,
			}},
		},
	}, {
		name: "family file: lines and comments",
		text: "# llama-7b serving, measured on H100\ninfer llama7b\nkv=.3 seqs=64 sm=.4 mem=24 tput=900   # small\n\nkv=.6 seqs=128 sm=.7 mem=48 tput=1500\n",
		want: &Spec{
			Class: elastico.Inference, Family: "llama7b",
			Configs: []elastico.Profile{{
				Family: "llama7b", Class: elastico.Inference,
				Config:     elastico.Configuration{ID: "kv0.3-s64-g1", KVCacheFrac: 0.3, MaxSeqs: 64, GPUs: 1},
				Demand:     elastico.Demand{GPUs: 1, SM: 0.4, GPUMemory: 24},
				Throughput: 900,
			}, {
				Family: "llama7b", Class: elastico.Inference,
				Config:     elastico.Configuration{ID: "kv0.6-s128-g1", KVCacheFrac: 0.6, MaxSeqs: 128, GPUs: 1},
				Demand:     elastico.Demand{GPUs: 1, SM: 0.7, GPUMemory: 48},
				Throughput: 1500,
			}},
		},
	}, {
		name: "one batch measured on two GPU models",
		text: "train resnet50 ref=64 | b=64 sm=.6 mem=6 tput=300 gpu=V100 | b=64 sm=.5 mem=6 tput=700 gpu=A100 | id=any b=64 sm=.6 mem=6 tput=250",
		want: &Spec{
			Class: elastico.Training, Family: "resnet50", ReferenceBatch: 64,
			Configs: []elastico.Profile{{
				Family: "resnet50", Class: elastico.Training,
				Config:     elastico.Configuration{ID: "b64-g1-V100", BatchSize: 64, GPUs: 1},
				Demand:     elastico.Demand{GPUs: 1, SM: 0.6, GPUMemory: 6},
				Throughput: 300, Hardware: elastico.Hardware{GPUModel: "V100"},
			}, {
				Family: "resnet50", Class: elastico.Training,
				Config:     elastico.Configuration{ID: "b64-g1-A100", BatchSize: 64, GPUs: 1},
				Demand:     elastico.Demand{GPUs: 1, SM: 0.5, GPUMemory: 6},
				Throughput: 700, Hardware: elastico.Hardware{GPUModel: "A100"},
			}, {
				Family: "resnet50", Class: elastico.Training,
				Config:     elastico.Configuration{ID: "any", BatchSize: 64, GPUs: 1},
				Demand:     elastico.Demand{GPUs: 1, SM: 0.6, GPUMemory: 6},
				Throughput: 250,
			}},
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSpec(tt.text)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseSpec (-want +got):\n%s", diff)
			}
			// The text form reads back to the same spec.
			again, err := ParseSpec(got.String())
			if err != nil {
				t.Fatalf("ParseSpec(String()): %v\n%s", err, got.String())
			}
			if diff := cmp.Diff(got, again); diff != "" {
				t.Errorf("round trip through %q (-first +second):\n%s", got.String(), diff)
			}
			// Every valid spec gives a job the root package accepts.
			st := elastico.State{Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Jobs: []elastico.Job{got.Job("7")}}
			if err := st.Validate(); err != nil {
				t.Errorf("State.Validate: %v", err)
			}
		})
	}
}

func TestParseSpecErrors(t *testing.T) {
	tests := []struct {
		name    string
		text    string
		wantErr string
	}{
		{"empty", "  ", "spec is empty"},
		{"no configuration", "train resnet", "no configuration"},
		{"bad class", "learn | sm=1 mem=1 tput=1", `class "learn"`},
		{"unknown header key", "train x lr=3 | sm=1 mem=1 tput=1", `unknown key "lr"`},
		{"bad optimizer", "train opt=lamb | sm=1 mem=1 tput=1", `opt="lamb": want sgd, adam or adascale`},
		{"zero weight", "train w=0 | sm=1 mem=1 tput=1", `w="0": is 0`},
		{"missing sm", "train | mem=1 tput=1", "configuration 1 (\"mem=1 tput=1\"): sm= is missing"},
		{"missing mem", "train | sm=1 tput=1", "mem= is missing"},
		{"missing tput", "train | sm=1 mem=1", "tput= is missing"},
		{"sm above one", "train | sm=1 mem=1 tput=1 | sm=1.5 mem=1 tput=2", `configuration 2 ("sm=1.5 mem=1 tput=2"): sm="1.5": want a share in (0, 1]`},
		{"negative mem", "train | sm=1 mem=-1 tput=1", `mem="-1": is negative`},
		{"NaN", "train | sm=1 mem=NaN tput=1", `mem="NaN": not a finite number`},
		{"zero gpus", "train | g=0 sm=1 mem=1 tput=1", `g="0": want ≥ 1`},
		{"bad flag", "train | sm=1 mem=1 tput=1 fp8", `unknown flag "fp8"`},
		{"bad counter", "train | sm=1 mem=1 tput=1 l2_hit=.5", `unknown key "l2_hit"`},
		{"counter above one", "train | sm=1 mem=1 tput=1 sm_active=2", `sm_active="2": want a fraction`},
		{"duplicate id", "train | b=8 sm=1 mem=1 tput=1 | b=8 sm=.5 mem=1 tput=1", `id "b8-g1" is already configuration 1's`},
		{"empty gpu model", "train | sm=1 mem=1 tput=1 gpu=", `gpu="": want a GPU model name`},
		{"gpu model with a comma", "train | sm=1 mem=1 tput=1 gpu=V100,A100", `gpu="V100,A100": want a GPU model name`},
		{"same knobs, same model", "train | b=8 sm=1 mem=1 tput=1 gpu=T4 | b=8 sm=.5 mem=1 tput=1 gpu=T4", `id "b8-g1-T4" is already configuration 1's`},
		{"floor above all", "train floor=10 | sm=1 mem=1 tput=5", "floor=10 is above every configuration's tput (best 5)"},
		{"memory in MiB", "train | sm=1 mem=40960 tput=1", `mem="40960": is above 1024 GiB: give GiB, not MiB`},
		{"sgd without a reference batch", "train resnet50 | b=16 sm=.5 mem=6 tput=100 | b=256 sm=1 mem=11 tput=900",
			"ref= is missing: opt=sgd scales the learning rate from it, and the configurations have b=16 and b=256"},
		{"adam without a reference batch", "train opt=adam | b=32 sm=.5 mem=6 tput=100 | b=64 sm=1 mem=11 tput=180", "ref= is missing: opt=adam"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseSpec(tt.text)
			if err == nil {
				t.Fatalf("ParseSpec(%q) = nil error, want %q", tt.text, tt.wantErr)
			}
			if !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "adapter: ") {
				t.Errorf("ParseSpec(%q) = %q, want it to contain %q", tt.text, err, tt.wantErr)
			}
		})
	}
}

// FuzzParseSpec checks that no text makes ParseSpec panic, and that every
// spec it accepts gives a valid job and survives its text form.
func FuzzParseSpec(f *testing.F) {
	f.Add("train resnet50 opt=sgd ref=128 | b=128 sm=.5 mem=6 tput=520 | b=256 sm=1 mem=11 tput=900 amp")
	f.Add("infer | kv=.3 seqs=64 sm=.4 mem=24 tput=900")
	f.Fuzz(func(t *testing.T, text string) {
		s, err := ParseSpec(text)
		if err != nil {
			return
		}
		st := elastico.State{Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Jobs: []elastico.Job{s.Job("1")}}
		if err := st.Validate(); err != nil {
			t.Fatalf("accepted %q but State.Validate: %v", text, err)
		}
		if _, err := ParseSpec(s.String()); err != nil {
			t.Fatalf("String() of %q does not parse: %v", text, err)
		}
	})
}
