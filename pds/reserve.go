package pds

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/slab"
)

// maxReservations bounds how many waiting jobs hold GPUs at once: the
// oldest (highest priority first) are served in turn. Each is a pass over
// the cluster, and held GPUs crowd the others: at 64, on 512 GPUs with 500
// jobs, reservations tripled an epoch's predicted pairs and violations
// (BenchmarkEpoch: 318 predictions, 56 violations, 1,392 allocations; at
// 16: 106, 10 and 687).
const maxReservations = 16

// reservation is GPUs held for a waiting job that has waited
// Config.ReserveAfter (see reserve).
type reservation struct {
	job  int32
	opt  int32 // the option it starts under: its smallest
	gpus []elastico.GPURef
	// fits: the GPUs have room for it now, beside the jobs still on them.
	fits bool
}

// reserve holds GPUs for the jobs that have waited Config.ReserveAfter
// (since their Arrival, or since their preemption as Carry.Since records),
// as a backfill scheduler holds nodes for the jobs at the head of its
// queue: otherwise a gang waits forever while smaller jobs, arriving
// later, take each GPU as it frees up. In admission order, up to
// maxReservations jobs each get the GPUs that would hold their smallest
// configuration with the fewest jobs on them now (on one node unless the
// job allows Spread). Until those jobs leave, no other job starts on the
// held GPUs (the placer sees them full: placeCluster); once the job fits
// there, it starts there, ahead of the market's choice. Jobs already on
// the GPUs are not displaced for it: the bound on its wait is ReserveAfter
// plus the time the jobs on its GPUs still run.
func (e *epoch) reserve() {
	e.resv = e.resv[:0]
	e.resvJob = slab.Zeroed(e.resvJob, len(e.jobs))
	e.resvGPU = slab.Zeroed(e.resvGPU, e.ngpu)
	e.resvSlab = e.resvSlab[:0]
	e.placeCl = nil
	if e.cfg.ReserveAfter < 0 {
		return
	}
	for _, j := range e.waiting {
		if len(e.resv) == maxReservations {
			break
		}
		js := &e.jobs[j]
		if js.n == 0 || js.minOpt < 0 {
			continue
		}
		since, ok := e.st.Carry.Since[js.job.ID]
		if !ok {
			since = js.job.Arrival
		}
		if e.st.Now.Sub(since) < e.cfg.ReserveAfter {
			continue
		}
		gs, fits := e.heldGPUs(j, e.optFam[js.minOpt])
		if gs == nil {
			continue
		}
		for _, r := range gs {
			e.resvGPU[e.global(r)] = true
		}
		e.resvJob[j] = int32(len(e.resv)) + 1
		e.resv = append(e.resv, reservation{job: j, opt: js.minOpt, gpus: gs, fits: fits})
	}
	if len(e.resv) > 0 {
		e.closeHeld()
	}
}

// heldGPUs chooses the GPUs to hold for job j under family index k:
// p.Demand.GPUs GPUs not yet held, of the profile's GPU model, each with
// the memory for a replica, on
// one node (unless the job allows Spread) and with the fewest jobs on them
// now; nil if there are none. fits reports whether the replicas have room
// there now, beside quiet neighbours: a job the sharing rule forbids
// beside one of them waits for it to leave, as it waits for room (it displaces no one).
func (e *epoch) heldGPUs(j, k int32) (gs []elastico.GPURef, fits bool) {
	job := e.jobs[j].job
	spread := job.Spread
	p := &job.Profiles[k]
	d := &p.Demand
	byJobs := func(a, b heldCand) int { return cmp.Compare(a.jobs, b.jobs) }
	// Candidates of one node (or, spread, of all) in e.cand; the best set
	// so far in e.candBest.
	e.candBest = e.candBest[:0]
	bestCost := -1
	e.cand = e.cand[:0]
	for n := range e.st.Cluster.Nodes {
		if !spread {
			e.cand = e.cand[:0]
		}
		for k := range e.st.Cluster.Nodes[n].GPUs {
			g := e.nodeFirst[n] + int32(k)
			if hw := e.gpuOf(g); e.resvGPU[g] || hw.Memory < d.GPUMemory || !p.RunsOn(hw.Model) {
				continue
			}
			e.cand = append(e.cand, heldCand{g, int(e.curOff[g+1] - e.curOff[g])})
		}
		if spread || len(e.cand) < d.GPUs {
			continue
		}
		if d.GPUs == 1 {
			// Most jobs: the emptiest GPU, without a sort.
			c := slices.MinFunc(e.cand, byJobs)
			e.cand = append(e.cand[:0], c)
		} else {
			slices.SortStableFunc(e.cand, byJobs)
		}
		cost := 0
		for _, c := range e.cand[:d.GPUs] {
			cost += c.jobs
		}
		if bestCost < 0 || cost < bestCost {
			e.candBest = append(e.candBest[:0], e.cand[:d.GPUs]...)
			bestCost = cost
		}
		if bestCost == 0 {
			break // no set has fewer jobs on it
		}
	}
	if spread && len(e.cand) >= d.GPUs {
		slices.SortStableFunc(e.cand, byJobs)
		e.candBest = append(e.candBest[:0], e.cand[:d.GPUs]...)
	}
	if len(e.candBest) == 0 {
		return nil, false
	}
	start := len(e.resvSlab)
	fits = true
	for _, c := range e.candBest {
		e.resvSlab = append(e.resvSlab, e.ref(c.g))
		sm, mem, jobs := e.used(c.g)
		hw := e.gpuOf(c.g)
		if over(sm+d.SM, e.overs) || over(mem+d.GPUMemory, hw.Memory) || !hw.Shared && jobs > 0 || e.loudOn(c.g, j, k) {
			fits = false
		}
	}
	return e.resvSlab[start:len(e.resvSlab):len(e.resvSlab)], fits
}

