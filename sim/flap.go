package sim

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/elastico/elastico/internal/sets"
)

// A Flap is a plan that undoes an earlier one while nothing changed: no job
// arrived and none finished in between (the State's jobs are the same ones;
// the simulated cluster never changes). The jobs' progress (Remaining,
// Attained), State.Now and the end of a restart are not changes. Within one
// such calm interval, a flap is either
//
//   - a job restored: a job displaced from an assignment (preempted,
//     migrated or reconfigured) is given back that assignment, the same
//     configuration on the same GPUs, at a later epoch; or
//   - a swap undone: a job gives up GPUs that another job takes at one
//     epoch, and at a later epoch the other gives up GPUs that the first
//     takes.
//
// One flap is counted per job and epoch (a job both restored and swapped
// back is one flap). Under EpochsOnChange only Heartbeat epochs can fall
// inside a calm interval, so flaps show under EpochsEvery. A policy whose
// priorities move with the service jobs attain (least attained service)
// swaps jobs back by design: [Policy].AllowFlaps counts its flaps without
// failing its runs.
type Flap struct {
	// Job is the job restored, or the one that takes GPUs back.
	Job string
	// Other is the job that had taken its GPUs, if any.
	Other string
	// Displaced is when Job lost the assignment or the GPUs, Restored when
	// it got them back, and Calm the last arrival or completion before
	// both (0: none); all simulated seconds.
	Displaced, Restored, Calm float64
	// Assignment is the configuration and GPUs Job gets back.
	Assignment string
}

func (f *Flap) String() string { return fmt.Sprintf("job %q %s", f.Job, f.detail()) }

// detail is the flap without the job's name.
func (f *Flap) detail() string {
	var b strings.Builder
	if f.Other != "" {
		fmt.Fprintf(&b, "takes back the GPUs job %q took from it at t=%.0fs", f.Other, f.Displaced)
	} else {
		fmt.Fprintf(&b, "is restored to the assignment it lost at t=%.0fs", f.Displaced)
	}
	fmt.Fprintf(&b, " (%s at t=%.0fs); no job arrived or finished since t=%.0fs", f.Assignment, f.Restored, f.Calm)
	return b.String()
}

// held is one assignment a job held in the current calm interval.
type held struct {
	cfg  int
	gpus []int
	left float64 // when the job left it; NaN while it holds it
}

// swap records that giver gave up GPUs that taker took, at time t.
type swap struct {
	giver, taker *jobState
	t            float64
}

// calmBreak starts a new calm interval: a job arrived or finished.
func (s *simulation) calmBreak() {
	s.calm++
	s.calmSince = s.now
	s.swaps = s.swaps[:0]
}

// watchFlaps compares the changes an epoch's plan makes with the
// assignments of the current calm interval, records the flaps, and updates
// the history. It runs before the changes are committed (j.cfg and j.gpus
// are still the old ones). Without Config.AllowFlaps the first flap breaks
// the Stability invariant.
func (s *simulation) watchFlaps(changes []change) error {
	moved := false
	for i := range changes {
		if !changes[i].none {
			moved = true
			break
		}
	}
	if !moved {
		return nil
	}
	for i := range changes {
		j := changes[i].j
		if changes[i].none || j.calm == s.calm {
			continue
		}
		j.calm = s.calm
		j.hist = j.hist[:0]
		if j.cfg >= 0 {
			j.hist = append(j.hist, held{cfg: j.cfg, gpus: j.gpus, left: math.NaN()})
		}
	}
	// This epoch's swaps: a GPU one job leaves and another takes.
	now := s.swapBuf[:0]
	for _, t := range changes {
		if t.none || t.cfg < 0 {
			continue
		}
		for _, g := range t.gpus {
			if slices.Contains(t.j.gpus, g) {
				continue
			}
			for _, gv := range changes {
				if gv.none || gv.j == t.j || !slices.Contains(gv.j.gpus, g) || slices.Contains(gv.gpus, g) {
					continue
				}
				if !slices.ContainsFunc(now, func(w swap) bool { return w.giver == gv.j && w.taker == t.j }) {
					now = append(now, swap{giver: gv.j, taker: t.j, t: s.now})
				}
			}
		}
	}
	s.swapBuf = now
	for _, ch := range changes {
		if ch.none || ch.cfg < 0 {
			continue
		}
		j := ch.j
		var f *Flap
		for _, h := range j.hist {
			if !math.IsNaN(h.left) && h.cfg == ch.cfg && sets.Equal(h.gpus, ch.gpus) {
				f = &Flap{Displaced: h.left}
				break
			}
		}
		for _, w := range now {
			if w.taker != j {
				continue
			}
			k := slices.IndexFunc(s.swaps, func(o swap) bool { return o.giver == j && o.taker == w.giver })
			if k < 0 {
				continue
			}
			if f == nil {
				f = &Flap{Displaced: s.swaps[k].t}
			}
			f.Other = w.giver.ID
			break
		}
		if f == nil {
			continue
		}
		f.Job, f.Restored, f.Calm = j.ID, s.now, s.calmSince
		f.Assignment = s.describe(j, ch.cfg, ch.gpus)
		s.res.Flaps = append(s.res.Flaps, *f)
		j.flaps++
		if !s.cfg.AllowFlaps {
			return s.broken(Stability, j.ID, "%s", f.detail())
		}
	}
	s.swaps = append(s.swaps, now...)
	for _, ch := range changes {
		if ch.none {
			continue
		}
		j := ch.j
		if n := len(j.hist); n > 0 && math.IsNaN(j.hist[n-1].left) {
			j.hist[n-1].left = s.now
		}
		if ch.cfg >= 0 {
			j.hist = append(j.hist, held{cfg: ch.cfg, gpus: ch.gpus, left: math.NaN()})
		}
	}
	return nil
}

// describe names configuration cfg of job j on GPUs gpus.
func (s *simulation) describe(j *jobState, cfg int, gpus []int) string {
	ids := make([]string, len(gpus))
	for k, g := range gpus {
		ids[k] = s.gpuIDs[g]
	}
	return j.Configs[cfg].ID + " on " + strings.Join(ids, ",")
}
