// Gavel's measurements as the simulator's ground truth; the other roles of
// the data: see the root package doc, The shipped measurements.

package sim

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/gavel"
	"github.com/elastico/elastico/rst"
)

// GavelTruth builds the ground truth for one of Gavel's GPU models ("V100",
// "P100" or "K80"; any case): Gavel's seven training models, each a family of
// (per-GPU batch × GPU count) configurations whose isolated throughputs, on
// one server and spread over servers, are Gavel's measurements, and whose
// co-location speeds are Gavel's measured pairs; plus the offline LLM
// inference families of the inference model (models.go). Statistical
// efficiency comes from Pollux's gradient statistics where a Pollux model
// stands in (see Family.Notes).
func GavelTruth(gpu string) (*Truth, error) {
	m, _ := gavel.Model(gpu)
	var spec GPUSpec
	switch m {
	case gavel.V100:
		spec = V100
	case gavel.P100:
		spec = P100
	case gavel.K80:
		spec = K80
	default:
		return nil, fmt.Errorf("sim: Gavel has no GPU model %q (want %s)", gpu, strings.Join(gavel.Models, ", "))
	}
	return gavelTruth(spec, m, nil)
}

// estimate makes a ground truth for a GPU nobody measured out of a measured
// one: every throughput × Ratio(model), every configuration unmeasured.
type estimate struct {
	Ratio func(model string) float64
	Why   string // the ratio's source, for Family.Notes
}

// gavelTruth builds the ground truth of spec from Gavel's measurements on
// GPU model (gavel.V100, ...), scaled by est when not nil.
func gavelTruth(spec GPUSpec, model string, est *estimate) (*Truth, error) {
	all, err := gavel.Load()
	if err != nil {
		return nil, err
	}
	tab, unc := all.Table(model), all.Unconsolidated(model)
	if tab == nil || unc == nil {
		return nil, fmt.Errorf("sim: Gavel data lacks %s, on one server or spread", model)
	}
	if est != nil {
		tab, unc = scaleTable(tab, est.Ratio), scaleTable(unc, est.Ratio)
	}
	t := &Truth{GPU: spec, byName: map[string]*Family{}, kindIdx: map[string]int{}, gavelTab: tab, gavelUnc: unc, estimated: est != nil}
	b := &gavelBuilder{t: t, tab: tab, unc: unc, source: "Gavel's " + model}
	if err := b.build(); err != nil {
		return nil, err
	}
	if est != nil {
		for _, f := range t.families {
			if f.Class != elastico.Training {
				continue
			}
			f.Notes[0] = fmt.Sprintf("isolated throughput: estimated, %s measurements × %.3g (%s); no configuration measured on %s",
				b.source, est.Ratio(f.Name), est.Why, spec.Model)
			f.Notes[1] = "co-location: " + b.source + "'s pairs and rank-one model, carried over: slowdowns taken to be the same on " + spec.Model
		}
	}
	return t, nil
}

// scaleTable returns a copy of tab with every throughput of a model × r(model):
// the co-location speeds (shared over alone) stay the same.
func scaleTable(tab *gavel.Table, r func(model string) float64) *gavel.Table {
	out := &gavel.Table{Isolated: make(map[gavel.Key]float64, len(tab.Isolated)), Pairs: make(map[[2]gavel.JobType]gavel.Pair, len(tab.Pairs))}
	for k, v := range tab.Isolated {
		out.Isolated[k] = v * r(k.Type.Model)
	}
	for k, p := range tab.Pairs {
		out.Pairs[k] = gavel.Pair{Self: p.Self * r(k[0].Model), Other: p.Other * r(k[1].Model)}
	}
	return out
}

type gavelBuilder struct {
	t        *Truth
	tab, unc *gavel.Table
	source   string // "Gavel's V100": whose measurements
	types    []gavel.JobType
	// per model: ascending batches
	batches map[string][]int
	counts  []int // scale factors present in the data (1, 2, 4, 8)
}

