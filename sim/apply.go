package sim

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/sets"
)

// buildState fills the State the policy sees.
func (s *simulation) buildState() *elastico.State {
	st := &s.stateBuf
	st.Now = s.cfg.Start.Add(time.Duration(s.now * float64(time.Second)))
	st.Cluster = s.cfg.Cluster
	st.Carry = s.carry
	st.Jobs = st.Jobs[:0]
	for _, j := range s.active {
		st.Jobs = append(st.Jobs, elastico.Job{
			ID:        j.ID,
			Class:     j.Class,
			Profiles:  j.Profiles,
			Floor:     j.Floor,
			Weight:    j.Weight,
			Arrival:   s.cfg.Start.Add(time.Duration(j.Arrival * float64(time.Second))),
			Remaining: math.Max(0, j.Work-j.progress),
			Attained:  j.attained,
			Running:   j.assign,
			Spread:    true,
			Optimizer: j.Family.Optimizer,
			// M0: the batch whose efficiency is 1 is the one the
			// learning rate was tuned for.
			ReferenceBatch: j.Family.RefBatch,
			// What a host knows of its jobs' checkpoint and restart.
			RestartTime: s.cfg.Costs.Resume,
			Observed:    s.observe(j),
		})
	}
	return st
}

// observe is what a host measures of job j: its ground-truth throughput
// under its configuration and neighbours, with ObservationNoise of
// relative error, drawn from the job and the time alone (the same run
// gives the same observations whatever the policy asks), and how long it
// has run at that rate. Zero while it waits or restarts.
func (s *simulation) observe(j *jobState) elastico.Observation {
	if s.cfg.HideObservations || j.cfg < 0 || j.rate <= 0 || s.now <= j.rateSince {
		return elastico.Observation{}
	}
	c := &j.Configs[j.cfg]
	tput := c.Throughput
	if j.spread {
		tput = c.SpreadThroughput
	}
	h := fnv.New64a()
	h.Write([]byte(j.ID))
	r := rand.New(rand.NewPCG(h.Sum64(), math.Float64bits(s.now)))
	noise := math.Max(-0.5, math.Min(0.5, r.NormFloat64()*s.cfg.ObservationNoise))
	return elastico.Observation{
		Rate: tput * j.speed * (1 + noise),
		Over: time.Duration((s.now - j.rateSince) * float64(time.Second)),
	}
}

// epoch calls the policy and applies its plan; moved reports whether the
// plan changed any job's assignment.
func (s *simulation) epoch(ctx context.Context) (moved bool, err error) {
	s.nextEpoch = math.Inf(1)
	s.lastEpoch = s.now
	s.dirty = false
	st := s.buildState()
	if len(st.Jobs) == 0 {
		return false, nil
	}
	ectx := ctx
	if s.cfg.EpochTimeout > 0 {
		var cancel context.CancelFunc
		ectx, cancel = context.WithTimeout(ctx, s.cfg.EpochTimeout)
		defer cancel()
	}
	t0 := time.Now()
	plan, err := s.cfg.Policy.Epoch(ectx, st)
	s.res.EpochLatency = append(s.res.EpochLatency, time.Since(t0))
	s.res.Epochs++
	if err != nil {
		return false, fmt.Errorf("sim: %s: epoch at t=%.0fs with %d jobs: %w", s.cfg.Name, s.now, len(st.Jobs), err)
	}
	if plan == nil {
		return false, s.broken(PlanShape, "", "the policy returned a nil plan")
	}
	if err := s.apply(plan, st); err != nil {
		return false, err
	}
	s.carry = plan.Carry
	for _, d := range plan.Decisions {
		if d.Assignment == nil {
			s.lastWait = d.JobID + ": " + d.Status.String()
			break
		}
	}
	// Liveness: waiting jobs, nothing placed, nothing more to arrive.
	if s.next == len(s.jobs) && len(s.active) > 0 {
		placed := false
		for _, j := range s.active {
			if j.cfg >= 0 {
				placed = true
				break
			}
		}
		if placed {
			s.stalls = 0
		} else if s.stalls++; s.stalls >= 3 {
			return false, s.broken(Liveness, s.active[0].ID, "%d jobs wait on an idle cluster and the policy starts none (status: %s)", len(s.active), plan.Decisions[0].Status)
		}
	}
	return len(plan.Actions) > 0, nil
}

type change struct {
	j    *jobState
	cfg  int
	gpus []int
	kind elastico.ActionKind
	none bool
}

// apply checks a plan against the state it answers and commits it.
func (s *simulation) apply(plan *elastico.Plan, st *elastico.State) error {
	changes, err := s.readDecisions(plan, st)
	if err != nil {
		return err
	}
	// The actions must be exactly the changes, kind for kind.
	moved := 0
	for i := range changes {
		if !changes[i].none {
			moved++
		}
	}
	if moved == 0 && len(plan.Actions) == 0 {
		// Nothing changes (most epochs, every ΔT).
		return nil
	}
	if err := s.checkActions(plan, changes, moved); err != nil {
		return err
	}
	if err := s.watchFlaps(changes); err != nil {
		return err
	}
	s.enact(changes)
	return s.checkCapacity()
}

