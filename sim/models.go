package sim

import (
	"fmt"
	"math"
	"slices"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/rst"
)

// This file holds what no data set measures, as explicit models with their
// sources. Each is used only where the data are silent, and every profile
// built from one is marked Interpolated.

// modelSpec is what the ground truth adds to a model's measurements: how
// its learning rate follows the batch size, and which Pollux model's
// gradient statistics stand in for its statistical efficiency. Memory
// comes from rst's memory model (rst.MemoryModelOf: parameters, optimizer
// state and saved activations, with its sources), the same estimate the
// library's RST uses, since no data set measured memory.
type modelSpec struct {
	Optimizer elastico.Optimizer
	// Pollux names the Pollux model whose gradient statistics stand in for
	// this model's statistical efficiency ("" = not modelled), and Why says
	// why it is a fair stand-in.
	Pollux, Why string
	// AMP says the model trains under mixed precision (Pollux's imagenet).
	AMP bool
}

// gavelModels are Gavel's seven models (scheduler/workloads in the Gavel
// repository).
var gavelModels = map[string]*modelSpec{
	"ResNet-18":      {Optimizer: elastico.SGD, Pollux: "cifar10", Why: "the same network on the same data"},
	"ResNet-50":      {Optimizer: elastico.SGD, Pollux: "imagenet", Why: "the same network on the same data"},
	"Transformer":    {Optimizer: elastico.Adam, Pollux: "bert", Why: "the nearest measured Transformer"},
	"LM":             {Optimizer: elastico.SGD, Pollux: "deepspeech2", Why: "the nearest measured recurrent network"},
	"Recommendation": {Optimizer: elastico.Adam, Pollux: "ncf", Why: "recommendation on MovieLens as well"},
	"A3C":            {Optimizer: elastico.Adam},
	"CycleGAN":       {Optimizer: elastico.Adam},
}

// memoryOf returns rst's memory model of a model.
func memoryOf(model string) (rst.MemoryModel, error) {
	m, ok := rst.MemoryModelOf(model)
	if !ok {
		return rst.MemoryModel{}, fmt.Errorf("sim: model %q has no memory model in rst", model)
	}
	return m, nil
}

// Host resources per replica: a data loader of 4 cores and 12 GiB of host
// RAM for training (p3.16xlarge gives 8 cores and 61 GiB per GPU), 2 cores
// and 8 GiB for an inference engine.
const (
	trainCPU, trainRAM = 4, 12
	inferCPU, inferRAM = 2, 8
)

// smFromStepTimes is the SM-utilization model: a training step takes
// α + β·b seconds at per-GPU batch b, where α is the batch-independent
// time (data loading, Python, launch gaps, the optimizer) during which the
// SMs idle. α is the zero-batch intercept of the line through the two
// smallest measured batches, where the overhead is most visible; then
// SM active(b) = 1 − α/step(b), clamped to [0.02, 1]. steps are step times
// in seconds at the ascending batches bs.
func smFromStepTimes(bs []int, steps []float64) []float64 {
	out := make([]float64, len(bs))
	alpha := 0.0
	if len(bs) >= 2 {
		slope := (steps[1] - steps[0]) / float64(bs[1]-bs[0])
		alpha = math.Max(0, steps[0]-slope*float64(bs[0]))
	}
	for i := range bs {
		out[i] = clamp(1-alpha/steps[i], 0.02, 1)
	}
	return out
}

func clamp(x, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, x)) }

// scalingModel fills in data-parallel throughput for GPU counts no data set
// measured: per-GPU throughput relative to one GPU, the median over every
// model that was measured at that count (Gavel: 2, 4 and 8 GPUs, on one
// server and spread), interpolated in log2(GPUs) between measured counts and
// extrapolated beyond the largest with the median per-doubling ratio.
type scalingModel struct {
	counts []int     // measured counts, ascending, starting at 1
	cons   []float64 // median per-GPU efficiency on one server
	spread []float64 // median per-GPU efficiency spread over servers
	// perDoubling is the median ratio of per-GPU throughput at the largest
	// count to the one before it (spread), for extrapolation.
	perDoubling float64
}

// eff returns the per-GPU efficiency at n GPUs.
func (s *scalingModel) eff(n int, spread bool) float64 {
	ys := s.cons
	if spread {
		ys = s.spread
	}
	return interpLog2(s.counts, ys, n, s.perDoubling)
}

