package annotation

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/elastico/elastico"
)

// NodeGPUs is what the labels and the GPU capacity of a node say about its
// GPUs.
type NodeGPUs struct {
	Count     int     // allocatable GPUs, numbered 0..Count-1
	MemoryGiB float64 // memory of each GPU
	Model     string  // product name, informational
	Shared    bool    // an MPS daemon lets several jobs share each GPU
}

// ParseNode reads a node's GPU description: count is its allocatable GPU
// resource (nvidia.com/gpu), labels its labels. The memory label is
// required (a GPU of unknown memory cannot be placed on); the sharing label
// must be "mps" or "none" when present.
func ParseNode(labels map[string]string, count int64) (NodeGPUs, error) {
	if count <= 0 {
		return NodeGPUs{}, fmt.Errorf("annotation: node has %d allocatable GPUs", count)
	}
	n := NodeGPUs{Count: int(count), Model: labels[GPUProductLabel]}
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
