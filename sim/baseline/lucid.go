package baseline

import (
	"context"
	"fmt"

	"github.com/elastico/elastico"
)

// Lucid is a Lucid-like packing scheduler (Hu et al., ASPLOS'23): jobs keep
// their requested configuration (the first profile of their family), are
// taken first come, first served with the same gang and skip rule as
// [Volcano], and take free GPUs first; when too few GPUs are free, a
// replica may share a GPU with exactly one other job if the pair passes
// Lucid's packing rule: their SM use sums to at most MaxPairSM and their
// memory fits the GPU. Among packable GPUs the one whose resident uses the
// least SM is taken first. Running jobs are never moved or stopped.
type Lucid struct {
	// MaxPairSM is the most SM share two jobs on one GPU may use together;
	// zero means 1.
	MaxPairSM float64
}

// LucidName is the policy's name in reports.
const LucidName = "lucid"

var _ elastico.Scheduler = Lucid{}

// Epoch implements elastico.Scheduler.
func (l Lucid) Epoch(ctx context.Context, st *elastico.State) (*elastico.Plan, error) {
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
		p := requested(j)
		gs := v.wholeGPUs(p)
		if gs == nil {
			packable := func(g int) bool {
				x := &v.gpus[g]
				if len(x.jobs) == 0 {
					return x.mem >= p.Demand.GPUMemory
				}
				return x.shared && len(x.jobs) == 1 && x.sm+p.Demand.SM <= limit+1e-9 && x.used+p.Demand.GPUMemory <= x.mem+1e-9
			}
			gs = v.placeGang(p, packable, func(g int) float64 { return v.gpus[g].sm })
		}
		if gs == nil {
			pl.wait(i, elastico.Unplaceable, fmt.Sprintf("gang of %d GPUs finds neither free GPUs nor partners within SM %.2f and memory", p.Demand.GPUs, limit))
			continue
		}
		pl.assign(i, p, gs)
	}
	return pl.plan(), nil
}
