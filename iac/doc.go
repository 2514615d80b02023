// Package iac predicts how much two jobs slow each other when they share one
// GPU (ElastiCo's interference-aware co-location), and says
// how far the prediction can be trusted.
//
//	m, err := iac.Default()                         // the embedded model
//	a, b := m.Slowdown(x, y), m.Slowdown(y, x)      // Ŝ ≥ 1 each way, 0 allocations
//	lim := iac.DefaultSharing.At(q)                 // the rule at queue pressure q
//	if !lim.Allows(a, b, iac.JobLimit(jx, x), iac.JobLimit(jy, y)) {
//		// keep the pair apart
//	}
//
// A user retrains on pairs measured in their own cluster with one call:
// [ReadDataset] reads profiles.csv and pairs.csv (formats in [ReadProfiles]
// and [Dataset.ReadPairs]), train.Fit (package iac/train) trains,
// [WriteFile] saves, [ReadFile] loads. examples/iaceval evaluates,
// examples/iactrain rebuilds the embedded model, examples/gavel2csv writes
// Gavel's data in the CSV format. Package iactest is a conformance suite
// for any [elastico.Predictor].
//
// # Features
//
// [Vector] holds the 36 features of an ordered pair (victim A, aggressor B)
// in the paper's order and with its names (Feature.String; ten
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
// (samples/s = steps/s × batch); package iac/gaveldata documents each. So the embedded model's
// inputs are log2(batch)/10, log10(params)/12 and log10(throughput) of both
// jobs, and whether each job's batch size is known (A3C has none).
//
// # Model
//
// [MLP]: inputs → 64 ReLU → 32 ReLU → z, Ŝ = 1 + softplus(z), so it never
// predicts a speed-up. Prediction runs on flat slices with activations in
// fixed arrays on the stack: no allocation. A model is its inputs
// ([Column], chosen from training vectors by [FitColumns]), its layers
// ([Layer]), the cap on its predictions and how it was trained
// ([ModelInfo], with the hyper-parameters in [TrainConfig]); [NewMLP]
// builds one from them.
//
// Package iac/train trains it (Adam on mini-batches of gorgonia tensors,
// early stopping, a refit; its package doc gives the defaults and how they
// were chosen) and evaluates it against the two baselines, [Linear] and
// [GBDT]. It is a separate package so that a program that only predicts,
// such as a scheduler built on package pds, does not link gorgonia.org/tensor
// and the Apache Arrow, FlatBuffers and protobuf packages it brings.
//
// # Accuracy on Gavel
//
// Measured with examples/iaceval on the CSVs of examples/gavel2csv (MAPE of
// the slowdown, %, and R²; every pair tested once). The tables below were
// measured while gaveldata gave throughput in steps/s; since it gives
// samples/s (the unit of the rest of the module), two rows were measured
// again: V100 5-fold MLP 14.3 % (R² 0.616), GBDT 16.4 % (0.739), linear
// 33.9 %; P100+K80 → V100 MLP 38.9 %, GBDT 40.2 %, linear 37.8 %. The other
// rows are from the steps/s inputs (log10 of samples/s is log10 of steps/s
// plus log10 of the batch, itself an input, so they move little).
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
// On a family never seen the 12 % target is met on K80 only, on average:
// leave-one-family-out MAPE (train on every pair that touches none of the
// family's jobs, test on every pair that touches one), MLP / GBDT / linear:
//
//	held out        V100               P100               K80
//	A3C              33.0 37.5 45.4    12.3 12.3  9.4     16.4 13.7 14.5
//	CycleGAN        130.2 53.8 75.1    20.7 10.6 32.0     10.8  9.9 13.0
//	LM               22.4 23.8 25.6    15.0 18.2 19.2     10.3 10.6 11.7
//	Recommendation   37.2 51.6 57.9    36.9 39.1 39.5     21.8 17.6 19.1
//	ResNet-18        72.9 64.5 62.5    16.4 12.1 16.2      8.3  7.4  8.1
//	ResNet-50        36.3 40.8 37.1    12.0 13.0 14.9      6.9  6.4  7.6
//	Transformer      90.9 77.4 89.1    16.2 16.2 18.1      7.0  9.6  8.4
//	mean             60.4 49.9 56.1    18.5 17.4 21.3     11.7 10.7 11.8
//
// Why: what makes a pair interfere is how much of the GPU each job uses,
// and nothing in Gavel measures it. Batch size, parameter count and
// isolated throughput identify the training families rather than describe
// their resource use, so a new family is an interpolation between unrelated
// ones: on V100, 70 of ResNet-18's 130 directions show no slowdown at all
// (its small CIFAR batches leave the GPU idle), and no other family looks
// like that; Recommendation is slowed up to 11× by LM and is the worst
// family everywhere. V100's roughness (above) adds to it.
//
// What would fix it: the hardware counters of the feature vector (SM and
// DRAM activity, memory, power), which describe resource use whatever the
// family; a user's profiles.csv carries them and the model takes them as
// inputs. Two experiments on Gavel (scripts not shipped) point the same
// way: giving each job one measured utilization proxy, its speed next to a
// copy of itself, lowered the V100 mean from 58 % to 41 % (ResNet-18 68 → 29,
// Transformer 90 → 42, CycleGAN 119 → 53, self pairs left out of both arms)
// but not Recommendation or A3C, so one number is not enough; dropping the
// parameter count (a family identifier) lowered it to 41 % as well but
// raised the V100 5-fold error from 13.2 % to 19.9 % and worsened P100 on
// both counts, so it stays.
//
// Across GPU types the MLP is worse than the linear baseline, which
// extrapolates more gently (MAPE, MLP / GBDT / linear):
//
//	train V100, test P100          41.6  30.2  18.1
//	train V100, test K80           30.2  24.5  19.2
//	train P100+K80, test V100      38.3  37.5  37.8   (the embedded model's recipe)
//
// The isolated throughputs shift with the GPU and V100's co-located speeds
// are higher on average (0.66 against 0.60 on P100 and 0.54 on K80), so a
// model of one GPU type is a poor model of another: retrain on the target
// cluster's own pairs (train.Fit), which is what in-distribution numbers above
// measure. A replay whose ground truth is Gavel's V100 pairs should expect
// the embedded model to be off by about 38 %.
//
// # Cost
//
// go test -bench 'Slowdown|Prepared' -benchmem -count 6 ./iac on the same
// VM, min–median (its speed drifts by a third between runs):
//
//	one prediction, embedded model (8 inputs)          1.04–1.17 µs, 0 allocs
//	1,000 pairs (SlowdownBatch)                        0.90–1.26 ms, 0 allocs
//	from two prepared profiles (SlowdownPrepared)      0.64–0.74 µs, 0 allocs
//	preparing one profile (AppendPrepared)             0.37–0.49 µs, 0 allocs
//	every feature and mask (59 inputs), 64×32          2.8–3.1 µs, 0 allocs
//	every feature and mask (59 inputs), 32×16          1.5–1.7 µs, 0 allocs
//
// The first layer costs (nonzero inputs) × 64 multiply-adds, the second
// (units ReLU left nonzero) × 32. A scheduler that asks about one profile
// beside many others prepares it once ([MLP.AppendPrepared]): its share of
// the first layer is then paid once, not per pair. Weights too small to be
// normal numbers are stored as zero: each product with one cost a
// microcode assist, and the 65 that weight decay left in the embedded
// model made a prediction three times slower (2.0 µs).
//
// # Which pairs share
//
// [Sharing] is the rule, in one place for pds and the placer: by value by
// default (while jobs wait, a pair shares when 1/Ŝa + 1/Ŝb ≥ 1 + Margin,
// that is, when the two do more work together than one alone; with nothing
// waiting, only pairs within τ0), each job within its own limit
// ([JobLimit]: Job.MaxSlowdown and its floor). [PaperSharing] is the
// paper's rule instead, each job within [Tolerance]:
//
// [Tolerance] is τ(t) = τ0·(1 + min(β·q, βmax)) on the slowdown scale, q
// the queue pressure. [DefaultTolerance]: τ0 = 1/0.9 (with an empty queue
// only pairs the paper calls safe share), β = 1, βmax = 0.45 (τ stays below
// 1/0.6, where the paper calls a pair harmful, however long the queue).
//
// # Several GPU models
//
// [NewByModel] answers each pair with the predictor of the GPU model the
// two share (the victim profile's Hardware.GPUModel), or a fallback: a
// predictor trained per model, or, as the replay does on a mixed cluster,
// each model's pairs by a model trained without them.
//
// # Model file
//
// One JSON object {"format":"elastico-iac-mlp","version":1,"sha256":…,
// "model":{…}}, the checksum over the model object's bytes. [WriteFile]
// writes it atomically (temporary file, sync, rename); [Decode] refuses a
// truncated file, a changed byte, another format or version, or trailing
// data, with an error that names the file and wraps [ErrModelFile].
package iac
