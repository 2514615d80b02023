// Command stability runs the scenarios a scheduler that a host calls every
// few seconds must get right, as a host would: Epoch every 5 s with each
// Plan applied and its Carry kept, Now advancing, and nothing else
// changing unless the scenario says so (jobs arriving and finishing). It
// prints, per scenario, the displacements (preemptions, migrations,
// reconfigurations) in the first epoch and in all the later ones, when
// the job the scenario waits for started, who runs at the end, and how
// many actions Epoch returns when called again on the State it just
// produced, at the same Now (a fixed point returns none).
//
//	go run ./examples/stability
package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/pds"
	"github.com/elastico/elastico/rst"
)

// dt is a host's epoch interval.
const dt = 5 * time.Second

var day0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// scenario is a State, how many epochs to run it, and what changes
// between epochs (nil: nothing).
type scenario struct {
	name    string
	st      *elastico.State
	epochs  int
	between func(h *host)
	watch   string         // the job whose start is reported ("" none)
	served  map[string]int // epochs of service jobs had before epoch 0
}

// outcome is what a scenario showed.
type outcome struct {
	first, later int // displacements in the first epoch, and after it
	started      int // epoch the watched job started; -1 never
	runs         []string
	again        int // actions of Epoch on its own result, same Now
}

func main() {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(w, "scenario\tepochs\tdisplaced, epoch 0\tdisplaced, later\twatched job starts\truns at the end\tactions on its own result\t")
	for _, sc := range scenarios() {
		s, err := pds.New(pds.Config{})
		if err != nil {
			log.Fatal(err)
		}
		o, err := run(s, sc)
		if err != nil {
			log.Fatalf("%s: %v", sc.name, err)
		}
		start := "-"
		switch {
		case sc.watch == "":
		case o.started < 0:
			start = "never"
		default:
			start = fmt.Sprintf("epoch %d", o.started)
		}
		fmt.Fprintf(w, "%s\t%d\t%d\t%d\t%s\t%s\t%d\t\n", sc.name, sc.epochs, o.first, o.later, start, summarize(o.runs), o.again)
	}
	w.Flush()
}

// host applies plans as a cluster manager does.
type host struct {
	s       elastico.Scheduler
	st      *elastico.State
	epoch   int
	served  map[string]int // epochs each job has run
	next    int            // the next arriving job's number
	started map[string]int
}

func (h *host) step() (*elastico.Plan, error) {
	plan, err := h.s.Epoch(context.Background(), h.st)
	if err != nil {
		return nil, err
	}
	next := *h.st
	next.Jobs = slices.Clone(h.st.Jobs)
	for i, d := range plan.Decisions {
		if d.Assignment == nil {
			next.Jobs[i].Running = nil
			continue
		}
		next.Jobs[i].Running = &elastico.Assignment{ConfigID: d.Assignment.ConfigID, GPUs: slices.Clone(d.Assignment.GPUs)}
		if _, ok := h.started[d.JobID]; !ok {
			h.started[d.JobID] = h.epoch
		}
		h.served[d.JobID]++
	}
	next.Carry = plan.Carry
	next.Now = h.st.Now.Add(dt)
	h.st = &next
	h.epoch++
	return plan, nil
}

func run(s elastico.Scheduler, sc scenario) (outcome, error) {
	h := &host{s: s, st: sc.st, served: map[string]int{}, started: map[string]int{}}
	for id, n := range sc.served {
		h.served[id] = n
	}
	for i := range sc.st.Jobs {
		if sc.st.Jobs[i].Running != nil {
			h.started[sc.st.Jobs[i].ID] = -1 // ran before epoch 0
		}
	}
	var o outcome
	for e := range sc.epochs {
		if sc.between != nil && e > 0 {
			sc.between(h)
		}
		plan, err := h.step()
		if err != nil {
			return o, fmt.Errorf("epoch %d: %w", e, err)
		}
		n := 0
		for _, a := range plan.Actions {
			if a.Kind != elastico.Start {
				n++
			}
		}
		if e == 0 {
			o.first = n
		} else {
			o.later += n
		}
	}
	o.started = -1
	if e, ok := h.started[sc.watch]; ok {
		o.started = e
	}
	for i := range h.st.Jobs {
		if h.st.Jobs[i].Running != nil {
			o.runs = append(o.runs, h.st.Jobs[i].ID)
		}
	}
	// Epoch again on the State the last one produced, at its Now.
	h.st.Now = h.st.Now.Add(-dt)
	plan, err := h.step()
	if err != nil {
		return o, err
	}
	o.again = len(plan.Actions)
	return o, nil
}

