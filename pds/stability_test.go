package pds

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/rst"
)

// The scenarios of "decisions that hold still": a host calls Epoch every
// 5 s, applies each Plan and keeps its Carry. Each was seen to thrash,
// evict, starve or ignore weights before the objective counted work and
// displacements had to pay for themselves.

func identical(n, gpus int, sm, mem, tput float64) []elastico.Job {
	var jobs []elastico.Job
	for i := range n {
		jobs = append(jobs, plainJob(fmt.Sprintf("j%02d", i), gpus, sm, mem, tput, day0.Add(time.Duration(i)*time.Second)))
	}
	return jobs
}

func cluster(nodes ...elastico.Node) elastico.Cluster { return elastico.Cluster{Nodes: nodes} }

// TestStillWithNothingChanging: with nothing changing, no job is displaced
// after the first epoch, and the jobs that run are the ones that ran.
func TestStillWithNothingChanging(t *testing.T) {
	gavel := func() []elastico.Job {
		var jobs []elastico.Job
		models := rst.GavelModels()
		for i := range 10 {
			m := models[i%len(models)]
			fam, err := rst.GavelFamily("V100", m)
			if err != nil {
				t.Fatal(err)
			}
			jobs = append(jobs, elastico.Job{ID: fmt.Sprintf("g%02d-%s", i, m), Class: elastico.Training, Profiles: fam, Arrival: day0.Add(time.Duration(i) * time.Second),
				ReferenceBatch: fam[0].Config.BatchSize}) // tuned at the smallest batch, on one GPU
		}
		return jobs
	}
	inference := func() []elastico.Job {
		jobs := identical(4, 1, 0.5, 12, 100)
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
			jobs = append(jobs, j)
		}
		return jobs
	}
	for _, tc := range []struct {
		name    string
		cluster elastico.Cluster
		jobs    []elastico.Job
		epochs  int
	}{
		{"three equal jobs on two GPUs", cluster(node("n0", 2, 16)), identical(3, 1, 1, 10, 100), 10},
		{"twelve equal jobs on eight GPUs", cluster(node("n0", 8, 16)), identical(12, 1, 1, 10, 100), 10},
		{"three 4-GPU gangs on eight GPUs", cluster(node("n0", 8, 16)), identical(3, 4, 1, 10, 400), 10},
		{"ten Gavel job types on two 4-GPU nodes", cluster(node("n0", 4, 32), node("n1", 4, 32)), gavel(), 20},
		{"inference with floors beside training", cluster(node("n0", 4, 40)), inference(), 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHost(t, Config{}, &elastico.State{Now: day0.Add(time.Minute), Cluster: tc.cluster, Jobs: tc.jobs})
			h.step()
			first := h.running()
			h.run(tc.epochs-1, nil)
			if n := h.displacements(1, h.epochs); n > 0 {
				t.Errorf("%d displacements after the first epoch, want 0:%s", n, h.history())
			}
			if got := h.running(); fmt.Sprint(got) != fmt.Sprint(first) {
				t.Errorf("runs %v after %d epochs, ran %v after the first", got, h.epochs, first)
			}
			// A fixed point: Epoch on the State it produced, same Now.
			h.st.Now = h.st.Now.Add(-h.dt)
			if p := h.step(); len(p.Actions) > 0 {
				t.Errorf("Epoch on its own result gives actions %v", p.Actions)
			}
		})
	}
}

// TestChurnDoesNotDisplace: one equal job arrives and one leaves every
// epoch on eight GPUs; the newcomer waits for a GPU to free up instead of
// taking a running job's.
func TestChurnDoesNotDisplace(t *testing.T) {
	st := &elastico.State{Now: day0.Add(time.Minute), Cluster: cluster(node("n0", 8, 16)), Jobs: identical(10, 1, 1, 10, 100)}
	h := newHost(t, Config{}, st)
	next := 10
	h.run(200, func(e int) {
		if e == 0 {
			return
		}
		// The oldest running job finishes; a new one arrives.
		for i := range h.st.Jobs {
			if h.st.Jobs[i].Running != nil {
				h.remove(h.st.Jobs[i].ID)
				break
			}
		}
		h.st.Jobs = append(h.st.Jobs, plainJob(fmt.Sprintf("j%03d", next), 1, 1, 10, 100, h.st.Now))
		next++
	})
	if n := h.displacements(1, h.epochs); n > 0 {
		t.Errorf("%d displacements in %d epochs, want 0:%s", n, h.epochs, h.history())
	}
}

