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
//     models of models.go, and every Family says in its Notes which is which
//     (the data's other roles: see the root package doc, The shipped
//     measurements).
//     A policy's own predictor is never the ground truth. A cluster of
//     several GPU models is a [Mix] (Gavel's own: [GavelMix]
//     "V100:36,P100:36,K80:36"), one Truth per model: [Mix.Cluster] builds
//     it, [Mix.Workload] gives each job its configurations on every model
//     (IDs "b64x1@K80"), and Config.Truths hands Run every model's truth,
//     keyed by GPU.Model, so that a job runs at the throughput of the model
//     it is placed on and, sharing a GPU, at that model's co-location
//     speeds only. [OpenBMix] builds one from the Alibaba v2023 node list
//     ([ReadOpenBNodes]), each of its models on Gavel's measurements or an
//     estimate from them ([OpenBTruth]); a job runs only on the models its
//     trace allows (TraceJob.Models), and a share of a GPU (GPUShare) is
//     held to it.
//   - A [Trace] read by [ReadGavel], [ReadPollux], [ReadPhilly], [ReadOpenB]
//     or [ReadCSV], and bound to the truth by [Truth.Workload], which scales
//     arrival rates to the cluster's size and a load (1 = the requested
//     GPU-time arrives at the cluster's capacity).
//   - A policy: elastico's pds.Scheduler or a baseline of package
//     sim/baseline.
//   - [Run], which replays the jobs: an epoch at every multiple of ΔT
//     while a job runs or waits, with State.Now advancing, as a host's loop
//     calls Epoch ([EpochsEvery], the default: 300,000–840,000 epochs a
//     run for the shipped Gavel trace's 384 jobs at ΔT = 5 s), or only at
//     the first after an arrival or a completion ([EpochsOnChange], 560–740,
//     blind to a policy that changes its mind with nothing
//     changed); each job
//     progresses at its ground-truth rate (isolated throughput × statistical
//     efficiency × the co-location speed of its GPU neighbours) and finishes
//     when its reference-equivalent work is done; reconfigurations,
//     migrations and restarts cost time ([Costs]). Capacity, conservation of
//     work, single completion, the plan's shape, liveness and stability are
//     checked after every event: a broken one stops the run with an
//     [*InvariantError]. Stability is the absence of flaps ([Flap]): a plan
//     that gives a job back the assignment it was displaced from, or undoes
//     a swap of GPUs between two jobs, with no arrival and no completion in
//     between ([Config].AllowFlaps counts them instead).
//
// A [Result] holds each job's outcome, with its reconfigurations,
// migrations, preemptions and flaps, and the run's flaps. [Experiment]
// repeats runs over seeds and policies and [Summarize] reports every
// metric's mean and 95 % confidence interval (disruptions per GPU-hour and
// per job, flaps among them), with ratios against a baseline, as a table,
// JSON and CSV (one row per job in [WriteJobsCSV]); package sim/plots draws
// an [Outcome] as PNG plots, apart so that sim does not link the plotting
// library.
//
// The package reads no clock except to time Epoch calls (a reported metric),
// uses no global random source (seeds come from the caller), and writes
// files only where asked (atomically).
package sim
