package pds

import (
	"cmp"
	"slices"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/slab"
)

// holdReason is the status of a waiting job that the best plan would have
// started on GPUs it takes from running jobs, when hold keeps them there.
const holdReason = "its GPUs stay with running jobs: displacing them would gain less than their restarts cost"

// hold keeps every running job where it runs unless the best plan's
// displacements pay for themselves. It compares the best plan with the one
// that displaces no running job (each where and as the State runs it; the
// best plan's newcomers where they still fit beside them and no pair is
// the sharing rule forbids), charging each plan, for every running job
// it preempts, moves or reshapes, what keeping that job is worth (its
// restart's work over the horizon, γ0, and its hold while it has run less
// than MinRunTime: keepBonus). The market already weighs these, but only
// on total capacity: a plan whose gang found no node, or whose prices
// moved since the jobs were placed, displaced jobs for nothing, and the
// next epoch undid it.
func (e *epoch) hold() {
	b := &e.best
	costB, moved := e.displacementCost(b)
	if !moved {
		return
	}
	a := &e.alt
	n := len(e.jobs)
	a.choice = slab.Zeroed(a.choice, n)
	a.gpus = slab.Zeroed(a.gpus, n)
	a.code = slab.Zeroed(a.code, n)
	a.reason = slab.Zeroed(a.reason, n)
	a.want = slab.Zeroed(a.want, n)
	copy(a.choice, b.choice)
	copy(a.gpus, b.gpus)
	copy(a.code, b.code)
	copy(a.reason, b.reason)
	copy(a.want, b.want)
	a.prices = b.prices
	acc := e.account()
	for j := range e.jobs {
		js := &e.jobs[j]
		if !js.running || js.curOpt < 0 {
			continue
		}
		if why := e.stays(acc, j); why != "" {
			a.choice[j], a.gpus[j], a.code[j], a.reason[j] = -1, nil, elastico.Unplaceable, why
			continue
		}
		a.choice[j], a.gpus[j], a.code[j], a.reason[j] = js.cur, js.curGPUs, elastico.Scheduled, ""
	}
	for j := range e.jobs {
		js := &e.jobs[j]
		if js.running && js.curOpt >= 0 || a.gpus[j] == nil {
			continue
		}
		if why := acc.add(a.gpus[j], &js.job.Profiles[a.choice[j]]); why != "" {
			a.choice[j], a.gpus[j], a.code[j], a.reason[j] = -1, nil, elastico.Unplaceable, holdReason
		}
	}
	e.check(a)
	for len(e.viol) > 0 && e.deferNewcomers(a) {
		e.check(a)
	}
	e.viol = e.viol[:0]
	costA, _ := e.displacementCost(a)
	if e.score(a)-costA >= e.score(b)-costB {
		e.best, *a = *a, e.best
	}
}

// displacementCost is what plan r's displacements lose: for each running
// job it preempts, moves or reshapes, its scale times keepBonus. moved
// reports whether there is any.
func (mk *marketState) displacementCost(r *result) (cost float64, moved bool) {
	for j := range mk.jobs {
		js := &mk.jobs[j]
		if !js.running || mk.unchanged(r, int32(j)) {
			continue
		}
		moved = true
		if js.curOpt >= 0 {
			cost += js.scale * js.keep
		}
	}
	return cost, moved
}

// restoreReason is the status of a waiting job the best plan would have
// started on GPUs that restore gave back to the running job it displaced.
const restoreReason = "its GPUs stay with a running job: displacing it would gain less than its restart costs"

