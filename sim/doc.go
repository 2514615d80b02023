// Package sim is a deterministic, trace-driven discrete-event simulator of a
// GPU cluster, for comparing scheduling policies (any [elastico.Scheduler])
// on ground truth that the policies never see.
//
// A run has four parts:
//
//   - A [Truth]: what really happens. [GavelTruth] builds it from Gavel's
//     measurements (isolated throughputs of 26 training job types at 1–8
//     GPUs on one server and spread, and co-located throughputs of measured
//     pairs) with statistical efficiency from Pollux's gradient statistics;
//     quantities no data set measures (memory footprints, SM use, offline
//     LLM inference, pairs missing from the data) come from the explicit
//     models of models.go, and every Family says in its Notes which is which.
//     A policy's own predictor is never the ground truth.
//   - A [Trace] read by [ReadGavel], [ReadPollux], [ReadPhilly], [ReadOpenB]
//     or [ReadCSV], and bound to the truth by [Truth.Workload], which scales
//     arrival rates to the cluster's size and a load (1 = the requested
//     GPU-time arrives at the cluster's capacity).
//   - A policy: elastico's pds.Scheduler or a baseline of package
//     sim/baseline.
//   - [Run], which replays the jobs: an epoch every ΔT of simulated time
//     when something changed; each job progresses at its ground-truth rate
//     (isolated throughput × statistical efficiency × the co-location speed
//     of its GPU neighbours) and finishes when its reference-equivalent work
//     is done; reconfigurations, migrations and restarts cost time
//     ([Costs]). Capacity, conservation of work and single completion are
//     checked after every event: a broken one stops the run with an
//     [*InvariantError].
//
// [Experiment] repeats runs over seeds and policies and [Summarize] reports
// every metric's mean and 95 % confidence interval, with ratios against a
// baseline, as a table, JSON, CSV and PNG plots.
//
// The package reads no clock except to time Epoch calls (a reported metric),
// uses no global random source (seeds come from the caller), and writes
// files only where asked (atomically).
package sim
