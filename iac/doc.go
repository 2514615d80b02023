// Package iac predicts how much two jobs slow each other when they share one
// GPU (ElastiCo's interference-aware co-location, DESIGN.md 3.3), and says
// how far the prediction can be trusted.
//
//	m, err := iac.Default()                   // the embedded model
//	s := m.Slowdown(victim, aggressor)        // Ŝ ≥ 1, 0 allocations
//	if iac.DefaultTolerance.Violates(s, q) {  // τ(t) of Eq. 11 at queue pressure q
//		// keep the pair apart
//	}
//
// A user retrains on pairs measured in their own cluster with one call:
// [ReadDataset] reads profiles.csv and pairs.csv (formats in [ReadProfiles]
// and [Dataset.ReadPairs]), [Fit] trains, [WriteFile] saves, [ReadFile]
// loads. examples/iaceval evaluates, examples/iactrain rebuilds the embedded
// model, examples/gavel2csv writes Gavel's data in the CSV format. Package
// iactest is a conformance suite for any [elastico.Predictor].
//
// # Features
//
// [Vector] holds the 36 features of an ordered pair (victim A, aggressor B)
// in the order and with the names of telemetry/iac-features-36.csv (ten
// counters and six task attributes per job, four pairwise sums), then two
// supplements: each job's isolated throughput, log10. A feature that was
// not measured is missing (a bit in Vector.Present), never a number: a model
// sees a missing value as the training mean and, for a feature that is
// missing only sometimes, also a 0/1 input saying so. Features that never
// vary in the training data give no input at all. Standardized inputs are
// clamped to the range the training data spanned, and predictions are
// capped at the worst training slowdown, so a model does not extrapolate.
//
// Gavel (the public data the embedded model learns from) measured
// throughputs only: no counters, no memory. Its profiles carry batch size,
// parameter count (a family descriptor counted from Gavel's workload code),
// AMP and checkpointing (off in every Gavel command) and isolated throughput
// (steps/s); package iac/gaveldata documents each. So the embedded model's
// inputs are log2(batch)/10, log10(params)/12 and log10(throughput) of both
// jobs, and whether each job's batch size is known (A3C has none).
//
// # Model and training
//
// [MLP]: inputs → 64 ReLU → 32 ReLU → z, Ŝ = 1 + softplus(z), so it never
// predicts a speed-up. Prediction runs on flat slices with activations in
// fixed arrays on the stack: no allocation. [Train] minimizes the mean
// squared relative error ((Ŝ − S)/S)² with Adam on mini-batches, inverted
// dropout on both hidden layers, He-normal initial weights and the output
// bias started at the mean slowdown. A random fifth of the measured pairs
// (both directions of a pair together) is held out; training stops when the
// validation loss has not improved for Patience epochs, and then, unless
// NoRefit, starts again from fresh weights on every sample for the best
// epoch count. The defaults ([DefaultTrainConfig]):
//
//	Hidden          64, 32   the widest that keeps one prediction ≤ 2 µs
//	Dropout         0.2      on both hidden layers, training only
//	LearningRate    1e-3     Adam
//	Beta1, Beta2    0.9, 0.999
//	Epsilon         1e-8
//	WeightDecay     1e-4     L2 on weights, not biases
//	BatchSize       32
//	MaxEpochs       2000
//	Patience        200      epochs without a better validation loss
//	ValidationFrac  0.2      of the measured pairs
//	refit           on       (NoRefit false)
//
// They were chosen by 5-fold cross-validation on Gavel's V100 and P100
// pairs among a few alternatives: 32×16 (13.4 % on V100), 128×64 and
// 256×128 (12.1 % and 11.5 %, but 4 µs and more per prediction), learning
// rates 3e-3, 1e-2, 5e-4, patience 100 and 300, batch 16 and 64, weight
// decay 0 and 1e-3, no refit (+0.5 to 1 point), and an L1 relative loss
// (+1.3 points).
//
// Every random choice (the split, the weights, the order of samples, the
// dropout masks) comes from the caller's *rand.Rand: one seed gives one
// model, bit for bit, on one GOARCH (products are rounded explicitly so the
// compiler does not fuse them; math.Exp and gonum's kernels may differ
// across architectures, and tensor.Use switching gorgonia's BLAS changes
// the bits too). examples/iactrain -check and TestDefaultModelReproduces
// retrain the embedded model and compare the bytes.
//
// # gorgonia.org/tensor
//
// Training computes each mini-batch's forward and backward passes as matrix
// products on gorgonia tensors (MatMul through gonum's BLAS on views of the
// flat weight slice, transposes as views, results preallocated). The
// alternative, per-sample loops on flat slices (backprop in
// tensor_bench_test.go), was slower in every shape measured: CPU time per
// training step (forward, backward, Adam) of the 64×32 network, on this
// project's shared 2-core machine,
//
//	inputs  batch   per-sample loops   gorgonia tensors
//	9       32      245 µs             160 µs
//	9       256     1.87 ms            1.43 ms
//	72      32      420 µs             260 µs
//	72      256     3.3 ms             1.97 ms
//
// (go test -bench TrainStep -benchmem ./iac; the tensor path allocates 66
// small objects per step inside gorgonia, the loops none). Prediction does
// not use tensors: one pair is too small for a matrix library, and the flat
// path allocates nothing.
//
// # Accuracy on Gavel
//
// Measured with examples/iaceval on the CSVs of examples/gavel2csv (MAPE of
// the slowdown, %, and R²; every pair tested once):
//
//	5-fold CV        MLP           GBDT          linear
//	V100             13.2  0.653   16.5  0.702   33.9  0.046
//	P100              4.9  0.924    4.6  0.930   15.2  0.405
//	K80               4.7  0.877    4.8  0.885    9.4  0.668
//
// P100 and K80 meet the 7 % target; V100 does not, because its table is
// rough: predicting each measured slowdown by the mean of its batch-size
// neighbours (gaveldata.NeighbourMAPE) misses by 10.3 % on V100 against
// 4.7 % and 5.0 % on P100 and K80, and 80 of its 636 directions record no
// slowdown at all (co-located throughput equal to the isolated one, which
// Gavel seems to cap). The V100 families that miss most are
// Recommendation (23 %) and CycleGAN (23 %); LM (6.3 %) and ResNet-18
// (9.4 %) do well.
//
// LOFOPLACEHOLDER
//
// # Tolerance
//
// [Tolerance] is τ(t) = τ0·(1 + min(β·q, βmax)) on the slowdown scale, q
// the queue pressure. [DefaultTolerance]: τ0 = 1/0.9 (with an empty queue
// only pairs the paper calls safe share), β = 1, βmax = 0.45 (τ stays below
// 1/0.6, where the paper calls a pair harmful, however long the queue).
//
// # Model file
//
// One JSON object {"format":"elastico-iac-mlp","version":1,"sha256":…,
// "model":{…}}, the checksum over the model object's bytes. [WriteFile]
// writes it atomically (temporary file, sync, rename); [Decode] refuses a
// truncated file, a changed byte, another format or version, or trailing
// data, with an error that names the file and wraps [ErrModelFile].
package iac
