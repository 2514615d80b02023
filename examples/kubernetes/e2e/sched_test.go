package e2e

import (
	"testing"

	"github.com/elastico/elastico"
)

// newScheduler returns the scheduler the end-to-end test runs: the
// library's default once it has landed.
func newScheduler(t *testing.T) elastico.Scheduler {
	t.Helper()
	return &greedy{}
}
