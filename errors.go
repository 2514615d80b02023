package elastico

import (
	"errors"
	"fmt"

	"github.com/elastico/elastico/internal/check"
)

// ErrInvalid is the sentinel every validation error wraps, so a host can tell
// bad input from a failed computation with errors.Is(err, elastico.ErrInvalid).
var ErrInvalid = errors.New("invalid input")

// ValidationError names what was wrong, where: the job (or node, or GPU) and
// the field, in the dotted path a Go programmer would write to reach it.
type ValidationError struct {
	Kind   string // "job", "node", "gpu", "state", "market", ...
	ID     string // the job's, node's or GPU's ID; empty for a state-wide error
	Field  string // e.g. "Profiles[2].Demand.SM"
	Reason string // e.g. "is NaN"
}

func (e *ValidationError) Error() string {
	if e.ID == "" {
		return fmt.Sprintf("elastico: %s: %s %s", e.Kind, e.Field, e.Reason)
	}
	return fmt.Sprintf("elastico: %s %q: %s %s", e.Kind, e.ID, e.Field, e.Reason)
}

// Unwrap makes errors.Is(err, ErrInvalid) true.
func (e *ValidationError) Unwrap() error { return ErrInvalid }

func invalid(kind, id, field, reason string) error {
	return &ValidationError{Kind: kind, ID: id, Field: field, Reason: reason}
}

// checkNumber returns why x is not a finite non-negative number, or "".
func checkNumber(x float64) string { return check.Number(x) }
