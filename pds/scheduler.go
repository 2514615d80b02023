package pds

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/esp"
	"github.com/elastico/elastico/iac"
	"github.com/elastico/elastico/placement"
)

// Scheduler is the default elastico.Scheduler. It keeps no state between
// epochs (what carries over is in Plan.Carry) and is safe for concurrent
// use; it keeps one epoch's scratch space for the next call.
type Scheduler struct {
	cfg    Config
	solver elastico.PriceSolver
	placer elastico.Placer
	pred   elastico.Predictor
	// spare is the last epoch's working set, kept for the next call (a
	// sync.Pool would lose it to every garbage collection, and an epoch at
	// scale allocates enough to trigger one); a concurrent call builds its
	// own.
	mu    sync.Mutex
	spare *epoch
	// ownPlacer: the placer is the default one New built, which judges
	// pairs by placerPredictor.
	ownPlacer bool
}

var _ elastico.Scheduler = (*Scheduler)(nil)

// New returns a Scheduler. Nil and zero fields of cfg take their documented
// defaults; a value out of range gives an error wrapping ErrConfig that
// names the field.
func New(cfg Config) (*Scheduler, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Scheduler{cfg: c, solver: c.PriceSolver, placer: c.Placer, pred: c.Predictor}
	if s.solver == nil {
		if s.solver, err = esp.New(esp.Config{}); err != nil {
			return nil, fmt.Errorf("pds: default price solver: %w", err)
		}
	}
	if c.Ablation.GreedyFirstFit {
		s.solver = greedy{}
	}
	if s.placer == nil {
		s.ownPlacer = true
		// The default placer keeps jobs off GPUs whose residents the
		// sharing rule says they may not share with (by the rule in force
		// each epoch, see buildItems), so that later rounds make few new
		// violations. In the first round such a GPU is a last resort
		// instead (PlacementRequest.LoudLastResort): a violation found
		// there is what makes the market reshape the job that causes it
		// (Algorithm 1's penalties), where a refusal would only leave its
		// neighbour waiting. A job goes beside
		// another only when no GPU is free (ShareLast): the market decides
		// how many run by whole GPUs, and a pair runs slower than each job
		// alone. (The paper's market packs, as the paper's placer does.)
		if s.placer, err = placement.New(placement.Config{ShareLast: !c.Ablation.SMMarket}); err != nil {
			return nil, fmt.Errorf("pds: default placer: %w", err)
		}
	}
	if s.pred == nil {
		if s.pred, err = iac.Default(); err != nil {
			return nil, fmt.Errorf("pds: default predictor: %w", err)
		}
	}
	if c.Ablation.MemoryOnlyColocation {
		s.pred = nil
	}
	return s, nil
}

// Config returns the configuration in force, defaults filled in (the
// component fields as given: nil for a default).
func (s *Scheduler) Config() Config { return s.cfg }

// Epoch runs Algorithm 1 on a snapshot and returns the
// plan. It validates the State first: an invalid one gives an error
// wrapping elastico.ErrInvalid that names the job and field, never a panic.
//
// If ctx's deadline passes, Epoch stops at the next phase boundary and
// returns the best feasible plan found so far with Stats.Truncated set (at
// worst: every running job where it is, minus any that the State itself
// over-commits or co-locates a pair the sharing rule forbids), and no error. Any other
// failure of a component (a PriceSolver or Placer error) is returned.
func (s *Scheduler) Epoch(ctx context.Context, st *elastico.State) (*elastico.Plan, error) {
	start := s.cfg.Clock()
	if st == nil {
		return nil, fmt.Errorf("pds: %w", &elastico.ValidationError{Kind: "state", Field: "State", Reason: "is nil"})
	}
	if err := st.Validate(); err != nil {
		return nil, fmt.Errorf("pds: %w", err)
	}
	s.mu.Lock()
	e := s.spare
	s.spare = nil
	s.mu.Unlock()
	if e == nil {
		e = &epoch{}
	}
	defer func() {
		e.release()
		s.mu.Lock()
		s.spare = e
		s.mu.Unlock()
	}()
	e.init(s, st)
	plan, err := e.run(ctx)
	if err != nil {
		return nil, err
	}
	plan.Stats.Total = s.cfg.Clock().Sub(start)
	return plan, nil
}

// cut reports whether err is the context running out (the plan so far is
// then used) rather than a failure.
func cut(ctx context.Context, err error) bool {
	return err != nil && ctx.Err() != nil && (errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled))
}

// since adds the time from t to *d and returns now.
func (e *epoch) since(t time.Time, d *time.Duration) time.Time {
	now := e.s.cfg.Clock()
	*d += now.Sub(t)
	return now
}