func (b *gavelBuilder) build() error {
	t := b.t
	b.types = b.tab.Types()
	b.batches = map[string][]int{}
	for _, ty := range b.types {
		if _, ok := gavelModels[ty.Model]; !ok {
			return fmt.Errorf("sim: Gavel job type %q has no model description", ty)
		}
		if b.tab.Isolated[gavel.Key{Type: ty, Scale: 1}] <= 0 {
			return fmt.Errorf("sim: Gavel %s: %q has no isolated throughput", t.GPU.Model, ty)
		}
		b.batches[ty.Model] = append(b.batches[ty.Model], ty.BatchSize)
	}
	for k := range b.tab.Isolated {
		if !slices.Contains(b.counts, k.Scale) {
			b.counts = append(b.counts, k.Scale)
		}
	}
	slices.Sort(b.counts)

	// Kinds, with SM utilization from the step-time model.
	sm := map[gavel.JobType]float64{}
	for model, bs := range b.batches {
		slices.Sort(bs)
		steps := make([]float64, len(bs))
		for i, bb := range bs {
			steps[i] = 1 / b.tab.Isolated[gavel.Key{Type: gavel.JobType{Model: model, BatchSize: bb}, Scale: 1}]
		}
		for i, u := range smFromStepTimes(bs, steps) {
			sm[gavel.JobType{Model: model, BatchSize: bs[i]}] = u
		}
	}
	for _, ty := range b.types {
		t.addKind(Kind{Name: ty.String(), SM: sm[ty]})
	}
	nTrain := len(t.kinds)

	// Measured pairs and the rank-one model for the rest.
	var obs []pairObs
	meas := map[[2]int]float64{}
	for i, a := range b.types {
		for j, o := range b.types {
			s, ok := b.tab.Speed(a, o)
			if !ok {
				continue
			}
			meas[[2]int{i, j}] = s
			obs = append(obs, pairObs{a: i, b: j, y: math.Max(0, 1/s-1)})
		}
	}
	if len(obs) < 2*nTrain {
		return fmt.Errorf("sim: Gavel %s: only %d measured pairs", t.GPU.Model, len(obs))
	}
	sens, press := fitRankOne(nTrain, obs)
	cv, base := crossValidate(nTrain, obs)

	// Models with one batch size have no step-time fit: their SM use comes
	// from their measured pressure on others, through the line that links
	// pressure and SM use across the models that have both.
	var xs, ys []float64
	for i, ty := range b.types {
		if len(b.batches[ty.Model]) > 1 {
			xs = append(xs, press[i])
			ys = append(ys, t.kinds[i].SM)
		}
	}
	c0, c1 := lineFit(xs, ys)
	for i, ty := range b.types {
		if len(b.batches[ty.Model]) == 1 {
			t.kinds[i].SM = clamp(c0+c1*press[i], 0.02, 1)
		}
	}

	// Inference kinds get sensitivity and pressure from lines against SM use.
	var smx, sy, py []float64
	for i := 0; i < nTrain; i++ {
		smx = append(smx, t.kinds[i].SM)
		sy = append(sy, sens[i])
		py = append(py, press[i])
	}
	t.lines.s0, t.lines.s1 = lineFit(smx, sy)
	t.lines.p0, t.lines.p1 = lineFit(smx, py)
	addKind := func(k Kind) int {
		i := t.addKind(k)
		if i == len(sens) {
			sens = append(sens, math.Max(0, t.lines.s0+t.lines.s1*k.SM))
			press = append(press, math.Max(0, t.lines.p0+t.lines.p1*k.SM))
		}
		return i
	}
	for _, im := range inferenceModels {
		f, err := t.inferenceFamily(im, addKind)
		if err != nil {
			return err
		}
		t.addFamily(f)
	}

	n := len(t.kinds)
	t.speed = make([]float64, n*n)
	t.measured = make([]bool, n*n)
	filled := 0
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			k := i*n + j
			if s, ok := meas[[2]int{i, j}]; ok {
				t.speed[k], t.measured[k] = s, true
				continue
			}
			t.speed[k] = 1 / (1 + sens[i]*press[j])
			filled++
		}
	}
	t.CoLocationFit = FitReport{
		Model:    "rank-one slowdown factorization, fitted on " + b.source + " pairs",
		Measured: len(obs), Filled: filled, CVMAPE: cv, BaseMAPE: base,
	}

	if err := b.scaling(); err != nil {
		return err
	}
	return b.families()
}

