package rst

import (
	"errors"
	"fmt"
)

// ErrInfeasible is wrapped by the error of a job none of whose
// configurations can run on the given cluster.
var ErrInfeasible = errors.New("no feasible configuration")

// errorf returns an error prefixed with the package name, as every error of
// this package is.
func errorf(format string, args ...any) error {
	return fmt.Errorf("rst: "+format, args...)
}
