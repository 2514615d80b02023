// Package baseline holds the policies elastico is compared with in the
// simulator, each an [elastico.Scheduler]: [Volcano] (gang, first come first
// served with backfill, whole GPUs, the requested configuration), [Lucid]
// (Hu et al., ASPLOS'23: shortest estimated GPU-time first, from a run-time
// model it learns from the jobs it has seen finish, and affine pairs packed
// on shared GPUs by sharing score, memory and estimated time), [Tiresias]
// (two-dimensional least attained service) and [Pollux] (Qiao et al.,
// OSDI'21: goodput-optimizing GPU counts and batch sizes under a fairness
// knob and a restart penalty, whole GPUs, no co-location: the peer a user
// who wants adaptive reshaping would pick instead of elastico).
//
// They rely on one convention of the simulator (package sim): the first
// profile of a job's family is the configuration the job asked for (Pollux
// reads it only for a replica's share of the cluster). Volcano, Tiresias
// and Pollux keep no state between epochs (Pollux counts restarts in the
// Plan's Carry); a Lucid learns, so each simulated run needs a fresh one
// (sim.Policy.New).
package baseline
