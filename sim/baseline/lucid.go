package baseline

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/elastico/elastico"
)

// Lucid is a Lucid scheduler (Hu et al., ASPLOS'23, after its artifact's
// policy/lucid.py as run on the Philly trace). Every epoch it estimates each
// job's run time with a model learned from the jobs it has seen finish
// (durationModel: per model family, batch and GPU count, never the job's
// true work) and orders the waiting jobs by estimated GPU-time (run time ×
// requested GPUs), shortest first, ties first come, first served. Each job
// in turn, under its requested configuration (the first profile of its
// family), first looks for an affine partner on the run list, in the order
// jobs started: a job running alone on as many GPUs as it asks for, whose
// sharing score (from its measured SM share: 0, 1 or 2) sums with its own
// to at most 2, whose GPUs have room for its memory and its SM share
// (MaxPairSM), and whose estimated GPU-time is at least half its own; it
// then shares the partner's GPUs.
// Failing that it takes free whole GPUs (one node if one holds it, the
// fullest such), and failing that it waits while later jobs go ahead
// (backfill). Running jobs are never moved or stopped.
//
// Lucid learns between calls, so a Lucid serves one cluster: use a fresh
// one per simulated run. The zero value is ready to use and safe for
// concurrent use; do not copy one after its first Epoch.
type Lucid struct {
	// MaxPairSM is the most SM share two jobs on one GPU may hold
	// together; zero means 1. Lucid's scores alone would let a pair
	// oversubscribe (its utilization is a time share), but an elastico
	// GPU's SM shares are reservations that must fit the GPU.
	MaxPairSM float64
	// Prior is the run time assumed for every job until one has finished;
	// zero means DefaultLucidPrior.
	Prior time.Duration
	// AnyModel makes it heterogeneity-agnostic in a cluster of several
	// GPU models: a job joins a partner, or takes free whole GPUs, on any
	// one model, under the family's profile of its requested configuration
	// there (LucidAgnosticName). Otherwise it runs only on its requested
	// configuration's model.
	AnyModel bool

	mu     sync.Mutex
	model  *durationModel
	seen   map[string]*sighting
	last   time.Time // the previous epoch's State.Now
	runSeq int
}

// LucidName is the policy's name in reports.
const LucidName = "lucid"

// LucidAgnosticName is the name of Lucid{AnyModel: true} in reports.
const LucidAgnosticName = "lucid-agnostic"

var _ elastico.Scheduler = (*Lucid)(nil)

func (l *Lucid) prior() time.Duration {
	if l.Prior == 0 {
		return DefaultLucidPrior
	}
	return l.Prior
}

// Epoch implements elastico.Scheduler.
func (l *Lucid) Epoch(ctx context.Context, st *elastico.State) (*elastico.Plan, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	limit := l.MaxPairSM
	if limit == 0 {
		limit = 1
	}
	if !(limit > 0 && limit <= 1) {
		return nil, errorf("Lucid.MaxPairSM %g, want a share in (0, 1]", l.MaxPairSM)
	}
	if l.Prior < 0 {
		return nil, errorf("Lucid.Prior %v, want ≥ 0", l.Prior)
	}
	v, err := newView(st)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if err := l.observe(st); err != nil {
		return nil, err
	}
	// Lucid's priority: estimated GPU-time under the requested
	// configuration (estimator.py: the estimate times gpu_num).
	prio := make([]float64, len(st.Jobs))
	for i := range st.Jobs {
		p := requested(&st.Jobs[i])
		prio[i] = l.model.estimate(l.seen[st.Jobs[i].ID].keys) * float64(p.Demand.GPUs)
	}
	order := fifo(st)
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(prio[a], prio[b]) })
	var runList []int
	for i := range st.Jobs {
		if v.jobGPUs[i] != nil {
			runList = append(runList, i)
		}
	}
	slices.SortFunc(runList, func(a, b int) int {
		return cmp.Compare(l.seen[st.Jobs[a].ID].order, l.seen[st.Jobs[b].ID].order)
	})
	nodeGPUs := 0
	for _, n := range v.nodes {
		nodeGPUs = max(nodeGPUs, len(n.gpus))
	}
	pl := newPlanner(v)
	for _, i := range order {
		j := &st.Jobs[i]
		if j.Running != nil {
			continue
		}
		p := requested(j)
		var gs []int
		var q *elastico.Profile
		// Lucid packs only gangs of one node (gpu_num <= 8 on its servers).
		if p.Demand.GPUs <= nodeGPUs {
			gs, q = l.partner(v, pl, runList, i, p, prio, limit)
		}
		if gs == nil && l.AnyModel {
			q, gs = v.anyModelWhole(j, p)
		} else if gs == nil {
			q, gs = p, v.wholeGPUs(p)
		}
		if gs == nil {
			pl.wait(i, elastico.Unplaceable, fmt.Sprintf("gang of %d GPUs finds neither free GPUs nor an affine partner (sharing scores, memory, estimated GPU-time %.3g GPU-h)", p.Demand.GPUs, prio[i]/3600))
			continue
		}
		pl.assign(i, q, gs)
		l.started(l.seen[j.ID])
		runList = append(runList, i)
	}
	return pl.plan(), nil
}