// restore gives back, one at a time, each running job that the best plan
// displaces where the displacement does not pay on its own: the job runs
// again on its GPUs, under its configuration or another (a restart, so
// without keepBonus), when what it is worth there (its value, and
// keepBonus if unchanged) exceeds what the plan does instead, its value
// under the plan's assignment and that of the waiting jobs the plan
// starts on its GPUs, which then wait. hold weighs whole plans; a plan that pays as a
// whole still carries displacements that gain nothing, drawn by the
// market's prices of the moment (a job preempted for an equal one, a gang
// reshaped and back), and the next epoch's market draws others. A job is
// left as the plan has it if putting it back would leave it beside a
// neighbour the sharing rule forbids, not fit beside a running job the plan moved
// there, evict a job starting on GPUs held for it, or keep it as the
// State runs it against the rules. Jobs are taken by the worth they keep,
// highest first.
func (e *epoch) restore() {
	if e.cfg.Pinned {
		return // pin already keeps every running job
	}
	b := &e.best
	e.displaced = e.displaced[:0]
	for j := range e.jobs {
		js := &e.jobs[j]
		if js.running && js.curOpt >= 0 && !e.unchanged(b, int32(j)) && e.againstRules(j) == "" {
			e.displaced = append(e.displaced, int32(j))
		}
	}
	if len(e.displaced) == 0 {
		return
	}
	kept := func(j int32) float64 {
		js := &e.jobs[j]
		return e.valueOf(j, js.cur) + js.scale*js.keep
	}
	slices.SortStableFunc(e.displaced, func(x, y int32) int { return cmp.Compare(kept(y), kept(x)) })
	acc := e.accountOf(b)
	e.residents(b)
	e.restored = e.restored[:0]
	e.restHead = slab.Zeroed(e.restHead, e.ngpu)
	e.restJob, e.restNext = e.restJob[:0], e.restNext[:0]
	for _, j := range e.displaced {
		js := &e.jobs[j]
		gain := 0.0 // of putting j back, before what j is worth there
		if b.gpus[j] != nil {
			gain -= e.valueOf(j, b.choice[j])
		}
		// The waiting jobs the plan starts on j's GPUs give way; a running
		// job there stays (and must fit beside it).
		e.evict = e.evict[:0]
		ok := true
		for _, r := range js.curGPUs {
			g := e.global(r)
			for _, x := range e.on(g) {
				if x == j || !slices.Contains(b.gpus[x], r) || slices.Contains(e.evict, x) {
					continue
				}
				if e.jobs[x].running {
					continue
				}
				if e.heldFor(int(x)) != nil {
					ok = false
					break
				}
				e.evict = append(e.evict, x)
				gain -= e.valueOf(x, b.choice[x])
			}
		}
		if !ok || gain+kept(j) <= 0 {
			continue
		}
		if b.gpus[j] != nil {
			acc.sub(b.gpus[j], &js.job.Profiles[b.choice[j]])
		}
		for _, x := range e.evict {
			acc.sub(b.gpus[x], &e.jobs[x].job.Profiles[b.choice[x]])
		}
		// Back under its configuration, or under another on the same GPUs
		// (a restart, so without keepBonus) if that is worth more: the
		// market may have preempted it only for want of that one.
		best, bestGain := int32(-1), 0.0
		for o := js.first; o < js.first+js.n; o++ {
			k := e.optFam[o]
			p := &js.job.Profiles[k]
			worth := e.valueOf(j, k)
			if k == js.cur {
				worth = kept(j)
			}
			if p.Demand.GPUs != len(js.curGPUs) || gain+worth <= bestGain {
				continue
			}
			if acc.add(js.curGPUs, p) != "" {
				continue
			}
			acc.sub(js.curGPUs, p)
			if e.loudBeside(b, j, k) {
				continue
			}
			best, bestGain = k, gain+worth
		}
		if best < 0 {
			for _, x := range e.evict {
				acc.add(b.gpus[x], &e.jobs[x].job.Profiles[b.choice[x]])
			}
			if b.gpus[j] != nil {
				acc.add(b.gpus[j], &js.job.Profiles[b.choice[j]])
			}
			continue
		}
		acc.add(js.curGPUs, &js.job.Profiles[best])
		for _, x := range e.evict {
			b.choice[x], b.gpus[x], b.code[x], b.reason[x] = -1, nil, elastico.Unplaceable, restoreReason
		}
		b.choice[j], b.gpus[j], b.code[j], b.reason[j] = best, js.curGPUs, elastico.Scheduled, ""
		e.restored = append(e.restored, j)
		for _, r := range js.curGPUs {
			g := e.global(r)
			e.restJob = append(e.restJob, j)
			e.restNext = append(e.restNext, e.restHead[g])
			e.restHead[g] = int32(len(e.restJob))
		}
	}
	if len(e.restored) > 0 {
		b.score = e.score(b)
	}
}

// loudBeside reports whether running job j, put back where it runs under
// family index k, would share a GPU with a job of plan b (other than those
// restore evicts) that the sharing rule says it may not share with: its
// rule for keeping a pair, e.limKeep, beside a job that shares the GPU as before, the
// rule at today's queue beside any other.
func (e *epoch) loudBeside(b *result, j, k int32) bool {
	if !e.memo.on() {
		return false
	}
	js := &e.jobs[j]
	loud := func(x int32, g int32) bool {
		limit := e.lim
		if k == js.cur && e.sharedAsBefore(b, x, g) {
			limit = e.limKeep
		}
		return e.loudPair(j, k, x, b.choice[x], limit)
	}
	for _, r := range js.curGPUs {
		g := e.global(r)
		on := e.on(g)
		for _, x := range on {
			if x != j && slices.Contains(b.gpus[x], r) && !slices.Contains(e.evict, x) && loud(x, g) {
				return true
			}
		}
		for i := e.restHead[g]; i > 0; i = e.restNext[i-1] {
			if x := e.restJob[i-1]; !slices.Contains(on, x) && loud(x, g) {
				return true
			}
		}
	}
	return false
}

