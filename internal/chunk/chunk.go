// Package chunk splits per-item work over consecutive ranges, one
// goroutine each, when there is enough of it: State.Validate and pds's
// market construction use it on large States.
package chunk

import (
	"runtime"
	"sync"
)

// Min is the fewest items a goroutine gets: below it, starting one costs
// more than it saves.
const Min = 2048

// Count returns how many ranges Do should split n items into: one per
// core, each of at least Min items, and never fewer than one.
func Count(n int) int { return max(1, min(runtime.GOMAXPROCS(0), n/Min)) }

// Do calls f(c, lo, hi) for the c-th of w consecutive ranges that cover
// [0, n) in order, each on its own goroutine when w > 1, and returns when
// every call has. f must write only what belongs to its range.
func Do(n, w int, f func(c, lo, hi int)) {
	if w <= 1 {
		f(0, 0, n)
		return
	}
	size := (n + w - 1) / w
	var wg sync.WaitGroup
	for c := range w {
		lo, hi := min(c*size, n), min((c+1)*size, n)
		wg.Go(func() { f(c, lo, hi) })
	}
	wg.Wait()
}
