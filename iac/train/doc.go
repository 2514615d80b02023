// Package train fits package iac's interference predictor and evaluates it.
// [MLP] trains an MLP on samples and [Fit] on every measured pair of a
// dataset; [CrossValidate], [Holdout], [LeaveOneFamilyOut] and [Transfer]
// train it and iac's two baselines (linear regression and gradient-boosted
// trees) on some pairs and report how well each predicts the others.
//
// It is apart from package iac because training runs on gorgonia.org/tensor,
// which brings Apache Arrow, FlatBuffers and protobuf packages with it: a
// program that only predicts (iac.Default, a scheduler built on package pds)
// links none of them. The model it returns is an *iac.MLP, saved and loaded
// by iac.WriteFile and iac.ReadFile.
//
// # Training
//
// [MLP] minimizes the mean squared relative error ((Ŝ − S)/S)² with Adam on
// mini-batches, inverted dropout on both hidden layers, He-normal initial
// weights and the output bias started at the mean slowdown. A random fifth
// of the measured pairs (both directions of a pair together) is held out;
// training stops when the validation loss has not improved for Patience
// epochs, and then, unless NoRefit, starts again from fresh weights on
// every sample for the best epoch count. The defaults
// (iac.DefaultTrainConfig):
//
//	Hidden          64, 32   the widest that keeps one prediction ≤ 2 µs (iac's package doc, Cost)
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
// They were chosen by 5-fold cross-validation on Gavel's V100 pairs,
// checked on P100, in sweeps that changed one or two settings at a time.
// The same configuration gives 11.9 % to 13.2 % on V100 with three seeds,
// so only larger differences count: widths 32×16, 32×32, 48×24 and 64×16
// gave 13.3 % to 14.7 %; 128×64 and 256×128 gave 12.1 % and 11.5 % (with
// learning rate 3e-3 and no refit) but need 3.6 and 13.6 times the
// multiply-adds of 64×32, beyond the 2 µs budget; learning rate 1e-2 gave
// 14.6 %, 5e-4 13.4 %; weight decay 1e-3 16.0 %; batch 64 14.4 %; no refit
// cost 0.5 to 0.8 point on V100 and P100; an L1 relative loss 1.3 points.
// iac's package doc gives the accuracy of the defaults on Gavel.
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
// tensor_bench_test.go, which the package used first), was slower in every
// shape measured. Time per training step (forward, backward, Adam) of the
// 64×32 network, min–median of 6 runs of go test -bench TrainStep
// -benchmem on this project's shared 2-core 2.3 GHz Xeon VM:
//
//	inputs  batch   per-sample loops   gorgonia tensors
//	9       32      225–260 µs         148–153 µs
//	9       256     1.80–2.17 ms       1.25–1.36 ms
//	72      32      468–593 µs         221–235 µs
//	72      256     3.60–3.73 ms       1.67–1.72 ms
//
// The tensor path allocates 66 small objects per step (116 at batch 256)
// inside gorgonia, the loops none; training the embedded model takes about
// 14 s. Prediction does not use tensors: one pair is too small for a matrix
// library, and iac's flat path allocates nothing.
package train
