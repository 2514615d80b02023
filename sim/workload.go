package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/elastico/elastico"
)

// Job is one job the simulator runs: a trace job bound to a family of the
// ground truth.
type Job struct {
	ID      string
	Family  *Family
	Class   elastico.Class
	Arrival float64 // seconds from the start of the run
	// Configs are the configurations the job may run under, the requested
	// one first (the convention the baselines rely on, and the reference
	// batch of the job's learning rate); Profiles are what a scheduler sees
	// of them, in the same order.
	Configs  []Variant
	Profiles []elastico.Profile
	// Work is what the job must do, in the family's reference-equivalent
	// unit (samples at Family.RefBatch, or tokens).
	Work float64
	// Floor is the lowest throughput the job accepts (0: none).
	Floor  float64
	Weight float64
	// Dedicated is how long the job takes alone under its requested
	// configuration (seconds): the yardstick of load and slowdown.
	Dedicated float64
	// Trace locates the job in its trace file.
	Trace string
	Line  int
}

// Requested returns the job's requested configuration.
func (j *Job) Requested() *Variant { return &j.Configs[0] }

// WorkloadOptions says how to turn a trace into the jobs of one run.
type WorkloadOptions struct {
	// GPUs is the cluster's size. Requests above it are capped, and the
	// arrival rate scales with it (see Load).
	GPUs int
	// Load is the offered load: arrival times are rescaled so that the
	// GPU-time the jobs request (GPUs × Dedicated) arrives at Load times the
	// cluster's capacity over the arrival span (1 = exactly the capacity,
	// "100 %"). Zero keeps the trace's own arrival times.
	Load float64
	// Jobs is the window's length; zero means the whole trace. The window
	// starts at a job drawn with Seed and wraps around the trace (a wrapped
	// pass is shifted by the trace's span plus its mean gap), so that every
	// seed replays a different stretch.
	Jobs int
	Seed uint64
	// InferenceFraction turns that fraction of the window's single-GPU
	// training jobs (drawn with Seed) into offline-inference jobs of the
	// same dedicated duration. Traces that state the class keep it.
	InferenceFraction float64
	// InferenceFloor sets an inference job's floor to that fraction of its
	// requested configuration's throughput (0: no floor).
	InferenceFloor float64
	// ProfileNoise is the relative standard deviation of the throughput a
	// profiler would measure (0: profiles are exact).
	ProfileNoise float64
	// Saturated submits the whole window at t = 0: a fixed batch, whose
	// makespan and work per GPU-hour measure throughput free of the
	// offered load. It needs Load 0.
	Saturated bool
}

// WorkloadStats says what the binding did.
type WorkloadStats struct {
	Jobs, Inference int
	Capped          int     // requests above the cluster's size, capped
	Drawn           int     // jobs whose family the trace did not name, drawn
	Span            float64 // seconds between the first and last arrival, after scaling
	TimeScale       float64 // factor applied to the trace's arrival times
	// OfferedLoad is the requested GPU-time over the span's capacity.
	OfferedLoad float64
	// Saturated: every job arrives at t = 0 (WorkloadOptions.Saturated).
	Saturated bool
	// Fractional counts jobs held to a share of one GPU (TraceJob.GPUShare);
	// NoModel the trace's jobs left out because none of the cluster's GPU
	// models they may run on (TraceJob.Models) can run them.
	Fractional, NoModel int
}

// Workload binds a trace's jobs to this ground truth (see WorkloadOptions).
// The same trace, truth and options always give the same jobs. A job the
// trace holds to GPU models (TraceJob.Models) runs anywhere: one truth is
// one model; Mix.Workload honours them.
func (t *Truth) Workload(tr *Trace, o WorkloadOptions) ([]Job, WorkloadStats, error) {
	return t.workload(tr, o, nil)
}

