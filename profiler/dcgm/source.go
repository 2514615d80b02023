package dcgm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/profiler"
)

// Selector picks one device from a scrape.
type Selector struct {
	// GPU is the exporter's GPU index ("0") or the GPU's UUID
	// ("GPU-3431…"); empty matches any GPU (select by pod instead).
	GPU string
	// Instance is a MIG GPU instance ID (the GPU_I_ID label); empty selects
	// the whole GPU.
	Instance string
	// Namespace, Pod and Container select the device the exporter attributed
	// to a Kubernetes pod (--kubernetes); empty matches any.
	Namespace, Pod, Container string
}

// ParseSelector reads the command-line form of a selector:
//
//	0                  GPU 0 (or a UUID: GPU-3431…)
//	0/13               MIG instance 13 of GPU 0
//	pod:ns/name        the device of pod name in namespace ns
//	pod:ns/name/ctr    … of its container ctr
func ParseSelector(s string) (Selector, error) {
	if rest, ok := strings.CutPrefix(s, "pod:"); ok {
		parts := strings.Split(rest, "/")
		if len(parts) < 2 || len(parts) > 3 || parts[0] == "" || parts[1] == "" {
			return Selector{}, fmt.Errorf("dcgm: selector %q: want pod:namespace/name[/container]", s)
		}
		sel := Selector{Namespace: parts[0], Pod: parts[1]}
		if len(parts) == 3 {
			sel.Container = parts[2]
		}
		return sel, nil
	}
	gpu, inst, _ := strings.Cut(s, "/")
	if gpu == "" || strings.Contains(inst, "/") {
		return Selector{}, fmt.Errorf("dcgm: selector %q: want a GPU index or UUID, optionally /MIG-instance-ID", s)
	}
	return Selector{GPU: gpu, Instance: inst}, nil
}

func (sel Selector) String() string {
	var b strings.Builder
	if sel.GPU != "" {
		b.WriteString("GPU " + sel.GPU)
	} else {
		b.WriteString("any GPU")
	}
	if sel.Instance != "" {
		b.WriteString(" MIG instance " + sel.Instance)
	}
	if sel.Pod != "" {
		fmt.Fprintf(&b, " of pod %s/%s", sel.Namespace, sel.Pod)
		if sel.Container != "" {
			b.WriteString(" container " + sel.Container)
		}
	}
	return b.String()
}

func (sel Selector) matches(d *Device) bool {
	if sel.GPU != "" && sel.GPU != d.GPU && !strings.EqualFold(sel.GPU, d.UUID) {
		return false
	}
	if sel.Instance != d.Instance {
		return false
	}
	if sel.Pod == "" && sel.Namespace == "" && sel.Container == "" {
		return true
	}
	return slices.ContainsFunc(d.Pods, func(p Pod) bool {
		return (sel.Namespace == "" || sel.Namespace == p.Namespace) &&
			(sel.Pod == "" || sel.Pod == p.Name) &&
			(sel.Container == "" || sel.Container == p.Container)
	})
}

// Config configures a Source.
type Config struct {
	// URL is the exporter's metrics page, e.g. http://localhost:9400/metrics.
	URL string
	// Devices are the devices the profiled job runs on, one per replica.
	Devices []Selector
	// Client makes the requests; nil: a client of its own.
	Client *http.Client
	// Timeout bounds one scrape (default 2 s).
	Timeout time.Duration

	// What the exporter may not export, used only when it does not:
	// GPUModel and Driver for the hardware signature (old exporters have no
	// modelName label, and the driver is a label only when the collectors
	// file asks for DCGM_FI_DRIVER_VERSION); the PCIe link's generation and
	// width (DCGM_FI_DEV_PCIE_MAX_LINK_GEN/WIDTH); PowerLimit in W
	// (DCGM_FI_DEV_ENFORCED_POWER_LIMIT). NVLinkBandwidth, in bytes/s per
	// direction over all links, is never exported: without it the NVLink
	// counter is absent.
	GPUModel        string
	Driver          string
	PCIeGen         int
	PCIeWidth       int
	PowerLimit      float64
	NVLinkBandwidth float64
}

