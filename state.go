package elastico

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/elastico/elastico/internal/chunk"
)

// State is the snapshot a host hands to Epoch: the time, the cluster, every
// job that runs or waits, and what the previous epoch left to carry over.
// The scheduler reads no clock and keeps no memory of its own: all it knows
// is here, so the same State always gives the same Plan.
type State struct {
	// Now is the epoch's time; it must be set. Waits and the time since a
	// job (re)started are measured to it, and a zero Now (a host that forgot
	// it) would make every one of them negative.
	Now     time.Time
	Cluster Cluster
	Jobs    []Job
	// Carry is what the previous Plan returned in Plan.Carry (warm-start
	// prices, learned penalties). Its zero value is a cold start.
	Carry Carry
}

// Carry is the scheduler's memory between epochs, held by the host.
type Carry struct {
	// Prices are the last shadow prices, per unit of normalized demand.
	Prices Vector
	// Penalties are the learned penalties of configurations that were
	// predicted to interfere: Penalties[jobID][configID]. Entries of jobs
	// or configurations the State does not have are ignored.
	Penalties map[string]map[string]float64
	// Since[jobID] is when the job's present state began, as the Plans
	// that made it saw it: for a running job, the epoch that started,
	// moved or reshaped it; for a waiting job, the epoch that preempted it.
	// A scheduler reads it to let a job that just (re)started run a while
	// before it is displaced again, and to count a preempted job's wait
	// from its preemption. A job with no entry is taken to have run (or,
	// waiting, waited since its Arrival) for as long as that matters.
	Since map[string]time.Time
	// CoRuns is what a scheduler learned from jobs that shared GPUs: how
	// much slower than predicted each pair of model families really ran
	// (pds keeps it with iac.Learner), so that the same State and Carry
	// give the same Plan. Bounded in size; sorted by Victim, Aggressor.
	CoRuns []CoRun
	// Restarts[jobID] counts the job's restarts as the Plans made them: a
	// resume after preemption, a move or a reshape, every (re)start after
	// the first. The entry appears, at 0, at the job's first start, so a
	// job with none has not run under these Plans. A scheduler that
	// discounts a reallocation by the time a job has already lost to
	// restarts reads it (the simulator's Pollux baseline); pds does not.
	Restarts map[string]int
	// Calm is since when the State's jobs have been the same ones, as the
	// Plans saw them: no job arrived and none left. pds holds still while
	// nothing changes (a job it started, moved or reshaped since then
	// stays as it is until a job arrives or leaves). The zero Calm matches
	// no State: the next epoch starts a calm.
	Calm Calm
}

// Calm names a set of jobs and the first epoch that saw it. Jobs and
// Digest identify the set (its size and a sum of a 64-bit hash of each
// job's ID, so that the jobs' order does not matter); a scheduler compares
// them with the State's to tell whether a job arrived or left.
type Calm struct {
	Since  time.Time
	Jobs   int
	Digest uint64
	// Last is the Now of the epoch that returned it: an epoch at the same
	// Now on the State that epoch produced has nothing new to act on.
	Last time.Time
}

// CoRun is one learned correction: jobs of model family Victim (a
// Profile.Family) beside jobs of family Aggressor ran exp(LogRatio) times
// as slow as predicted, over observations worth Weight.
type CoRun struct {
	Victim, Aggressor string
	LogRatio          float64
	Weight            float64
}

