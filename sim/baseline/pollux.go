package baseline

import (
	"cmp"
	"context"
	"math"
	"slices"
	"time"

	"github.com/elastico/elastico"
)

// Pollux is a Pollux-like scheduler (Qiao et al., OSDI'21, §4.2, as the
// authors' simulator implements it: petuum/adaptdl, branch osdi21-artifact,
// simulator/pollux.py). Every epoch it reallocates the whole cluster: each
// job gets a GPU count a_j (0: it waits) and, for that count, the
// configuration of its family with the highest goodput (Profile.Goodput:
// throughput × statistical efficiency; Pollux picks the batch size that
// maximizes goodput for the allocation), so as to maximize
//
//	FITNESS_p = (1/J · Σ_j (SPEEDUP_j(a_j) + 10⁻³)^p)^(1/p)
//
// where SPEEDUP_j(a) is the goodput on a GPUs over the goodput at the job's
// fair share, ⌈G/J⌉ GPUs of the cluster's G (the best configuration on at
// most that many), scaled as Pollux scales it (by the job's dominant
// per-replica share of GPUs, CPU and RAM, times the number of nodes), and
// p is the fairness knob (P, default −1). A job whose allocation changes
// (it starts, resumes, moves or is reshaped) has its speedup multiplied by
// Pollux's restart penalty
//
//	(T − n·δ) / (T + δ)
//
// with T the job's age (State.Now − Arrival), n the restarts it has had
// (State.Carry.Restarts, which the plan carries forward) and δ what a
// restart costs it (Job.RestartTime). GPUs are whole and never shared (no
// co-location); a gang goes on one node when one node can hold it, and at
// most one job spread over several nodes uses any node (Pollux's rule).
// Job.Floor is respected; Weight and Priority are not read (Pollux has
// neither).
//
// Where it differs from Pollux:
//   - Search. Pollux searches allocation matrices (jobs × nodes) with a
//     genetic algorithm (NSGA-II, 100 generations of 100). Here the
//     objective, a sum of one term per job for any p, is maximized exactly
//     over GPU counts (a knapsack, by dynamic programming), and the counts
//     are then placed, best fit; a count that cannot be placed (fragmented
//     nodes) falls back to the job's present assignment or a smaller count.
//     It is deterministic; ties (exact, or below float64's precision) go
//     to running jobs, then in Pollux's job order (least attained service,
//     then arrival), which in Pollux orders the genetic algorithm's repair.
//   - Goodput. Pollux fits its throughput model and each job's gradient
//     noise scale online, as the job runs, and models goodput for any
//     replica count, node count and batch size; here it is the family's,
//     given (an oracle, as elastico's policy gets it too): its GPU counts
//     and batch sizes, with every replica on one node (the profiles'
//     throughput), and the fair share rounded down to a count the family
//     has.
//   - Restart delay. Pollux's δ is a constant 30 s; here it is each job's
//     Job.RestartTime (RestartTime, then 30 s, when zero).
//   - Batch size. Pollux's agent retunes the batch size without a restart;
//     here a change of configuration restarts the job, so it is penalized
//     as a reallocation.
//   - GPU models. Pollux assumes one. On several, the knapsack counts GPUs
//     of any model, and a count goes on the fastest model with room: the
//     job's configuration of that count on each model, best goodput first
//     (within a count, jobs that lose most off their best model are placed
//     first). A job that keeps its count keeps its GPUs, and its speedup
//     there is against the fair share on its own model.
//   - Pollux's exploration limit (at most twice the replicas profiled) and
//     cluster autoscaling are left out: the family is known, the cluster
//     fixed.
//
// The zero value is ready to use and safe for concurrent use.
type Pollux struct {
	// P is the fairness knob: the exponent of the power mean of the jobs'
	// speedups that is maximized. Zero means Pollux's default −1; lower is
	// fairer, 1 maximizes the sum of speedups. It must be finite (the
	// geometric mean, p = 0, is not offered: zero is the default). Far below
	// −1 (about −5 and lower) the term of a job without GPUs, 10⁻³ to the
	// power p, swamps the others beyond float64's precision, as in Pollux's
	// own code, and ties decide: they keep running jobs where they are.
	P float64
	// RestartTime is δ for jobs whose Job.RestartTime is zero; zero means
	// Pollux's 30 s.
	RestartTime time.Duration
}

