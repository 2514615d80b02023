package sim

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/elastico/elastico"
)

// Policy is a named scheduler. New returns a fresh scheduler for each run,
// so that runs can go in parallel and none sees another's state. A New
// made by ReadingTruth builds its scheduler from the run's ground truth:
// a bound, which reports label as one (Outcome.Bounds).
type Policy struct {
	Name string
	New  func() (elastico.Scheduler, error)
	// Heartbeat, when positive, replaces the run template's (a policy
	// whose priorities move with time asks for periodic epochs).
	Heartbeat time.Duration
	// AllowFlaps counts the policy's flaps without failing its runs, for a
	// policy that swaps jobs back by design (least attained service: a job
	// preempted for one with less service is resumed once that one has
	// attained as much); the run template's AllowFlaps applies to all.
	AllowFlaps bool
}

// Experiment replays one trace under several policies and seeds.
type Experiment struct {
	Truth *Truth
	Trace *Trace
	// GPUs is the cluster's size (Truth.GPU servers).
	GPUs int
	// Mix, when set, is a cluster of several GPU models (GavelMix): it
	// replaces Truth (its first part's is the reference) and GPUs (its
	// total), and binds the trace with Mix.Workload. Bounds (TruthReader)
	// and GPUsFor need one model.
	Mix Mix
	// Workload says how to bind the trace; its GPUs and Seed are set per
	// run from GPUs and Seeds.
	Workload WorkloadOptions
	Seeds    []uint64
	Policies []Policy
	// Run is the template of every run; Truth, Cluster, Policy, Name and
	// Jobs are filled in.
	Run Config
	// Parallel runs at most this many simulations at once; zero means
	// GOMAXPROCS.
	Parallel int
	// Progress, if set, is called after each run with the runs done and the
	// total (from several goroutines, one at a time).
	Progress func(done, total int)
	// KeepGoing records a run that fails (a broken invariant, a policy's
	// error) in Outcome.Failures and carries on with the others, instead of
	// stopping the experiment at the first failure.
	KeepGoing bool
}

// Failure is a run that did not complete.
type Failure struct {
	Policy string
	Seed   uint64
	Err    error
}

// Outcome holds every run of an experiment.
type Outcome struct {
	GPUs     int
	Seeds    []uint64
	Policies []string
	// Results[p][s] is policy p's run on seed s (the orders of Policies and
	// Seeds); nil when that run failed (see Failures).
	Results [][]*Result
	// Failures are the runs that failed, with KeepGoing.
	Failures []Failure
	// Workloads[s] describes seed s's jobs.
	Workloads []WorkloadStats
	// Bounds are the policies that read the ground truth (TruthReader),
	// by name, with what they know that no real scheduler does.
	Bounds map[string]string
}

// cluster is the experiment's cluster: Mix's, or GPUs of Truth's.
func (e *Experiment) cluster() (elastico.Cluster, error) {
	if e.Mix != nil {
		return e.Mix.Cluster()
	}
	return e.Truth.GPU.Cluster(e.GPUs)
}

// Jobs binds the trace for one seed (as Run does).
func (e *Experiment) Jobs(seed uint64) ([]Job, WorkloadStats, error) {
	o := e.Workload
	o.GPUs, o.Seed = e.GPUs, seed
	if e.Mix != nil {
		return e.Mix.Workload(e.Trace, o)
	}
	return e.Truth.Workload(e.Trace, o)
}

