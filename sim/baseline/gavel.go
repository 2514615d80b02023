package baseline

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/elastico/elastico"
)

// Gavel is a Gavel-like scheduler (Narayanan et al., OSDI'20, after its
// code: scheduler/policies/max_min_fairness.py, MaxMinFairnessPolicyWithPerf,
// and the round mechanism of scheduler/scheduler.py) for clusters of
// several GPU models. Its allocation X[j][m] is the fraction of time job j
// should run on model m, the solution of the linear program
//
//	maximize min_j Σ_m X[j][m]·T[j][m]·s_j / (w_j · P_j)
//	s.t. Σ_m X[j][m] ≤ 1, Σ_j X[j][m]·s_j ≤ G_m, X ≥ 0
//
// with T[j][m] the job's throughput on model m (the family's profile of its
// requested configuration on that model), s_j its GPU count (scale factor),
// w_j its Weight, P_j its throughput under an equal share of every model
// (Σ_m T[j][m]·G_m / Σ_m G_m, Gavel's ProportionalPolicy) and G_m the
// model's GPUs: heterogeneity-aware max-min fairness over effective
// throughput, solved over classes of identical jobs (same coefficients and
// scale, which some optimum treats alike) by this package's revised
// simplex, tested against gonum's lp.Simplex on the unmerged LP. It is
// recomputed at the first round after a job arrives or finishes.
//
// Time is cut into rounds (Round, Gavel's 6 minutes). At the start of a
// round every job gets a priority on every model, X[j][m] over the
// fraction of the model's time the job has received since the allocation
// was last recomputed (X·10⁹ before it has received any, 0 where X is 0),
// Gavel's _update_priorities. Model by model, fastest first, jobs are
// taken in decreasing priority (then deficit, the time owed to it since
// earlier allocations, then X, then arrival), each that is not yet
// scheduled, makes progress on the model and whose gang fits the model's
// GPUs left; jobs of priority 0 fill what is left, as in Gavel. A scheduled
// job that ran on the same model keeps its GPUs (no restart); others are
// preempted, and the newly scheduled start on free whole GPUs of their
// model, largest gang first. Between round starts nothing changes: an
// arriving job waits for the next round, and GPUs a finishing job frees
// stay idle until then.
//
// Jobs keep their requested configuration (the first profile of the
// family) on every model: batch size and GPU count, under the family's
// profile of that configuration on the model they run on.
//
// With SpaceSharing it is Gavel's +SS variant (GavelSSName, after
// MaxMinFairnessPolicyWithPacking in scheduler/policies/max_min_fairness.py
// and the combinations of scheduler/scheduler.py): the LP also allocates
// time to pairs of jobs of the same scale factor running together on the
// same GPUs, each at its throughput alone over the Predictor's slowdown
// beside the other (gavel_pack.go), and the rounds give priorities to, and
// schedule, pairs as well as single jobs; a pair's time received is its
// own, as in Gavel (gavel_ss.go). Which pairs it may consider: the two
// jobs' scale factors are equal (Gavel's rule), both run on the model, and
// they fit one of its GPUs as the simulator requires of any sharing (SM
// shares summing to at most 1, memory within the GPU's, every GPU of the
// model Shared); a pair whose two speeds sum to at most 1 is left out, as
// the jobs taking turns alone do as much with no more GPU time.
//
// Where it differs from Gavel:
//   - Pair throughputs come from the Predictor (in the replay, elastico's
//     own, which never saw the ground truth's pairs: the fair comparison),
//     not from Gavel's measured pair throughputs or its estimator, which
//     matches jobs to measured reference jobs.
//   - The packed LP merges identical jobs into classes, and the pairs of
//     two classes' jobs into one column (Gavel's job-type variant,
//     get_allocation_using_job_type_throughputs, merges by type too);
//     the time of a class pair is spread evenly over its pairs of jobs.
//   - Pairs with no time allocated are not tried in a round; Gavel's
//     queue holds every pair, at priority 0, after the allocated ones.
//     A pair one of whose jobs already runs alone on the model takes that
//     job's GPUs (the other joins it); Gavel places each combination anew
//     unless the same combination ran there.
//   - Without SpaceSharing GPUs are whole, as under Gavel's
//     MaxMinFairnessPolicyWithPerf.
//   - The LP's optimum is rarely unique. Gavel takes the point its
//     interior-point solver returns; here, among the allocations with the
//     optimal minimum, the one with the most Σ_j of the objective's terms
//     (a second LP), deterministic and leaving no capacity unallocated
//     that some job could use. That one is not always unique either
//     (identical jobs, or others trading GPUs at equal worth): then the
//     simplex's vertex, with the same x for identical jobs.
//   - Gavel recomputes the allocation and resets the time received at
//     most every 1,920 s (minimum_time_between_allocation_resets), so an
//     arriving job can wait that long for an allocation; here at the first
//     round after every change, as the paper describes.
//   - Throughputs alone are the profiles' (an oracle, as every policy here
//     gets them); Gavel measures unseen ones online.
//   - Models are ordered by their mean speed over the jobs' equal-share
//     throughputs (Gavel hard-codes V100, P100, K80, fastest first), and
//     gangs are placed best fit (Gavel strides over servers in order).
//   - Time received is measured from the State at each epoch (a running
//     job is credited the time since the previous epoch on its model);
//     Gavel counts its micro-tasks' run times.
//
// Gavel keeps its allocation, round clock and time received between calls,
// so a Gavel serves one cluster: use a fresh one per simulated run. The
// zero value is ready to use and safe for concurrent use; do not copy one
// after its first Epoch.
type Gavel struct {
	// Round is the round length; zero means GavelRound.
	Round time.Duration
	// SpaceSharing makes it Gavel's +SS variant (GavelSSName): the LP
	// also allocates time to pairs of jobs sharing the same GPUs, and the
	// rounds schedule pairs as well as single jobs (gavel_pack.go,
	// gavel_ss.go).
	SpaceSharing bool
	// Predictor answers how much slower a job runs beside another on one
	// GPU, for SpaceSharing; nil means iac.Default(), elastico's default
	// (pds.Config.Predictor).
	Predictor elastico.Predictor

	mu sync.Mutex
	gs gavelState
}