// PolluxName is the policy's name in reports.
const PolluxName = "pollux"

// PolluxInterval is Pollux's scheduling interval: a host should consult
// Pollux at least this often while jobs run or wait, since the restart
// penalty eases as the jobs age.
const PolluxInterval = time.Minute

// polluxDelay is δ when neither the job nor the policy sets one: the 30 s
// Pollux's simulator charges a reallocation.
const polluxDelay = 30 * time.Second

// polluxEps is what Pollux adds to every scaled speedup before the power:
// for p < 0 a job left without GPUs weighs 1/ε, not infinity.
const polluxEps = 1e-3

var _ elastico.Scheduler = Pollux{}

// pollOpt is one GPU count a job may get.
type pollOpt struct {
	gpus int
	p    *elastico.Profile // the configuration it runs under (nil for 0 GPUs)
	u    float64           // the job's term of the objective
	// keep: on the GPUs the job holds (a restart only if p is not its
	// present configuration).
	keep bool
}

// pollJob is one job's options and the option allocated so far.
type pollJob struct {
	i, rank int // index into State.Jobs; rank in Pollux's job order
	opts    []pollOpt
	at      int
}

// Epoch implements elastico.Scheduler.
func (px Pollux) Epoch(ctx context.Context, st *elastico.State) (*elastico.Plan, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p := px.P
	if p == 0 {
		p = -1
	}
	if math.IsNaN(p) || math.IsInf(p, 0) {
		return nil, errorf("Pollux.P is %g, want a finite exponent", px.P)
	}
	if px.RestartTime < 0 {
		return nil, errorf("Pollux.RestartTime is %v, want ≥ 0", px.RestartTime)
	}
	v, err := newView(st)
	if err != nil {
		return nil, err
	}
	if st.Now.IsZero() {
		return nil, errorf("State.Now is the zero time: Pollux's restart penalty needs each job's age")
	}
	jobs, err := px.options(v, p)
	if err != nil {
		return nil, err
	}
	allocate(jobs, len(v.gpus))
	pl := newPlanner(v)
	placePollux(pl, jobs)
	plan := pl.plan()
	plan.Carry.Restarts = countRestarts(st, plan)
	return plan, nil
}

// options builds every job's options, in Pollux's job order.
func (px Pollux) options(v *view, p float64) ([]pollJob, error) {
	st := v.st
	util := func(s float64) float64 {
		if p < 0 {
			return -math.Pow(s+polluxEps, p)
		}
		return math.Pow(s+polluxEps, p)
	}
	var cpu, ram, maxMem float64
	for _, n := range v.nodes {
		cpu += n.cpu
		ram += n.ram
	}
	for _, g := range v.gpus {
		maxMem = max(maxMem, g.mem)
	}
	total := len(v.gpus)
	jobs := make([]pollJob, 0, len(st.Jobs))
	for r, i := range polluxOrder(st) {
		j := &st.Jobs[i]
		if j.RestartTime < 0 {
			return nil, errorf("job %q: RestartTime is %v, want ≥ 0", j.ID, j.RestartTime)
		}
		delta := cmp.Or(j.RestartTime, px.RestartTime, polluxDelay).Seconds()
		// Pollux's dominant share of one replica, and the fair share.
		req := requested(j)
		ds := 1 / float64(max(total, 1))
		if cpu > 0 {
			ds = max(ds, req.Demand.CPU/cpu)
		}
		if ram > 0 {
			ds = max(ds, req.Demand.RAM/ram)
		}
		fair := int(math.Ceil(1 / ds / float64(len(st.Jobs))))
		scale := ds * float64(len(v.nodes))
		var cur *elastico.Profile
		if j.Running != nil {
			cur, _ = j.Profile(j.Running.ConfigID)
		}
		best := bestPerCount(j, total, maxMem, "", cur)
		if len(best) == 0 {
			jobs = append(jobs, pollJob{i: i, rank: r, opts: []pollOpt{{u: util(0)}}})
			continue
		}
		base := fairGoodput(best, fair)
		// A running job's speedup where it stays is measured on its own
		// model: against the best model's fair share, a job running on a
		// slower one would look worth preempting for a waiting job that
		// then lands on the GPUs it leaves, epoch after epoch.
		curBase := base
		if cur != nil {
			curBase = fairGoodput(bestPerCount(j, total, maxMem, cur.Hardware.GPUModel, cur), fair)
		}
		age := max(st.Now.Sub(j.Arrival).Seconds(), 0)
		n := float64(st.Carry.Restarts[j.ID])
		penalty := math.Max(age-n*delta, 0) / (age + delta)
		opts := []pollOpt{{u: util(0)}}
		for _, b := range best {
			o := pollOpt{gpus: b.Demand.GPUs, p: b, u: util(b.Goodput() / base * scale * penalty)}
			if cur != nil && b.Demand.GPUs == cur.Demand.GPUs {
				o.keep = true
				if u := util(cur.Goodput() / curBase * scale); u >= o.u {
					o.p, o.u = cur, u
				}
			}
			opts = append(opts, o)
		}
		jobs = append(jobs, pollJob{i: i, rank: r, opts: opts})
	}
	return jobs, nil
}

