package adapter

import (
	"context"
	"log/slog"
	"slices"
	"time"

	"github.com/elastico/elastico"
)

// StatusEvery is the least time between two rewrites of a waiting job's
// AdminComment for the same kind of wait.
const StatusEvery = 30 * time.Second

// StatusPerTick bounds the AdminComments one tick writes. Each is an
// scontrol update, a slurmctld RPC and state save (30 to 50 ms measured):
// 2,000 waiting jobs, on the first tick or after a restart of the adapter,
// would otherwise hold one tick for a minute, and the plan's starts with
// it. The rest wait for the next ticks, the stalest first.
const StatusPerTick = 50

type statusMark struct {
	kind string
	at   time.Time
}

// tellWaiting writes why each waiting job waits in its AdminComment
// (scontrol show job): waiting[job] for a start the adapter deferred, else
// the plan's status. A new kind of wait is told before a stale one is
// refreshed; within each, the plan's order.
func (a *Adapter) tellWaiting(ctx context.Context, plan *elastico.Plan, pending map[string]candidate, waiting map[string]string, now time.Time) {
	type due struct {
		c          candidate
		id         string
		text, kind string
		fresh      bool // a new kind of wait (or the first)
		last       time.Time
	}
	var todo []due
	for _, d := range plan.Decisions {
		c, ok := pending[d.JobID]
		if !ok || a.jr.jobs[c.sj.ID] != nil {
			continue
		}
		why, kind := waiting[d.JobID], "deferred"
		if why == "" {
			if d.Assignment != nil {
				continue
			}
			why, kind = d.Status.String(), d.Status.Code.String()
		}
		text := truncate("elastico: waiting: "+why, 500)
		if c.sj.AdminComment == text {
			continue
		}
		// The reasons carry prices that move every epoch: rewrite the
		// comment when the kind of wait changes, else once a StatusEvery,
		// not on every tick (each update is a slurmctld state save).
		last := a.status[c.sj.ID]
		if last.kind == kind && now.Sub(last.at) < StatusEvery {
			continue
		}
		todo = append(todo, due{c: c, id: d.JobID, text: text, kind: kind, fresh: last.kind != kind, last: last.at})
	}
	slices.SortStableFunc(todo, func(x, y due) int {
		switch {
		case x.fresh != y.fresh:
			if x.fresh {
				return -1
			}
			return 1
		case x.fresh:
			return 0
		}
		return x.last.Compare(y.last)
	})
	for _, w := range todo[:min(len(todo), StatusPerTick)] {
		if err := a.cfg.Slurm.Update(ctx, w.c.sj.ID, "AdminComment="+w.text); err != nil {
			a.sayOnce(slog.LevelWarn, "status:"+w.id, "could not set AdminComment", "job", w.id, "err", err)
			continue
		}
		a.status[w.c.sj.ID] = statusMark{kind: w.kind, at: now}
	}
}
