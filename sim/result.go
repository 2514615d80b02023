package sim

import (
	"math"
	"slices"
	"time"

	"github.com/elastico/elastico"
)

// Result is what one run measured.
type Result struct {
	Policy string
	Seed   uint64
	GPUs   int
	Jobs   []JobResult
	// Series samples the cluster after every change (a step function).
	Series []Sample
	// Flaps are the plans that undid earlier ones with nothing changed
	// (with Config.AllowFlaps; otherwise the first one fails the run).
	Flaps        []Flap
	Epochs       int
	Events       int
	EpochLatency []time.Duration
	// WindowEnd is the last arrival (s): utilization and throughput are
	// averaged over [0, WindowEnd], while load is offered. Makespan is the
	// last completion.
	WindowEnd, Makespan float64
	// MinGPUTime is the finished jobs' work valued at the fewest
	// GPU-seconds each could take: under its most GPU-efficient
	// configuration, alone, at the better of its two placements' rates
	// (the work_per_gpu_h metric).
	MinGPUTime float64

	smArea, busyArea, thrArea float64
	// job-seconds of progress, of it on a shared GPU, and speed × time there
	runArea, sharedArea, sharedSpeedArea float64
	// job-seconds of waiting, by reason (waitReasons)
	waitArea                        [len(waitReasons)]float64
	smWindow, busyWindow, thrWindow float64
}

// JobResult is one job's outcome.
type JobResult struct {
	ID, Family string
	Class      elastico.Class
	GPUs       int     // requested
	Arrival    float64 // s
	Start      float64 // first start, s (NaN if it never started)
	Finish     float64 // s (NaN if unfinished)
	Dedicated  float64 // s alone under its requested configuration
	Finished   bool
	// Reconfigs, Migrations, Preemptions and Restarts count transitions;
	// Flaps the job's flaps (see Flap).
	Reconfigs, Migrations, Preemptions, Restarts, Flaps int
	// RunTime is the time the job made progress; FloorTime the part of it
	// at or above its floor (0 when it has none).
	RunTime, FloorTime float64
	HasFloor           bool
	// HeldTime is the time it held GPUs (RunTime plus its restarts);
	// SharedTime the part of RunTime beside a productive co-runner;
	// GPUTime the GPU-seconds it held.
	HeldTime, SharedTime, GPUTime float64
}

// JCT returns the job completion time (NaN if unfinished).
func (j *JobResult) JCT() float64 { return j.Finish - j.Arrival }

// Queue returns the queueing delay before the first start (NaN if never).
func (j *JobResult) Queue() float64 { return j.Start - j.Arrival }

// Sample is the cluster at one moment.
type Sample struct {
	Time       float64 // s
	SMUtil     float64 // time-weighted SM active over all GPUs, in [0, 1]
	Busy       float64 // fraction of GPUs some job holds
	Throughput float64 // GPU-equivalents of requested progress (see Metrics)
	Running    int
	Waiting    int
}

func (s *simulation) finishResult() {
	r := s.res
	r.Jobs = make([]JobResult, len(s.jobs))
	for i := range s.jobs {
		j := &s.jobs[i]
		jr := JobResult{
			ID: j.ID, Family: j.Family.Name, Class: j.Class, GPUs: j.Requested().GPUs,
			Arrival: j.Arrival, Start: math.NaN(), Finish: math.NaN(), Dedicated: j.Dedicated,
			Finished: j.done, Reconfigs: j.reconfigs, Migrations: j.migrations,
			Preemptions: j.preemptions, Restarts: j.restarts, Flaps: j.flaps,
			RunTime: j.runTime, FloorTime: j.floorTime, HasFloor: j.Floor > 0,
			HeldTime: j.heldTime, SharedTime: j.sharedTime, GPUTime: j.attained,
		}
		if j.started {
			jr.Start = j.firstStart
		}
		if j.done {
			jr.Finish = j.finish
			r.Makespan = math.Max(r.Makespan, j.finish)
			r.MinGPUTime += j.Work * minGPUSecondsPerWork(j.Job)
		}
		r.Jobs[i] = jr
	}
	if r.Makespan == 0 {
		r.Makespan = s.now
	}
}

// waitBeforeEpoch marks a job no plan has spoken of yet (it arrived since
// the last epoch).
const waitBeforeEpoch elastico.Code = -1

// waitReasons name the buckets of waiting time: the Status codes a plan
// gives a waiting job, and the time before the first epoch after arrival.
var waitReasons = [...]string{"unaffordable", "unplaceable", "interference", "preempted", "other"}

func waitIndex(c elastico.Code) int {
	switch c {
	case elastico.Unaffordable:
		return 0
	case elastico.Unplaceable:
		return 1
	case elastico.Interference:
		return 2
	case elastico.Preempted:
		return 3
	}
	return 4
}

