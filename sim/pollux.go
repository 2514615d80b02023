// Pollux's measurements as the simulator's ground truth; the other roles
// of the data: see the root package doc, The shipped measurements.

package sim

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/gavel"
	"github.com/elastico/elastico/internal/pollux"
	"github.com/elastico/elastico/rst"
)

// polluxModels says how each Pollux job trains (AdaptDL jobs use AdaScale,
// so their learning-rate scale is 1) and its completion point: Pollux's
// simulator runs each job for max_epochs epochs of its validation runs
// (simulator/applications.py), and a job is done at the progress the
// slowest of its runs had reached then.
var polluxModels = map[string]struct {
	maxEpochs, maxLocal int
	amp                 bool
}{
	"bert":        {maxEpochs: 2},
	"cifar10":     {maxEpochs: 100},
	"deepspeech2": {maxEpochs: 80},
	"imagenet":    {maxEpochs: 90, amp: true},
	"ncf":         {maxEpochs: 10},
	"yolov3":      {maxEpochs: 50, maxLocal: 8},
}

// polluxGPUs are the GPU counts of a Pollux family's standard
// configurations: one T4 node's 1, 2 and 4, and two and four whole nodes.
var polluxGPUs = []int{1, 2, 4, 8, 16}

// polluxApp is what a Pollux family keeps of its measurements.
type polluxApp struct {
	// step[placement][local batch] = seconds per step
	step map[string]map[int]float64
	// locals are the local batches measured on one GPU, ascending.
	locals []int
	// minBatch and maxBatch bound the global batch (the validated runs).
	minBatch, maxBatch int
	amp                bool
}

