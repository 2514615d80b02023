package profiler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/elastico/elastico"
)

// Config configures a Profiler. Launcher and Source are required; every
// zero field means the documented default.
type Config struct {
	Launcher Launcher
	Source   Source
	// Clock is the profiler's time; nil: the wall clock.
	Clock Clock
	// Store, when set, receives every profile the profiler measures.
	Store *Store

	// Warm-up ends after WarmupIterations reported iterations or WarmupTime
	// after the first report, whichever comes first (defaults 100 and 30 s;
	// the paper asks for 50–100 iterations or ~30 s).
	WarmupIterations int64
	WarmupTime       time.Duration
	// Window is the measurement window (default 60 s), sampled every
	// Interval (default 1 s).
	Window   time.Duration
	Interval time.Duration
	// Trim is the fraction of samples dropped at each end before averaging
	// (default 0.1: a 10–90 % trimmed mean); negative: no trimming.
	Trim float64
	// StartTimeout is how long a job may take to report its first iteration
	// (default 10 min: loading a large model takes minutes); StallTimeout how
	// long it may then go without a new one (default 2 min).
	StartTimeout time.Duration
	StallTimeout time.Duration
	// MaxSampleErrors is how many failed source samples the window
	// tolerates (a scrape that timed out once); zero: none. A device that
	// disappears is never tolerated.
	MaxSampleErrors int
	// MinSM is the smallest SM share a profile may demand (default 0.01):
	// a job that barely touches the SMs still holds a share of them.
	MinSM float64
	// MPS says the launcher runs jobs under an MPS daemon; it goes into the
	// hardware signature, which a source cannot observe.
	MPS bool
}

// Documented defaults.
const (
	DefaultWarmupIterations = 100
	DefaultWarmupTime       = 30 * time.Second
	DefaultWindow           = 60 * time.Second
	DefaultInterval         = time.Second
	DefaultTrim             = 0.1
	DefaultStartTimeout     = 10 * time.Minute
	DefaultStallTimeout     = 2 * time.Minute
	DefaultMinSM            = 0.01
)

// Profiler measures configurations in isolation (TDOP). It
// implements elastico.Profiler. Profile may be called from several goroutines
// only if the launcher and source allow it; one profile at a time per set of
// devices is what isolation means.
type Profiler struct {
	cfg Config
}

var _ elastico.Profiler = (*Profiler)(nil)

// New checks cfg, fills its defaults and returns a Profiler.
func New(cfg Config) (*Profiler, error) {
	if cfg.Launcher == nil {
		return nil, errors.New("profiler: Config.Launcher is nil")
	}
	if cfg.Source == nil {
		return nil, errors.New("profiler: Config.Source is nil")
	}
	if cfg.Clock == nil {
		cfg.Clock = SystemClock{}
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"WarmupTime", &cfg.WarmupTime, DefaultWarmupTime},
		{"Window", &cfg.Window, DefaultWindow},
		{"Interval", &cfg.Interval, DefaultInterval},
		{"StartTimeout", &cfg.StartTimeout, DefaultStartTimeout},
		{"StallTimeout", &cfg.StallTimeout, DefaultStallTimeout},
	} {
		if *d.v < 0 {
			return nil, fmt.Errorf("profiler: Config.%s is negative (%v)", d.name, *d.v)
		}
		if *d.v == 0 {
			*d.v = d.def
		}
	}
	if cfg.Window < cfg.Interval {
		return nil, fmt.Errorf("profiler: Config.Window (%v) is shorter than Config.Interval (%v)", cfg.Window, cfg.Interval)
	}
	switch {
	case cfg.WarmupIterations < 0:
		return nil, fmt.Errorf("profiler: Config.WarmupIterations is negative (%d)", cfg.WarmupIterations)
	case cfg.WarmupIterations == 0:
		cfg.WarmupIterations = DefaultWarmupIterations
	}
	switch {
	case math.IsNaN(cfg.Trim) || cfg.Trim >= 0.5:
		return nil, fmt.Errorf("profiler: Config.Trim is %g, want a fraction below 0.5", cfg.Trim)
	case cfg.Trim == 0:
		cfg.Trim = DefaultTrim
	case cfg.Trim < 0:
		cfg.Trim = 0
	}
	switch {
	case math.IsNaN(cfg.MinSM) || cfg.MinSM < 0 || cfg.MinSM > 1:
		return nil, fmt.Errorf("profiler: Config.MinSM is %g, want a share in [0, 1]", cfg.MinSM)
	case cfg.MinSM == 0:
		cfg.MinSM = DefaultMinSM
	}
	if cfg.MaxSampleErrors < 0 {
		return nil, fmt.Errorf("profiler: Config.MaxSampleErrors is negative (%d)", cfg.MaxSampleErrors)
	}
	return &Profiler{cfg: cfg}, nil
}

