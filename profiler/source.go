package profiler

import (
	"context"
	"errors"
	"fmt"

	"github.com/elastico/elastico"
)

// Source reads hardware telemetry for the devices a profiled job runs on.
// profiler/dcgm (a dcgm-exporter endpoint, pure Go) and profiler/nvml
// (go-nvml, cgo) implement it; a test implements it with canned readings.
type Source interface {
	// Hardware returns the signature of the devices the source reads. The
	// profiler sets MPS itself (a source cannot observe it).
	Hardware(ctx context.Context) (elastico.Hardware, error)
	// Sample reads every device the source watches once and appends one
	// Reading per device to dst, always in the same order. pids are the
	// job's processes, for sources that can attribute use to processes;
	// the others read the whole device (the job runs alone on it).
	// A device that was read before and is now absent is an error wrapping
	// ErrDeviceGone.
	Sample(ctx context.Context, pids []int, dst []Reading) ([]Reading, error)
}

// Reading is one sample of one device.
type Reading struct {
	// Device names the device (a GPU UUID, or a UUID and MIG instance), for
	// error messages.
	Device string
	// Counters holds the ratios the source measured in this sample; a
	// counter the source has no data for is absent, never zero.
	Counters elastico.Counters
	// MemoryUsed is the GPU memory in use, in GiB: by the job's processes
	// where the source can tell, else by the whole device. Valid when
	// HasMemory is set.
	MemoryUsed float64
	HasMemory  bool
}

// ErrDeviceGone is wrapped by a source's error when a device it has read
// before is no longer there (the GPU fell off the bus, the MIG instance was
// destroyed, the exporter stopped reporting it). The profiler stops at once:
// a window with a missing device is no measurement.
var ErrDeviceGone = errors.New("device disappeared")

// ErrNotVisible is wrapped by a source's error when it cannot see the job's
// device until the job runs: a dcgm-exporter selects a pod's GPU by the pod's
// labels, which exist only once the pod does. The profiler then reads the
// hardware signature after warm-up instead of before launch, and tolerates
// the error during warm-up.
var ErrNotVisible = errors.New("the job's device is not visible yet")

// PCIeBandwidth returns the usable bandwidth of one direction of a PCIe link
// of the given generation (1–6) and width (lanes), in bytes per second: the
// transfer rate per lane times the line-code efficiency (8b/10b up to
// generation 2, 128b/130b for 3–5, 242/256 FLIT for 6) times the lanes.
// A generation 4 x16 link gives about 31.5 GB/s.
func PCIeBandwidth(gen, width int) (float64, error) {
	if width < 1 || width > 32 {
		return 0, fmt.Errorf("profiler: PCIe link width %d, want 1–32 lanes", width)
	}
	var gts, code float64
	switch gen {
	case 1:
		gts, code = 2.5, 8.0/10
	case 2:
		gts, code = 5, 8.0/10
	case 3:
		gts, code = 8, 128.0/130
	case 4:
		gts, code = 16, 128.0/130
	case 5:
		gts, code = 32, 128.0/130
	case 6:
		gts, code = 64, 242.0/256
	default:
		return 0, fmt.Errorf("profiler: PCIe generation %d, want 1–6", gen)
	}
	return gts * 1e9 * code * float64(width) / 8, nil
}
