package sim

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/elastico/elastico"
)

// fifoWhole is a minimal first-come-first-served policy on free whole GPUs
// (no gangs across nodes), so that the benchmark measures the simulator,
// not a scheduler.
type fifoWhole struct{}

func (fifoWhole) Epoch(_ context.Context, st *elastico.State) (*elastico.Plan, error) {
	used := make(map[string]bool, st.Cluster.NumGPUs())
	for _, j := range st.Jobs {
		if j.Running != nil {
			for _, g := range j.Running.GPUs {
				used[g] = true
			}
		}
	}
	free := make([][]string, len(st.Cluster.Nodes))
	for n, node := range st.Cluster.Nodes {
		for _, g := range node.GPUs {
			if !used[g.ID] {
				free[n] = append(free[n], g.ID)
			}
		}
	}
	p := &elastico.Plan{Decisions: make([]elastico.Decision, len(st.Jobs))}
	for i, j := range st.Jobs {
		p.Decisions[i] = elastico.Decision{JobID: j.ID, Assignment: j.Running}
		if j.Running != nil {
			continue
		}
		prof := &j.Profiles[0]
		for n := range free {
			if k := prof.Demand.GPUs; len(free[n]) >= k {
				a := &elastico.Assignment{ConfigID: prof.Config.ID, GPUs: free[n][len(free[n])-k:]}
				free[n] = free[n][:len(free[n])-k]
				p.Decisions[i].Assignment = a
				p.Actions = append(p.Actions, elastico.Action{Kind: elastico.Start, JobID: j.ID, To: a})
				break
			}
		}
	}
	return p, nil
}

// BenchmarkRun replays the shipped Gavel trace at production sizes and
// reports simulated events per second of wall time, with epochs on changes
// and, at 64 GPUs, every ΔT (about 600,000 epochs a run).
func BenchmarkRun(b *testing.B) {
	truth := testTruth(b)
	tr := shippedGavel(b)
	for _, size := range []struct {
		gpus, jobs int
		mode       EpochMode
	}{{64, 384, EpochsOnChange}, {512, 3072, EpochsOnChange}, {64, 384, EpochsEvery}} {
		jobs, _, err := truth.Workload(tr, WorkloadOptions{GPUs: size.gpus, Load: 1, Jobs: size.jobs, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		cl := testCluster(b, size.gpus)
		b.Run(fmt.Sprintf("gpus=%d/jobs=%d/epochs=%s", size.gpus, size.jobs, size.mode), func(b *testing.B) {
			b.ReportAllocs()
			events := 0
			start := time.Now()
			for b.Loop() {
				r, err := Run(context.Background(), Config{Truth: truth, Cluster: cl, Policy: fifoWhole{}, Jobs: jobs, Epochs: size.mode})
				if err != nil {
					b.Fatal(err)
				}
				events += r.Events
			}
			b.ReportMetric(float64(events)/time.Since(start).Seconds(), "events/s")
		})
	}
}
