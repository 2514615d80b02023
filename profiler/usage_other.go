//go:build !linux

package profiler

// processTreeUsage is only measured on Linux (from /proc).
func processTreeUsage(pid int) (pids []int, cpuSeconds, rssGiB float64, ok bool) {
	return []int{pid}, 0, 0, false
}
