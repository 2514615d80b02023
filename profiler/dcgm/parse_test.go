package dcgm

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const captureUUID = "GPU-34319582-d595-d1c7-d1d2-179bcfa61660"

func readCapture(t testing.TB) []byte {
	t.Helper()
	b, err := os.ReadFile("testdata/dcgm-exporter-sample.txt")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseCapture(t *testing.T) {
	sc, err := Parse(strings.NewReader(string(readCapture(t))), "testdata/dcgm-exporter-sample.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := []*Device{
		{
			GPU: "0", UUID: captureUUID, Hostname: "ub20-a100-k8s",
			Fields: map[FieldID]float64{
				DevSMClock: 1215, DevMemClock: 1215, DevMemoryTemp: 69, DevGPUTemp: 61,
				DevPowerUsage: 409.692, DevTotalEnergy: 319159391, DevPCIeReplayCounter: 0, DevXIDErrors: 0,
				DevFBFree: 35690, DevFBUsed: 4845, DevNVLinkBandwidthTotal: 0, DevVGPULicenseStatus: 0,
				ProfGrEngineActive: 0.995630, ProfPipeTensorActive: 0.929260, ProfDRAMActive: 0.690789,
				ProfPCIeTxBytes: 33011804, ProfPCIeRxBytes: 97863601,
			},
		},
		{
			GPU: "0", UUID: captureUUID, Instance: "13", Profile: "1g.5gb", Hostname: "ub20-a100-k8s",
			Fields: map[FieldID]float64{
				DevXIDErrors: 0, ProfGrEngineActive: 0.995687, ProfPipeTensorActive: 0.930433, ProfDRAMActive: 0.800339,
			},
		},
	}
	if diff := cmp.Diff(want, sc.Devices); diff != "" {
		t.Errorf("devices (-want +got):\n%s", diff)
	}
	if got := sc.Devices[1].Key(); got != captureUUID+" MIG instance 13" {
		t.Errorf("MIG key %q", got)
	}
}

func TestParseVariants(t *testing.T) {
	tests := []struct {
		name string
		page string
		want []*Device
	}{
		{
			name: "current exporter: HELP/TYPE, modelName, pci_bus_id, driver label, Kubernetes labels",
			page: `# HELP DCGM_FI_PROF_SM_ACTIVE The ratio of cycles an SM has at least 1 warp assigned.
# TYPE DCGM_FI_PROF_SM_ACTIVE gauge
DCGM_FI_PROF_SM_ACTIVE{gpu="1",UUID="GPU-aa",pci_bus_id="00000000:07:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="node-7",DCGM_FI_DRIVER_VERSION="550.54.15",container="trainer",namespace="ml",pod="resnet-0"} 0.71
# HELP DCGM_FI_DEV_POWER_USAGE Power draw (in W).
# TYPE DCGM_FI_DEV_POWER_USAGE gauge
DCGM_FI_DEV_POWER_USAGE{gpu="1",UUID="GPU-aa",pci_bus_id="00000000:07:00.0",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="node-7",DCGM_FI_DRIVER_VERSION="550.54.15",container="trainer",namespace="ml",pod="resnet-0"} 512.5
# TYPE DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter
DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="1",UUID="GPU-aa",modelName="NVIDIA H100 80GB HBM3"} 1e9
`,
			want: []*Device{{
				GPU: "1", UUID: "GPU-aa", Model: "NVIDIA H100 80GB HBM3", Driver: "550.54.15", Hostname: "node-7",
				PCIBusID: "00000000:07:00.0", Pods: []Pod{{Namespace: "ml", Name: "resnet-0", Container: "trainer"}},
				Fields: map[FieldID]float64{DevPowerUsage: 512.5, DevTotalEnergy: 1e9, ProfSMActive: 0.71},
			}},
		},
		{
			name: "1.x names and lower-case labels, old Kubernetes labels",
			page: `dcgm_fb_used{gpu="0",uuid="GPU-bb",hostname="old-node",pod_name="bert-1",pod_namespace="nlp",container_name="main"} 7000
dcgm_gpu_utilization{gpu="0",uuid="GPU-bb",hostname="old-node"} 87
dcgm_fi_prof_sm_active{gpu="0",uuid="GPU-bb",hostname="old-node"} 0.8
dcgm_power_usage{gpu="0",uuid="GPU-bb",hostname="old-node"} 250
`,
			want: []*Device{{
				GPU: "0", UUID: "GPU-bb", Hostname: "old-node", Pods: []Pod{{Namespace: "nlp", Name: "bert-1", Container: "main"}},
				Fields: map[FieldID]float64{DevFBUsed: 7000, DevGPUUtil: 87, ProfSMActive: 0.8, DevPowerUsage: 250},
			}},
		},
		{
			name: "blank sentinels are missing",
			page: `DCGM_FI_DEV_MEMORY_TEMP{gpu="0",UUID="GPU-cc"} 9223372036854775794
DCGM_FI_DEV_GPU_TEMP{gpu="0",UUID="GPU-cc"} 2147483632
DCGM_FI_PROF_SM_ACTIVE{gpu="0",UUID="GPU-cc"} 140737488355330.000000
DCGM_FI_PROF_DRAM_ACTIVE{gpu="0",UUID="GPU-cc"} NaN
DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-cc"} 300
`,
			want: []*Device{{
				GPU: "0", UUID: "GPU-cc",
				Fields: map[FieldID]float64{DevPowerUsage: 300},
				Blank:  []FieldID{DevGPUTemp, DevMemoryTemp, ProfDRAMActive, ProfSMActive},
			}},
		},
		{
			name: "one device shared by two pods: one reading, both pods",
			page: `DCGM_FI_PROF_SM_ACTIVE{gpu="2",UUID="GPU-dd",namespace="a",pod="p1",container="c"} 0.4
DCGM_FI_PROF_SM_ACTIVE{gpu="2",UUID="GPU-dd",namespace="b",pod="p2",container="c"} 0.4
`,
			want: []*Device{{
				GPU: "2", UUID: "GPU-dd", Pods: []Pod{{Namespace: "a", Name: "p1", Container: "c"}, {Namespace: "b", Name: "p2", Container: "c"}},
				Fields: map[FieldID]float64{ProfSMActive: 0.4},
			}},
		},
		{
			name: "other metrics and other entities are ignored",
			page: `# TYPE go_goroutines gauge
go_goroutines 31
DCGM_FI_DEV_NVSWITCH_TEMPERATURE_CURRENT{nvswitch="0",Hostname="n"} 45
DCGM_FI_PROF_SM_ACTIVE{nvswitch="0",Hostname="n"} 0.1
DCGM_FI_DEV_SOMETHING_NEW{gpu="0",UUID="GPU-ee"} 1
# TYPE request_seconds histogram
request_seconds_bucket{le="1"} 3
request_seconds_sum 2
request_seconds_count 3
DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-ee"} 100
`,
			want: []*Device{{GPU: "0", UUID: "GPU-ee", Fields: map[FieldID]float64{DevFBUsed: 100}}},
		},
		{
			name: "an empty page",
			page: "",
			want: nil,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc, err := Parse(strings.NewReader(tt.page), "page")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, sc.Devices); diff != "" {
				t.Errorf("devices (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseMalformed(t *testing.T) {
	tests := []struct {
		name     string
		page     string
		wantText string
	}{
		{"unterminated label value", "DCGM_FI_DEV_FB_USED{gpu=\"0\",UUID=\"GPU-a} 1\n", "http://node:9400/metrics: line 1"},
		{"no value", "DCGM_FI_DEV_FB_USED{gpu=\"0\"}\n", "line 1"},
		{"a value that is no number", "DCGM_FI_DEV_FB_USED{gpu=\"0\"} 1\nDCGM_FI_DEV_FB_FREE{gpu=\"0\"} lots\n", "line 2"},
		{"HTML instead of metrics", "<html><body>502 Bad Gateway</body></html>\n", "line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse(strings.NewReader(tt.page), "http://node:9400/metrics")
			if err == nil || !strings.HasPrefix(err.Error(), "dcgm: ") || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("Parse error = %v, want one containing %q", err, tt.wantText)
			}
		})
	}
}

func TestFieldByName(t *testing.T) {
	tests := []struct {
		name   string
		wantID FieldID
		wantOK bool
	}{
		{"DCGM_FI_PROF_SM_ACTIVE", ProfSMActive, true},
		{"dcgm_fi_prof_sm_active", ProfSMActive, true},
		{"dcgm_fb_used", DevFBUsed, true},
		{"dcgm_gpu_utilization", DevGPUUtil, true},
		{"DCGM_FI_DEV_ENFORCED_POWER_LIMIT", DevEnforcedPowerLimit, true},
		{"DCGM_FI_UNHEARD_OF", 0, false},
		{"node_cpu_seconds_total", 0, false},
	}
	for _, tt := range tests {
		id, ok := FieldByName(tt.name)
		if id != tt.wantID || ok != tt.wantOK {
			t.Errorf("FieldByName(%q) = %d, %v; want %d, %v", tt.name, id, ok, tt.wantID, tt.wantOK)
		}
	}
}

func TestIsBlank(t *testing.T) {
	tests := []struct {
		v    float64
		want bool
	}{
		{0, false}, {0.99, false}, {409.692, false}, {319159391, false}, {97863601, false},
		{2147483631, false}, {2147483632, true}, {2147483647, true}, {2147483648, false},
		{140737488355328, true}, {140737488355343, true}, {140737488355344, false},
		{9223372036854775794, true},
	}
	for _, tt := range tests {
		if got := IsBlank(tt.v); got != tt.want {
			t.Errorf("IsBlank(%v) = %v, want %v", tt.v, got, tt.want)
		}
	}
}