// DefaultTimeout bounds a scrape when Config.Timeout is zero.
const DefaultTimeout = 2 * time.Second

// Source reads a dcgm-exporter endpoint; it implements profiler.Source.
type Source struct {
	cfg    Config
	client *http.Client

	mu    sync.Mutex
	bound []string // the device key each selector resolved to
}

var _ profiler.Source = (*Source)(nil)

// New checks cfg and returns a Source. It does not contact the endpoint.
func New(cfg Config) (*Source, error) {
	if cfg.URL == "" {
		return nil, errors.New("dcgm: Config.URL is empty")
	}
	if len(cfg.Devices) == 0 {
		return nil, errors.New("dcgm: Config.Devices is empty: select the GPU(s) the job runs on")
	}
	if cfg.Timeout < 0 {
		return nil, fmt.Errorf("dcgm: Config.Timeout is negative (%v)", cfg.Timeout)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"PowerLimit", cfg.PowerLimit}, {"NVLinkBandwidth", cfg.NVLinkBandwidth}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v < 0 {
			return nil, fmt.Errorf("dcgm: Config.%s is %g, want a finite non-negative number", f.name, f.v)
		}
	}
	if cfg.PCIeGen != 0 || cfg.PCIeWidth != 0 {
		if _, err := profiler.PCIeBandwidth(cfg.PCIeGen, cfg.PCIeWidth); err != nil {
			return nil, fmt.Errorf("dcgm: Config.PCIeGen/PCIeWidth: %w", err)
		}
	}
	client := cfg.Client
	if client == nil {
		client = &http.Client{}
	}
	return &Source{cfg: cfg, client: client}, nil
}

// maxPage bounds a metrics page: an exporter's is tens of kilobytes.
const maxPage = 64 << 20

// Scrape fetches and parses the metrics page once.
func (s *Source) Scrape(ctx context.Context) (*Scrape, error) {
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.cfg.URL, nil)
	if err != nil {
		return nil, fmt.Errorf("dcgm: %w", err)
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("dcgm: scrape %s: %w", s.cfg.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("dcgm: scrape %s: %s: %q", s.cfg.URL, resp.Status, strings.TrimSpace(string(body)))
	}
	sc, err := Parse(io.LimitReader(resp.Body, maxPage), s.cfg.URL)
	if err != nil {
		if ctx.Err() != nil {
			return nil, fmt.Errorf("dcgm: scrape %s: %w (%v)", s.cfg.URL, ctx.Err(), err)
		}
		return nil, err
	}
	return sc, nil
}

// devices returns the scrape's devices for the selectors, in their order.
// The first successful call binds each selector to the device it matched; a
// bound device missing later is gone.
func (s *Source) devices(sc *Scrape) ([]*Device, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Device, len(s.cfg.Devices))
	if s.bound != nil {
		for i, key := range s.bound {
			k := slices.IndexFunc(sc.Devices, func(d *Device) bool { return d.Key() == key })
			if k < 0 {
				return nil, fmt.Errorf("dcgm: %s: %s is no longer in the scrape: %w", s.cfg.URL, key, profiler.ErrDeviceGone)
			}
			out[i] = sc.Devices[k]
		}
		return out, nil
	}
	keys := make([]string, len(s.cfg.Devices))
	for i, sel := range s.cfg.Devices {
		var found []*Device
		for _, d := range sc.Devices {
			if sel.matches(d) {
				found = append(found, d)
			}
		}
		switch len(found) {
		case 0:
			err := fmt.Errorf("dcgm: %s: no device matches %v (the scrape has %s)", s.cfg.URL, sel, listDevices(sc))
			if sel.Pod != "" || sel.Namespace != "" || sel.Container != "" {
				// The exporter labels a pod's GPU only once the pod runs.
				err = fmt.Errorf("%w: %w", err, profiler.ErrNotVisible)
			}
			return nil, err
		case 1:
		default:
			return nil, fmt.Errorf("dcgm: %s: %v matches %d devices (%s); select one", s.cfg.URL, sel, len(found), listDevices(&Scrape{Devices: found}))
		}
		keys[i] = found[0].Key()
		if j := slices.Index(keys[:i], keys[i]); j >= 0 {
			return nil, fmt.Errorf("dcgm: Config.Devices[%d] and [%d] both select %s", j, i, keys[i])
		}
		out[i] = found[0]
	}
	s.bound = keys
	return out, nil
}

