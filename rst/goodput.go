package rst

import (
	"fmt"
	"math"
	"slices"

	"gonum.org/v1/gonum/stat"

	"github.com/elastico/elastico"
)

// NoiseScale is Pollux's model of statistical efficiency (Qiao et al.,
// OSDI'21, §3.1, after McCandlish et al., 2018): one sample processed at
// batch size M is worth
//
//	E(M) = (φ + M0) / (φ + M)
//
// samples at the base batch size M0, where φ = tr(Σ)/|G|² is the gradient
// noise scale in samples (Σ the per-sample gradient covariance, G the true
// gradient). Below φ a larger batch averages away noise the optimizer could
// not use anyway, so E stays near 1; above φ the extra samples mostly
// duplicate information, so E falls towards (φ+M0)/M and the progress per
// step stops growing.
//
// Work is counted in reference-equivalent samples: samples at M0. A training
// job is done when it has done its work, whatever batch sizes it ran at; a
// reshaped job (another batch size, with the learning rate scaled by
// [LRScale]) needs more or fewer samples, never less work.
type NoiseScale struct {
	// Phi is φ in samples; +Inf for a gradient that is pure noise (every
	// sample counts in full at any batch size), 0 for no noise.
	Phi float64
	// Base is M0, the batch size whose samples are the unit of work. The
	// efficiency is 1 at Base, below 1 above it and above 1 below it.
	Base int
}

// Validate reports whether n is usable, naming the bad field.
func (n NoiseScale) Validate() error {
	if n.Base < 1 {
		return errorf("noise scale: Base is %d, want ≥ 1", n.Base)
	}
	if math.IsNaN(n.Phi) || n.Phi < 0 {
		return errorf("noise scale: Phi is %g, want ≥ 0 (or +Inf)", n.Phi)
	}
	return nil
}

// Efficiency returns E(batch) = (φ+M0)/(φ+batch): the reference-equivalent
// samples one sample at this batch size is worth. It returns NaN for a
// batch size that is not positive.
func (n NoiseScale) Efficiency(batch int) float64 {
	if batch < 1 || n.Base < 1 {
		return math.NaN()
	}
	if math.IsInf(n.Phi, 1) {
		return 1
	}
	return (n.Phi + float64(n.Base)) / (n.Phi + float64(batch))
}

// Work returns the reference-equivalent work of processing samples at the
// given batch size: samples × E(batch).
func (n NoiseScale) Work(samples float64, batch int) float64 {
	return samples * n.Efficiency(batch)
}

// Samples returns how many samples at the given batch size do the given
// reference-equivalent work: work / E(batch).
func (n NoiseScale) Samples(work float64, batch int) float64 {
	return work / n.Efficiency(batch)
}

// Steps returns how many optimizer steps at the given batch size do the
// given reference-equivalent work.
func (n NoiseScale) Steps(work float64, batch int) float64 {
	return n.Samples(work, batch) / float64(batch)
}

// Goodput returns the reference-equivalent work per second of a
// configuration that processes throughput samples per second at the given
// batch size.
func (n NoiseScale) Goodput(throughput float64, batch int) float64 {
	return throughput * n.Efficiency(batch)
}

// SetEfficiency fills the Efficiency field of every training profile of the
// family from its batch size. Profile.Efficiency must lie in (0, 1], so
// every batch size must be at least Base: build the NoiseScale with the
// family's smallest batch as Base ([NoiseScale.Rebase]). Inference profiles
// are left alone.
func (n NoiseScale) SetEfficiency(family []elastico.Profile) error {
	if err := n.Validate(); err != nil {
		return err
	}
	for i := range family {
		p := &family[i]
		if p.Class != elastico.Training {
			continue
		}
		if p.Config.BatchSize < n.Base {
			return errorf("configuration %q: Config.BatchSize %d is below the noise scale's Base %d (efficiency would exceed 1)",
				p.Config.ID, p.Config.BatchSize, n.Base)
		}
		p.Efficiency = n.Efficiency(p.Config.BatchSize)
	}
	return nil
}

// Rebase returns the same noise scale counted against another base batch
// size, and the factor that converts work: one sample at the new base is
// worth factor samples at the old one (factor = n.Efficiency(base)), so work
// counted against the new base is work against the old one divided by
// factor.
func (n NoiseScale) Rebase(base int) (NoiseScale, float64) {
	m := NoiseScale{Phi: n.Phi, Base: base}
	return m, n.Efficiency(base)
}

// GradientPoint is the state of a training run at one instant: what
// AdaptDL records, and what Pollux's validation-*.csv files hold.
type GradientPoint struct {
	// Progress is the reference-equivalent work so far, in steps at the base
	// batch size (AdaptDL's progress: the sum of every step's gain).
	Progress float64
	// Iteration is the number of optimizer steps so far.
	Iteration float64
	// GradSqr estimates |G|²; GradVar estimates tr(Σ) for a batch of the
	// base size, i.e. the per-sample trace divided by Base.
	GradSqr, GradVar float64
}

// GradientRun is a training run at one global batch size.
type GradientRun struct {
	Batch  int
	Points []GradientPoint
}

// BatchEfficiency is the statistical efficiency at one batch size.
type BatchEfficiency struct {
	Batch int
	// Observed is the efficiency the run achieved: reference-equivalent
	// samples done per sample processed, over the whole run.
	Observed float64
	// Model is the fitted NoiseScale's Efficiency(Batch).
	Model float64
}

