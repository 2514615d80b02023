//go:build cgo

// Package nvml is a profiler.Source that reads NVIDIA's management library
// through github.com/NVIDIA/go-nvml. It is the only package of elastico that
// needs cgo; everything else builds with CGO_ENABLED=0, and so does this
// directory, which is then empty. go-nvml's header warns about deprecated
// calls; build with CGO_CFLAGS=-Wno-deprecated-declarations to silence it.
//
// On Hopper and newer GPUs the counters come from GPM (GPU performance
// monitoring), which differences two samples taken a second apart; on older
// GPUs from the utilization rates and the job's per-process samples. An
// NVML call that answers ERROR_NOT_SUPPORTED (or ERROR_NOT_FOUND: no sample
// yet) means "no data" and leaves its counter absent, never zero;
// ERROR_LIBRARY_NOT_FOUND at Open is [ErrLibraryNotFound], with a message
// that says what to check; ERROR_GPU_IS_LOST is profiler.ErrDeviceGone.
//
// NVML is reached through [Library], a narrow interface of this package's
// own: go-nvml's gonvml.New() implements it, and so do the mock DGX servers
// of github.com/NVIDIA/go-nvml/pkg/nvml/mock, which the tests use. Build the
// tests with -tags nvml_gpu on a GPU node to run the same checks against the
// real library.
package nvml