// PolluxTruth builds the ground truth of Pollux's six training jobs (bert,
// cifar10, deepspeech2, imagenet, ncf, yolov3) on the NVIDIA T4 nodes
// Pollux measured them on (4 GPUs per node): each a family of (local batch
// × GPU count) configurations whose throughputs are Pollux's measured step
// times (placements.csv; one node for up to 4 GPUs, the placement spread
// evenly over nodes otherwise), with statistical efficiency from Pollux's
// gradient statistics (rst.PolluxNoiseScale) and, as work, the whole
// training Pollux's simulator runs. No data set measured co-location on a
// T4: every pair comes from the rank-one co-location model fitted on
// Gavel's V100 pairs, through the lines linking sensitivity and pressure to
// SM use. The offline-inference families are added for the T4.
func PolluxTruth() (*Truth, error) {
	v100, err := GavelTruth(gavel.V100)
	if err != nil {
		return nil, err
	}
	t := &Truth{GPU: T4, byName: map[string]*Family{}, kindIdx: map[string]int{}}
	var sens, press []float64
	addKind := func(k Kind) int {
		i := t.addKind(k)
		if i == len(sens) {
			sens = append(sens, math.Max(0, v100.lines.s0+v100.lines.s1*k.SM))
			press = append(press, math.Max(0, v100.lines.p0+v100.lines.p1*k.SM))
		}
		return i
	}
	for _, name := range pollux.Models() {
		m, ok := polluxModels[name]
		if !ok {
			return nil, fmt.Errorf("sim: Pollux model %q: no completion point", name)
		}
		app, err := pollux.Load(name)
		if err != nil {
			return nil, err
		}
		mem, err := memoryOf(name)
		if err != nil {
			return nil, err
		}
		fit, err := rst.PolluxNoiseScale(name)
		if err != nil {
			return nil, err
		}
		pa := &polluxApp{step: map[string]map[int]float64{}, amp: m.amp,
			minBatch: app.Runs[0].Batch, maxBatch: app.Runs[len(app.Runs)-1].Batch}
		for _, p := range app.Placements {
			if pa.step[p.Placement] == nil {
				pa.step[p.Placement] = map[int]float64{}
			}
			pa.step[p.Placement][p.LocalBatch] = p.StepTime
		}
		for l := range pa.step["1"] {
			if m.maxLocal == 0 || l <= m.maxLocal {
				pa.locals = append(pa.locals, l)
			}
		}
		slices.Sort(pa.locals)
		if len(pa.locals) < 2 {
			return nil, fmt.Errorf("sim: Pollux model %q: %d local batches measured on one GPU", name, len(pa.locals))
		}
		steps := make([]float64, len(pa.locals))
		for i, l := range pa.locals {
			steps[i] = pa.step["1"][l]
		}
		sm := smFromStepTimes(pa.locals, steps)
		// The job is done when every validation run had reached epoch
		// maxEpochs: Pollux's get_progress(max_epochs).
		work := math.Inf(1)
		for _, r := range app.Runs {
			if len(r.Points) < m.maxEpochs {
				return nil, fmt.Errorf("sim: Pollux model %q: run at batch %d has %d epochs, want %d", name, r.Batch, len(r.Points), m.maxEpochs)
			}
			work = math.Min(work, r.Points[m.maxEpochs-1].Progress)
		}
		f := &Family{
			Name: name, Class: elastico.Training, Params: mem.Params, Optimizer: elastico.AdaScale, Unit: "samples",
			RefBatch: pa.minBatch, Noise: rst.NoiseScale{Phi: fit.Phi, Base: pa.minBatch},
			Work: work * float64(pa.minBatch), mem: mem, batches: pa.locals, pollux: pa,
			Notes: []string{
				"isolated throughput: Pollux's T4 step times (placements.csv), one node up to 4 GPUs, spread evenly over nodes otherwise; beyond 16 GPUs, the per-doubling scaling of 8 → 16",
				fmt.Sprintf("statistical efficiency: Pollux's gradient statistics, φ = %.4g samples (rst.PolluxNoiseScale)", fit.Phi),
				fmt.Sprintf("work: the whole training Pollux's simulator runs (%d epochs), %.4g reference samples", m.maxEpochs, work*float64(pa.minBatch)),
				"memory: rst's memory model: " + mem.Basis,
				"SM use: the step-time model on the one-GPU step times",
				"co-location: not measured on a T4; the rank-one model fitted on Gavel's V100 pairs, through its lines against SM use",
			},
		}
		for i, l := range pa.locals {
			addKind(Kind{Name: polluxKindName(name, l), SM: sm[i]})
		}
		for _, n := range polluxGPUs {
			for _, l := range pa.locals {
				if g := l * n; g < pa.minBatch || g > pa.maxBatch {
					continue
				}
				c, err := t.polluxConfig(f, l, n)
				if err != nil {
					continue // not measured at this placement and batch
				}
				if c.Memory <= t.GPU.Memory {
					f.Configs = append(f.Configs, c)
				}
			}
		}
		if len(f.Configs) == 0 {
			return nil, fmt.Errorf("sim: Pollux model %q: no configuration", name)
		}
		t.addFamily(f)
	}
	for _, im := range inferenceModels {
		f, err := t.inferenceFamily(im, addKind)
		if err != nil {
			return nil, err
		}
		t.addFamily(f)
	}
	n := len(t.kinds)
	t.speed = make([]float64, n*n)
	t.measured = make([]bool, n*n)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			t.speed[i*n+j] = 1 / (1 + sens[i]*press[j])
		}
	}
	t.lines = v100.lines
	t.CoLocationFit = v100.CoLocationFit
	t.CoLocationFit.Measured = 0
	t.CoLocationFit.Filled = n * n
	t.CoLocationFit.Model = "rank-one slowdown factorization fitted on Gavel's V100 pairs, applied to T4 kinds through its lines against SM use"
	return t, nil
}

// spreadPlacement returns the placement of n replicas spread evenly over
// the fewest nodes of per GPUs that is more than one node (digits
// ascending, as Pollux's data spell them).
func spreadPlacement(n, per int) string {
	k := max(2, (n+per-1)/per)
	if k > n {
		return ""
	}
	var b strings.Builder
	for i := range k {
		// the first nodes take the smaller shares
		share := n / k
		if i >= k-n%k {
			share++
		}
		b.WriteString(strconv.Itoa(share))
	}
	return b.String()
}

