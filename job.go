package elastico

import "time"

// Optimizer says how a training job's learning rate must follow a change of
// batch size, so that a reshaped run is still the same training run.
type Optimizer int

const (
	// SGD scales the learning rate linearly with the batch size (Goyal et al.).
	SGD Optimizer = iota
	// Adam scales it with the square root of the batch size (Malladi et al.).
	Adam
	// AdaScale lets the optimizer adapt its own gain; the scheduler sends 1.
	AdaScale
)

func (o Optimizer) String() string {
	switch o {
	case SGD:
		return "sgd"
	case Adam:
		return "adam"
	case AdaScale:
		return "adascale"
	}
	return "Optimizer(?)"
}

// Assignment is where a job runs: the configuration (by ID) and the GPUs of
// its replicas (by GPU ID, one per replica).
type Assignment struct {
	ConfigID string
	GPUs     []string
}

// Job is one training or inference job as the host sees it this epoch.
type Job struct {
	ID    string
	Class Class
	// Profiles is the job's family: a profile for every configuration it
	// may run under (on every GPU model it may run on), each naming the
	// family in Profile.Family; rst builds them. It must not be empty.
	Profiles []Profile
	// Floor is L_j, the lowest throughput (in the profiles' unit) the job
	// accepts; configurations below it are never chosen. Zero: no floor.
	Floor float64
	// MaxSlowdown, when ≥ 1, is the most the job accepts to be slowed by
	// sharing a GPU (an SLO: 1.25 keeps it at 80 % of its isolated speed
	// or better), whatever the queue. Zero: no limit of its own; the
	// scheduler's sharing rule decides (see iac.Sharing).
	MaxSlowdown float64
	// Weight is w_j in the objective: what a unit of the job's work is
	// worth against another job's (pds: a job of weight 2 takes a running
	// job's place only if it does more than twice its work). Zero means 1.
	Weight float64
	// Priority orders the waiting queue only: among waiting jobs, a higher
	// Priority is admitted, and has GPUs held for it (pds), before a lower
	// one, whatever their arrivals; it never displaces a running job (use
	// Weight for that). Zero is the default; negative values are allowed.
	Priority int
	// Arrival is when the job was submitted: the queue's order within a
	// Priority, and the start of its wait (pds holds GPUs for a job that
	// has waited Config.ReserveAfter since Arrival or its last preemption).
	Arrival time.Time
	// Remaining is the work left, in reference-equivalent samples (training)
	// or tokens/requests (inference). Zero means unknown. pds does not read
	// it (its objective is the rate of work, not its amount); a policy that
	// orders by remaining work may.
	Remaining float64
	// Attained is the GPU-seconds of service the job has had, for
	// least-attained-service policies (the simulator's Tiresias baseline
	// reads it); pds does not.
	Attained float64
	// Running is the job's current assignment; nil while it waits.
	Running *Assignment
	// Observed is what the host measured of the job where it runs now:
	// its throughput (in the profiles' unit) and over how long. A
	// scheduler compares it with the running profile's throughput to learn
	// how much the job's neighbours really slow it (pds does, see
	// iac.Learner). Zero: not measured; only a running job has one.
	Observed Observation
	// Spread allows a multi-GPU configuration's replicas on several nodes.
	Spread bool
	// Optimizer and ReferenceBatch tell RST how to scale the learning rate
	// when the batch size changes: the user's learning rate was tuned for
	// ReferenceBatch. A training job under SGD or Adam whose family has two
	// batch sizes or more must set it, since no batch of the family is a
	// safe guess (taking the first profile's 16 gave a ResNet-50 tuned at
	// 256 an SGD scale of 16). Zero is left for jobs with nothing to scale:
	// AdaScale, inference, or one batch size, which runs unscaled.
	Optimizer      Optimizer
	ReferenceBatch int
	// RestartTime is what a checkpoint and a restart cost the job (the
	// time it makes no progress when it is preempted, moved or reshaped).
	// The scheduler weighs it against what a displacement gains. Zero:
	// the scheduler's default (pds.Config.RestartTime).
	RestartTime time.Duration
}

// EffectiveWeight returns w_j, with zero meaning 1.
func (j *Job) EffectiveWeight() float64 {
	if j.Weight == 0 {
		return 1
	}
	return j.Weight
}

// Profile returns the family's profile with the given configuration ID.
func (j *Job) Profile(configID string) (*Profile, bool) {
	for i := range j.Profiles {
		if j.Profiles[i].Config.ID == configID {
			return &j.Profiles[i], true
		}
	}
	return nil, false
}

// Observation is a running job's measured throughput: what a training
// framework's logs or TDOP's progress reports give a host.
type Observation struct {
	// Rate is the throughput measured, in the unit of the job's profiles
	// (samples/s for training, tokens/s or requests/s for inference).
	Rate float64
	// Over is how long the rate was measured, under the job's present
	// assignment and neighbours.
	Over time.Duration
}
