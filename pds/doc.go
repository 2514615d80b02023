// Package pds is elastico's default [elastico.Scheduler]: the epoch loop
// that ties RST, ESP and IAC together (Algorithm 1, DESIGN.md 3.5).
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
// interference check. Every pair found predicted above the tolerance τ(t)
// (Eq. 11) adds Δ to the penalty of the victim's configuration and is kept
// apart in the next rounds' placements, where neither job is sticky to the
// GPU it violated on; the loop stops at the first round without a
// violation. What is left is resolved by re-placing with the pairs kept
// apart, then by deferring the newcomer of each pair: the plan never
// co-locates a pair predicted above tolerance, never exceeds a GPU's or
// node's capacity, and never runs a job below its floor. A running job
// whose new configuration finds no room keeps its old one where it runs
// when that still fits, rather than being preempted.
//
// Departures from the paper, each for a reason found in testing:
//
//   - The reservation of Eq. 12 is held for running jobs as well as waiting
//     ones. Reserved for waiting jobs only, it made the market evict a
//     running job for a waiting one of equal value, and evict it back the
//     next epoch.
//   - The default placer keeps jobs off GPUs whose residents are predicted
//     above τ(t) (placement.Config.MaxSlowdown) from the second round on;
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
//     configurations only for co-runners already near tolerance (80 % of
//     the way from 1 to τ); the others are left to the rounds' checks, which is
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
package pds
