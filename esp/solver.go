package esp

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/slab"
	"golang.org/x/sync/errgroup"
)

// blockSize is how many bidders share one partial sum. Loads are summed per
// block and blocks in order, whatever the number of workers, so a parallel
// Solve returns bit for bit what a serial one does.
const blockSize = 256

// The exchange local search (see scratch.exchange) runs on markets of at
// most exchangeMaxOptions usable options, for at most exchangePasses passes
// and about exchangeWork option evaluations (a move costs about three
// passes over the options), which bounds a small market's Solve to a few
// hundred microseconds. On TestQuality's markets this work gives a mean of
// 99.67 % of the optimum; ten times as much, 99.72 %; none, 98.8 % with a
// minimum of 80 %.
const (
	exchangeMaxOptions = 512
	exchangePasses     = 4
	exchangeWork       = 20_000
)

// Tâtonnement's step control (see tatonnement). Chosen on chains of
// warm-started random markets of 30 to 5,000 bidders: with these, a warm
// start stops after 3–4 iterations within about 0.1 % of the dual bound, a
// cold start after 20–30.
const (
	// stallIterations iterations near clearing (no excess beyond
	// stallBand) without the dual value improving by a fraction stallTol
	// end tâtonnement. Far from clearing (a warm start from prices that no
	// longer fit), it goes on.
	stallIterations = 3
	stallTol        = 1e-4
	stallBand       = 0.1
	// A resource's step scale grows by stepGrowth while its excess demand
	// keeps its sign, and shrinks by stepShrink when it flips.
	stepGrowth = 1.2
	stepShrink = 0.5
)

// Solver is the default elastico.PriceSolver: tâtonnement on shadow prices
// (the paper's ESP), then a repair step that makes the choice fit capacity and
// a greedy pass that fills what the repair freed.
//
// A Solver keeps its scratch space (a few flat arrays the size of the
// largest market it has seen, about 50 bytes per option) between calls, so
// a steady-state Solve allocates nothing but the goroutines of parallel
// best responses. It is safe for concurrent use: a
// Solve that finds the scratch space busy allocates its own.
type Solver struct {
	cfg Config
	mu  sync.Mutex // guards sc
	sc  scratch
}

var _ elastico.PriceSolver = (*Solver)(nil)

// New returns a Solver with cfg's zero fields set to their defaults, or an
// error wrapping ErrConfig that names the first field out of range.
func New(cfg Config) (*Solver, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Solver{cfg: c}, nil
}

// Config returns the solver's configuration, defaults filled in.
func (s *Solver) Config() Config { return s.cfg }

// scratch is what one Solve works in.
type scratch struct {
	flat
	cur  []int32   // current choice, index into flat's options or -1
	best []int32   // choice at the best prices seen
	acc  []float64 // per block: 4 loads and the sum of surpluses
	heap minHeap
	save []int32 // the best choice of the local search
	pin  int32   // a bidder repair must not touch, or -1
	// minInc[j] is the least increase of demand any upgrade of j needs.
	minInc []elastico.Vector
	moves  minHeap // the exchange's moves to try
}

