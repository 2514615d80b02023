// Package baseline holds the policies elastico is compared with in the
// simulator, each an [elastico.Scheduler]: [Volcano] (gang, first come first
// served with backfill, whole GPUs, the requested configuration), [Lucid]
// (Hu et al., ASPLOS'23: shortest estimated GPU-time first, from a run-time
// model it learns from the jobs it has seen finish, and affine pairs packed
// on shared GPUs by sharing score, memory and estimated time) and
// [Tiresias] (two-dimensional least attained service).
//
// They rely on one convention of the simulator (package sim): the first
// profile of a job's family is the configuration the job asked for. Volcano
// and Tiresias keep no state between epochs; a Lucid learns, so each
// simulated run needs a fresh one (sim.Policy.New).
package baseline