// revertGroups puts back, as the State has them, each group of changes of
// plan b that gains less than it costs. A group is the changed jobs (the
// running jobs b preempts, moves or reshapes, and the waiting jobs it
// starts) linked through the GPUs they leave or take: undoing a group
// gives each of its GPUs back exactly the jobs it holds now. It gains what
// the group's running jobs are worth where they run (value and keepBonus)
// less what all its jobs are worth in b. restore undoes single
// displacements; a reshuffle in which a gang gives way so that running
// jobs grow onto its GPUs links them all, and only a group can weigh it.
//
// Groups share their nodes' CPU and RAM, which GPUs do not link: a group
// whose running jobs no longer fit where they ran, because another group
// took the node's CPU, is linked with every change on those nodes and
// weighed again (at most maxRevertRounds times), so that a calm undo is
// not lost to a start beside it.
func (e *epoch) revertGroups() {
	if e.cfg.Pinned {
		return
	}
	b := &e.best
	e.tight = e.tight[:0]
	reverted := false
	for range maxRevertRounds {
		if !e.linkChanges(b) {
			break
		}
		for _, n := range e.tight {
			first := e.nodeFirst[n]
			for k := range e.st.Cluster.Nodes[n].GPUs {
				e.union(first, first+int32(k))
			}
		}
		tight := len(e.tight)
		reverted = e.revertRound(b) || reverted
		if len(e.tight) == tight {
			break
		}
	}
	if reverted {
		b.score = e.score(b)
	}
}

// maxRevertRounds bounds how often revertGroups links groups by node and
// weighs them again; each round links at least one more node.
const maxRevertRounds = 3

// revertRound weighs the groups e.uf links and undoes those that are to be
// undone. It adds to e.tight the nodes of each such group that did not fit
// back, and reports whether it undid any.
func (e *epoch) revertRound(b *result) bool {
	e.weighGroups(b)
	// Undo the groups that gain or move a settled job, if their jobs as
	// before are not loud and fit.
	if e.memo.on() && len(e.sqOff) > 0 {
		for g := range int32(e.ngpu) {
			root := e.find(g)
			if !e.undoes(root) {
				continue
			}
			e.curPairs(g, func(a, b int32, sa, sb float64) {
				if e.keepExcess(a, b, sa, sb) > 0 {
					e.blocked[root] = true
				}
			})
		}
	}
	root := func(j int32) int32 { return e.find(e.anyGPU(b, j)) }
	slices.SortStableFunc(e.displaced, func(x, y int32) int { return cmp.Compare(root(x), root(y)) })
	acc := e.accountOf(b)
	reverted := false
	for lo := 0; lo < len(e.displaced); {
		r := root(e.displaced[lo])
		hi := lo + 1
		for hi < len(e.displaced) && root(e.displaced[hi]) == r {
			hi++
		}
		group := e.displaced[lo:hi]
		lo = hi
		if !e.undoes(r) {
			continue
		}
		why := restoreReason
		if e.gain[r] <= 0 {
			why = calmReason
		}
		if e.undoGroup(b, acc, group, why) {
			reverted = true
			continue
		}
		for _, j := range group {
			if js := &e.jobs[j]; js.running {
				for _, g := range js.curGPUs {
					if !slices.Contains(e.tight, int32(g.Node)) {
						e.tight = append(e.tight, int32(g.Node))
					}
				}
			}
		}
	}
	return reverted
}

// linkChanges lists plan b's changed jobs in e.displaced (the running jobs
// it preempts, moves or reshapes, and the waiting jobs it starts) and
// links the GPUs each leaves and takes into groups (e.uf). It reports
// whether any job changed.
func (e *epoch) linkChanges(b *result) bool {
	e.uf = slab.Resize(e.uf, e.ngpu)
	for g := range e.uf {
		e.uf[g] = int32(g)
	}
	e.displaced = e.displaced[:0]
	for j := range e.jobs {
		js := &e.jobs[j]
		changed := js.running && js.curOpt >= 0 && !e.unchanged(b, int32(j)) || !js.running && b.gpus[j] != nil
		if !changed {
			continue
		}
		e.displaced = append(e.displaced, int32(j))
		first := int32(-1)
		link := func(gs []elastico.GPURef) {
			for _, r := range gs {
				g := e.global(r)
				if first < 0 {
					first = g
				} else {
					e.union(first, g)
				}
			}
		}
		if js.running {
			link(js.curGPUs)
		}
		link(b.gpus[j])
	}
	return len(e.displaced) > 0
}

