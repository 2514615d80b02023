package annotation

import (
	"strings"
	"testing"

	"github.com/elastico/elastico"
	"github.com/google/go-cmp/cmp"
)

func TestParseNode(t *testing.T) {
	tests := []struct {
		name    string
		labels  map[string]string
		count   int64
		want    NodeGPUs
		wantErr string
	}{
		{"mps node", map[string]string{GPUMemoryLabel: "40960", GPUProductLabel: "NVIDIA-A100-SXM4-40GB", SharingLabel: "mps"}, 4,
			NodeGPUs{Count: 4, MemoryGiB: 40, Model: "NVIDIA-A100-SXM4-40GB", Shared: true}, ""},
		{"no sharing label", map[string]string{GPUMemoryLabel: "16384"}, 2, NodeGPUs{Count: 2, MemoryGiB: 16}, ""},
		{"sharing none", map[string]string{GPUMemoryLabel: "16384", SharingLabel: "none"}, 1, NodeGPUs{Count: 1, MemoryGiB: 16}, ""},
		{"no GPUs", map[string]string{GPUMemoryLabel: "16384"}, 0, NodeGPUs{}, "0 allocatable GPUs"},
		{"no memory label", map[string]string{}, 2, NodeGPUs{}, "label nvidia.com/gpu.memory is missing"},
		{"bad memory label", map[string]string{GPUMemoryLabel: "40GB"}, 2, NodeGPUs{}, `label nvidia.com/gpu.memory is "40GB"`},
		{"memory label in KiB", map[string]string{GPUMemoryLabel: "41943040"}, 2, NodeGPUs{}, `label nvidia.com/gpu.memory is "41943040", want a positive number of MiB, at most 1048576 (1024 GiB)`},
		{"bad sharing label", map[string]string{GPUMemoryLabel: "1024", SharingLabel: "mig"}, 2, NodeGPUs{}, `label elastico.io/gpu-sharing is "mig"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseNode(tt.labels, tt.count)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseNode error = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseNode (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNodeGPUIDs(t *testing.T) {
	n := NodeGPUs{Count: 2, MemoryGiB: 16, Model: "V100", Shared: true}.Node("rack1-node7", 30, 100)
	want := elastico.Node{ID: "rack1-node7", CPU: 30, RAM: 100, GPUs: []elastico.GPU{
		{ID: "rack1-node7/gpu0", Model: "V100", Memory: 16, Shared: true},
		{ID: "rack1-node7/gpu1", Model: "V100", Memory: 16, Shared: true},
	}}
	if diff := cmp.Diff(want, n); diff != "" {
		t.Errorf("Node (-want +got):\n%s", diff)
	}
	for i, g := range n.GPUs {
		node, idx, err := ParseGPUID(g.ID)
		if err != nil || node != "rack1-node7" || idx != i {
			t.Errorf("ParseGPUID(%q) = %q, %d, %v", g.ID, node, idx, err)
		}
	}
	for _, bad := range []string{"gpu0", "/gpu0", "n/gpu", "n/gpu-1", "n/gpux", "n/cpu0"} {
		if _, _, err := ParseGPUID(bad); err == nil {
			t.Errorf("ParseGPUID(%q) = nil error", bad)
		}
	}
}