// bestPerCount returns, for every GPU count of the job's family that the
// cluster can hold, the configuration with the highest goodput (the first
// on ties) among those at or above the job's floor that run on model (any
// when ""), by GPU count, with cur (the running configuration, or nil)
// added when its count is missing.
func bestPerCount(j *elastico.Job, gpus int, maxMem float64, model string, cur *elastico.Profile) []*elastico.Profile {
	var best []*elastico.Profile
	for k := range j.Profiles {
		f := &j.Profiles[k]
		if f.Demand.GPUs > gpus || f.Demand.GPUMemory > maxMem || (j.Floor > 0 && f.Throughput < j.Floor) || !f.RunsOn(model) {
			continue
		}
		at := slices.IndexFunc(best, func(b *elastico.Profile) bool { return b.Demand.GPUs == f.Demand.GPUs })
		switch {
		case at < 0:
			best = append(best, f)
		case f.Goodput() > best[at].Goodput():
			best[at] = f
		}
	}
	if cur != nil && !slices.ContainsFunc(best, func(b *elastico.Profile) bool { return b.Demand.GPUs == cur.Demand.GPUs }) {
		best = append(best, cur)
	}
	slices.SortStableFunc(best, func(a, b *elastico.Profile) int { return a.Demand.GPUs - b.Demand.GPUs })
	return best
}

// fairGoodput returns the goodput at the fair share: the highest of best's
// on at most fair GPUs, or its smallest count's when it has none.
func fairGoodput(best []*elastico.Profile, fair int) float64 {
	base := best[0].Goodput()
	for _, b := range best {
		if b.Demand.GPUs <= fair {
			base = max(base, b.Goodput())
		}
	}
	return base
}

// polluxOrder returns job indices in the order that breaks ties: running
// jobs first (the allocation keeps what runs when moving gains nothing),
// then, as Pollux orders jobs, least attained service first, then earliest
// arrival, then ID.
func polluxOrder(st *elastico.State) []int {
	order := fifo(st)
	slices.SortStableFunc(order, func(a, b int) int {
		ja, jb := &st.Jobs[a], &st.Jobs[b]
		if ra, rb := ja.Running != nil, jb.Running != nil; ra != rb {
			if ra {
				return -1
			}
			return 1
		}
		return cmp.Compare(ja.Attained, jb.Attained)
	})
	return order
}

