// Package sets compares small slices as sets: a job's GPUs, for example.
// The slices hold no duplicates (a validated assignment never lists a GPU
// twice), which lets Equal skip sorting and allocate nothing.
package sets

import "slices"

// Subset reports whether every element of a is in b.
func Subset[T comparable](a, b []T) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// Equal reports whether a and b hold the same elements, in any order. Both
// must be free of duplicates.
func Equal[T comparable](a, b []T) bool { return len(a) == len(b) && Subset(a, b) }
