//go:build cgo

package nvml_test

import (
	"context"
	"fmt"
	"log"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/profiler/nvml"
)

// Reading an A100 (pre-Hopper: utilization rates and process samples)
// through go-nvml's mock DGX A100, whose unset *Func fields the example
// fills in. On a GPU node, leave Config.Library nil.
func ExampleOpen() {
	server := dgxa100.New()
	gpu := server.Devices[0].(*dgxa100.Device)
	gpu.GetUtilizationRatesFunc = func() (gonvml.Utilization, gonvml.Return) {
		return gonvml.Utilization{Gpu: 93, Memory: 48}, gonvml.SUCCESS
	}
	gpu.GetProcessUtilizationFunc = func(uint64) ([]gonvml.ProcessUtilizationSample, gonvml.Return) {
		return []gonvml.ProcessUtilizationSample{{Pid: 4242, TimeStamp: 1, SmUtil: 81}}, gonvml.SUCCESS
	}
	gpu.GetComputeRunningProcessesFunc = func() ([]gonvml.ProcessInfo, gonvml.Return) {
		return []gonvml.ProcessInfo{{Pid: 4242, UsedGpuMemory: 10 << 30}}, gonvml.SUCCESS
	}
	gpu.GetPowerUsageFunc = func() (uint32, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED }
	gpu.GetMaxPcieLinkGenerationFunc = func() (int, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED }
	gpu.GetMaxPcieLinkWidthFunc = func() (int, gonvml.Return) { return 0, gonvml.ERROR_NOT_SUPPORTED }

	src, err := nvml.Open(nvml.Config{Library: server, Devices: []string{"0"}})
	if err != nil {
		log.Fatal(err)
	}
	defer src.Close()
	hw, err := src.Hardware(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	rs, err := src.Sample(context.Background(), []int{4242}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s, driver %s, GPM %v\n", hw.GPUModel, hw.Driver, src.GPM(0))
	for c := elastico.Counter(0); c < elastico.NumCounters; c++ {
		if v, ok := rs[0].Counters.Get(c); ok {
			fmt.Printf("%s %.2f\n", c, v)
		}
	}
	fmt.Printf("memory %.0f GiB\n", rs[0].MemoryUsed)
	// Output:
	// Mock NVIDIA A100-SXM4-40GB, driver 550.54.15, GPM false
	// gr_engine_active 0.93
	// sm_active 0.81
	// dram_active 0.48
	// fb_used_frac 0.25
	// memory 10 GiB
}
