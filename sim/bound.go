package sim

import (
	"context"
	"fmt"

	"github.com/elastico/elastico"
)

// TruthReader is a scheduler that reads the run's ground truth, such as
// pds with the Oracle as its predictor. It knows what no real scheduler
// knows, so it is a bound on what a policy could reach, never a result:
// reports label it with Bound (Summary.Bounds). Run hands it Config.Truth
// before the first epoch, so that a Policy.New, which takes no arguments,
// can still build one for whichever ground truth the run replays.
type TruthReader interface {
	elastico.Scheduler
	// BindTruth builds the scheduler for t; Run calls it once per run.
	BindTruth(t *Truth) error
	// Bound says what the scheduler knows that no real one does ("a
	// perfect predictor").
	Bound() string
}

// ReadingTruth returns a Policy.New for a bound: each scheduler it makes
// is built by build from the run's ground truth when Run starts. what is
// the label reports give it (TruthReader.Bound).
func ReadingTruth(what string, build func(*Truth) (elastico.Scheduler, error)) func() (elastico.Scheduler, error) {
	return func() (elastico.Scheduler, error) {
		if what == "" || build == nil {
			return nil, fmt.Errorf("sim: ReadingTruth: empty label or nil build")
		}
		return &truthBound{what: what, build: build}, nil
	}
}

type truthBound struct {
	what  string
	build func(*Truth) (elastico.Scheduler, error)
	s     elastico.Scheduler
}

func (b *truthBound) BindTruth(t *Truth) error {
	s, err := b.build(t)
	if err != nil {
		return err
	}
	if s == nil {
		return fmt.Errorf("sim: bound %q: build returned a nil scheduler", b.what)
	}
	b.s = s
	return nil
}

func (b *truthBound) Bound() string { return b.what }

func (b *truthBound) Epoch(ctx context.Context, st *elastico.State) (*elastico.Plan, error) {
	if b.s == nil {
		return nil, fmt.Errorf("sim: bound %q: Epoch before BindTruth (only Run binds it)", b.what)
	}
	return b.s.Epoch(ctx, st)
}
