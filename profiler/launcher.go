package profiler

import (
	"context"
	"time"

	"github.com/elastico/elastico"
)

// Launcher starts a job under one configuration, alone on the profiling
// devices. Command runs a program on this node; a cluster host implements it
// with its own engine (a pod, a Slurm step).
type Launcher interface {
	Launch(ctx context.Context, req elastico.ProfileRequest) (Job, error)
}

// Job is a running job as the profiler sees it.
type Job interface {
	// Progress returns what the job has reported so far. An error means the
	// report stream itself is broken (a malformed report); a job that ended
	// says so in Progress.Exited.
	Progress() (Progress, error)
	// Stop ends the job (if it still runs) and releases what Launch took. It
	// is called exactly once, whatever happened before.
	Stop() error
}

// Progress is a job's state at one poll.
type Progress struct {
	// Iterations is the number of iterations the job has reported since it
	// started, and Work the work done in them, in the unit of the profile's
	// throughput (samples for training, tokens or requests for inference).
	// Both are cumulative.
	Iterations int64
	Work       float64
	// At is when the latest report was made; zero before the first report.
	// A launcher that cannot tell leaves it zero and the profiler uses the
	// time of the poll.
	At time.Time
	// Host usage of the job's processes: CPU seconds used since it started
	// and resident memory now, in GiB. HasUsage is false when the launcher
	// cannot measure them.
	CPUSeconds float64
	RSS        float64
	HasUsage   bool
	// PIDs are the job's processes now, for sources that attribute GPU use
	// to processes.
	PIDs []int
	// Exited is set once the job has ended; Err says why (nil: it exited
	// cleanly, which during profiling is still too early).
	Exited bool
	Err    error
}
