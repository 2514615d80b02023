package dcgm

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/profiler"
)

// serve serves page() on /metrics; page is called once per request.
func serve(t *testing.T, page func(n int) (status int, body string)) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		status, body := page(int(n.Add(1)))
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.WriteHeader(status)
		w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// captureConfig is what the capture lacks, from its NOTICE.md.
func captureConfig(url string, sel ...Selector) Config {
	return Config{
		URL: url, Devices: sel,
		GPUModel: "NVIDIA A100-SXM4-40GB", PCIeGen: 4, PCIeWidth: 16, PowerLimit: 400,
	}
}

func counterSet(vals map[elastico.Counter]float64) elastico.Counters {
	var cs elastico.Counters
	for c, v := range vals {
		cs.Set(c, v)
	}
	return cs
}

func TestSourceCapture(t *testing.T) {
	capture := string(readCapture(t))
	srv, _ := serve(t, func(int) (int, string) { return 200, capture })
	pcie, _ := profiler.PCIeBandwidth(4, 16)
	tests := []struct {
		name    string
		sel     Selector
		cfg     func(*Config)
		wantHW  elastico.Hardware
		wantRdg profiler.Reading
	}{
		{
			name:   "whole GPU by index",
			sel:    Selector{GPU: "0"},
			wantHW: elastico.Hardware{GPUModel: "NVIDIA A100-SXM4-40GB"},
			wantRdg: profiler.Reading{
				Device: captureUUID,
				Counters: counterSet(map[elastico.Counter]float64{
					elastico.GrEngineActive: 0.995630, elastico.TensorActive: 0.929260, elastico.DRAMActive: 0.690789,
					elastico.FBUsedFrac: 4845.0 / (4845 + 35690), elastico.PCIeFrac: (33011804 + 97863601) / (2 * pcie),
					elastico.PowerFrac: 409.692 / 400,
				}),
				MemoryUsed: 4845.0 / 1024, HasMemory: true,
			},
		},
		{
			name: "whole GPU by UUID, nothing configured: no PCIe, power or NVLink fraction",
			sel:  Selector{GPU: strings.ToLower(captureUUID)},
			cfg: func(c *Config) {
				c.PCIeGen, c.PCIeWidth, c.PowerLimit, c.NVLinkBandwidth = 0, 0, 0, 0
				c.Driver = "470.57.02"
			},
			wantHW: elastico.Hardware{GPUModel: "NVIDIA A100-SXM4-40GB", Driver: "470.57.02"},
			wantRdg: profiler.Reading{
				Device: captureUUID,
				Counters: counterSet(map[elastico.Counter]float64{
					elastico.GrEngineActive: 0.995630, elastico.TensorActive: 0.929260, elastico.DRAMActive: 0.690789,
					elastico.FBUsedFrac: 4845.0 / (4845 + 35690),
				}),
				MemoryUsed: 4845.0 / 1024, HasMemory: true,
			},
		},
		{
			name:   "MIG instance",
			sel:    Selector{GPU: "0", Instance: "13"},
			wantHW: elastico.Hardware{GPUModel: "NVIDIA A100-SXM4-40GB MIG 1g.5gb", MIG: true},
			wantRdg: profiler.Reading{
				Device: captureUUID + " MIG instance 13",
				Counters: counterSet(map[elastico.Counter]float64{
					elastico.GrEngineActive: 0.995687, elastico.TensorActive: 0.930433, elastico.DRAMActive: 0.800339,
				}),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := captureConfig(srv.URL+"/metrics", tt.sel)
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			s, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			hw, err := s.Hardware(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantHW, hw); diff != "" {
				t.Errorf("Hardware (-want +got):\n%s", diff)
			}
			rs, err := s.Sample(context.Background(), []int{1}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]profiler.Reading{tt.wantRdg}, rs, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("Sample (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSourceReading(t *testing.T) {
	pcie3, _ := profiler.PCIeBandwidth(3, 16)
	pcie5, _ := profiler.PCIeBandwidth(5, 16)
	tests := []struct {
		name   string
		fields map[FieldID]float64
		cfg    Config
		want   profiler.Reading
	}{
		{
			name: "every profiling field, link and limit exported",
			fields: map[FieldID]float64{
				ProfGrEngineActive: 0.9, ProfSMActive: 0.8, ProfSMOccupancy: 0.35, ProfPipeTensorActive: 0.5,
				ProfPipeFP32Active: 0.1, ProfPipeFP16Active: 0.3, ProfDRAMActive: 0.6,
				DevFBUsed: 20480, DevFBTotal: 81920, DevFBFree: 61000,
				ProfPCIeTxBytes: 1e9, ProfPCIeRxBytes: 3e9, DevPCIeMaxLinkGen: 5, DevPCIeMaxLinkWidth: 16,
				DevPCIeLinkGen: 1, DevPCIeLinkWidth: 16, // an idle link trains down: the maximum is the peak
				ProfNVLinkTxBytes: 100e9, ProfNVLinkRxBytes: 200e9,
				DevPowerUsage: 350, DevEnforcedPowerLimit: 700, DevPowerMgmtLimit: 500,
				DevGPUUtil: 12, DevMemCopyUtil: 3, // ignored: the profiling fields win
			},
			cfg: Config{NVLinkBandwidth: 450e9, PowerLimit: 1000, PCIeGen: 3, PCIeWidth: 16},
			want: profiler.Reading{
				Counters: counterSet(map[elastico.Counter]float64{
					elastico.GrEngineActive: 0.9, elastico.SMActive: 0.8, elastico.SMOccupancy: 0.35, elastico.TensorActive: 0.5,
					elastico.FPActive: 0.3, elastico.DRAMActive: 0.6, elastico.FBUsedFrac: 0.25,
					elastico.PCIeFrac: 4e9 / (2 * pcie5), elastico.NVLinkFrac: 300e9 / 900e9, elastico.PowerFrac: 0.5,
				}),
				MemoryUsed: 20, HasMemory: true,
			},
		},
		{
			name: "no profiling module: utilization percentages, current link, management limit",
			fields: map[FieldID]float64{
				DevGPUUtil: 87, DevMemCopyUtil: 41, DevFBUsed: 1024, DevFBFree: 2048, DevFBReserved: 1024,
				ProfPCIeTxBytes: 1e9, ProfPCIeRxBytes: 1e9, DevPCIeLinkGen: 3, DevPCIeLinkWidth: 16,
				DevPowerUsage: 100, DevPowerMgmtLimit: 250, ProfPipeFP32Active: 0.2,
			},
			want: profiler.Reading{
				Counters: counterSet(map[elastico.Counter]float64{
					elastico.GrEngineActive: 0.87, elastico.DRAMActive: 0.41, elastico.FBUsedFrac: 0.25,
					elastico.PCIeFrac: 2e9 / (2 * pcie3), elastico.PowerFrac: 0.4, elastico.FPActive: 0.2,
				}),
				MemoryUsed: 1, HasMemory: true,
			},
		},
		{
			name:   "half a PCIe pair, no power limit, no memory",
			fields: map[FieldID]float64{ProfPCIeTxBytes: 1e9, DevPowerUsage: 100, ProfPipeFP16Active: 0.7},
			cfg:    Config{PCIeGen: 4, PCIeWidth: 16},
			want: profiler.Reading{
				Counters: counterSet(map[elastico.Counter]float64{elastico.FPActive: 0.7}),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Source{cfg: tt.cfg}
			got := s.Reading(&Device{GPU: "0", UUID: "GPU-x", Fields: tt.fields})
			tt.want.Device = "GPU-x"
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("Reading (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSourceBroken(t *testing.T) {
	capture := string(readCapture(t))
	// The capture without its whole-GPU block: GPU 0 is gone, its MIG
	// instance stays.
	migOnly := capture[strings.Index(capture, "\n\n")+2:]
	tests := []struct {
		name      string
		page      func(n int) (int, string)
		url       func(srv string) string
		sel       Selector
		cfg       func(*Config)
		okSamples int // samples that succeed before the failure
		wantIs    error
		wantText  string
	}{
		{
			name:     "dead endpoint",
			url:      func(string) string { return deadURL(t) },
			sel:      Selector{GPU: "0"},
			wantText: "connection refused",
		},
		{
			name: "timeout",
			page: func(int) (int, string) { time.Sleep(300 * time.Millisecond); return 200, capture },
			sel:  Selector{GPU: "0"}, cfg: func(c *Config) { c.Timeout = 50 * time.Millisecond },
			wantIs: context.DeadlineExceeded, wantText: "context deadline exceeded",
		},
		{
			name:     "HTTP error",
			page:     func(int) (int, string) { return 503, "DCGM host engine not running\n" },
			sel:      Selector{GPU: "0"},
			wantText: `503 Service Unavailable: "DCGM host engine not running"`,
		},
		{
			name:     "malformed text",
			page:     func(int) (int, string) { return 200, capture + "DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-1\" 12\n" },
			sel:      Selector{GPU: "0"},
			wantText: "line 33",
		},
		{
			name: "GPU disappears mid-window",
			page: func(n int) (int, string) {
				if n <= 4 { // Hardware and three samples
					return 200, capture
				}
				return 200, migOnly
			},
			sel: Selector{GPU: "0"}, okSamples: 3,
			wantIs: profiler.ErrDeviceGone, wantText: captureUUID + " is no longer in the scrape",
		},
		{
			name:     "no such GPU",
			page:     func(int) (int, string) { return 200, capture },
			sel:      Selector{GPU: "3"},
			wantText: "no device matches GPU 3 (the scrape has gpu 0 " + captureUUID + ", gpu 0 " + captureUUID + " MIG instance 13)",
		},
		{
			name:   "no such pod",
			page:   func(int) (int, string) { return 200, capture },
			sel:    Selector{Namespace: "ml", Pod: "resnet-0"},
			wantIs: profiler.ErrNotVisible, wantText: "no device matches any GPU of pod ml/resnet-0",
		},
		{
			name: "ambiguous selector",
			page: func(int) (int, string) {
				return 200, `DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-a",namespace="ml",pod="p"} 1
DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-b",namespace="ml",pod="p"} 1
`
			},
			sel:      Selector{Namespace: "ml", Pod: "p"},
			wantText: "matches 2 devices",
		},
		{
			name:     "no model anywhere",
			page:     func(int) (int, string) { return 200, capture },
			sel:      Selector{GPU: "0"},
			cfg:      func(c *Config) { c.GPUModel = "" },
			wantText: "has no modelName label (an older exporter); set Config.GPUModel",
		},
		{
			name:     "not the metrics path",
			page:     func(int) (int, string) { return 200, capture },
			url:      func(srv string) string { return srv + "/nometrics" },
			sel:      Selector{GPU: "0"},
			wantText: "404 Not Found",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := ""
			if tt.page != nil {
				srv, _ := serve(t, tt.page)
				url = srv.URL + "/metrics"
				if tt.url != nil {
					url = tt.url(srv.URL)
				}
			} else {
				url = tt.url("")
			}
			cfg := captureConfig(url, tt.sel)
			if tt.cfg != nil {
				tt.cfg(&cfg)
			}
			s, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Hardware(context.Background())
			for i := 0; err == nil && i <= tt.okSamples; i++ {
				_, err = s.Sample(context.Background(), nil, nil)
				if i < tt.okSamples && err != nil {
					t.Fatalf("sample %d failed early: %v", i, err)
				}
			}
			if err == nil || !strings.HasPrefix(err.Error(), "dcgm: ") || !strings.Contains(err.Error(), tt.wantText) {
				t.Fatalf("error = %v, want a dcgm error containing %q", err, tt.wantText)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %v does not wrap %v", err, tt.wantIs)
			}
		})
	}
}

// deadURL is the address of a server that has shut down.
func deadURL(t *testing.T) string {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL + "/metrics"
	srv.Close()
	return url
}

func TestNewAndSelectors(t *testing.T) {
	tests := []struct {
		name     string
		cfg      Config
		wantText string
	}{
		{"no URL", Config{Devices: []Selector{{GPU: "0"}}}, "URL is empty"},
		{"no devices", Config{URL: "http://x/metrics"}, "Devices is empty"},
		{"negative timeout", Config{URL: "http://x/metrics", Devices: []Selector{{GPU: "0"}}, Timeout: -1}, "Timeout is negative"},
		{"NaN power limit", Config{URL: "http://x/metrics", Devices: []Selector{{GPU: "0"}}, PowerLimit: math.NaN()}, "PowerLimit is NaN"},
		{"PCIe generation 9", Config{URL: "http://x/metrics", Devices: []Selector{{GPU: "0"}}, PCIeGen: 9, PCIeWidth: 16}, "PCIe generation 9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := New(tt.cfg); err == nil || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("New error = %v, want %q", err, tt.wantText)
			}
		})
	}

	sels := []struct {
		in      string
		want    Selector
		wantErr bool
	}{
		{in: "0", want: Selector{GPU: "0"}},
		{in: "GPU-3431/13", want: Selector{GPU: "GPU-3431", Instance: "13"}},
		{in: "pod:ml/resnet-0", want: Selector{Namespace: "ml", Pod: "resnet-0"}},
		{in: "pod:ml/resnet-0/trainer", want: Selector{Namespace: "ml", Pod: "resnet-0", Container: "trainer"}},
		{in: "", wantErr: true},
		{in: "0/1/2", wantErr: true},
		{in: "pod:resnet-0", wantErr: true},
		{in: "pod:/x", wantErr: true},
	}
	for _, tt := range sels {
		got, err := ParseSelector(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseSelector(%q) = %+v, %v; want %+v, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}

	// Two selectors for one device.
	srv, _ := serve(t, func(int) (int, string) { return 200, string(readCapture(t)) })
	s, _ := New(captureConfig(srv.URL+"/metrics", Selector{GPU: "0"}, Selector{GPU: captureUUID}))
	if _, err := s.Hardware(context.Background()); err == nil || !strings.Contains(err.Error(), "both select") {
		t.Errorf("two selectors of one device: %v", err)
	}
}
