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
// interference against its current co-runners, the switching cost γ0 and
// the penalties learned in earlier rounds and epochs), holds back γ of
// every waiting job's smallest footprint (C_eff, Eq. 12), and then runs up
// to M rounds of prices → placement → interference check, adding Δ to the
// penalty of every configuration found predicted above the tolerance τ(t)
// beside a co-runner. A violation left after the last round is resolved by
// re-placing with the pair kept apart, or by deferring the newcomer: the
// plan never co-locates a pair predicted above tolerance, never exceeds a
// GPU's or node's capacity, and never runs a job below its floor.
//
// The Plan says, for every job, where it runs or why it waits (a Status
// with a Code and reasons), the actions that take the cluster there
// (preemptions, then reconfigurations in place and migrations, then starts;
// each with its launch parameters from rst.Launch), the prices and
// penalties to carry to the next epoch, and how the epoch went (rounds,
// iterations, violations, time per phase).
//
// Epoch reads no clock for its decisions (Config.Clock only times the
// phases) and keeps nothing between calls: the same State and Config give
// the same Plan. When the context's deadline passes, it returns the best
// feasible plan found so far, marked Stats.Truncated.
//
// Config.Ablation switches components off one at a time, for the
// simulator's ablation study.
package pds