// GavelName is the policy's name in reports.
const GavelName = "gavel"

// GavelRound is Gavel's default round (time_per_iteration, 360 s). A host
// should consult Gavel at least this often while jobs run or wait: its
// rounds start only at epochs.
const GavelRound = 6 * time.Minute

var _ elastico.Scheduler = (*Gavel)(nil)

// gavelState is what Gavel remembers between epochs, by job ID and model.
type gavelState struct {
	started  bool
	last     time.Time // the previous epoch's Now
	roundEnd time.Time
	lastSet  time.Time // when the allocation was last recomputed
	alloc    map[string]map[string]float64
	jobTime  map[string]map[string]float64 // seconds on each model since lastSet
	modTime  map[string]float64            // Σ over jobs of jobTime
	deficit  map[string]map[string]float64
	// With SpaceSharing: the pairs with time allocated, by pairKey, and
	// by model index those with time on it, in key order; pairs' deficits
	// (by model index); the models indexed; the predictor's answers, and
	// the default predictor.
	pairs      map[string]*gavelPair
	pairsOn    [][]*gavelPair
	pairDef    map[string][]float64
	pairModels []string
	slow       map[[2]elastico.Profile]float64
	pred       elastico.Predictor
}

// Epoch implements elastico.Scheduler.
func (g *Gavel) Epoch(ctx context.Context, st *elastico.State) (*elastico.Plan, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	round := g.Round
	if round == 0 {
		round = GavelRound
	}
	if round < 0 {
		return nil, errorf("Gavel.Round is %v, want > 0 (0: %v)", g.Round, GavelRound)
	}
	v, err := newView(st)
	if err != nil {
		return nil, err
	}
	if st.Now.IsZero() {
		return nil, errorf("State.Now is the zero time: Gavel's rounds need the epoch's time")
	}
	in, err := gavelInputs(v)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	s := &g.gs
	if s.started && st.Now.Before(s.last) {
		return nil, errorf("State.Now %v is before the previous epoch's %v: a Gavel serves one cluster's epochs in order", st.Now, s.last)
	}
	if g.SpaceSharing {
		s.creditPairs(v)
	} else {
		s.credit(v, in)
	}
	pl := newPlanner(v)
	if s.started && st.Now.Before(s.roundEnd) {
		for i := range st.Jobs {
			if st.Jobs[i].Running == nil {
				pl.decisions[i].Status.Reasons = []string{fmt.Sprintf("waiting for Gavel's next round at %s", s.roundEnd.Format(time.RFC3339))}
			}
		}
		return pl.plan(), nil
	}
	s.started = true
	s.roundEnd = st.Now.Add(round)
	if g.SpaceSharing {
		if s.changed(st) {
			pred, err := g.predictor()
			if err != nil {
				return nil, err
			}
			x, px, err := s.packedAlloc(v, in, pred)
			if err != nil {
				return nil, err
			}
			s.resetPairs(st, in, x, px, round)
		}
		s.schedulePairs(pl, in)
		return pl.plan(), nil
	}
	if s.changed(st) {
		x, _, err := maxMin(in.coef, in.scale, in.gpus)
		if err != nil {
			return nil, err
		}
		s.reset(st, in, x, round)
	}
	s.schedule(pl, in)
	return pl.plan(), nil
}

