package rst

import (
	"testing"

	"github.com/elastico/elastico"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestLaunch(t *testing.T) {
	train := &elastico.Job{
		ID: "t", Class: elastico.Training, Optimizer: elastico.SGD, ReferenceBatch: 64,
	}
	adam := &elastico.Job{ID: "a", Class: elastico.Training, Optimizer: elastico.Adam, ReferenceBatch: 256}
	// No reference: the first profile's batch is not taken as one.
	noRef := &elastico.Job{ID: "n", Class: elastico.Training, Optimizer: elastico.SGD,
		Profiles: []elastico.Profile{{Config: elastico.Configuration{BatchSize: 16}}}}
	serve := &elastico.Job{ID: "s", Class: elastico.Inference}
	p := func(c elastico.Configuration, sm, mem float64) *elastico.Profile {
		return &elastico.Profile{Config: c, Demand: elastico.Demand{GPUs: max(1, c.GPUs), SM: sm, GPUMemory: mem}}
	}
	tests := []struct {
		name    string
		job     *elastico.Job
		profile *elastico.Profile
		gpus    []LaunchGPU
		want    elastico.LaunchParams
	}{
		{
			name:    "exclusive GPU, batch doubled under SGD",
			job:     train,
			profile: p(elastico.Configuration{BatchSize: 128, AMP: true, GPUs: 1}, 1, 8),
			gpus:    []LaunchGPU{{Index: 0, Memory: 32}},
			want:    elastico.LaunchParams{BatchSize: 128, AMP: true, LRScale: 2, MemoryFraction: 0.25, MaxSplitSizeMB: 512},
		},
		{
			name:    "two shared GPUs, checkpointing, batch halved",
			job:     train,
			profile: p(elastico.Configuration{BatchSize: 32, Checkpointing: true, GPUs: 2}, 0.5, 10),
			gpus:    []LaunchGPU{{Index: 1, Memory: 40, Shared: true}, {Index: 3, Memory: 40, Shared: true}},
			want: elastico.LaunchParams{BatchSize: 32, Checkpointing: true, LRScale: 0.5, MemoryFraction: 0.25,
				MaxSplitSizeMB: 512, MPSPinnedMemLimit: "1=10240MB,3=10240MB", MPSActiveThreadPercentage: 50},
		},
		{
			name:    "mixed gang: fraction of the smallest GPU, MPS limit only where shared",
			job:     adam,
			profile: p(elastico.Configuration{BatchSize: 1024, GPUs: 2}, 0.34, 12.3),
			gpus:    []LaunchGPU{{Index: 0, Memory: 80, Shared: true}, {Index: 2, Memory: 40}},
			want: elastico.LaunchParams{BatchSize: 1024, LRScale: 2, MemoryFraction: 12.3 / 40,
				MaxSplitSizeMB: 512, MPSPinnedMemLimit: "0=12596MB", MPSActiveThreadPercentage: 34},
		},
		{
			name:    "inference on a shared GPU: vLLM's memory utilization and max_num_seqs",
			job:     serve,
			profile: p(elastico.Configuration{BatchSize: 8, KVCacheFrac: 0.3, MaxSeqs: 64, GPUs: 1}, 0.25, 20),
			gpus:    []LaunchGPU{{Index: 5, Memory: 80, Shared: true}},
			want: elastico.LaunchParams{BatchSize: 8, LRScale: 1, MemoryFraction: 0.25, MaxNumSeqs: 64,
				MaxSplitSizeMB: 1024, MPSPinnedMemLimit: "5=20480MB", MPSActiveThreadPercentage: 25},
		},
		{
			name:    "small budget: split size at its floor",
			job:     train,
			profile: p(elastico.Configuration{BatchSize: 64, GPUs: 1}, 0.1, 1),
			gpus:    []LaunchGPU{{Index: 0, Memory: 16, Shared: true}},
			want: elastico.LaunchParams{BatchSize: 64, LRScale: 1, MemoryFraction: 1.0 / 16,
				MaxSplitSizeMB: 128, MPSPinnedMemLimit: "0=1024MB", MPSActiveThreadPercentage: 10},
		},
		{
			name:    "demand above the GPU: fraction capped at 1",
			job:     train,
			profile: p(elastico.Configuration{BatchSize: 64, GPUs: 1}, 1, 20),
			gpus:    []LaunchGPU{{Index: 0, Memory: 16}},
			want:    elastico.LaunchParams{BatchSize: 64, LRScale: 1, MemoryFraction: 1, MaxSplitSizeMB: 1024},
		},
		{
			name:    "not placed yet: no fraction, no MPS",
			job:     train,
			profile: p(elastico.Configuration{BatchSize: 64, GPUs: 1}, 1, 4),
			want:    elastico.LaunchParams{BatchSize: 64, LRScale: 1, MaxSplitSizeMB: 256},
		},
		{
			name:    "no reference batch: no guessed scale",
			job:     noRef,
			profile: p(elastico.Configuration{BatchSize: 256, GPUs: 1}, 1, 4),
			want:    elastico.LaunchParams{BatchSize: 256, LRScale: 1, MaxSplitSizeMB: 256},
		},
		{
			name:    "nil job: no learning-rate rule",
			profile: p(elastico.Configuration{BatchSize: 64, GPUs: 1}, 1, 4),
			gpus:    []LaunchGPU{{Index: 0, Memory: 16}},
			want:    elastico.LaunchParams{BatchSize: 64, LRScale: 1, MemoryFraction: 0.25, MaxSplitSizeMB: 256},
		},
		{
			name: "nil profile",
			job:  train,
			want: elastico.LaunchParams{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Launch(tc.job, tc.profile, tc.gpus)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("Launch mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMaxSplitSize(t *testing.T) {
	tests := []struct {
		gib    float64
		wantMB int
	}{{0, 0}, {-1, 0}, {0.5, 128}, {2, 128}, {3, 128}, {4.5, 256}, {6, 256}, {8, 512}, {15.9, 512}, {16, 1024}, {80, 1024}}
	for _, tc := range tests {
		if got := maxSplitSize(tc.gib); got != tc.wantMB {
			t.Errorf("maxSplitSize(%g) = %d, want %d", tc.gib, got, tc.wantMB)
		}
	}
}

func BenchmarkLaunch(b *testing.B) {
	j := &elastico.Job{ID: "t", Class: elastico.Training, Optimizer: elastico.Adam, ReferenceBatch: 64}
	p := &elastico.Profile{Config: elastico.Configuration{BatchSize: 256, GPUs: 4},
		Demand: elastico.Demand{GPUs: 4, SM: 0.5, GPUMemory: 12}}
	gpus := []LaunchGPU{{0, 40, true}, {1, 40, true}, {2, 40, true}, {3, 40, true}}
	b.ReportAllocs()
	for b.Loop() {
		_ = Launch(j, p, gpus)
	}
}
