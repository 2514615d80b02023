// Package placement is elastico's default [elastico.Placer]: it puts each
// job's chosen configuration on GPUs.
//
// The rules a placement never breaks:
//
//   - per GPU, the SM shares of its jobs sum to at most 1 (or
//     [Config.Oversubscription]) and their memory to at most the GPU's;
//   - per node, the replicas' CPU and RAM fit the node's;
//   - a GPU whose Shared flag is false holds one job; a shared GPU at most
//     [Config.MaxJobsPerGPU] (default 2);
//   - a multi-GPU configuration is a gang: every replica on its own GPU, all
//     of them or none, on one node unless the job sets Spread;
//   - an item never shares a GPU with an item its Avoid list names (either
//     way round);
//   - an item goes only on GPUs of the model its profile names
//     (Profile.Hardware.GPUModel against GPU.Model; an empty model on
//     either side matches any), so a gang stays on one model.
//
// Within these rules it is best-fit decreasing: items are placed in
// decreasing dominant share of the cluster, each on the GPUs that leave the
// least memory, then SM share, free. Placement is sticky: first the items
// that run now and can stay on their GPUs, then those that run but must
// move (their own GPUs first), then the waiting ones. GPUs whose free capacity
// falls in the same bucket are ties, broken by the quietest pair with the
// GPU's residents (by the sharing rule; without one, the lowest predicted
// slowdown) when the request carries a Predictor; of empty GPUs, the one on
// the node with the fewest empty GPUs goes first, so that whole nodes stay
// free for gangs. A gang that shrinks where it runs keeps GPUs of one node
// unless it may spread (see [Config.SpreadAnyway]).
//
// With a sharing rule ([Config.Sharing], an iac.Limit, or a Predictor that
// is a [PairJudge]), GPUs beside a resident the rule says an item may not
// share with ("loud") are passed over, or taken only as
// a last resort with [Config.LoudLastResort] (never for an item marked
// Quiet). The search for a quiet GPU is bounded: after [Config.LoudProbes]
// loud GPUs (nodes, for a gang; an eighth as many for a Quiet item, one
// that already found only loud ones) an item looks only at empty GPUs, and
// a gang predicts lazily, a bucket of equally good GPUs at a time. Where
// most pairs are loud, this is what keeps a failed search from costing a
// prediction per GPU of the cluster. A Predictor that also answers by item
// index ([ItemPredictor], as pds's does) is asked that way.
//
// Free capacity is kept in a bucketed index (64 memory levels × 16 SM
// levels), so one item costs O(levels) plus the candidates it inspects, not
// O(GPUs): 20,000 items go on 16,384 GPUs in milliseconds (see
// BenchmarkPlace). The index holds every model's GPUs: a GPU of another
// model is one more candidate passed over, at the cost of one comparison.
package placement
