// Package profiler builds elastico profiles from real GPUs without touching
// the user's code: TDOP.
//
// A [Profiler] launches one configuration of a job alone through a
// [Launcher] ([Command] runs a program on this node), lets it warm up (a
// number of iterations or a time, whichever comes first), samples it every
// second over a measurement window, drops outliers with a 10–90 % trimmed
// mean and returns an [elastico.Profile]:
//
//   - throughput from the job's own iteration reports (see [ReportPrefix]);
//   - demand: the SM share (SM activity, or graphics-engine activity where the
//     source has no SM counter), the peak GPU memory, host CPU cores and the
//     peak host RAM of the job's processes;
//   - the ten hardware counters of the interference feature vector, each
//     absent when the source has no data for it;
//   - the hardware signature (GPU model, driver, MIG and MPS mode).
//
// Telemetry comes from a [Source]: package profiler/dcgm reads a
// dcgm-exporter endpoint (pure Go), package profiler/nvml reads NVML (cgo;
// the only package that needs it). The clock and the launcher are injected,
// so a test runs a 60 s window in milliseconds. A job that crashes, stalls or
// never reports is a [*JobError] naming it.
//
// A [Store] keeps profiles in versioned JSON files, one per job family,
// written atomically; examples/profile fills one from the command line.
package profiler
