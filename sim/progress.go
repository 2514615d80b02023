package sim

import (
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/term"
)

// TerminalProgress returns a progress callback that redraws one line on f
// when f is a terminal, and nil (no output at all) when it is not, so that
// logs and pipes stay quiet. label prefixes the line; the callback is safe
// for concurrent use and rate-limits itself to a few redraws a second.
func TerminalProgress(f *os.File, label string) func(done, total int) {
	if f == nil || !term.IsTerminal(int(f.Fd())) {
		return nil
	}
	var mu sync.Mutex
	var last time.Time
	start := time.Now()
	return func(done, total int) {
		mu.Lock()
		defer mu.Unlock()
		now := time.Now()
		if done < total && now.Sub(last) < 200*time.Millisecond {
			return
		}
		last = now
		fmt.Fprintf(f, "\r\033[K%s %d/%d (%.0fs)", label, done, total, now.Sub(start).Seconds())
		if done >= total {
			fmt.Fprint(f, "\r\033[K")
		}
	}
}