// summarize lists the jobs that run, or counts them when they are many.
func summarize(ids []string) string {
	slices.Sort(ids)
	if len(ids) > 4 {
		return fmt.Sprintf("%d jobs", len(ids))
	}
	if len(ids) == 0 {
		return "none"
	}
	return strings.Join(ids, " ")
}

// node is n shared GPUs of mem GiB, with CPU and RAM to spare.
func node(id string, n int, mem float64) elastico.Node {
	nd := elastico.Node{ID: id, CPU: 256, RAM: 2048}
	for g := range n {
		nd.GPUs = append(nd.GPUs, elastico.GPU{ID: fmt.Sprintf("%s-g%d", id, g), Model: "V100", Memory: mem, Shared: true})
	}
	return nd
}

// plain is a training job of one configuration: gpus GPUs at SM sm and
// mem GiB each, throughput tput.
func plain(id string, gpus int, sm, mem, tput float64, arrival time.Time) elastico.Job {
	return elastico.Job{ID: id, Class: elastico.Training, Arrival: arrival, Profiles: []elastico.Profile{{
		Family: "plain", Class: elastico.Training,
		Config:     elastico.Configuration{ID: "c", BatchSize: 64 * gpus, GPUs: gpus},
		Demand:     elastico.Demand{GPUs: gpus, SM: sm, GPUMemory: mem, CPU: 1, RAM: 4},
		Throughput: tput, Efficiency: 1,
	}}}
}

func equal(n, gpus int, sm, mem, tput float64) []elastico.Job {
	var jobs []elastico.Job
	for i := range n {
		jobs = append(jobs, plain(fmt.Sprintf("j%02d", i), gpus, sm, mem, tput, day0.Add(time.Duration(i)*time.Second)))
	}
	return jobs
}

func state(jobs []elastico.Job, nodes ...elastico.Node) *elastico.State {
	return &elastico.State{Now: day0.Add(time.Minute), Cluster: elastico.Cluster{Nodes: nodes}, Jobs: jobs}
}

