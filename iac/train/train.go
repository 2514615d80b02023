package train

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gorgonia.org/tensor"

	"github.com/elastico/elastico/iac"
)

// MLP fits an MLP to samples with Adam on mini-batches, minimizing the mean
// squared relative error ((Ŝ − S)/S)² (a smooth stand-in for MAPE, which
// the evaluation reports), and stops early on a validation split of the
// groups; then, unless cfg.NoRefit, it trains again on every sample for the
// best epoch count. Every random choice (the split, the initial weights,
// the order of the samples, the dropout masks) comes from rng, so one seed
// gives one model, bit for bit, on one GOARCH.
func MLP(samples []iac.Sample, cfg iac.TrainConfig, rng *rand.Rand) (*iac.MLP, error) {
	if rng == nil {
		return nil, errors.New("train: MLP: nil *rand.Rand (the caller seeds training)")
	}
	c, err := resolve(cfg)
	if err != nil {
		return nil, err
	}
	if err := iac.CheckSamples(samples); err != nil {
		return nil, err
	}
	trainIdx, valIdx := splitGroups(samples, c.ValidationFrac, rng)
	if len(trainIdx) < 2 || len(valIdx) < 1 {
		return nil, fmt.Errorf("%w: %d samples in %d groups", iac.ErrTooFewSamples, len(samples), countGroups(samples))
	}
	xs := make([]iac.Vector, len(trainIdx))
	for i, k := range trainIdx {
		xs[i] = samples[k].Features
	}
	cols := iac.FitColumns(xs)
	if len(cols) == 0 {
		return nil, errors.New("train: MLP: no feature varies in the training samples")
	}
	t := newTrainer(cols, c, rng)
	t.load(samples, trainIdx, valIdx)
	t.init()
	info, err := t.run()
	if err != nil {
		return nil, err
	}
	if !c.NoRefit {
		// Again on every sample, from fresh weights, for the epochs that
		// early stopping found best.
		all := make([]int, len(samples))
		xs := make([]iac.Vector, len(samples))
		for i := range samples {
			all[i] = i
			xs[i] = samples[i].Features
		}
		if cols = iac.FitColumns(xs); len(cols) == 0 {
			return nil, errors.New("train: MLP: no feature varies in the samples")
		}
		fixed := c
		fixed.MaxEpochs = info.BestEpoch
		t = newTrainer(cols, fixed, rng)
		t.load(samples, all, nil)
		t.init()
		if _, err := t.run(); err != nil {
			return nil, err
		}
		info.TrainSamples = len(samples)
		info.TrainLoss = t.loss(t.xTrain, t.yTrain)
	}
	info.Label = c.Label
	info.Config = c
	info.Config.Label = "" // it is info.Label
	worst := 1.0
	for i := range samples {
		worst = max(worst, samples[i].Slowdown)
	}
	m, err := iac.NewMLP(cols, t.net, worst, info)
	if err != nil {
		return nil, fmt.Errorf("train: MLP: training diverged: %w", err)
	}
	return m, nil
}

// Fit trains an MLP on every measured pair of d: the one call that retrains
// the predictor on a user's own measurements (iac.ReadDataset reads them).
// An empty cfg.Label becomes a description of d.
func Fit(d *iac.Dataset, cfg iac.TrainConfig, rng *rand.Rand) (*iac.MLP, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	samples := d.Samples()
	if cfg.Label == "" {
		cfg.Label = fmt.Sprintf("%s: %d profiles, %d pairs, %d ordered samples", d.Name, len(d.Profiles), len(d.Pairs), len(samples))
	}
	return MLP(samples, cfg, rng)
}

