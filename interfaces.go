package elastico

import (
	"context"
	"fmt"
	"math"
	"strconv"
)

// Scheduler decides, once per epoch, which configuration each job runs under
// and where. pds.New returns the default; the simulator's baselines are
// others. Epoch must not keep the State or mutate it.
type Scheduler interface {
	Epoch(ctx context.Context, s *State) (*Plan, error)
}

// Predictor estimates interference between two jobs sharing one GPU.
type Predictor interface {
	// Slowdown returns Ŝ_{victim|aggressor} ≥ 1: how many times slower victim
	// runs when aggressor shares its GPU (1 / decay). It is called in the
	// epoch's inner loop: implementations should not allocate.
	Slowdown(victim, aggressor *Profile) float64
}

// StablePredictor is what a Predictor may also be: one whose answer
// depends on the two profiles alone and never changes once built (a
// trained model, such as iac's MLP). A scheduler may then keep its answers
// from one epoch to the next (pds does, by profile content).
type StablePredictor interface {
	Predictor
	// StableAnswers marks the type; it does nothing.
	StableAnswers()
}

// PriceSolver picks one configuration per job (or none) under capacity: the
// ESP problem (elastic shadow pricing). esp.New returns the default.
type PriceSolver interface {
	// Solve fills sol (reusing its slices) with a choice that never exceeds
	// m.Capacity in any resource.
	Solve(ctx context.Context, m *Market, sol *Solution) error
}

// Market is one ESP problem: bidders (jobs) with options (configurations),
// and the capacity they share.
type Market struct {
	// Capacity is C_eff, in the same units as the options' demands.
	Capacity Vector
	Bidders  []Bidder
	// Prices is where tâtonnement starts (warm start): the previous epoch's
	// prices, per unit of normalized demand. Zero: a cold start.
	Prices Vector
}

// Bidder is one job in the market.
type Bidder struct {
	Weight  float64 // w_j > 0
	Options []Option
}

// Option is one configuration as the market sees it.
type Option struct {
	// Goodput is G̃_j(c) = G_j(c) / max_c G_j(c), in [0, 1], plus what the
	// scheduler adds to every option (pds adds what running at all is
	// worth) and, for a running job's present option, what keeping it
	// saves (pds adds its restart cost there).
	Goodput float64
	// Demand is the configuration's total demand (Demand.Total()).
	Demand Vector
	// Penalty is Γ_j(c) ≥ 0: interference penalty, switching cost and
	// learned penalties, in the same unit as Weight·Goodput.
	Penalty float64
}

// Value returns w·G̃ − Γ: what choosing option o of bidder b is worth before
// prices.
func (b *Bidder) Value(o int) float64 {
	return b.Weight*b.Options[o].Goodput - b.Options[o].Penalty
}

// Solution is a PriceSolver's answer.
type Solution struct {
	// Choice[i] is the chosen option of bidder i, or -1 if it is deferred.
	Choice []int
	// Prices are the final shadow prices per unit of normalized demand
	// (demand divided by capacity).
	Prices Vector
	// Iterations is the number of tâtonnement iterations run.
	Iterations int
}

// Objective returns Σ over chosen options of w·G̃ − Γ: the quantity ESP
// maximizes.
func (m *Market) Objective(choice []int) float64 {
	v := 0.0
	for i, c := range choice {
		if c >= 0 {
			v += m.Bidders[i].Value(c)
		}
	}
	return v
}

// Load returns the total demand of a choice.
func (m *Market) Load(choice []int) Vector {
	var v Vector
	for i, c := range choice {
		if c >= 0 {
			v = v.Add(m.Bidders[i].Options[c].Demand)
		}
	}
	return v
}

