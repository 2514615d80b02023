package sim

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/sets"
)

// Config is one run: a cluster, its ground truth, the jobs, and the policy
// that schedules them. Zero durations mean the documented defaults.
type Config struct {
	Truth   *Truth
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
	// Progress, if set, is called now and then with the finished and total
	// job counts.
	Progress func(done, total int)
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
	for _, n := range c.Cluster.Nodes {
		for _, g := range n.GPUs {
			if g.Model != c.Truth.GPU.Model {
				return fmt.Errorf("sim: GPU %s is a %q, the ground truth is for %q", g.ID, g.Model, c.Truth.GPU.Model)
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
			if j.Configs[k].Kind < 0 || j.Configs[k].Kind >= len(c.Truth.kinds) {
				return fmt.Errorf("sim: job %q: configuration %q: kind %d not in the ground truth", j.ID, j.Configs[k].ID, j.Configs[k].Kind)
			}
		}
	}
	return nil
}

type jobState struct {
	*Job
	index        int
	done         bool
	progress     float64
	lastProgress float64
	integral     float64 // ∫ rate dt, kept apart from progress as a check
	attained     float64 // GPU-seconds placed
	cfg          int     // index into Configs, -1 while waiting
	gpus         []int
	spread       bool
	busyUntil    float64
	rate, speed  float64
	shared       bool // a productive co-runner shares one of its GPUs
	// waitCode is why the job waits, from the last plan (waitBeforeEpoch
	// until a plan has spoken of it).
	waitCode    elastico.Code
	assign      *elastico.Assignment
	started     bool
	firstStart  float64
	finish      float64
	reconfigs   int
	migrations  int
	preemptions int
	restarts    int
	flaps       int
	floorTime   float64
	runTime     float64
	// assignments held in calm interval number calm (see watchFlaps)
	calm int
	hist []held
	// normalization of throughput: requested GPUs × Dedicated / Work
	norm float64
}

type gpuState struct {
	node    int
	sm, mem float64
	n       int
	held    bool
	// productive residents, rebuilt by rates()
	res []*jobState
}

type nodeState struct{ cpu, ram float64 }

type simulation struct {
	cfg      Config
	now      float64
	jobs     []jobState
	active   []*jobState
	next     int // next arrival
	gpus     []gpuState
	nodes    []nodeState
	gpuIDs   []string
	gpuIndex map[string]int
	gpuRefs  []elastico.GPURef

	carry        elastico.Carry
	credited     float64
	finishedWork float64
	done         int

	dirty     bool
	nextEpoch float64
	lastEpoch float64
	stalls    int
	lastWait  string // a waiting job's status in the last plan, for errors
	changes   []change

	// the calm interval (no arrival, no completion): its number, start and
	// swaps so far
	calm      int
	calmSince float64
	swaps     []swap
	swapBuf   []swap

	// current cluster figures, set by rates()
	smNow, busyNow, thrNow float64
	waitingNow, runningNow int

	res      *Result
	stateBuf elastico.State
}

// Run simulates cfg.Jobs under cfg.Policy until every job finishes (or the
// horizon). It returns an *InvariantError (wrapping ErrInvariant) the moment
// an invariant breaks, and the policy's error if an epoch fails.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	s, err := newSimulation(cfg)
	if err != nil {
		return nil, err
	}
	if err := s.loop(ctx); err != nil {
		return nil, err
	}
	s.finishResult()
	return s.res, nil
}

func newSimulation(cfg Config) (*simulation, error) {
	if err := cfg.resolve(); err != nil {
		return nil, err
	}
	s := &simulation{cfg: cfg, nextEpoch: math.Inf(1), lastEpoch: math.Inf(-1)}
	s.jobs = make([]jobState, len(cfg.Jobs))
	for i := range cfg.Jobs {
		j := &cfg.Jobs[i]
		s.jobs[i] = jobState{Job: j, index: i, cfg: -1, waitCode: waitBeforeEpoch}
		s.jobs[i].norm = float64(j.Requested().GPUs) * j.Dedicated / j.Work
	}
	s.gpuIndex = map[string]int{}
	for n := range cfg.Cluster.Nodes {
		s.nodes = append(s.nodes, nodeState{})
		for k, g := range cfg.Cluster.Nodes[n].GPUs {
			s.gpuIndex[g.ID] = len(s.gpus)
			s.gpus = append(s.gpus, gpuState{node: n})
			s.gpuIDs = append(s.gpuIDs, g.ID)
			s.gpuRefs = append(s.gpuRefs, elastico.GPURef{Node: n, GPU: k})
		}
	}
	s.res = &Result{Policy: cfg.Name, GPUs: len(s.gpus), WindowEnd: cfg.Jobs[len(cfg.Jobs)-1].Arrival}
	return s, nil
}