// Metrics are one run's figures, by key (see MetricDefs for their meaning).
type Metrics map[string]float64

// MetricDef describes one metric.
type MetricDef struct {
	Key, Label, Unit string
	// HigherIsBetter orients ratios against the baseline.
	HigherIsBetter bool
	Help           string
}

// MetricDefs lists the metrics in report order.
var MetricDefs = []MetricDef{
	{"jct_avg", "avg JCT", "h", false, "mean job completion time (arrival to finish), all jobs"},
	{"jct_median", "median JCT", "h", false, "median job completion time"},
	{"jct_p95", "p95 JCT", "h", false, "95th percentile job completion time"},
	{"jct_train_avg", "avg JCT train", "h", false, "mean JCT of training jobs"},
	{"jct_train_p95", "p95 JCT train", "h", false, "95th percentile JCT of training jobs"},
	{"jct_infer_avg", "avg JCT infer", "h", false, "mean JCT of inference jobs (NaN when none)"},
	{"jct_infer_p95", "p95 JCT infer", "h", false, "95th percentile JCT of inference jobs"},
	{"slowdown_avg", "avg slowdown", "×", false, "mean of JCT / dedicated time under the requested configuration"},
	{"queue_avg", "avg queue", "h", false, "mean queueing delay before a job's first start"},
	{"queue_p95", "p95 queue", "h", false, "95th percentile queueing delay"},
	{"throughput", "throughput", "GPU-eq", true, "mean over the arrival window of Σ_j requested GPUs × (ground-truth rate / dedicated rate): GPUs' worth of requested-configuration progress"},
	{"jobs_per_hour", "jobs/h", "1/h", true, "jobs finished per hour of makespan"},
	{"sm_util", "SM util", "%", true, "time-weighted SM active over all GPUs during the arrival window"},
	{"sm_util_makespan", "SM util (makespan)", "%", true, "the same over the whole run"},
	{"busy", "GPUs held", "%", true, "time-weighted fraction of GPUs some job holds during the arrival window"},
	{"floor_attainment", "floor attain", "%", true, "share of running time jobs with a floor ran at or above it (NaN when no job has one)"},
	{"shared_time", "shared", "%", false, "share of the job-time with progress spent on a GPU another running job shares"},
	{"shared_speed", "speed shared", "", true, "mean ground-truth co-location speed of jobs while they share a GPU (1 = as fast as alone)"},
	{"wait_unaffordable", "wait: unaffordable", "%", false, "share of the job-time spent waiting with status Unaffordable (no configuration worth its resources at the prices)"},
	{"wait_unplaceable", "wait: unplaceable", "%", false, "share of waiting job-time with status Unplaceable (no GPUs hold the chosen configuration)"},
	{"wait_interference", "wait: interference", "%", false, "share of waiting job-time with status Interference (every placement predicted above tolerance)"},
	{"wait_preempted", "wait: preempted", "%", false, "share of waiting job-time after a preemption"},
	{"wait_other", "wait: other", "%", false, "share of waiting job-time for other reasons (Infeasible, or arrived since the last epoch)"},
	{"reconfig_per_gpu_h", "reconfig/GPU-h", "", false, "reconfigurations per GPU-hour of makespan"},
	{"migrate_per_gpu_h", "migrate/GPU-h", "", false, "migrations per GPU-hour of makespan"},
	{"preempt_per_gpu_h", "preempt/GPU-h", "", false, "preemptions per GPU-hour of makespan"},
	{"reconfig_per_job", "reconfig/job", "", false, "mean reconfigurations per job (jobs.csv has each job's)"},
	{"migrate_per_job", "migrate/job", "", false, "mean migrations per job"},
	{"preempt_per_job", "preempt/job", "", false, "mean preemptions per job"},
	{"flaps", "flaps", "", false, "plans that undid an earlier one with nothing changed: a job restored to the assignment it was displaced from, or a swap of GPUs undone, with no arrival or completion in between (sim.Flap); counted only with Config.AllowFlaps, else the first fails the run"},
	{"epoch_ms", "epoch", "ms", false, "mean wall-clock latency of one Epoch call"},
	{"epoch_p99_ms", "epoch p99", "ms", false, "99th percentile Epoch latency"},
	{"makespan", "makespan", "h", false, "time of the last completion"},
	{"work_per_gpu_h", "work/GPU-h", "", true, "GPU-hours of work finished per GPU-hour of makespan (all GPUs), a job's work valued at the fewest GPU-hours it could take (its most GPU-efficient configuration, alone; Result.MinGPUTime): at most 1 without sharing a GPU, above 1 only by sharing"},
	{"unfinished", "unfinished", "jobs", false, "jobs not finished by the horizon"},
}

