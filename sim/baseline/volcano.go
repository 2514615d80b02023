package baseline

import (
	"context"

	"github.com/elastico/elastico"
)

// Volcano is a Volcano-like gang scheduler: every job runs under its
// requested configuration (the first profile of its family) on whole GPUs,
// one job per GPU; all of a job's replicas start together or none does
// (gang); jobs are taken first come, first served, and a gang that does not
// fit is passed over so that later jobs that fit go ahead (Volcano's
// allocate action, which skips unsatisfiable gangs: backfill without
// reservation). A running job is never moved or stopped. A gang goes on one
// node when one node has enough free GPUs (the fullest such node), else over
// the nodes with the most free GPUs.
//
// In a cluster of several GPU models it places a job only on its requested
// configuration's model (the reference), unless AnyModel is set.
//
// The zero value is ready to use and safe for concurrent use.
type Volcano struct {
	// AnyModel makes it heterogeneity-agnostic: a gang goes on free GPUs
	// of any one model, under the family's profile of the requested
	// configuration on that model (VolcanoAgnosticName).
	AnyModel bool
}

// Name is the policy's name in reports.
const VolcanoName = "volcano"

// VolcanoAgnosticName is the name of Volcano{AnyModel: true} in reports.
const VolcanoAgnosticName = "volcano-agnostic"

var _ elastico.Scheduler = Volcano{}

// Epoch implements elastico.Scheduler.
func (vo Volcano) Epoch(ctx context.Context, st *elastico.State) (*elastico.Plan, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v, err := newView(st)
	if err != nil {
		return nil, err
	}
	pl := newPlanner(v)
	for _, i := range fifo(st) {
		j := &st.Jobs[i]
		if j.Running != nil {
			continue
		}
		pl.start(i, requested(j), vo.AnyModel)
	}
	return pl.plan(), nil
}