// inferenceFamily builds one offline-inference family on t's GPU, adding a
// co-location kind per configuration through addKind.
func (t *Truth) inferenceFamily(im *inferenceSpec, addKind func(Kind) int) (*Family, error) {
	f := &Family{
		Name: im.Name, Class: elastico.Inference, Params: im.Params, Optimizer: elastico.AdaScale, Unit: "tokens", infer: im,
		Notes: []string{
			"throughput, SM use and memory: the offline-inference roofline model (rst.LLMSpec.Roofline), not measured",
			"co-location: the rank-one model, with sensitivity and pressure from lines against SM use fitted on Gavel's V100 kinds",
		},
	}
	for _, kv := range kvFracs {
		for _, seqs := range maxSeqs {
			tput, u, mem, ok := im.config(t.GPU, kv, seqs)
			if !ok {
				continue
			}
			id := fmt.Sprintf("kv%.2f-s%d", kv, seqs)
			k := addKind(Kind{Name: im.Name + " " + id, SM: u})
			f.Configs = append(f.Configs, Variant{
				Configuration: elastico.Configuration{ID: id, GPUs: 1, KVCacheFrac: kv, MaxSeqs: seqs, AMP: true},
				Throughput:    tput, SpreadThroughput: tput, SM: u, Memory: mem, CPU: inferCPU, RAM: inferRAM,
				Efficiency: 1, Kind: k,
			})
		}
	}
	if len(f.Configs) == 0 {
		return nil, fmt.Errorf("sim: inference family %s fits no configuration on %s", im.Name, t.GPU.Model)
	}
	return f, nil
}

// scaling fits the data-parallel scaling model on every type measured at
// more than one GPU.
func (b *gavelBuilder) scaling() error {
	sm := &b.t.scaling
	sm.counts = b.counts
	var ratios []float64
	for _, n := range b.counts {
		var cons, spread []float64
		for _, ty := range b.types {
			t1 := b.tab.Isolated[gavel.Key{Type: ty, Scale: 1}]
			if c := b.tab.Isolated[gavel.Key{Type: ty, Scale: n}]; c > 0 {
				cons = append(cons, c/(float64(n)*t1))
			}
			if u := b.unc.Isolated[gavel.Key{Type: ty, Scale: n}]; u > 0 {
				spread = append(spread, u/(float64(n)*t1))
			}
		}
		if len(cons) == 0 || len(spread) == 0 {
			return fmt.Errorf("sim: Gavel %s: no type measured on %d GPUs", b.t.GPU.Model, n)
		}
		sm.cons = append(sm.cons, median(cons))
		sm.spread = append(sm.spread, median(spread))
	}
	last := len(b.counts) - 1
	for _, ty := range b.types {
		hi := b.unc.Isolated[gavel.Key{Type: ty, Scale: b.counts[last]}]
		lo := b.unc.Isolated[gavel.Key{Type: ty, Scale: b.counts[last-1]}]
		if hi > 0 && lo > 0 {
			// per-GPU ratio across one doubling of the count
			ratios = append(ratios, (hi/float64(b.counts[last]))/(lo/float64(b.counts[last-1])))
		}
	}
	sm.perDoubling = math.Min(1, median(ratios))
	if math.IsNaN(sm.perDoubling) {
		return fmt.Errorf("sim: Gavel %s: no type measured at %d and %d GPUs", b.t.GPU.Model, b.counts[last-1], b.counts[last])
	}
	return nil
}