func (s *simulation) gpuOf(g int) *elastico.GPU {
	r := s.gpuRefs[g]
	return &s.cfg.Cluster.Nodes[r.Node].GPUs[r.GPU]
}

func (s *simulation) loop(ctx context.Context) error {
	horizon := math.Inf(1)
	if s.cfg.Horizon > 0 {
		horizon = s.cfg.Horizon.Seconds()
	}
	dt := s.cfg.Epoch.Seconds()
	idle := 0
	for {
		if s.res.Events%256 == 0 {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("sim: %s: stopped at t=%.0fs: %w", s.cfg.Name, s.now, err)
			}
		}
		t := s.nextTime(dt)
		if math.IsInf(t, 1) {
			break
		}
		if t > horizon {
			s.advance(horizon)
			break
		}
		before := s.now
		s.advance(t)
		s.res.Events++
		changed := false
		// Arrivals.
		for s.next < len(s.jobs) && s.jobs[s.next].Arrival <= s.now {
			j := &s.jobs[s.next]
			s.active = append(s.active, j)
			s.next++
			s.dirty, changed = true, true
			s.calmBreak()
		}
		// Completions.
		for i := 0; i < len(s.active); i++ {
			j := s.active[i]
			if j.cfg < 0 || j.rate <= 0 || j.Work-j.progress > workTol(j.Work) {
				continue
			}
			if err := s.finishJob(j); err != nil {
				return err
			}
			s.active = slices.Delete(s.active, i, i+1)
			i--
			s.dirty, changed = true, true
			s.calmBreak()
		}
		// Transitions that ended change rates but need no epoch.
		for _, j := range s.active {
			if j.cfg >= 0 && j.busyUntil == s.now && j.rate == 0 {
				changed = true
			}
		}
		if s.dirty {
			s.nextEpoch = math.Min(s.nextEpoch, gridCeil(s.now, dt))
		}
		if s.now >= s.nextEpoch {
			moved, err := s.epoch(ctx)
			if err != nil {
				return err
			}
			changed = changed || moved
		}
		s.rates()
		if changed {
			s.sample()
		}
		if err := s.checkInvariants(); err != nil {
			return err
		}
		if s.now == before && !changed {
			idle++
			if idle > 1000 {
				return s.broken(Liveness, "", "time does not advance and nothing happens")
			}
		} else {
			idle = 0
		}
		if s.cfg.Progress != nil && changed && s.res.Events%64 == 0 {
			s.cfg.Progress(s.done, len(s.jobs))
		}
	}
	if s.cfg.Progress != nil {
		s.cfg.Progress(s.done, len(s.jobs))
	}
	if s.cfg.Horizon == 0 && s.done != len(s.jobs) {
		id := ""
		if len(s.active) > 0 {
			id = s.active[0].ID
		}
		return s.broken(Liveness, id, "nothing is left to happen but %d of %d jobs are unfinished (the policy leaves them waiting: %s)", len(s.jobs)-s.done, len(s.jobs), s.lastWait)
	}
	return nil
}

// gridCeil returns the first multiple of dt at or after t.
func gridCeil(t, dt float64) float64 {
	g := math.Ceil(t/dt) * dt
	if g < t {
		g += dt
	}
	return g
}

// nextTime returns the time of the next event: an arrival, a completion,
// the end of a transition, or an epoch.
func (s *simulation) nextTime(dt float64) float64 {
	t := math.Inf(1)
	if s.next < len(s.jobs) {
		t = s.jobs[s.next].Arrival
	}
	waiting := false
	for _, j := range s.active {
		if j.cfg < 0 {
			waiting = true
			continue
		}
		if j.busyUntil > s.now {
			t = math.Min(t, j.busyUntil)
			continue
		}
		if j.rate > 0 {
			t = math.Min(t, s.now+math.Max(0, j.Work-j.progress)/j.rate)
		}
	}
	if math.IsInf(s.nextEpoch, 1) && s.cfg.Epochs == EpochsEvery && len(s.active) > 0 {
		// The next multiple of ΔT, after the last epoch.
		if s.now > s.lastEpoch {
			s.nextEpoch = gridCeil(s.now, dt)
		} else {
			s.nextEpoch = gridCeil(s.now+dt/2, dt)
		}
	}
	if !math.IsInf(s.nextEpoch, 1) {
		t = math.Min(t, s.nextEpoch)
	} else if waiting && s.cfg.Heartbeat > 0 {
		hb := gridCeil(math.Max(s.now, s.lastEpoch+s.cfg.Heartbeat.Seconds()), dt)
		if hb <= s.now {
			hb = gridCeil(s.now+dt/2, dt)
		}
		if hb < t {
			t = hb
			s.nextEpoch = hb
		}
	}
	return t
}