// Validate checks everything a scheduler relies on and returns the first
// problem as a *ValidationError naming the job (or node, or GPU) and the
// field. It returns nil for a State that every Scheduler must accept. A
// large State's jobs are checked on several goroutines; the problem
// reported is still the first in job order.
func (s *State) Validate() error {
	if s.Now.IsZero() {
		return invalid("state", "", "Now", "is the zero time: set it to the epoch's time")
	}
	gpus := make(map[string]*GPU, s.Cluster.NumGPUs())
	nodes := make(map[string]bool, len(s.Cluster.Nodes))
	var models gpuModels
	for i := range s.Cluster.Nodes {
		n := &s.Cluster.Nodes[i]
		path := func() string { return "Cluster.Nodes[" + strconv.Itoa(i) + "].ID" }
		if n.ID == "" {
			return invalid("node", "", path(), "is empty")
		}
		// One map operation per ID: a new key grows the map.
		seen := len(nodes)
		if nodes[n.ID] = true; len(nodes) == seen {
			return invalid("node", n.ID, path(), "is a duplicate")
		}
		if r := checkNumber(n.CPU); r != "" {
			return invalid("node", n.ID, "CPU", r)
		}
		if r := checkNumber(n.RAM); r != "" {
			return invalid("node", n.ID, "RAM", r)
		}
		for k := range n.GPUs {
			g := &n.GPUs[k]
			if g.ID == "" {
				return invalid("node", n.ID, "GPUs["+strconv.Itoa(k)+"].ID", "is empty")
			}
			seen := len(gpus)
			if gpus[g.ID] = g; len(gpus) == seen {
				return invalid("gpu", g.ID, "ID", "is a duplicate")
			}
			if r := checkNumber(g.Memory); r != "" {
				return invalid("gpu", g.ID, "Memory", r)
			}
			if g.Memory > MaxGPUMemory {
				return invalid("gpu", g.ID, "Memory", fmt.Sprintf("is %g GiB, above MaxGPUMemory (%d): MiB given as GiB?", g.Memory, MaxGPUMemory))
			}
			if g.SMs < 0 {
				return invalid("gpu", g.ID, "SMs", "is negative")
			}
			models.add(g.Model)
		}
	}
	if r, ok := s.Carry.Prices.check(); !ok {
		return invalid("state", "", "Carry.Prices["+r.String()+"]", "is NaN, infinite or negative")
	}
	for i, c := range s.Carry.CoRuns {
		path := "Carry.CoRuns[" + strconv.Itoa(i) + "]"
		switch {
		case math.IsNaN(c.LogRatio) || math.IsInf(c.LogRatio, 0):
			return invalid("state", "", path+".LogRatio", "is NaN or infinite")
		case checkNumber(c.Weight) != "":
			return invalid("state", "", path+".Weight", checkNumber(c.Weight))
		}
	}
	for i := 0; len(s.Carry.Restarts) > 0 && i < len(s.Jobs); i++ {
		if j := &s.Jobs[i]; s.Carry.Restarts[j.ID] < 0 {
			return invalid("job", j.ID, "Carry.Restarts", fmt.Sprintf("is %d, want ≥ 0", s.Carry.Restarts[j.ID]))
		}
	}
	return s.validateJobs(gpus, &models)
}

// gpuModels are the distinct GPU models of a cluster, in cluster order.
type gpuModels struct {
	names []string
	any   bool // some GPU names no model: every profile runs there
}

func (m *gpuModels) add(name string) {
	if name == "" {
		m.any = true
	} else if !slices.Contains(m.names, name) {
		m.names = append(m.names, name)
	}
}

// runsAnywhere reports whether some profile of the family may run on some
// GPU of the cluster (a cluster without GPUs is not this check's business).
func (m *gpuModels) runsAnywhere(family []Profile) bool {
	if m.any || len(m.names) == 0 {
		return true
	}
	for k := range family {
		if g := family[k].Hardware.GPUModel; g == "" || slices.Contains(m.names, g) {
			return true
		}
	}
	return false
}

// noModel says why a family runs on no GPU model of the cluster.
func (m *gpuModels) noModel(family []Profile) string {
	var have []string
	for k := range family {
		if g := family[k].Hardware.GPUModel; !slices.Contains(have, g) {
			have = append(have, g)
		}
	}
	return fmt.Sprintf("are for GPU models %s only, and the cluster's GPUs are %s: a profile runs only on GPUs of its Hardware.GPUModel (an empty GPUModel, on a profile or a GPU, runs on any)",
		strings.Join(have, ", "), strings.Join(m.names, ", "))
}

