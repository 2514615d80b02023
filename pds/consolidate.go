package pds

import (
	"cmp"
	"slices"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/slab"
)

// maxConsolidations bounds the gangs consolidate tries an epoch, most
// valuable first; each try scans the nodes.
const maxConsolidations = 32

// consolidate makes room on one node for the gangs the market chose and
// the placer found no node for (result.want), by moving smaller jobs off
// that node onto empty GPUs of others, as Pollux's reallocation does:
// where every node holds a job or two, a job the market grows to a node's
// four GPUs otherwise runs on the one GPU it started on until a node
// frees up (on Pollux's trace at 512 GPUs and load 1.5, BERT ran on one
// GPU for 23 % of its time, and Pollux's peer on four for 88 %).
//
// A gang takes the node where the moves cost least: the node's empty GPUs
// and its own, then the GPUs of jobs that run on that node alone, each of
// which moves, whole, to empty GPUs of one other node (the fullest that
// fits, as backfill chooses), and of spread jobs, whose replicas there
// move to empty GPUs of other nodes. It does so only if what it gains, its value
// under the chosen GPU count less its value in the plan (and its own
// keepBonus if it runs as before), exceeds what the moves cost: the
// keepBonus of each moved job that runs as before, which holds a job moved
// within MinRunTime where it is; nothing for one the plan restarts
// anyway. A moved job, like every changed one, is held for MinRunTime and,
// in a calm cluster, until the jobs change (see calmSettled): it does not
// move back and forth. Gangs larger than a node, shared GPUs and GPUs held
// for a waiting job are left alone, and so is every job where the host
// cannot move one (Config.Pinned).
//
// The gang runs under its most valuable configuration of the chosen GPU
// count: the market's choice walked down the batch sizes of that count as
// each found no node (unplacedPenalty), and the node is found now.
func (e *epoch) consolidate() {
	b := &e.best
	if len(b.want) != len(e.jobs) || e.cfg.Pinned {
		return // (a Pinned host moves no job)
	}
	maxNode := e.mostGPUsPerNode()
	e.consCands = e.consCands[:0]
	for j := range e.jobs {
		k := e.bestOfCount(int32(j), b.want[j]-1)
		if k < 0 || e.calmSettled(int32(j)) {
			continue
		}
		js := &e.jobs[j]
		need := js.job.Profiles[k].Demand.GPUs
		if need <= len(b.gpus[j]) || need > maxNode {
			continue
		}
		gain := e.valueOf(int32(j), k) - e.valueOf(int32(j), b.choice[j])
		if js.running && e.unchanged(b, int32(j)) {
			gain -= js.scale * js.keep
		}
		if gain > 0 {
			e.consCands = append(e.consCands, consCand{int32(j), k, gain})
		}
	}
	if len(e.consCands) == 0 {
		return
	}
	slices.SortStableFunc(e.consCands, func(a, b consCand) int { return cmp.Compare(b.gain, a.gain) })
	if len(e.consCands) > maxConsolidations {
		e.consCands = e.consCands[:maxConsolidations]
	}
	acc := e.accountOf(b)
	e.consOwner = slab.Zeroed(e.consOwner, e.ngpu)
	for j := range e.jobs {
		for _, r := range b.gpus[j] {
			if g := e.global(r); acc.jobs[g] == 1 {
				e.consOwner[g] = int32(j) + 1
			}
		}
	}
	e.consJobCost = slab.Zeroed(e.consJobCost, len(e.jobs))
	for j := range e.consJobCost {
		e.consJobCost[j] = costUnknown
	}
	moved := false
	for _, c := range e.consCands {
		if e.consolidateOne(b, acc, c) {
			moved = true
		}
	}
	if moved {
		b.score = e.score(b)
	}
}

// mostGPUsPerNode returns the most GPUs a node of the cluster has.
func (e *epoch) mostGPUsPerNode() int {
	m := 0
	for n := range e.st.Cluster.Nodes {
		m = max(m, len(e.st.Cluster.Nodes[n].GPUs))
	}
	return m
}

