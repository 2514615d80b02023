// Pollux's measurements as profile families and noise scales; the other
// roles of the data: see the root package doc, The shipped measurements.

package rst

import (
	"slices"
	"strings"
	"sync"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/pollux"
)

// PolluxModels returns the names of the six training jobs whose
// measurements Pollux published and elastico embeds: bert, cifar10,
// deepspeech2, imagenet, ncf, yolov3.
func PolluxModels() []string { return pollux.Models() }

// PolluxNoiseScale fits the noise scale of one of Pollux's models
// ([PolluxModels]) from its embedded validation runs (Pollux's
// simulator/traces/<model>/validation-*.csv), with the smallest run's batch
// size as Base, as Pollux counts progress.
func PolluxNoiseScale(model string) (NoiseScaleFit, error) {
	app, err := loadPollux(model)
	if err != nil {
		return NoiseScaleFit{}, errorf("%w", err)
	}
	return fitApp(app)
}

// polluxApps caches the parsed embedded models; RST only reads them.
var polluxApps sync.Map // model name → *pollux.App

func loadPollux(model string) (*pollux.App, error) {
	if a, ok := polluxApps.Load(model); ok {
		return a.(*pollux.App), nil
	}
	app, err := pollux.Load(model)
	if err != nil {
		return nil, err
	}
	a, _ := polluxApps.LoadOrStore(model, app)
	return a.(*pollux.App), nil
}

func fitApp(app *pollux.App) (NoiseScaleFit, error) {
	runs := make([]GradientRun, len(app.Runs))
	for i, r := range app.Runs {
		runs[i].Batch = r.Batch
		runs[i].Points = make([]GradientPoint, len(r.Points))
		for k, p := range r.Points {
			runs[i].Points[k] = GradientPoint{Progress: p.Progress, Iteration: p.Iteration, GradSqr: p.GradSqr, GradVar: p.GradVar}
		}
	}
	fit, err := FitNoiseScale(app.Runs[0].Batch, runs)
	if err != nil {
		return NoiseScaleFit{}, errorf("pollux model %q: %w", app.Name, err)
	}
	return fit, nil
}

// PolluxOptions tune PolluxFamily. The zero value (or nil) is the default.
type PolluxOptions struct {
	// MultiNode adds the configurations that fill several whole nodes (the
	// placements "44", "444", "4444": 8, 12 and 16 GPUs) for jobs allowed
	// to spread; by default only one node's 1 to 4 GPUs are used.
	MultiNode bool
}

// polluxMaxLocal is the largest local batch Pollux's simulator lets a model
// use when it is below the largest measured (applications.py: yolov3's
// max_local_bsz=8).
var polluxMaxLocal = map[string]int{"yolov3": 8}

// PolluxFamily builds the profile family of one of Pollux's models
// (PolluxModels) from its measured step times
// (simulator/traces/<model>/placements.csv, on AWS g4dn.12xlarge nodes of 4
// NVIDIA T4):
//
//   - one configuration per measured placement on one node (1–4 GPUs; with
//     MultiNode also 2–4 whole nodes) and local batch size l, with global
//     batch size M = GPUs·l, kept when M lies within the model's validated
//     batch sizes (the smallest and largest validation-*.csv), as Pollux's
//     simulator does, and l is within the simulator's local bound;
//   - throughput in samples/s = GPUs·l / step time (the step time includes
//     the gradient synchronization);
//   - efficiency from PolluxNoiseScale, with the smallest validated batch as
//     base, so a family's goodput is reference-equivalent samples per second;
//   - GPU memory per replica from the model's MemoryModel at l (imagenet
//     trains under apex AMP, so its configurations use AMP); SM share 1; CPU
//     and RAM one T4's share of a g4dn.12xlarge (DataGPU "T4").
//
// Pollux's jobs train with AdaScale (AdaptDL's AdaptiveDataParallel), so
// their learning-rate scale is 1 (elastico.AdaScale). The family is ordered
// by GPU count, then batch size.
func PolluxFamily(model string, opts *PolluxOptions) ([]elastico.Profile, error) {
	var o PolluxOptions
	if opts != nil {
		o = *opts
	}
	app, err := loadPollux(model)
	if err != nil {
		return nil, errorf("%w", err)
	}
	fit, err := fitApp(app)
	if err != nil {
		return nil, err
	}
	mm, ok := memoryModels[model]
	if !ok {
		return nil, errorf("pollux: model %q has no memory model", model)
	}
	t4 := dataGPUs["T4"]
	amp := model == "imagenet"
	minBatch, maxBatch := app.Runs[0].Batch, app.Runs[len(app.Runs)-1].Batch
	maxLocal := polluxMaxLocal[model]
	var fam []elastico.Profile
	for i := range app.Placements {
		pl := &app.Placements[i]
		if !wholeNodes(pl.Placement, o.MultiNode) {
			continue
		}
		m := pl.Replicas * pl.LocalBatch
		if m < minBatch || m > maxBatch || maxLocal > 0 && pl.LocalBatch > maxLocal {
			continue
		}
		c := elastico.Configuration{BatchSize: m, AMP: amp, GPUs: pl.Replicas}
		c.ID = ConfigID(c)
		fam = append(fam, elastico.Profile{
			Family: model, Class: elastico.Training, Params: mm.Params,
			Config:     c,
			Demand:     elastico.Demand{GPUs: pl.Replicas, SM: 1, GPUMemory: mm.Replica(pl.LocalBatch, false, amp), CPU: t4.CPU, RAM: t4.RAM},
			Throughput: pl.Samples(),
			Efficiency: fit.Efficiency(m),
			Hardware:   elastico.Hardware{GPUModel: t4.Model},
		})
	}
	if len(fam) == 0 {
		return nil, errorf("pollux: model %q: no measured configuration within batch sizes [%d, %d]", model, minBatch, maxBatch)
	}
	slices.SortStableFunc(fam, func(a, b elastico.Profile) int {
		if a.Config.GPUs != b.Config.GPUs {
			return a.Config.GPUs - b.Config.GPUs
		}
		return a.Config.BatchSize - b.Config.BatchSize
	})
	return fam, nil
}

// wholeNodes reports whether a placement is one node ("1" to "4"), or, with
// multi, several full nodes ("44", "444", ...).
func wholeNodes(p string, multi bool) bool {
	if len(p) == 1 {
		return true
	}
	return multi && strings.Trim(p, "4") == ""
}