// readDecisions checks the plan's decisions against the jobs and returns
// what each changes (s.changes, reused).
func (s *simulation) readDecisions(plan *elastico.Plan, st *elastico.State) ([]change, error) {
	if len(plan.Decisions) != len(st.Jobs) {
		return nil, s.broken(PlanShape, "", "%d decisions for %d jobs", len(plan.Decisions), len(st.Jobs))
	}
	changes := slices.Grow(s.changes[:0], len(s.active))[:len(s.active)]
	s.changes = changes
	for i, d := range plan.Decisions {
		j := s.active[i]
		if d.JobID != j.ID {
			return nil, s.broken(PlanShape, j.ID, "decision %d is for %q", i, d.JobID)
		}
		ch := change{j: j, cfg: -1}
		if a := d.Assignment; a != nil && j.assign != nil && a.ConfigID == j.assign.ConfigID && slices.Equal(a.GPUs, j.assign.GPUs) {
			// Unchanged, GPU for GPU: nothing to check again.
			ch.cfg, ch.gpus, ch.none = j.cfg, j.gpus, true
			changes[i] = ch
			continue
		}
		if a := d.Assignment; a != nil {
			ch.cfg = slices.IndexFunc(j.Configs, func(c Variant) bool { return c.ID == a.ConfigID })
			if ch.cfg < 0 {
				return nil, s.broken(PlanShape, j.ID, "configuration %q is not in the job's family", a.ConfigID)
			}
			if len(a.GPUs) != j.Configs[ch.cfg].GPUs {
				return nil, s.broken(PlanShape, j.ID, "configuration %q needs %d GPUs, the plan gives %d", a.ConfigID, j.Configs[ch.cfg].GPUs, len(a.GPUs))
			}
			ch.gpus = make([]int, len(a.GPUs))
			for k, id := range a.GPUs {
				g, ok := s.gpuIndex[id]
				if !ok {
					return nil, s.broken(PlanShape, j.ID, "GPU %q is not in the cluster", id)
				}
				ch.gpus[k] = g
			}
			sorted := slices.Clone(ch.gpus)
			slices.Sort(sorted)
			if len(slices.Compact(sorted)) != len(ch.gpus) {
				return nil, s.broken(PlanShape, j.ID, "GPUs %v repeat", a.GPUs)
			}
		}
		switch {
		case j.cfg < 0 && ch.cfg < 0:
			ch.none = true
		case j.cfg < 0:
			ch.kind = elastico.Start
		case ch.cfg < 0:
			ch.kind = elastico.Preempt
		case ch.cfg == j.cfg && sets.Equal(j.gpus, ch.gpus):
			ch.none = true
		case sets.Subset(j.gpus, ch.gpus) || sets.Subset(ch.gpus, j.gpus):
			// No replica goes to a GPU it was not on: a restart in place,
			// growing or shrinking.
			ch.kind = elastico.Reconfigure
		default:
			ch.kind = elastico.Migrate
		}
		changes[i] = ch
		j.waitCode = waitBeforeEpoch
		if d.Assignment == nil {
			j.waitCode = d.Status.Code
		}
	}
	return changes, nil
}

// checkActions checks that plan's actions are exactly the changes its
// decisions make (moved of them), kind for kind.
func (s *simulation) checkActions(plan *elastico.Plan, changes []change, moved int) error {
	want := make(map[string]elastico.ActionKind, moved)
	for _, ch := range changes {
		if !ch.none {
			want[ch.j.ID] = ch.kind
		}
	}
	seen := make(map[string]bool, len(plan.Actions))
	for _, a := range plan.Actions {
		k, ok := want[a.JobID]
		switch {
		case !ok:
			return s.broken(PlanShape, a.JobID, "action %s, but the decisions change nothing for it", a.Kind)
		case seen[a.JobID]:
			return s.broken(PlanShape, a.JobID, "two actions")
		case k != a.Kind:
			return s.broken(PlanShape, a.JobID, "action %s, the decisions make it a %s (%v)", a.Kind, k, a)
		}
		seen[a.JobID] = true
	}
	if len(seen) != len(want) {
		for id, k := range want {
			if !seen[id] {
				return s.broken(PlanShape, id, "the decisions %s it but the plan has no action", k)
			}
		}
	}
	return nil
}

// enact applies the changes: restart costs, counts, and each job's new
// configuration and GPUs.
func (s *simulation) enact(changes []change) {
	for i := range changes {
		ch := &changes[i]
		if ch.none {
			continue
		}
		j := ch.j
		cost := 0.0
		switch ch.kind {
		case elastico.Start:
			if j.started {
				cost = s.cfg.Costs.Resume.Seconds()
				j.restarts++
			} else {
				j.started, j.firstStart = true, s.now
			}
		case elastico.Preempt:
			j.preemptions++
		case elastico.Reconfigure:
			cost = s.cfg.Costs.Reconfigure.Seconds()
			j.reconfigs++
		case elastico.Migrate:
			cost = s.cfg.Costs.Migrate.Seconds()
			j.migrations++
		}
		j.cfg, j.gpus = ch.cfg, ch.gpus
		if ch.cfg < 0 {
			j.gpus, j.assign, j.busyUntil = nil, nil, 0
			continue
		}
		j.busyUntil = s.now + cost
		j.spread = false
		node := s.gpus[j.gpus[0]].node
		ids := make([]string, len(j.gpus))
		for k, g := range j.gpus {
			ids[k] = s.gpuIDs[g]
			if s.gpus[g].node != node {
				j.spread = true
			}
		}
		j.assign = &elastico.Assignment{ConfigID: j.Configs[ch.cfg].ID, GPUs: ids}
	}
}
