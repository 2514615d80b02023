package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/profiler"
)

// exporter serves the real A100 capture as a dcgm-exporter would.
func exporter(t *testing.T) string {
	page, err := os.ReadFile(filepath.Join("..", "..", "profiler", "dcgm", "testdata", "dcgm-exporter-sample.txt"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(page) }))
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

// job is a shell loop that trains nothing but reports like a training job:
// an iteration of 64 samples every 10 ms, checking its environment first.
const job = `test "$ELASTICO_BATCH_SIZE" = 64 && test "$ELASTICO_AMP" = 1 && test "$CUDA_VISIBLE_DEVICES" = 0 || { echo "bad environment" >&2; exit 2; }
i=0
while true; do
  i=$((i+1))
  echo "elastico-progress iter=$i work=$((i*64))"
  sleep 0.01
done`

func TestRun(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("host usage is measured from /proc")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh")
	}
	store := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{
		"-source", "dcgm", "-dcgm-url", exporter(t), "-gpu", "0",
		"-gpu-model", "NVIDIA A100-SXM4-40GB", "-pcie-gen", "4", "-pcie-width", "16", "-power-limit", "400",
		"-store", store, "-family", "resnet50", "-config-id", "bs64-amp", "-batch", "64", "-amp",
		"-warmup-iters", "5", "-window", "1s", "-interval", "100ms",
		"--", "sh", "-c", job,
	}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
	}
	fam, ps, err := profiler.Decode(&stdout, "stdout")
	if err != nil || fam != "resnet50" || len(ps) != 1 {
		t.Fatalf("stdout holds %q, %d profiles, %v", fam, len(ps), err)
	}
	p := ps[0]
	// 64 samples per 10 ms at most; sh and sleep make it slower.
	if p.Throughput <= 0 || p.Throughput > 6400 {
		t.Errorf("throughput %g, want in (0, 6400]", p.Throughput)
	}
	if got, ok := p.Counters.Get(elastico.TensorActive); !ok || got != 0.92926 {
		t.Errorf("tensor_active = %v, %v; want the capture's 0.92926", got, ok)
	}
	if p.Demand.SM != 0.99563 || p.Hardware.GPUModel != "NVIDIA A100-SXM4-40GB" {
		t.Errorf("profile %+v", p)
	}
	st, _ := profiler.OpenStore(store)
	stored, ok, err := st.Get("resnet50", "bs64-amp", p.Hardware)
	if err != nil || !ok || stored.Throughput != p.Throughput {
		t.Errorf("store holds %+v, %v, %v", stored, ok, err)
	}
	t.Logf("profile:\n%s", stderr.String())
}

func TestRunErrors(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantText string
	}{
		{"no command", []string{"-family", "f", "-config-id", "c"}, "no command to profile"},
		{"no family", []string{"-config-id", "c", "--", "true"}, "-family is required"},
		{"no config", []string{"-family", "f", "--", "true"}, "-config-id is required"},
		{"bad class", []string{"-family", "f", "-config-id", "c", "-class", "serving", "--", "true"}, `-class "serving"`},
		{"bad source", []string{"-family", "f", "-config-id", "c", "-source", "smi", "--", "true"}, `-source "smi"`},
		{"GPU count mismatch", []string{"-family", "f", "-config-id", "c", "-gpu", "0,1", "-gpus", "1", "--", "true"}, "one device per replica"},
		{"MIG without visible devices", []string{"-family", "f", "-config-id", "c", "-gpu", "0/13", "--", "true"}, "set -visible-devices"},
		{"bad selector", []string{"-family", "f", "-config-id", "c", "-gpu", "pod:x", "-visible-devices", "0", "--", "true"}, "want pod:namespace/name"},
		{"empty store name", []string{"-family", "f", "-config-id", "c", "-store", "", "--", "true"}, "store: directory name is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			err := run(context.Background(), tt.args, &out, &errOut)
			if err == nil || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("run error = %v, want %q", err, tt.wantText)
			}
		})
	}
}

func TestRunDeadExporter(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{
		"-family", "f", "-config-id", "c", "-dcgm-url", "http://127.0.0.1:1/metrics", "-store", t.TempDir(), "--", "true",
	}, &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), `job "f/c": reading the hardware signature: dcgm: scrape http://127.0.0.1:1/metrics`) {
		t.Errorf("run error = %v", err)
	}
}