// Metrics computes the run's figures.
func (r *Result) Metrics() Metrics {
	m := Metrics{}
	var all, train, infer, slow, queue []float64
	unfinished := 0
	var reconf, migr, preempt int
	var floorRun, floorOK float64
	for i := range r.Jobs {
		j := &r.Jobs[i]
		reconf += j.Reconfigs
		migr += j.Migrations
		preempt += j.Preemptions
		if j.HasFloor {
			floorRun += j.RunTime
			floorOK += j.FloorTime
		}
		if !math.IsNaN(j.Start) {
			queue = append(queue, j.Queue()/3600)
		}
		if !j.Finished {
			unfinished++
			continue
		}
		h := j.JCT() / 3600
		all = append(all, h)
		if j.Class == elastico.Inference {
			infer = append(infer, h)
		} else {
			train = append(train, h)
		}
		if j.Dedicated > 0 {
			slow = append(slow, j.JCT()/j.Dedicated)
		}
	}
	m["jct_avg"], m["jct_median"], m["jct_p95"] = mean(all), quantile(all, 0.5), quantile(all, 0.95)
	m["jct_train_avg"], m["jct_train_p95"] = mean(train), quantile(train, 0.95)
	m["jct_infer_avg"], m["jct_infer_p95"] = mean(infer), quantile(infer, 0.95)
	m["slowdown_avg"] = mean(slow)
	m["queue_avg"], m["queue_p95"] = mean(queue), quantile(queue, 0.95)
	if r.WindowEnd > 0 {
		m["throughput"] = r.thrWindow / r.WindowEnd
		m["sm_util"] = 100 * r.smWindow / r.WindowEnd
		m["busy"] = 100 * r.busyWindow / r.WindowEnd
	} else {
		m["throughput"], m["sm_util"], m["busy"] = math.NaN(), math.NaN(), math.NaN()
	}
	if r.Makespan > 0 {
		gpuH := float64(r.GPUs) * r.Makespan / 3600
		m["sm_util_makespan"] = 100 * r.smArea / r.Makespan
		m["jobs_per_hour"] = float64(len(r.Jobs)-unfinished) / (r.Makespan / 3600)
		m["reconfig_per_gpu_h"] = float64(reconf) / gpuH
		m["migrate_per_gpu_h"] = float64(migr) / gpuH
		m["preempt_per_gpu_h"] = float64(preempt) / gpuH
	}
	if n := float64(len(r.Jobs)); n > 0 {
		m["reconfig_per_job"] = float64(reconf) / n
		m["migrate_per_job"] = float64(migr) / n
		m["preempt_per_job"] = float64(preempt) / n
	}
	m["flaps"] = float64(len(r.Flaps))
	m["floor_attainment"] = math.NaN()
	if floorRun > 0 {
		m["floor_attainment"] = 100 * floorOK / floorRun
	}
	lat := make([]float64, len(r.EpochLatency))
	for i, d := range r.EpochLatency {
		lat[i] = float64(d) / float64(time.Millisecond)
	}
	m["epoch_ms"], m["epoch_p99_ms"] = mean(lat), quantile(lat, 0.99)
	m["makespan"] = r.Makespan / 3600
	m["work_per_gpu_h"] = math.NaN()
	if r.Makespan > 0 && r.GPUs > 0 {
		m["work_per_gpu_h"] = r.MinGPUTime / (float64(r.GPUs) * r.Makespan)
	}
	waited := 0.0
	for _, w := range r.waitArea {
		waited += w
	}
	for i, name := range waitReasons {
		m["wait_"+name] = math.NaN()
		if waited > 0 {
			m["wait_"+name] = 100 * r.waitArea[i] / waited
		}
	}
	m["shared_time"], m["shared_speed"] = math.NaN(), math.NaN()
	if r.runArea > 0 {
		m["shared_time"] = 100 * r.sharedArea / r.runArea
	}
	if r.sharedArea > 0 {
		m["shared_speed"] = r.sharedSpeedArea / r.sharedArea
	}
	m["unfinished"] = float64(unfinished)
	return m
}

func mean(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// quantile returns the q-quantile with linear interpolation between order
// statistics (NaN for no data).
func quantile(xs []float64, q float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	pos := q * float64(len(s)-1)
	lo := int(math.Floor(pos))
	hi := min(lo+1, len(s)-1)
	w := pos - float64(lo)
	return s[lo]*(1-w) + s[hi]*w
}

// minGPUSecondsPerWork is the fewest GPU-seconds one unit of j's work can
// take: over its configurations, GPUs / rate alone, at the faster of one
// server and several (co-location only slows a job down).
func minGPUSecondsPerWork(j *Job) float64 {
	best := math.Inf(1)
	for i := range j.Configs {
		c := &j.Configs[i]
		if r := math.Max(c.Goodput(false), c.Goodput(true)); r > 0 {
			best = math.Min(best, float64(c.GPUs)/r)
		}
	}
	return best
}
