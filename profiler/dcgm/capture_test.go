package dcgm_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/profiler"
	"github.com/elastico/elastico/profiler/dcgm"
)

var update = flag.Bool("update", false, "rewrite testdata/capture-profile.golden.json")

// jumpClock moves time forward at once on Sleep.
type jumpClock struct{ now time.Time }

func (c *jumpClock) Now() time.Time { return c.now }
func (c *jumpClock) Sleep(ctx context.Context, d time.Duration) error {
	c.now = c.now.Add(max(d, 0))
	return ctx.Err()
}

// syntheticJob stands in for the job the capture was taken under, which it
// does not describe: 12 iterations per second of the request's batch, on 6
// host cores and 14.5 GiB of host memory. Only throughput and host demand
// come from it; everything about the GPU comes from the capture.
type syntheticJob struct {
	clock *jumpClock
	start time.Time
	batch int
}

func (j *syntheticJob) Progress() (profiler.Progress, error) {
	el := j.clock.Now().Sub(j.start).Seconds()
	it := int64(el * 12)
	return profiler.Progress{
		Iterations: it, Work: float64(it) * float64(j.batch),
		At:         j.start.Add(time.Duration(float64(it) / 12 * float64(time.Second))),
		CPUSeconds: 6 * el, RSS: 14.5, HasUsage: true, PIDs: []int{31337},
	}, nil
}

func (j *syntheticJob) Stop() error { return nil }

type syntheticLauncher struct{ clock *jumpClock }

func (l syntheticLauncher) Launch(ctx context.Context, req elastico.ProfileRequest) (profiler.Job, error) {
	return &syntheticJob{clock: l.clock, start: l.clock.Now(), batch: req.Config.BatchSize}, nil
}

// serveCapture serves the capture on every request; tb may be nil (in an
// example).
func serveCapture(tb testing.TB) (*httptest.Server, *int) {
	page, err := os.ReadFile(filepath.Join("testdata", "dcgm-exporter-sample.txt"))
	if err != nil {
		if tb == nil {
			log.Fatal(err)
		}
		tb.Fatal(err)
	}
	scrapes := new(int)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*scrapes++
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		w.Write(page)
	}))
	return srv, scrapes
}

