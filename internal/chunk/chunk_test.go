package chunk

import (
	"sync"
	"testing"
)

// TestDoCoversEachItemOnce: the ranges cover [0, n) once each, in order of
// c, whatever the number of ranges (more ranges than items included).
func TestDoCoversEachItemOnce(t *testing.T) {
	for _, tc := range []struct{ n, w int }{{0, 1}, {1, 1}, {10, 1}, {10, 3}, {10, 4}, {3, 8}, {10000, 7}} {
		seen := make([]int, tc.n)
		var mu sync.Mutex
		los := make([]int, max(tc.w, 1))
		his := make([]int, max(tc.w, 1))
		Do(tc.n, tc.w, func(c, lo, hi int) {
			mu.Lock()
			defer mu.Unlock()
			los[c], his[c] = lo, hi
			for i := lo; i < hi; i++ {
				seen[i]++
			}
		})
		for i, k := range seen {
			if k != 1 {
				t.Fatalf("n=%d w=%d: item %d done %d times", tc.n, tc.w, i, k)
			}
		}
		for c := 1; c < tc.w; c++ {
			if los[c] != his[c-1] {
				t.Errorf("n=%d w=%d: range %d starts at %d, range %d ends at %d", tc.n, tc.w, c, los[c], c-1, his[c-1])
			}
		}
	}
}

func TestCount(t *testing.T) {
	if got := Count(0); got != 1 {
		t.Errorf("Count(0) = %d, want 1", got)
	}
	if got := Count(Min - 1); got != 1 {
		t.Errorf("Count(Min-1) = %d, want 1", got)
	}
	if got := Count(1 << 30); got < 1 {
		t.Errorf("Count(huge) = %d", got)
	}
}
