package baseline

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/elastico/elastico"
)

// DefaultLucidPrior is the run time Lucid assumes for every job before any
// job has finished.
const DefaultLucidPrior = time.Hour

// lucidMinHistory is how many finished jobs a feature key needs before its
// median is trusted over a coarser key's: one job's run time is mostly noise.
const lucidMinHistory = 3

// durationModel stands in for Lucid's Workload Estimate Model. Lucid trains
// a GA²M on an earlier month of the cluster's log (user, job name, GPU
// count, submission time) and its artifact's fallback (NaiveEstimator) is
// the mean run time of the user's past jobs of that name and GPU count. A
// simulated job has neither user nor name, so the features are what its
// requested configuration says: model family, global batch and GPU count.
// The model learns online, from the jobs it has seen finish: the estimate
// is the median run time of finished jobs with the same (family, batch,
// GPUs), else the same (family, GPUs), else the same family, once a key has
// lucidMinHistory of them; else the median of every finished job; else the
// prior. It never reads Job.Remaining (the true work left).
type durationModel struct {
	hist  map[string][]float64 // per feature key, ascending run times (s)
	all   []float64            // every finished job, ascending
	prior float64              // seconds
}

func newDurationModel(prior time.Duration) *durationModel {
	return &durationModel{hist: map[string][]float64{}, prior: prior.Seconds()}
}

// featureKeys returns the keys of a requested configuration, finest first.
func featureKeys(p *elastico.Profile) [3]string {
	return [3]string{
		fmt.Sprintf("%s\x00b%d\x00g%d", p.Family, p.Config.BatchSize, p.Demand.GPUs),
		fmt.Sprintf("%s\x00g%d", p.Family, p.Demand.GPUs),
		p.Family,
	}
}

// learn records a finished job's run time under its keys.
func (m *durationModel) learn(keys [3]string, secs float64) {
	for _, k := range keys {
		m.hist[k] = insertSorted(m.hist[k], secs)
	}
	m.all = insertSorted(m.all, secs)
}

// estimate returns the expected run time (s) of a job with these keys.
func (m *durationModel) estimate(keys [3]string) float64 {
	for _, k := range keys {
		if h := m.hist[k]; len(h) >= lucidMinHistory {
			return median(h)
		}
	}
	if len(m.all) > 0 {
		return median(m.all)
	}
	return m.prior
}

func insertSorted(xs []float64, x float64) []float64 {
	i, _ := slices.BinarySearch(xs, x)
	return slices.Insert(xs, i, x)
}

func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}

// sighting is what Lucid remembers of a job from the last State it saw.
type sighting struct {
	keys    [3]string
	running bool
	// service is the seconds the job had run by then: its Attained
	// GPU-seconds over the GPUs it held.
	service float64
	// order is the job's place in the order jobs started (Lucid's run
	// list, where it looks for a partner); zero while it has not run.
	order int
}

// observe checks what Lucid reads of the State beyond newView's checks,
// then learns from the jobs that left it since the last call (finished: a
// job that ran at its last sighting, or that the last plan started, and is
// gone) and records this State's
// jobs. A gone job's run time is its service at its last sighting plus half
// the time since, the middle of the interval its end fell in.
func (l *Lucid) observe(st *elastico.State) error {
	present := make(map[string]bool, len(st.Jobs))
	for i := range st.Jobs {
		j := &st.Jobs[i]
		if present[j.ID] {
			return errorf("job %q: duplicate ID", j.ID)
		}
		present[j.ID] = true
		if math.IsNaN(j.Attained) || math.IsInf(j.Attained, 0) || j.Attained < 0 {
			return errorf("job %q: Attained %g: want a finite number of GPU-seconds ≥ 0", j.ID, j.Attained)
		}
	}
	if !l.last.IsZero() && st.Now.Before(l.last) {
		return errorf("State.Now %v is before the previous epoch's %v", st.Now, l.last)
	}
	if l.model == nil {
		l.model = newDurationModel(l.prior())
		l.seen = map[string]*sighting{}
	}
	var gone []string
	for id := range l.seen {
		if !present[id] {
			gone = append(gone, id)
		}
	}
	slices.Sort(gone) // learn in a fixed order, not the map's
	gap := 0.0
	if !l.last.IsZero() {
		gap = st.Now.Sub(l.last).Seconds()
	}
	for _, id := range gone {
		s := l.seen[id]
		if s.running {
			l.model.learn(s.keys, s.service+gap/2)
		}
		delete(l.seen, id)
	}
	l.last = st.Now
	for i := range st.Jobs {
		j := &st.Jobs[i]
		s := l.seen[j.ID]
		if s == nil {
			s = &sighting{keys: featureKeys(requested(j))}
			l.seen[j.ID] = s
		}
		s.running = j.Running != nil
		s.service = 0
		if s.running && len(j.Running.GPUs) > 0 {
			s.service = j.Attained / float64(len(j.Running.GPUs))
		}
	}
	// Jobs found running that Lucid did not start join the run list in
	// arrival order.
	for _, i := range fifo(st) {
		if s := l.seen[st.Jobs[i].ID]; s.running && s.order == 0 {
			l.started(s)
		}
	}
	return nil
}

// started appends a job to the run list. A job started by this epoch's
// plan counts as running from now, so that one that ends before the next
// epoch still teaches the model.
func (l *Lucid) started(s *sighting) {
	l.runSeq++
	s.order = l.runSeq
	s.running = true
}