// loudOn reports whether job j under family index k would be beside a job
// that runs on GPU g now that the sharing rule says it may not share with.
func (e *epoch) loudOn(g, j, k int32) bool {
	if !e.memo.on() {
		return false
	}
	for _, x := range e.curRes[e.curOff[g]:e.curOff[g+1]] {
		if xs := &e.jobs[x]; xs.cur >= 0 && x != j && e.loudPair(j, k, x, xs.cur, e.lim) {
			return true
		}
	}
	return false
}

// heldCand is a GPU that could be held, with the jobs on it now.
type heldCand struct {
	g    int32
	jobs int
}

// used is the SM share and memory the jobs on GPU g use now, and how many
// they are.
func (mk *marketState) used(g int32) (sm, mem float64, jobs int) {
	for _, j := range mk.curRes[mk.curOff[g]:mk.curOff[g+1]] {
		js := &mk.jobs[j]
		if js.cur < 0 {
			continue
		}
		d := &js.job.Profiles[js.cur].Demand
		sm += d.SM
		mem += d.GPUMemory
		jobs++
	}
	return sm, mem, jobs
}

// closeHeld makes placeCluster: the State's cluster with every held GPU's
// memory cut to what its jobs use now (plus, where the reservation fits,
// its job's replica), so that the placer starts no other job there.
func (e *epoch) closeHeld() {
	cl := e.st.Cluster
	cl.Nodes = slices.Clone(cl.Nodes)
	copied := make(map[int]bool)
	for _, rv := range e.resv {
		d := &e.jobs[rv.job].job.Profiles[e.optFam[rv.opt]].Demand
		for _, r := range rv.gpus {
			if !copied[r.Node] {
				cl.Nodes[r.Node].GPUs = slices.Clone(cl.Nodes[r.Node].GPUs)
				copied[r.Node] = true
			}
			_, mem, _ := e.used(e.global(r))
			if rv.fits {
				mem += d.GPUMemory
			}
			hw := &cl.Nodes[r.Node].GPUs[r.GPU]
			hw.Memory = min(hw.Memory, mem)
		}
	}
	e.placeCl = &cl
}

// admitHeld gives each job whose held GPUs have room its option there,
// whatever the market chose for it.
func (e *epoch) admitHeld() {
	for _, rv := range e.resv {
		if js := &e.jobs[rv.job]; rv.fits && js.bidder >= 0 {
			e.choice[js.bidder] = rv.opt - js.first
		}
	}
}

// heldFor returns the GPUs held for job j, or nil.
func (mk *marketState) heldFor(j int) []elastico.GPURef {
	if len(mk.resv) == 0 || mk.resvJob[j] == 0 {
		return nil
	}
	return mk.resv[mk.resvJob[j]-1].gpus
}

// heldReason says why a job with held GPUs still waits.
func (e *epoch) heldReason(j int) string {
	gs := e.heldFor(j)
	if gs == nil {
		return ""
	}
	ids := make([]string, len(gs))
	for k, r := range gs {
		ids[k] = e.st.Cluster.Nodes[r.Node].GPUs[r.GPU].ID
	}
	return fmt.Sprintf("GPUs %s are held for it (it has waited %v or more): no other job starts there, and it starts there when the jobs on them leave", strings.Join(ids, ","), e.cfg.ReserveAfter)
}
