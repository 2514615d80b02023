//go:build cgo

package nvml

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxa100"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock/dgxh100"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/profiler"
)

const jobPID = 4242

// board is what a mock device reports; the tests set the *Func fields the
// DGX mocks leave nil from it.
type board struct {
	util       gonvml.Utilization
	procUtil   []gonvml.ProcessUtilizationSample
	procs      []gonvml.ProcessInfo
	usedBytes  uint64
	powerMW    uint32
	limitMW    uint32
	pcieKiB    [2]uint32 // TX, RX
	pcieGen    int
	pcieWidth  int
	gpmSupport uint32
	gpm        map[gonvml.GpmMetricId]float64 // percent or MiB/s
	gpmNoData  []gonvml.GpmMetricId           // metrics that answer ERROR_NOT_SUPPORTED
	// notSupported makes these calls answer ERROR_NOT_SUPPORTED; fail
	// makes one answer the given error.
	notSupported map[string]bool
	failCall     string
	failRet      gonvml.Return
}

func (b *board) ret(call string) gonvml.Return {
	switch {
	case call == b.failCall:
		return b.failRet
	case b.notSupported[call]:
		return gonvml.ERROR_NOT_SUPPORTED
	}
	return gonvml.SUCCESS
}

// wire sets the mock device's missing functions to answer from b.
func wire(d *mock.Device, total uint64, b *board) {
	d.GetUtilizationRatesFunc = func() (gonvml.Utilization, gonvml.Return) {
		return b.util, b.ret("GetUtilizationRates")
	}
	calls := uint64(0)
	d.GetProcessUtilizationFunc = func(last uint64) ([]gonvml.ProcessUtilizationSample, gonvml.Return) {
		// NVML keeps sampling: each call finds the same pattern again,
		// a second later, and returns what is newer than last.
		calls++
		var out []gonvml.ProcessUtilizationSample
		for _, s := range b.procUtil {
			s.TimeStamp += calls * 1e6
			if s.TimeStamp > last {
				out = append(out, s)
			}
		}
		if len(out) == 0 {
			return nil, gonvml.ERROR_NOT_FOUND
		}
		return out, b.ret("GetProcessUtilization")
	}
	d.GetComputeRunningProcessesFunc = func() ([]gonvml.ProcessInfo, gonvml.Return) {
		return b.procs, b.ret("GetComputeRunningProcesses")
	}
	d.GetMemoryInfoFunc = func() (gonvml.Memory, gonvml.Return) {
		return gonvml.Memory{Total: total, Used: b.usedBytes, Free: total - b.usedBytes}, b.ret("GetMemoryInfo")
	}
	d.GetPowerUsageFunc = func() (uint32, gonvml.Return) { return b.powerMW, b.ret("GetPowerUsage") }
	d.GetEnforcedPowerLimitFunc = func() (uint32, gonvml.Return) { return b.limitMW, b.ret("GetEnforcedPowerLimit") }
	d.GetPcieThroughputFunc = func(c gonvml.PcieUtilCounter) (uint32, gonvml.Return) {
		return b.pcieKiB[c], b.ret("GetPcieThroughput")
	}
	d.GetMaxPcieLinkGenerationFunc = func() (int, gonvml.Return) { return b.pcieGen, b.ret("GetMaxPcieLinkGeneration") }
	d.GetMaxPcieLinkWidthFunc = func() (int, gonvml.Return) { return b.pcieWidth, b.ret("GetMaxPcieLinkWidth") }
	d.GpmQueryDeviceSupportFunc = func() (gonvml.GpmSupport, gonvml.Return) {
		return gonvml.GpmSupport{Version: 1, IsSupportedDevice: b.gpmSupport}, b.ret("GpmQueryDeviceSupport")
	}
	d.GpmSampleGetFunc = func(s gonvml.GpmSample) gonvml.Return {
		s.(*gpmSample).taken = sampleClock.Add(1)
		return b.ret("GpmSampleGet")
	}
}

