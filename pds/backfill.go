package pds

import (
	"cmp"
	"slices"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/slab"
)

// maxBackfillCandidates bounds the waiting jobs backfill tries: the first
// ones in admission order. Each try scans the nodes with empty GPUs.
const maxBackfillCandidates = 256

// backfill starts jobs that plan e.best leaves out on the GPUs it leaves
// empty, as a backfill scheduler does: in admission order, each
// under its most valuable configuration that fits on empty GPUs of one
// node (several nodes only for a job that allows Spread and is larger
// than any node), not held for another job. It displaces no one and
// shares no GPU. (Starting each under its fewest GPUs instead, so that
// more could start, left jobs on one GPU that the market then had to
// restart to grow: on Pollux's trace at 512 GPUs and load 1.5, the
// average JCT was 1.01× longer, 20 seeds.)
//
// The market prices the cluster's capacity as a whole, and its choice for
// a waiting job may need GPUs that no node has together: on 4-GPU nodes
// with one or two GPUs free on each, waiting jobs bid for a whole node
// and found none, and each refusal only moved the bid to another
// configuration of the same size: at times a tenth of the cluster idled
// while jobs waited, and the GPUs were held 91 % of the time against the
// Pollux-like peer's 96.5 % (Pollux's trace on 512 GPUs at load 1.5; 95.8 %
// with backfill).
//
// It runs twice. First on the market's plan, before restore, for the
// jobs the market chose and the placer found no room for (code
// Unplaceable; not those the market left out, which keeps the pass cheap
// where thousands wait): the GPUs the market freed by shrinking running
// jobs for them go to them, and restore then weighs each shrunk job's GPUs
// against them; run only last, restore gave them back for nothing in the
// way, and a sixth of the jobs waited an epoch or more (same trace:
// elastico's average JCT 1.015× the peer's, against 1.028×, 20 seeds).
// Then on the final plan, for the GPUs the passes left empty; there the
// running jobs the plan leaves out for want of room (the market reshaped
// them and the placer found no node) come first, moved rather than
// preempted: on the same trace preemptions fell from 0.23 to 0.08 a job,
// migrations rose from 0.27 to 0.36, the JCT stayed (1.015×). In the first
// pass as well they moved again at every epoch (BERT jobs 3.6 times each,
// some over 20). A job with GPUs held for it starts on other empty GPUs
// too: the hold keeps other jobs off its GPUs, not it off others'.
//
// A job that has settled in a calm cluster (calmSettled) is left waiting,
// so that a calm cluster still reaches its fixed point.
func (e *epoch) backfill(onlyUnplaced bool) {
	b := &e.best
	if !e.emptyGPUs(b, onlyUnplaced) {
		return
	}
	acc := e.accountOf(b)
	e.maxNode = e.mostGPUsPerNode()
	tried := 0
	for _, j := range e.bfJobs {
		if len(e.emptyGPU) == 0 || tried == maxBackfillCandidates {
			break
		}
		if e.calmSettled(j) {
			continue
		}
		js := &e.jobs[j]
		tried++
		// Its options by worth, most first: the first that fits is it.
		e.bfOpts = e.bfOpts[:0]
		for o := js.first; o < js.first+js.n; o++ {
			k := e.optFam[o]
			if v := e.valueOf(j, k); v > 0 && js.job.Profiles[k].Demand.GPUs <= len(e.emptyGPU) {
				e.bfOpts = append(e.bfOpts, bfOpt{k, v})
			}
		}
		slices.SortStableFunc(e.bfOpts, func(a, b bfOpt) int { return cmp.Compare(b.v, a.v) })
		for _, c := range e.bfOpts {
			p := &js.job.Profiles[c.k]
			if gs := e.emptyFor(acc, p, js.job.Spread && p.Demand.GPUs > e.maxNode); gs != nil {
				e.startOn(b, acc, j, c.k, gs)
				break
			}
		}
	}
	b.score = e.score(b)
}

// bfOpt is one of a waiting job's options, by family index, and its worth.
type bfOpt struct {
	k int32
	v float64
}