// resolve fills c's defaults and rejects bad values.
func resolve(c iac.TrainConfig) (iac.TrainConfig, error) {
	d := iac.DefaultTrainConfig()
	if c.Hidden == nil {
		c.Hidden = d.Hidden
	}
	c.Hidden = slices.Clone(c.Hidden)
	zeroDefault := func(p *float64, def float64) {
		switch {
		case *p == 0:
			*p = def
		case *p < 0:
			*p = 0
		}
	}
	zeroDefault(&c.Dropout, d.Dropout)
	zeroDefault(&c.WeightDecay, d.WeightDecay)
	for _, f := range []struct {
		p   *float64
		def float64
	}{{&c.LearningRate, d.LearningRate}, {&c.Beta1, d.Beta1}, {&c.Beta2, d.Beta2}, {&c.Epsilon, d.Epsilon}, {&c.ValidationFrac, d.ValidationFrac}} {
		if *f.p == 0 {
			*f.p = f.def
		}
	}
	for _, f := range []struct {
		p   *int
		def int
	}{{&c.BatchSize, d.BatchSize}, {&c.MaxEpochs, d.MaxEpochs}, {&c.Patience, d.Patience}} {
		if *f.p == 0 {
			*f.p = f.def
		}
	}
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("train: iac.TrainConfig.%s is %v, want %s", field, v, want)
	}
	if len(c.Hidden) == 0 {
		return c, bad("Hidden", c.Hidden, "at least one iac.Layer")
	}
	for i, w := range c.Hidden {
		if w < 1 || w > iac.MaxWidth {
			return c, bad(fmt.Sprintf("Hidden[%d]", i), w, fmt.Sprintf("1..%d", iac.MaxWidth))
		}
	}
	switch {
	case !(c.Dropout >= 0 && c.Dropout < 1):
		return c, bad("Dropout", c.Dropout, "a rate in [0, 1)")
	case !(c.LearningRate > 0 && c.LearningRate < 1):
		return c, bad("LearningRate", c.LearningRate, "a rate in (0, 1)")
	case !(c.Beta1 > 0 && c.Beta1 < 1):
		return c, bad("Beta1", c.Beta1, "a decay in (0, 1)")
	case !(c.Beta2 > 0 && c.Beta2 < 1):
		return c, bad("Beta2", c.Beta2, "a decay in (0, 1)")
	case !(c.Epsilon > 0 && c.Epsilon < 1):
		return c, bad("Epsilon", c.Epsilon, "a small positive number")
	case !(c.WeightDecay >= 0 && c.WeightDecay < 1):
		return c, bad("WeightDecay", c.WeightDecay, "a penalty in [0, 1)")
	case c.BatchSize < 1:
		return c, bad("BatchSize", c.BatchSize, "≥ 1")
	case c.MaxEpochs < 1:
		return c, bad("MaxEpochs", c.MaxEpochs, "≥ 1")
	case c.Patience < 1:
		return c, bad("Patience", c.Patience, "≥ 1")
	case !(c.ValidationFrac > 0 && c.ValidationFrac <= 0.5):
		return c, bad("ValidationFrac", c.ValidationFrac, "a share in (0, 0.5]")
	}
	return c, nil
}

func countGroups(samples []iac.Sample) int {
	seen := map[int]bool{}
	for i := range samples {
		seen[samples[i].Group] = true
	}
	return len(seen)
}

// splitGroups holds out about frac of the groups (at least one) for
// validation. Groups are taken in order of first appearance, then shuffled,
// so the split depends only on the samples' order and rng.
func splitGroups(samples []iac.Sample, frac float64, rng *rand.Rand) (train, val []int) {
	var order []int
	seen := map[int]bool{}
	for i := range samples {
		if g := samples[i].Group; !seen[g] {
			seen[g] = true
			order = append(order, g)
		}
	}
	rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	nv := int(math.Round(frac * float64(len(order))))
	if nv < 1 {
		nv = 1
	}
	if nv >= len(order) {
		return nil, nil
	}
	held := make(map[int]bool, nv)
	for _, g := range order[:nv] {
		held[g] = true
	}
	for i := range samples {
		if held[samples[i].Group] {
			val = append(val, i)
		} else {
			train = append(train, i)
		}
	}
	return train, val
}

