package sim

import (
	"fmt"
	"math"
	"time"

	"github.com/elastico/elastico"
)

// Config is one run: a cluster, its ground truth, the jobs, and the policy
// that schedules them. Zero durations mean the documented defaults.
type Config struct {
	Truth *Truth
	// Truths, for a cluster of several GPU models (Mix), are the ground
	// truths of every model, one per Truth.GPU.Model, Truth among them
	// (Mix.Truths): a job runs at the throughput of the model it is placed
	// on, and sharing a GPU at that model's co-location speeds. Nil: Truth
	// for every GPU.
	Truths  []*Truth
	Cluster elastico.Cluster
	Policy  elastico.Scheduler
	// Name labels the run's Result (the policy's name in reports).
	Name string
	// Jobs, sorted by arrival; IDs unique.
	Jobs []Job
	// Epoch is ΔT: epochs fall on multiples of it. Default 5 s (the
	// paper's).
	Epoch time.Duration
	// Epochs says which multiples of ΔT are epochs: every one while a job
	// runs or waits (EpochsEvery, the default: a host's loop), or only the
	// first after something changed (EpochsOnChange).
	Epochs EpochMode
	// Heartbeat, under EpochsOnChange, forces an epoch at least this often
	// while some job waits, for policies whose priorities move with time
	// (least attained service) rather than with arrivals and completions.
	// Zero: none. EpochsEvery needs none and ignores it.
	Heartbeat time.Duration
	// AllowFlaps counts flaps (Result.Flaps) and carries on; by default
	// the first flap breaks the Stability invariant.
	AllowFlaps bool
	// Costs are the times transitions take.
	Costs Costs
	// SMOversubscription is the most SM share one GPU may hold (the
	// capacity invariant); default 1.
	SMOversubscription float64
	// Horizon stops the run at this simulated time; jobs still running are
	// reported unfinished. Zero: run until every job finishes.
	Horizon time.Duration
	// EpochTimeout bounds each Epoch call's wall-clock time through its
	// context. Zero: no deadline.
	EpochTimeout time.Duration
	// Start is the wall-clock time of simulated second 0 (State.Now);
	// zero: 2026-01-01 00:00 UTC.
	Start time.Time
	// ObservationNoise is the relative standard deviation of the measured
	// throughputs the policy sees (Job.Observed of every productive job:
	// its ground-truth rate, as a framework's logs report it). Zero: 0.03.
	ObservationNoise float64
	// HideObservations leaves Job.Observed zero, as a host that cannot read
	// its jobs' progress does.
	HideObservations bool
	// Progress, if set, is called now and then with the finished and total
	// job counts.
	Progress func(done, total int)
}

// truthsByModel returns the ground truth of each GPU model: Truth, and
// Truths.
func (c *Config) truthsByModel() (map[string]*Truth, error) {
	m := map[string]*Truth{c.Truth.GPU.Model: c.Truth}
	for i, t := range c.Truths {
		if t == nil {
			return nil, fmt.Errorf("sim: Config.Truths[%d] is nil", i)
		}
		if o := m[t.GPU.Model]; o != nil && o != t {
			return nil, fmt.Errorf("sim: Config.Truths[%d]: a second ground truth for %s", i, t.GPU.Model)
		}
		m[t.GPU.Model] = t
	}
	return m, nil
}

// models names the GPU models the run has a ground truth for.
func (c *Config) models() string {
	s := fmt.Sprintf("%q", c.Truth.GPU.Model)
	for _, t := range c.Truths {
		if t != nil && t != c.Truth {
			s += fmt.Sprintf(", %q", t.GPU.Model)
		}
	}
	return s
}

// EpochMode says when Run calls the policy.
type EpochMode int

const (
	// EpochsEvery calls the policy at every multiple of ΔT while any job
	// runs or waits, with State.Now advancing, as a host's loop does: a
	// policy that changes its mind with nothing changed shows it (see
	// [Flap]).
	EpochsEvery EpochMode = iota
	// EpochsOnChange calls it only at the first multiple of ΔT after an
	// arrival or a completion (and at Config.Heartbeat): the same plans
	// for a policy that is a function of the jobs and their assignments,
	// at a fraction of the epochs.
	EpochsOnChange
)

// String returns "every" or "changes", the replay's flag values.
func (m EpochMode) String() string {
	switch m {
	case EpochsEvery:
		return "every"
	case EpochsOnChange:
		return "changes"
	}
	return fmt.Sprintf("EpochMode(%d)", int(m))
}

// ParseEpochMode reads "every" or "changes".
func ParseEpochMode(s string) (EpochMode, error) {
	for _, m := range []EpochMode{EpochsEvery, EpochsOnChange} {
		if s == m.String() {
			return m, nil
		}
	}
	return 0, fmt.Errorf("sim: epoch mode %q, want every or changes", s)
}

// Costs are the simulated times a transition keeps a job's GPUs busy
// without progress. Pollux's simulator, calibrated on its testbed, charges
// 30 s per re-allocation (simulator.py: rescale_time = 30); the ElastiCo
// paper's figure (< 0.3 % of GPU-hours at ~2.3 transitions per GPU-hour,
// about 5 s each) would be kinder. The defaults take Pollux's, for every
// restart; a job's first start costs nothing (it would cost every policy
// the same).
type Costs struct {
	Reconfigure time.Duration // in place: checkpoint, restart under a new configuration
	Migrate     time.Duration // checkpoint, move to other GPUs, restart
	Resume      time.Duration // restart of a preempted job from its checkpoint
}

