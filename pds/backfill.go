package pds

import (
	"slices"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/slab"
)

// maxBackfillCandidates bounds the waiting jobs backfill tries: the first
// ones in admission order. Each try scans the nodes with empty GPUs.
const maxBackfillCandidates = 256

// backfill starts waiting jobs that the final plan leaves out on the GPUs
// it leaves empty, as a backfill scheduler does: in admission order, each
// under its most valuable configuration of the fewest GPUs that fit on
// empty GPUs of one node (several nodes only for a job that allows Spread
// and is larger than any node), not held for another job; then each job it
// started grows, before it starts, onto the empty GPUs beside it when a
// larger configuration there is worth more. It displaces no one and
// shares no GPU.
//
// The market prices the cluster's capacity as a whole, and its choice for
// a waiting job may need GPUs that no node has together: on 4-GPU nodes
// with one or two GPUs free on each, waiting jobs bid for a whole node
// and found none, and each refusal only moved the bid to another
// configuration of the same size, so a tenth of the cluster idled while
// jobs waited (Pollux's trace on 512 GPUs at load 1.5).
//
// A job that has settled in a calm cluster (calmSettled) is left waiting,
// so that a calm cluster still reaches its fixed point.
func (e *epoch) backfill() {
	b := &e.best
	if !e.backfillable(b) {
		return
	}
	acc := e.accountOf(b)
	e.emptyGPU = e.emptyGPU[:0]
	for g := range int32(e.ngpu) {
		if acc.jobs[g] == 0 && (len(e.resvGPU) == 0 || !e.resvGPU[g]) {
			e.emptyGPU = append(e.emptyGPU, g)
		}
	}
	e.maxNode = 0
	for n := range e.st.Cluster.Nodes {
		e.maxNode = max(e.maxNode, len(e.st.Cluster.Nodes[n].GPUs))
	}
	e.filled = e.filled[:0]
	tried := 0
	for _, j := range e.waiting {
		if len(e.emptyGPU) == 0 || tried == maxBackfillCandidates {
			break
		}
		js := &e.jobs[j]
		if b.gpus[j] != nil || js.n == 0 || e.heldFor(int(j)) != nil || e.calmSettled(j) {
			continue
		}
		tried++
		bestK, bestN, bestV := int32(-1), 0, 0.0
		var at []elastico.GPURef
		for o := js.first; o < js.first+js.n; o++ {
			k := e.optFam[o]
			p := &js.job.Profiles[k]
			v, n := e.valueOf(j, k), p.Demand.GPUs
			if v <= 0 || bestK >= 0 && (n > bestN || n == bestN && v <= bestV) || n > len(e.emptyGPU) {
				continue
			}
			if gs := e.emptyFor(acc, p, js.job.Spread && n > e.maxNode, nil); gs != nil {
				bestK, bestN, bestV, at = k, n, v, gs
			}
		}
		if bestK < 0 {
			continue
		}
		if e.startOn(b, acc, j, bestK, at) {
			e.filled = append(e.filled, j)
		}
	}
	// The jobs started grow onto the empty GPUs beside them, first come
	// first served: a larger configuration now costs no restart later.
	for _, j := range e.filled {
		e.growOnto(b, acc, j)
	}
	b.score = e.score(b)
}

// backfillable reports, before backfill builds its account, whether plan b
// leaves a GPU empty while a job it may start waits: at scale, most epochs
// have neither.
func (e *epoch) backfillable(b *result) bool {
	waits := false
	for _, j := range e.waiting {
		if b.gpus[j] == nil && e.jobs[j].n > 0 {
			waits = true
			break
		}
	}
	if !waits {
		return false
	}
	e.fill = slab.Zeroed(e.fill, e.ngpu)
	for j := range e.jobs {
		for _, r := range b.gpus[j] {
			e.fill[e.global(r)] = 1
		}
	}
	for g := range e.ngpu {
		if e.fill[g] == 0 && (len(e.resvGPU) == 0 || !e.resvGPU[g]) {
			return true
		}
	}
	return false
}

// growOnto gives job j, which plan b starts on gs, the most valuable of its
// larger configurations that fits on gs and the empty GPUs beside them (on
// their node, unless it spreads), if it is worth more.
func (e *epoch) growOnto(b *result, acc *account, j int32) {
	js := &e.jobs[j]
	was, gs := b.choice[j], b.gpus[j]
	p0 := &js.job.Profiles[was]
	bestK, bestV := was, e.valueOf(j, was)
	at := gs
	acc.sub(gs, p0)
	for o := js.first; o < js.first+js.n; o++ {
		k := e.optFam[o]
		p := &js.job.Profiles[k]
		n := p.Demand.GPUs
		if v := e.valueOf(j, k); v > bestV && n > len(gs) && n-len(gs) <= len(e.emptyGPU) {
			if got := e.emptyFor(acc, p, js.job.Spread && n > e.maxNode, gs); got != nil {
				bestK, bestV, at = k, v, got
			}
		}
	}
	if !e.startOn(b, acc, j, bestK, at) {
		acc.add(gs, p0) // cannot fail: it held them
	}
}

// startOn runs job j under family index k on gs in plan b (and acc), and
// takes gs off the empty GPUs, if they hold it (emptyFor chose them).
func (e *epoch) startOn(b *result, acc *account, j, k int32, gs []elastico.GPURef) bool {
	if acc.add(gs, &e.jobs[j].job.Profiles[k]) != "" {
		return false
	}
	b.choice[j], b.gpus[j], b.code[j], b.reason[j] = k, gs, elastico.Scheduled, ""
	e.emptyGPU = slices.DeleteFunc(e.emptyGPU, func(g int32) bool { return slices.Contains(gs, e.ref(g)) })
	return true
}

// emptyFor returns have and p.Demand.GPUs − len(have) more of the empty
// GPUs (e.emptyGPU) that hold a replica of profile p each, with the node's
// CPU and RAM for them all, or nil if there are none. Unless spread, they
// are on one node: have's, or the node with the fewest such GPUs that has
// enough (best fit); spread, the first in order. acc must not hold have's
// replicas.
func (e *epoch) emptyFor(acc *account, p *elastico.Profile, spread bool, have []elastico.GPURef) []elastico.GPURef {
	need := p.Demand.GPUs - len(have)
	var best []elastico.GPURef
	bestRoom := 0
	node, room := -1, e.room[:0]
	try := func() {
		if len(room) < need || best != nil && len(room) >= bestRoom {
			return
		}
		gs := append(slices.Clip(have), room[:need]...)
		if acc.add(gs, p) == "" {
			acc.sub(gs, p)
			best, bestRoom = gs, len(room)
		}
	}
	for _, g := range e.emptyGPU {
		r := e.ref(g)
		if !spread && len(have) > 0 && r.Node != have[0].Node {
			continue
		}
		one := []elastico.GPURef{r}
		if acc.add(one, p) != "" {
			continue
		}
		acc.sub(one, p)
		if !spread && r.Node != node {
			try()
			node, room = r.Node, room[:0]
		}
		room = append(room, r)
	}
	try()
	e.room = room
	return best
}