func listDevices(sc *Scrape) string {
	if len(sc.Devices) == 0 {
		return "no GPU metrics"
	}
	ks := make([]string, len(sc.Devices))
	for i, d := range sc.Devices {
		ks[i] = "gpu " + d.GPU + " " + d.Key()
	}
	return strings.Join(ks, ", ")
}

// Hardware scrapes once and returns the selected devices' signature: the
// GPU model (with " MIG <profile>" for a MIG instance, as NVML names MIG
// devices), the driver, and whether the devices are MIG instances.
func (s *Source) Hardware(ctx context.Context) (elastico.Hardware, error) {
	sc, err := s.Scrape(ctx)
	if err != nil {
		return elastico.Hardware{}, err
	}
	devs, err := s.devices(sc)
	if err != nil {
		return elastico.Hardware{}, err
	}
	var hw elastico.Hardware
	for i, d := range devs {
		h := elastico.Hardware{GPUModel: first(d.Model, s.cfg.GPUModel), Driver: first(d.Driver, s.cfg.Driver), MIG: d.Instance != ""}
		if h.GPUModel == "" {
			return elastico.Hardware{}, fmt.Errorf("dcgm: %s: %s has no modelName label (an older exporter); set Config.GPUModel", s.cfg.URL, d.Key())
		}
		if h.MIG {
			if d.Profile == "" {
				return elastico.Hardware{}, fmt.Errorf("dcgm: %s: %s has no GPU_I_PROFILE label", s.cfg.URL, d.Key())
			}
			h.GPUModel += " MIG " + d.Profile
		}
		if i > 0 && h != hw {
			return elastico.Hardware{}, fmt.Errorf("dcgm: %s: the selected devices differ: %+v and %+v", s.cfg.URL, hw, h)
		}
		hw = h
	}
	return hw, nil
}

// Sample scrapes once and appends one reading per selected device. pids are
// not used: DCGM's fields are per device, and the job runs alone on it.
func (s *Source) Sample(ctx context.Context, pids []int, dst []profiler.Reading) ([]profiler.Reading, error) {
	sc, err := s.Scrape(ctx)
	if err != nil {
		return dst, err
	}
	devs, err := s.devices(sc)
	if err != nil {
		return dst, err
	}
	for _, d := range devs {
		dst = append(dst, s.Reading(d))
	}
	return dst, nil
}