// advance moves time to t, crediting every productive job with its
// ground-truth rate and integrating the cluster's figures.
func (s *simulation) advance(t float64) {
	d := t - s.now
	if d <= 0 {
		return
	}
	for _, j := range s.active {
		if j.cfg < 0 {
			s.res.waitArea[waitIndex(j.waitCode)] += d
			continue
		}
		j.attained += d * float64(len(j.gpus))
		if j.rate > 0 {
			w := j.rate * d
			j.progress += w
			j.integral += math.FMA(j.rate, d, 0)
			s.credited += w
			j.runTime += d
			s.res.runArea += d
			if j.shared {
				s.res.sharedArea += d
				s.res.sharedSpeedArea += j.speed * d
			}
			if j.Floor > 0 && j.Configs[j.cfg].Throughput*j.speed >= j.Floor*(1-1e-12) {
				j.floorTime += d
			}
		}
	}
	r := s.res
	r.smArea += s.smNow * d
	r.busyArea += s.busyNow * d
	r.thrArea += s.thrNow * d
	if end := r.WindowEnd; s.now < end {
		w := math.Min(t, end) - s.now
		r.smWindow += s.smNow * w
		r.busyWindow += s.busyNow * w
		r.thrWindow += s.thrNow * w
	}
	s.now = t
}

func (s *simulation) finishJob(j *jobState) error {
	if j.done {
		return s.broken(FinishOnce, j.ID, "finishes a second time")
	}
	if s.now < j.Arrival {
		return s.broken(FinishOnce, j.ID, "finishes at %g before it arrives at %g", s.now, j.Arrival)
	}
	if math.Abs(j.progress-j.Work) > workTol(j.Work) {
		return s.broken(Conservation, j.ID, "finishes with progress %g of work %g", j.progress, j.Work)
	}
	j.done = true
	j.finish = s.now
	s.finishedWork += j.progress
	s.done++
	j.cfg, j.gpus, j.assign, j.rate = -1, nil, nil, 0
	return nil
}

// rates recomputes every productive job's speed and rate from the ground
// truth, and the cluster's current figures.
func (s *simulation) rates() {
	for g := range s.gpus {
		s.gpus[g].res = s.gpus[g].res[:0]
		s.gpus[g].held = false
	}
	s.waitingNow, s.runningNow = 0, 0
	for _, j := range s.active {
		if j.cfg < 0 {
			s.waitingNow++
			continue
		}
		s.runningNow++
		for _, g := range j.gpus {
			s.gpus[g].held = true
		}
		if s.now < j.busyUntil {
			continue
		}
		for _, g := range j.gpus {
			s.gpus[g].res = append(s.gpus[g].res, j)
		}
	}
	truth := s.cfg.Truth
	s.thrNow = 0
	for _, j := range s.active {
		j.rate, j.speed = 0, 0
		if j.cfg < 0 || s.now < j.busyUntil {
			continue
		}
		c := &j.Configs[j.cfg]
		speed := 1.0
		for _, g := range j.gpus {
			sp := 1.0
			for _, k := range s.gpus[g].res {
				if k != j {
					v, _ := truth.Speed(c.Kind, k.Configs[k.cfg].Kind)
					sp *= v
				}
			}
			speed = math.Min(speed, sp)
		}
		j.speed = speed
		j.shared = false
		for _, g := range j.gpus {
			if len(s.gpus[g].res) > 1 {
				j.shared = true
			}
		}
		j.rate = c.Goodput(j.spread) * speed
		s.thrNow += j.rate * j.norm
	}
	sm := 0.0
	for g := range s.gpus {
		u := 0.0
		for _, k := range s.gpus[g].res {
			u += k.Configs[k.cfg].SM * k.speed
		}
		sm += math.Min(1, u)
	}
	// A GPU is busy when some job holds it, restarting or running.
	occupied := 0
	for g := range s.gpus {
		if s.gpus[g].held {
			occupied++
		}
	}
	s.smNow = sm / float64(len(s.gpus))
	s.busyNow = float64(occupied) / float64(len(s.gpus))
}

