// Package adapter runs elastico inside Slurm (22.05 and later): a host loop
// that reads Slurm's queue and nodes, asks an [elastico.Scheduler] for a
// Plan, and applies it to the jobs that opted in.
//
// A job opts in with its comment: "elastico:" followed by a [Spec] (its
// class and family of configurations, see [ParseSpec]) or "elastico:@file"
// naming a family file under [Config.FamilyDir]. It is submitted held and
// with no GRES; the adapter gives it the GPUs the plan chose (whole GPUs,
// or shards of one GPU type per device so that co-location is exactly the
// plan's), writes its launch parameters where the [TaskProlog] exports them
// into the job, and releases it. A job whose spec says spread may run on
// several nodes (the same GPU types on each, as Slurm's GRES is per node);
// each node's tasks read their rank, the job's world size and rank 0's
// address from their environment. A reconfiguration requeues the job and
// releases it again under the new configuration on the same GPUs, or more,
// on the same nodes or more.
//
// A running job may report its throughput in its progress file (a
// [Progress] line in [Config.ProgressDir], ELASTICO_PROGRESS_FILE in the
// job); the adapter hands it to the scheduler as elastico.Job.Observed
// when it was measured under the job's present launch and neighbours.
//
// Safety: every step is written to a journal (one file, replaced
// atomically) before Slurm hears of it, and checks Slurm's state before it
// acts, so a restart of the adapter or of slurmctld repeats nothing and
// loses no job. Jobs that did not opt in are never touched (their GPUs are
// left out of the plan); a job whose comment does not parse is left to
// Slurm and named in the log; a request no GPU can hold is never released.
//
// The README next to this package says how a site deploys it; the daemon
// is examples/slurm/elastico-slurmd.
package adapter