// gpmSample records when it was last filled, so that GpmMetricsGet can
// check it gets the older sample first.
type gpmSample struct {
	mock.GpmSample
	taken int64
	freed int
}

var sampleClock atomic.Int64

// wireServer sets the server's GPM functions; metricsGet answers for the
// device the samples were taken on (one device per test server here).
func wireServer(s *mock.Interface, b *board, calls *int) {
	s.GpmSampleAllocFunc = func() (gonvml.GpmSample, gonvml.Return) {
		g := &gpmSample{}
		g.FreeFunc = func() gonvml.Return { g.freed++; return gonvml.SUCCESS }
		return g, gonvml.SUCCESS
	}
	s.GpmMetricsGetFunc = func(m *gonvml.GpmMetricsGetType) gonvml.Return {
		*calls++
		s1, s2 := m.Sample1.(*gpmSample), m.Sample2.(*gpmSample)
		if s1.taken == 0 || s1.taken >= s2.taken {
			return gonvml.ERROR_INVALID_ARGUMENT // samples out of order
		}
		for k := 0; k < int(m.NumMetrics); k++ {
			id := gonvml.GpmMetricId(m.Metrics[k].MetricId)
			v, ok := b.gpm[id]
			switch {
			case ok && !containsID(b.gpmNoData, id):
				m.Metrics[k].Value, m.Metrics[k].NvmlReturn = v, uint32(gonvml.SUCCESS)
			default:
				m.Metrics[k].NvmlReturn = uint32(gonvml.ERROR_NOT_SUPPORTED)
			}
		}
		return b.ret("GpmMetricsGet")
	}
}

func containsID(ids []gonvml.GpmMetricId, id gonvml.GpmMetricId) bool {
	for _, x := range ids {
		if x == id {
			return true
		}
	}
	return false
}

func a100Board() *board {
	return &board{
		util: gonvml.Utilization{Gpu: 97, Memory: 61},
		procUtil: []gonvml.ProcessUtilizationSample{
			{Pid: jobPID, TimeStamp: 100, SmUtil: 80, MemUtil: 55},
			{Pid: jobPID, TimeStamp: 200, SmUtil: 84, MemUtil: 57},
			{Pid: jobPID + 1, TimeStamp: 200, SmUtil: 6}, // a data-loader worker of the job
			{Pid: 999, TimeStamp: 200, SmUtil: 50},       // not the job
		},
		procs: []gonvml.ProcessInfo{
			{Pid: jobPID, UsedGpuMemory: 12 << 30}, {Pid: jobPID + 1, UsedGpuMemory: 1 << 29}, {Pid: 999, UsedGpuMemory: 2 << 30},
		},
		usedBytes: 15 << 30,
		powerMW:   300000, limitMW: 400000,
		pcieKiB: [2]uint32{2 << 20, 6 << 20}, pcieGen: 4, pcieWidth: 16,
	}
}

func h100Board() *board {
	b := a100Board()
	b.gpmSupport = 1
	b.pcieGen = 5
	b.gpm = map[gonvml.GpmMetricId]float64{
		gonvml.GPM_METRIC_GRAPHICS_UTIL: 98, gonvml.GPM_METRIC_SM_UTIL: 91, gonvml.GPM_METRIC_SM_OCCUPANCY: 42,
		gonvml.GPM_METRIC_ANY_TENSOR_UTIL: 63, gonvml.GPM_METRIC_FP32_UTIL: 11, gonvml.GPM_METRIC_FP16_UTIL: 17,
		gonvml.GPM_METRIC_DRAM_BW_UTIL: 58, gonvml.GPM_METRIC_PCIE_TX_PER_SEC: 1024, gonvml.GPM_METRIC_PCIE_RX_PER_SEC: 3072,
		gonvml.GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC: 100 * 1024, gonvml.GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC: 60 * 1024,
	}
	return b
}

// server is a DGX mock with GPU 0 wired to b.
type server struct {
	lib      *dgxa100.Server // dgxh100.Server is the same type
	dev      *dgxa100.Device
	b        *board
	gpmCalls int
}

