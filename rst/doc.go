// Package rst is ElastiCo's resource shape transformation (DESIGN.md 3.1):
// it turns a job's knobs (batch size, activation checkpointing, mixed
// precision, GPU count; KV-cache budget and concurrent sequences for
// inference) into a family of [elastico.Profile]s, one per configuration,
// that the price solver chooses among.
//
// The pieces, in the order a host uses them:
//
//   - [Space] enumerates configurations with stable, readable IDs
//     ("b64-ckpt-amp-g2").
//   - [BuildFamily] turns measured profiles over a space into a full family:
//     measured profiles win; an unmeasured configuration gets its nearest
//     measured neighbour's profile, scaled by documented rules and marked
//     Interpolated.
//   - [Filter] drops configurations that cannot run on a cluster or fall
//     below the job's floor, with a reason for each; [Prune] drops the
//     Pareto-dominated ones.
//   - [MinDemand] is R_min (Eq. 12); [NormalizedGoodput] is G̃ = G/Gmax.
//   - [NoiseScale] is Pollux's statistical-efficiency model: the efficiency
//     of a batch size, the reference-equivalent work of a number of samples,
//     fitted from gradient statistics ([FitNoiseScale]). With [LRScale] it
//     makes a reshaped training job do the same work as the original.
//   - [Launch] gives the parameters a host sets when it (re)starts a job:
//     memory fraction, MPS limits, allocator split size, learning-rate scale.
//   - [GavelFamily] and [PolluxFamily] build real families from the
//     measurements shipped with the module (Gavel's throughputs, Pollux's
//     step times), with an explicit memory model ([MemoryModel]).
//
// Like the rest of elastico, rst does no I/O of its own: readers take
// embedded data or an io.Reader.
package rst
