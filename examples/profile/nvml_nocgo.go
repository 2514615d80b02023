//go:build !cgo

package main

import (
	"errors"

	"github.com/elastico/elastico/profiler"
)

// Without cgo there is no NVML binding: the dcgm source still works.
func openNVML([]string, float64) (profiler.Source, func() error, error) {
	return nil, nil, errors.New("-source nvml: this binary was built without cgo; rebuild with CGO_ENABLED=1 (and CGO_CFLAGS=-Wno-deprecated-declarations), or use -source dcgm")
}