// trainer holds the buffers of one training run. Weights and biases live
// in one flat slice (Adam and the best-epoch copy run over it); the weight
// matrices are gorgonia tensors over that slice, so that a mini-batch's
// forward and backward passes are matrix products (gonum's BLAS), which the
// benchmarks in tensor_bench_test.go found faster than per-sample loops.
type trainer struct {
	c    iac.TrainConfig
	rng  *rand.Rand
	cols []iac.Column
	d    int // inputs

	net   []iac.Layer // views into param: what an MLP predicts with
	grads []iac.Layer // views into grad
	param []float64   // every weight and bias
	grad  []float64
	m, v  []float64 // Adam's moments
	best  []float64

	w, gw []*tensor.Dense // the weight matrices (In×Out) and their gradients

	xTrain, xVal []float64 // encoded inputs, row-major
	yTrain, yVal []float64

	bufs map[int]*batchBufs // by mini-batch size (the last one of an epoch may be short)
}

// batchBufs are one mini-batch size's activations.
type batchBufs struct {
	x    *tensor.Dense   // the batch's inputs, rows gathered
	y    []float64       // the batch's targets
	z    []*tensor.Dense // per layer: pre-activation, then ReLU output (hidden layers)
	a    []*tensor.Dense // per hidden layer: dropped activations, the next layer's input
	keep [][]float64     // per hidden layer: dropout scale × ReLU gate
	dz   []*tensor.Dense // per layer: dL/d(pre-activation)
	da   []*tensor.Dense // per hidden layer: dL/d(dropped activation)
}

func newTrainer(cols []iac.Column, c iac.TrainConfig, rng *rand.Rand) *trainer {
	t := &trainer{c: c, rng: rng, cols: cols, d: len(cols), bufs: map[int]*batchBufs{}}
	widths := append(slices.Clone(c.Hidden), 1)
	n := 0
	in := t.d
	for _, w := range widths {
		n += w*in + w
		in = w
	}
	t.param = make([]float64, n)
	t.grad = make([]float64, n)
	t.m = make([]float64, n)
	t.v = make([]float64, n)
	t.best = make([]float64, n)
	off := 0
	in = t.d
	for _, w := range widths {
		l := iac.Layer{In: in, Out: w, W: t.param[off : off+w*in], B: t.param[off+w*in : off+w*in+w]}
		g := iac.Layer{In: in, Out: w, W: t.grad[off : off+w*in], B: t.grad[off+w*in : off+w*in+w]}
		t.net = append(t.net, l)
		t.grads = append(t.grads, g)
		t.w = append(t.w, tensor.New(tensor.WithShape(in, w), tensor.WithBacking(l.W)))
		t.gw = append(t.gw, tensor.New(tensor.WithShape(in, w), tensor.WithBacking(g.W)))
		off += w*in + w
		in = w
	}
	return t
}

func (t *trainer) buffers(batch int) *batchBufs {
	if b, ok := t.bufs[batch]; ok {
		return b
	}
	mat := func(r, c int) *tensor.Dense {
		return tensor.New(tensor.WithShape(r, c), tensor.WithBacking(make([]float64, r*c)))
	}
	b := &batchBufs{x: mat(batch, t.d), y: make([]float64, batch)}
	for li, l := range t.net {
		b.z = append(b.z, mat(batch, l.Out))
		b.dz = append(b.dz, mat(batch, l.Out))
		if li < len(t.net)-1 {
			b.a = append(b.a, mat(batch, l.Out))
			b.da = append(b.da, mat(batch, l.Out))
			b.keep = append(b.keep, make([]float64, batch*l.Out))
		}
	}
	t.bufs[batch] = b
	return b
}

func (t *trainer) load(samples []iac.Sample, trainIdx, valIdx []int) {
	enc := func(idx []int) ([]float64, []float64) {
		x := make([]float64, len(idx)*t.d)
		y := make([]float64, len(idx))
		for i, k := range idx {
			iac.Standardize(x[i*t.d:(i+1)*t.d], &samples[k].Features, t.cols)
			y[i] = samples[k].Slowdown
		}
		return x, y
	}
	t.xTrain, t.yTrain = enc(trainIdx)
	t.xVal, t.yVal = enc(valIdx)
}