func (b *gavelBuilder) families() error {
	t := b.t
	models := make([]string, 0, len(b.batches))
	for m := range b.batches {
		models = append(models, m)
	}
	slices.Sort(models)
	for _, model := range models {
		spec := gavelModels[model]
		mem, err := memoryOf(model)
		if err != nil {
			return err
		}
		bs := b.batches[model]
		f := &Family{
			Name: model, Class: elastico.Training, Params: mem.Params, Optimizer: spec.Optimizer,
			Unit: "samples", RefBatch: max(bs[0], 1), model: spec, mem: mem, batches: bs,
			Notes: []string{
				"isolated throughput: " + b.source + " measurements (steps/s × per-GPU batch), on one server and spread (\"unconsolidated\")",
				"co-location: Gavel's measured pairs; unmeasured pairs from the rank-one model",
				"memory: rst's memory model: " + mem.Basis,
				"SM use: the step-time model (sim/models.go: smFromStepTimes)",
			},
		}
		if bs[0] == 0 {
			f.Unit = "steps"
		}
		f.Noise = rst.NoiseScale{Phi: math.Inf(1), Base: f.RefBatch}
		if spec.Pollux != "" {
			fit, err := rst.PolluxNoiseScale(spec.Pollux)
			if err != nil {
				return err
			}
			f.Noise.Phi = fit.Phi
			f.Notes = append(f.Notes, fmt.Sprintf("statistical efficiency: Pollux's %s (%s), φ = %.4g samples (rst.PolluxNoiseScale)", spec.Pollux, spec.Why, fit.Phi))
		} else {
			f.Notes = append(f.Notes, "statistical efficiency: not modelled (no batch knob, no gradient statistics)")
		}
		for _, n := range b.counts {
			if n > t.GPU.PerNode {
				continue
			}
			for _, bb := range bs {
				ty := gavel.JobType{Model: model, BatchSize: bb}
				if b.tab.Isolated[gavel.Key{Type: ty, Scale: n}] <= 0 {
					continue
				}
				if !slices.Contains(f.gpus, n) {
					f.gpus = append(f.gpus, n)
				}
				c, err := t.trainingConfig(f, bb, n)
				if err != nil {
					return err
				}
				f.Configs = append(f.Configs, c)
			}
		}
		t.addFamily(f)
	}
	return nil
}

// gavelTypes maps a family and per-GPU batch back to Gavel's job type.
func gavelType(f *Family, localBatch int) gavel.JobType {
	return gavel.JobType{Model: f.Name, BatchSize: localBatch}
}

// trainingConfig evaluates one training configuration of a Gavel family.
func (t *Truth) trainingConfig(f *Family, localBatch, gpus int) (Variant, error) {
	kind, ok := t.trainingKind(f, localBatch)
	if !ok {
		return Variant{}, fmt.Errorf("sim: family %q: no kind for batch %d", f.Name, localBatch)
	}
	tab, unc := t.gavelTab, t.gavelUnc
	if tab == nil {
		return Variant{}, fmt.Errorf("sim: family %q: no Gavel measurements on %s", f.Name, t.GPU.Model)
	}
	ty := gavelType(f, localBatch)
	perStep := float64(max(localBatch, 1))
	t1 := tab.Isolated[gavel.Key{Type: ty, Scale: 1}]

	// Per-GPU throughputs measured for this type, on one server and spread.
	var cx, sx []int
	var cy, sy []float64
	for _, n := range t.scaling.counts {
		if v := tab.Isolated[gavel.Key{Type: ty, Scale: n}]; v > 0 {
			cx, cy = append(cx, n), append(cy, v/float64(n))
		}
		if n == 1 {
			sx, sy = append(sx, 1), append(sy, t1)
		} else if v := unc.Isolated[gavel.Key{Type: ty, Scale: n}]; v > 0 {
			sx, sy = append(sx, n), append(sy, v/float64(n))
		}
	}
	perGPU := func(xs []int, ys []float64, spread bool) (float64, bool) {
		if i, ok := slices.BinarySearch(xs, gpus); ok {
			return ys[i], true
		}
		if len(xs) >= 2 {
			return interpLog2(xs, ys, gpus, t.scaling.perDoubling), false
		}
		return t1 * t.scaling.eff(gpus, spread), false
	}
	cons, measured := perGPU(cx, cy, false)
	spread, _ := perGPU(sx, sy, true)
	if gpus > t.GPU.PerNode {
		cons, measured = spread, false
	}
	// A job type without a batch size has none in its configuration,
	// except CycleGAN, whose command leaves cyclegan.py's default of 1.
	global := localBatch * gpus
	if localBatch == 0 && f.Name == "CycleGAN" {
		global = gpus
	}
	c := Variant{
		Configuration: elastico.Configuration{
			ID: trainingID(localBatch, gpus), BatchSize: global, GPUs: gpus,
		},
		LocalBatch:       localBatch,
		Throughput:       cons * float64(gpus) * perStep,
		SpreadThroughput: spread * float64(gpus) * perStep,
		SM:               t.kinds[kind].SM,
		Memory:           f.mem.Replica(localBatch, false, f.model.AMP),
		CPU:              trainCPU,
		RAM:              trainRAM,
		Efficiency:       f.efficiency(localBatch * gpus),
		Measured:         measured && !t.estimated,
		Kind:             kind,
	}
	if gpus == 1 {
		c.SpreadThroughput = c.Throughput
	}
	return c, nil
}
