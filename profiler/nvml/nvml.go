//go:build cgo

package nvml

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"

	gonvml "github.com/NVIDIA/go-nvml/pkg/nvml"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/profiler"
)

// Library is the part of NVML the source calls. go-nvml's gonvml.New()
// implements it, and so do its mock servers (mock/dgxa100, mock/dgxh100).
type Library interface {
	Init() gonvml.Return
	Shutdown() gonvml.Return
	SystemGetDriverVersion() (string, gonvml.Return)
	DeviceGetHandleByIndex(int) (gonvml.Device, gonvml.Return)
	DeviceGetHandleByUUID(string) (gonvml.Device, gonvml.Return)
	GpmSampleAlloc() (gonvml.GpmSample, gonvml.Return)
	GpmMetricsGet(*gonvml.GpmMetricsGetType) gonvml.Return
}

// device is the part of an NVML device handle the source calls.
type device interface {
	GetName() (string, gonvml.Return)
	GetUUID() (string, gonvml.Return)
	GetArchitecture() (gonvml.DeviceArchitecture, gonvml.Return)
	GetMigMode() (int, int, gonvml.Return)
	GetMemoryInfo() (gonvml.Memory, gonvml.Return)
	GetUtilizationRates() (gonvml.Utilization, gonvml.Return)
	GetProcessUtilization(uint64) ([]gonvml.ProcessUtilizationSample, gonvml.Return)
	GetComputeRunningProcesses() ([]gonvml.ProcessInfo, gonvml.Return)
	GetPowerUsage() (uint32, gonvml.Return)
	GetEnforcedPowerLimit() (uint32, gonvml.Return)
	GetPcieThroughput(gonvml.PcieUtilCounter) (uint32, gonvml.Return)
	GetMaxPcieLinkGeneration() (int, gonvml.Return)
	GetMaxPcieLinkWidth() (int, gonvml.Return)
	GpmQueryDeviceSupport() (gonvml.GpmSupport, gonvml.Return)
	GpmSampleGet(gonvml.GpmSample) gonvml.Return
}

var (
	_ device          = gonvml.Device(nil)
	_ profiler.Source = (*Source)(nil)
)

// ErrLibraryNotFound is wrapped by Open's error when libnvidia-ml cannot be
// loaded: the node has no NVIDIA driver, or the process cannot see it.
var ErrLibraryNotFound = errors.New("NVML library not found")

// Config configures a Source.
type Config struct {
	// Library is NVML; nil loads the system's libnvidia-ml.so.1.
	Library Library
	// Devices are the GPUs the profiled job runs on, one per replica: an
	// NVML index ("0") or a UUID ("GPU-…").
	Devices []string
	// NVLinkBandwidth is the NVLink bandwidth of one direction over all
	// links, in bytes/s (NVML does not report it); zero leaves the NVLink
	// counter absent.
	NVLinkBandwidth float64
}

// Source reads NVML; it implements profiler.Source.
type Source struct {
	lib     Library
	nvlink  float64
	devs    []*gpu
	mu      sync.Mutex
	closed  bool
	metrics gonvml.GpmMetricsGetType // reused: it is 20 KiB
}

// gpu is one device's handle and sampling state.
type gpu struct {
	spec     string // as configured
	dev      device
	uuid     string
	name     string
	pciePeak float64 // bytes/s one way; 0: unknown
	gpm      bool
	samples  [2]gonvml.GpmSample
	cur      int  // the sample the next GpmSampleGet fills
	havePrev bool // samples[1-cur] holds the previous one
	lastSeen uint64
}