// stepAt returns the step time of a placement at a local batch: measured,
// or linear between the two measured local batches around it (Pollux's
// simulator interpolates the same way).
func (pa *polluxApp) stepAt(placement string, local int) (float64, bool) {
	rows := pa.step[placement]
	if rows == nil {
		// Pollux's data spell a placement in one of its orders.
		for key, r := range pa.step {
			if sortedDigits(key) == sortedDigits(placement) {
				rows = r
				break
			}
		}
	}
	if rows == nil {
		return 0, false
	}
	if s, ok := rows[local]; ok {
		return s, true
	}
	lo, hi := 0, math.MaxInt
	for l := range rows {
		if l < local && l > lo {
			lo = l
		}
		if l > local && l < hi {
			hi = l
		}
	}
	if lo == 0 || hi == math.MaxInt {
		return 0, false
	}
	w := float64(local-lo) / float64(hi-lo)
	return rows[lo]*(1-w) + rows[hi]*w, true
}

func sortedDigits(s string) string {
	b := []byte(s)
	slices.Sort(b)
	return string(b)
}

// polluxConfig evaluates one configuration of a Pollux family.
func (t *Truth) polluxConfig(f *Family, local, gpus int) (Variant, error) {
	pa := f.pollux
	kind, ok := t.trainingKind(f, local)
	if !ok {
		return Variant{}, fmt.Errorf("sim: family %q: local batch %d not measured", f.Name, local)
	}
	per := t.GPU.PerNode
	samples := func(placement string, n int) (float64, bool) {
		s, ok := pa.stepAt(placement, local)
		if !ok {
			return 0, false
		}
		return float64(n*local) / s, true
	}
	// Beyond the largest measured placement (four whole nodes), scale the
	// per-GPU throughput by the per-doubling ratio of 8 → 16 GPUs.
	extrapolate := func(n int) (float64, bool) {
		t8, ok8 := samples(spreadPlacement(2*per, per), 2*per)
		t16, ok16 := samples(spreadPlacement(4*per, per), 4*per)
		if !ok8 || !ok16 {
			return 0, false
		}
		r := math.Min(1, (t16/float64(4*per))/(t8/float64(2*per)))
		return float64(n) * t16 / float64(4*per) * math.Pow(r, math.Log2(float64(n)/float64(4*per))), true
	}
	var cons, spread float64
	measured := true
	switch {
	case gpus == 1:
		var ok bool
		if cons, ok = samples("1", 1); !ok {
			return Variant{}, fmt.Errorf("sim: family %q: no one-GPU step time at local batch %d", f.Name, local)
		}
		spread = cons
	case gpus > 4*per:
		var ok bool
		if spread, ok = extrapolate(gpus); !ok {
			return Variant{}, fmt.Errorf("sim: family %q: cannot extrapolate to %d GPUs at local batch %d", f.Name, gpus, local)
		}
		cons, measured = spread, false
	default:
		var ok bool
		if spread, ok = samples(spreadPlacement(gpus, per), gpus); !ok {
			return Variant{}, fmt.Errorf("sim: family %q: placement %s not measured at local batch %d", f.Name, spreadPlacement(gpus, per), local)
		}
		cons = spread
		if gpus <= per {
			if cons, ok = samples(strconv.Itoa(gpus), gpus); !ok {
				return Variant{}, fmt.Errorf("sim: family %q: placement %d not measured at local batch %d", f.Name, gpus, local)
			}
		}
	}
	return Variant{
		Configuration: elastico.Configuration{
			ID: trainingID(local, gpus), BatchSize: local * gpus, GPUs: gpus, AMP: pa.amp,
		},
		LocalBatch: local, Throughput: cons, SpreadThroughput: spread,
		SM: t.kinds[kind].SM, Memory: f.mem.Replica(local, false, pa.amp), CPU: trainCPU, RAM: trainRAM,
		Efficiency: f.efficiency(local * gpus), Measured: measured, Kind: kind,
	}, nil
}
