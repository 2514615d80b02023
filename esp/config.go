package esp

import (
	"errors"
	"fmt"
	"math"
	"runtime"
)

// Defaults of Config. Each is used when the field is zero.
const (
	// DefaultEta0 is η0: the first tâtonnement step, as a fraction of the
	// price level per unit of excess demand. Chosen on chains of
	// warm-started markets (see Config.Eta0): 0.5 took fewer iterations
	// but left twice the gap to the dual bound.
	DefaultEta0 = 0.3
	// DefaultMaxIterations is I. From a warm start (Market.Prices from the
	// previous epoch) tâtonnement usually stops after 2–8 iterations, when
	// the dual bound stops improving (BenchmarkSolve: 4 at 500 and at 20,000
	// jobs); a cold start, or prices far from clearing, take 20–30. The
	// repair and improvement steps make up for prices that have not settled.
	DefaultMaxIterations = 30
	// DefaultEpsilon is ε: tâtonnement stops when every resource's excess
	// demand (in fractions of capacity) is within ε, and a resource whose
	// price is zero is at most ε above capacity.
	DefaultEpsilon = 0.005
	// DefaultParallelThreshold is the bidder count above which best
	// responses run in parallel. Measured with BenchmarkSolve on 2 cores:
	// parallel was slower than serial at 500 and 1,000 bidders × 8 options
	// and about even at 2,000; faster from 5,000 on.
	DefaultParallelThreshold = 4096
)

// Valid ranges of Config.
const (
	MaxEta0          = 100
	MaxMaxIterations = 100_000
	MaxEpsilon       = 1
	MaxWorkers       = 1024
)

// ErrConfig is wrapped by every error New returns for a bad Config.
var ErrConfig = errors.New("esp: invalid config")

// Config tunes a Solver. The zero value means every documented default.
type Config struct {
	// Eta0 is η0 in η_t = η0/√t. The step of resource r's price is
	// η_t·P_r·min(z_r, 1), z_r its excess demand in fractions of capacity.
	// P_r starts at the price level: the sum of the warm-start prices, but
	// at least S/4, S = Σ_j max_c (w_j·G̃_j(c) − Γ_j(c)) the market's total
	// bid value; so η0 depends neither on the unit of the weights nor on
	// the number of bidders (0.3 moves a price by 3 % of the level when
	// demand is 10 % over capacity). P_r then grows by 20 % while z_r keeps
	// its sign and halves when it flips. Zero: DefaultEta0; valid range
	// (0, MaxEta0].
	Eta0 float64
	// MaxIterations is I, the most tâtonnement iterations per Solve. Zero:
	// DefaultMaxIterations; valid range [1, MaxMaxIterations].
	MaxIterations int
	// Epsilon is ε on the excess demand, in fractions of capacity. Zero:
	// DefaultEpsilon; valid range (0, MaxEpsilon].
	Epsilon float64
	// ParallelThreshold is the number of bidders above which best responses
	// are computed in parallel. Zero: DefaultParallelThreshold; it must not
	// be negative. The result does not depend on it.
	ParallelThreshold int
	// Workers is the most goroutines that compute best responses at once.
	// Zero: runtime.GOMAXPROCS(0); valid range [1, MaxWorkers]. One
	// disables parallelism. The result does not depend on it.
	Workers int
}

// withDefaults returns c with zero fields replaced by defaults, or an error
// naming the first field out of range.
func (c Config) withDefaults() (Config, error) {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("%w: %s is %v, want %s", ErrConfig, field, v, want)
	}
	switch {
	case math.IsNaN(c.Eta0) || c.Eta0 < 0 || c.Eta0 > MaxEta0:
		return c, bad("Eta0", c.Eta0, fmt.Sprintf("a number in (0, %d] (0 for the default)", MaxEta0))
	case c.MaxIterations < 0 || c.MaxIterations > MaxMaxIterations:
		return c, bad("MaxIterations", c.MaxIterations, fmt.Sprintf("[1, %d] (0 for the default)", MaxMaxIterations))
	case math.IsNaN(c.Epsilon) || c.Epsilon < 0 || c.Epsilon > MaxEpsilon:
		return c, bad("Epsilon", c.Epsilon, fmt.Sprintf("a number in (0, %d] (0 for the default)", MaxEpsilon))
	case c.ParallelThreshold < 0:
		return c, bad("ParallelThreshold", c.ParallelThreshold, "a non-negative bidder count (0 for the default)")
	case c.Workers < 0 || c.Workers > MaxWorkers:
		return c, bad("Workers", c.Workers, fmt.Sprintf("[1, %d] (0 for GOMAXPROCS)", MaxWorkers))
	}
	if c.Eta0 == 0 {
		c.Eta0 = DefaultEta0
	}
	if c.MaxIterations == 0 {
		c.MaxIterations = DefaultMaxIterations
	}
	if c.Epsilon == 0 {
		c.Epsilon = DefaultEpsilon
	}
	if c.ParallelThreshold == 0 {
		c.ParallelThreshold = DefaultParallelThreshold
	}
	if c.Workers == 0 {
		c.Workers = min(runtime.GOMAXPROCS(0), MaxWorkers)
	}
	return c, nil
}
