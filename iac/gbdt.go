package iac

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/elastico/elastico"
)

// GBDTConfig configures the gradient-boosted trees baseline. Zero fields
// mean the documented defaults.
type GBDTConfig struct {
	Trees        int     // boosting rounds; default 300
	Depth        int     // levels per tree, 1..8; default 3
	LearningRate float64 // shrinkage; default 0.05
	MinLeaf      int     // fewest samples in a leaf; default 5
	// Subsample is the share of samples each tree is grown on (stochastic
	// gradient boosting), in (0, 1]; default 0.8.
	Subsample float64
}

func (c GBDTConfig) resolve() (GBDTConfig, error) {
	if c.Trees == 0 {
		c.Trees = 300
	}
	if c.Depth == 0 {
		c.Depth = 3
	}
	if c.LearningRate == 0 {
		c.LearningRate = 0.05
	}
	if c.MinLeaf == 0 {
		c.MinLeaf = 5
	}
	if c.Subsample == 0 {
		c.Subsample = 0.8
	}
	switch {
	case c.Trees < 1:
		return c, fmt.Errorf("iac: GBDTConfig.Trees is %d, want ≥ 1", c.Trees)
	case c.Depth < 1 || c.Depth > 8:
		return c, fmt.Errorf("iac: GBDTConfig.Depth is %d, want 1..8", c.Depth)
	case !(c.LearningRate > 0 && c.LearningRate <= 1):
		return c, fmt.Errorf("iac: GBDTConfig.LearningRate is %g, want (0, 1]", c.LearningRate)
	case c.MinLeaf < 1:
		return c, fmt.Errorf("iac: GBDTConfig.MinLeaf is %d, want ≥ 1", c.MinLeaf)
	case !(c.Subsample > 0 && c.Subsample <= 1):
		return c, fmt.Errorf("iac: GBDTConfig.Subsample is %g, want (0, 1]", c.Subsample)
	}
	return c, nil
}

// GBDT is the gradient-boosted regression trees baseline, in pure Go:
// squared loss on log S, depth-limited trees grown level by level on the
// same standardized inputs as the MLP (a missing value is the training mean,
// and the mask inputs let a tree split on "missing"); Ŝ = max(1, e^(…)).
type GBDT struct {
	cols  []Column
	base  float64
	rate  float64
	trees [][]treeNode
}

// treeNode is a split (Col ≥ 0: go Left when x[Col] < Threshold) or a leaf.
type treeNode struct {
	Col         int
	Threshold   float64
	Left, Right int
	Value       float64
}

var _ elastico.Predictor = (*GBDT)(nil)

// TrainGBDT fits the boosted-trees baseline; rng draws the subsamples.
func TrainGBDT(samples []Sample, cfg GBDTConfig, rng *rand.Rand) (*GBDT, error) {
	if rng == nil {
		return nil, errors.New("iac: TrainGBDT: nil *rand.Rand")
	}
	c, err := cfg.resolve()
	if err != nil {
		return nil, err
	}
	if err := CheckSamples(samples); err != nil {
		return nil, err
	}
	n := len(samples)
	if n < 2*c.MinLeaf {
		return nil, fmt.Errorf("%w: %d samples, MinLeaf %d", ErrTooFewSamples, n, c.MinLeaf)
	}
	xs := make([]Vector, n)
	for i := range samples {
		xs[i] = samples[i].Features
	}
	cols := FitColumns(xs)
	d := len(cols)
	x := make([]float64, n*d)
	y := make([]float64, n)
	for i := range samples {
		Standardize(x[i*d:(i+1)*d], &samples[i].Features, cols)
		y[i] = math.Log(samples[i].Slowdown)
	}
	// Each column's samples sorted by value, once.
	sorted := make([][]int, d)
	for j := range sorted {
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(a, b int) int {
			va, vb := x[a*d+j], x[b*d+j]
			switch {
			case va < vb:
				return -1
			case va > vb:
				return 1
			}
			return 0
		})
		sorted[j] = idx
	}
	g := &GBDT{cols: cols, rate: c.LearningRate}
	for _, v := range y {
		g.base += v
	}
	g.base /= float64(n)
	pred := make([]float64, n)
	for i := range pred {
		pred[i] = g.base
	}
	resid := make([]float64, n)
	node := make([]int, n) // current node of each sample; -1: not in this tree's subsample
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	gr := grower{c: c, x: x, d: d, sorted: sorted, resid: resid, node: node}
	for range c.Trees {
		for i := range resid {
			resid[i] = y[i] - pred[i]
		}
		// Subsample without replacement.
		rng.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		m := max(int(math.Round(c.Subsample*float64(n))), 2*c.MinLeaf)
		for i := range node {
			node[i] = -1
		}
		for _, i := range perm[:m] {
			node[i] = 0
		}
		tree := gr.grow()
		g.trees = append(g.trees, tree)
		for i := range pred {
			pred[i] += c.LearningRate * evalTree(tree, x[i*d:(i+1)*d])
		}
	}
	return g, nil
}

