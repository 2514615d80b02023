package pds

import (
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
)

// TestRetuneStartsTheBestOfItsCount: a newcomer's best configuration on
// four GPUs carries the penalty of having found no node at the last epoch,
// so the market bids its lesser one of four GPUs; a node is free now, and
// the job starts under the better one, a restart it pays either way.
func TestRetuneStartsTheBestOfItsCount(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	fam := trainingFamily("big", 100, 4, 4)
	fam[0].Config.ID, fam[1].Config.ID = "b32x4", "b64x4"
	fam[1].Config.BatchSize = 256
	fam[1].Throughput = 380 // 5 % less than b32x4's 400
	st := &elastico.State{Now: now, Cluster: fourGPUNodes(1), Jobs: []elastico.Job{
		{ID: "new", Profiles: fam, ReferenceBatch: 32, Arrival: now.Add(-time.Minute)},
	}, Carry: elastico.Carry{Penalties: map[string]map[string]float64{"new": {"b32x4": 1}}}}
	plan := epochOnce(t, st)
	checkPlan(t, st, plan, nil, iac.Limit{})
	a := plan.Decisions[0].Assignment
	if a == nil || a.ConfigID != "b32x4" {
		t.Errorf("the newcomer: %v (%v), want b32x4, its best on four GPUs", a, plan.Decisions[0].Status)
	}
}