// interpLog2 interpolates per-GPU values ys measured at counts xs (ascending)
// linearly in log2 of the count; beyond the last it multiplies by
// perDoubling per doubling.
func interpLog2(xs []int, ys []float64, n int, perDoubling float64) float64 {
	if i, ok := slices.BinarySearch(xs, n); ok {
		return ys[i]
	}
	last := len(xs) - 1
	if n > xs[last] {
		return ys[last] * math.Pow(perDoubling, math.Log2(float64(n)/float64(xs[last])))
	}
	if n < xs[0] {
		return ys[0]
	}
	i, _ := slices.BinarySearch(xs, n)
	x0, x1 := math.Log2(float64(xs[i-1])), math.Log2(float64(xs[i]))
	w := (math.Log2(float64(n)) - x0) / (x1 - x0)
	return ys[i-1]*(1-w) + ys[i]*w
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// FitReport is how well a fitted model reproduces held-out measurements.
type FitReport struct {
	Model    string
	Measured int     // measurements it was fitted on
	Filled   int     // values it supplies that no data set measured
	CVMAPE   float64 // 5-fold cross-validated mean absolute percentage error
	BaseMAPE float64 // the same folds predicting the training mean
}

// coLocationModel fills the pairs no data set measured. A replica of kind a
// next to one of kind b runs at speed 1/(1 + s_a·p_b): s_a is how sensitive
// a is, p_b how much pressure b puts on a GPU (a rank-one factorization of
// the measured slowdowns 1/speed − 1, fitted by alternating non-negative
// least squares). Kinds no pair measured (inference) get s and p from a
// least-squares line against their SM utilization, fitted on the measured
// kinds.
type coLocationModel struct {
	sens, press []float64
}

type pairObs struct {
	a, b int
	y    float64 // slowdown 1/speed − 1
}

func fitRankOne(n int, obs []pairObs) (sens, press []float64) {
	sens = make([]float64, n)
	press = make([]float64, n)
	for i := range sens {
		sens[i], press[i] = 1, 0.5
	}
	num := make([]float64, n)
	den := make([]float64, n)
	for it := 0; it < 300; it++ {
		clear(num)
		clear(den)
		for _, o := range obs {
			num[o.a] += o.y * press[o.b]
			den[o.a] += press[o.b] * press[o.b]
		}
		for i := range sens {
			if den[i] > 0 {
				sens[i] = math.Max(0, num[i]/den[i])
			}
		}
		clear(num)
		clear(den)
		for _, o := range obs {
			num[o.b] += o.y * sens[o.a]
			den[o.b] += sens[o.a] * sens[o.a]
		}
		for i := range press {
			if den[i] > 0 {
				press[i] = math.Max(0, num[i]/den[i])
			}
		}
	}
	return sens, press
}

// crossValidate reports the rank-one model's 5-fold error on the measured
// speeds; folds are every fifth pair in (victim, aggressor) order.
func crossValidate(n int, obs []pairObs) (cv, base float64) {
	var ape, apeBase float64
	for f := 0; f < 5; f++ {
		var train, test []pairObs
		for i, o := range obs {
			if i%5 == f {
				test = append(test, o)
			} else {
				train = append(train, o)
			}
		}
		s, p := fitRankOne(n, train)
		mean := 0.0
		for _, o := range train {
			mean += 1 / (1 + o.y)
		}
		mean /= float64(len(train))
		for _, o := range test {
			y := 1 / (1 + o.y)
			ape += math.Abs(1/(1+s[o.a]*p[o.b])-y) / y
			apeBase += math.Abs(mean-y) / y
		}
	}
	return 100 * ape / float64(len(obs)), 100 * apeBase / float64(len(obs))
}

// lineFit returns the least-squares line y = c0 + c1·x.
func lineFit(xs, ys []float64) (c0, c1 float64) {
	n := float64(len(xs))
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return sy / n, 0
	}
	c1 = (n*sxy - sx*sy) / d
	return (sy - c1*sx) / n, c1
}

// inferenceSpec is an offline LLM batch-inference family: one of rst's
// models (rst.LLMSpecOf) under the simulator's family name, evaluated by
// rst's roofline model (rst.LLMSpec.Roofline: decoding bound by memory
// bandwidth, prefill by compute; its doc gives the formula and sources), the
// same model rst.LLMInferenceFamily builds families from.
type inferenceSpec struct {
	Name string
	rst.LLMSpec
}

var inferenceModels = []*inferenceSpec{
	{Name: "OPT-1.3B-offline", LLMSpec: mustLLM("OPT-1.3B")},
	{Name: "OPT-2.7B-offline", LLMSpec: mustLLM("OPT-2.7B")},
}

func mustLLM(name string) rst.LLMSpec {
	m, ok := rst.LLMSpecOf(name)
	if !ok {
		panic("sim: rst has no LLM " + name) // a programming error, caught by every test
	}
	return m
}

// The inference knobs: the KV-cache budget as a fraction of GPU memory and
// the engine's sequence limit.
var (
	kvFracs = []float64{0.1, 0.2, 0.3, 0.45}
	maxSeqs = []int{16, 32, 64, 128}
)

// inferenceRequested is the configuration an inference job asks for:
// vLLM's defaults for a small model (a third of the GPU for KV, 64
// sequences) on one GPU.
const inferenceRequestedKV, inferenceRequestedSeqs = 0.3, 64

// config evaluates one configuration on one GPU; ok is false when it does
// not fit.
func (s *inferenceSpec) config(g GPUSpec, kvFrac float64, seqs int) (tput, sm, mem float64, ok bool) {
	p, ok, err := s.Roofline(rst.GPUSpec{Model: g.Model, Memory: g.Memory, BandwidthGBs: g.BandwidthGBs, TensorTFLOPs: g.TensorTFLOPs}, 1, kvFrac, seqs)
	if err != nil {
		return 0, 0, p.Memory, false
	}
	return p.Throughput, p.SM, p.Memory, ok
}
