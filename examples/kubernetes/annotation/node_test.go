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
			NodeGPUs{Count: 4, MemoryGiB: 40, Model: "A100", Shared: true}, ""},
		{"model label wins", map[string]string{GPUMemoryLabel: "16384", GPUProductLabel: "Tesla-V100-SXM2-16GB", ModelLabel: "v100-sxm2"}, 2,
			NodeGPUs{Count: 2, MemoryGiB: 16, Model: "v100-sxm2"}, ""},
		{"model label alone", map[string]string{GPUMemoryLabel: "16384", ModelLabel: "V100"}, 2, NodeGPUs{Count: 2, MemoryGiB: 16, Model: "V100"}, ""},
		{"empty model label", map[string]string{GPUMemoryLabel: "16384", ModelLabel: ""}, 2, NodeGPUs{}, "label elastico.io/gpu-model is empty"},
		{"product names no model", map[string]string{GPUMemoryLabel: "16384", GPUProductLabel: "NVIDIA"}, 2, NodeGPUs{}, `label nvidia.com/gpu.product is "NVIDIA", which names no GPU model: set elastico.io/gpu-model`},
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

func TestGPUModel(t *testing.T) {
	for product, want := range map[string]string{
		"NVIDIA-A100-SXM4-80GB":            "A100",
		"NVIDIA-A100-SXM4-40GB-MIG-1g.5gb": "A100",
		"NVIDIA-A100-80GB-PCIe":            "A100",
		"NVIDIA-H100-80GB-HBM3":            "H100",
		"NVIDIA-H100-PCIe":                 "H100",
		"Tesla-V100-SXM2-16GB":             "V100",
		"Tesla-V100-PCIE-32GB":             "V100",
		"Tesla-P100-PCIE-16GB":             "P100",
		"Tesla-T4":                         "T4",
		"Tesla-K80":                        "K80",
		"NVIDIA-L4":                        "L4",
		"NVIDIA-L40S":                      "L40S",
		"NVIDIA-A10G":                      "A10G",
		"NVIDIA-RTX-A6000":                 "RTX-A6000",
		"NVIDIA-GeForce-RTX-4090":          "RTX-4090",
		"Quadro-RTX-8000":                  "RTX-8000",
		"NVIDIA-TITAN-V":                   "TITAN-V",
		"NVIDIA-RTX":                       "RTX",
		"tesla v100 sxm2":                  "V100",
	} {
		got, err := GPUModel(product)
		if err != nil || got != want {
			t.Errorf("GPUModel(%q) = %q, %v, want %q", product, got, err, want)
		}
	}
	for _, bad := range []string{"", "NVIDIA", "NVIDIA-Tesla", "--", "NVIDIA-GeForce-"} {
		if got, err := GPUModel(bad); err == nil {
			t.Errorf("GPUModel(%q) = %q, nil error", bad, got)
		}
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