// Reading turns a device's fields into the profiler's counters
// (the ten counters of iac's 36-feature vector):
//
//	gr_engine_active  1001, else 203 (GPU utilization, percent)
//	sm_active         1002
//	sm_occupancy      1003
//	tensor_active     1004
//	fp_active         max(1007, 1008)
//	dram_active       1005, else 204 (memory copy utilization, percent)
//	fb_used_frac      252 / 250, else 252 / (252 + 251 + 253)
//	pcie_frac         (1009 + 1010) / both directions of the link's peak
//	nvlink_frac       (1011 + 1012) / both directions of Config.NVLinkBandwidth
//	power_frac        155 / 164, else 155 / 160, else 155 / Config.PowerLimit
//
// A counter whose fields are absent or blank is absent. GPU memory in use is
// 252 (MiB).
func (s *Source) Reading(d *Device) profiler.Reading {
	f := func(id FieldID) (float64, bool) { v, ok := d.Fields[id]; return v, ok }
	r := profiler.Reading{Device: d.Key()}
	set := func(c elastico.Counter, v float64) {
		if !math.IsNaN(v) && !math.IsInf(v, 0) && v >= 0 {
			r.Counters.Set(c, v)
		}
	}
	ratioOrPercent := func(c elastico.Counter, ratio, percent FieldID) {
		if v, ok := f(ratio); ok {
			set(c, v)
		} else if v, ok := f(percent); ok {
			set(c, v/100)
		}
	}
	ratioOrPercent(elastico.GrEngineActive, ProfGrEngineActive, DevGPUUtil)
	ratioOrPercent(elastico.DRAMActive, ProfDRAMActive, DevMemCopyUtil)
	for _, cf := range [...]struct {
		c  elastico.Counter
		id FieldID
	}{{elastico.SMActive, ProfSMActive}, {elastico.SMOccupancy, ProfSMOccupancy}, {elastico.TensorActive, ProfPipeTensorActive}} {
		if v, ok := f(cf.id); ok {
			set(cf.c, v)
		}
	}
	fp32, ok32 := f(ProfPipeFP32Active)
	fp16, ok16 := f(ProfPipeFP16Active)
	switch {
	case ok32 && ok16:
		set(elastico.FPActive, math.Max(fp32, fp16))
	case ok32:
		set(elastico.FPActive, fp32)
	case ok16:
		set(elastico.FPActive, fp16)
	}
	if used, ok := f(DevFBUsed); ok {
		r.MemoryUsed, r.HasMemory = used/1024, true
		total, ok := f(DevFBTotal)
		if !ok {
			if free, okf := f(DevFBFree); okf {
				reserved, _ := f(DevFBReserved)
				total, ok = used+free+reserved, true
			}
		}
		if ok && total > 0 {
			set(elastico.FBUsedFrac, used/total)
		}
	}
	if peak := s.pciePeak(d); peak > 0 {
		tx, okt := f(ProfPCIeTxBytes)
		rx, okr := f(ProfPCIeRxBytes)
		if okt && okr {
			set(elastico.PCIeFrac, (tx+rx)/(2*peak))
		}
	}
	if bw := s.cfg.NVLinkBandwidth; bw > 0 {
		tx, okt := f(ProfNVLinkTxBytes)
		rx, okr := f(ProfNVLinkRxBytes)
		if okt && okr {
			set(elastico.NVLinkFrac, (tx+rx)/(2*bw))
		}
	}
	if p, ok := f(DevPowerUsage); ok {
		limit := s.cfg.PowerLimit
		if v, ok := f(DevEnforcedPowerLimit); ok && v > 0 {
			limit = v
		} else if v, ok := f(DevPowerMgmtLimit); ok && v > 0 {
			limit = v
		}
		if limit > 0 {
			set(elastico.PowerFrac, p/limit)
		}
	}
	return r
}

// pciePeak is one direction of the device's PCIe link in bytes/s: the
// link's maximum generation and width if exported, else the current ones,
// else the configured ones; 0 when none is known.
func (s *Source) pciePeak(d *Device) float64 {
	for _, gw := range [][2]FieldID{{DevPCIeMaxLinkGen, DevPCIeMaxLinkWidth}, {DevPCIeLinkGen, DevPCIeLinkWidth}} {
		g, okg := d.Fields[gw[0]]
		w, okw := d.Fields[gw[1]]
		if okg && okw {
			if bw, err := profiler.PCIeBandwidth(int(g), int(w)); err == nil {
				return bw
			}
		}
	}
	if s.cfg.PCIeGen != 0 {
		bw, _ := profiler.PCIeBandwidth(s.cfg.PCIeGen, s.cfg.PCIeWidth)
		return bw
	}
	return 0
}