// The GPM metrics the source asks for, and the counters they become.
var gpmIDs = []gonvml.GpmMetricId{
	gonvml.GPM_METRIC_GRAPHICS_UTIL, gonvml.GPM_METRIC_SM_UTIL, gonvml.GPM_METRIC_SM_OCCUPANCY,
	gonvml.GPM_METRIC_ANY_TENSOR_UTIL, gonvml.GPM_METRIC_FP32_UTIL, gonvml.GPM_METRIC_FP16_UTIL,
	gonvml.GPM_METRIC_DRAM_BW_UTIL, gonvml.GPM_METRIC_PCIE_TX_PER_SEC, gonvml.GPM_METRIC_PCIE_RX_PER_SEC,
	gonvml.GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, gonvml.GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC,
}

// Open initializes NVML, finds the devices and prepares GPM sampling on
// those that support it. Close releases it all.
func Open(cfg Config) (*Source, error) {
	if len(cfg.Devices) == 0 {
		return nil, errors.New("nvml: Config.Devices is empty: name the GPU(s) the job runs on")
	}
	if v := cfg.NVLinkBandwidth; math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return nil, fmt.Errorf("nvml: Config.NVLinkBandwidth is %g, want a finite non-negative number", v)
	}
	lib := cfg.Library
	if lib == nil {
		lib = gonvml.New()
	}
	switch ret := lib.Init(); ret {
	case gonvml.SUCCESS:
	case gonvml.ERROR_LIBRARY_NOT_FOUND:
		return nil, fmt.Errorf("nvml: %w: libnvidia-ml.so.1 could not be loaded; is the NVIDIA driver installed, and visible to this process (in a container: the NVIDIA container runtime)?", ErrLibraryNotFound)
	default:
		return nil, fmt.Errorf("nvml: Init: %v", ret)
	}
	s := &Source{lib: lib, nvlink: cfg.NVLinkBandwidth}
	if err := s.open(cfg.Devices); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Source) open(specs []string) error {
	for i, spec := range specs {
		var (
			h   gonvml.Device
			ret gonvml.Return
		)
		if idx, err := strconv.Atoi(spec); err == nil {
			h, ret = s.lib.DeviceGetHandleByIndex(idx)
		} else {
			h, ret = s.lib.DeviceGetHandleByUUID(spec)
		}
		if ret != gonvml.SUCCESS {
			return fmt.Errorf("nvml: Config.Devices[%d] %q: %v", i, spec, ret)
		}
		g := &gpu{spec: spec, dev: h}
		if g.uuid, ret = h.GetUUID(); ret != gonvml.SUCCESS {
			return fmt.Errorf("nvml: device %q: GetUUID: %v", spec, ret)
		}
		if slices.ContainsFunc(s.devs, func(o *gpu) bool { return o.uuid == g.uuid }) {
			return fmt.Errorf("nvml: Config.Devices[%d] %q is a device already listed (%s)", i, spec, g.uuid)
		}
		if g.name, ret = h.GetName(); ret != gonvml.SUCCESS {
			return fmt.Errorf("nvml: %s: GetName: %v", g.uuid, ret)
		}
		gen, r1 := h.GetMaxPcieLinkGeneration()
		width, r2 := h.GetMaxPcieLinkWidth()
		if r1 == gonvml.SUCCESS && r2 == gonvml.SUCCESS {
			if bw, err := profiler.PCIeBandwidth(gen, width); err == nil {
				g.pciePeak = bw
			}
		}
		// GPM (GPU performance monitoring) exists from Hopper on, and not
		// on every Hopper board; older GPUs get utilization and
		// per-process samples.
		if arch, ret := h.GetArchitecture(); ret == gonvml.SUCCESS && arch >= gonvml.DEVICE_ARCH_HOPPER {
			sup, ret := h.GpmQueryDeviceSupport()
			if ret == gonvml.SUCCESS && sup.IsSupportedDevice != 0 {
				g.gpm = true
				for k := range g.samples {
					if g.samples[k], ret = s.lib.GpmSampleAlloc(); ret != gonvml.SUCCESS {
						return fmt.Errorf("nvml: %s: GpmSampleAlloc: %v", g.uuid, ret)
					}
				}
			}
		}
		s.devs = append(s.devs, g)
	}
	return nil
}