// Execute runs every policy on every seed.
func (e *Experiment) Execute(ctx context.Context) (*Outcome, error) {
	if e.Mix != nil {
		e.Truth, e.GPUs = e.Mix[0].Truth, e.Mix.GPUs()
	}
	if e.Truth == nil || e.Trace == nil {
		return nil, fmt.Errorf("sim: experiment: Truth and Trace are required")
	}
	if len(e.Seeds) == 0 || len(e.Policies) == 0 {
		return nil, fmt.Errorf("sim: experiment: %d seeds, %d policies; want at least one of each", len(e.Seeds), len(e.Policies))
	}
	names := map[string]bool{}
	for _, p := range e.Policies {
		if p.Name == "" || p.New == nil || names[p.Name] {
			return nil, fmt.Errorf("sim: experiment: policy %q: empty or duplicate name, or nil New", p.Name)
		}
		names[p.Name] = true
	}
	cluster, err := e.cluster()
	if err != nil {
		return nil, err
	}
	out := &Outcome{GPUs: e.GPUs, Seeds: e.Seeds, Results: make([][]*Result, len(e.Policies)), Workloads: make([]WorkloadStats, len(e.Seeds))}
	jobs := make([][]Job, len(e.Seeds))
	for s, seed := range e.Seeds {
		if jobs[s], out.Workloads[s], err = e.Jobs(seed); err != nil {
			return nil, err
		}
	}
	for p := range e.Policies {
		out.Policies = append(out.Policies, e.Policies[p].Name)
		out.Results[p] = make([]*Result, len(e.Seeds))
	}
	par := e.Parallel
	if par <= 0 {
		par = runtime.GOMAXPROCS(0)
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(par)
	var mu sync.Mutex
	done, total := 0, len(e.Seeds)*len(e.Policies)
	for s := range e.Seeds {
		for p := range e.Policies {
			g.Go(func() error {
				pol, err := e.Policies[p].New()
				if err != nil {
					return fmt.Errorf("sim: policy %s: %w", e.Policies[p].Name, err)
				}
				cfg := e.Run
				cfg.Truth, cfg.Cluster, cfg.Policy, cfg.Name, cfg.Jobs = e.Truth, cluster, pol, e.Policies[p].Name, jobs[s]
				if e.Mix != nil {
					cfg.Truths = e.Mix.Truths()
				}
				if hb := e.Policies[p].Heartbeat; hb > 0 {
					cfg.Heartbeat = hb
				}
				cfg.AllowFlaps = cfg.AllowFlaps || e.Policies[p].AllowFlaps
				cfg.Progress = nil
				r, err := Run(gctx, cfg)
				if err != nil && (!e.KeepGoing || gctx.Err() != nil) {
					return fmt.Errorf("%s, seed %d: %w", e.Policies[p].Name, e.Seeds[s], err)
				}
				mu.Lock()
				if b, ok := pol.(TruthReader); ok {
					if out.Bounds == nil {
						out.Bounds = map[string]string{}
					}
					out.Bounds[e.Policies[p].Name] = b.Bound()
				}
				if err != nil {
					out.Failures = append(out.Failures, Failure{Policy: e.Policies[p].Name, Seed: e.Seeds[s], Err: err})
				} else {
					r.Seed = e.Seeds[s]
					out.Results[p][s] = r
				}
				done++
				if e.Progress != nil {
					e.Progress(done, total)
				}
				mu.Unlock()
				return nil
			})
		}
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	slices.SortFunc(out.Failures, func(a, b Failure) int {
		if a.Policy != b.Policy {
			return strings.Compare(a.Policy, b.Policy)
		}
		return int(a.Seed) - int(b.Seed)
	})
	return out, nil
}

// Stat is a metric over seeds: the mean and the half-width of its 95 %
// confidence interval (Student's t with N−1 degrees of freedom; NaN when N
// < 2). Seeds where the metric is undefined (NaN) are left out of N.
type Stat struct {
	Mean float64 `json:"mean"`
	CI95 float64 `json:"ci95"`
	N    int     `json:"n"`
}

// NewStat summarizes xs.
func NewStat(xs []float64) Stat {
	var v []float64
	for _, x := range xs {
		if !math.IsNaN(x) && !math.IsInf(x, 0) {
			v = append(v, x)
		}
	}
	s := Stat{Mean: math.NaN(), CI95: math.NaN(), N: len(v)}
	if len(v) == 0 {
		return s
	}
	s.Mean = mean(v)
	if len(v) < 2 {
		return s
	}
	ss := 0.0
	for _, x := range v {
		ss += (x - s.Mean) * (x - s.Mean)
	}
	sd := math.Sqrt(ss / float64(len(v)-1))
	t := distuv.StudentsT{Mu: 0, Sigma: 1, Nu: float64(len(v) - 1)}.Quantile(0.975)
	s.CI95 = t * sd / math.Sqrt(float64(len(v)))
	return s
}

// MetricSummary is one metric of one policy over the seeds.
type MetricSummary struct {
	Stat
	// Ratio is policy / baseline, seed by seed (same jobs), then averaged.
	Ratio Stat `json:"ratio"`
	// Gain is the improvement over the baseline, seed by seed: baseline /
	// policy for a metric where lower is better, policy / baseline
	// otherwise (so > 1 is better, e.g. "2.9× lower JCT").
	Gain Stat `json:"gain"`
}

// PolicySummary is one policy's metrics.
type PolicySummary struct {
	Policy  string                   `json:"policy"`
	Metrics map[string]MetricSummary `json:"metrics"`
}

// Summary is an experiment's figures.
type Summary struct {
	Baseline string          `json:"baseline"`
	GPUs     int             `json:"gpus"`
	Seeds    []uint64        `json:"seeds"`
	Policies []PolicySummary `json:"policies"`
	// Workload describes the jobs (mean over seeds).
	Jobs        float64 `json:"jobs"`
	Inference   float64 `json:"inference_jobs"`
	OfferedLoad float64 `json:"offered_load"`
	SpanHours   float64 `json:"span_hours"`
	// Failures are the runs that failed ("policy, seed n: error").
	Failures []string `json:"failures,omitempty"`
	// Bounds are the policies that read the ground truth (Outcome.Bounds):
	// bounds, not results; the table labels them.
	Bounds map[string]string `json:"bounds,omitempty"`
	// Saturated is true when every job was submitted at t = 0
	// (WorkloadOptions.Saturated): the table reports makespan and work per
	// GPU-hour instead of throughput over the arrival window.
	Saturated bool `json:"saturated,omitempty"`
}

// Summarize computes every metric's mean and CI over seeds, and its ratio
// and gain against the baseline policy (no ratios when baseline is not in
// the outcome).
func Summarize(o *Outcome, baseline string) *Summary {
	s := &Summary{Baseline: baseline, GPUs: o.GPUs, Seeds: o.Seeds, Bounds: o.Bounds}
	for _, f := range o.Failures {
		s.Failures = append(s.Failures, fmt.Sprintf("%s, seed %d: %v", f.Policy, f.Seed, f.Err))
	}
	for _, w := range o.Workloads {
		n := float64(len(o.Workloads))
		s.Jobs += float64(w.Jobs) / n
		s.Inference += float64(w.Inference) / n
		s.OfferedLoad += w.OfferedLoad / n
		s.SpanHours += w.Span / 3600 / n
		s.Saturated = s.Saturated || w.Saturated
	}
	// A failed run's metrics are all NaN: left out of N and of the ratios.
	metrics := make([][]Metrics, len(o.Policies))
	for p := range o.Policies {
		for _, r := range o.Results[p] {
			if r == nil {
				metrics[p] = append(metrics[p], Metrics{})
				continue
			}
			metrics[p] = append(metrics[p], r.Metrics())
		}
	}
	base := slices.Index(o.Policies, baseline)
	for p, name := range o.Policies {
		ps := PolicySummary{Policy: name, Metrics: map[string]MetricSummary{}}
		for _, d := range MetricDefs {
			var xs, ratio, gain []float64
			for k := range o.Seeds {
				x, ok := metrics[p][k][d.Key]
				if !ok {
					x = math.NaN()
				}
				xs = append(xs, x)
				if base < 0 {
					continue
				}
				b, ok := metrics[base][k][d.Key]
				if !ok {
					b = math.NaN()
				}
				r := x / b
				if b == 0 || math.IsNaN(r) {
					r = math.NaN()
				}
				ratio = append(ratio, r)
				if d.HigherIsBetter {
					gain = append(gain, r)
				} else {
					gain = append(gain, 1/r)
				}
			}
			ms := MetricSummary{Stat: NewStat(xs), Ratio: NewStat(ratio), Gain: NewStat(gain)}
			ps.Metrics[d.Key] = ms
		}
		s.Policies = append(s.Policies, ps)
	}
	return s
}

// GPUsFor finds, for each policy, the fewest GPUs (among candidates,
// ascending) at which its mean JCT over seeds is at most target hours,
// running the jobs bound for e.GPUs (the same arrivals) on smaller or larger
// clusters. It returns 0 for a policy no candidate satisfies. The search is
// a bisection, which assumes JCT does not grow with the cluster.
func (e *Experiment) GPUsFor(ctx context.Context, target float64, candidates []int) (map[string]int, error) {
	if e.Mix != nil {
		return nil, fmt.Errorf("sim: GPUsFor: a mix of GPU models (%v) has no one size to vary", e.Mix)
	}
	if len(candidates) == 0 || !slices.IsSorted(candidates) {
		return nil, fmt.Errorf("sim: GPUsFor: candidates %v must be ascending and non-empty", candidates)
	}
	jobs := make([][]Job, len(e.Seeds))
	for s, seed := range e.Seeds {
		var err error
		if jobs[s], _, err = e.Jobs(seed); err != nil {
			return nil, err
		}
	}
	meanJCT := func(p Policy, gpus int) (float64, error) {
		cluster, err := e.Truth.GPU.Cluster(gpus)
		if err != nil {
			return 0, err
		}
		var sum float64
		for s := range e.Seeds {
			pol, err := p.New()
			if err != nil {
				return 0, err
			}
			cfg := e.Run
			cfg.Truth, cfg.Cluster, cfg.Policy, cfg.Name, cfg.Progress = e.Truth, cluster, pol, p.Name, nil
			if p.Heartbeat > 0 {
				cfg.Heartbeat = p.Heartbeat
			}
			cfg.AllowFlaps = cfg.AllowFlaps || p.AllowFlaps
			cfg.Jobs = capJobs(jobs[s], gpus)
			r, err := Run(ctx, cfg)
			if err != nil {
				return 0, fmt.Errorf("%s on %d GPUs, seed %d: %w", p.Name, gpus, e.Seeds[s], err)
			}
			sum += r.Metrics()["jct_avg"]
		}
		return sum / float64(len(e.Seeds)), nil
	}
	out := map[string]int{}
	for _, p := range e.Policies {
		lo, hi := 0, len(candidates)-1
		found := -1
		for lo <= hi {
			mid := (lo + hi) / 2
			j, err := meanJCT(p, candidates[mid])
			if err != nil {
				return nil, err
			}
			if j <= target {
				found, hi = mid, mid-1
			} else {
				lo = mid + 1
			}
		}
		if found >= 0 {
			out[p.Name] = candidates[found]
		} else {
			out[p.Name] = 0
		}
	}
	return out, nil
}

// capJobs drops the configurations of jobs that need more than gpus GPUs;
// a job whose requested configuration needs more is dropped from its
// family's front too, with the largest remaining one requested instead.
func capJobs(jobs []Job, gpus int) []Job {
	out := make([]Job, len(jobs))
	copy(out, jobs)
	for i := range out {
		j := &out[i]
		if j.Requested().GPUs <= gpus && slices.IndexFunc(j.Configs, func(c Variant) bool { return c.GPUs > gpus }) < 0 {
			continue
		}
		var cs []Variant
		var ps []elastico.Profile
		for k := range j.Configs {
			if j.Configs[k].GPUs <= gpus {
				cs, ps = append(cs, j.Configs[k]), append(ps, j.Profiles[k])
			}
		}
		if j.Requested().GPUs > gpus {
			// ask for the largest configuration that fits, same batch
			best := -1
			for k := range cs {
				if cs[k].LocalBatch == j.Requested().LocalBatch && (best < 0 || cs[k].GPUs > cs[best].GPUs) {
					best = k
				}
			}
			if best > 0 {
				cs[0], cs[best] = cs[best], cs[0]
				ps[0], ps[best] = ps[best], ps[0]
			}
		}
		j.Configs, j.Profiles = cs, ps
	}
	return out
}
