// Package baseline holds the policies elastico is compared with in the
// simulator, each an [elastico.Scheduler]: [Volcano] (gang, first come first
// served with backfill, whole GPUs, the requested configuration), [Lucid]
// (fixed configurations, pairs packed on one GPU by an SM-use and memory
// rule) and [Tiresias] (two-dimensional least attained service).
//
// They rely on one convention of the simulator (package sim): the first
// profile of a job's family is the configuration the job asked for.
package baseline
