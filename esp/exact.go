package esp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/elastico/elastico"
)

// Limits of Exact: branch and bound is exponential in the worst case.
const (
	MaxExactBidders = 40
	MaxExactOptions = 16 // per bidder
)

// exactCold makes Exact start from an empty incumbent, so that tests check
// the branch and bound on its own.
var exactCold = false

// nodeSteps is how many subgradient steps refine the bound at a node the
// root's prices do not prune. Measured on 30 jobs × 6 configurations: 2
// steps visit 300 times more nodes, 16 steps cost more than they prune.
const nodeSteps = 6

// ErrTooLarge is wrapped by Exact's error for a market beyond its limits.
var ErrTooLarge = errors.New("esp: market too large to solve exactly")

// Exact returns an optimal choice for a small market (at most
// MaxExactBidders bidders of at most MaxExactOptions options each) and its
// objective, Market.Objective of the choice. It is the reference that tests
// and benchmarks measure Solvers against, not a scheduler's solver.
//
// It is a depth-first branch and bound. Dominated options (worth no more
// than another while demanding at least as much of everything) are dropped;
// the incumbent starts from the default Solver's answer; the bound at a node
// is the Lagrangian dual Σ_j max(0, max_c w·G̃ − Γ − λ·R̂) + λ·(capacity left),
// with λ from a subgradient descent at the root and refined at nodes it does
// not prune (starting from the parent's), counting only options that fit
// what capacity is left. Every λ ≥ 0 gives a valid bound, so the answer is
// exact whatever λ is.
//
// It returns an error wrapping elastico.ErrInvalid for an invalid market,
// ErrTooLarge for one too large, and ctx's error if ctx is done first.
func Exact(ctx context.Context, m *elastico.Market) ([]int, float64, error) {
	if m == nil {
		return nil, 0, fmt.Errorf("esp: Exact: nil market: %w", elastico.ErrInvalid)
	}
	e := &bb{}
	if err := e.f.load(m); err != nil {
		return nil, 0, err
	}
	if n := len(m.Bidders); n > MaxExactBidders {
		return nil, 0, fmt.Errorf("%w: %d bidders, at most %d", ErrTooLarge, n, MaxExactBidders)
	}
	for j := range m.Bidders {
		if k := len(m.Bidders[j].Options); k > MaxExactOptions {
			return nil, 0, fmt.Errorf("%w: bidder %d has %d options, at most %d", ErrTooLarge, j, k, MaxExactOptions)
		}
	}
	e.init()
	e.bestChoice = make([]int, len(m.Bidders))
	for j := range e.bestChoice {
		e.bestChoice[j] = -1
	}
	if !exactCold {
		heur, err := New(Config{Workers: 1})
		if err != nil {
			return nil, 0, err
		}
		var sol elastico.Solution
		if err := heur.Solve(ctx, m, &sol); err != nil {
			return nil, 0, err
		}
		e.incumbent = m.Objective(sol.Choice)
		copy(e.bestChoice, sol.Choice)
	}
	if err := e.run(ctx); err != nil {
		return nil, 0, err
	}
	return e.bestChoice, m.Objective(e.bestChoice), nil
}

// bb is the state of one branch and bound.
type bb struct {
	f     flat
	order []int // bidders, in branching order
	// opts[i] are the undominated options of bidder order[i].
	opts       [][]int32
	lambda     elastico.Vector
	suffix     []float64 // suffix[i] = Σ_{k ≥ i} h_k(λ) over all options
	incumbent  float64
	bestChoice []int
	path       []int32 // the option chosen at each depth, -1 deferred
	nodes      int
	ctx        context.Context
	err        error
	kids       [][]kid // per depth: the children in the order tried
}

type kid struct {
	o   int32
	red float64
}

// init prepares the search on the loaded market e.f.
func (e *bb) init() {
	n := e.f.n
	all := make([][]int32, n)
	for j := range n {
		o0, o1 := e.f.options(j)
		for a := o0; a < o1; a++ {
			if !e.dominated(a, o0, o1) {
				all[j] = append(all[j], int32(a))
			}
		}
	}
	e.order = make([]int, 0, n)
	for j := range n {
		if len(all[j]) > 0 {
			e.order = append(e.order, j)
		}
	}
	// Bidders that can bring the most first: their choice moves the bound
	// most.
	maxVal := func(j int) float64 {
		v := 0.0
		for _, o := range all[j] {
			v = max(v, e.f.val[o])
		}
		return v
	}
	slices.SortStableFunc(e.order, func(a, b int) int {
		va, vb := maxVal(a), maxVal(b)
		switch {
		case va > vb:
			return -1
		case va < vb:
			return 1
		}
		return 0
	})
	e.opts = make([][]int32, len(e.order))
	for i, j := range e.order {
		e.opts[i] = all[j]
	}
	e.path = make([]int32, len(e.order))
	e.kids = make([][]kid, len(e.order))
}

// dominated reports whether option a is dominated by another of o0..o1;
// of identical options the first is kept.
func (e *bb) dominated(a, o0, o1 int) bool {
	da := &e.f.dem[a]
	for b := o0; b < o1; b++ {
		if b == a || e.f.val[b] < e.f.val[a] {
			continue
		}
		db := &e.f.dem[b]
		if db[0] > da[0] || db[1] > da[1] || db[2] > da[2] || db[3] > da[3] {
			continue
		}
		if e.f.val[b] > e.f.val[a] || *db != *da || b < a {
			return true
		}
	}
	return false
}