// JobError is the error Profile returns when the job or its measurement
// fails; it names the job as family/configuration.
type JobError struct {
	Job   string // "family/config-id"
	Phase string // "launch", "warm-up", "measurement", ...
	Err   error
}

func (e *JobError) Error() string {
	return fmt.Sprintf("profiler: job %q: %s: %v", e.Job, e.Phase, e.Err)
}

func (e *JobError) Unwrap() error { return e.Err }

// ErrStalled, ErrNoReports and ErrExited are wrapped by the JobError of a job
// that stopped reporting, never reported, or ended before the window did.
var (
	ErrStalled   = errors.New("job stalled")
	ErrNoReports = errors.New("job never reported an iteration")
	ErrExited    = errors.New("job exited")
)

// Profile launches req's configuration alone, warms it up, samples it every
// Interval for Window, and returns its profile: throughput from the job's
// own reports and demand and counters from the source, each a trimmed mean
// over the window (GPU memory, the framebuffer fraction and host RAM: the
// peak). Counters are averaged over the configuration's GPUs, and a counter
// counts as measured when at least half of the window's samples have it.
// Host CPU and RAM are the job's, divided by its GPU count (Demand is per
// replica). The job is stopped before Profile returns.
func (p *Profiler) Profile(ctx context.Context, req elastico.ProfileRequest) (elastico.Profile, error) {
	name := req.Family + "/" + req.Config.ID
	if req.Family == "" {
		return elastico.Profile{}, fmt.Errorf("profiler: job %q: ProfileRequest.Family is empty", name)
	}
	if req.Config.ID == "" {
		return elastico.Profile{}, fmt.Errorf("profiler: job %q: ProfileRequest.Config.ID is empty", name)
	}
	if req.Config.GPUs < 0 {
		return elastico.Profile{}, fmt.Errorf("profiler: job %q: ProfileRequest.Config.GPUs is negative (%d)", name, req.Config.GPUs)
	}
	fail := func(phase string, err error) (elastico.Profile, error) {
		return elastico.Profile{}, &JobError{Job: name, Phase: phase, Err: err}
	}
	// Read the signature before launching, to fail fast on a source that
	// does not work; a source that can see the device only once the job
	// runs is read again after warm-up.
	hw, hwErr := p.cfg.Source.Hardware(ctx)
	if hwErr != nil && !errors.Is(hwErr, ErrNotVisible) {
		return fail("reading the hardware signature", hwErr)
	}

	job, err := p.cfg.Launcher.Launch(ctx, req)
	if err != nil {
		return fail("launch", err)
	}
	r := run{p: p, job: job, replicas: max(1, req.Config.GPUs), hw: hw, hwLater: hwErr != nil}
	prof, phase, err := r.measure(ctx)
	stopErr := job.Stop()
	if err != nil {
		if stopErr != nil {
			err = fmt.Errorf("%w (and stopping it: %v)", err, stopErr)
		}
		return fail(phase, err)
	}
	if stopErr != nil {
		return fail("stop", stopErr)
	}
	prof.Family, prof.Class, prof.Params, prof.Config = req.Family, req.Class, req.Params, req.Config
	prof.Hardware = r.hw
	prof.Hardware.MPS = p.cfg.MPS
	if err := prof.Validate(); err != nil {
		return fail("result", err)
	}
	if p.cfg.Store != nil {
		if _, err := p.cfg.Store.Put(prof); err != nil {
			return fail("store", err)
		}
	}
	return prof, nil
}

// run is one profiling run's state.
type run struct {
	p        *Profiler
	job      Job
	replicas int
	hw       elastico.Hardware
	hwLater  bool // read hw after warm-up (ErrNotVisible before launch)

	launched     time.Time
	first        time.Time // first report seen
	lastIter     int64
	lastNew      time.Time // when lastIter was first seen
	sampleErrors int
	readings     []Reading
}