// TestBigJobNotEvictedForSmall: a running 8-GPU gang is not preempted for
// one waiting 1-GPU job.
func TestBigJobNotEvictedForSmall(t *testing.T) {
	gang := plainJob("gang", 8, 1, 10, 800, day0)
	gang.Running = &elastico.Assignment{ConfigID: "c"}
	for g := range 8 {
		gang.Running.GPUs = append(gang.Running.GPUs, fmt.Sprintf("n0-g%d", g))
	}
	st := &elastico.State{Now: day0.Add(time.Minute), Cluster: cluster(node("n0", 8, 16)), Jobs: []elastico.Job{gang, plainJob("small", 1, 1, 10, 100, day0.Add(time.Second))}}
	h := newHost(t, Config{}, st)
	h.run(10, nil)
	if n := h.displacements(0, h.epochs); n > 0 {
		t.Errorf("%d displacements, want 0:%s", n, h.history())
	}
	if got := h.running(); fmt.Sprint(got) != "[gang]" {
		t.Errorf("runs %v, want [gang]", got)
	}
}

// TestGangNotStarved: an 8-GPU gang waits while 1-GPU jobs, each needing 8
// epochs of service, arrive every 2 epochs; GPUs are held for it once it
// has waited Config.ReserveAfter, and it starts when the jobs on them have
// left.
func TestGangNotStarved(t *testing.T) {
	for _, tc := range []struct {
		name   string
		weight float64
	}{{"weight 1", 1}, {"weight 100", 100}} {
		t.Run(tc.name, func(t *testing.T) {
			var jobs []elastico.Job
			for i := range 8 {
				jobs = append(jobs, plainJob(fmt.Sprintf("s%03d", i), 1, 1, 10, 100, day0.Add(time.Duration(i)*time.Second)))
			}
			gang := plainJob("gang", 8, 1, 10, 800, day0.Add(time.Minute))
			gang.Weight = tc.weight
			jobs = append(jobs, gang)
			h := newHost(t, Config{}, &elastico.State{Now: day0.Add(2 * time.Minute), Cluster: cluster(node("n0", 8, 16)), Jobs: jobs})
			// The first jobs have had 0 to 7 epochs of service: one leaves
			// every epoch, and a GPU frees up at a time.
			served := map[string]int{}
			for i := range 8 {
				served[fmt.Sprintf("s%03d", i)] = i
			}
			next := 8
			h.run(200, func(e int) {
				for i := 0; i < len(h.st.Jobs); i++ {
					j := &h.st.Jobs[i]
					if j.Running == nil || j.ID == "gang" {
						continue
					}
					if served[j.ID]++; served[j.ID] >= 8 {
						h.remove(j.ID)
						i--
					}
				}
				if e%2 == 0 {
					h.st.Jobs = append(h.st.Jobs, plainJob(fmt.Sprintf("s%03d", next), 1, 1, 10, 100, h.st.Now))
					next++
				}
			})
			e, ok := h.started["gang"]
			if !ok {
				t.Fatalf("the gang never started in %d epochs:%s", h.epochs, h.history())
			}
			// It waited ReserveAfter, then at most the 8 epochs of service
			// of the jobs on its GPUs (and one epoch to see them gone).
			bound := int(DefaultReserveAfter/h.dt) + 8 + 1
			if e > bound {
				t.Errorf("the gang started at epoch %d, want by %d", e, bound)
			}
			t.Logf("the gang started at epoch %d (bound %d)", e, bound)
		})
	}
}