// allocate chooses every job's option so as to maximize the sum of the
// jobs' terms with at most free GPUs in all: a knapsack solved exactly by
// dynamic programming over jobs and GPUs (best[g]: the most the jobs so far
// make of at most g GPUs), in O(jobs × GPUs × options).
func allocate(jobs []pollJob, free int) {
	width := free + 1
	best := make([]float64, width)
	next := make([]float64, width)
	choice := make([]uint16, len(jobs)*width)
	for k := range jobs {
		opts := jobs[k].opts
		row := choice[k*width : (k+1)*width]
		for g := range width {
			// Option 0 (no GPUs) always fits; a tie keeps the smaller count.
			v, c := best[g]+opts[0].u, 0
			for o := 1; o < len(opts) && opts[o].gpus <= g; o++ {
				if w := best[g-opts[o].gpus] + opts[o].u; w > v {
					v, c = w, o
				}
			}
			next[g], row[g] = v, uint16(c)
		}
		best, next = next, best
	}
	g := free
	for k := len(jobs) - 1; k >= 0; k-- {
		jobs[k].at = int(choice[k*width+g])
		g -= jobs[k].opts[jobs[k].at].gpus
	}
}

// placePollux turns the chosen options into assignments: jobs that keep
// their GPUs first, then the others, largest gang first, each on whole free
// GPUs of the first model with room (modelMem.choices); a gang that finds
// none falls back to its present assignment if its GPUs are still free,
// else to its next smaller count.
func placePollux(pl *planner, jobs []pollJob) {
	v := pl.v
	st := v.st
	dist := make([]bool, len(v.nodes)) // nodes a spread job uses
	markDist := func(gs []int) {
		if spans(v, gs) {
			for _, g := range gs {
				dist[v.gpus[g].node] = true
			}
		}
	}
	old := make([][]int, len(st.Jobs))
	var moving []int // indices into jobs
	for k := range jobs {
		jb := &jobs[k]
		j := &st.Jobs[jb.i]
		o := jb.opts[jb.at]
		if j.Running != nil && !(o.keep && o.p.Config.ID == j.Running.ConfigID) {
			old[jb.i] = v.jobGPUs[jb.i]
			v.release(jb.i)
		}
		if o.gpus > 0 && !o.keep {
			moving = append(moving, k)
		}
	}
	// Kept jobs, and reshapes in place where the new configuration fits.
	for k := range jobs {
		jb := &jobs[k]
		o := jb.opts[jb.at]
		if !o.keep {
			continue
		}
		j := &st.Jobs[jb.i]
		if o.p.Config.ID != j.Running.ConfigID {
			cur, _ := j.Profile(j.Running.ConfigID)
			p := o.p
			if !fitsOn(v, p, old[jb.i]) {
				p = cur
			}
			pl.assign(jb.i, p, old[jb.i])
		}
		markDist(v.jobGPUs[jb.i])
	}
	mm := newModelMem(v)
	// Within a count, the jobs that lose most off their best model go
	// first, so that a scarce fast model goes to the jobs it speeds up
	// most (on one model every job ties and the order is Pollux's).
	regret := make([]float64, len(jobs))
	for _, k := range moving {
		jb := &jobs[k]
		regret[k] = math.Inf(1)
		if cs := mm.choices(&st.Jobs[jb.i], jb.opts[jb.at].p); len(cs) > 1 {
			regret[k] = cs[0].Goodput() / cs[1].Goodput()
		}
	}
	slices.SortStableFunc(moving, func(a, b int) int {
		if c := cmp.Compare(jobs[b].opts[jobs[b].at].gpus, jobs[a].opts[jobs[a].at].gpus); c != 0 {
			return c
		}
		if c := cmp.Compare(regret[b], regret[a]); c != 0 {
			return c
		}
		return cmp.Compare(jobs[a].rank, jobs[b].rank)
	})
	for _, k := range moving {
		jb := &jobs[k]
		j := &st.Jobs[jb.i]
		placed := false
		for o := jb.at; o > 0 && !placed; o-- {
			for _, p := range mm.choices(j, jb.opts[o].p) {
				if gs := placeWhole(v, p, j.Spread, dist); gs != nil {
					pl.assign(jb.i, p, gs)
					markDist(gs)
					placed = true
					break
				}
			}
			if !placed && o == jb.at && old[jb.i] != nil {
				// Rather than shrink, stay where it is if it still can.
				cur, _ := j.Profile(j.Running.ConfigID)
				if fitsOn(v, cur, old[jb.i]) {
					pl.assign(jb.i, cur, old[jb.i])
					markDist(old[jb.i])
					placed = true
				}
			}
		}
		if !placed {
			pl.wait(jb.i, elastico.Unplaceable, "no whole free GPUs for any of its GPU counts")
		}
	}
	for k := range jobs {
		switch jb := &jobs[k]; {
		case len(jb.opts) == 1:
			pl.wait(jb.i, elastico.Infeasible, "no configuration of its family fits the cluster")
		case jb.at == 0:
			pl.wait(jb.i, elastico.Unaffordable, "the power mean of the jobs' speedups is higher with the GPUs elsewhere")
		}
	}
}