func (s *simulation) sample() {
	s.res.Series = append(s.res.Series, Sample{
		Time: s.now, SMUtil: s.smNow, Busy: s.busyNow, Throughput: s.thrNow,
		Running: s.runningNow, Waiting: s.waitingNow,
	})
}

// buildState fills the State the policy sees.
func (s *simulation) buildState() *elastico.State {
	st := &s.stateBuf
	st.Now = s.cfg.Start.Add(time.Duration(s.now * float64(time.Second)))
	st.Cluster = s.cfg.Cluster
	st.Carry = s.carry
	st.Jobs = st.Jobs[:0]
	for _, j := range s.active {
		st.Jobs = append(st.Jobs, elastico.Job{
			ID:        j.ID,
			Class:     j.Class,
			Family:    j.Profiles,
			Floor:     j.Floor,
			Weight:    j.Weight,
			Arrival:   s.cfg.Start.Add(time.Duration(j.Arrival * float64(time.Second))),
			Remaining: math.Max(0, j.Work-j.progress),
			Attained:  j.attained,
			Running:   j.assign,
			Spread:    true,
			Optimizer: j.Family.Optimizer,
			// M0: the batch whose efficiency is 1 is the one the
			// learning rate was tuned for.
			ReferenceBatch: j.Family.RefBatch,
			// What a host knows of its jobs' checkpoint and restart.
			RestartTime: s.cfg.Costs.Resume,
		})
	}
	return st
}

// epoch calls the policy and applies its plan; moved reports whether the
// plan changed any job's assignment.
func (s *simulation) epoch(ctx context.Context) (moved bool, err error) {
	s.nextEpoch = math.Inf(1)
	s.lastEpoch = s.now
	s.dirty = false
	st := s.buildState()
	if len(st.Jobs) == 0 {
		return false, nil
	}
	ectx := ctx
	if s.cfg.EpochTimeout > 0 {
		var cancel context.CancelFunc
		ectx, cancel = context.WithTimeout(ctx, s.cfg.EpochTimeout)
		defer cancel()
	}
	t0 := time.Now()
	plan, err := s.cfg.Policy.Epoch(ectx, st)
	s.res.EpochLatency = append(s.res.EpochLatency, time.Since(t0))
	s.res.Epochs++
	if err != nil {
		return false, fmt.Errorf("sim: %s: epoch at t=%.0fs with %d jobs: %w", s.cfg.Name, s.now, len(st.Jobs), err)
	}
	if plan == nil {
		return false, s.broken(PlanShape, "", "the policy returned a nil plan")
	}
	if err := s.apply(plan, st); err != nil {
		return false, err
	}
	s.carry = plan.Carry
	for _, d := range plan.Decisions {
		if d.Assignment == nil {
			s.lastWait = d.JobID + ": " + d.Status.String()
			break
		}
	}
	// Liveness: waiting jobs, nothing placed, nothing more to arrive.
	if s.next == len(s.jobs) && len(s.active) > 0 {
		placed := false
		for _, j := range s.active {
			if j.cfg >= 0 {
				placed = true
				break
			}
		}
		if placed {
			s.stalls = 0
		} else if s.stalls++; s.stalls >= 3 {
			return false, s.broken(Liveness, s.active[0].ID, "%d jobs wait on an idle cluster and the policy starts none (status: %s)", len(s.active), plan.Decisions[0].Status)
		}
	}
	return len(plan.Actions) > 0, nil
}

type change struct {
	j    *jobState
	cfg  int
	gpus []int
	kind elastico.ActionKind
	none bool
}

