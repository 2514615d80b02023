// Package slab reuses slices from one call to the next: the hot paths
// (an epoch, a placement, a price solve) keep their working slices in a
// struct that outlives the call, and size them again each time.
package slab

// Zeroed returns s with length n and every element zero, reusing its
// array when it is large enough.
func Zeroed[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

// Resize returns s with length n, reusing its array when it is large
// enough; elements it reuses keep their old values, for a slice whose
// every entry is written before it is read.
func Resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	return s[:n]
}
