package pds

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
)

// Defaults of Config, each used when its field is zero (every
// parameter has a documented default and a validated range).
const (
	// DefaultReservation is γ of Eq. 12: half of every job's smallest
	// footprint is held for it.
	DefaultReservation = 0.5
	// DefaultAlpha is α: a configuration loses α of value per unit of its
	// pair's excess over the sharing rule (iac.Limit.Excess, on the
	// slowdown scale), per co-runner. On the scale of w·G̃ ∈ (0, w], a pair
	// 0.2 above the rule costs 0.2.
	DefaultAlpha = 1.0
	// DefaultSwitchingCost is γ0: starting a job or changing a running
	// job's configuration must gain at least 5 % of its best goodput, so
	// near-ties do not flap.
	DefaultSwitchingCost = 0.05
	// DefaultFairness is ε of a job's worth w·n·(1/ε − 1/(x + ε)) (see
	// Config.Fairness): Pollux's p = −1, shifted so that waiting is worth
	// nothing.
	DefaultFairness = 0.1
	// DefaultDelta is Δ: the learned penalty a configuration gets each time
	// the sharing rule forbids it beside a co-runner.
	DefaultDelta = 0.25
	// DefaultRounds is M, the ESP → placement → interference rounds.
	DefaultRounds = 3
	// DefaultPenaltyDecay is how much of a learned penalty the next epoch
	// keeps (Plan.Carry.Penalties = decay × penalty): a pair that stopped
	// interfering is forgiven in a few epochs.
	DefaultPenaltyDecay = 0.5

	// DefaultRestartTime is what a checkpoint and restart cost a job whose
	// Job.RestartTime is zero: half a minute, a mid-sized model's.
	DefaultRestartTime = 30 * time.Second
	// DefaultHorizon is how soon a displacement must pay for itself, at
	// least: a running job is worth keeping by γ0 plus its restart time's
	// share of an hour of its work, or of its age if longer (see
	// Config.Horizon). (Ten minutes held jobs that last tens of minutes,
	// Pollux's, where they were; 1 h took them from 0.96 to 1.01 of
	// pollux's JCT.)
	DefaultHorizon = time.Hour
	// DefaultMinRunTime is how long a job that was just started, moved or
	// reshaped is held where it runs: two restarts of the default cost, a
	// host's epoch or a few.
	DefaultMinRunTime = time.Minute
	// DefaultReserveAfter is how long a job may wait before GPUs are held
	// for it (see Config.ReserveAfter).
	DefaultReserveAfter = 10 * time.Minute
)

// Valid ranges of Config.
const (
	MaxAlpha         = 100
	MaxSwitchingCost = 1
	MaxFairness      = 100
	MaxDelta         = 10
	MaxRounds        = 10
)

// ErrConfig is wrapped by every error New returns for a bad Config.
var ErrConfig = errors.New("pds: invalid config")