// validateJobs returns the first problem with a job, in job order: its ID
// (empty or a duplicate), then the rest. The IDs go through one map, in
// order; the rest of a job's checks read only the job and the GPU map, so
// large States check them in parallel chunks (20,000 jobs: 17 ms serial).
func (s *State) validateJobs(gpus map[string]*GPU, models *gpuModels) error {
	n := len(s.Jobs)
	var idErr error
	idAt := n // the checks below stop before the first bad ID
	jobs := make(map[string]bool, n)
	for i := range s.Jobs {
		j := &s.Jobs[i]
		if j.ID == "" {
			idErr, idAt = invalid("job", "", fmt.Sprintf("Jobs[%d].ID", i), "is empty"), i
			break
		}
		seen := len(jobs)
		if jobs[j.ID] = true; len(jobs) == seen {
			idErr, idAt = invalid("job", j.ID, "ID", "is a duplicate"), i
			break
		}
	}
	// Each range stops at its first problem; ranges are in job order, so
	// the first range with one holds the first.
	w := chunk.Count(idAt)
	var one [1]error
	errs := one[:]
	if w > 1 {
		errs = make([]error, w)
	}
	chunk.Do(idAt, w, func(c, lo, hi int) {
		for i := lo; i < hi; i++ {
			j := &s.Jobs[i]
			if err := j.validate(gpus, models, s.Carry.Penalties[j.ID]); err != nil {
				errs[c] = err
				return
			}
		}
	})
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return idErr
}

// validate checks the job, and its carried penalties (pen) in the order of
// its family: a scheduler reads no others, and the first bad one is the
// same every time (a map's order is not).
func (j *Job) validate(gpus map[string]*GPU, models *gpuModels, pen map[string]float64) error {
	if j.Class != Training && j.Class != Inference {
		return invalid("job", j.ID, "Class", fmt.Sprintf("is %d, want Training or Inference", int(j.Class)))
	}
	if len(j.Profiles) == 0 {
		return invalid("job", j.ID, "Profiles", "is empty: a job needs at least one configuration")
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"Floor", j.Floor}, {"Weight", j.Weight}, {"Remaining", j.Remaining}, {"Attained", j.Attained}} {
		if r := checkNumber(f.v); r != "" {
			return invalid("job", j.ID, f.name, r)
		}
	}
	if r := checkNumber(j.MaxSlowdown); r != "" {
		return invalid("job", j.ID, "MaxSlowdown", r)
	}
	if j.MaxSlowdown != 0 && j.MaxSlowdown < 1 {
		return invalid("job", j.ID, "MaxSlowdown", fmt.Sprintf("is %g, want a slowdown ≥ 1 (0 for none)", j.MaxSlowdown))
	}
	if o := j.Observed; o != (Observation{}) {
		switch {
		case j.Running == nil:
			return invalid("job", j.ID, "Observed", "is set on a job that does not run")
		case checkNumber(o.Rate) != "":
			return invalid("job", j.ID, "Observed.Rate", checkNumber(o.Rate))
		case o.Over < 0:
			return invalid("job", j.ID, "Observed.Over", fmt.Sprintf("is negative (%v)", o.Over))
		}
	}
	if j.ReferenceBatch < 0 {
		return invalid("job", j.ID, "ReferenceBatch", "is negative")
	}
	if j.RestartTime < 0 {
		return invalid("job", j.ID, "RestartTime", fmt.Sprintf("is negative (%v)", j.RestartTime))
	}
	best := 0.0
	// A small family's duplicate IDs are looked for in the same pass over
	// its profiles (at scale they are most of a State's memory), and
	// reported after the checks that come first.
	var ids [smallFamily]uint64
	dup := -1
	for k := range j.Profiles {
		p := &j.Profiles[k]
		path := func() string { return "Profiles[" + strconv.Itoa(k) + "]" }
		if err := p.validate("job", j.ID, path); err != nil {
			return err
		}
		if p.Class != j.Class {
			return invalid("job", j.ID, path()+".Class", fmt.Sprintf("is %v, but the job is %v", p.Class, j.Class))
		}
		best = max(best, p.Throughput)
		if len(j.Profiles) <= smallFamily && dup < 0 && seenID(j.Profiles, ids[:k], k) {
			dup = k
		}
	}
	if len(j.Profiles) > smallFamily {
		if k, ok := duplicateConfig(j.Profiles); ok {
			dup = k
		}
	}
	if j.ReferenceBatch == 0 && j.Class == Training && (j.Optimizer == SGD || j.Optimizer == Adam) {
		if a, b, ok := twoBatches(j.Profiles); ok {
			return invalid("job", j.ID, "ReferenceBatch", fmt.Sprintf(
				"is unset, but Optimizer %v scales the learning rate from it and the family has batch sizes %d and %d: set the batch the learning rate was tuned for", j.Optimizer, a, b))
		}
	}
	if k := dup; k >= 0 {
		return invalid("job", j.ID, "Profiles["+strconv.Itoa(k)+"].Config.ID", fmt.Sprintf("%q is a duplicate", j.Profiles[k].Config.ID))
	}
	if len(pen) > 0 && !allNumbers(pen) {
		// Only a penalty on one of the job's configurations counts (a
		// configuration it no longer has is forgotten); the first such
		// in the family's order is reported.
		for k := range j.Profiles {
			id := j.Profiles[k].Config.ID
			if v, ok := pen[id]; ok {
				if r := checkNumber(v); r != "" {
					return invalid("job", j.ID, "Carry.Penalties["+id+"]", r)
				}
			}
		}
	}
	if j.Floor > best {
		return invalid("job", j.ID, "Floor", fmt.Sprintf("is %g, above every configuration's throughput (best %g)", j.Floor, best))
	}
	if !models.runsAnywhere(j.Profiles) {
		return invalid("job", j.ID, "Profiles", models.noModel(j.Profiles))
	}
	if a := j.Running; a != nil {
		p, ok := j.Profile(a.ConfigID)
		if !ok {
			return invalid("job", j.ID, "Running.ConfigID", fmt.Sprintf("%q is not in the job's family", a.ConfigID))
		}
		if len(a.GPUs) != p.Demand.GPUs {
			return invalid("job", j.ID, "Running.GPUs", fmt.Sprintf("has %d GPUs, configuration %q needs %d", len(a.GPUs), a.ConfigID, p.Demand.GPUs))
		}
		for k, g := range a.GPUs {
			if gpus[g] == nil {
				return invalid("job", j.ID, fmt.Sprintf("Running.GPUs[%d]", k), fmt.Sprintf("%q is not a GPU of the cluster", g))
			}
			if slices.Contains(a.GPUs[:k], g) {
				return invalid("job", j.ID, fmt.Sprintf("Running.GPUs[%d]", k), fmt.Sprintf("%q is listed twice", g))
			}
			if m := gpus[g].Model; !p.RunsOn(m) {
				return invalid("job", j.ID, fmt.Sprintf("Running.GPUs[%d]", k), fmt.Sprintf("%q is a %s, and configuration %q was profiled for %s", g, m, a.ConfigID, p.Hardware.GPUModel))
			}
		}
	}
	return nil
}

