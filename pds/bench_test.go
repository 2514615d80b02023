package pds

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
	"github.com/elastico/elastico/iac/gaveldata"
	"github.com/elastico/elastico/placement"
)

// benchState is a production-shaped State: gpus GPUs (8 per node, 80 GiB,
// MPS), n jobs of 8 configurations each (4 batch sizes × AMP, a fifth of
// the jobs with 2- or 4-GPU configurations), each job one of Gavel's V100
// job types, the data the default predictor was not trained on.
// settleEpochs epochs have run on it (so most jobs run, many share GPUs,
// and the Carry holds prices and penalties), then a fraction churn of the
// jobs left and as many arrived.
func benchState(tb testing.TB, s *Scheduler, n, gpus int, churn float64) *elastico.State {
	return benchStateOn(tb, s, n, gpus, churn, settleEpochs, nil)
}

// benchStateAfter is benchState after settle epochs instead of
// settleEpochs.
func benchStateAfter(tb testing.TB, s *Scheduler, n, gpus int, churn float64, settle int) *elastico.State {
	return benchStateOn(tb, s, n, gpus, churn, settle, nil)
}

// benchModels are the GPU models of a heterogeneous benchmark cluster, a
// third of the nodes each, with each model's speed against the first
// (Gavel's measured V100, P100 and K80 differ about so).
var benchModels = []struct {
	name  string
	speed float64
}{{"V100", 1}, {"P100", 0.6}, {"K80", 0.25}}