// poll reads the job's progress and checks it is alive and moving.
func (r *run) poll(now time.Time) (Progress, error) {
	pr, err := r.job.Progress()
	if err != nil {
		return pr, err
	}
	if pr.Iterations < r.lastIter {
		return pr, fmt.Errorf("reported iteration %d after %d", pr.Iterations, r.lastIter)
	}
	if math.IsNaN(pr.Work) || math.IsInf(pr.Work, 0) || pr.Work < 0 {
		return pr, fmt.Errorf("reported work %g, want a finite non-negative number", pr.Work)
	}
	if pr.Exited {
		why := "with no error"
		if pr.Err != nil {
			why = pr.Err.Error()
		}
		return pr, fmt.Errorf("%w after %d iterations, %v after launch: %s", ErrExited, pr.Iterations, now.Sub(r.launched).Round(time.Millisecond), why)
	}
	if pr.Iterations > r.lastIter {
		r.lastIter, r.lastNew = pr.Iterations, now
		if r.first.IsZero() {
			r.first = now
		}
	}
	switch {
	case pr.Iterations == 0 && now.Sub(r.launched) >= r.p.cfg.StartTimeout:
		return pr, fmt.Errorf("%w within %v", ErrNoReports, r.p.cfg.StartTimeout)
	case pr.Iterations > 0 && now.Sub(r.lastNew) >= r.p.cfg.StallTimeout:
		return pr, fmt.Errorf("%w: no iteration after %d for %v", ErrStalled, pr.Iterations, now.Sub(r.lastNew).Round(time.Millisecond))
	}
	return pr, nil
}

// sample reads the source once; a tolerated failure returns ok false.
func (r *run) sample(ctx context.Context, pids []int, warmup bool) (ok bool, err error) {
	r.readings, err = r.p.cfg.Source.Sample(ctx, pids, r.readings[:0])
	switch {
	case err == nil:
		if len(r.readings) != r.replicas {
			return false, fmt.Errorf("source read %d devices, but the configuration runs on %d GPUs", len(r.readings), r.replicas)
		}
		return true, nil
	case errors.Is(err, ErrDeviceGone), ctx.Err() != nil:
		return false, err
	case warmup && r.hwLater && errors.Is(err, ErrNotVisible):
		return false, nil // the job is still starting
	}
	r.sampleErrors++
	if r.sampleErrors > r.p.cfg.MaxSampleErrors {
		return false, fmt.Errorf("%d failed samples (%d tolerated), the last: %w", r.sampleErrors, r.p.cfg.MaxSampleErrors, err)
	}
	return false, nil
}

// reportTime is when pr's latest report was made.
func reportTime(pr Progress, now time.Time) time.Time {
	if pr.At.IsZero() {
		return now
	}
	return pr.At
}

// measure runs warm-up and the window, and returns the measured part of the
// profile (demand, throughput, counters), or the phase that failed.
func (r *run) measure(ctx context.Context) (elastico.Profile, string, error) {
	cfg := &r.p.cfg
	clock := cfg.Clock
	r.launched = clock.Now()
	r.lastNew = r.launched
	next := r.launched

	// Warm-up: sample too, so that sources that difference two samples
	// (GPM) have a baseline when the window opens, and a dead device shows
	// before a minute is spent.
	var pr Progress
	for {
		next = next.Add(cfg.Interval)
		if err := clock.Sleep(ctx, next.Sub(clock.Now())); err != nil {
			return elastico.Profile{}, "warm-up", err
		}
		now := clock.Now()
		var err error
		if pr, err = r.poll(now); err != nil {
			return elastico.Profile{}, "warm-up", err
		}
		if _, err := r.sample(ctx, pr.PIDs, true); err != nil {
			return elastico.Profile{}, "warm-up", err
		}
		if pr.Iterations >= cfg.WarmupIterations || (!r.first.IsZero() && now.Sub(r.first) >= cfg.WarmupTime) {
			break
		}
	}

	if r.hwLater {
		hw, err := cfg.Source.Hardware(ctx)
		if err != nil {
			return elastico.Profile{}, "reading the hardware signature", err
		}
		r.hw = hw
	}

	// The window. Failed samples of the warm-up do not count against it.
	r.sampleErrors = 0
	n := int(cfg.Window / cfg.Interval)
	var (
		rates   = make([]float64, 0, n)
		cpu     = make([]float64, 0, n)
		rss     float64
		usage   = pr.HasUsage
		agg     = newAggregate(n)
		base    = pr
		baseAt  = reportTime(pr, clock.Now())
		prevCPU = pr.CPUSeconds
		prevNow = clock.Now()
	)
	if pr.HasUsage {
		rss = pr.RSS
	}
	for i := 0; i < n; i++ {
		next = next.Add(cfg.Interval)
		if err := clock.Sleep(ctx, next.Sub(clock.Now())); err != nil {
			return elastico.Profile{}, "measurement", err
		}
		now := clock.Now()
		cur, err := r.poll(now)
		if err != nil {
			return elastico.Profile{}, "measurement", err
		}
		if cur.Iterations > base.Iterations {
			at := reportTime(cur, now)
			if dt := at.Sub(baseAt).Seconds(); dt > 0 {
				if cur.Work < base.Work {
					return elastico.Profile{}, "measurement", fmt.Errorf("reported work %g after %g", cur.Work, base.Work)
				}
				rates = append(rates, (cur.Work-base.Work)/dt)
			}
			base, baseAt = cur, at
		}
		usage = usage && cur.HasUsage
		if usage {
			if dt := now.Sub(prevNow).Seconds(); dt > 0 {
				cpu = append(cpu, math.Max(0, cur.CPUSeconds-prevCPU)/dt)
			}
			prevCPU, prevNow = cur.CPUSeconds, now
			rss = math.Max(rss, cur.RSS)
		}
		ok, err := r.sample(ctx, cur.PIDs, false)
		if err != nil {
			return elastico.Profile{}, "measurement", err
		}
		if ok {
			agg.add(r.readings)
		}
	}

	if len(rates) == 0 {
		return elastico.Profile{}, "measurement", fmt.Errorf("%w: no iteration reported in the %v window", ErrStalled, cfg.Window)
	}
	if !usage || len(cpu) == 0 {
		return elastico.Profile{}, "measurement", errors.New("the launcher reported no host CPU and memory usage")
	}
	if agg.samples == 0 {
		return elastico.Profile{}, "measurement", errors.New("no source sample succeeded in the window")
	}
	var prof elastico.Profile
	prof.Throughput = TrimmedMean(rates, cfg.Trim)
	prof.Counters = agg.counters(cfg.Trim)
	sm, ok := prof.Counters.Get(elastico.SMActive)
	if !ok {
		// Graphics-engine activity is the time any kernel ran: an upper
		// bound of the SM share, and what pre-Hopper NVML reports.
		if sm, ok = prof.Counters.Get(elastico.GrEngineActive); !ok {
			return elastico.Profile{}, "measurement", errors.New("the source reported neither SM activity nor graphics-engine activity")
		}
	}
	if !agg.hasMemory() {
		return elastico.Profile{}, "measurement", errors.New("the source reported no GPU memory use")
	}
	prof.Demand = elastico.Demand{
		GPUs:      r.replicas,
		SM:        math.Min(1, math.Max(cfg.MinSM, sm)),
		GPUMemory: agg.memPeak,
		CPU:       TrimmedMean(cpu, cfg.Trim) / float64(r.replicas),
		RAM:       rss / float64(r.replicas),
	}
	return prof, "", nil
}