// Config tunes a Scheduler. Its zero value means every documented default:
// the default PriceSolver (esp.New), Placer (placement.New), Predictor
// (iac.Default) and sharing rule (iac.DefaultSharing).
type Config struct {
	// PriceSolver picks configurations (ESP). Nil: esp.New(esp.Config{}).
	PriceSolver elastico.PriceSolver
	// Placer puts them on GPUs. Nil: placement.New(placement.Config{
	// ShareLast: true}), ShareLast false under Ablation.SMMarket (see
	// New). pds's predictor judges a placer's pairs by the Sharing rule in
	// force each epoch (placement.PairJudge), so that no job is placed
	// beside a neighbour the rule says it may not share with.
	//
	// To tune the default placer, build it: a wider search for a quiet GPU
	// (placement.Config.LoudProbes) packs a few more jobs and costs
	// predictions; on Gavel's job types (BenchmarkEpochLoudProbes), 32
	// instead of the default 8 ran 0.5 % more jobs at 500 jobs and 0.6 %
	// more at 5,000, for 1.1× and 1.4× the epoch time:
	//
	//	pl, err := placement.New(placement.Config{LoudProbes: 32, ShareLast: true})
	//	...
	//	s, err := pds.New(pds.Config{Placer: pl})
	Placer elastico.Placer
	// Predictor estimates co-location slowdowns (IAC). Nil: iac.Default().
	Predictor elastico.Predictor
	// Sharing is the rule that says which pairs may share a GPU (see
	// iac.Sharing): by value while jobs wait, within τ0 when none do, each
	// job within its own limit. iac.PaperSharing(iac.DefaultTolerance) is
	// the paper's Eq. 11. Zero: iac.DefaultSharing.
	Sharing iac.Sharing
	// Learner corrects the Predictor from the throughputs a host observes
	// of jobs that share GPUs (Job.Observed; see iac.Learner), carried in
	// Carry.CoRuns. A State without observations learns nothing. Zero:
	// iac.DefaultLearner.
	Learner iac.Learner

	// Reservation is γ ∈ (0, 1] of Eq. 12: the fraction of each job's
	// smallest footprint held for it (see the package doc). Zero:
	// DefaultReservation; to reserve nothing set Ablation.NoReservation.
	Reservation float64
	// Alpha is α, the weight of predicted interference in Γ. Zero:
	// DefaultAlpha; valid range (0, MaxAlpha].
	Alpha float64
	// SwitchingCost is γ0, charged to every configuration of a job other
	// than the one it runs under (all of a waiting job's). Zero:
	// DefaultSwitchingCost; valid range (0, MaxSwitchingCost].
	SwitchingCost float64
	// Fairness is ε of what a configuration is worth to a job:
	// w·n·(1/ε − 1/(x + ε)), with x its speedup, its goodput over the
	// goodput of the job's best configuration on its fair share of the
	// cluster's GPUs (⌈GPUs / jobs⌉), and n the GPUs of its smallest
	// configuration (see the package doc). Small ε makes a job's first
	// GPUs worth far more than its next ones (a waiting job starts before a
	// running one grows); large ε makes worth nearly proportional to
	// speedup. Zero: DefaultFairness; valid range (0, MaxFairness].
	Fairness float64
	// Delta is Δ, the learned penalty per violation. Zero: DefaultDelta;
	// valid range (0, MaxDelta].
	Delta float64
	// Rounds is M. Zero: DefaultRounds; valid range [1, MaxRounds].
	Rounds int
	// PenaltyDecay is the fraction of its learned penalties that a Plan
	// carries to the next epoch. Zero: DefaultPenaltyDecay; valid range
	// (0, 1].
	PenaltyDecay float64

	// RestartTime is the restart cost of a job whose Job.RestartTime is
	// zero. Zero: DefaultRestartTime.
	RestartTime time.Duration
	// Horizon is how soon a displacement must pay for itself, at least.
	// A running job's present configuration, where it runs, is worth
	// w·(G + G·restart/H + γ0·Ĝ) to the market, against w·G for the
	// same configuration started afresh (G: its goodput in GPUs' worth,
	// Ĝ: its best; see the package doc): another job takes its place, or
	// it is reshaped, only when that gains more than the work the restart
	// loses over H, and γ0 besides. H is Horizon or the job's age
	// (State.Now − Job.Arrival), whichever is longer: a job that has run
	// for a day is expected to run about as long again (Pollux weighs a
	// restart against a job's age the same way), so a restart of a few
	// minutes is worth paying to give it a better configuration. (With a
	// fixed hour, restarts of 5 minutes held Gavel's jobs in their first
	// configurations and made the replay's average JCT 1.11× longer, 20
	// seeds; weighed over the age, 1.00× of the 30-second restarts'.)
	// Zero: DefaultHorizon.
	Horizon time.Duration
	// MinRunTime is how long a job that an epoch started, moved or
	// reshaped (as Carry.Since records) is held there: while it has run
	// less, its present configuration is worth twice as much to the
	// market, so only a job of more than twice its weight takes its place.
	// An epoch MinRunTime or more after the change no longer holds it: with
	// epochs every ΔT, a MinRunTime of ΔT or less never reaches the next
	// epoch. (Measured on the replay's 1-minute epochs, 5 seeds: 2 minutes
	// took Gavel's flaps from 0.2 a run to none and its JCT 1 % lower, but
	// Pollux's workloads, of jobs under an hour, 2 % higher.)
	// Zero: DefaultMinRunTime; a negative value turns the hold off.
	MinRunTime time.Duration
	// ReserveAfter is how long a job may wait (since its Arrival, or since
	// its preemption as Carry.Since records) before GPUs are held for it,
	// as a backfill scheduler does: from then on, the 16 oldest such jobs
	// (highest priority first) each have GPUs where they fit, which no
	// other job may start on; each starts there as soon as the jobs that
	// run there finish or leave. So a gang is not overtaken forever by
	// smaller jobs that keep arriving. Zero: DefaultReserveAfter; a
	// negative value turns reservations off.
	ReserveAfter time.Duration

	// Pinned is for hosts that can neither move nor stop a running job
	// (Slurm 22.05 never takes a GPU from a job's GRES; see
	// examples/slurm): Epoch then never plans a migration, a preemption or
	// a shrink to fewer GPUs. A running job keeps every GPU it holds: it
	// keeps running as it is, is reconfigured in place on the same GPUs,
	// or grows onto more of them (all of its own among them). Only a job
	// the State itself runs against the rules (more on a GPU or node than
	// it holds, a gang across nodes that does not allow Spread, below its
	// floor) is left out, when no reshape in place mends it. Two running
	// jobs that already share
	// a GPU stay together even when the sharing rule forbids them, since
	// neither can leave; Γ still prices their interference, so the market
	// may reshape them in place, and a reshape that makes it worse is
	// undone.
	Pinned bool

	// Clock times the phases for Plan.Stats, and nothing else: no decision
	// depends on it. Nil: time.Now.
	Clock func() time.Time

	// Ablation switches parts of the method off, for the simulator's
	// ablation study. The zero value is the full method.
	Ablation Ablation
}