// modelMem is the cluster's GPU models, in the order they first appear,
// with the most memory a GPU of each has.
type modelMem struct {
	models []string
	mem    []float64
}

func newModelMem(v *view) modelMem {
	var mm modelMem
	for _, g := range v.gpus {
		k := slices.Index(mm.models, g.model)
		if k < 0 {
			k = len(mm.models)
			mm.models, mm.mem = append(mm.models, g.model), append(mm.mem, 0)
		}
		mm.mem[k] = max(mm.mem[k], g.mem)
	}
	return mm
}

// choices returns the profiles to place p's GPU count with: p, then the
// count's highest-goodput configuration on each other model of the
// cluster that p does not run on (within its GPUs' memory and above the
// job's floor), best goodput first. On one model it is p alone.
func (mm modelMem) choices(j *elastico.Job, p *elastico.Profile) []*elastico.Profile {
	out := []*elastico.Profile{p}
	for k, m := range mm.models {
		if p.RunsOn(m) {
			continue
		}
		for _, best := range bestPerCount(j, p.Demand.GPUs, mm.mem[k], m, nil) {
			if best.Demand.GPUs == p.Demand.GPUs && !slices.Contains(out, best) {
				out = append(out, best)
			}
		}
	}
	slices.SortStableFunc(out[1:], func(a, b *elastico.Profile) int { return cmp.Compare(b.Goodput(), a.Goodput()) })
	return out
}

// placeWhole picks free GPUs for p's gang: on one node if one can hold it,
// else (when spread is allowed) over nodes no other spread job uses.
func placeWhole(v *view, p *elastico.Profile, spread bool, dist []bool) []int {
	ok := func(g int) bool { return v.free(g) && v.gpus[g].mem >= p.Demand.GPUMemory }
	gs := v.placeGang(p, ok, nil)
	if gs == nil || !spans(v, gs) {
		return gs
	}
	if !spread {
		return nil
	}
	gs = v.placeGang(p, func(g int) bool { return ok(g) && !dist[v.gpus[g].node] }, nil)
	return gs
}

// fitsOn reports whether p's replicas fit gs, which hold nothing: the GPU
// model and memory on every GPU and host resources on every node.
func fitsOn(v *view, p *elastico.Profile, gs []int) bool {
	if len(gs) != p.Demand.GPUs {
		return false
	}
	per := map[int]int{}
	for _, g := range gs {
		if !v.free(g) || v.gpus[g].mem < p.Demand.GPUMemory || !p.RunsOn(v.gpus[g].model) {
			return false
		}
		per[v.gpus[g].node]++
	}
	for n, k := range per {
		if !v.hostFits(n, p, k) {
			return false
		}
	}
	return true
}

// spans reports whether gs lie on more than one node.
func spans(v *view, gs []int) bool {
	for _, g := range gs {
		if v.gpus[g].node != v.gpus[gs[0]].node {
			return true
		}
	}
	return false
}

// countRestarts returns Carry.Restarts for the next epoch: a job's count
// grows by one whenever the plan gives it an assignment it did not have,
// except at its first start, which enters it at 0.
func countRestarts(st *elastico.State, plan *elastico.Plan) map[string]int {
	out := make(map[string]int, len(st.Jobs))
	for i, d := range plan.Decisions {
		j := &st.Jobs[i]
		n, seen := st.Carry.Restarts[j.ID]
		seen = seen || j.Running != nil
		if to := d.Assignment; to != nil && (j.Running == nil || to.ConfigID != j.Running.ConfigID || !sameGPUs(to.GPUs, j.Running.GPUs)) {
			if seen {
				n++
			}
			seen = true
		}
		if seen {
			out[j.ID] = n
		}
	}
	return out
}