// Close frees the GPM samples and shuts NVML down.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	for _, g := range s.devs {
		for _, smp := range g.samples {
			if smp != nil {
				smp.Free()
			}
		}
	}
	if ret := s.lib.Shutdown(); ret != gonvml.SUCCESS {
		return fmt.Errorf("nvml: Shutdown: %v", ret)
	}
	return nil
}

// GPM reports whether device i is sampled through GPM.
func (s *Source) GPM(i int) bool { return s.devs[i].gpm }

// Hardware returns the devices' name, the driver version and whether MIG
// mode is on. (MIG instances are not read separately here: profile a MIG
// instance with the dcgm source.)
func (s *Source) Hardware(ctx context.Context) (elastico.Hardware, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	drv, ret := s.lib.SystemGetDriverVersion()
	if ret != gonvml.SUCCESS {
		return elastico.Hardware{}, fmt.Errorf("nvml: SystemGetDriverVersion: %v", ret)
	}
	var hw elastico.Hardware
	for i, g := range s.devs {
		h := elastico.Hardware{GPUModel: g.name, Driver: drv}
		cur, _, ret := g.dev.GetMigMode()
		switch {
		case ret == gonvml.SUCCESS:
			h.MIG = cur == gonvml.DEVICE_MIG_ENABLE
		case ret != gonvml.ERROR_NOT_SUPPORTED: // pre-Ampere boards have no MIG
			return elastico.Hardware{}, fmt.Errorf("nvml: %s: GetMigMode: %v", g.uuid, ret)
		}
		if i > 0 && h != hw {
			return elastico.Hardware{}, fmt.Errorf("nvml: the devices differ: %+v and %+v", hw, h)
		}
		hw = h
	}
	return hw, nil
}

// check sorts an NVML return: nil and ok for data, nil and !ok for "no
// data" (not supported on this device, or no sample yet), an error
// otherwise (wrapping profiler.ErrDeviceGone for a GPU that fell off the
// bus).
func check(g *gpu, call string, ret gonvml.Return) (ok bool, err error) {
	switch ret {
	case gonvml.SUCCESS:
		return true, nil
	case gonvml.ERROR_NOT_SUPPORTED, gonvml.ERROR_NOT_FOUND:
		return false, nil
	case gonvml.ERROR_GPU_IS_LOST:
		return false, fmt.Errorf("nvml: %s: %s: %v: %w", g.uuid, call, ret, profiler.ErrDeviceGone)
	}
	return false, fmt.Errorf("nvml: %s: %s: %v", g.uuid, call, ret)
}

// Sample reads every device once (see Reading for what comes from where).
func (s *Source) Sample(ctx context.Context, pids []int, dst []profiler.Reading) ([]profiler.Reading, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return dst, errors.New("nvml: Sample on a closed source")
	}
	for _, g := range s.devs {
		r, err := s.read(g, pids)
		if err != nil {
			return dst, err
		}
		dst = append(dst, r)
	}
	return dst, nil
}

