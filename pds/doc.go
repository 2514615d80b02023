// Package pds is elastico's default [elastico.Scheduler]: the epoch loop
// that ties RST, ESP and IAC together (the paper's Algorithm 1).
//
// A host builds a State and calls Epoch:
//
//	s, err := pds.New(pds.Config{}) // every default: esp, placement, iac
//	plan, err := s.Epoch(ctx, &state)
//
// Epoch validates the State, turns each job's feasible configurations into
// market options (normalized goodput G̃, total demand, and Γ: predicted
// interference against its current co-runners, the switching cost γ0 of
// starting or reshaping a job, and the penalties learned in earlier rounds
// and epochs), holds γ of each job's smallest footprint for it (C_eff,
// Eq. 12), and then runs up to M rounds of prices → placement →
// interference check. Every pair the sharing rule (Config.Sharing, an
// iac.Sharing) forbids adds Δ to the penalty of the victim's configuration
// and is kept
// apart in the next rounds' placements, where neither job is sticky to the
// GPU it violated on; the loop stops at the first round without a
// violation. What is left is resolved by re-placing with the pairs kept
// apart, then by deferring the newcomer of each pair: the plan never
// co-locates a pair the rule forbids, never exceeds a GPU's or
// node's capacity, and never runs a job below its floor. A running job
// whose new configuration finds no room keeps its old one where it runs
// when that still fits, rather than being preempted.
//
// # What the market maximizes, and what holds it still
//
// A job's configuration is worth w·n·(1/ε − 1/(x + ε)): its weight w
// (Job.Weight); n, the GPUs of its smallest configuration; and its speedup
// x, the configuration's goodput over the goodput of the job's best
// configuration on its fair share of the cluster (⌈GPUs / jobs⌉ GPUs).
// It is Pollux's utility (the p = −1 power mean of speedups), shifted so
// that a waiting job is worth nothing, with ε = Config.Fairness (0.1). A
// job's first GPUs are worth far more than its next ones: at ε = 0.1 a job
// at its fair share is worth 9.1·w·n, at twice it 9.5·w·n, at half 8.3·w·n,
// so the market starts a waiting job before it grows a running one, and
// shrinks a grown job for one that waits. Each job that waits adds to the
// sum of completion times; valued by its work alone (G̃ in GPUs' worth,
// the paper's market, Ablation.SMMarket), a job left waiting cost no more
// than another job's extra GPU, and on Gavel's workloads jobs waited while
// others held 21 GPUs beyond their smallest configurations. n keeps a
// gang whole against small jobs: an 8-GPU gang is worth as much as eight
// 1-GPU jobs, so neither displaces the other, and a job of weight 2 twice
// one of weight 1. Job.Priority only orders the waiting queue (admission
// and reservations); it never displaces a running job.
//
// The market prices GPUs whole: a configuration demands its GPU count of
// the SM dimension, however few SMs it uses. Which jobs share a GPU is the
// sharing rule's decision (Config.Sharing), made where the pairs are
// known: the jobs the market could not fit (running jobs under their
// configurations first, then waiting jobs in the queue's order under
// their smallest) are offered to the placer, to share a GPU where the rule
// allows, within the memory, CPU and RAM left. Priced by the SMs they use
// (the paper's market, Ablation.SMMarket), jobs that use part of a GPU
// looked as if they left the rest free: the market admitted more jobs than
// the rule let share and never shrank a gang to make room, so waiting jobs
// found no GPU while running ones held their largest configurations. On
// the Gavel replay (64 GPUs, 20 seeds), this market and this worth, with
// the placer's gangs on one node and free GPUs before shared ones, made
// the average JCT 1.46× lower and preemptions 0.10 a job instead of 0.84.
//
// On a cluster of several GPU models (GPU.Model; a configuration runs only
// on its profile's Hardware.GPUModel), each model's GPUs are cleared apart
// after the prices: where the chosen configurations ask for more GPUs of a
// model than it has, the jobs that lose least per GPU by going to their
// best configuration on a model with room (or to waiting) go, until the
// rest fit; admission starts a waiting job on the most valuable of its
// smallest configurations whose model has room. The loss per GPU of the
// last job moved is the model's price: a job that a V100 speeds up little
// against a K80 leaves its V100 to one that it speeds up much (Gavel's
// effective throughput). Priced as one pool, the market chose V100
// configurations for more jobs than there were V100s and the excess asked
// again every round while K80s idled; on Gavel's V100/P100/K80 cluster
// (36 each, 5 seeds) clearing each model apart made the average JCT 1.20×
// lower, preemptions 0.11 a job instead of 0.74.
//
// A running job's present configuration, where it runs, is worth more by
// what a displacement would cost: γ0 plus the work its restart
// (Job.RestartTime, else Config.RestartTime) loses over Config.Horizon or
// the job's age, whichever is longer (a job is expected to run as long
// again as it has, Pollux's assumption), and twice its worth while it has run less than Config.MinRunTime since
// the epoch that started or changed it (Carry.Since). Deferred running
// jobs keep their places before waiting jobs are admitted. Seven final
// passes correct what the market cannot see. repack gives the GPUs of a
// gang the plan starts to waiting jobs it left out when they are worth more
// there (the market prices the cluster as a whole; the placer, largest
// first, may give a gang a node whole). backfill starts the jobs the market
// could not place on the GPUs it freed for them, each under its most
// valuable configuration that fits one node's empty GPUs (the market prices
// the capacity as a whole: on 4-GPU nodes with a GPU or two free on each,
// jobs bid for whole nodes that none had, and GPUs idled while they
// waited). The next three weigh the plan's displacements against a running
// job's worth: restore puts back each displaced running job (under its
// configuration, or another on the same GPUs) whose GPUs are worth more to
// it than to the jobs the plan starts there; revertGroups undoes each group
// of changes linked through the GPUs they leave and take (a gang giving way
// so that running jobs grow) that gains less than it costs, and links a
// group with every change on a node where its jobs would not fit back for
// the CPU or RAM another group took; hold keeps every running job where it
// runs unless the whole plan's displacements gain more than they cost.
// consolidate makes room for each gang the market chose and no node could
// hold: it moves smaller jobs, and spread jobs' replicas, off the node
// where that costs least to empty GPUs of other nodes, when the gang gains
// more than the moved jobs' keepBonus (where every node holds a job or
// two, a job grown to a node's four GPUs otherwise ran on the one it
// started on until a node freed up). backfill then starts waiting jobs on
// the GPUs the passes left empty, and retune gives each job the plan
// starts, moves or reshapes its most valuable configuration of the same
// GPU count that fits its GPUs (the market's bids walk down the batch
// sizes of a count as each finds no node).
//
// A pair that already shares a GPU is split only when the rule for
// keeping a pair (iac.Sharing.Keep: by value, the two do less than
// 1 − Margin GPUs' worth of work together) forbids it, not the rule at today's queue: the queue
// that a start shrank would otherwise tighten the rule under the pair it
// made, split it, and start it again an epoch later, and corrections
// learned from a few percent noisy observations would split and join a
// pair that does about one GPU's worth as they cross 1. A
// job that has waited Config.ReserveAfter has GPUs held for it, as a
// backfill scheduler holds them (the 16 oldest at a time): no other job
// starts there, and it starts when the jobs on them leave.
//
// Between arrivals and departures the plan holds still: a job started,
// moved or reshaped since the State's jobs last changed (Carry.Calm says
// since when) stays as it runs, and a job preempted since then waits,
// until a job arrives or leaves, unless the State runs it against the
// rules or the rule for keeping a pair splits it: it bids only where and as
// it runs (freezeSettled), and revertGroups undoes any group of changes
// that displaces or starts such a job, even one that starts a job whose
// GPUs are held for it. A plan's moves are
// the market's guess at one moment; with nothing changed, a later guess
// that moves the same jobs again undid the first as often as it improved
// on it: two jobs swapped back within minutes, or a job preempted at one
// epoch's prices started on the same GPU at the next's. Over 20 seeds of
// the replay (epochs every minute) the hold took the flaps a run from
// 0.20, 0.10 and 2.45 (Gavel's trace at loads 1.0 and 1.5, Gavel's
// V100/P100/K80 cluster) to none, at the same average JCT (1.001×,
// 0.995× and 1.000× of before, paired, each ± 0.008 or less). At the Now
// of the last epoch every job has settled: Epoch on the State it produced
// gives no action. With nothing changing, a host that applies each Plan sees
// no job displaced twice, none restored and no swap undone
// (TestStableOverTime, FuzzEpochOverTime, TestCalmHoldsSettledJobs, and
// the scenarios of stability_test.go); a waiting job that fits the empty cluster starts
// within ReserveAfter plus the service of the jobs on the GPUs it is given
// (TestNoStarvation).
//
// Departures from the paper, each for a reason found in testing:
//
//   - The reservation of Eq. 12 is held only for waiting jobs that fit
//     what the running jobs leave free: held beyond it, it pushed running
//     jobs out (an 8-GPU gang gave way to a waiting 1-GPU job).
//   - The default placer keeps jobs off GPUs whose residents the rule
//     forbids them (pds judges its pairs, placement.PairJudge) from the
//     second round on;
//     in the first round such a GPU is a last resort, so that a violation
//     is still found and priced (the market then reshapes the job that
//     causes it). With best fit alone, one random pair in five being
//     harmful made half of the newcomers violate, and every epoch ran all
//     M rounds.
//   - A waiting job that carries a recent learned penalty (at least Δ
//     decayed once, on any of its configurations) is placed Quiet in the
//     first round too: no loud last resort. The market already prices what
//     went wrong with it; placing it beside a loud neighbour again only
//     found the same violation. On Gavel's job types, where the default
//     predictor calls most pairs loud, this took a 500-job epoch from 258
//     violations and two rounds every epoch to a handful of violations
//     (the new jobs'), and its predictions from 4,284 to about 200.
//   - A round that follows one with violations is local: only the jobs of
//     the violating pairs bid again (each takes its best configuration at
//     the last round's prices, now that its penalties changed), every other
//     job keeps the configuration and GPUs it had, and the pairs are
//     placed apart. A full round re-prices the whole market and places
//     every job again for a handful of changed bids: at 20,000 jobs it was
//     a fifth of an epoch, and its prices barely moved. A local round that
//     leaves violations is followed by a full one. (Under the −ESP
//     ablation, which has no prices, every round is a full one.)
//   - Γ prices a running job's interference into all of its
//     configurations only for co-runners already near the rule's bound (80 %
//     of the way from 1 to it); the others are left to the rounds' checks, which is
//     what keeps the interference phase O(pairs) rather than O(pairs·K̄).
//
// The Plan says, for every job, where it runs or why it waits (a Status
// with a Code and reasons), the actions that take the cluster there
// (preemptions, then reconfigurations in place and migrations, then starts;
// each with its launch parameters from rst.Launch), the prices and
// penalties to carry to the next epoch, and how the epoch went (rounds,
// iterations, violations, time per phase).
//
// Epoch reads no clock for its decisions (Config.Clock only times the
// phases) and keeps nothing between calls that could change a plan: the
// same State and Config give the same Plan. What it keeps is a cache of the
// default predictor's answers, keyed by the profiles' contents (the
// predictor is immutable), so that the pairs that shared a GPU last epoch
// are not predicted again; and the GPU index while the cluster's GPUs stay
// the same. When the context's deadline passes, it returns the best
// feasible plan found so far, marked Stats.Truncated. On a large State
// (from 2,048 jobs a goroutine) validation and the per-job part of building
// the market run on several goroutines; the plan is the one a single core
// makes.
//
// Config.Pinned is for hosts that can neither move nor stop a running job
// (Slurm 22.05 never takes a GPU from a job): no plan then migrates,
// preempts or shrinks one; it may reshape it on its GPUs or grow it onto
// more.
//
// Config.Ablation switches components off one at a time, for the
// simulator's ablation study.
//
// # Cost
//
// go test ./pds -bench 'Epoch$' -benchmem on 2 shared cores (Gavel's job
// types, 8 configurations a job, a fifth of the jobs gangs of 2 or 4, 2 %
// of the jobs new since the last epoch, the prediction cache warm), -benchtime
// 20x, in ms; "other" is validation, the market's construction and the
// plan:
//
//	jobs    GPUs    epoch  prices  placement  interference  other  predictions  allocs
//	  500     512    1.62    0.17       0.16          0.20   1.06           18     405
//	2,000   2,048    6.73    0.53       0.37          0.88   4.92           18   1,221
//	5,000   4,096    23.1    2.67       1.13          4.92   14.2          202   4,135
//	20,000 16,384     112    7.74       5.73          26.3   72.1          318  16,177
//
// (one run each, 2026-12-02, after the market began to price whole GPUs;
// the VM's speed drifts by a tenth to a fifth between runs). Forty times
// the jobs take 69 times as long. Most of "other" is building the market
// (each job's options and worth) and the plan (statuses, actions, Carry);
// placement is small now that the market admits what fits whole GPUs and
// the placer seldom searches for a quiet GPU. A known pair costs a map
// lookup, a new one about 1 µs (iac's Cost), and finding a profile's number
// in the cache, the first time an epoch asks about it, about as much.
//
// On three GPU models (BenchmarkEpochModels: 24 configurations a job, 8
// on each model) 20,000 jobs on 16,384 GPUs take 141 to 255 ms (-benchtime
// 5x, 16 interleaved runs on 2 shared cores, 2026-12-02; one run's phases:
// validation 23 ms, the market 36 to 50, the rounds 44 to 70, the final
// passes 8, the plan 19), above the 150 ms this size should take.
//
// Between epochs a Scheduler keeps the prediction cache and the last
// epoch's scratch space, so that the next allocates little: after an
// epoch of 20,000 jobs, 37 MB of cache (22,418 profiles, prepared, and
// 81,574 pairs) and 55 MB of scratch (the heap measured with and without
// them).
package pds
