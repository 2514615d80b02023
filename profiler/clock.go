package profiler

import (
	"context"
	"time"
)

// Clock is the profiler's only source of time, so that a test runs a 60 s
// window in milliseconds with a clock that jumps instead of waiting.
type Clock interface {
	Now() time.Time
	// Sleep waits d (returning at once when d ≤ 0) or until ctx is done,
	// whichever comes first, and returns ctx.Err() in the second case.
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock is the wall clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Sleep waits on a timer.
func (SystemClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