// read takes one reading of g:
//
//	counter           Hopper and newer (GPM)           before (or where GPM has no data)
//	gr_engine_active  GRAPHICS_UTIL                     GetUtilizationRates().Gpu
//	sm_active         SM_UTIL                           the job's processes' SmUtil (GetProcessUtilization)
//	sm_occupancy      SM_OCCUPANCY                      —
//	tensor_active     ANY_TENSOR_UTIL                   —
//	fp_active         max(FP32_UTIL, FP16_UTIL)         —
//	dram_active       DRAM_BW_UTIL                      GetUtilizationRates().Memory
//	pcie_frac         PCIE_TX+RX_PER_SEC                GetPcieThroughput(TX)+(RX), over the link's peak both ways
//	nvlink_frac       NVLINK_TOTAL_TX+RX_PER_SEC        —, over Config.NVLinkBandwidth both ways
//	fb_used_frac      the job's GetComputeRunningProcesses memory (else the device's used) / GetMemoryInfo().Total
//	power_frac        GetPowerUsage / GetEnforcedPowerLimit
//
// GPM rates need two samples: a device's first reading has no GPM counters
// (the profiler's warm-up samples take care of that).
func (s *Source) read(g *gpu, pids []int) (profiler.Reading, error) {
	r := profiler.Reading{Device: g.uuid}
	set := func(c elastico.Counter, v float64) {
		if !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 {
			r.Counters.Set(c, v)
		}
	}
	if g.gpm {
		vals, err := s.gpmRead(g)
		if err != nil {
			return r, err
		}
		pct := func(c elastico.Counter, id gonvml.GpmMetricId) {
			if v, ok := vals[id]; ok {
				set(c, v/100)
			}
		}
		pct(elastico.GrEngineActive, gonvml.GPM_METRIC_GRAPHICS_UTIL)
		pct(elastico.SMActive, gonvml.GPM_METRIC_SM_UTIL)
		pct(elastico.SMOccupancy, gonvml.GPM_METRIC_SM_OCCUPANCY)
		pct(elastico.TensorActive, gonvml.GPM_METRIC_ANY_TENSOR_UTIL)
		pct(elastico.DRAMActive, gonvml.GPM_METRIC_DRAM_BW_UTIL)
		fp32, ok32 := vals[gonvml.GPM_METRIC_FP32_UTIL]
		fp16, ok16 := vals[gonvml.GPM_METRIC_FP16_UTIL]
		if ok32 || ok16 {
			set(elastico.FPActive, math.Max(fp32, fp16)/100)
		}
		const mib = 1 << 20
		tx, okt := vals[gonvml.GPM_METRIC_PCIE_TX_PER_SEC]
		rx, okr := vals[gonvml.GPM_METRIC_PCIE_RX_PER_SEC]
		if okt && okr && g.pciePeak > 0 {
			set(elastico.PCIeFrac, (tx+rx)*mib/(2*g.pciePeak))
		}
		tx, okt = vals[gonvml.GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC]
		rx, okr = vals[gonvml.GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC]
		if okt && okr && s.nvlink > 0 {
			set(elastico.NVLinkFrac, (tx+rx)*mib/(2*s.nvlink))
		}
	}

	if !r.Counters.Has(elastico.GrEngineActive) || !r.Counters.Has(elastico.DRAMActive) {
		u, ret := g.dev.GetUtilizationRates()
		ok, err := check(g, "GetUtilizationRates", ret)
		if err != nil {
			return r, err
		}
		if ok {
			if !r.Counters.Has(elastico.GrEngineActive) {
				set(elastico.GrEngineActive, float64(u.Gpu)/100)
			}
			if !r.Counters.Has(elastico.DRAMActive) {
				set(elastico.DRAMActive, float64(u.Memory)/100)
			}
		}
	}
	if !r.Counters.Has(elastico.SMActive) && len(pids) > 0 {
		samples, ret := g.dev.GetProcessUtilization(g.lastSeen)
		ok, err := check(g, "GetProcessUtilization", ret)
		if err != nil {
			return r, err
		}
		if ok {
			if sm, found := jobSMUtil(samples, pids, &g.lastSeen); found {
				set(elastico.SMActive, math.Min(sm, 100)/100)
			}
		}
	}
	if !r.Counters.Has(elastico.PCIeFrac) && g.pciePeak > 0 {
		tx, ret1 := g.dev.GetPcieThroughput(gonvml.PCIE_UTIL_TX_BYTES)
		ok1, err := check(g, "GetPcieThroughput", ret1)
		if err != nil {
			return r, err
		}
		rx, ret2 := g.dev.GetPcieThroughput(gonvml.PCIE_UTIL_RX_BYTES)
		ok2, err := check(g, "GetPcieThroughput", ret2)
		if err != nil {
			return r, err
		}
		if ok1 && ok2 {
			set(elastico.PCIeFrac, float64(tx+rx)*1024/(2*g.pciePeak)) // KiB/s
		}
	}

	mem, ret := g.dev.GetMemoryInfo()
	okMem, err := check(g, "GetMemoryInfo", ret)
	if err != nil {
		return r, err
	}
	if okMem {
		used := float64(mem.Used)
		procs, ret := g.dev.GetComputeRunningProcesses()
		ok, err := check(g, "GetComputeRunningProcesses", ret)
		if err != nil {
			return r, err
		}
		if ok {
			if b, found := jobMemory(procs, pids); found {
				used = float64(b)
			}
		}
		r.MemoryUsed, r.HasMemory = used/(1<<30), true
		if mem.Total > 0 {
			set(elastico.FBUsedFrac, used/float64(mem.Total))
		}
	}

	p, ret := g.dev.GetPowerUsage()
	okP, err := check(g, "GetPowerUsage", ret)
	if err != nil || !okP {
		return r, err
	}
	limit, ret := g.dev.GetEnforcedPowerLimit()
	okL, err := check(g, "GetEnforcedPowerLimit", ret)
	if err != nil {
		return r, err
	}
	if okL && limit > 0 {
		set(elastico.PowerFrac, float64(p)/float64(limit))
	}
	return r, nil
}