// NoiseScaleFit is what FitNoiseScale found.
type NoiseScaleFit struct {
	NoiseScale
	// Gradient is φ computed from the gradient statistics alone (the runs'
	// snapshots of GradVar·Base/GradSqr, weighted by the work done while each
	// held), for comparison with the fit; see FitNoiseScale.
	Gradient float64
	// Batches are the observed and fitted efficiencies of every run, by
	// increasing batch size.
	Batches []BatchEfficiency
	// MaxError is the largest |Observed − Model| over Batches.
	MaxError float64
}

// FitNoiseScale fits the noise scale φ of one model from training runs at
// several batch sizes, all counting progress in steps at the batch size
// base (the smallest run's, for Pollux's data).
//
// The fit uses what each run needed to finish: a run at batch M that
// reached progress P (reference-equivalent steps) after I steps processed
// I·M samples for P·M0 reference-equivalent ones, so its observed
// efficiency is E_obs(M) = P·M0/(I·M). Under the model 1/E(M) − 1 =
// (M − M0)/(φ + M0), a line through the origin in M − M0 whose slope gives φ;
// the slope is fitted by least squares (gonum's stat.LinearRegression),
// weighted by E_obs² so that every run counts by its relative error. A slope
// that is not positive (the runs show no loss of efficiency) gives φ = +Inf.
//
// The progress AdaptDL records is the per-step integral of Pollux's own gain
// (φ_t+M0)/(φ_t+M)·M/M0 computed from the gradient statistics at every step,
// so the fit is Pollux's model integrated at full resolution. The snapshots
// of GradSqr and GradVar in the points are coarser (once per epoch); the φ
// they give directly is reported as Gradient, for comparison. It is not used
// because the noise scale a run measures grows with its own batch size, so
// pooled snapshots misstate the efficiency of the larger batches.
func FitNoiseScale(base int, runs []GradientRun) (NoiseScaleFit, error) {
	if base < 1 {
		return NoiseScaleFit{}, errorf("fit noise scale: base batch %d, want ≥ 1", base)
	}
	if len(runs) < 2 {
		return NoiseScaleFit{}, errorf("fit noise scale: %d runs, want at least 2 batch sizes", len(runs))
	}
	var xs, ys, ws []float64
	var obs []BatchEfficiency
	var gradA, gradB float64
	distinct := map[int]bool{}
	for i, r := range runs {
		if r.Batch < base {
			return NoiseScaleFit{}, errorf("fit noise scale: runs[%d].Batch %d is below the base %d", i, r.Batch, base)
		}
		if len(r.Points) == 0 {
			return NoiseScaleFit{}, errorf("fit noise scale: runs[%d] (batch %d) has no points", i, r.Batch)
		}
		prev := 0.0
		for k, p := range r.Points {
			for _, f := range []struct {
				name string
				v    float64
			}{{"Progress", p.Progress}, {"Iteration", p.Iteration}, {"GradSqr", p.GradSqr}, {"GradVar", p.GradVar}} {
				if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
					return NoiseScaleFit{}, errorf("fit noise scale: runs[%d].Points[%d].%s is %g, want a finite number ≥ 0", i, k, f.name, f.v)
				}
			}
			if p.Progress < prev {
				return NoiseScaleFit{}, errorf("fit noise scale: runs[%d].Points[%d].Progress decreases", i, k)
			}
			w := p.Progress - prev
			prev = p.Progress
			switch {
			case p.GradSqr > 0:
				phi := float64(base) * p.GradVar / p.GradSqr
				gradA += w * phi / (phi + float64(base))
				gradB += w / (phi + float64(base))
			case p.GradVar > 0: // no signal at all: pure noise, φ = ∞
				gradA += w
			}
		}
		end := r.Points[len(r.Points)-1]
		if end.Iteration <= 0 || end.Progress <= 0 {
			return NoiseScaleFit{}, errorf("fit noise scale: runs[%d] (batch %d) ends with no steps or no progress", i, r.Batch)
		}
		e := end.Progress * float64(base) / (end.Iteration * float64(r.Batch))
		obs = append(obs, BatchEfficiency{Batch: r.Batch, Observed: e})
		distinct[r.Batch] = true
		xs = append(xs, float64(r.Batch-base))
		ys = append(ys, 1/e-1)
		ws = append(ws, e*e)
	}
	if len(distinct) < 2 {
		return NoiseScaleFit{}, errorf("fit noise scale: every run has batch size %d, want at least 2 batch sizes", runs[0].Batch)
	}
	_, slope := stat.LinearRegression(xs, ys, ws, true)
	fit := NoiseScaleFit{NoiseScale: NoiseScale{Phi: math.Inf(1), Base: base}, Gradient: math.Inf(1)}
	if slope > 0 {
		fit.Phi = math.Max(0, 1/slope-float64(base))
	}
	if gradB > 0 {
		fit.Gradient = gradA / gradB
	}
	sortBatches(obs)
	for i := range obs {
		obs[i].Model = fit.Efficiency(obs[i].Batch)
		fit.MaxError = math.Max(fit.MaxError, math.Abs(obs[i].Observed-obs[i].Model))
	}
	fit.Batches = obs
	return fit, nil
}

func sortBatches(b []BatchEfficiency) {
	slices.SortStableFunc(b, func(x, y BatchEfficiency) int { return x.Batch - y.Batch })
}

func (f NoiseScaleFit) String() string {
	return fmt.Sprintf("φ = %.4g samples (base batch %d; from gradient snapshots %.4g), max efficiency error %.3f",
		f.Phi, f.Base, f.Gradient, f.MaxError)
}