// init draws He-normal weights for the hidden layers, small ones for the
// output, and starts the output bias at the training mean slowdown.
func (t *trainer) init() {
	last := len(t.net) - 1
	for li := range t.net {
		l := &t.net[li]
		scale := math.Sqrt(2 / float64(l.In))
		if li == last {
			scale = 0.1 / math.Sqrt(float64(l.In))
		}
		for i := range l.W {
			l.W[i] = t.rng.NormFloat64() * scale
		}
	}
	if len(t.yTrain) == 0 {
		return
	}
	var mean float64
	for _, y := range t.yTrain {
		mean += y
	}
	mean /= float64(len(t.yTrain))
	// softplus⁻¹(mean − 1), guarded for a mean at 1.
	excess := math.Max(mean-1, 1e-3)
	t.net[last].B[0] = math.Log(math.Expm1(excess))
}

// run trains until MaxEpochs or Patience and keeps the best weights.
func (t *trainer) run() (iac.ModelInfo, error) {
	c := t.c
	n := len(t.yTrain)
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	bestLoss := math.Inf(1)
	bestEpoch, since, epoch := 0, 0, 0
	step := 0
	for epoch = 1; epoch <= c.MaxEpochs; epoch++ {
		t.rng.Shuffle(n, func(i, j int) { order[i], order[j] = order[j], order[i] })
		for lo := 0; lo < n; lo += c.BatchSize {
			hi := min(lo+c.BatchSize, n)
			if err := t.gradient(order[lo:hi]); err != nil {
				return iac.ModelInfo{}, err
			}
			step++
			t.adam(step, float64(hi-lo))
		}
		if len(t.yVal) == 0 {
			continue // a refit: no validation, the last epoch is kept
		}
		vl := t.loss(t.xVal, t.yVal)
		if vl < bestLoss {
			bestLoss, bestEpoch, since = vl, epoch, 0
			copy(t.best, t.param)
		} else if since++; since >= c.Patience {
			break
		}
	}
	if len(t.yVal) == 0 {
		return iac.ModelInfo{TrainSamples: n, Epochs: c.MaxEpochs, BestEpoch: c.MaxEpochs, TrainLoss: t.loss(t.xTrain, t.yTrain)}, nil
	}
	copy(t.param, t.best)
	return iac.ModelInfo{
		TrainSamples:   n,
		ValSamples:     len(t.yVal),
		Epochs:         min(epoch, c.MaxEpochs),
		BestEpoch:      bestEpoch,
		TrainLoss:      t.loss(t.xTrain, t.yTrain),
		ValidationLoss: bestLoss,
	}, nil
}

