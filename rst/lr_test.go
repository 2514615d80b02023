package rst

import (
	"math"
	"testing"

	"github.com/elastico/elastico"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestLRScale(t *testing.T) {
	tests := []struct {
		name      string
		opt       elastico.Optimizer
		ref, b    int
		wantScale float64
	}{
		{"sgd doubles", elastico.SGD, 64, 128, 2},
		{"sgd halves", elastico.SGD, 64, 32, 0.5},
		{"adam quadruples the batch", elastico.Adam, 64, 256, 2},
		{"adam quarters the batch", elastico.Adam, 256, 64, 0.5},
		{"adascale", elastico.AdaScale, 64, 1024, 1},
		{"unchanged batch", elastico.SGD, 64, 64, 1},
		{"inference has no batch", elastico.SGD, 64, 0, 1},
		{"no reference", elastico.Adam, 0, 64, 1},
		{"negative batch", elastico.SGD, 64, -8, 1},
		{"unknown optimizer", elastico.Optimizer(9), 64, 128, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := LRScale(tc.opt, tc.ref, tc.b)
			if diff := cmp.Diff(tc.wantScale, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("LRScale(%v, %d, %d) mismatch (-want +got):\n%s", tc.opt, tc.ref, tc.b, diff)
			}
		})
	}
}

func TestLRScaleRoundTrip(t *testing.T) {
	// Scaling there and back must give the tuned learning rate again.
	for _, opt := range []elastico.Optimizer{elastico.SGD, elastico.Adam, elastico.AdaScale} {
		for _, b := range []int{1, 3, 17, 64, 4096} {
			there := LRScale(opt, 64, b)
			back := LRScale(opt, b, 64)
			if math.Abs(there*back-1) > 1e-12 {
				t.Errorf("%v: 64→%d→64 scales by %g", opt, b, there*back)
			}
		}
	}
}

func TestCheckOptimizer(t *testing.T) {
	if err := CheckOptimizer(&elastico.Job{ID: "a", Optimizer: elastico.Adam}); err != nil {
		t.Errorf("Adam rejected: %v", err)
	}
	err := CheckOptimizer(&elastico.Job{ID: "bad", Optimizer: 7})
	if err == nil || !contains(err.Error(), `rst: job "bad": Optimizer`) {
		t.Errorf("unknown optimizer: got %v", err)
	}
}
