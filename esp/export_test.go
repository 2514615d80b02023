package esp

import "github.com/elastico/elastico"

// SetExactCold makes Exact start without the heuristic's incumbent, for
// tests of the branch and bound alone; it returns a function that undoes it.
func SetExactCold() (undo func()) {
	exactCold = true
	return func() { exactCold = false }
}

// SetTrace has f see every tâtonnement iteration.
func SetTrace(f func(t int, dual float64, load, lambda elastico.Vector)) (undo func()) {
	traceHook = f
	return func() { traceHook = nil }
}