// bestOfCount returns job j's most valuable configuration (family index)
// with as many GPUs of the same model as its configuration k, or −1 if k
// is.
func (e *epoch) bestOfCount(j, k int32) int32 {
	if k < 0 {
		return -1
	}
	js := &e.jobs[j]
	var model int16 = -1
	for o := js.first; o < js.first+js.n; o++ {
		if e.optFam[o] == k {
			model = e.optModel[o]
		}
	}
	need := js.job.Profiles[k].Demand.GPUs
	best, v := k, e.valueOf(j, k)
	for o := js.first; o < js.first+js.n; o++ {
		f := e.optFam[o]
		if js.job.Profiles[f].Demand.GPUs == need && e.optModel[o] == model && e.valueOf(j, f) > v {
			best, v = f, e.valueOf(j, f)
		}
	}
	return best
}

// consCand is a gang consolidate tries: job j under family index k, and
// what it gains there.
type consCand struct {
	j, k int32
	gain float64
}

// consMove is a job consolidate may move off a node: its GPUs there and
// what moving it costs.
type consMove struct {
	job  int32
	gpus int
	cost float64
}

// moveCost returns what moving job m's GPUs off node n costs in plan b,
// and how many GPUs of n it frees, or −1 if it may not move: it runs in b
// on GPUs of node n alone (fewer than limit), or spread over nodes (its
// replicas on n then move to other nodes), on GPUs it has to itself, and
// has not settled in a calm cluster. It costs its keepBonus if b runs it
// as the State does, nothing if b restarts it anyway. What does not
// depend on n is kept in e.consJobCost.
func (e *epoch) moveCost(b *result, m int32, n int32, limit int) (cost float64, frees int) {
	cost = e.consJobCost[m]
	if cost == costUnknown {
		cost = e.jobMoveCost(b, m)
		e.consJobCost[m] = cost
	}
	if cost < 0 {
		return -1, 0
	}
	gs := b.gpus[m]
	for _, r := range gs {
		if int32(r.Node) == n {
			frees++
		}
	}
	if frees < len(gs) && !e.jobs[m].job.Spread || frees == len(gs) && frees >= limit {
		return -1, 0
	}
	return cost, frees
}

// costUnknown marks a job whose jobMoveCost consolidate has not asked for.
const costUnknown = -2

// jobMoveCost is moveCost's part that does not depend on the node: what
// moving job m costs, or −1 if it may not move.
func (e *epoch) jobMoveCost(b *result, m int32) float64 {
	js := &e.jobs[m]
	gs := b.gpus[m]
	if len(gs) == 0 || e.calmSettled(m) {
		return -1
	}
	for _, r := range gs {
		if e.consOwner[e.global(r)] != m+1 {
			return -1 // a shared GPU
		}
	}
	if !js.running || !e.unchanged(b, m) {
		return 0
	}
	if js.curOpt < 0 {
		return -1
	}
	return js.scale * js.keep
}

// nodeMoves lists in e.consMoves the jobs that may move off node n to make
// room for gang c, cheapest per GPU first, and returns how many of the
// node's GPUs the gang may take without moves (empty or its own).
func (e *epoch) nodeMoves(b *result, acc *account, c consCand, n int32) (free int) {
	p := &e.jobs[c.j].job.Profiles[c.k]
	need := p.Demand.GPUs
	gs := e.st.Cluster.Nodes[n].GPUs
	e.consMoves = e.consMoves[:0]
	for k := range gs {
		hw := &gs[k]
		g := e.nodeFirst[n] + int32(k)
		if !e.takes(p, g, hw) {
			continue
		}
		o := e.consOwner[g] - 1
		switch {
		case acc.jobs[g] == 0 || o == c.j:
			free++
		case o >= 0:
			if slices.ContainsFunc(e.consMoves, func(m consMove) bool { return m.job == o }) {
				continue
			}
			if cost, frees := e.moveCost(b, o, n, need); cost >= 0 {
				e.consMoves = append(e.consMoves, consMove{o, frees, cost})
			}
		}
	}
	slices.SortStableFunc(e.consMoves, func(a, b consMove) int {
		return cmp.Compare(a.cost/float64(a.gpus), b.cost/float64(b.gpus))
	})
	return free
}