// Solve fills sol with one option per bidder (or -1: deferred) whose total
// demand never exceeds m.Capacity, the final prices and the number of
// tâtonnement iterations. It reuses sol's slices.
//
// An invalid market gives an error wrapping elastico.ErrInvalid. If ctx is
// done, Solve stops between iterations and returns an error wrapping
// ctx.Err(); sol then still holds a feasible choice (the last prices'
// choice, repaired; every bidder deferred if it stopped before the first
// iteration), so a caller out of time may use it.
func (s *Solver) Solve(ctx context.Context, m *elastico.Market, sol *elastico.Solution) error {
	switch {
	case m == nil:
		return fmt.Errorf("esp: Solve: nil market: %w", elastico.ErrInvalid)
	case sol == nil:
		return fmt.Errorf("esp: Solve: nil solution: %w", elastico.ErrInvalid)
	}
	sc := &s.sc
	if s.mu.TryLock() {
		defer s.mu.Unlock()
	} else {
		sc = new(scratch) // another Solve is running
	}
	if err := sc.load(m); err != nil {
		return err
	}
	n := len(m.Bidders)
	sol.Choice = slices.Grow(sol.Choice[:0], n)[:n]
	sol.Prices = m.Prices
	sol.Iterations = 0
	if err := ctx.Err(); err != nil {
		for i := range sol.Choice {
			sol.Choice[i] = -1
		}
		return fmt.Errorf("esp: stopped before the first iteration: %w", err)
	}
	sc.pin = -1
	sc.cur = slab.Resize(sc.cur, n)
	sc.best = slab.Resize(sc.best, n)
	nb := (n + blockSize - 1) / blockSize
	sc.acc = slab.Resize(sc.acc, 5*nb)

	lambda, _, iters, cerr := s.tatonnement(ctx, sc, m.Prices)
	sc.repair()
	if cerr == nil {
		sc.improve(&lambda)
		if k := len(sc.val); k > 0 && k <= exchangeMaxOptions {
			sc.exchange(&lambda, exchangePasses, exchangeWork/(3*k))
		}
	}
	for j, c := range sc.cur {
		if c < 0 {
			sol.Choice[j] = -1
		} else {
			sol.Choice[j] = int(sc.orig[c])
		}
	}
	sol.Prices = lambda
	sol.Iterations = iters
	if cerr != nil {
		return fmt.Errorf("esp: stopped after %d iterations: %w", iters, cerr)
	}
	return nil
}

// tatonnement runs the price iterations (Eq. 8) from warm and leaves in
// sc.cur the best response to the prices it returns: those with the lowest
// Lagrangian dual value D(λ) = Σ_j max(0, max_c w·G̃ − Γ − λ·R̂) + Σ_r λ_r
// seen, an upper bound on the optimum, which it also returns.
//
// The step is λ_r ← max(0, λ_r + η_t·P_r·min(z_r, 1)), η_t = η0/√t, with
// z_r the excess demand in fractions of capacity. P_r starts at the price
// level (the warm prices' sum, at least S/4, S the total bid value), so
// that η0 is free of units and market size; it grows by stepGrowth while
// z_r keeps its sign (a price far from clearing gets there in a few steps)
// and halves when z_r flips (a price that oscillates settles). Capping z at
// 1 keeps a step from a far-off start from overshooting. Tâtonnement stops
// when every excess is within ε (and a resource with no price is at most ε
// over), when D has not improved by a fraction stallTol for
// stallIterations iterations, after MaxIterations, or when ctx is done
// (returning ctx's error).
func (s *Solver) tatonnement(ctx context.Context, sc *scratch, warm elastico.Vector) (elastico.Vector, float64, int, error) {
	lambda := warm
	if sc.scale == 0 { // nothing anyone can buy
		for j := range sc.cur {
			sc.cur[j] = -1
		}
		return lambda, 0, 0, nil
	}
	bestDual := math.Inf(1)
	var bestLambda elastico.Vector
	eps := s.cfg.Epsilon
	parallel := sc.n > s.cfg.ParallelThreshold && s.cfg.Workers > 1
	level := max(lambda[0]+lambda[1]+lambda[2]+lambda[3], sc.scale/4)
	var P, lastZ elastico.Vector
	for r := range P {
		P[r] = level
	}
	var err error
	t, stall := 0, 0
	for t < s.cfg.MaxIterations {
		if t > 0 { // the first iteration always runs, so there is a choice to repair
			if err = ctx.Err(); err != nil {
				break
			}
		}
		t++
		load, surplus := s.bestResponses(sc, &lambda, parallel)
		dual := surplus + lambda[0] + lambda[1] + lambda[2] + lambda[3]
		if traceHook != nil {
			traceHook(t, dual, load, lambda)
		}
		// How far from clearing: the largest excess, counting a free
		// resource's spare capacity as none.
		off := 0.0
		for r := range load {
			z := load[r] - 1
			if z < 0 && lambda[r] == 0 {
				z = 0
			}
			off = max(off, math.Abs(z))
		}
		switch {
		case dual < bestDual*(1-stallTol):
			stall = 0
		case off <= stallBand:
			stall++ // near clearing, and no better: oscillating
		}
		if dual < bestDual {
			bestDual, bestLambda = dual, lambda
			copy(sc.best, sc.cur)
		}
		if off <= eps || stall >= stallIterations {
			break
		}
		eta := s.cfg.Eta0 / math.Sqrt(float64(t))
		for r := range lambda {
			z := min(load[r]-1, 1)
			switch {
			case t == 1:
			case z*lastZ[r] < 0:
				P[r] *= stepShrink
			case z*lastZ[r] > 0 && (z > 0 || lambda[r] > 0): // not a free resource
				P[r] *= stepGrowth
			}
			lastZ[r] = z
			lambda[r] = max(0, lambda[r]+eta*P[r]*z)
		}
	}
	copy(sc.cur, sc.best)
	return bestLambda, bestDual, t, err
}