// gradient sets t.grad to the sum over the mini-batch rows of the gradient
// of ((Ŝ − y)/y)², with fresh dropout masks (drawn row by row, unit by
// unit, whatever the activations, so the random stream does not depend on
// the weights' values).
func (t *trainer) gradient(rows []int) error {
	b := t.buffers(len(rows))
	xs := b.x.Float64s()
	for r, i := range rows {
		copy(xs[r*t.d:(r+1)*t.d], t.xTrain[i*t.d:(i+1)*t.d])
		b.y[r] = t.yTrain[i]
	}
	p := t.c.Dropout
	scale := 1 / (1 - p)
	last := len(t.net) - 1
	in := b.x
	for li := range t.net {
		if _, err := in.MatMul(t.w[li], tensor.WithReuse(b.z[li])); err != nil {
			return fmt.Errorf("train: %w", err)
		}
		z := b.z[li].Float64s()
		bias := t.net[li].B
		m := len(bias)
		for r := range rows {
			row := z[r*m : (r+1)*m]
			for j, bj := range bias {
				row[j] += bj
			}
		}
		if li == last {
			break
		}
		a, keep := b.a[li].Float64s(), b.keep[li]
		for j, v := range z {
			k := scale
			if p > 0 && t.rng.Float64() < p {
				k = 0
			}
			if v <= 0 {
				k = 0
			}
			keep[j] = k
			a[j] = v * k
		}
		in = b.a[li]
	}
	// d/dz of ((1 + softplus(z) − y)/y)² = 2(Ŝ − y)/y² · sigmoid(z).
	z, dz := b.z[last].Float64s(), b.dz[last].Float64s()
	for r, y := range b.y {
		pred := 1 + softplus(z[r])
		dz[r] = 2 * (pred - y) / (y * y) * sigmoid(z[r])
	}
	for li := last; li >= 0; li-- {
		in := b.x
		if li > 0 {
			in = b.a[li-1]
		}
		// dW = inᵀ·dz
		if err := in.T(); err != nil {
			return fmt.Errorf("train: %w", err)
		}
		_, err := in.MatMul(b.dz[li], tensor.WithReuse(t.gw[li]))
		in.UT()
		if err != nil {
			return fmt.Errorf("train: %w", err)
		}
		dzl := b.dz[li].Float64s()
		gb := t.grads[li].B
		m := len(gb)
		clear(gb)
		for r := range rows {
			for j, v := range dzl[r*m : (r+1)*m] {
				gb[j] += v
			}
		}
		if li == 0 {
			break
		}
		// dA = dz·Wᵀ, then through dropout and ReLU.
		if err := t.w[li].T(); err != nil {
			return fmt.Errorf("train: %w", err)
		}
		_, err = b.dz[li].MatMul(t.w[li], tensor.WithReuse(b.da[li-1]))
		t.w[li].UT()
		if err != nil {
			return fmt.Errorf("train: %w", err)
		}
		da, keep, dprev := b.da[li-1].Float64s(), b.keep[li-1], b.dz[li-1].Float64s()
		for j, v := range da {
			dprev[j] = v * keep[j]
		}
	}
	return nil
}

// adam applies one Adam step with the batch's mean gradient plus the L2
// penalty on weights. Products are rounded explicitly (no fused
// multiply-add) so that a seed gives the same model wherever the compiler
// would fuse.
func (t *trainer) adam(step int, batch float64) {
	c := t.c
	b1t := 1 - math.Pow(c.Beta1, float64(step))
	b2t := 1 - math.Pow(c.Beta2, float64(step))
	for li := range t.net {
		l, g := &t.net[li], &t.grads[li]
		for i := range g.W {
			g.W[i] = g.W[i]/batch + float64(c.WeightDecay*l.W[i])
		}
		for i := range g.B {
			g.B[i] /= batch
		}
	}
	for i, gi := range t.grad {
		t.m[i] = float64(c.Beta1*t.m[i]) + float64((1-c.Beta1)*gi)
		t.v[i] = float64(c.Beta2*t.v[i]) + float64((1-c.Beta2)*float64(gi*gi))
		mh := t.m[i] / b1t
		vh := t.v[i] / b2t
		t.param[i] -= float64(c.LearningRate*mh) / (math.Sqrt(vh) + c.Epsilon)
	}
}

// loss is the mean squared relative error without dropout, of the model
// the weights make now: the same arithmetic as its predictions. Forward
// ignores the cap, so any valid one does.
func (t *trainer) loss(x, y []float64) float64 {
	m, err := iac.NewMLP(t.cols, t.net, 1, iac.ModelInfo{})
	if err != nil {
		// A weight is not finite: so is the loss, and it is never the best.
		return math.NaN()
	}
	var s float64
	for i, yi := range y {
		r := (m.Forward(x[i*t.d:(i+1)*t.d]) - yi) / yi
		s += r * r
	}
	return s / float64(len(y))
}

// softplus is log(1 + e^z), computed as package iac computes the model's
// output (Ŝ = 1 + softplus(z)), so that the gradient is the one of the loss
// that predictions measure.
func softplus(z float64) float64 {
	if z > 0 {
		return z + math.Log(1+math.Exp(-z))
	}
	return math.Log(1 + math.Exp(z))
}

// sigmoid is softplus's derivative.
func sigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}
