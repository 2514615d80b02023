package iac

import "errors"

// TrainConfig holds the MLP's hyper-parameters: what package iac/train
// trains with, and what a model records (ModelInfo.Config), which is why it
// is declared here. The zero value means every documented default;
// DefaultTrainConfig spells them out.
type TrainConfig struct {
	// Hidden are the hidden layers' widths, each in 1..MaxWidth.
	// Default {64, 32}: two layers, as the paper says, as wide as the
	// 2 µs prediction budget allows (package doc, Cost).
	Hidden []int
	// Dropout is the rate applied to every hidden layer's output while
	// training (inverted dropout). Default 0.2; negative: none.
	Dropout float64
	// LearningRate is Adam's step size. Default 1e-3.
	LearningRate float64
	// Beta1, Beta2, Epsilon are Adam's moment decays and its denominator's
	// guard. Defaults 0.9, 0.999, 1e-8.
	Beta1, Beta2, Epsilon float64
	// WeightDecay is the L2 penalty on weights (not biases), added to the
	// gradient. Default 1e-4; negative: none.
	WeightDecay float64
	// BatchSize is the mini-batch size. Default 32.
	BatchSize int
	// MaxEpochs bounds training. Default 2000.
	MaxEpochs int
	// Patience stops training after that many epochs without a better
	// validation loss. Default 200.
	Patience int
	// ValidationFrac is the share of the training groups held out for early
	// stopping, in (0, 0.5]. Default 0.2.
	ValidationFrac float64
	// NoRefit keeps the weights early stopping chose, trained without the
	// validation split. By default training then starts again from fresh
	// weights and trains on every sample for the best epoch count, which
	// lowered the cross-validated error on Gavel (iac/train's package doc).
	NoRefit bool
	// Label is free text stored with the model: what it was trained on.
	Label string
}

// DefaultTrainConfig returns the defaults that the zero TrainConfig stands
// for.
func DefaultTrainConfig() TrainConfig {
	return TrainConfig{
		Hidden:         []int{64, 32},
		Dropout:        0.2,
		LearningRate:   1e-3,
		Beta1:          0.9,
		Beta2:          0.999,
		Epsilon:        1e-8,
		WeightDecay:    1e-4,
		BatchSize:      32,
		MaxEpochs:      2000,
		Patience:       200,
		ValidationFrac: 0.2,
	}
}

// ModelInfo says how a model was trained; it travels in the model file.
type ModelInfo struct {
	Label          string      // TrainConfig.Label
	Config         TrainConfig // the resolved hyper-parameters
	TrainSamples   int         // samples the final weights were fitted on (all of them after a refit)
	ValSamples     int         // samples held out while early stopping chose the epoch count
	Epochs         int         // epochs run
	BestEpoch      int         // the epoch with the lowest validation loss (1-based); a refit trains that many
	TrainLoss      float64     // mean squared relative error of the final weights on the samples they were fitted on, without dropout
	ValidationLoss float64     // the lowest mean squared relative error on the validation split
}

// ErrTooFewSamples is returned when a training set cannot be split into a
// training and a validation part.
var ErrTooFewSamples = errors.New("iac: too few samples to train")