// Ablation turns off one component of ElastiCo at a time (the paper's
// Table 5). Each switch is independent.
type Ablation struct {
	// FixedConfiguration (−RST): every job runs under one configuration:
	// the one it runs under now, or, for a waiting job, the first of its
	// family (the host lists the job's requested configuration first).
	FixedConfiguration bool
	// GreedyFirstFit (−ESP): no prices. Jobs, in the State's order, each
	// take their most valuable configuration that still fits the capacity
	// left; a job that finds none waits.
	GreedyFirstFit bool
	// MemoryOnlyColocation (−IAC): jobs share a GPU whenever SM share and
	// memory allow; no predictor is consulted (no interference penalty, no
	// check, no tie-breaking), and Decision.Slowdown is 1.
	MemoryOnlyColocation bool
	// NoCoRunLearning: the Predictor's answers are used as they are; the
	// observed throughputs are not read and Carry.CoRuns is dropped.
	NoCoRunLearning bool
	// NoReservation: γ = 0, nothing is held back for waiting jobs.
	NoReservation bool
	// NoCoordinatedReconfiguration: a running job keeps its configuration
	// (it stays, moves or is preempted, but is never reshaped), and the
	// interference loop runs one round: a violation is resolved by
	// separating the pair or deferring the newcomer, never by reshaping.
	// With NoReservation it is the paper's −PDS.
	NoCoordinatedReconfiguration bool
	// SMMarket: the paper's market, where a configuration demands the SMs
	// it uses (Demand.SM per GPU) rather than its GPUs whole, and a job is
	// worth its work alone: w·G̃·s, its normalized goodput in GPUs' worth
	// of its most efficient configuration (Fairness is not used).
	SMMarket bool
}

// withDefaults fills zero fields and rejects bad values, naming the field.
// It does not build the default components (New does).
func (c Config) withDefaults() (Config, error) {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("%w: %s is %v, want %s", ErrConfig, field, v, want)
	}
	inRange := func(x, hi float64) bool { return !math.IsNaN(x) && x >= 0 && x <= hi }
	switch {
	case !inRange(c.Reservation, 1):
		return c, bad("Reservation", c.Reservation, "a number in (0, 1] (0 for the default)")
	case !inRange(c.Alpha, MaxAlpha):
		return c, bad("Alpha", c.Alpha, fmt.Sprintf("a number in (0, %d] (0 for the default)", MaxAlpha))
	case !inRange(c.SwitchingCost, MaxSwitchingCost):
		return c, bad("SwitchingCost", c.SwitchingCost, fmt.Sprintf("a number in (0, %d] (0 for the default)", MaxSwitchingCost))
	case !inRange(c.Fairness, MaxFairness):
		return c, bad("Fairness", c.Fairness, fmt.Sprintf("a number in (0, %d] (0 for the default)", MaxFairness))
	case !inRange(c.Delta, MaxDelta):
		return c, bad("Delta", c.Delta, fmt.Sprintf("a number in (0, %d] (0 for the default)", MaxDelta))
	case c.Rounds < 0 || c.Rounds > MaxRounds:
		return c, bad("Rounds", c.Rounds, fmt.Sprintf("[1, %d] (0 for the default)", MaxRounds))
	case c.RestartTime < 0:
		return c, bad("RestartTime", c.RestartTime, "a duration ≥ 0 (0 for the default)")
	case c.Horizon < 0:
		return c, bad("Horizon", c.Horizon, "a duration ≥ 0 (0 for the default)")
	case !inRange(c.PenaltyDecay, 1):
		return c, bad("PenaltyDecay", c.PenaltyDecay, "a number in (0, 1] (0 for the default)")
	}
	if c.Sharing == (iac.Sharing{}) {
		c.Sharing = iac.DefaultSharing
	}
	if err := c.Learner.Validate(); err != nil {
		return c, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if err := c.Sharing.Validate(); err != nil {
		return c, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	def := func(x *float64, d float64) {
		if *x == 0 {
			*x = d
		}
	}
	def(&c.Reservation, DefaultReservation)
	def(&c.Alpha, DefaultAlpha)
	def(&c.SwitchingCost, DefaultSwitchingCost)
	def(&c.Fairness, DefaultFairness)
	def(&c.Delta, DefaultDelta)
	def(&c.PenaltyDecay, DefaultPenaltyDecay)
	if c.Rounds == 0 {
		c.Rounds = DefaultRounds
	}
	for _, d := range []struct {
		x *time.Duration
		d time.Duration
	}{{&c.RestartTime, DefaultRestartTime}, {&c.Horizon, DefaultHorizon}, {&c.MinRunTime, DefaultMinRunTime}, {&c.ReserveAfter, DefaultReserveAfter}} {
		if *d.x == 0 {
			*d.x = d.d
		}
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	return c, nil
}
