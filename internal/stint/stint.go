// Package stint tells a host which of its jobs' throughput reports it may
// hand the scheduler as elastico.Job.Observed. A job's stint is the time it
// has run where it runs now, as it runs now, beside the neighbours it has
// now; a rate measured partly outside it says nothing true about those
// neighbours (pds learns how much a job's one neighbour slows it from it).
// The Kubernetes and Slurm adapters share this rule.
package stint

import (
	"slices"
	"strings"
	"time"

	"github.com/elastico/elastico"
)

// Tracker remembers when each running job's stint began. A host keeps one
// for its lifetime and calls Update with every State it builds. It keeps
// nothing on disk: after a restart every stint starts again at the first
// State (so no report measured before the restart is taken), which costs a
// job one measurement window, not a wrong lesson. The zero value is ready.
type Tracker struct {
	m map[string]mark
}

type mark struct {
	key   string
	since time.Time
}

// Update reads the running jobs of st. A job's stint goes on while its
// tag, its configuration, its GPUs and, for every job that shares one of
// them, that job's ID, tag and configuration stay what they were at the
// previous Update; otherwise a new one begins at st.Now. tag names the
// launch a job runs under (a generation that grows on every relaunch); nil
// means "". Jobs that do not run are forgotten.
func (t *Tracker) Update(st *elastico.State, tag func(*elastico.Job) string) {
	if tag == nil {
		tag = func(*elastico.Job) string { return "" }
	}
	onGPU := map[string][]int{}
	for i := range st.Jobs {
		if a := st.Jobs[i].Running; a != nil {
			for _, g := range a.GPUs {
				onGPU[g] = append(onGPU[g], i)
			}
		}
	}
	next := make(map[string]mark, len(st.Jobs))
	var b strings.Builder
	for i := range st.Jobs {
		j := &st.Jobs[i]
		if j.Running == nil {
			continue
		}
		var nb []int
		for _, g := range j.Running.GPUs {
			for _, k := range onGPU[g] {
				if k != i && !slices.Contains(nb, k) {
					nb = append(nb, k)
				}
			}
		}
		slices.SortFunc(nb, func(x, y int) int { return strings.Compare(st.Jobs[x].ID, st.Jobs[y].ID) })
		b.Reset()
		// NUL cannot occur in the host's IDs and tags as they are built
		// (pod names, Slurm job numbers), so the key is unambiguous.
		b.WriteString(tag(j) + "\x00" + j.Running.ConfigID + "\x00" + strings.Join(j.Running.GPUs, ","))
		for _, k := range nb {
			n := &st.Jobs[k]
			b.WriteString("\x00" + n.ID + "\x00" + tag(n) + "\x00" + n.Running.ConfigID)
		}
		m := mark{key: b.String(), since: st.Now}
		if old, ok := t.m[j.ID]; ok && old.key == m.key {
			m.since = old.since
		}
		next[j.ID] = m
	}
	t.m = next
}

// Since returns when the running job's stint began, as of the last Update.
func (t *Tracker) Since(id string) (time.Time, bool) {
	m, ok := t.m[id]
	return m.since, ok
}

// Observation is what a job reported, measured from since to now at rate,
// as a Job.Observed: ok only when the job runs (as of the last Update),
// its measurement began within its stint, and since is before now. rate
// must already be a finite number ≥ 0.
func (t *Tracker) Observation(id string, now time.Time, rate float64, since time.Time) (elastico.Observation, bool) {
	m, ok := t.m[id]
	if !ok || since.Before(m.since) || !since.Before(now) {
		return elastico.Observation{}, false
	}
	return elastico.Observation{Rate: rate, Over: now.Sub(since)}, true
}