func scenarios() []scenario {
	var gavel []elastico.Job
	for i, m := range rst.GavelModels() {
		if i == 10 {
			break
		}
		fam, err := rst.GavelFamily("V100", m)
		if err != nil {
			log.Fatal(err)
		}
		gavel = append(gavel, elastico.Job{ID: fmt.Sprintf("g%02d-%s", i, m), Class: elastico.Training, Profiles: fam, Arrival: day0.Add(time.Duration(i) * time.Second),
			ReferenceBatch: fam[0].Config.BatchSize}) // tuned at the smallest batch, on one GPU
	}
	serving := equal(4, 1, 0.5, 12, 100)
	for i := range 4 {
		j := elastico.Job{ID: fmt.Sprintf("serve%d", i), Class: elastico.Inference, Floor: 150, Arrival: day0.Add(time.Duration(10+i) * time.Second)}
		for k, kv := range []float64{0.2, 0.4, 0.6} {
			j.Profiles = append(j.Profiles, elastico.Profile{
				Family: "llm", Class: elastico.Inference,
				Config:     elastico.Configuration{ID: fmt.Sprintf("kv%d", k), GPUs: 1, KVCacheFrac: kv, MaxSeqs: 64 << k},
				Demand:     elastico.Demand{GPUs: 1, SM: 0.3 + 0.1*float64(k), GPUMemory: 4 + 32*kv, CPU: 2, RAM: 8},
				Throughput: 200 + 100*float64(k),
			})
		}
		serving = append(serving, j)
	}
	bigGang := plain("gang", 8, 1, 10, 800, day0)
	bigGang.Running = &elastico.Assignment{ConfigID: "c"}
	for g := range 8 {
		bigGang.Running.GPUs = append(bigGang.Running.GPUs, fmt.Sprintf("n0-g%d", g))
	}
	// One equal job arrives and the oldest running one finishes, every
	// epoch.
	churn := func(h *host) {
		for i := range h.st.Jobs {
			if h.st.Jobs[i].Running != nil {
				h.st.Jobs = slices.Delete(h.st.Jobs, i, i+1)
				break
			}
		}
		h.st.Jobs = append(h.st.Jobs, plain(fmt.Sprintf("j%03d", 100+h.next), 1, 1, 10, 100, h.st.Now))
		h.next++
	}
	// 1-GPU jobs needing 8 epochs of service arrive every 2 epochs.
	stream := func(h *host) {
		h.st.Jobs = slices.DeleteFunc(h.st.Jobs, func(j elastico.Job) bool { return j.ID != "gang" && h.served[j.ID] >= 8 })
		if h.epoch%2 == 0 {
			h.st.Jobs = append(h.st.Jobs, plain(fmt.Sprintf("s%03d", 100+h.next), 1, 1, 10, 100, h.st.Now))
			h.next++
		}
	}
	starved := func(modify func(*elastico.Job)) *elastico.State {
		var jobs []elastico.Job
		for i := range 8 {
			jobs = append(jobs, plain(fmt.Sprintf("s%03d", i), 1, 1, 10, 100, day0.Add(time.Duration(i)*time.Second)))
		}
		g := plain("gang", 8, 1, 10, 800, day0.Add(time.Minute))
		modify(&g)
		return state(append(jobs, g), node("n0", 8, 16))
	}
	lighter := func(modify func(*elastico.Job)) *elastico.State {
		jobs := equal(2, 1, 1, 10, 100)
		for i := range jobs {
			jobs[i].Running = &elastico.Assignment{ConfigID: "c", GPUs: []string{fmt.Sprintf("n0-g%d", i)}}
		}
		low := plain("low", 1, 1, 10, 100, day0.Add(time.Minute))
		modify(&low)
		return state(append(jobs, low), node("n0", 2, 16))
	}
	// The first 1-GPU jobs have had 0 to 7 epochs of service: one leaves
	// every epoch, a GPU frees up at a time, and a waiting 1-GPU job can
	// always take it.
	staggered := map[string]int{}
	for i := range 8 {
		staggered[fmt.Sprintf("s%03d", i)] = i
	}
	return []scenario{
		{name: "3 equal 1-GPU jobs, 2 GPUs", st: state(equal(3, 1, 1, 10, 100), node("n0", 2, 16)), epochs: 10},
		{name: "12 equal jobs, 8 GPUs", st: state(equal(12, 1, 1, 10, 100), node("n0", 8, 16)), epochs: 10},
		{name: "3 4-GPU gangs, 8 GPUs", st: state(equal(3, 4, 1, 10, 400), node("n0", 8, 16)), epochs: 10},
		{name: "10 Gavel job types, 2×4 GPUs", st: state(gavel, node("n0", 4, 32), node("n1", 4, 32)), epochs: 20},
		{name: "4 inference (floors) + 4 training", st: state(serving, node("n0", 4, 40)), epochs: 20},
		{name: "1 arrival + 1 departure per epoch", st: state(equal(10, 1, 1, 10, 100), node("n0", 8, 16)), epochs: 200, between: churn},
		{name: "running 8-GPU gang, 1-GPU job waits", st: state([]elastico.Job{bigGang, plain("small", 1, 1, 10, 100, day0.Add(time.Second))}, node("n0", 8, 16)), epochs: 10, watch: "small"},
		{name: "8-GPU gang waits, 1-GPU stream", st: starved(func(*elastico.Job) {}), epochs: 200, between: stream, watch: "gang", served: staggered},
		{name: "  the gang at Weight 100", st: starved(func(j *elastico.Job) { j.Weight = 100 }), epochs: 200, between: stream, watch: "gang", served: staggered},
		{name: "  the gang at Priority 100", st: starved(func(j *elastico.Job) { j.Priority = 100 }), epochs: 200, between: stream, watch: "gang", served: staggered},
		{name: "waiting Weight 0.1 job, 2 running", st: lighter(func(j *elastico.Job) { j.Weight = 0.1 }), epochs: 10, watch: "low"},
		{name: "waiting Priority -100 job, 2 running", st: lighter(func(j *elastico.Job) { j.Priority = -100 }), epochs: 10, watch: "low"},
	}
}