// aggregate collects the window's readings: per counter one value per
// sample (the mean over the replicas' devices), and the memory peak.
type aggregate struct {
	samples int
	vals    [elastico.NumCounters][]float64
	fbPeak  float64
	fbSeen  int
	memPeak float64
	memSeen int
}

func newAggregate(n int) *aggregate {
	a := &aggregate{}
	for c := range a.vals {
		a.vals[c] = make([]float64, 0, n)
	}
	return a
}

func (a *aggregate) add(rs []Reading) {
	a.samples++
	for c := elastico.Counter(0); c < elastico.NumCounters; c++ {
		s, k := 0.0, 0
		for i := range rs {
			if v, ok := rs[i].Counters.Get(c); ok {
				s += v
				k++
			}
		}
		if k == 0 {
			continue
		}
		if c == elastico.FBUsedFrac {
			// Memory is held, not shared over time: the peak is what a
			// co-runner must leave room for.
			for i := range rs {
				if v, ok := rs[i].Counters.Get(c); ok {
					a.fbPeak = math.Max(a.fbPeak, v)
				}
			}
			a.fbSeen++
			continue
		}
		a.vals[c] = append(a.vals[c], s/float64(k))
	}
	seen := false
	for i := range rs {
		if rs[i].HasMemory {
			a.memPeak = math.Max(a.memPeak, rs[i].MemoryUsed)
			seen = true
		}
	}
	if seen {
		a.memSeen++
	}
}

// present reports whether a counter seen in seen of the samples counts as
// measured: at least half of them, so that one stray value is not a
// measurement and one blank sample does not erase one.
func (a *aggregate) present(seen int) bool { return seen > 0 && 2*seen >= a.samples }

func (a *aggregate) hasMemory() bool { return a.present(a.memSeen) }

func (a *aggregate) counters(trim float64) elastico.Counters {
	var cs elastico.Counters
	for c := elastico.Counter(0); c < elastico.NumCounters; c++ {
		if c == elastico.FBUsedFrac {
			if a.present(a.fbSeen) {
				cs.Set(c, a.fbPeak)
			}
			continue
		}
		if a.present(len(a.vals[c])) {
			cs.Set(c, TrimmedMean(a.vals[c], trim))
		}
	}
	return cs
}
