package rst

import (
	"strings"
	"testing"

	"github.com/elastico/elastico"
	"github.com/google/go-cmp/cmp"
)

func ids(cs []elastico.Configuration) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}

func TestEnumerate(t *testing.T) {
	tests := []struct {
		name    string
		space   Space
		wantIDs []string
	}{
		{
			name:    "training knobs, given out of order",
			space:   Space{Class: elastico.Training, BatchSizes: []int{128, 64}, Checkpointing: []bool{true, false}, AMP: []bool{true}, GPUs: []int{2, 1}},
			wantIDs: []string{"b64-amp-g1", "b64-ckpt-amp-g1", "b128-amp-g1", "b128-ckpt-amp-g1", "b64-amp-g2", "b64-ckpt-amp-g2", "b128-amp-g2", "b128-ckpt-amp-g2"},
		},
		{
			name:    "less than a sample per GPU is left out",
			space:   Space{Class: elastico.Training, BatchSizes: []int{2, 8}, GPUs: []int{1, 4}},
			wantIDs: []string{"b2-g1", "b8-g1", "b8-g4"},
		},
		{
			name:    "inference: KV budgets and sequence limits",
			space:   Space{Class: elastico.Inference, KVCacheFracs: []float64{0.5, 0.25}, MaxSeqs: []int{64, 256}},
			wantIDs: []string{"kv25-s64-g1", "kv25-s256-g1", "kv50-s64-g1", "kv50-s256-g1"},
		},
		{
			name:    "inference with engine batch, AMP and tensor parallelism",
			space:   Space{Class: elastico.Inference, BatchSizes: []int{8}, AMP: []bool{true}, GPUs: []int{2}, KVCacheFracs: []float64{0.125}, MaxSeqs: []int{32}},
			wantIDs: []string{"b8-amp-kv12.5-s32-g2"},
		},
		{
			name:    "a single batch size",
			space:   Space{Class: elastico.Training, BatchSizes: []int{32}},
			wantIDs: []string{"b32-g1"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.space.Enumerate()
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantIDs, ids(got)); diff != "" {
				t.Errorf("IDs (-want +got):\n%s", diff)
			}
			for _, c := range got {
				back, err := ParseConfigID(c.ID)
				if err != nil {
					t.Errorf("ParseConfigID(%q): %v", c.ID, err)
				}
				if diff := cmp.Diff(c, back); diff != "" {
					t.Errorf("round trip of %q (-enumerated +parsed):\n%s", c.ID, diff)
				}
			}
			if len(got) > tc.space.Size() {
				t.Errorf("%d configurations, more than Size() = %d", len(got), tc.space.Size())
			}
		})
	}
}

func TestSpaceValidate(t *testing.T) {
	tests := []struct {
		name    string
		space   Space
		wantErr string
	}{
		{"no batch sizes", Space{Class: elastico.Training}, "BatchSizes is empty"},
		{"zero batch", Space{Class: elastico.Training, BatchSizes: []int{0}}, "BatchSizes[0] is 0"},
		{"duplicate GPUs", Space{Class: elastico.Training, BatchSizes: []int{8}, GPUs: []int{2, 2}}, "GPUs[1] = 2 is a duplicate"},
		{"KV for training", Space{Class: elastico.Training, BatchSizes: []int{8}, KVCacheFracs: []float64{0.5}}, "inference knobs"},
		{"checkpointing for inference", Space{Class: elastico.Inference, Checkpointing: []bool{true}}, "training knob"},
		{"KV above 1", Space{Class: elastico.Inference, KVCacheFracs: []float64{1.5}}, "KVCacheFracs[0] is 1.5"},
		{"KV duplicate to a millionth", Space{Class: elastico.Inference, KVCacheFracs: []float64{0.3, 0.3000000001}}, "KVCacheFracs[1]"},
		{"AMP twice", Space{Class: elastico.Training, BatchSizes: []int{8}, AMP: []bool{true, true}}, "AMP is [true true]"},
		{"bad class", Space{Class: 5, BatchSizes: []int{8}}, "Class is 5"},
		{"negative seqs", Space{Class: elastico.Inference, MaxSeqs: []int{-1}}, "MaxSeqs[0] is -1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.space.Enumerate()
			if err == nil || !strings.HasPrefix(err.Error(), "rst: space: ") || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestParseConfigID(t *testing.T) {
	tests := []struct {
		id         string
		wantConfig elastico.Configuration
		wantErr    string
	}{
		{"b64-ckpt-amp-g2", elastico.Configuration{ID: "b64-ckpt-amp-g2", BatchSize: 64, Checkpointing: true, AMP: true, GPUs: 2}, ""},
		{"kv40-s128-g1", elastico.Configuration{ID: "kv40-s128-g1", KVCacheFrac: 0.4, MaxSeqs: 128, GPUs: 1}, ""},
		{"", elastico.Configuration{}, "empty"},
		{"b64", elastico.Configuration{ID: "b64"}, "no g<GPUs>"},
		{"amp-b64-g1", elastico.Configuration{ID: "amp-b64-g1"}, "out of order"},
		{"b64-b32-g1", elastico.Configuration{ID: "b64-b32-g1"}, "out of order or repeated"},
		{"b064-g1", elastico.Configuration{ID: "b064-g1"}, "without leading zeros"},
		{"b64-g0", elastico.Configuration{ID: "b64-g0"}, "positive integer"},
		{"b64-fp8-g1", elastico.Configuration{ID: "b64-fp8-g1"}, "unknown part"},
		{"kv140-g1", elastico.Configuration{ID: "kv140-g1"}, "kv<percent"},
		{"kv40.0-g1", elastico.Configuration{ID: "kv40.0-g1"}, "not canonical"},
	}
	for _, tc := range tests {
		t.Run(tc.id, func(t *testing.T) {
			got, err := ParseConfigID(tc.id)
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantConfig, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParseConfigID(f *testing.F) {
	for _, s := range []string{"b64-ckpt-amp-g2", "kv12.5-s32-g4", "b1-g1", "x", "-g1", "g1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		c, err := ParseConfigID(id)
		if err == nil && ConfigID(c) != id {
			t.Errorf("ParseConfigID(%q) accepted a non-canonical ID (canonical %q)", id, ConfigID(c))
		}
	})
}