// gavelIn is one epoch's inputs to the LP and the rounds, by job index
// and model index.
type gavelIn struct {
	models []string
	gpus   []float64             // GPUs of each model
	prof   [][]*elastico.Profile // the requested configuration on each model (nil: none)
	coef   [][]float64           // the LP's objective terms
	scale  []float64
	speed  []int // model indices, fastest first
}

// gavelInputs reads the throughputs and builds the LP's coefficients; bad
// throughputs or weights are errors naming the job and the field.
func gavelInputs(v *view) (*gavelIn, error) {
	st := v.st
	ms, n := v.models()
	in := &gavelIn{models: ms, gpus: make([]float64, len(ms))}
	total := 0.0
	for m := range ms {
		in.gpus[m] = float64(n[m])
		total += in.gpus[m]
	}
	mean := make([]float64, len(ms))
	for i := range st.Jobs {
		j := &st.Jobs[i]
		if w := j.Weight; w < 0 || math.IsNaN(w) || math.IsInf(w, 0) {
			return nil, errorf("job %q: Weight is %g, want ≥ 0 and finite (0: 1)", j.ID, w)
		}
		req := requested(j)
		row := make([]*elastico.Profile, len(ms))
		tput := make([]float64, len(ms))
		prop := 0.0
		for m, model := range ms {
			q := onModel(j, req, model)
			if q == nil {
				continue
			}
			if t := q.Throughput; !(t > 0) || math.IsInf(t, 0) {
				return nil, errorf("job %q: configuration %q: Throughput is %g, want positive and finite", j.ID, q.Config.ID, t)
			}
			row[m], tput[m] = q, q.Throughput
			prop += tput[m] * in.gpus[m] / total
		}
		c := make([]float64, len(ms))
		sf := float64(req.Demand.GPUs)
		for m := range ms {
			if prop > 0 {
				c[m] = tput[m] * sf / (j.EffectiveWeight() * prop)
				mean[m] += tput[m] / prop
			}
		}
		in.prof = append(in.prof, row)
		in.coef = append(in.coef, c)
		in.scale = append(in.scale, sf)
	}
	in.speed = make([]int, len(ms))
	for m := range in.speed {
		in.speed[m] = m
	}
	slices.SortStableFunc(in.speed, func(a, b int) int { return cmp.Compare(mean[b], mean[a]) })
	return in, nil
}

// credit adds the time since the previous epoch to every running job, on
// the model it runs on.
func (s *gavelState) credit(v *view, in *gavelIn) {
	st := v.st
	if s.started {
		dt := st.Now.Sub(s.last).Seconds()
		for i := range st.Jobs {
			gs := v.jobGPUs[i]
			if gs == nil || s.jobTime[st.Jobs[i].ID] == nil {
				continue
			}
			m := v.gpus[gs[0]].model
			s.jobTime[st.Jobs[i].ID][m] += dt
			s.modTime[m] += dt
		}
	}
	s.last = st.Now
}

// changed reports whether the State's jobs differ from those of the
// allocation (an arrival or a completion).
func (s *gavelState) changed(st *elastico.State) bool {
	if s.alloc == nil || len(s.alloc) != len(st.Jobs) {
		return true
	}
	for i := range st.Jobs {
		if _, ok := s.alloc[st.Jobs[i].ID]; !ok {
			return true
		}
	}
	return false
}

