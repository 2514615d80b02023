package pds

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/google/go-cmp/cmp"
)

// idleState is an idle node of gpus shared GPUs (nothing runs) and jobs
// waiting jobs of family "loud", each with configs configurations of one
// GPU (the first, SM 0.3, fits three to a GPU), arrived a second apart.
func idleState(gpus, jobs, configs int, carried elastico.Vector) *elastico.State {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	n := elastico.Node{ID: "n0", CPU: 64, RAM: 512}
	for g := range gpus {
		n.GPUs = append(n.GPUs, elastico.GPU{ID: fmt.Sprintf("g%d", g), Model: "V100", Memory: 32, Shared: true})
	}
	st := &elastico.State{Now: now, Cluster: elastico.Cluster{Nodes: []elastico.Node{n}}}
	st.Carry.Prices = carried
	for i := range jobs {
		j := elastico.Job{ID: fmt.Sprintf("j%02d", i), Class: elastico.Training, Arrival: now.Add(time.Duration(i-jobs) * time.Second), ReferenceBatch: 32}
		for k := range configs {
			j.Profiles = append(j.Profiles, elastico.Profile{
				Family:     "loud",
				Class:      elastico.Training,
				Config:     elastico.Configuration{ID: fmt.Sprintf("c%d", k), BatchSize: 32 << k, GPUs: 1},
				Demand:     elastico.Demand{GPUs: 1, SM: 0.3 + 0.2*float64(k), GPUMemory: 4, CPU: 2, RAM: 8},
				Throughput: 100 * (1 + float64(k)),
				Efficiency: 1,
			})
		}
		st.Jobs = append(st.Jobs, j)
	}
	return st
}

// TestIdleClusterMakesProgress: on an idle cluster, waiting jobs whose
// configurations fit it are never all left waiting, whatever prices the
// last epoch carried, even where every pair that could share a GPU is
// predicted above tolerance (more jobs than GPUs, so the first round has
// to co-locate): a host that calls Epoch again only when something
// changes would otherwise wait forever. Issue 6: the −RST ablation (one
// configuration per job) on the Gavel trace left 86 jobs waiting on an
// idle cluster at a carried CPU price of 18. The first round placed 31
// jobs with 53 loud ordered pairs; charging the lesser value of every
// ordered pair made that plan worth 31 − 53 < 0, the local round deferred
// every violator (penalized by Δ at the round's prices), and its empty
// plan won. Deferring one job of each pair loses each job's value once.
func TestIdleClusterMakesProgress(t *testing.T) {
	loud := tablePredictor{"loud|loud": 2} // above any τ(t) of the default tolerance
	for _, tc := range []struct {
		name          string
		gpus, jobs    int
		configs       int
		carried       elastico.Vector
		ablation      Ablation
		wantScheduled int // jobs scheduled: one per GPU, since no two may share one
	}{
		{name: "the stuck market: one configuration, a high carried SM price", gpus: 2, jobs: 8, configs: 1, carried: elastico.Vector{31, 0, 0, 0}, wantScheduled: 2},
		{name: "one configuration, a high carried CPU price", gpus: 2, jobs: 8, configs: 1, carried: elastico.Vector{0, 0, 18, 0}, wantScheduled: 2},
		{name: "one configuration, no carried prices", gpus: 2, jobs: 8, configs: 1, wantScheduled: 2},
		{name: "one configuration, many jobs", gpus: 4, jobs: 40, configs: 1, carried: elastico.Vector{31, 5, 18, 5}, wantScheduled: 4},
		{name: "-RST holds three configurations to the first", gpus: 2, jobs: 8, configs: 3, carried: elastico.Vector{31, 0, 18, 0}, ablation: Ablation{FixedConfiguration: true}, wantScheduled: 2},
		{name: "three configurations", gpus: 2, jobs: 8, configs: 3, carried: elastico.Vector{31, 0, 18, 0}, wantScheduled: 2},
		{name: "-PDS, no reservation", gpus: 2, jobs: 8, configs: 1, carried: elastico.Vector{31, 0, 0, 0}, ablation: Ablation{NoReservation: true, NoCoordinatedReconfiguration: true}, wantScheduled: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(Config{Predictor: loud, Ablation: tc.ablation, Clock: fixedClock()})
			if err != nil {
				t.Fatal(err)
			}
			st := idleState(tc.gpus, tc.jobs, tc.configs, tc.carried)
			plan, err := s.Epoch(context.Background(), st)
			if err != nil {
				t.Fatal(err)
			}
			checkPlan(t, st, plan, loud, s.Config().Sharing.Keep())
			got := 0
			for _, d := range plan.Decisions {
				if d.Assignment != nil {
					got++
				}
			}
			if diff := cmp.Diff(tc.wantScheduled, got); diff != "" {
				t.Errorf("jobs scheduled on the idle cluster (-want +got):\n%s\nfirst decision: %v", diff, plan.Decisions[0].Status)
			}
		})
	}
}