// benchStateOn is benchStateAfter on a cluster of several GPU models when
// models is not empty: node i's GPUs are of models[i % len], and every job
// has each of its configurations on every model, at that model's speed.
func benchStateOn(tb testing.TB, s *Scheduler, n, gpus int, churn float64, settle int, models []struct {
	name  string
	speed float64
}) *elastico.State {
	r := rand.New(rand.NewPCG(uint64(n), uint64(gpus)))
	st := &elastico.State{Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	for i := range gpus / 8 {
		nd := elastico.Node{ID: fmt.Sprintf("n%04d", i), CPU: 128, RAM: 2048}
		for k := range 8 {
			model := "A100"
			if len(models) > 0 {
				model = models[i%len(models)].name
			}
			nd.GPUs = append(nd.GPUs, elastico.GPU{ID: fmt.Sprintf("n%04dg%d", i, k), Model: model, Memory: 80, Shared: true})
		}
		st.Cluster.Nodes = append(st.Cluster.Nodes, nd)
	}
	job := func(id string) elastico.Job {
		// A Gavel job type (its model, parameters and batch sizes are what
		// the predictor reads); demands and throughputs are modelled.
		base := gavelTypes[r.IntN(len(gavelTypes))]
		batches := gavelBatches[base.Family]
		j := elastico.Job{ID: id, Class: elastico.Training, Weight: 0.5 + r.Float64(), Arrival: st.Now.Add(-time.Duration(r.IntN(86400)) * time.Second),
			ReferenceBatch: batches[0]}
		g := 1
		if r.IntN(5) == 0 {
			g = 2 << r.IntN(2)
		}
		sm0, mem0, t0 := 0.15+0.35*r.Float64(), 3+20*r.Float64(), 100+400*r.Float64()
		for k := range 4 {
			batch := batches[min(k, len(batches)-1)]
			for amp := range 2 {
				scale := float64(k)
				p := base
				// Modelled demands and throughputs, for any GPU: the
				// V100 type's Hardware would keep it off the A100s.
				p.Hardware = elastico.Hardware{}
				p.Config = elastico.Configuration{ID: fmt.Sprintf("c%d-amp%d", k, amp), BatchSize: batch, AMP: amp == 1, GPUs: g}
				p.Demand = elastico.Demand{GPUs: g, SM: min(1, sm0*(1+0.3*scale)), GPUMemory: mem0 * (1 + 0.4*scale) * (1 - 0.3*float64(amp)), CPU: 2, RAM: 16}
				p.Throughput = t0 * float64(g) * (1 + 0.5*scale) * (1 + 0.2*float64(amp))
				p.Efficiency = 1 / (1 + 0.05*float64(int(1)<<k))
				if len(models) == 0 {
					j.Profiles = append(j.Profiles, p)
					continue
				}
				for _, m := range models {
					q := p
					q.Config.ID += "@" + m.name
					q.Hardware = elastico.Hardware{GPUModel: m.name}
					q.Throughput *= m.speed
					j.Profiles = append(j.Profiles, q)
				}
			}
		}
		return j
	}
	for i := range n {
		st.Jobs = append(st.Jobs, job(fmt.Sprintf("j%05d", i)))
	}
	for range settle {
		plan, err := s.Epoch(context.Background(), st)
		if err != nil {
			tb.Fatal(err)
		}
		st = apply(st, plan)
	}
	// A host that reads its jobs' progress: every running job reports a
	// rate a little below its profile's, so the measured epoch learns from
	// every pair that shares a GPU.
	for i := range st.Jobs {
		if j := &st.Jobs[i]; j.Running != nil {
			p, _ := j.Profile(j.Running.ConfigID)
			j.Observed = elastico.Observation{Rate: p.Throughput * (0.6 + 0.4*r.Float64()), Over: time.Minute}
		}
	}
	for i := range int(churn * float64(n)) {
		k := r.IntN(len(st.Jobs))
		st.Jobs[k] = job(fmt.Sprintf("new%05d", i))
	}
	return st
}

// settleEpochs is how many epochs a benchmark's State has run before it
// is measured: the first admits a whole queue at the tolerance of a long
// queue; the next ones learn which jobs no quiet GPU will take (the
// waiting ones stop being tried beside loud neighbours once the market
// prices them, see epoch.priced). Eight are past that transient: after 16
// and 32 the measured epoch asks the predictor about as often (500 jobs:
// 221 and 138 times against 153; 5,000: 3,056 and 3,016 against 3,542;
// 20,000: 16,118 and 16,078 against 15,624), as the waiting jobs' searches
// meet new neighbours every epoch.
const settleEpochs = 8

// BenchmarkEpoch measures Epoch at production sizes (500 to 20,000 jobs), and where its
// time goes (per-phase metrics from Stats: prices, placement, interference;
// State.Validate apart). churn is the fraction of jobs replaced since the
// last epoch: 2 % is a busy cluster's 5 seconds, 10 % a stress test.
//
// A Scheduler keeps its predictor's answers from one epoch to the next
// (see predCache). cache=warm is a host's loop: every measured epoch starts
// from the cache the settling epochs left, before the churn, so it
// pays for the new jobs' pairs as the next epoch of a real loop would
// (restoring the cache is not measured). cache=cold starts every measured
// epoch from an empty cache, as a new Scheduler's first epoch does.
func BenchmarkEpoch(b *testing.B) {
	for _, bc := range []struct {
		jobs, gpus int
		churn      float64
	}{
		{500, 512, 0.02}, {2000, 2048, 0.02}, {5000, 4096, 0.02}, {20000, 16384, 0.02},
		{500, 512, 0.1}, {20000, 16384, 0.1},
	} {
		b.Run(fmt.Sprintf("jobs=%d/gpus=%d/churn=%g", bc.jobs, bc.gpus, bc.churn), func(b *testing.B) {
			benchEpoch(b, Config{}, bc.jobs, bc.gpus, bc.churn, "warm", "cold")
		})
	}
}

// BenchmarkEpochModels is BenchmarkEpoch on a cluster of three GPU models
// (a third of the nodes each), every job with its configurations on each.
func BenchmarkEpochModels(b *testing.B) {
	for _, bc := range []struct{ jobs, gpus int }{{500, 512}, {20000, 16384}} {
		b.Run(fmt.Sprintf("jobs=%d/gpus=%d/models=3", bc.jobs, bc.gpus), func(b *testing.B) {
			benchEpochOn(b, Config{}, bc.jobs, bc.gpus, 0.02, benchModels, "warm")
		})
	}
}

// BenchmarkEpochLoudProbes measures placement.Config.LoudProbes' trade-off
// on the default placer built with it (Config.Placer's doc): a wider search
// for a quiet GPU packs more jobs (running/job) and asks the predictor
// more.
func BenchmarkEpochLoudProbes(b *testing.B) {
	for _, size := range []struct{ jobs, gpus int }{{500, 512}, {5000, 4096}} {
		for _, probes := range []int{4, 8, 16, 32} {
			b.Run(fmt.Sprintf("jobs=%d/gpus=%d/probes=%d", size.jobs, size.gpus, probes), func(b *testing.B) {
				pl, err := placement.New(placement.Config{LoudProbes: probes, ShareLast: true})
				if err != nil {
					b.Fatal(err)
				}
				benchEpoch(b, Config{Placer: pl}, size.jobs, size.gpus, 0.02, "warm")
			})
		}
	}
}

// benchEpoch measures Epoch under cfg (its Predictor replaced by the
// default one, counted) on benchState(jobs, gpus, churn), with each
// prediction cache named.
func benchEpoch(b *testing.B, cfg Config, jobs, gpus int, churn float64, caches ...string) {
	benchEpochOn(b, cfg, jobs, gpus, churn, nil, caches...)
}

// benchEpochOn is benchEpoch on a cluster of the given GPU models (see
// benchStateOn).
func benchEpochOn(b *testing.B, cfg Config, jobs, gpus int, churn float64, models []struct {
	name  string
	speed float64
}, caches ...string) {
	def, err := New(Config{})
	if err != nil {
		b.Fatal(err)
	}
	// The default predictor, counted.
	pred := &counting{p: def.pred.(*iac.MLP)}
	cfg.Predictor = pred
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	st := benchStateOn(b, s, jobs, gpus, churn, settleEpochs, models)
	warm := s.spare.memo.c.clone()
	// State.Validate's share, measured apart (Epoch runs it first).
	v0 := cpuNanos()
	for range 5 {
		if err := st.Validate(); err != nil {
			b.Fatal(err)
		}
	}
	validate := float64(cpuNanos()-v0) / 5
	for _, cache := range caches {
		b.Run("cache="+cache, func(b *testing.B) {
			var sum elastico.Stats
			var cpu int64
			ran, placed, calls := 0, 0, 0
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				c := &predCache{}
				if cache == "warm" {
					c = warm.clone()
				}
				s.spare.memo.c = c
				pred.n = 0
				b.StartTimer()
				cpu0 := cpuNanos()
				plan, err := s.Epoch(context.Background(), st)
				cpu += cpuNanos() - cpu0
				if err != nil {
					b.Fatal(err)
				}
				calls += pred.n
				sum.Prices += plan.Stats.Prices
				sum.Placement += plan.Stats.Placement
				sum.Interference += plan.Stats.Interference
				sum.Total += plan.Stats.Total
				sum.Rounds += plan.Stats.Rounds
				sum.Iterations += plan.Stats.Iterations
				sum.Violations += plan.Stats.Violations
				ran++
				placed = 0
				for _, d := range plan.Decisions {
					if d.Assignment != nil {
						placed++
					}
				}
			}
			n := float64(ran)
			b.ReportMetric(float64(cpu)/n, "cpu-ns/op")
			b.ReportMetric(validate, "validate-cpu-ns/op")
			b.ReportMetric(float64(sum.Prices.Nanoseconds())/n, "prices-ns/op")
			b.ReportMetric(float64(sum.Placement.Nanoseconds())/n, "placement-ns/op")
			b.ReportMetric(float64(sum.Interference.Nanoseconds())/n, "interference-ns/op")
			other := sum.Total - sum.Prices - sum.Placement - sum.Interference
			b.ReportMetric(float64(other.Nanoseconds())/n, "other-ns/op") // validation, market, plan
			b.ReportMetric(float64(sum.Rounds)/n, "rounds/op")
			b.ReportMetric(float64(sum.Iterations)/n, "iters/op")
			b.ReportMetric(float64(sum.Violations)/n, "violations/op")
			b.ReportMetric(float64(placed)/float64(jobs), "running/job")
			b.ReportMetric(float64(calls)/n, "predictions/op")
		})
	}
}