// reset installs a new allocation, as Gavel's _reset_time_run_so_far:
// each job's deficit grows by the time it should have had under the old
// allocation less the time it had, and the time received restarts at half
// a round for every job and model.
func (s *gavelState) reset(st *elastico.State, in *gavelIn, x [][]float64, round time.Duration) {
	elapsed := st.Now.Sub(s.lastSet).Seconds()
	half := round.Seconds() / 2
	deficit := make(map[string]map[string]float64, len(st.Jobs))
	alloc := make(map[string]map[string]float64, len(st.Jobs))
	jobTime := make(map[string]map[string]float64, len(st.Jobs))
	s.modTime = make(map[string]float64, len(in.models))
	for i := range st.Jobs {
		id := st.Jobs[i].ID
		deficit[id] = make(map[string]float64, len(in.models))
		alloc[id] = make(map[string]float64, len(in.models))
		jobTime[id] = make(map[string]float64, len(in.models))
		for m, model := range in.models {
			d := s.deficit[id][model]
			if old, ok := s.jobTime[id]; ok && !s.lastSet.IsZero() {
				d += s.alloc[id][model]*elapsed - (old[model] - half)
			}
			deficit[id][model] = d
			alloc[id][model] = x[i][m]
			jobTime[id][model] = half
			s.modTime[model] += half
		}
	}
	s.deficit, s.alloc, s.jobTime, s.lastSet = deficit, alloc, jobTime, st.Now
}

// gavelEntry is one job's place in one model's queue.
type gavelEntry struct {
	i, m                 int
	prio, deficit, alloc float64
	rank                 int
}

// schedule runs one round: it picks the jobs of every model by priority
// and places them in pl.
func (s *gavelState) schedule(pl *planner, in *gavelIn) {
	v, st := pl.v, pl.v.st
	rank := make([]int, len(st.Jobs))
	for r, i := range fifo(st) {
		rank[i] = r
	}
	left := slices.Clone(in.gpus)
	chosen := make([]int, len(st.Jobs))
	for i := range chosen {
		chosen[i] = -1
	}
	var order []gavelEntry // in the order picked
	for _, m := range in.speed {
		model := in.models[m]
		var q []gavelEntry
		for i := range st.Jobs {
			if in.prof[i][m] == nil {
				continue // Gavel skips jobs of zero throughput on the model
			}
			id := st.Jobs[i].ID
			x := s.alloc[id][model]
			e := gavelEntry{i: i, m: m, deficit: s.deficit[id][model], alloc: x, rank: rank[i]}
			if x > 0 {
				e.prio = x * 1e9
				if s.modTime[model] > 0 {
					if f := s.jobTime[id][model] / s.modTime[model]; f > 0 {
						e.prio = x / f
					}
				}
			}
			q = append(q, e)
		}
		slices.SortFunc(q, func(a, b gavelEntry) int {
			if c := cmp.Compare(b.prio, a.prio); c != 0 {
				return c
			}
			if c := cmp.Compare(b.deficit, a.deficit); c != 0 {
				return c
			}
			if c := cmp.Compare(b.alloc, a.alloc); c != 0 {
				return c
			}
			return cmp.Compare(a.rank, b.rank)
		})
		for _, e := range q {
			if left[m] == 0 {
				break
			}
			if chosen[e.i] >= 0 || in.scale[e.i] > left[m] {
				continue
			}
			left[m] -= in.scale[e.i]
			chosen[e.i] = m
			order = append(order, e)
		}
	}
	// Preempt what runs elsewhere or not at all, so that its GPUs are free.
	for i := range st.Jobs {
		gs := v.jobGPUs[i]
		if gs == nil {
			continue
		}
		if m := chosen[i]; m < 0 || v.gpus[gs[0]].model != in.models[m] {
			pl.wait(i, elastico.Preempted, "Gavel round: jobs of higher priority (allocation over time received) take this model's GPUs")
		}
	}
	// Start the others on free whole GPUs, largest gang first.
	slices.SortStableFunc(order, func(a, b gavelEntry) int { return cmp.Compare(in.scale[b.i], in.scale[a.i]) })
	for _, e := range order {
		if v.jobGPUs[e.i] != nil {
			continue // kept on its GPUs
		}
		p := in.prof[e.i][e.m]
		gs := v.wholeGPUs(p)
		if gs == nil {
			pl.wait(e.i, elastico.Unplaceable, fmt.Sprintf("Gavel round: picked for %s, but no %d whole GPUs of it fit (nodes' GPUs or host resources)", in.models[e.m], p.Demand.GPUs))
			continue
		}
		pl.assign(e.i, p, gs)
	}
	for i := range st.Jobs {
		if chosen[i] < 0 && st.Jobs[i].Running == nil {
			pl.decisions[i].Status = elastico.Status{Code: elastico.Unaffordable, Reasons: []string{"Gavel round: jobs of higher priority (allocation over time received) hold the GPUs"}}
		}
	}
}
