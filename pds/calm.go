package pds

import (
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/slab"
)

// calmReason is the status of a waiting job the best plan would have
// started where revertGroups holds still: it was stopped in the calm, or
// the GPUs are a settled job's (see calmSettled).
const calmReason = "the plan holds still: it, or a job on the GPUs it would take, was started, moved or stopped since the last job arrived or left, and nothing has changed since"

// calm finds since when the State's jobs have been the same ones
// (Carry.Calm): since the Carry's calm if the State has its jobs, since
// Now otherwise.
func (e *epoch) calm() {
	jobs := e.st.Jobs
	var d uint64
	for i := range jobs {
		d += idHash(jobs[i].ID)
	}
	prev := e.st.Carry.Calm
	e.calmNow = elastico.Calm{Since: e.st.Now, Jobs: len(jobs), Digest: d, Last: e.st.Now}
	e.calmOn = prev.Jobs == len(jobs) && prev.Digest == d && !prev.Since.IsZero() && !prev.Since.After(e.st.Now)
	e.calmAgain = e.calmOn && prev.Last.Equal(e.st.Now)
	if e.calmOn {
		e.calmNow.Since = prev.Since
	}
}

// idHash is FNV-1a, 64 bits.
func idHash(id string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(id); i++ {
		h ^= uint64(id[i])
		h *= 1099511628211
	}
	return h
}

// calmSettled reports whether job j was started, moved or reshaped (if it
// runs) or preempted (if it waits) since the jobs last changed, at an
// epoch that sees the same jobs as the last (not the first epoch after a
// change, whatever its Now): a plan made while nothing changed leaves it
// as it is (revertGroups), so that a calm cluster reaches a fixed point
// after its first epoch. A plan's displacements are the market's best
// guess at one moment; once nothing changes, a second guess that moves
// the same jobs again is as likely to undo the first as to improve on it
// (a job preempted at one epoch's prices and started on the same GPU at
// the next's). At the same Now as the last epoch every job has settled,
// a waiting one too: the State that epoch produced is a fixed point. A
// job that has not changed since the jobs last did may still be moved
// once, later in the calm (a job held for MinRunTime at a change grows
// onto idle GPUs when the hold ends).
func (e *epoch) calmSettled(j int32) bool {
	if !e.calmOn {
		return false
	}
	if e.calmAgain {
		return true // the same moment again: a fixed point
	}
	t, ok := e.st.Carry.Since[e.jobs[j].job.ID]
	return ok && !t.Before(e.calmNow.Since)
}

// keepSince reports whether Carry.Since must keep a running job's entry
// t: while it is held for MinRunTime, and while it has settled.
func (e *epoch) keepSince(t time.Time) bool {
	return e.st.Now.Sub(t) < e.cfg.MinRunTime || !t.Before(e.calmNow.Since)
}

// freezeSettled bids each settled running job (calmSettled) only where and
// as it runs, unless the rule for keeping a pair splits a pair it is in:
// the market then has to find what it still wants to change among the
// other jobs. revertGroups undoes a group of changes that moves a settled
// job, but not one it cannot put back (its pair is loud, or the node's CPU
// went to a change of another such group), and with the market free to
// move settled jobs, a group that had to split a pair carried other
// settled jobs along: a chain of three migrations to move one job off a
// loud neighbour took the CPU another settled job needed to return, and
// that job went back to the GPUs it had left a minute before (a flap, on
// Gavel's V100/P100/K80 cluster at load 1.5).
func (e *epoch) freezeSettled() {
	if !e.calmOn {
		return
	}
	var loud []int32
	if e.memo.on() && len(e.sqOff) > 0 {
		loud = slab.Zeroed(e.fill, len(e.jobs))
		for g := range int32(e.ngpu) {
			e.curPairs(g, func(a, b int32, sa, sb float64) {
				if e.keepExcess(a, b, sa, sb) > 0 {
					loud[a], loud[b] = 1, 1
				}
			})
		}
		e.fill = loud
	}
	for j := range e.jobs {
		js := &e.jobs[j]
		if !js.running || js.curOpt < 0 || js.bidder < 0 || loud != nil && loud[j] != 0 || !e.calmSettled(int32(j)) {
			continue
		}
		// Its other options priced out of reach; their learned penalties
		// are kept for the epochs after the calm.
		for o := js.first; o < js.first+js.n; o++ {
			if o != js.curOpt {
				e.base[o] = frozen
			}
		}
	}
}

// frozen is the switching cost of a settled job's other options in a calm
// epoch (freezeSettled): in units of the job's scale, far beyond any
// option's worth.
const frozen = 1e6

// keepExcess is how far running jobs a and b, sharing a GPU as the State
// runs them with predicted slowdowns sa and sb, are outside the rule for
// keeping a pair (iac.Sharing.Keep), each within its own limit.
func (e *epoch) keepExcess(a, b int32, sa, sb float64) float64 {
	return e.limKeep.Excess(sa, sb, e.capOf(a, e.jobs[a].cur), e.capOf(b, e.jobs[b].cur))
}