// DefaultCosts are Pollux's 30 s per restart.
var DefaultCosts = Costs{Reconfigure: 30 * time.Second, Migrate: 30 * time.Second, Resume: 30 * time.Second}

func (c *Config) resolve() error {
	if c.Truth == nil {
		return fmt.Errorf("sim: Config.Truth is nil")
	}
	if c.Policy == nil {
		return fmt.Errorf("sim: Config.Policy is nil")
	}
	if c.Epoch == 0 {
		c.Epoch = 5 * time.Second
	}
	if c.Epoch < 0 {
		return fmt.Errorf("sim: Config.Epoch %v, want > 0", c.Epoch)
	}
	if c.Epochs != EpochsEvery && c.Epochs != EpochsOnChange {
		return fmt.Errorf("sim: Config.Epochs %v, want EpochsEvery or EpochsOnChange", c.Epochs)
	}
	if c.Heartbeat < 0 {
		return fmt.Errorf("sim: Config.Heartbeat %v, want ≥ 0", c.Heartbeat)
	}
	if c.Costs == (Costs{}) {
		c.Costs = DefaultCosts
	}
	if c.Costs.Reconfigure < 0 || c.Costs.Migrate < 0 || c.Costs.Resume < 0 {
		return fmt.Errorf("sim: Config.Costs %+v: negative", c.Costs)
	}
	if c.SMOversubscription == 0 {
		c.SMOversubscription = 1
	}
	if c.SMOversubscription < 1 || math.IsNaN(c.SMOversubscription) || math.IsInf(c.SMOversubscription, 0) {
		return fmt.Errorf("sim: Config.SMOversubscription %g, want ≥ 1", c.SMOversubscription)
	}
	if c.ObservationNoise == 0 {
		c.ObservationNoise = 0.03
	}
	if !(c.ObservationNoise > 0 && c.ObservationNoise < 1) {
		return fmt.Errorf("sim: Config.ObservationNoise %g, want a fraction in (0, 1)", c.ObservationNoise)
	}
	if c.Horizon < 0 || c.EpochTimeout < 0 {
		return fmt.Errorf("sim: Config.Horizon %v, EpochTimeout %v: negative", c.Horizon, c.EpochTimeout)
	}
	if c.Start.IsZero() {
		c.Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	}
	if c.Cluster.NumGPUs() == 0 {
		return fmt.Errorf("sim: Config.Cluster has no GPU")
	}
	if err := (&elastico.State{Now: c.Start, Cluster: c.Cluster}).Validate(); err != nil {
		return fmt.Errorf("sim: Config.Cluster: %w", err)
	}
	truths, err := c.truthsByModel()
	if err != nil {
		return err
	}
	for _, n := range c.Cluster.Nodes {
		for _, g := range n.GPUs {
			if truths[g.Model] == nil {
				return fmt.Errorf("sim: GPU %s is a %q, the ground truth is for %s", g.ID, g.Model, c.models())
			}
		}
	}
	if len(c.Jobs) == 0 {
		return fmt.Errorf("sim: Config.Jobs is empty")
	}
	ids := make(map[string]bool, len(c.Jobs))
	for i := range c.Jobs {
		j := &c.Jobs[i]
		switch {
		case ids[j.ID]:
			return fmt.Errorf("sim: job %q: duplicate ID", j.ID)
		case i > 0 && j.Arrival < c.Jobs[i-1].Arrival:
			return fmt.Errorf("sim: job %q: arrives at %g, before job %q (%g): jobs must be sorted by arrival", j.ID, j.Arrival, c.Jobs[i-1].ID, c.Jobs[i-1].Arrival)
		case len(j.Configs) == 0 || len(j.Configs) != len(j.Profiles):
			return fmt.Errorf("sim: job %q: %d configurations, %d profiles", j.ID, len(j.Configs), len(j.Profiles))
		case !(j.Work > 0) || math.IsInf(j.Work, 0):
			return fmt.Errorf("sim: job %q: work %g, want > 0", j.ID, j.Work)
		case j.Arrival < 0 || math.IsNaN(j.Arrival) || math.IsInf(j.Arrival, 0):
			return fmt.Errorf("sim: job %q: arrival %g", j.ID, j.Arrival)
		}
		ids[j.ID] = true
		for k := range j.Configs {
			if j.Configs[k].ID != j.Profiles[k].Config.ID {
				return fmt.Errorf("sim: job %q: configuration %d is %q, its profile %q", j.ID, k, j.Configs[k].ID, j.Profiles[k].Config.ID)
			}
			if !(j.Configs[k].Throughput > 0) || !(j.Configs[k].SpreadThroughput > 0) || !(j.Configs[k].Efficiency > 0) {
				return fmt.Errorf("sim: job %q: configuration %q has no positive throughput and efficiency", j.ID, j.Configs[k].ID)
			}
			t := truths[j.Profiles[k].Hardware.GPUModel]
			if j.Profiles[k].Hardware.GPUModel == "" && len(truths) == 1 {
				t = c.Truth // runs anywhere, and there is one model
			}
			if t == nil {
				return fmt.Errorf("sim: job %q: configuration %q: Hardware.GPUModel %q: no ground truth for it (%s)", j.ID, j.Configs[k].ID, j.Profiles[k].Hardware.GPUModel, c.models())
			}
			if j.Configs[k].Kind < 0 || j.Configs[k].Kind >= len(t.kinds) {
				return fmt.Errorf("sim: job %q: configuration %q: kind %d not in the ground truth", j.ID, j.Configs[k].ID, j.Configs[k].Kind)
			}
		}
	}
	return nil
}
