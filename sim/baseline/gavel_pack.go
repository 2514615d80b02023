package baseline

// Gavel's space sharing (its +SS variant: MaxMinFairnessPolicyWithPacking in
// scheduler/policies/max_min_fairness.py, get_allocation over job
// combinations): the max-min LP also allocates time to pairs of jobs of the
// same scale factor running together on the same GPUs, each at its speed
// beside the other.
//
//	maximize   t
//	subject to Σ_m c[j][m]·x[j][m] + Σ_{k,m} c[j|k][m]·x[jk][m] ≥ t  for every job j
//	           Σ_m x[j][m] + Σ_{k,m} x[jk][m] ≤ 1                    for every job j
//	           Σ_j s_j·x[j][m] + Σ_{jk} s_j·x[jk][m] ≤ G_m              for every model m
//
// with c[j|k][m] = c[j][m]·speed of j beside k on m. Jobs are merged into
// classes as in maxMin, and the pairs of two classes' jobs, which some
// optimum treats alike, into one column: y, the time each job of the
// smaller class spends paired with the other's jobs on m.

// lpPairCol is a column of the packed LP: the pairs of class a's jobs with
// class b's (a's n ≤ b's; a == b: pairs within one class) on model m,
// where a job of a runs at ca and one of b at cb (their coefficients
// times their speeds beside each other). Its variable y is the time each
// job of a spends in such pairs.
type lpPairCol struct {
	a, b, m int
	ca, cb  float64
}

// share is the time each job of b spends in the column's pairs per unit
// of y, and gangs the pairs running at once per unit of y.
func (pc *lpPairCol) share(cls []lpClass) (share, gangs float64) {
	na, nb := cls[pc.a].n, cls[pc.b].n
	if pc.a == pc.b {
		return 1, na / 2 // every pair holds two of a's jobs
	}
	return na / nb, na
}

// entries returns the column's rows and values in solveMaxMin's LP.
func (pc *lpPairCol) entries(cls []lpClass, scale, gpus []float64) ([]int, []float64) {
	C := len(cls)
	share, gangs := pc.share(cls)
	capacity := gangs * scale[cls[pc.a].j] / gpus[pc.m]
	if pc.a == pc.b {
		return []int{pc.a, C + pc.a, 2*C + pc.m}, []float64{-pc.ca, 1, capacity}
	}
	return []int{pc.a, pc.b, C + pc.a, C + pc.b, 2*C + pc.m}, []float64{-pc.ca, -pc.cb * share, 1, share, capacity}
}

// worth is Σ over the column's jobs of their objective terms per unit of y.
func (pc *lpPairCol) worth(cls []lpClass) float64 {
	na := cls[pc.a].n
	if pc.a == pc.b {
		return na * pc.ca
	}
	return na * (pc.ca + pc.cb)
}

// add adds y of the column to every class's objective term and time and to
// the model's GPUs used.
func (pc *lpPairCol) add(y float64, cls []lpClass, scale, got, tm, used []float64) {
	share, gangs := pc.share(cls)
	got[pc.a] += pc.ca * y
	tm[pc.a] += y
	if pc.a != pc.b {
		got[pc.b] += pc.cb * share * y
		tm[pc.b] += share * y
	}
	used[pc.m] += gangs * scale[cls[pc.a].j] * y
}

// pairSpeed returns how fast a job of kind a and one of kind b run beside
// each other on the same GPUs of model m, each relative to alone, or ok
// false if they may not share them.
type pairSpeed func(a, b, m int) (sa, sb float64, ok bool)

// lpPairX is the time the pair of jobs i < k should run together on model m.
type lpPairX struct {
	i, k, m int
	x       float64
}

// maxMinPacked solves the packed LP. kind[j] is job j's kind for speed
// (jobs of one kind pair alike); two jobs pair on m when they have the
// same scale, both may run on m and speed allows it. Pairs whose speeds sum
// to at most 1 are left out: the two jobs taking turns alone would do as
// much with no more GPU time, so no optimum needs them. It returns the
// single jobs' x (as maxMin), every pair of jobs with time allocated, in
// order (by class pair, model, then job indices), and t. With no pair to
// consider, it is maxMin's answer.
func maxMinPacked(coef [][]float64, scale, gpus []float64, kind []int, speed pairSpeed, merge bool) ([][]float64, []lpPairX, float64, error) {
	cls, vars := lpClasses(coef, scale, gpus, merge, kind)
	var pcs []lpPairCol
	for a := range cls {
		ja := cls[a].j
		for b := a; b < len(cls); b++ {
			jb := cls[b].j
			if scale[ja] != scale[jb] || (a == b && cls[a].n < 2) {
				continue
			}
			for m := range gpus {
				if coef[ja][m] <= 0 || coef[jb][m] <= 0 || scale[ja] > gpus[m] {
					continue
				}
				sa, sb, ok := speed(kind[ja], kind[jb], m)
				if !ok || !(sa > 0 && sb > 0) || sa+sb <= 1 {
					continue
				}
				pc := lpPairCol{a: a, b: b, m: m, ca: coef[ja][m] * sa, cb: coef[jb][m] * sb}
				if cls[b].n < cls[a].n {
					pc.a, pc.b, pc.ca, pc.cb = b, a, pc.cb, pc.ca
				}
				pcs = append(pcs, pc)
			}
		}
	}
	if len(pcs) == 0 {
		// No pair to consider: the unpacked LP, over its own classes
		// (kinds would split some), so that the allocation is its.
		x, t, err := maxMinClasses(coef, scale, gpus, merge)
		return x, nil, t, err
	}
	x, y, t, err := solveMaxMin(coef, scale, gpus, cls, vars, pcs)
	if err != nil {
		return nil, nil, 0, err
	}
	var px []lpPairX
	for k, pc := range pcs {
		if !(y[k] > 0) {
			continue
		}
		A, B := cls[pc.a].jobs, cls[pc.b].jobs
		if pc.a == pc.b {
			// Each job is in n−1 pairs: y/(n−1) of its time in each.
			per := y[k] / float64(len(A)-1)
			for u, i := range A {
				for _, j := range A[u+1:] {
					px = append(px, lpPairX{i: i, k: j, m: pc.m, x: per})
				}
			}
			continue
		}
		// Each job of a is in nb pairs: y/nb of its time in each.
		per := y[k] / float64(len(B))
		for _, i := range A {
			for _, j := range B {
				px = append(px, lpPairX{i: min(i, j), k: max(i, j), m: pc.m, x: per})
			}
		}
	}
	return x, px, t, nil
}