// apply checks a plan against the state it answers and commits it.
func (s *simulation) apply(plan *elastico.Plan, st *elastico.State) error {
	if len(plan.Decisions) != len(st.Jobs) {
		return s.broken(PlanShape, "", "%d decisions for %d jobs", len(plan.Decisions), len(st.Jobs))
	}
	changes := slices.Grow(s.changes[:0], len(s.active))[:len(s.active)]
	s.changes = changes
	for i, d := range plan.Decisions {
		j := s.active[i]
		if d.JobID != j.ID {
			return s.broken(PlanShape, j.ID, "decision %d is for %q", i, d.JobID)
		}
		ch := change{j: j, cfg: -1}
		if a := d.Assignment; a != nil && j.assign != nil && a.ConfigID == j.assign.ConfigID && slices.Equal(a.GPUs, j.assign.GPUs) {
			// Unchanged, GPU for GPU: nothing to check again.
			ch.cfg, ch.gpus, ch.none = j.cfg, j.gpus, true
			changes[i] = ch
			continue
		}
		if a := d.Assignment; a != nil {
			ch.cfg = slices.IndexFunc(j.Configs, func(c Variant) bool { return c.ID == a.ConfigID })
			if ch.cfg < 0 {
				return s.broken(PlanShape, j.ID, "configuration %q is not in the job's family", a.ConfigID)
			}
			if len(a.GPUs) != j.Configs[ch.cfg].GPUs {
				return s.broken(PlanShape, j.ID, "configuration %q needs %d GPUs, the plan gives %d", a.ConfigID, j.Configs[ch.cfg].GPUs, len(a.GPUs))
			}
			ch.gpus = make([]int, len(a.GPUs))
			for k, id := range a.GPUs {
				g, ok := s.gpuIndex[id]
				if !ok {
					return s.broken(PlanShape, j.ID, "GPU %q is not in the cluster", id)
				}
				ch.gpus[k] = g
			}
			sorted := slices.Clone(ch.gpus)
			slices.Sort(sorted)
			if len(slices.Compact(sorted)) != len(ch.gpus) {
				return s.broken(PlanShape, j.ID, "GPUs %v repeat", a.GPUs)
			}
		}
		switch {
		case j.cfg < 0 && ch.cfg < 0:
			ch.none = true
		case j.cfg < 0:
			ch.kind = elastico.Start
		case ch.cfg < 0:
			ch.kind = elastico.Preempt
		case ch.cfg == j.cfg && sets.Equal(j.gpus, ch.gpus):
			ch.none = true
		case sets.Subset(j.gpus, ch.gpus) || sets.Subset(ch.gpus, j.gpus):
			// No replica goes to a GPU it was not on: a restart in place,
			// growing or shrinking.
			ch.kind = elastico.Reconfigure
		default:
			ch.kind = elastico.Migrate
		}
		changes[i] = ch
		j.waitCode = waitBeforeEpoch
		if d.Assignment == nil {
			j.waitCode = d.Status.Code
		}
	}
	// The actions must be exactly the changes, kind for kind.
	moved := 0
	for i := range changes {
		if !changes[i].none {
			moved++
		}
	}
	if moved == 0 && len(plan.Actions) == 0 {
		// Nothing changes (most epochs, every ΔT).
		return nil
	}
	want := make(map[string]elastico.ActionKind, moved)
	for _, ch := range changes {
		if !ch.none {
			want[ch.j.ID] = ch.kind
		}
	}
	seen := make(map[string]bool, len(plan.Actions))
	for _, a := range plan.Actions {
		k, ok := want[a.JobID]
		switch {
		case !ok:
			return s.broken(PlanShape, a.JobID, "action %s, but the decisions change nothing for it", a.Kind)
		case seen[a.JobID]:
			return s.broken(PlanShape, a.JobID, "two actions")
		case k != a.Kind:
			return s.broken(PlanShape, a.JobID, "action %s, the decisions make it a %s (%v)", a.Kind, k, a)
		}
		seen[a.JobID] = true
	}
	if len(seen) != len(want) {
		for id, k := range want {
			if !seen[id] {
				return s.broken(PlanShape, id, "the decisions %s it but the plan has no action", k)
			}
		}
	}
	if err := s.watchFlaps(changes); err != nil {
		return err
	}
	for i := range changes {
		ch := &changes[i]
		if ch.none {
			continue
		}
		j := ch.j
		cost := 0.0
		switch ch.kind {
		case elastico.Start:
			if j.started {
				cost = s.cfg.Costs.Resume.Seconds()
				j.restarts++
			} else {
				j.started, j.firstStart = true, s.now
			}
		case elastico.Preempt:
			j.preemptions++
		case elastico.Reconfigure:
			cost = s.cfg.Costs.Reconfigure.Seconds()
			j.reconfigs++
		case elastico.Migrate:
			cost = s.cfg.Costs.Migrate.Seconds()
			j.migrations++
		}
		j.cfg, j.gpus = ch.cfg, ch.gpus
		if ch.cfg < 0 {
			j.gpus, j.assign, j.busyUntil = nil, nil, 0
			continue
		}
		j.busyUntil = s.now + cost
		j.spread = false
		node := s.gpus[j.gpus[0]].node
		ids := make([]string, len(j.gpus))
		for k, g := range j.gpus {
			ids[k] = s.gpuIDs[g]
			if s.gpus[g].node != node {
				j.spread = true
			}
		}
		j.assign = &elastico.Assignment{ConfigID: j.Configs[ch.cfg].ID, GPUs: ids}
	}
	return s.checkCapacity()
}
