package pds

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/elastico/elastico"
)

// host is a test harness that does what a host does, epoch after epoch:
// it calls Epoch, checks the plan's guarantees, applies it (each decision's
// assignment becomes the job's Running one, the Carry is kept), and moves
// Now on by dt. Between epochs a scenario may add and remove jobs. It
// records, per epoch, the jobs displaced (preempted, migrated or
// reconfigured) and started.
type host struct {
	t    *testing.T
	s    *Scheduler
	st   *elastico.State
	dt   time.Duration
	pred elastico.Predictor // for checkPlan; nil: no interference check

	epochs    int
	displaced [][]string // per epoch, "kind job" of every displacement
	started   map[string]int
	plan      *elastico.Plan
}

func newHost(t *testing.T, cfg Config, st *elastico.State) *host {
	t.Helper()
	if cfg.Clock == nil {
		cfg.Clock = fixedClock()
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &host{t: t, s: s, st: st, dt: 5 * time.Second, pred: cfg.Predictor, started: map[string]int{}}
}

// step runs one epoch and applies its plan.
func (h *host) step() *elastico.Plan {
	h.t.Helper()
	plan, err := h.s.Epoch(context.Background(), h.st)
	if err != nil {
		h.t.Fatalf("epoch %d: %v", h.epochs, err)
	}
	if h.pred != nil {
		checkPlan(h.t, h.st, plan, h.pred, h.s.cfg.Sharing.Keep())
	}
	var moved []string
	for _, a := range plan.Actions {
		switch a.Kind {
		case elastico.Start:
			if _, ok := h.started[a.JobID]; !ok {
				h.started[a.JobID] = h.epochs
			}
		default:
			moved = append(moved, a.Kind.String()+" "+a.JobID)
		}
	}
	h.displaced = append(h.displaced, moved)
	h.plan = plan
	h.st = apply(h.st, plan)
	h.st.Now = h.st.Now.Add(h.dt)
	h.epochs++
	return plan
}

// run runs n epochs, calling between (if not nil) before each.
func (h *host) run(n int, between func(epoch int)) {
	h.t.Helper()
	for range n {
		if between != nil {
			between(h.epochs)
		}
		h.step()
	}
}

// displacements counts the displacements of epochs [from, to).
func (h *host) displacements(from, to int) int {
	n := 0
	for _, d := range h.displaced[from:min(to, len(h.displaced))] {
		n += len(d)
	}
	return n
}

// running lists the IDs of the jobs that run now, sorted.
func (h *host) running() []string {
	var ids []string
	for i := range h.st.Jobs {
		if h.st.Jobs[i].Running != nil {
			ids = append(ids, h.st.Jobs[i].ID)
		}
	}
	slices.Sort(ids)
	return ids
}

// remove drops the job with the given ID from the State (it finished).
func (h *host) remove(id string) {
	h.st.Jobs = slices.DeleteFunc(h.st.Jobs, func(j elastico.Job) bool { return j.ID == id })
}

// history is the displacements of every epoch, for a failure message.
func (h *host) history() string {
	var b strings.Builder
	for e, d := range h.displaced {
		if len(d) > 0 {
			fmt.Fprintf(&b, "\n  epoch %d: %s", e, strings.Join(d, ", "))
		}
	}
	return b.String()
}

// node returns a node of n GPUs of mem GiB, shared, with plenty of CPU and
// RAM.
func node(id string, n int, mem float64) elastico.Node {
	nd := elastico.Node{ID: id, CPU: 256, RAM: 2048}
	for g := range n {
		nd.GPUs = append(nd.GPUs, elastico.GPU{ID: fmt.Sprintf("%s-g%d", id, g), Model: "V100", Memory: mem, Shared: true})
	}
	return nd
}

// plainJob is a training job of one configuration: gpus GPUs at SM sm and
// mem GiB each, throughput tput.
func plainJob(id string, gpus int, sm, mem, tput float64, arrival time.Time) elastico.Job {
	return elastico.Job{
		ID: id, Class: elastico.Training, Arrival: arrival,
		Profiles: []elastico.Profile{{
			Family: "plain", Class: elastico.Training,
			Config:     elastico.Configuration{ID: "c", BatchSize: 64 * gpus, GPUs: gpus},
			Demand:     elastico.Demand{GPUs: gpus, SM: sm, GPUMemory: mem, CPU: 1, RAM: 4},
			Throughput: tput, Efficiency: 1,
		}},
	}
}

var day0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
