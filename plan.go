package elastico

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Plan is what Epoch decides: for every job of the State, where it runs or
// why it waits; the actions that take the cluster there; and what to carry
// to the next epoch.
type Plan struct {
	// Decisions has one entry per job of the State, in the State's order.
	Decisions []Decision
	// Actions take the cluster from the State's Running assignments to the
	// Decisions. A host applies them in order: preemptions first, then
	// migrations and reconfigurations, then starts.
	Actions []Action
	// Carry goes into the next epoch's State.Carry.
	Carry Carry
	Stats Stats
}

// Decision is the verdict on one job.
type Decision struct {
	JobID string
	// Assignment is where the job runs after this epoch; nil if it waits.
	Assignment *Assignment
	// Status says why the job waits (or, for a running job, notes such as a
	// reconfiguration); Code is Scheduled for a job that runs.
	Status Status
	// Slowdown is the predicted slowdown Ŝ ≥ 1 from the job's co-runners on
	// its GPUs (1 when it runs alone).
	Slowdown float64
}

// Code classifies a Status, as the Kubernetes scheduler framework does.
type Code int

const (
	// Scheduled: the job runs (or keeps running) as the Assignment says.
	Scheduled Code = iota
	// Unaffordable: at this epoch's prices no configuration of the job is
	// worth its resources; it waits for capacity to free up.
	Unaffordable
	// Unplaceable: the chosen configuration fits the cluster's totals but no
	// set of GPUs holds it (fragmentation, or a gang that must wait).
	Unplaceable
	// Interference: every placement found would co-locate the job with a
	// neighbour predicted to slow either beyond its tolerance.
	Interference
	// Infeasible: no configuration of the job can run on this cluster at all
	// (memory above every GPU, floor above every throughput).
	Infeasible
	// Preempted: the job was running and has been stopped to make room.
	Preempted
)

var codeNames = [...]string{"Scheduled", "Unaffordable", "Unplaceable", "Interference", "Infeasible", "Preempted"}

func (c Code) String() string {
	if c < 0 || int(c) >= len(codeNames) {
		return "Code(" + strconv.Itoa(int(c)) + ")"
	}
	return codeNames[c]
}

// Status is a code and the reasons behind it, in words a user can read.
type Status struct {
	Code    Code
	Reasons []string
}

// IsScheduled reports whether the job runs.
func (s Status) IsScheduled() bool { return s.Code == Scheduled }

func (s Status) String() string {
	if len(s.Reasons) == 0 {
		return s.Code.String()
	}
	return s.Code.String() + ": " + strings.Join(s.Reasons, "; ")
}

// ActionKind says what a host must do to a job.
type ActionKind int

const (
	// Start launches a waiting job.
	Start ActionKind = iota
	// Reconfigure restarts a running job in place (same GPUs) under a new
	// configuration: a checkpoint and a restart, no state transfer.
	Reconfigure
	// Migrate moves a running job to other GPUs (possibly under a new
	// configuration too).
	Migrate
	// Preempt stops a running job; it goes back to waiting.
	Preempt
)

var actionNames = [...]string{"start", "reconfigure", "migrate", "preempt"}

func (k ActionKind) String() string {
	if k < 0 || int(k) >= len(actionNames) {
		return "ActionKind(" + strconv.Itoa(int(k)) + ")"
	}
	return actionNames[k]
}

// Action is one step of the Plan.
type Action struct {
	Kind  ActionKind
	JobID string
	// From is the assignment before (nil for Start); To the one after (nil
	// for Preempt).
	From, To *Assignment
	// Launch is what the host sets when it (re)starts the job; zero for
	// Preempt.
	Launch LaunchParams
}

func (a Action) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", a.Kind, a.JobID)
	if a.From != nil {
		fmt.Fprintf(&b, " from %s@%s", a.From.ConfigID, strings.Join(a.From.GPUs, ","))
	}
	if a.To != nil {
		fmt.Fprintf(&b, " to %s@%s", a.To.ConfigID, strings.Join(a.To.GPUs, ","))
	}
	return b.String()
}

// LaunchParams are the knobs and memory budgets a job is (re)started with
// (paper §4.2). The host passes them to the job, typically as
// environment variables (see Env) or as engine arguments.
type LaunchParams struct {
	BatchSize     int
	Checkpointing bool
	AMP           bool
	// LRScale multiplies the learning rate the user tuned for the job's
	// reference batch size (linear rule for SGD, square root for Adam, 1 for
	// AdaScale or inference).
	LRScale float64

	// MemoryFraction is M_j / M_GPU: vLLM's gpu_memory_utilization, and
	// PyTorch's torch.cuda.set_per_process_memory_fraction.
	MemoryFraction float64
	// MaxNumSeqs is vLLM's max_num_seqs (inference; 0 for training).
	MaxNumSeqs int
	// MaxSplitSizeMB goes into PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:N.
	MaxSplitSizeMB int

	// MPSPinnedMemLimit is CUDA_MPS_PINNED_DEVICE_MEM_LIMIT, "<dev>=<size>"
	// per device, comma-separated; empty when the GPU is not shared.
	MPSPinnedMemLimit string
	// MPSActiveThreadPercentage is CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, the SM
	// share in percent; 0 when the GPU is not shared.
	MPSActiveThreadPercentage int
}

// Env returns the launch parameters as environment variables, sorted by
// name, the way a TaskProlog or a container's env reads them. The
// ELASTICO_* names carry what no framework reads by itself.
func (l LaunchParams) Env() []string {
	b2i := func(b bool) string {
		if b {
			return "1"
		}
		return "0"
	}
	env := []string{
		"ELASTICO_AMP=" + b2i(l.AMP),
		"ELASTICO_BATCH_SIZE=" + strconv.Itoa(l.BatchSize),
		"ELASTICO_CHECKPOINTING=" + b2i(l.Checkpointing),
		"ELASTICO_LR_SCALE=" + strconv.FormatFloat(l.LRScale, 'g', 6, 64),
		"ELASTICO_MEMORY_FRACTION=" + strconv.FormatFloat(l.MemoryFraction, 'f', 4, 64),
	}
	if l.MaxNumSeqs > 0 {
		env = append(env, "ELASTICO_MAX_NUM_SEQS="+strconv.Itoa(l.MaxNumSeqs))
	}
	if l.MPSActiveThreadPercentage > 0 {
		env = append(env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE="+strconv.Itoa(l.MPSActiveThreadPercentage))
	}
	if l.MPSPinnedMemLimit != "" {
		env = append(env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT="+l.MPSPinnedMemLimit)
	}
	if l.MaxSplitSizeMB > 0 {
		env = append(env, "PYTORCH_CUDA_ALLOC_CONF=max_split_size_mb:"+strconv.Itoa(l.MaxSplitSizeMB))
	}
	slices.Sort(env)
	return env
}

// Stats is how the epoch went.
type Stats struct {
	Rounds     int // ESP → placement → interference rounds run
	Iterations int // tâtonnement iterations, summed over rounds
	Violations int // co-located pairs predicted above tolerance, summed over rounds
	// Time spent, by phase. Durations come from the scheduler's configured
	// clock and are the only part of a Plan that may differ between two runs
	// on the same State.
	Prices, Placement, Interference, Total time.Duration
	// Truncated is true when the context's deadline cut the loop short and
	// the plan is the best feasible one found by then.
	Truncated bool
}
