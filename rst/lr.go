package rst

import (
	"math"

	"github.com/elastico/elastico"
)

// LRScale returns the factor by which a training job's learning rate must be
// multiplied when its global batch size changes from refBatch (the batch the
// user tuned the learning rate for) to batch, so that the reshaped run is
// still the same training run:
//
//   - SGD: linear, batch/refBatch (Goyal et al., 2017, "Accurate, Large
//     Minibatch SGD");
//   - Adam: square root, √(batch/refBatch) (Malladi et al., 2022, "On the
//     SDEs and Scaling Rules for Adaptive Gradient Algorithms");
//   - AdaScale: 1, because the optimizer scales its own gain (Johnson et al.,
//     2020) and the scheduler must not scale it twice.
//
// A batch size that is not positive (an inference job, a configuration
// without a batch knob) leaves the learning rate alone: the result is 1. An
// Optimizer value outside the three named ones also gives 1, since no rule
// is known for it; validate jobs with [CheckOptimizer] to reject those.
func LRScale(opt elastico.Optimizer, refBatch, batch int) float64 {
	if refBatch <= 0 || batch <= 0 || batch == refBatch {
		return 1
	}
	r := float64(batch) / float64(refBatch)
	switch opt {
	case elastico.SGD:
		return r
	case elastico.Adam:
		return math.Sqrt(r)
	}
	return 1
}

// CheckOptimizer returns an error naming the job if its Optimizer is not one
// of elastico.SGD, elastico.Adam and elastico.AdaScale.
func CheckOptimizer(j *elastico.Job) error {
	switch j.Optimizer {
	case elastico.SGD, elastico.Adam, elastico.AdaScale:
		return nil
	}
	return errorf("job %q: Optimizer is %d, want SGD, Adam or AdaScale", j.ID, int(j.Optimizer))
}