// takes reports whether GPU g (hw) may hold a replica of profile p on its
// own: its model and memory, and not held for a waiting job.
func (e *epoch) takes(p *elastico.Profile, g int32, hw *elastico.GPU) bool {
	return p.RunsOn(hw.Model) && !over(p.Demand.GPUMemory, hw.Memory) && !over(p.Demand.SM, e.overs) && (len(e.resvGPU) == 0 || !e.resvGPU[g])
}

// consolidateOne puts gang c on one node of plan b (and acc), moving the
// jobs that cost least, if its gain exceeds their cost: it tries the
// nodes cheapest first (at most maxConsolidationNodes of them: a node
// whose moved jobs find no GPUs elsewhere is passed over). It reports
// whether it did.
func (e *epoch) consolidateOne(b *result, acc *account, c consCand) bool {
	need := e.jobs[c.j].job.Profiles[c.k].Demand.GPUs
	cl := &e.st.Cluster
	e.consNodes = e.consNodes[:0]
	for n := range int32(len(cl.Nodes)) {
		if len(cl.Nodes[n].GPUs) < need {
			continue
		}
		free := e.nodeMoves(b, acc, c, n)
		cost := 0.0
		for _, m := range e.consMoves {
			if free >= need || cost >= c.gain {
				break
			}
			free += m.gpus
			cost += m.cost
		}
		if free >= need && cost < c.gain {
			e.consNodes = append(e.consNodes, consNode{n, cost})
			if cost == 0 {
				break // none cheaper
			}
		}
	}
	slices.SortStableFunc(e.consNodes, func(a, b consNode) int { return cmp.Compare(a.cost, b.cost) })
	for i, n := range e.consNodes {
		if i == maxConsolidationNodes {
			break
		}
		if e.consolidateOn(b, acc, c, n.n) {
			return true
		}
	}
	return false
}

// maxConsolidationNodes bounds the nodes consolidateOne tries for a gang.
const maxConsolidationNodes = 4

// consNode is a node consolidate may empty for a gang, and what the moves
// cost.
type consNode struct {
	n    int32
	cost float64
}