// gpmRead takes a GPM sample and, if there is a previous one, returns the
// metrics over the time between them (percent, or MiB/s).
func (s *Source) gpmRead(g *gpu) (map[gonvml.GpmMetricId]float64, error) {
	cur := g.samples[g.cur]
	ok, err := check(g, "GpmSampleGet", g.dev.GpmSampleGet(cur))
	if err != nil || !ok {
		g.havePrev = false
		return nil, err
	}
	prev := g.havePrev
	g.havePrev, g.cur = true, 1-g.cur
	if !prev {
		return nil, nil
	}
	m := &s.metrics
	*m = gonvml.GpmMetricsGetType{NumMetrics: uint32(len(gpmIDs)), Sample1: g.samples[g.cur], Sample2: cur}
	for k, id := range gpmIDs {
		m.Metrics[k].MetricId = uint32(id)
	}
	ok, err = check(g, "GpmMetricsGet", s.lib.GpmMetricsGet(m))
	if err != nil || !ok {
		return nil, err
	}
	vals := make(map[gonvml.GpmMetricId]float64, len(gpmIDs))
	for k := range gpmIDs {
		mt := &m.Metrics[k]
		// A metric the device cannot measure returns its own error
		// (ERROR_NOT_SUPPORTED): no data for that counter.
		if gonvml.Return(mt.NvmlReturn) == gonvml.SUCCESS {
			vals[gonvml.GpmMetricId(mt.MetricId)] = mt.Value
		}
	}
	return vals, nil
}

// jobSMUtil sums the latest SM utilization (percent) of each of the job's
// processes among samples, and moves lastSeen past them.
func jobSMUtil(samples []gonvml.ProcessUtilizationSample, pids []int, lastSeen *uint64) (float64, bool) {
	latest := make(map[uint32]gonvml.ProcessUtilizationSample)
	for _, smp := range samples {
		*lastSeen = max(*lastSeen, smp.TimeStamp)
		if !slices.Contains(pids, int(smp.Pid)) {
			continue
		}
		if old, ok := latest[smp.Pid]; !ok || smp.TimeStamp > old.TimeStamp {
			latest[smp.Pid] = smp
		}
	}
	sum := 0.0
	for _, smp := range latest {
		sum += float64(smp.SmUtil)
	}
	return sum, len(latest) > 0
}

// jobMemory sums the GPU memory of the job's processes, in bytes.
func jobMemory(procs []gonvml.ProcessInfo, pids []int) (uint64, bool) {
	var b uint64
	found := false
	for _, p := range procs {
		if slices.Contains(pids, int(p.Pid)) {
			b += p.UsedGpuMemory
			found = true
		}
	}
	return b, found
}