// workload is Workload with place, when set, called on every job bound:
// it may move the job to other models (Mix.Workload), or leave it out by
// returning false.
func (t *Truth) workload(tr *Trace, o WorkloadOptions, place func(j *Job, tj TraceJob, st *WorkloadStats) (bool, error)) ([]Job, WorkloadStats, error) {
	var st WorkloadStats
	if o.GPUs < 1 {
		return nil, st, fmt.Errorf("sim: workload: GPUs %d, want ≥ 1", o.GPUs)
	}
	for _, c := range []struct {
		name string
		v    float64
	}{{"Load", o.Load}, {"InferenceFraction", o.InferenceFraction}, {"InferenceFloor", o.InferenceFloor}, {"ProfileNoise", o.ProfileNoise}} {
		if math.IsNaN(c.v) || math.IsInf(c.v, 0) || c.v < 0 {
			return nil, st, fmt.Errorf("sim: workload: %s %g, want a finite number ≥ 0", c.name, c.v)
		}
	}
	if o.InferenceFraction > 1 || o.InferenceFloor > 1 || o.ProfileNoise >= 0.5 {
		return nil, st, fmt.Errorf("sim: workload: InferenceFraction %g, InferenceFloor %g (want ≤ 1), ProfileNoise %g (want < 0.5)", o.InferenceFraction, o.InferenceFloor, o.ProfileNoise)
	}
	if o.Jobs < 0 {
		return nil, st, fmt.Errorf("sim: workload: Jobs %d, want ≥ 0", o.Jobs)
	}
	if o.Saturated && o.Load != 0 {
		return nil, st, fmt.Errorf("sim: workload: Saturated submits every job at t = 0; Load %g, want 0", o.Load)
	}
	if tr == nil || len(tr.Jobs) == 0 {
		return nil, st, fmt.Errorf("sim: workload: empty trace")
	}
	rng := rand.New(rand.NewPCG(o.Seed, 0x5eed_51))
	n := o.Jobs
	if n == 0 {
		n = len(tr.Jobs)
	}
	first, last := tr.Jobs[0].Arrival, tr.Jobs[len(tr.Jobs)-1].Arrival
	period := last - first
	if len(tr.Jobs) > 1 {
		period += period / float64(len(tr.Jobs)-1)
	}
	start := rng.IntN(len(tr.Jobs))

	var kinds [][2]any // (family, batch) pairs to draw from
	for _, f := range t.families {
		if f.Class != elastico.Training || len(f.batches) == 0 {
			continue
		}
		for _, b := range f.batches {
			kinds = append(kinds, [2]any{f, b})
		}
	}
	var infer []*Family
	for _, f := range t.families {
		if f.Class == elastico.Inference {
			infer = append(infer, f)
		}
	}

	jobs := make([]Job, 0, n)
	var requested float64
	for i := 0; i < n; i++ {
		pos := start + i
		tj := tr.Jobs[pos%len(tr.Jobs)]
		pass := pos / len(tr.Jobs)
		if pass > 0 {
			tj.ID = fmt.Sprintf("%s#%d", tj.ID, pass)
		}
		tj.Arrival += float64(pass) * period
		j, err := t.bind(tr, tj, o, rng, kinds, infer, &st)
		if err != nil {
			return nil, st, err
		}
		if place != nil {
			ok, err := place(&j, tj, &st)
			if err != nil {
				return nil, st, err
			}
			if !ok {
				st.NoModel++
				continue
			}
		}
		if tj.share() < 1 {
			st.Fractional++
		}
		requested += float64(j.Requested().GPUs) * j.Dedicated
		jobs = append(jobs, j)
	}
	if len(jobs) == 0 {
		return nil, st, fmt.Errorf("sim: workload: %s: none of the window's %d jobs may run on this cluster's GPU models", tr.Name, n)
	}
	t0 := jobs[0].Arrival
	for i := range jobs {
		jobs[i].Arrival -= t0
		if o.Saturated {
			jobs[i].Arrival = 0
		}
	}
	st.Saturated = o.Saturated
	span := jobs[len(jobs)-1].Arrival
	st.TimeScale = 1
	if o.Load > 0 {
		if span <= 0 {
			return nil, st, fmt.Errorf("sim: workload: %s: every job of the window arrives at once; the load cannot be scaled (use Load 0)", tr.Name)
		}
		st.TimeScale = requested / (o.Load * span * float64(o.GPUs))
		for i := range jobs {
			jobs[i].Arrival *= st.TimeScale
		}
		span *= st.TimeScale
	}
	st.Jobs, st.Span = len(jobs), span
	if span > 0 {
		st.OfferedLoad = requested / (span * float64(o.GPUs))
	}
	return jobs, st, nil
}

