//go:build !linux

package pds

func cpuNanos() int64 { return 0 }
