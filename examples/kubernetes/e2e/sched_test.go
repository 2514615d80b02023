package e2e

import (
	"testing"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/pds"
)

// newScheduler returns the scheduler TestElastico runs: the library's
// default, as the elastico-controller command builds it.
func newScheduler(t *testing.T) elastico.Scheduler {
	t.Helper()
	s, err := pds.New(pds.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}
