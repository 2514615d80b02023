// Package rst is ElastiCo's resource shape transformation (RST):
// it turns a job's knobs (batch size, activation checkpointing, mixed
// precision, GPU count; KV-cache budget and concurrent sequences for
// inference) into a family of [elastico.Profile]s, one per configuration,
// that the price solver chooses among.
//
// The pieces, in the order a host uses them:
//
//   - [Space] enumerates configurations with stable, readable IDs
//     ("b64-ckpt-amp-g2", see [ConfigID] and [ParseConfigID]).
//   - [BuildFamily] turns measured profiles over a space into a full family:
//     measured profiles win; an unmeasured configuration gets its nearest
//     measured neighbour's profile, scaled by documented rules and marked
//     Interpolated.
//   - A [Checker] drops the configurations that cannot run on a cluster or
//     fall below the job's floor, with a reason for each; [Prune] drops the
//     Pareto-dominated ones; [Checker.Reduce] does both for a job.
//   - [MinDemand] is R_min (Eq. 12); [NormalizedGoodput] is G̃ = G/Gmax.
//   - [NoiseScale] is Pollux's statistical-efficiency model: the efficiency
//     of a batch size and the reference-equivalent work of a number of
//     samples, fitted from training runs by [FitNoiseScale]. With [LRScale]
//     it makes a reshaped training job do the same work as the original.
//   - [Launch] gives the parameters a host sets when it (re)starts a job:
//     memory fraction, MPS limits, allocator split size, learning-rate scale.
//   - [GavelFamily] and [PolluxFamily] build real families from the
//     measurements shipped with the module (Gavel's throughputs on V100,
//     P100 and K80; Pollux's step times on T4), with an explicit
//     [MemoryModel] for the memory neither measured, and [PolluxNoiseScale]
//     fits Pollux's six models' noise scales (the data's other roles: see
//     the root package doc, The shipped measurements).
//   - Starter families for GPUs and jobs nobody has profiled yet, marked
//     Interpolated until a measurement replaces them:
//     [EstimatedGavelFamily] scales Gavel's V100 families to A100 and H100
//     by [SpeedRatio], published per-model speed-ups (Lambda's PyTorch
//     training benchmarks, with their sources in hardware.go);
//     [LLMInferenceFamily] builds a KV-cache-budget family of an LLM
//     ([LLMSpecOf]: OPT, Llama 2 7B/13B/70B) on a GPU ([GPUSpecOf]:
//     datasheet bandwidth and FP16 rate) with tensor-parallel GPU counts,
//     from the roofline model [LLMSpec.Roofline].
//   - Families over several GPU models, for clusters that mix them: one
//     profile per configuration and model, each naming its model in
//     Hardware.GPUModel and with an ID made unique by [ModelConfigID]
//     ("b64-g1@V100"). [JoinFamilies] joins one family per model;
//     [GavelFamilyOn] joins Gavel's measured V100, P100 and K80 families
//     and, for a model nobody measured, an estimate from a measured model
//     and a per-model speed ratio, marked Interpolated
//     ([EstimatedGavelFamily], [SpeedRatio]). A [Checker] checks each
//     profile against the GPUs of its model, and [Prune] never drops one
//     model's configuration for another's.
//
// Like the rest of elastico, rst does no I/O of its own: the shipped data
// are embedded, and every function is a pure computation on its arguments.
package rst
