package placement

import (
	"errors"
	"fmt"
	"math"

	"github.com/elastico/elastico/iac"
)

// Defaults and valid ranges of Config.
const (
	// DefaultOversubscription lets the SM shares on one GPU sum to 1: no
	// oversubscription, each job gets the share its profile was measured
	// with.
	DefaultOversubscription = 1.0
	MaxOversubscription     = 4.0
	// DefaultMaxJobsPerGPU is the paper's pairwise sharing: the predictor
	// is trained on pairs, so a third job on a GPU is an unmeasured risk.
	DefaultMaxJobsPerGPU = 2
	MaxMaxJobsPerGPU     = 64
	// DefaultTieCandidates is how many GPUs of the best bucket are compared
	// by predicted slowdown. More finds quieter neighbours at the cost of
	// two predictions per candidate and resident.
	DefaultTieCandidates = 4
	MaxTieCandidates     = 64
	// DefaultLoudProbes is how many GPUs with loud neighbours a search
	// predicts for before it looks only at empty GPUs (see
	// Config.LoudProbes).
	DefaultLoudProbes = 8
	MaxLoudProbes     = 1024
)

// ErrConfig is wrapped by every error New returns for a bad Config.
var ErrConfig = errors.New("placement: invalid config")

// Config tunes a Placer. The zero value means every documented default.
type Config struct {
	// Oversubscription is the most the SM shares of one GPU's jobs may sum
	// to. Zero: DefaultOversubscription; valid range (0,
	// MaxOversubscription].
	Oversubscription float64
	// MaxJobsPerGPU is the most jobs one shared GPU holds. Zero:
	// DefaultMaxJobsPerGPU; valid range [1, MaxMaxJobsPerGPU].
	MaxJobsPerGPU int
	// TieCandidates is how many equally good GPUs are compared by predicted
	// slowdown. Zero: DefaultTieCandidates; valid range [1,
	// MaxTieCandidates].
	TieCandidates int
	// Sharing, when set and the request has a Predictor, keeps an item off
	// a GPU beside a resident the rule says it may not share with ("loud"
	// neighbours; iac.Limit.Excess above 0, with each job's own limit,
	// iac.JobLimit): the item goes elsewhere, or waits with a reason that
	// says so. The search for a quiet GPU is bounded by LoudProbes. A
	// request whose Predictor is a PairJudge is judged by it instead.
	// Zero: no rule (the predictor only breaks ties). For example
	// iac.MaxSlowdown(1/0.9), or iac.DefaultSharing.At(q) at the queue
	// pressure q a host knows.
	Sharing iac.Limit
	// LoudProbes is how many GPUs with loud neighbours (nodes, for a gang)
	// a search predicts for before it looks only at empty GPUs; a Quiet
	// item probes an eighth as many, at least one. A wider search packs
	// more jobs beside quiet neighbours and asks the predictor more: where
	// most pairs are loud, it is most of an epoch's time. Zero:
	// DefaultLoudProbes; valid range [1, MaxLoudProbes].
	LoudProbes int
	// LoudLastResort makes a GPU with loud neighbours a last resort rather
	// than forbidden: the item goes there if nothing else has room (unless
	// the item is Quiet). A request may ask it for itself
	// (elastico.PlacementRequest.LoudLastResort).
	LoudLastResort bool
	// ShareLast puts a one-GPU replica on a GPU no job holds when one has
	// room, and beside a resident only when none does. By default the
	// search packs: it takes the fullest GPU with room, the paper's way
	// of raising utilization. A scheduler that decides how many jobs run
	// by whole GPUs (pds) wants a job alone wherever a GPU is free: two
	// jobs that share run slower than each alone.
	ShareLast bool
	// SpreadAnyway lets a gang whose job allows it (Job.Spread) spread
	// over nodes whenever no node has room for it now. By default it
	// spreads only when no node could ever hold it (it needs more GPUs
	// than the largest node has), and otherwise waits for one node, as a
	// gang that must not spread does: replicas spread over nodes talk over
	// the network, and on Gavel's V100 measurements a spread gang does a
	// fraction of a node's work (placed wherever there was room, three
	// gangs in four ran spread and the average JCT was a tenth longer).
	SpreadAnyway bool
}

func (c Config) withDefaults() (Config, error) {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("%w: %s is %v, want %s", ErrConfig, field, v, want)
	}
	switch {
	case math.IsNaN(c.Oversubscription) || c.Oversubscription < 0 || c.Oversubscription > MaxOversubscription:
		return c, bad("Oversubscription", c.Oversubscription, fmt.Sprintf("a number in (0, %g] (0 for the default)", MaxOversubscription))
	case c.MaxJobsPerGPU < 0 || c.MaxJobsPerGPU > MaxMaxJobsPerGPU:
		return c, bad("MaxJobsPerGPU", c.MaxJobsPerGPU, fmt.Sprintf("[1, %d] (0 for the default)", MaxMaxJobsPerGPU))
	case c.TieCandidates < 0 || c.TieCandidates > MaxTieCandidates:
		return c, bad("TieCandidates", c.TieCandidates, fmt.Sprintf("[1, %d] (0 for the default)", MaxTieCandidates))
	case c.LoudProbes < 0 || c.LoudProbes > MaxLoudProbes:
		return c, bad("LoudProbes", c.LoudProbes, fmt.Sprintf("[1, %d] (0 for the default)", MaxLoudProbes))
	}
	if c.LoudProbes == 0 {
		c.LoudProbes = DefaultLoudProbes
	}
	if c.Oversubscription == 0 {
		c.Oversubscription = DefaultOversubscription
	}
	if c.MaxJobsPerGPU == 0 {
		c.MaxJobsPerGPU = DefaultMaxJobsPerGPU
	}
	if c.TieCandidates == 0 {
		c.TieCandidates = DefaultTieCandidates
	}
	return c, nil
}