// Validate checks a market the way State.Validate checks a state.
func (m *Market) Validate() error {
	if r, ok := m.Capacity.check(); !ok {
		return invalid("market", "", "Capacity["+r.String()+"]", "is NaN, infinite or negative")
	}
	if r, ok := m.Prices.check(); !ok {
		return invalid("market", "", "Prices["+r.String()+"]", "is NaN, infinite or negative")
	}
	// Field paths are formatted only once a problem is found: a valid market
	// of 20,000 bidders is checked without allocating.
	for i := range m.Bidders {
		b := &m.Bidders[i]
		id := func() string { return strconv.Itoa(i) }
		if w := b.Weight; math.IsNaN(w) || math.IsInf(w, 0) || w <= 0 {
			return invalid("bidder", id(), "Weight", fmt.Sprintf("is %g, want a positive finite number", w))
		}
		for k := range b.Options {
			o := &b.Options[k]
			path := func(f string) string { return "Options[" + strconv.Itoa(k) + "]." + f }
			if r := checkNumber(o.Goodput); r != "" {
				return invalid("bidder", id(), path("Goodput"), r)
			}
			if r := checkNumber(o.Penalty); r != "" {
				return invalid("bidder", id(), path("Penalty"), r)
			}
			if r, ok := o.Demand.check(); !ok {
				return invalid("bidder", id(), path("Demand["+r.String()+"]"), "is NaN, infinite or negative")
			}
		}
	}
	return nil
}

// Placer puts chosen configurations on GPUs. placement.New returns the
// default.
type Placer interface {
	// Place fills out (reusing its slices) with a GPU set per request item,
	// or a reason it could not be placed. It never exceeds any GPU's or
	// node's capacity.
	Place(ctx context.Context, req *PlacementRequest, out *Placement) error
}

// PlacementRequest is what to place, on which cluster.
type PlacementRequest struct {
	Cluster *Cluster
	Items   []PlacementItem
	// Predictor breaks ties between equally good GPUs by the lowest
	// predicted slowdown against their residents; nil: no tie-breaking.
	Predictor Predictor
	// LoudLastResort asks the placer to take a GPU whose residents are
	// predicted to interfere as a last resort, for an item nothing else
	// has room for (and that is not Quiet), rather than to leave it out
	// (placement.Config.LoudLastResort does it for every request). pds
	// asks it in its first round: a violation found there is what makes
	// the market reshape the job that causes it. A placer may ignore it.
	LoudLastResort bool
}

// PlacementItem is one job with its chosen configuration.
type PlacementItem struct {
	Job     *Job
	Profile *Profile
	// Current are the GPUs (by location) the job runs on now, for sticky
	// placement; nil for a job that does not run.
	Current []GPURef
	// Avoid lists GPUs this item must not share with the given other items
	// (by index in Items): pairs the interference check separated.
	Avoid []int
	// Quiet keeps the item off GPUs with a neighbour predicted to
	// interfere, even where the placer would otherwise take one as a last
	// resort (placement.Config.LoudLastResort). pds sets it for a
	// configuration whose interference the market already prices: placing
	// it beside a loud neighbour again would only find the same violation.
	Quiet bool
}

// GPULimits is what a Placer may also be: it says how full it fills one
// GPU, so that a scheduler that checks placements itself (pds puts jobs
// back where they ran, and holds GPUs for waiting jobs) keeps to the same
// limits. A Placer that is not one is taken to allow an SM share of 1 and
// any number of jobs per shared GPU.
type GPULimits interface {
	// GPULimits returns the most SM share one GPU holds and the most jobs
	// one shared GPU holds (0: no limit).
	GPULimits() (smOversubscription float64, maxJobsPerGPU int)
}

// Placement is a Placer's answer.
type Placement struct {
	// GPUs[i] holds item i's GPUs, one per replica, or nil if it was not
	// placed.
	GPUs [][]GPURef
	// Reasons[i] says why item i was not placed ("" when it was).
	Reasons []string
	// Codes[i] classifies an item that was not placed: Interference when
	// it found room only beside neighbours the sharing rule forbids it,
	// Unplaceable otherwise. A Placer may leave Codes nil: every item not
	// placed is then Unplaceable.
	Codes []Code
}

// ProfileRequest names what to profile: a job family under one
// configuration.
type ProfileRequest struct {
	Family string
	Class  Class
	Params float64
	Config Configuration
}

// Profiler measures a configuration in isolation and returns its profile
// (TDOP). profiler.New returns the default.
type Profiler interface {
	Profile(ctx context.Context, req ProfileRequest) (Profile, error)
}