// consolidateOn moves the cheapest movable jobs off node n to empty GPUs
// of other nodes and starts gang c on n, or, if a moved job finds no
// GPUs or the node no CPU or RAM for the gang, leaves b and acc as they
// were and reports false.
func (e *epoch) consolidateOn(b *result, acc *account, c consCand, n int32) bool {
	js := &e.jobs[c.j]
	p := &js.job.Profiles[c.k]
	need := p.Demand.GPUs
	free := e.nodeMoves(b, acc, c, n)
	// The empty GPUs of other nodes, for the moved jobs.
	e.emptyGPU = e.emptyGPU[:0]
	for g := range int32(e.ngpu) {
		if acc.jobs[g] == 0 && e.gpuNode[g] != n && (len(e.resvGPU) == 0 || !e.resvGPU[g]) {
			e.emptyGPU = append(e.emptyGPU, g)
		}
	}
	e.consUndo = e.consUndo[:0]
	undo := func() {
		for i := len(e.consUndo) - 1; i >= 0; i-- {
			u := e.consUndo[i]
			prof := &e.jobs[u.job].job.Profiles[b.choice[u.job]]
			acc.sub(b.gpus[u.job], prof)
			acc.add(u.gpus, prof)
			b.gpus[u.job] = u.gpus
		}
	}
	for _, m := range e.consMoves {
		if free >= need {
			break
		}
		prof := &e.jobs[m.job].job.Profiles[b.choice[m.job]]
		old := b.gpus[m.job]
		acc.sub(old, prof)
		var dst []elastico.GPURef
		if m.gpus == len(old) {
			dst = e.emptyFor(acc, prof, false)
		} else {
			dst = e.replicasOff(acc, prof, old, n)
		}
		if dst == nil || acc.add(dst, prof) != "" {
			acc.add(old, prof)
			undo()
			return false
		}
		e.emptyGPU = slices.DeleteFunc(e.emptyGPU, func(g int32) bool { return slices.Contains(dst, e.ref(g)) })
		e.consUndo = append(e.consUndo, consUndo{m.job, old})
		b.gpus[m.job] = dst
		free += m.gpus
	}
	// The gang, off its old GPUs and onto the node's empty ones.
	old := b.gpus[c.j]
	if old != nil {
		acc.sub(old, &js.job.Profiles[b.choice[c.j]])
	}
	at := make([]elastico.GPURef, 0, need)
	gs := e.st.Cluster.Nodes[n].GPUs
	for k := range gs {
		g := e.nodeFirst[n] + int32(k)
		if len(at) < need && acc.jobs[g] == 0 && e.takes(p, g, &gs[k]) {
			at = append(at, elastico.GPURef{Node: int(n), GPU: k})
		}
	}
	if len(at) < need || acc.add(at, p) != "" {
		if old != nil {
			acc.add(old, &js.job.Profiles[b.choice[c.j]])
		}
		undo()
		return false
	}
	for _, u := range e.consUndo {
		e.consJobCost[u.job] = costUnknown
		for _, r := range u.gpus {
			e.consOwner[e.global(r)] = 0
		}
		for _, r := range b.gpus[u.job] {
			e.consOwner[e.global(r)] = u.job + 1
		}
	}
	for _, r := range old {
		e.consOwner[e.global(r)] = 0
	}
	for _, r := range at {
		e.consOwner[e.global(r)] = c.j + 1
	}
	e.consJobCost[c.j] = costUnknown
	b.choice[c.j], b.gpus[c.j], b.code[c.j], b.reason[c.j] = c.k, at, elastico.Scheduled, ""
	b.want[c.j] = 0
	return true
}

// replicasOff returns gs, a spread job's GPUs under profile p, with its
// replicas on node n moved to empty GPUs of other nodes (e.emptyGPU), each
// on the node with the fewest empty GPUs that fits it, or nil if some
// replica finds none. acc holds the job nowhere.
func (e *epoch) replicasOff(acc *account, p *elastico.Profile, gs []elastico.GPURef, n int32) []elastico.GPURef {
	d := &p.Demand
	cl := &e.st.Cluster
	out := slices.Clone(gs)
	e.fill = slab.Zeroed(e.fill, len(cl.Nodes))
	for _, g := range e.emptyGPU {
		e.fill[e.gpuNode[g]]++
	}
	// The CPU and RAM the job's replicas take on each node, as placed so far.
	perNode := func(node int) float64 {
		k := 0.0
		for _, r := range out {
			if r.Node == node {
				k++
			}
		}
		return k
	}
	for i, r := range out {
		if int32(r.Node) != n {
			continue
		}
		best, bestFill := int32(-1), int32(0)
		for _, g := range e.emptyGPU {
			ref := e.ref(g)
			hw := &cl.Nodes[ref.Node].GPUs[ref.GPU]
			nd := &cl.Nodes[ref.Node]
			if slices.Contains(out, ref) || !p.RunsOn(hw.Model) || over(d.GPUMemory, hw.Memory) || over(d.SM, e.overs) {
				continue
			}
			k := perNode(ref.Node) + 1
			if over(acc.cpu[ref.Node]+k*d.CPU, nd.CPU) || over(acc.ram[ref.Node]+k*d.RAM, nd.RAM) {
				continue
			}
			if f := e.fill[ref.Node]; best < 0 || f < bestFill {
				best, bestFill = g, f
			}
		}
		if best < 0 {
			return nil
		}
		out[i] = e.ref(best)
		e.fill[e.gpuNode[best]]--
	}
	return out
}

// consUndo is a job consolidate moved and the GPUs it had.
type consUndo struct {
	job  int32
	gpus []elastico.GPURef
}
