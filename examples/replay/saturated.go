package main

import "fmt"

// saturate returns the offered load and the jobs per window: -load and
// the window as given, or, with -saturated N, load 0 (no arrival process:
// every job at t = 0) and N jobs.
func saturate(o options, jobs int) (float64, int, error) {
	switch {
	case o.saturated < 0:
		return 0, 0, fmt.Errorf("-saturated %d: want ≥ 0", o.saturated)
	case o.saturated == 0:
		return o.load, jobs, nil
	case o.jobs != 0 && o.jobs != o.saturated:
		return 0, 0, fmt.Errorf("-saturated %d and -jobs %d: -saturated sets the jobs per window; give one", o.saturated, o.jobs)
	}
	return 0, o.saturated, nil
}