// weighGroups sums, by group root, what undoing each group gains (e.gain),
// and marks the groups that cannot be undone (e.blocked: a running job of
// it cannot go back), that start a job GPUs were held for (e.held), and
// that move a job the calm settled (e.calmed).
func (e *epoch) weighGroups(b *result) {
	e.gain = slab.Zeroed(e.gain, e.ngpu)
	e.blocked = slab.Zeroed(e.blocked, e.ngpu)
	e.calmed = slab.Zeroed(e.calmed, e.ngpu)
	e.held = slab.Zeroed(e.held, e.ngpu)
	for _, j := range e.displaced {
		js := &e.jobs[j]
		root := e.find(e.anyGPU(b, j))
		if b.gpus[j] != nil {
			e.gain[root] -= e.valueOf(j, b.choice[j])
		}
		switch {
		case js.running && e.againstRules(int(j)) != "":
			e.blocked[root] = true // it cannot go back
		case js.running:
			e.gain[root] += e.valueOf(j, js.cur) + js.scale*js.keep
			e.calmed[root] = e.calmed[root] || e.calmSettled(j)
		default:
			e.held[root] = e.held[root] || e.heldFor(int(j)) != nil // a job waits for these GPUs
			e.calmed[root] = e.calmed[root] || e.calmSettled(j)
		}
	}
}

// undoes reports whether the group at root is to be undone: it gains, and
// starts no job GPUs were held for, or it moves a settled job. A group
// that displaces a settled job is undone even where it starts a job on
// GPUs held for it: a reservation waits for the jobs on its GPUs to leave,
// it does not displace them (see reserve).
func (fs *finalState) undoes(root int32) bool {
	return !fs.blocked[root] && (fs.gain[root] > 0 && !fs.held[root] || fs.calmed[root])
}

// undoGroup puts group's jobs back as the State has them in plan b (the
// waiting ones wait, for reason why), if the running ones fit as they
// were beside the rest of the plan (acc, which it keeps up to date). It
// reports whether it did.
func (mk *marketState) undoGroup(b *result, acc *account, group []int32, why string) bool {
	for _, j := range group {
		if b.gpus[j] != nil {
			acc.sub(b.gpus[j], &mk.jobs[j].job.Profiles[b.choice[j]])
		}
	}
	fits := 0
	for _, j := range group {
		js := &mk.jobs[j]
		if js.running && acc.add(js.curGPUs, &js.job.Profiles[js.cur]) != "" {
			break
		}
		fits++
	}
	if fits < len(group) {
		for _, j := range group[:fits] {
			if js := &mk.jobs[j]; js.running {
				acc.sub(js.curGPUs, &js.job.Profiles[js.cur])
			}
		}
		for _, j := range group {
			if b.gpus[j] != nil {
				acc.add(b.gpus[j], &mk.jobs[j].job.Profiles[b.choice[j]])
			}
		}
		return false
	}
	for _, j := range group {
		js := &mk.jobs[j]
		if js.running {
			b.choice[j], b.gpus[j], b.code[j], b.reason[j] = js.cur, js.curGPUs, elastico.Scheduled, ""
		} else {
			b.choice[j], b.gpus[j], b.code[j], b.reason[j] = -1, nil, elastico.Unplaceable, why
		}
	}
	return true
}

// anyGPU is one GPU job j holds now or in plan b.
func (e *epoch) anyGPU(b *result, j int32) int32 {
	if js := &e.jobs[j]; js.running {
		return e.global(js.curGPUs[0])
	}
	return e.global(b.gpus[j][0])
}

func (fs *finalState) find(g int32) int32 {
	for fs.uf[g] != g {
		fs.uf[g] = fs.uf[fs.uf[g]]
		g = fs.uf[g]
	}
	return g
}

func (fs *finalState) union(a, b int32) {
	a, b = fs.find(a), fs.find(b)
	if a < b {
		fs.uf[b] = a
	} else if b < a {
		fs.uf[a] = b
	}
}
