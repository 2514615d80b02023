package elastico

// Cluster is the hardware a scheduler may place jobs on.
type Cluster struct {
	Nodes []Node
}

// Node is one machine: its host CPU and RAM, and its GPUs.
type Node struct {
	ID   string
	CPU  float64 // cores available to jobs
	RAM  float64 // GiB available to jobs
	GPUs []GPU
}

// GPU is one device. IDs are unique across the whole cluster.
type GPU struct {
	ID string
	// Model names the GPU model, e.g. "V100". A profile runs only on GPUs
	// of its Hardware.GPUModel (see Profile.RunsOn): its throughput, SM
	// share and memory were measured there. Empty: a GPU any profile may
	// use, as a host that does not tell its models apart has it.
	Model string
	SMs   int // streaming multiprocessors (informational; shares are fractions)
	// Memory is in GiB, at most MaxGPUMemory.
	Memory float64
	// Shared says more than one job may run on this GPU at once (MPS or an
	// equivalent is set up on the node). A GPU that is not shared holds one
	// job at a time, whatever its SM share.
	Shared bool
}

// MaxGPUMemory is the most GiB State.Validate accepts for a GPU's Memory
// or a replica's Demand.GPUMemory. The largest GPUs hold a few hundred GiB,
// and any GPU's memory given in MiB (40960 for a 40 GiB A100, 4096 for even
// 4 GiB) is above it: taken as GiB, such a GPU would look as if every job
// fitted, and such a demand as if none did.
const MaxGPUMemory = 1024

// NumGPUs returns the number of GPUs in the cluster.
func (c *Cluster) NumGPUs() int {
	n := 0
	for i := range c.Nodes {
		n += len(c.Nodes[i].GPUs)
	}
	return n
}

// Capacity returns the cluster's total resources.
func (c *Cluster) Capacity() Vector {
	var v Vector
	for i := range c.Nodes {
		n := &c.Nodes[i]
		v[CPU] += n.CPU
		v[RAM] += n.RAM
		for k := range n.GPUs {
			v[SM]++
			v[GPUMemory] += n.GPUs[k].Memory
		}
	}
	return v
}

// GPURef locates a GPU: the index of its node in Cluster.Nodes and its index
// among that node's GPUs.
type GPURef struct{ Node, GPU int }

// Index returns a map from GPU ID to its location.
func (c *Cluster) Index() map[string]GPURef {
	m := make(map[string]GPURef, c.NumGPUs())
	for i := range c.Nodes {
		for k := range c.Nodes[i].GPUs {
			m[c.Nodes[i].GPUs[k].ID] = GPURef{i, k}
		}
	}
	return m
}