// emptyGPUs reports whether plan b leaves a GPU empty, not held for a
// job, while a job it may start waits (only one the placer found no room
// for, if onlyUnplaced), and lists the empty GPUs in e.emptyGPU, by
// number (a node's together), and the jobs it may start in e.bfJobs:
// unless onlyUnplaced, the running jobs b leaves out for want of room,
// then the waiting ones. It needs no account: at scale, most epochs have
// no such GPU.
func (e *epoch) emptyGPUs(b *result, onlyUnplaced bool) bool {
	e.bfJobs = e.bfJobs[:0]
	for j := range e.jobs {
		if js := &e.jobs[j]; !onlyUnplaced && js.running && b.gpus[j] == nil && js.n > 0 && b.code[j] == elastico.Unplaceable {
			e.bfJobs = append(e.bfJobs, int32(j))
		}
	}
	for _, j := range e.waiting {
		if b.gpus[j] == nil && e.jobs[j].n > 0 && (!onlyUnplaced || b.code[j] == elastico.Unplaceable) {
			e.bfJobs = append(e.bfJobs, j)
		}
	}
	if len(e.bfJobs) == 0 {
		return false
	}
	e.fill = slab.Zeroed(e.fill, e.ngpu)
	for j := range e.jobs {
		for _, r := range b.gpus[j] {
			e.fill[e.global(r)] = 1
		}
	}
	e.emptyGPU = e.emptyGPU[:0]
	for g := range int32(e.ngpu) {
		if e.fill[g] == 0 && (len(e.resvGPU) == 0 || !e.resvGPU[g]) {
			e.emptyGPU = append(e.emptyGPU, g)
		}
	}
	return len(e.emptyGPU) > 0
}

// startOn starts job j under family index k on gs in plan b (and acc),
// and takes gs off the empty GPUs, if they hold it (emptyFor chose them).
func (e *epoch) startOn(b *result, acc *account, j, k int32, gs []elastico.GPURef) {
	if acc.add(gs, &e.jobs[j].job.Profiles[k]) != "" {
		return
	}
	b.choice[j], b.gpus[j], b.code[j], b.reason[j] = k, gs, elastico.Scheduled, ""
	e.emptyGPU = slices.DeleteFunc(e.emptyGPU, func(g int32) bool { return slices.Contains(gs, e.ref(g)) })
}

// emptyFor returns p.Demand.GPUs of the empty GPUs (e.emptyGPU) that
// hold a replica of profile p each, with the node's CPU and RAM for them
// all, or nil if there are none: unless spread, on the node with the
// fewest such GPUs that has enough (best fit); spread, the first in order.
// An empty GPU holds a replica if it is of p's model and has the memory;
// the checks are acc.add's, without its reasons (formatting them for
// every GPU passed over was most of an epoch at 20,000 jobs).
func (e *epoch) emptyFor(acc *account, p *elastico.Profile, spread bool) []elastico.GPURef {
	d := &p.Demand
	need := d.GPUs
	cl := &e.st.Cluster
	var best []elastico.GPURef
	bestRoom := 0
	node, room := -1, e.room[:0]
	try := func() {
		if len(room) < need || best != nil && len(room) >= bestRoom {
			return
		}
		if !spread {
			n := &cl.Nodes[node]
			k := float64(need)
			if over(acc.cpu[node]+k*d.CPU, n.CPU) || over(acc.ram[node]+k*d.RAM, n.RAM) {
				return
			}
		}
		best, bestRoom = slices.Clone(room[:need]), len(room)
	}
	for _, g := range e.emptyGPU {
		r := e.ref(g)
		hw := &cl.Nodes[r.Node].GPUs[r.GPU]
		if over(d.SM, e.overs) || over(d.GPUMemory, hw.Memory) || !p.RunsOn(hw.Model) {
			continue
		}
		if !spread && r.Node != node {
			try()
			node, room = r.Node, room[:0]
		}
		room = append(room, r)
	}
	if len(room) > 0 {
		try()
	}
	e.room = room
	if best != nil && spread {
		// Each node's CPU and RAM for its share of the replicas.
		if acc.add(best, p) != "" {
			return nil
		}
		acc.sub(best, p)
	}
	return best
}