// TestWeightsAreHonoured: a job of lower weight, or of lower priority,
// never displaces a running one.
func TestWeightsAreHonoured(t *testing.T) {
	for _, tc := range []struct {
		name   string
		modify func(*elastico.Job)
	}{
		{"weight 0.1", func(j *elastico.Job) { j.Weight = 0.1 }},
		{"priority -100", func(j *elastico.Job) { j.Priority = -100 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			jobs := identical(2, 1, 1, 10, 100)
			for i := range jobs {
				jobs[i].Running = &elastico.Assignment{ConfigID: "c", GPUs: []string{fmt.Sprintf("n0-g%d", i)}}
			}
			low := plainJob("low", 1, 1, 10, 100, day0.Add(time.Minute))
			tc.modify(&low)
			jobs = append(jobs, low)
			h := newHost(t, Config{}, &elastico.State{Now: day0.Add(2 * time.Minute), Cluster: cluster(node("n0", 2, 16)), Jobs: jobs})
			h.run(10, nil)
			if n := h.displacements(0, h.epochs); n > 0 {
				t.Errorf("%d displacements, want 0:%s", n, h.history())
			}
			if got := h.running(); fmt.Sprint(got) != "[j00 j01]" {
				t.Errorf("runs %v, want [j00 j01]", got)
			}
		})
	}
}

// TestNoStarvation: on random clusters, a job that fits the empty cluster
// (a gang as wide as a node at most, at full SM) waits behind a stream of
// smaller jobs that keep arriving and finishing; it starts within
// ReserveAfter, plus the longest service of a job holding its GPUs, plus
// one epoch to see it gone.
func TestNoStarvation(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	var waited []int
	defer func() { t.Logf("epochs the target waited: %v", waited) }()
	for trial := range 30 {
		nodes, per := 1+r.IntN(3), 2+r.IntN(7)
		mem := 16 + 8*float64(r.IntN(4))
		var nds []elastico.Node
		tightCPU := r.IntN(2) == 0 // a CPU per GPU, and one spare: jobs sharing GPUs run out of CPU first
		for n := range nodes {
			nd := node(fmt.Sprintf("n%d", n), per, mem)
			if tightCPU {
				nd.CPU = float64(per + 1)
			}
			nds = append(nds, nd)
		}
		maxService, every, wide := 2+r.IntN(9), 1+r.IntN(3), 1+r.IntN(per)
		t.Run(fmt.Sprintf("%d/%dx%d/cpu%v/gang%d/every%d/service%d", trial, nodes, per, tightCPU, wide, every, maxService), func(t *testing.T) {
			service := map[string]int{}
			next := 0
			// A small job: never wider than the target, which must be the
			// one that waits; any SM, up to half a GPU's memory.
			small := func(now time.Time) elastico.Job {
				id := fmt.Sprintf("s%03d", next)
				next++
				g := min(1+r.IntN(2), wide)
				service[id] = 1 + r.IntN(maxService)
				return plainJob(id, g, 0.3+0.7*r.Float64(), 1+r.Float64()*(mem/2-1), 100*float64(g), now)
			}
			var jobs []elastico.Job
			for range 2 * nodes * per {
				jobs = append(jobs, small(day0.Add(-time.Second)))
			}
			h := newHost(t, Config{}, &elastico.State{Now: day0, Cluster: cluster(nds...), Jobs: jobs})
			// The target arrives once the small jobs fill the cluster.
			const arrives = 2
			bound := arrives + int(DefaultReserveAfter/h.dt) + maxService + 1
			h.run(bound+20, func(e int) {
				if e == arrives {
					h.st.Jobs = append(h.st.Jobs, plainJob("target", wide, 1, mem/2, 100*float64(wide), h.st.Now))
				}
				for i := 0; i < len(h.st.Jobs); i++ {
					j := &h.st.Jobs[i]
					if j.Running == nil || j.ID == "target" {
						continue
					}
					if service[j.ID]--; service[j.ID] <= 0 {
						h.remove(j.ID)
						i--
					}
				}
				if e%every == 0 { // more than the cluster serves
					for range 1 + nodes*per/maxService {
						h.st.Jobs = append(h.st.Jobs, small(h.st.Now))
					}
				}
			})
			e, ok := h.started["target"]
			if !ok || e > bound {
				t.Fatalf("the target started at epoch %d (%v), want by %d:%s", e, ok, bound, h.history())
			}
			waited = append(waited, e-arrives)
		})
	}
}
