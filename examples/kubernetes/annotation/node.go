package annotation

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/elastico/elastico"
)

// NodeGPUs is what the labels and the GPU capacity of a node say about its
// GPUs.
type NodeGPUs struct {
	Count     int     // allocatable GPUs, numbered 0..Count-1
	MemoryGiB float64 // memory of each GPU
	Model     string  // the GPU model profiles name (see GPUModel); "" runs any profile
	Shared    bool    // an MPS daemon lets several jobs share each GPU
}

// ParseNode reads a node's GPU description: count is its allocatable GPU
// resource (nvidia.com/gpu), labels its labels. The memory label is
// required (a GPU of unknown memory cannot be placed on); the sharing label
// must be "mps" or "none" when present. The model is the ModelLabel if the
// node has it, else GPUModel of the product label, else "" (the GPUs run
// any profile).
func ParseNode(labels map[string]string, count int64) (NodeGPUs, error) {
	if count <= 0 {
		return NodeGPUs{}, fmt.Errorf("annotation: node has %d allocatable GPUs", count)
	}
	n := NodeGPUs{Count: int(count)}
	if m, ok := labels[ModelLabel]; ok {
		if m == "" {
			return n, fmt.Errorf("annotation: label %s is empty: want the GPU model profiles name (gpuModel), e.g. A100, or no label", ModelLabel)
		}
		n.Model = m
	} else if prod, ok := labels[GPUProductLabel]; ok {
		m, err := GPUModel(prod)
		if err != nil {
			return n, err
		}
		n.Model = m
	}
	mem, ok := labels[GPUMemoryLabel]
	if !ok {
		return n, fmt.Errorf("annotation: label %s is missing (the memory of one GPU, MiB)", GPUMemoryLabel)
	}
	mib, err := strconv.ParseFloat(mem, 64)
	// Above elastico.MaxGPUMemory the label is in a smaller unit than MiB
	// (KiB, bytes), and State.Validate would reject the whole cluster.
	if err != nil || !(mib > 0) || mib > elastico.MaxGPUMemory*1024 {
		return n, fmt.Errorf("annotation: label %s is %q, want a positive number of MiB, at most %d (%d GiB)", GPUMemoryLabel, mem, elastico.MaxGPUMemory*1024, elastico.MaxGPUMemory)
	}
	n.MemoryGiB = mib / 1024
	switch v, ok := labels[SharingLabel]; {
	case !ok || v == "none":
	case v == "mps":
		n.Shared = true
	default:
		return n, fmt.Errorf(`annotation: label %s is %q, want "mps" or "none"`, SharingLabel, v)
	}
	return n, nil
}

// vendorTokens are the words of a product name that name no model.
var vendorTokens = []string{"NVIDIA", "TESLA", "GEFORCE", "QUADRO"}

// seriesTokens are the words that name a GPU model only together with the
// next one: RTX-A6000, RTX-4090, GTX-1080, TITAN-V.
var seriesTokens = []string{"RTX", "GTX", "TITAN"}

// GPUModel maps a product name as NVIDIA's gpu-feature-discovery writes it
// in the nvidia.com/gpu.product label to the model name elastico compares
// with a profile's gpuModel. The rule: split the product at '-' (GFD
// writes spaces as '-'), drop the vendor and brand words NVIDIA, Tesla,
// GeForce and Quadro, and keep the next word, upper-cased, joined with the
// one after it when it is RTX, GTX or TITAN; form factor, memory and MIG
// suffixes are dropped:
//
//	NVIDIA-A100-SXM4-80GB            A100
//	NVIDIA-A100-SXM4-40GB-MIG-1g.5gb A100
//	NVIDIA-H100-80GB-HBM3            H100
//	Tesla-V100-SXM2-16GB             V100
//	Tesla-P100-PCIE-16GB             P100
//	Tesla-T4                         T4
//	Tesla-K80                        K80
//	NVIDIA-L40S                      L40S
//	NVIDIA-RTX-A6000                 RTX-A6000
//	NVIDIA-GeForce-RTX-4090          RTX-4090
//
// A product name with no word left is an error. A node whose product the
// rule names wrongly takes ModelLabel, which wins over the product.
func GPUModel(product string) (string, error) {
	words := strings.FieldsFunc(product, func(r rune) bool { return r == '-' || r == ' ' || r == '_' })
	for len(words) > 0 && slices.Contains(vendorTokens, strings.ToUpper(words[0])) {
		words = words[1:]
	}
	if len(words) == 0 {
		return "", fmt.Errorf("annotation: label %s is %q, which names no GPU model: set %s on the node to the model its jobs' profiles name (gpuModel)", GPUProductLabel, product, ModelLabel)
	}
	m := strings.ToUpper(words[0])
	if slices.Contains(seriesTokens, m) && len(words) > 1 {
		m += "-" + strings.ToUpper(words[1])
	}
	return m, nil
}

// Node returns the elastico.Node for a node with the given name, host CPU
// cores and RAM (GiB) left for elastico's jobs, and GPUs. GPU i gets the ID
// GPUID(name, i), so that its place in Node.GPUs is its device index.
func (n NodeGPUs) Node(name string, cpu, ramGiB float64) elastico.Node {
	out := elastico.Node{ID: name, CPU: cpu, RAM: ramGiB, GPUs: make([]elastico.GPU, n.Count)}
	for i := range out.GPUs {
		out.GPUs[i] = elastico.GPU{ID: GPUID(name, i), Model: n.Model, Memory: n.MemoryGiB, Shared: n.Shared}
	}
	return out
}

// GPUID names GPU index i of a node: "<node>/gpu<i>".
func GPUID(node string, i int) string { return node + "/gpu" + strconv.Itoa(i) }

// ParseGPUID splits a GPUID into the node's name and the device index.
func ParseGPUID(id string) (node string, index int, err error) {
	k := strings.LastIndex(id, "/gpu")
	if k <= 0 {
		return "", 0, fmt.Errorf("annotation: GPU ID %q is not <node>/gpu<index>", id)
	}
	i, err := strconv.Atoi(id[k+len("/gpu"):])
	if err != nil || i < 0 {
		return "", 0, fmt.Errorf("annotation: GPU ID %q is not <node>/gpu<index>", id)
	}
	return id[:k], i, nil
}
