// Package iac predicts how much two jobs slow each other when they share one
// GPU (ElastiCo's interference-aware co-location, DESIGN.md 3.3), and says
// how far to trust the prediction.
//
// The pieces:
//
//   - [Vector]: the 36 features of an ordered pair (victim A, aggressor B) of
//     DESIGN.md and telemetry/iac-features-36.csv, plus each job's isolated
//     throughput, built from two [elastico.Profile]s by [Vector.Build]. A
//     counter that was not measured is missing (a bit in a mask), never a
//     made-up number.
//   - [MLP]: the default [elastico.Predictor]. [Default] returns the model
//     embedded in the package; [Fit] retrains on a user's measurements
//     ([ReadDataset] reads profiles.csv and pairs.csv).
//   - [Linear] and [GBDT]: the baselines, on the same inputs.
//   - [CrossValidate], [Holdout], [LeaveOneFamilyOut], [Transfer]: the
//     evaluation (examples/iaceval runs it on CSV files).
//   - [Tolerance]: the adaptive tolerance τ(t) of Eq. 11.
//   - Package iactest: a conformance suite for any Predictor.
//
// See the package's README.md for the model, its hyper-parameters and the
// measured errors.
package iac