// twoBatches returns the first two different positive batch sizes of the
// family, if it has two.
func twoBatches(family []Profile) (a, b int, ok bool) {
	for k := range family {
		switch c := family[k].Config.BatchSize; {
		case c <= 0 || c == a:
		case a == 0:
			a = c
		default:
			return a, c, true
		}
	}
	return 0, 0, false
}

// smallFamily is the largest family whose duplicate configuration IDs are
// found by seenID rather than duplicateConfig's map.
const smallFamily = 32

// seenID records a hash of profile k's configuration ID in hash[k] (hash
// holds the first k profiles' hashes, within its capacity) and reports
// whether an earlier profile has the same ID. Families are small (K̄ ≈ 8),
// so a quadratic scan over a hash of each ID beats building a map for
// every job on every epoch (and comparing the strings themselves: IDs of
// one family tend to have one length).
func seenID(family []Profile, hash []uint64, k int) bool {
	id := family[k].Config.ID
	h := uint64(14695981039346656037) // FNV-1a
	for i := 0; i < len(id); i++ {
		h = (h ^ uint64(id[i])) * 1099511628211
	}
	hash = append(hash, h)
	for i := range k {
		if hash[i] == h && family[i].Config.ID == id {
			return true
		}
	}
	return false
}

// allNumbers reports whether every value of m is a finite number ≥ 0.
func allNumbers(m map[string]float64) bool {
	for _, v := range m {
		if checkNumber(v) != "" {
			return false
		}
	}
	return true
}

// duplicateConfig returns the index of the first profile whose configuration
// ID an earlier profile already has (seenID's scan for small families, a map
// for large ones).
func duplicateConfig(family []Profile) (int, bool) {
	if len(family) > smallFamily {
		seen := make(map[string]bool, len(family))
		for k := range family {
			if seen[family[k].Config.ID] {
				return k, true
			}
			seen[family[k].Config.ID] = true
		}
		return 0, false
	}
	var hash [smallFamily]uint64
	for k := range family {
		if seenID(family, hash[:k], k) {
			return k, true
		}
	}
	return 0, false
}