func newServer(kind string, b *board) *server {
	var lib *dgxa100.Server
	if kind == "h100" {
		lib = dgxh100.New()
	} else {
		lib = dgxa100.New()
	}
	s := &server{lib: lib, dev: lib.Devices[0].(*dgxa100.Device), b: b}
	wire(&s.dev.Device, s.dev.MemoryInfo.Total, b)
	wireServer(&lib.Interface, b, &s.gpmCalls)
	return s
}

func counterSet(vals map[elastico.Counter]float64) elastico.Counters {
	var cs elastico.Counters
	for c, v := range vals {
		cs.Set(c, v)
	}
	return cs
}

func TestSource(t *testing.T) {
	gen4, _ := profiler.PCIeBandwidth(4, 16)
	gen5, _ := profiler.PCIeBandwidth(5, 16)
	const gib = 1 << 30
	a100Legacy := counterSet(map[elastico.Counter]float64{
		elastico.GrEngineActive: 0.97, elastico.DRAMActive: 0.61, elastico.SMActive: 0.90, // 84 + 6: the job's two processes
		elastico.FBUsedFrac: 12.5 * gib / (40960.0 * 1024 * 1024), elastico.PowerFrac: 0.75,
		elastico.PCIeFrac: 8 * 1024 * 1024 * 1024 / (2 * gen4),
	})
	tests := []struct {
		name      string
		kind      string
		board     func() *board
		pids      []int
		nvlink    float64
		samples   int // readings taken; the last is compared
		wantGPM   bool
		want      profiler.Reading
		wantHW    elastico.Hardware
		wantCalls int // GpmMetricsGet calls
	}{
		{
			name: "A100: utilization rates and the job's process samples", kind: "a100", board: a100Board,
			pids: []int{jobPID, jobPID + 1}, samples: 2,
			want:   profiler.Reading{Counters: a100Legacy, MemoryUsed: 12.5, HasMemory: true},
			wantHW: elastico.Hardware{GPUModel: "Mock NVIDIA A100-SXM4-40GB", Driver: "550.54.15"},
		},
		{
			name: "A100: not supported is no data, and the device's memory stands in for unknown PIDs", kind: "a100",
			board: func() *board {
				b := a100Board()
				b.notSupported = map[string]bool{"GetPowerUsage": true, "GetProcessUtilization": true, "GetMaxPcieLinkGeneration": true}
				return b
			},
			pids: []int{7}, samples: 1,
			want: profiler.Reading{
				Counters: counterSet(map[elastico.Counter]float64{
					elastico.GrEngineActive: 0.97, elastico.DRAMActive: 0.61, elastico.FBUsedFrac: 15.0 / 40,
				}),
				MemoryUsed: 15, HasMemory: true,
			},
			wantHW: elastico.Hardware{GPUModel: "Mock NVIDIA A100-SXM4-40GB", Driver: "550.54.15"},
		},
		{
			name: "H100: GPM from the second sample on", kind: "h100", board: h100Board,
			pids: []int{jobPID, jobPID + 1}, nvlink: 450e9, samples: 3, wantGPM: true, wantCalls: 2,
			want: profiler.Reading{
				Counters: counterSet(map[elastico.Counter]float64{
					elastico.GrEngineActive: 0.98, elastico.SMActive: 0.91, elastico.SMOccupancy: 0.42, elastico.TensorActive: 0.63,
					elastico.FPActive: 0.17, elastico.DRAMActive: 0.58, elastico.PCIeFrac: 4096.0 * (1 << 20) / (2 * gen5),
					elastico.NVLinkFrac: 160.0 * 1024 * (1 << 20) / 900e9,
					elastico.FBUsedFrac: 12.5 * gib / (81920.0 * 1024 * 1024), elastico.PowerFrac: 0.75,
				}),
				MemoryUsed: 12.5, HasMemory: true,
			},
			wantHW: elastico.Hardware{GPUModel: "NVIDIA H100 80GB HBM3", Driver: "550.54.15"},
		},
		{
			name: "H100: a GPM metric the board lacks falls back, or stays absent", kind: "h100",
			board: func() *board {
				b := h100Board()
				b.gpmNoData = []gonvml.GpmMetricId{gonvml.GPM_METRIC_SM_OCCUPANCY, gonvml.GPM_METRIC_DRAM_BW_UTIL}
				return b
			},
			pids: []int{jobPID}, samples: 2, wantGPM: true, wantCalls: 1,
			want: profiler.Reading{
				Counters: counterSet(map[elastico.Counter]float64{
					elastico.GrEngineActive: 0.98, elastico.SMActive: 0.91, elastico.TensorActive: 0.63,
					elastico.FPActive: 0.17, elastico.DRAMActive: 0.61, elastico.PCIeFrac: 4096.0 * (1 << 20) / (2 * gen5),
					elastico.FBUsedFrac: 12.0 * gib / (81920.0 * 1024 * 1024), elastico.PowerFrac: 0.75,
				}),
				MemoryUsed: 12, HasMemory: true,
			},
			wantHW: elastico.Hardware{GPUModel: "NVIDIA H100 80GB HBM3", Driver: "550.54.15"},
		},
		{
			name: "H100 without GPM support: the pre-Hopper path", kind: "h100",
			board: func() *board { b := h100Board(); b.gpmSupport = 0; b.pcieGen = 4; return b },
			pids:  []int{jobPID, jobPID + 1}, samples: 2,
			want: profiler.Reading{
				Counters: func() elastico.Counters {
					cs := a100Legacy
					cs.Set(elastico.FBUsedFrac, 12.5*gib/(81920.0*1024*1024))
					return cs
				}(),
				MemoryUsed: 12.5, HasMemory: true,
			},
			wantHW: elastico.Hardware{GPUModel: "NVIDIA H100 80GB HBM3", Driver: "550.54.15"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newServer(tt.kind, tt.board())
			src, err := Open(Config{Library: srv.lib, Devices: []string{"0"}, NVLinkBandwidth: tt.nvlink})
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			if src.GPM(0) != tt.wantGPM {
				t.Errorf("GPM = %v, want %v", src.GPM(0), tt.wantGPM)
			}
			hw, err := src.Hardware(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantHW, hw); diff != "" {
				t.Errorf("Hardware (-want +got):\n%s", diff)
			}
			var rs []profiler.Reading
			for i := 0; i < tt.samples; i++ {
				if rs, err = src.Sample(context.Background(), tt.pids, rs[:0]); err != nil {
					t.Fatalf("sample %d: %v", i, err)
				}
			}
			checkReadings(t, rs, 1)
			want := tt.want
			want.Device = srv.dev.UUID
			if diff := cmp.Diff([]profiler.Reading{want}, rs, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("last reading (-want +got):\n%s", diff)
			}
			if srv.gpmCalls != tt.wantCalls {
				t.Errorf("GpmMetricsGet called %d times, want %d", srv.gpmCalls, tt.wantCalls)
			}
			if tt.kind == "a100" && len(srv.dev.GpmQueryDeviceSupportCalls()) != 0 {
				t.Errorf("GPM queried on an Ampere GPU")
			}
		})
	}
}