// counting counts a predictor's calls (Epoch makes them from one
// goroutine). It wraps the immutable default, so Epoch caches its answers,
// and prepares profiles as the default does.
type counting struct {
	p *iac.MLP
	n int
}

func (c *counting) Slowdown(v, a *elastico.Profile) float64 {
	c.n++
	return c.p.Slowdown(v, a)
}

func (c *counting) PreparedLen() int { return c.p.PreparedLen() }

func (c *counting) AppendPrepared(dst []float64, p *elastico.Profile) []float64 {
	return c.p.AppendPrepared(dst, p)
}

func (c *counting) SlowdownPrepared(v, a []float64) (float64, error) {
	c.n++
	return c.p.SlowdownPrepared(v, a)
}

func (c *counting) StableAnswers() {}

// gavelTypes are Gavel's V100 job types, and gavelBatches each model's
// batch sizes.
var gavelTypes, gavelBatches = func() ([]elastico.Profile, map[string][]int) {
	d, err := gaveldata.Load(gaveldata.V100)
	if err != nil {
		panic(err)
	}
	batches := map[string][]int{}
	for _, p := range d.Profiles {
		batches[p.Family] = append(batches[p.Family], p.Config.BatchSize)
	}
	for f := range batches {
		slices.Sort(batches[f])
	}
	return d.Profiles, batches
}()