func (t *Truth) bind(tr *Trace, tj TraceJob, o WorkloadOptions, rng *rand.Rand, kinds [][2]any, infer []*Family, st *WorkloadStats) (Job, error) {
	fail := func(field, format string, args ...any) error {
		return traceErr(tr.Name, tj.Line, field, "job %q: %s", tj.ID, fmt.Sprintf(format, args...))
	}
	gpus := tj.GPUs
	if gpus > o.GPUs {
		gpus = o.GPUs
		st.Capped++
	}
	class := tj.Class
	var fam *Family
	batch := tj.Batch
	switch {
	case class == elastico.Inference:
		if tj.Family != "" {
			f, ok := t.byName[tj.Family]
			if !ok || f.Class != elastico.Inference {
				return Job{}, fail("family", "%q is not an inference family of the %s ground truth", tj.Family, t.GPU.Model)
			}
			fam = f
		} else {
			if len(infer) == 0 {
				return Job{}, fail("class", "inference, but the %s ground truth has no inference family", t.GPU.Model)
			}
			fam = infer[rng.IntN(len(infer))]
			st.Drawn++
		}
	case tj.Family != "":
		f, ok := t.byName[tj.Family]
		if !ok || f.Class != elastico.Training {
			return Job{}, fail("family", "%q is not a training family of the %s ground truth", tj.Family, t.GPU.Model)
		}
		fam = f
	default:
		k := kinds[rng.IntN(len(kinds))]
		fam, batch = k[0].(*Family), k[1].(int)
		st.Drawn++
	}

	var req Variant
	var err error
	if fam.Class == elastico.Training {
		if batch == 0 && tj.GlobalBatch > 0 {
			batch = nearestBatch(fam.batches, tj.GlobalBatch/gpus)
		}
		if batch == 0 {
			batch = fam.batches[0]
		}
		req, err = t.Config(fam.Name, batch, gpus)
		if err != nil {
			return Job{}, fail("batch", "%v", err)
		}
	} else {
		kv, seqs := tj.KVCacheFrac, tj.MaxSeqs
		if kv == 0 {
			kv = inferenceRequestedKV
		}
		if seqs == 0 {
			seqs = inferenceRequestedSeqs
		}
		i := slices.IndexFunc(fam.Configs, func(c Variant) bool { return math.Abs(c.KVCacheFrac-kv) < 1e-9 && c.MaxSeqs == seqs })
		if i < 0 {
			return Job{}, fail("kv", "family %s has no configuration with KV-cache fraction %g and %d sequences", fam.Name, kv, seqs)
		}
		req = fam.Configs[i]
	}
	if req.Memory > t.GPU.Memory {
		return Job{}, fail("batch", "configuration %s of %s needs %.1f GiB per GPU, the %s has %.1f", req.ID, fam.Name, req.Memory, t.GPU.Model, t.GPU.Memory)
	}
	share := tj.share()
	if share < 1 && gpus != 1 {
		return Job{}, fail("gpu_milli", "a share %g of each of %d GPUs: a share of a GPU is for one-GPU jobs", share, gpus)
	}
	req = req.atShare(share)
	spread := req.GPUs > t.GPU.PerNode
	var work float64
	switch {
	case tj.Work > 0:
		work = tj.Work
	case tj.Steps > 0:
		work = tj.Steps * float64(max(req.LocalBatch, 1)) * req.Efficiency
	case tj.Duration > 0:
		work = tj.Duration * req.Goodput(spread)
	case fam.Work > 0:
		work = fam.Work
	default:
		return Job{}, fail("", "the trace states no work, steps or duration")
	}
	if work <= 0 || math.IsInf(work, 0) || math.IsNaN(work) {
		return Job{}, fail("", "work %g", work)
	}

	// Offline-inference conversion keeps the job's dedicated time.
	if fam.Class == elastico.Training && !tj.ClassKnown && gpus == 1 && o.InferenceFraction > 0 && len(infer) > 0 && rng.Float64() < o.InferenceFraction {
		d := work / req.Goodput(false)
		fam = infer[rng.IntN(len(infer))]
		i := slices.IndexFunc(fam.Configs, func(c Variant) bool {
			return math.Abs(c.KVCacheFrac-inferenceRequestedKV) < 1e-9 && c.MaxSeqs == inferenceRequestedSeqs
		})
		if i < 0 {
			return Job{}, fail("", "inference family %s lacks its requested configuration", fam.Name)
		}
		req = fam.Configs[i].atShare(share)
		work = d * req.Throughput
		class = elastico.Inference
		spread = false
	}
	if fam.Class == elastico.Inference {
		class = elastico.Inference
		st.Inference++
	}

	j := Job{
		ID: tj.ID, Family: fam, Class: class, Arrival: tj.Arrival, Work: work, Weight: 1,
		Dedicated: work / req.Goodput(spread), Trace: tr.Name, Line: tj.Line,
	}
	j.Configs = append(j.Configs, req)
	for _, c := range fam.Configs {
		if c.ID == req.ID || c.GPUs > o.GPUs || c.Memory > t.GPU.Memory || (share < 1 && c.GPUs != 1) {
			continue
		}
		j.Configs = append(j.Configs, c.atShare(share))
	}
	if class == elastico.Inference && o.InferenceFloor > 0 {
		j.Floor = o.InferenceFloor * req.Throughput
	}
	var noise func() float64
	if o.ProfileNoise > 0 {
		noise = func() float64 { return math.Max(0.05, 1+o.ProfileNoise*rng.NormFloat64()) }
	}
	j.Profiles = t.Profiles(fam, j.Configs, noise)
	claimShare(j.Profiles, share)
	if j.Floor > 0 {
		// A floor the noisy profiles put above every configuration would
		// make the job invalid for any scheduler; cap it at the best.
		best := 0.0
		for _, p := range j.Profiles {
			best = math.Max(best, p.Throughput)
		}
		j.Floor = math.Min(j.Floor, best)
	}
	return j, nil
}