func TestSourceHardwareMIG(t *testing.T) {
	srv := newServer("a100", a100Board())
	srv.dev.MigMode = gonvml.DEVICE_MIG_ENABLE
	src, err := Open(Config{Library: srv.lib, Devices: []string{srv.dev.UUID}})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	hw, err := src.Hardware(context.Background())
	if err != nil || !hw.MIG {
		t.Errorf("Hardware = %+v, %v; want MIG", hw, err)
	}
}

func TestSourceErrors(t *testing.T) {
	tests := []struct {
		name     string
		kind     string
		board    func(*board)
		devices  []string
		initRet  gonvml.Return
		atOpen   bool
		wantIs   error
		wantText string
	}{
		{
			name: "GPU falls off the bus", kind: "a100",
			board:  func(b *board) { b.failCall, b.failRet = "GetPowerUsage", gonvml.ERROR_GPU_IS_LOST },
			wantIs: profiler.ErrDeviceGone, wantText: "GetPowerUsage: ERROR_GPU_IS_LOST",
		},
		{
			name: "GPM sample fails", kind: "h100",
			board:    func(b *board) { b.failCall, b.failRet = "GpmSampleGet", gonvml.ERROR_UNKNOWN },
			wantText: "GpmSampleGet: ERROR_UNKNOWN",
		},
		{
			name: "an unknown error is an error, not missing data", kind: "a100",
			board:    func(b *board) { b.failCall, b.failRet = "GetUtilizationRates", gonvml.ERROR_NO_PERMISSION },
			wantText: "GetUtilizationRates: ERROR_NO_PERMISSION",
		},
		{
			name: "library not found", kind: "a100", initRet: gonvml.ERROR_LIBRARY_NOT_FOUND, atOpen: true,
			wantIs: ErrLibraryNotFound, wantText: "is the NVIDIA driver installed",
		},
		{
			name: "init fails", kind: "a100", initRet: gonvml.ERROR_DRIVER_NOT_LOADED, atOpen: true,
			wantText: "nvml: Init: ERROR_DRIVER_NOT_LOADED",
		},
		{
			name: "no such index", kind: "a100", devices: []string{"9"}, atOpen: true,
			wantText: `Config.Devices[0] "9": ERROR_INVALID_ARGUMENT`,
		},
		{
			name: "no such UUID", kind: "a100", devices: []string{"GPU-nope"}, atOpen: true,
			wantText: `Config.Devices[0] "GPU-nope": ERROR_INVALID_ARGUMENT`,
		},
		{
			name: "one device twice", kind: "a100", devices: []string{"0", "0"}, atOpen: true,
			wantText: "already listed",
		},
		{
			name: "no devices", kind: "a100", devices: []string{}, atOpen: true,
			wantText: "Config.Devices is empty",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := a100Board()
			if tt.kind == "h100" {
				b = h100Board()
			}
			if tt.board != nil {
				tt.board(b)
			}
			srv := newServer(tt.kind, b)
			if tt.initRet != 0 {
				srv.lib.InitFunc = func() gonvml.Return { return tt.initRet }
			}
			devices := tt.devices
			if devices == nil {
				devices = []string{"0"}
			}
			src, err := Open(Config{Library: srv.lib, Devices: devices})
			if !tt.atOpen {
				if err != nil {
					t.Fatal(err)
				}
				defer src.Close()
				_, err = src.Sample(context.Background(), []int{jobPID}, nil)
			}
			if err == nil || !strings.HasPrefix(err.Error(), "nvml: ") || !strings.Contains(err.Error(), tt.wantText) {
				t.Fatalf("error = %v, want an nvml error containing %q", err, tt.wantText)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v does not wrap %v", err, tt.wantIs)
			}
			if tt.atOpen && tt.initRet == 0 && len(devices) > 0 && len(srv.lib.ShutdownCalls()) != 1 {
				t.Errorf("a failed Open did not shut NVML down")
			}
		})
	}
}

