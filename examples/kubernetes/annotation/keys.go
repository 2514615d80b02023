package annotation

// The annotation and label keys. Every key the controller writes starts
// with Prefix; it never writes a key outside it, nor the Observed ones.
const (
	Prefix = "elastico.io/"

	// Job is the opt-in annotation, written by the user: a JSON JobSpec
	// that carries the job's class and configuration family.
	Job = Prefix + "job"

	// SchedulingGate is the pod scheduling gate the controller removes
	// when the Plan first admits the pod.
	SchedulingGate = Prefix + "admission"

	// Decision annotations, written by the controller.
	Status      = Prefix + "status"         // "Scheduled", or "<Code>: <reasons>"
	Generation  = Prefix + "generation"     // bumped whenever config, node, GPUs or env change
	Config      = Prefix + "config"         // the chosen configuration's ID
	Node        = Prefix + "node"           // the node the Plan chose
	GPUs        = Prefix + "gpus"           // device indices on Node, one per replica: "0,2"
	GPUSharing  = Prefix + "gpu-sharing"    // "shared" or "whole" per entry of GPUs: "shared,whole"
	GPUSM       = Prefix + "gpu-sm"         // SM share of each GPU the pod holds, in (0, 1]
	GPUMemory   = Prefix + "gpu-memory-gib" // GPU memory budget on each GPU, GiB
	Slowdown    = Prefix + "slowdown"       // predicted slowdown from co-runners, ≥ 1
	Action      = Prefix + "action"         // the last Plan action applied: start, reconfigure, migrate
	Env         = Prefix + "env"            // launch parameters, KEY=VALUE lines
	AdmittedCnd = Prefix + "Admitted"       // the pod condition type the controller sets

	// Decision annotations of a gang's members (see Share): the member's
	// rank, and every member's pod, node and GPUs in rank order, so that
	// any one member says where the whole gang runs.
	GangRank   = Prefix + "gang-rank"   // "0"
	GangShares = Prefix + "gang-shares" // "train-0=gpu-a:0,1,2,3;train-1=gpu-b:0,1,2,3"

	// GangLabel names the gang a pod belongs to: the pods of one job that
	// spans nodes (one per node share) carry it with the same value, and
	// the same elastico.io/job, whose members field counts them.
	GangLabel = Prefix + "gang"

	// Observation annotations, written by the workload (its launcher, a
	// sidecar) and only read by the controller: the throughput the pod
	// measured, since when, and under which generation (see Observed).
	ObservedRate       = Prefix + "observed-rate"       // in the profiles' unit: "412.5"
	ObservedSince      = Prefix + "observed-since"      // RFC 3339: "2026-03-01T12:04:00Z"
	ObservedGeneration = Prefix + "observed-generation" // ELASTICO_GENERATION: "3"

	// SharingLabel on a node says whether its GPUs may be shared between
	// jobs: "mps" (an MPS control daemon runs on the node) or "none".
	// Absent means "none".
	SharingLabel = Prefix + "gpu-sharing"

	// ModelLabel on a node names its GPUs' model as profiles spell it
	// (gpuModel), e.g. "A100", over what GPUModel makes of GPUProductLabel.
	ModelLabel = Prefix + "gpu-model"

	// GPU feature discovery labels (NVIDIA's gpu-feature-discovery sets
	// them): the memory of one GPU in MiB, and its product name.
	GPUMemoryLabel  = "nvidia.com/gpu.memory"
	GPUProductLabel = "nvidia.com/gpu.product"
)

// outputKeys are every annotation the controller writes, in a fixed order.
var outputKeys = []string{Status, Generation, Config, Node, GPUs, GPUSharing, GPUSM, GPUMemory, Slowdown, Action, Env, GangRank, GangShares}

// OutputKeys returns the keys of every annotation the controller writes.
func OutputKeys() []string { return append([]string(nil), outputKeys...) }