// TestProfileFromCapture runs the whole TDOP pipeline against the real A100
// capture served by an exporter stand-in, every scrape returning it, and
// compares the profile with testdata/capture-profile.golden.json.
func TestProfileFromCapture(t *testing.T) {
	srv, scrapes := serveCapture(t)
	defer srv.Close()
	src, err := dcgm.New(dcgm.Config{
		URL:     srv.URL + "/metrics",
		Devices: []dcgm.Selector{{GPU: "0"}},
		// What the capture does not carry (see testdata/NOTICE.md).
		GPUModel: "NVIDIA A100-SXM4-40GB", PCIeGen: 4, PCIeWidth: 16, PowerLimit: 400,
	})
	if err != nil {
		t.Fatal(err)
	}
	clock := &jumpClock{now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	p, err := profiler.New(profiler.Config{Launcher: syntheticLauncher{clock}, Source: src, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	prof, err := p.Profile(context.Background(), elastico.ProfileRequest{
		Family: "resnet50", Class: elastico.Training, Params: 25.6e6,
		Config: elastico.Configuration{ID: "bs256-amp", BatchSize: 256, AMP: true, GPUs: 1},
	})
	if err != nil {
		t.Fatal(err)
	}
	// 1 hardware scrape, 9 warm-up seconds (100 iterations at 12/s), 60 in the window.
	if *scrapes != 1+9+60 {
		t.Errorf("%d scrapes, want 70", *scrapes)
	}
	var buf bytes.Buffer
	if err := profiler.Encode(&buf, prof.Family, []elastico.Profile{prof}); err != nil {
		t.Fatal(err)
	}
	t.Logf("profile from the capture:\n%s", buf.String())
	golden := filepath.Join("testdata", "capture-profile.golden.json")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), buf.String()); diff != "" {
		t.Errorf("profile changed (-golden +now); rerun with -update if on purpose:\n%s", diff)
	}
}

// A GPU reading from the real capture (testdata/dcgm-exporter-sample.txt),
// served as dcgm-exporter would.
func ExampleSource() {
	srv, _ := serveCapture(nil)
	defer srv.Close()
	src, err := dcgm.New(dcgm.Config{
		URL:      srv.URL + "/metrics",
		Devices:  []dcgm.Selector{{GPU: "0"}},
		GPUModel: "NVIDIA A100-SXM4-40GB", PCIeGen: 4, PCIeWidth: 16, PowerLimit: 400,
	})
	if err != nil {
		log.Fatal(err)
	}
	hw, err := src.Hardware(context.Background())
	if err != nil {
		log.Fatal(err)
	}
	rs, err := src.Sample(context.Background(), nil, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(hw.GPUModel, rs[0].Device)
	for c := elastico.Counter(0); c < elastico.NumCounters; c++ {
		if v, ok := rs[0].Counters.Get(c); ok {
			fmt.Printf("%-16s %.4f\n", c, v)
		} else {
			fmt.Printf("%-16s absent\n", c)
		}
	}
	fmt.Printf("memory used %.2f GiB\n", rs[0].MemoryUsed)
	// Output:
	// NVIDIA A100-SXM4-40GB GPU-34319582-d595-d1c7-d1d2-179bcfa61660
	// gr_engine_active 0.9956
	// sm_active        absent
	// sm_occupancy     absent
	// tensor_active    0.9293
	// fp_active        absent
	// dram_active      0.6908
	// fb_used_frac     0.1195
	// pcie_frac        0.0021
	// nvlink_frac      absent
	// power_frac       1.0242
	// memory used 4.73 GiB
}

func ExampleParseSelector() {
	for _, s := range []string{"0", "0/13", "pod:ml/resnet-0"} {
		sel, _ := dcgm.ParseSelector(s)
		fmt.Println(sel)
	}
	// Output:
	// GPU 0
	// GPU 0 MIG instance 13
	// any GPU of pod ml/resnet-0
}

// TestProfilePodAppearsLater selects the GPU by the pod the job runs in:
// the exporter labels it only once the pod runs, so the first scrapes have
// no such device.
func TestProfilePodAppearsLater(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("testdata", "dcgm-exporter-sample.txt"))
	if err != nil {
		t.Fatal(err)
	}
	cut := bytes.Index(page, []byte("\n\n"))
	labelled := append(bytes.ReplaceAll(page[:cut], []byte(`Hostname="ub20-a100-k8s"}`),
		[]byte(`Hostname="ub20-a100-k8s",namespace="ml",pod="resnet-0",container="trainer"}`)), page[cut:]...)
	scrapes := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scrapes++
		if scrapes <= 3 { // before the launch, and the job's first two seconds
			w.Write(page)
			return
		}
		w.Write(labelled)
	}))
	defer srv.Close()
	src, err := dcgm.New(dcgm.Config{
		URL: srv.URL + "/metrics", Devices: []dcgm.Selector{{Namespace: "ml", Pod: "resnet-0"}},
		GPUModel: "NVIDIA A100-SXM4-40GB",
	})
	if err != nil {
		t.Fatal(err)
	}
	clock := &jumpClock{now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)}
	p, err := profiler.New(profiler.Config{Launcher: syntheticLauncher{clock}, Source: src, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	prof, err := p.Profile(context.Background(), elastico.ProfileRequest{
		Family: "resnet50", Config: elastico.Configuration{ID: "bs256", BatchSize: 256},
	})
	if err != nil {
		t.Fatal(err)
	}
	if prof.Hardware.GPUModel != "NVIDIA A100-SXM4-40GB" || prof.Demand.SM != 0.99563 {
		t.Errorf("profile %+v", prof)
	}
}