// TestLibraryNotFound asks go-nvml itself to load a library that is not
// there: what a node without the driver answers.
func TestLibraryNotFound(t *testing.T) {
	_, err := Open(Config{Library: gonvml.New(gonvml.WithLibraryPath("/nonexistent/libnvidia-ml.so.1")), Devices: []string{"0"}})
	if !errors.Is(err, ErrLibraryNotFound) {
		t.Fatalf("Open = %v, want ErrLibraryNotFound", err)
	}
}

func TestClose(t *testing.T) {
	srv := newServer("h100", h100Board())
	src, err := Open(Config{Library: srv.lib, Devices: []string{"0"}})
	if err != nil {
		t.Fatal(err)
	}
	samples := src.devs[0].samples
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	for i, s := range samples {
		if n := s.(*gpmSample).freed; n != 1 {
			t.Errorf("GPM sample %d freed %d times", i, n)
		}
	}
	if n := len(srv.lib.ShutdownCalls()); n != 1 {
		t.Errorf("Shutdown called %d times", n)
	}
	if _, err := src.Sample(context.Background(), nil, nil); err == nil {
		t.Errorf("Sample after Close succeeded")
	}
}

// jumpClock and the job below run the profiler's whole pipeline on the
// mock H100.
type jumpClock struct{ now time.Time }