// nearestBatch returns the batch in bs (ascending) closest to b in log scale.
func nearestBatch(bs []int, b int) int {
	best, bestD := bs[0], math.Inf(1)
	for _, x := range bs {
		if x <= 0 || b <= 0 {
			continue
		}
		if d := math.Abs(math.Log(float64(x) / float64(b))); d < bestD {
			best, bestD = x, d
		}
	}
	return best
}

// share returns the fraction of one GPU the job asked for (GPUShare), 1
// for whole GPUs or when the trace states none.
func (tj *TraceJob) share() float64 {
	if tj.GPUShare > 0 && tj.GPUShare < 1 {
		return tj.GPUShare
	}
	return 1
}

// atShare returns c held to a share s of one GPU (an openb pod's
// gpu_milli, which GPU-sharing runtimes enforce as a compute quota): a
// configuration that keeps more than s of the SMs busy alone gets s of
// them, and runs at s/SM of its speed, time-sliced; one that needs less
// runs as it is. Its profile claims s (claimShare).
func (c Variant) atShare(s float64) Variant {
	if s >= 1 || c.SM <= s {
		return c
	}
	f := s / c.SM
	c.Throughput *= f
	c.SpreadThroughput *= f
	c.SM = s
	c.Measured = false
	return c
}

// claimShare makes every profile claim the share s of its GPU that the
// job asked for, whatever it would use: the placer keeps it for the job.
func claimShare(profs []elastico.Profile, s float64) {
	if s >= 1 {
		return
	}
	for i := range profs {
		profs[i].Demand.SM = math.Max(s, minSMShare)
	}
}
