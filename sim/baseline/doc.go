// Package baseline holds the policies elastico is compared with in the
// simulator, each an [elastico.Scheduler]: [Volcano] (gang, first come first
// served with backfill, whole GPUs, the requested configuration), [Lucid]
// (Hu et al., ASPLOS'23: shortest estimated GPU-time first, from a run-time
// model it learns from the jobs it has seen finish, and affine pairs packed
// on shared GPUs by sharing score, memory and estimated time), [Tiresias]
// (two-dimensional least attained service), [Pollux] (Qiao et al.,
// OSDI'21: goodput-optimizing GPU counts and batch sizes under a fairness
// knob and a restart penalty, whole GPUs, no co-location: the peer a user
// who wants adaptive reshaping would pick instead of elastico) and [Gavel]
// (Narayanan et al., OSDI'20: heterogeneity-aware max-min fairness over
// effective throughput, an LP solved by the simplex, realized in rounds of
// a few minutes by priorities: the peer for clusters of several GPU
// models; whole GPUs, or with SpaceSharing Gavel's +SS variant, which also
// allocates time to pairs of jobs sharing GPUs).
//
// In such a cluster Volcano, Lucid and Tiresias run a job's requested
// configuration on its own model only (the reference's, by the simulator's
// convention) unless AnyModel is set: then they are heterogeneity-agnostic
// and start a job on free GPUs of any one model under the family's profile
// of the same configuration there. Pollux picks the highest-goodput profile
// of each GPU count, whatever its model.
//
// They rely on one convention of the simulator (package sim): the first
// profile of a job's family is the configuration the job asked for (Pollux
// reads it only for a replica's share of the cluster). Volcano, Tiresias
// and Pollux keep no state between epochs (Pollux counts restarts in the
// Plan's Carry); a Lucid learns and a Gavel keeps its allocation and the
// time each job has received, so each simulated run needs a fresh one
// (sim.Policy.New).
package baseline