// bestResponses sets sc.cur to every bidder's best response to lambda and
// returns the total normalized load and the sum of the bidders' surpluses.
func (s *Solver) bestResponses(sc *scratch, lambda *elastico.Vector, parallel bool) (elastico.Vector, float64) {
	nb := len(sc.acc) / 5
	if parallel {
		s.bestParallel(sc, *lambda, nb)
	} else {
		for b := range nb {
			sc.bestBlock(b, lambda)
		}
	}
	var load elastico.Vector
	surplus := 0.0
	for b := range nb {
		a := sc.acc[5*b : 5*b+5]
		load[0] += a[0]
		load[1] += a[1]
		load[2] += a[2]
		load[3] += a[3]
		surplus += a[4]
	}
	return load, surplus
}

// bestParallel runs bestBlock on nb blocks with up to Workers goroutines,
// each on a contiguous run of blocks.
func (s *Solver) bestParallel(sc *scratch, lambda elastico.Vector, nb int) {
	var g errgroup.Group
	w := min(s.cfg.Workers, nb)
	for k := range w {
		lo, hi := k*nb/w, (k+1)*nb/w
		g.Go(func() error {
			for b := lo; b < hi; b++ {
				sc.bestBlock(b, &lambda)
			}
			return nil
		})
	}
	_ = g.Wait() // the workers return no error
}

// bestBlock computes the best responses of block b's bidders:
// argmax_c w·G̃ − λ·R̂ − Γ, or deferral when no option has positive surplus.
// Ties go to the lower option index.
func (sc *scratch) bestBlock(b int, lambda *elastico.Vector) {
	l0, l1, l2, l3 := lambda[0], lambda[1], lambda[2], lambda[3]
	lo, hi := b*blockSize, min((b+1)*blockSize, sc.n)
	var s0, s1, s2, s3, sur float64
	start, val, dem, cur := sc.start, sc.val, sc.dem, sc.cur
	for j := lo; j < hi; j++ {
		o0, o1 := int(start[j]), int(start[j+1])
		bestV, bestO := 0.0, -1
		for o := o0; o < o1; o++ {
			d := &dem[o]
			v := val[o] - (l0*d[0] + l1*d[1] + l2*d[2] + l3*d[3])
			if v > bestV {
				bestV, bestO = v, o
			}
		}
		cur[j] = int32(bestO)
		if bestO >= 0 {
			d := &dem[bestO]
			s0 += d[0]
			s1 += d[1]
			s2 += d[2]
			s3 += d[3]
			sur += bestV
		}
	}
	a := sc.acc[5*b : 5*b+5]
	a[0], a[1], a[2], a[3], a[4] = s0, s1, s2, s3, sur
}

// traceHook, if set (by tests), sees every iteration.
var traceHook func(t int, dual float64, load, lambda elastico.Vector)
