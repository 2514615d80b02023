package sim

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/elastico/elastico"
)

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
	rateSince    float64 // when rate last changed: what Observed.Over measures
	prevRate     float64 // rate before rates() ran
	shared       bool    // a productive co-runner shares one of its GPUs
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
	heldTime    float64 // time it held GPUs, restarting or not
	sharedTime  float64 // time it made progress beside a productive co-runner
	// assignments held in calm interval number calm (see watchFlaps)
	calm int
	hist []held
	// normalization of throughput: requested GPUs × Dedicated / Work
	norm float64
}

type gpuState struct {
	node    int
	truth   *Truth // the ground truth of its model
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
// an invariant breaks, and the policy's error if an epoch fails. A
// TruthReader policy is first bound to cfg.Truth.
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
	if b, ok := cfg.Policy.(TruthReader); ok {
		if len(cfg.Truths) > 1 {
			return nil, fmt.Errorf("sim: %s reads one ground truth; this run has %d GPU models", cfg.Name, len(cfg.Truths))
		}
		if err := b.BindTruth(cfg.Truth); err != nil {
			return nil, fmt.Errorf("sim: %s: %w", cfg.Name, err)
		}
	}
	s := &simulation{cfg: cfg, nextEpoch: math.Inf(1), lastEpoch: math.Inf(-1)}
	s.jobs = make([]jobState, len(cfg.Jobs))
	for i := range cfg.Jobs {
		j := &cfg.Jobs[i]
		s.jobs[i] = jobState{Job: j, index: i, cfg: -1, waitCode: waitBeforeEpoch}
		s.jobs[i].norm = float64(j.Requested().GPUs) * j.Dedicated / j.Work
	}
	s.gpuIndex = map[string]int{}
	truths, _ := cfg.truthsByModel() // resolve checked them
	for n := range cfg.Cluster.Nodes {
		s.nodes = append(s.nodes, nodeState{})
		for k, g := range cfg.Cluster.Nodes[n].GPUs {
			s.gpuIndex[g.ID] = len(s.gpus)
			s.gpus = append(s.gpus, gpuState{node: n, truth: truths[g.Model]})
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
		j.heldTime += d
		if j.rate > 0 {
			w := j.rate * d
			j.progress += w
			j.integral += math.FMA(j.rate, d, 0)
			s.credited += w
			j.runTime += d
			s.res.runArea += d
			if j.shared {
				j.sharedTime += d
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