func (c *jumpClock) Now() time.Time { return c.now }
func (c *jumpClock) Sleep(ctx context.Context, d time.Duration) error {
	c.now = c.now.Add(max(d, 0))
	return ctx.Err()
}

type job struct {
	c     *jumpClock
	start time.Time
}

func (j *job) Progress() (profiler.Progress, error) {
	el := j.c.Now().Sub(j.start).Seconds()
	it := int64(el * 20)
	return profiler.Progress{Iterations: it, Work: float64(it) * 128, CPUSeconds: 3 * el, RSS: 9, HasUsage: true,
		PIDs: []int{jobPID, jobPID + 1}}, nil
}

func (j *job) Stop() error { return nil }

type launcher struct{ c *jumpClock }

func (l launcher) Launch(ctx context.Context, req elastico.ProfileRequest) (profiler.Job, error) {
	return &job{c: l.c, start: l.c.Now()}, nil
}

func TestProfileOnMockH100(t *testing.T) {
	srv := newServer("h100", h100Board())
	src, err := Open(Config{Library: srv.lib, Devices: []string{"0"}})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	c := &jumpClock{now: time.Unix(0, 0)}
	p, err := profiler.New(profiler.Config{Launcher: launcher{c}, Source: src, Clock: c})
	if err != nil {
		t.Fatal(err)
	}
	prof, err := p.Profile(context.Background(), elastico.ProfileRequest{
		Family: "bert-large", Class: elastico.Training, Config: elastico.Configuration{ID: "bs128", BatchSize: 128},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := elastico.Demand{GPUs: 1, SM: 0.91, GPUMemory: 12.5, CPU: 3, RAM: 9}
	if diff := cmp.Diff(want, prof.Demand, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
		t.Errorf("demand (-want +got):\n%s", diff)
	}
	if prof.Throughput != 2560 || prof.Hardware.GPUModel != "NVIDIA H100 80GB HBM3" || !prof.Counters.Has(elastico.SMOccupancy) {
		t.Errorf("profile %+v", prof)
	}
}

// checkReadings holds for any device, mock or real: one reading per device,
// named, with every counter a plausible ratio and memory in use.
func checkReadings(t *testing.T, rs []profiler.Reading, devices int) {
	t.Helper()
	if len(rs) != devices {
		t.Fatalf("%d readings, want %d", len(rs), devices)
	}
	for _, r := range rs {
		if !strings.HasPrefix(r.Device, "GPU-") {
			t.Errorf("reading names device %q, want a UUID", r.Device)
		}
		for c := elastico.Counter(0); c < elastico.NumCounters; c++ {
			// Power may overshoot its limit for a moment; nothing else
			// can exceed the whole GPU.
			if v, ok := r.Counters.Get(c); ok && (v < 0 || v > 1.5) {
				t.Errorf("%s: %s = %g, want a ratio", r.Device, c, v)
			}
		}
		if !r.HasMemory || r.MemoryUsed < 0 {
			t.Errorf("%s: memory %g GiB (has %v)", r.Device, r.MemoryUsed, r.HasMemory)
		}
		if !r.Counters.Has(elastico.GrEngineActive) || !r.Counters.Has(elastico.FBUsedFrac) {
			t.Errorf("%s: no graphics-engine activity or memory fraction: %+v", r.Device, r.Counters)
		}
	}
}
