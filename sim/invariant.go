package sim

import (
	"errors"
	"fmt"
)

// Invariant names one of the properties the simulator checks at every event.
type Invariant string

const (
	// Capacity: no GPU holds more memory or SM share than it has, no GPU
	// that is not shared holds two jobs, no node more CPU or RAM, and no
	// GPU runs a configuration profiled for another GPU model.
	Capacity Invariant = "capacity"
	// Conservation: a job's progress is the integral of its ground-truth
	// rate while it runs, never decreases, never exceeds its work, and
	// equals its work when it finishes; the cluster's total progress is the
	// sum of the jobs'.
	Conservation Invariant = "conservation of work"
	// FinishOnce: a job finishes exactly once, after it arrived, and never
	// runs or reappears afterwards.
	FinishOnce Invariant = "each job finishes once"
	// PlanShape: a plan has one decision per job of the state, in order,
	// naming configurations of the job's family and GPUs of the cluster,
	// and actions that match its decisions.
	PlanShape Invariant = "plan shape"
	// Liveness: the run makes progress (a policy that leaves jobs waiting
	// on an idle cluster forever stalls it).
	Liveness Invariant = "liveness"
	// Stability: no plan undoes an earlier one while nothing changed (no
	// [Flap]); Config.AllowFlaps only counts them.
	Stability Invariant = "no flapping"
)

// InvariantError reports a broken invariant: the run stops at the first.
type InvariantError struct {
	Invariant Invariant
	Time      float64 // simulated seconds
	Job       string  // the job concerned, if one
	Detail    string
}

func (e *InvariantError) Error() string {
	if e.Job != "" {
		return fmt.Sprintf("sim: invariant %q broken at t=%.3fs, job %q: %s", e.Invariant, e.Time, e.Job, e.Detail)
	}
	return fmt.Sprintf("sim: invariant %q broken at t=%.3fs: %s", e.Invariant, e.Time, e.Detail)
}

// ErrInvariant is wrapped by every InvariantError.
var ErrInvariant = errors.New("sim: invariant broken")

func (e *InvariantError) Unwrap() error { return ErrInvariant }

func (s *simulation) broken(inv Invariant, job, format string, args ...any) error {
	return &InvariantError{Invariant: inv, Time: s.now, Job: job, Detail: fmt.Sprintf(format, args...)}
}

// checkInvariants verifies capacity and conservation of work over the
// current state. It runs after every event.
func (s *simulation) checkInvariants() error {
	if err := s.checkCapacity(); err != nil {
		return err
	}
	total := 0.0
	for _, j := range s.active {
		if j.done {
			return s.broken(FinishOnce, j.ID, "is finished but still active")
		}
		if j.progress < -workTol(j.Work) || j.progress > j.Work+workTol(j.Work) {
			return s.broken(Conservation, j.ID, "progress %g outside [0, work %g]", j.progress, j.Work)
		}
		if j.progress < j.lastProgress {
			return s.broken(Conservation, j.ID, "progress went down from %g to %g", j.lastProgress, j.progress)
		}
		if j.cfg < 0 && j.rate != 0 {
			return s.broken(Conservation, j.ID, "waits but has a rate of %g", j.rate)
		}
		if d := j.progress - j.integral; d > workTol(j.Work) || -d > workTol(j.Work) {
			return s.broken(Conservation, j.ID, "progress %g but its rate integrates to %g", j.progress, j.integral)
		}
		j.lastProgress = j.progress
		total += j.progress
	}
	total += s.finishedWork
	if d := total - s.credited; d > 1e-6*max(1, s.credited) || -d > 1e-6*max(1, s.credited) {
		return s.broken(Conservation, "", "jobs hold %g units of progress, the rates credited %g", total, s.credited)
	}
	return nil
}

// workTol is the absolute slack on a job's progress: float rounding over
// many intervals, never a measurable amount of work.
func workTol(work float64) float64 { return 1e-9 * max(1, work) }

// checkCapacity recomputes every GPU's and node's load from the running
// jobs and compares it with the cluster.
func (s *simulation) checkCapacity() error {
	for g := range s.gpus {
		s.gpus[g].sm, s.gpus[g].mem, s.gpus[g].n = 0, 0, 0
	}
	for n := range s.nodes {
		s.nodes[n].cpu, s.nodes[n].ram = 0, 0
	}
	for _, j := range s.active {
		if j.cfg < 0 {
			continue
		}
		c := &j.Configs[j.cfg]
		p := &j.Profiles[j.cfg]
		for _, g := range j.gpus {
			if m := s.gpuOf(g).Model; !p.RunsOn(m) {
				return s.broken(Capacity, j.ID, "configuration %s, profiled for %s, runs on GPU %s, a %s", p.Config.ID, p.Hardware.GPUModel, s.gpuIDs[g], m)
			}
			gs := &s.gpus[g]
			gs.sm += p.Demand.SM
			gs.mem += c.Memory
			gs.n++
			s.nodes[gs.node].cpu += c.CPU
			s.nodes[gs.node].ram += c.RAM
		}
	}
	for g := range s.gpus {
		gs := &s.gpus[g]
		gpu := s.gpuOf(g)
		switch {
		case gs.mem > gpu.Memory*(1+1e-9):
			return s.broken(Capacity, "", "GPU %s holds %.3f GiB of %.3f (%s)", gpu.ID, gs.mem, gpu.Memory, s.residents(g))
		case gs.sm > s.cfg.SMOversubscription+1e-9:
			return s.broken(Capacity, "", "GPU %s holds an SM share of %.3f, limit %.3f (%s)", gpu.ID, gs.sm, s.cfg.SMOversubscription, s.residents(g))
		case gs.n > 1 && !gpu.Shared:
			return s.broken(Capacity, "", "GPU %s is not shared but holds %d jobs (%s)", gpu.ID, gs.n, s.residents(g))
		}
	}
	for n := range s.nodes {
		node := &s.cfg.Cluster.Nodes[n]
		if s.nodes[n].cpu > node.CPU*(1+1e-9) || s.nodes[n].ram > node.RAM*(1+1e-9) {
			return s.broken(Capacity, "", "node %s holds %.1f cores of %.1f and %.1f GiB of RAM of %.1f", node.ID, s.nodes[n].cpu, node.CPU, s.nodes[n].ram, node.RAM)
		}
	}
	return nil
}

func (s *simulation) residents(g int) string {
	out := ""
	for _, j := range s.active {
		for _, x := range j.gpus {
			if x == g {
				if out != "" {
					out += ", "
				}
				out += j.ID + "@" + j.Configs[j.cfg].ID
			}
		}
	}
	return out
}
