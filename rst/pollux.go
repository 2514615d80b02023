package rst

import (
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
	app, err := pollux.Load(model)
	if err != nil {
		return NoiseScaleFit{}, errorf("%w", err)
	}
	return fitApp(app)
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