// grower grows one tree level by level; node[i] is sample i's node.
type grower struct {
	c      GBDTConfig
	x      []float64
	d      int
	sorted [][]int
	resid  []float64
	node   []int
}

type nodeStats struct {
	n   int
	sum float64
}

type split struct {
	gain      float64
	col       int
	threshold float64
}

func (g *grower) grow() []treeNode {
	tree := []treeNode{{Col: -1}}
	frontier := []int{0}
	for depth := 0; depth < g.c.Depth && len(frontier) > 0; depth++ {
		// Totals per frontier node.
		pos := make(map[int]int, len(frontier)) // node → index in frontier
		for k, t := range frontier {
			pos[t] = k
		}
		total := make([]nodeStats, len(frontier))
		for i, t := range g.node {
			if k, ok := pos[t]; ok && t >= 0 {
				total[k].n++
				total[k].sum += g.resid[i]
			}
		}
		best := make([]split, len(frontier))
		for k := range best {
			best[k].col = -1
		}
		left := make([]nodeStats, len(frontier))
		last := make([]float64, len(frontier))
		for j := 0; j < g.d; j++ {
			clear(left)
			for k := range last {
				last[k] = math.Inf(-1)
			}
			for _, i := range g.sorted[j] {
				t := g.node[i]
				k, ok := pos[t]
				if t < 0 || !ok {
					continue
				}
				v := g.x[i*g.d+j]
				l, tot := &left[k], &total[k]
				// A split between the previous value and v.
				if v > last[k] && l.n >= g.c.MinLeaf && tot.n-l.n >= g.c.MinLeaf {
					rn, rs := float64(tot.n-l.n), tot.sum-l.sum
					gain := l.sum*l.sum/float64(l.n) + rs*rs/rn - tot.sum*tot.sum/float64(tot.n)
					if gain > best[k].gain+1e-12 {
						best[k] = split{gain: gain, col: j, threshold: (last[k] + v) / 2}
					}
				}
				last[k] = v
				l.n++
				l.sum += g.resid[i]
			}
		}
		var next []int
		for k, t := range frontier {
			if best[k].col < 0 {
				tree[t].Value = total[k].sum / float64(max(total[k].n, 1))
				continue
			}
			l, r := len(tree), len(tree)+1
			tree[t] = treeNode{Col: best[k].col, Threshold: best[k].threshold, Left: l, Right: r}
			tree = append(tree, treeNode{Col: -1}, treeNode{Col: -1})
			next = append(next, l, r)
		}
		// Move samples to their children.
		for i, t := range g.node {
			if t < 0 || tree[t].Col < 0 {
				continue
			}
			if _, ok := pos[t]; !ok {
				continue
			}
			if g.x[i*g.d+tree[t].Col] < tree[t].Threshold {
				g.node[i] = tree[t].Left
			} else {
				g.node[i] = tree[t].Right
			}
		}
		frontier = next
	}
	// Leaves left on the frontier get their mean residual.
	if len(frontier) > 0 {
		stats := map[int]*nodeStats{}
		for _, t := range frontier {
			stats[t] = &nodeStats{}
		}
		for i, t := range g.node {
			if s, ok := stats[t]; ok {
				s.n++
				s.sum += g.resid[i]
			}
		}
		for _, t := range frontier {
			s := stats[t]
			tree[t].Value = s.sum / float64(max(s.n, 1))
		}
	}
	return tree
}

func evalTree(tree []treeNode, x []float64) float64 {
	t := 0
	for tree[t].Col >= 0 {
		if x[tree[t].Col] < tree[t].Threshold {
			t = tree[t].Left
		} else {
			t = tree[t].Right
		}
	}
	return tree[t].Value
}

// Slowdown implements elastico.Predictor.
func (g *GBDT) Slowdown(victim, aggressor *elastico.Profile) float64 {
	var v Vector
	v.Build(victim, aggressor)
	return g.Predict(&v)
}

// Predict returns the slowdown for a feature vector.
func (g *GBDT) Predict(v *Vector) float64 {
	var in [maxInputs]float64
	Standardize(in[:], v, g.cols)
	s := g.base
	for _, t := range g.trees {
		s += g.rate * evalTree(t, in[:len(g.cols)])
	}
	return math.Max(1, math.Exp(s))
}