// h returns max(0, max over o in opts that fit resid of val − λ·R̂).
func (e *bb) h(opts []int32, l *elastico.Vector, resid *elastico.Vector, fit bool) (float64, int32) {
	best, bo := 0.0, int32(-1)
	for _, o := range opts {
		d := &e.f.dem[o]
		if fit && (d[0] > resid[0]+feasTol || d[1] > resid[1]+feasTol || d[2] > resid[2]+feasTol || d[3] > resid[3]+feasTol) {
			continue
		}
		if v := e.f.val[o] - (l[0]*d[0] + l[1]*d[1] + l[2]*d[2] + l[3]*d[3]); v > best {
			best, bo = v, o
		}
	}
	return best, bo
}

// dual minimizes the Lagrangian dual of the subproblem of depths ≥ from
// with capacity resid, by subgradient descent with Polyak steps towards
// target, from start, for at most steps iterations. It returns the best
// bound and its λ; it stops early once the bound is at most target.
func (e *bb) dual(from int, resid elastico.Vector, start elastico.Vector, target float64, steps int, fit bool) (float64, elastico.Vector) {
	l := start
	best, bestL := math.Inf(1), l
	theta, stall := 1.0, 0
	for it := 0; it < steps; it++ {
		var g elastico.Vector
		d := l[0]*resid[0] + l[1]*resid[1] + l[2]*resid[2] + l[3]*resid[3]
		for i := from; i < len(e.opts); i++ {
			v, o := e.h(e.opts[i], &l, &resid, fit)
			d += v
			if o >= 0 {
				g = g.Add(e.f.dem[o])
			}
		}
		g = g.Sub(resid) // excess demand: the subgradient's negative
		if d < best {
			best, bestL, stall = d, l, 0
		} else if stall++; stall >= 5 {
			theta, stall = theta/2, 0
		}
		if best <= target {
			break
		}
		norm := 0.0
		for r := range g {
			if l[r] > 0 || g[r] > 0 {
				norm += g[r] * g[r]
			}
		}
		if norm == 0 {
			break // λ is optimal
		}
		step := theta * (d - target) / norm
		for r := range l {
			l[r] = max(0, l[r]+step*g[r])
		}
	}
	return best, bestL
}

func (e *bb) run(ctx context.Context) error {
	e.ctx = ctx
	n := len(e.order)
	one := elastico.Vector{1, 1, 1, 1}
	tol := func() float64 { return 1e-9 * max(1, math.Abs(e.incumbent)) }
	root, l := e.dual(0, one, elastico.Vector{}, e.incumbent+tol(), 300, false)
	if root <= e.incumbent+tol() {
		return nil // the heuristic's answer is optimal
	}
	e.lambda = l
	e.suffix = make([]float64, n+1)
	for i := n - 1; i >= 0; i-- {
		v, _ := e.h(e.opts[i], &l, nil, false)
		e.suffix[i] = e.suffix[i+1] + v
	}
	e.dfs(0, one, 0, l)
	return e.err
}

func (e *bb) dfs(i int, resid elastico.Vector, value float64, start elastico.Vector) {
	if e.err != nil {
		return
	}
	if e.nodes++; e.nodes&4095 == 0 {
		if e.err = e.ctx.Err(); e.err != nil {
			e.err = fmt.Errorf("esp: Exact stopped after %d nodes: %w", e.nodes, e.err)
			return
		}
	}
	target := e.incumbent + 1e-9*max(1, math.Abs(e.incumbent))
	if i == len(e.order) {
		if value > target {
			e.incumbent = value
			for k := range e.bestChoice {
				e.bestChoice[k] = -1
			}
			for d, o := range e.path {
				if o >= 0 {
					e.bestChoice[e.order[d]] = int(e.f.orig[o])
				}
			}
		}
		return
	}
	l := e.lambda
	if value+e.suffix[i]+l[0]*resid[0]+l[1]*resid[1]+l[2]*resid[2]+l[3]*resid[3] <= target {
		return
	}
	if b, nl := e.dual(i, resid, start, target-value, nodeSteps, true); value+b <= target {
		return
	} else {
		l = nl
	}
	// Children: the options that fit, best reduced value first, deferral
	// among them at reduced value 0.
	ks := e.kids[i][:0]
	ks = append(ks, kid{-1, 0})
	for _, o := range e.opts[i] {
		d := &e.f.dem[o]
		if d[0] > resid[0]+feasTol || d[1] > resid[1]+feasTol || d[2] > resid[2]+feasTol || d[3] > resid[3]+feasTol {
			continue
		}
		ks = append(ks, kid{o, e.f.val[o] - (l[0]*d[0] + l[1]*d[1] + l[2]*d[2] + l[3]*d[3])})
	}
	slices.SortStableFunc(ks, func(a, b kid) int {
		switch {
		case a.red > b.red:
			return -1
		case a.red < b.red:
			return 1
		}
		return 0
	})
	e.kids[i] = ks
	for _, k := range ks {
		e.path[i] = k.o
		if k.o < 0 {
			e.dfs(i+1, resid, value, l)
			continue
		}
		e.dfs(i+1, resid.Sub(e.f.dem[k.o]), value+e.f.val[k.o], l)
	}
	e.path[i] = -1
}
