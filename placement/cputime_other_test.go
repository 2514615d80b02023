//go:build !linux

package placement

func cpuNanos() int64 { return 0 }
