package pds

// retune gives every job that the plan starts, moves or reshapes anyway
// its most valuable configuration of the same GPU count and model that
// fits its GPUs in the plan, when it has them to itself. The market
// walks a job down the batch sizes of a GPU count as each one it bids
// finds no node (unplacedPenalty, carried to the next epochs), and a later
// round then places the job under the lesser one: on Pollux's trace at
// 512 GPUs and load 1.5, CIFAR-10 ran 14 % of its time at a batch size
// of 257 per GPU on four GPUs, which does 3 % less than 182. The job
// restarts either way, so the better configuration costs nothing more.
// A job that shares a GPU keeps the configuration its pair was judged
// under.
func (e *epoch) retune() {
	b := &e.best
	var acc *account
	changed := false
	for j := range e.jobs {
		gs := b.gpus[j]
		k := b.choice[j]
		if gs == nil || k < 0 || e.unchanged(b, int32(j)) {
			continue
		}
		best := e.bestOfCount(int32(j), k)
		if best == k {
			continue
		}
		if acc == nil {
			acc = e.accountOf(b)
		}
		shared := false
		for _, r := range gs {
			shared = shared || acc.jobs[e.global(r)] > 1
		}
		if shared {
			continue
		}
		ps := e.jobs[j].job.Profiles
		acc.sub(gs, &ps[k])
		if acc.add(gs, &ps[best]) != "" {
			acc.add(gs, &ps[k])
			continue
		}
		b.choice[j] = best
		changed = true
	}
	if changed {
		b.score = e.score(b)
	}
}
