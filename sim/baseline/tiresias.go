package baseline

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/elastico/elastico"
)

// Tiresias is a Tiresias-like scheduler (Gu et al., NSDI'19) with the
// discretized two-dimensional least-attained-service policy (2D-LAS): a
// job's priority is the queue its attained service falls in (GPU-seconds,
// the product of its GPU count and the time it ran, the State's
// Job.Attained), lower queues first, first come first served within a
// queue. Every epoch it picks, in priority order, the jobs whose requested
// gangs fit the cluster's GPU count, preempts the running jobs that were
// not picked, keeps the picked running jobs where they are, and starts the
// picked waiting jobs on free whole GPUs (as [Volcano] places them); a job
// that finds no free set for lack of contiguous GPUs waits. Jobs run under
// their requested configuration, one job per GPU.
type Tiresias struct {
	// Thresholds are the attained-service limits of the queues, in
	// GPU-seconds, ascending; nil means Tiresias's two-queue setting with
	// the limit at one GPU-hour (3,600 GPU-s).
	Thresholds []float64
	// AnyModel makes it heterogeneity-agnostic in a cluster of several
	// GPU models: a picked job starts on free GPUs of any one model, under
	// the family's profile of its requested configuration there
	// (TiresiasAgnosticName). Otherwise it starts only on its requested
	// configuration's model.
	AnyModel bool
}

// TiresiasName is the policy's name in reports.
const TiresiasName = "tiresias"

// TiresiasAgnosticName is the name of Tiresias{AnyModel: true} in reports.
const TiresiasAgnosticName = "tiresias-agnostic"

// TiresiasHeartbeat is how often a host should consult Tiresias while jobs
// wait even when nothing arrives or finishes: its priorities move with the
// service jobs attain, so a running job can fall below a waiting one
// between events.
const TiresiasHeartbeat = 10 * time.Minute

var _ elastico.Scheduler = Tiresias{}

// Epoch implements elastico.Scheduler.
func (t Tiresias) Epoch(ctx context.Context, st *elastico.State) (*elastico.Plan, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	th := t.Thresholds
	if th == nil {
		th = []float64{3600}
	}
	for k, x := range th {
		if math.IsNaN(x) || x <= 0 || (k > 0 && x <= th[k-1]) {
			return nil, errorf("Tiresias.Thresholds %v: want positive and ascending", th)
		}
	}
	v, err := newView(st)
	if err != nil {
		return nil, err
	}
	queue := func(i int) int {
		q, _ := slices.BinarySearch(th, st.Jobs[i].Attained)
		return q
	}
	order := fifo(st)
	rank := make([]int, len(st.Jobs))
	for r, i := range order {
		rank[i] = r
	}
	slices.SortStableFunc(order, func(a, b int) int {
		if c := cmp.Compare(queue(a), queue(b)); c != 0 {
			return c
		}
		return cmp.Compare(rank[a], rank[b])
	})
	// Pick by GPU count.
	budget := len(v.gpus)
	picked := make([]bool, len(st.Jobs))
	for _, i := range order {
		n := requested(&st.Jobs[i]).Demand.GPUs
		if st.Jobs[i].Running != nil {
			p, _ := st.Jobs[i].Profile(st.Jobs[i].Running.ConfigID)
			n = p.Demand.GPUs
		}
		if n <= budget {
			picked[i] = true
			budget -= n
		}
	}
	pl := newPlanner(v)
	for _, i := range order {
		if st.Jobs[i].Running != nil && !picked[i] {
			pl.wait(i, elastico.Preempted, fmt.Sprintf("preempted by jobs of lower attained service (queue %d)", queue(i)))
		}
	}
	for _, i := range order {
		j := &st.Jobs[i]
		if j.Running != nil {
			continue
		}
		if !picked[i] {
			pl.wait(i, elastico.Unaffordable, fmt.Sprintf("queue %d: jobs of higher priority hold the GPUs", queue(i)))
			continue
		}
		pl.start(i, requested(j), t.AnyModel)
	}
	return pl.plan(), nil
}
