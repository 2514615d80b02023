//go:build cgo && nvml_gpu

package nvml

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/elastico/elastico"
)

// TestRealGPU runs the checks of the mock tests against the node's NVML and
// its GPU 0 (go test -tags nvml_gpu ./profiler/nvml on a GPU node).
func TestRealGPU(t *testing.T) {
	src, err := Open(Config{Devices: []string{"0"}})
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	hw, err := src.Hardware(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if hw.GPUModel == "" || hw.Driver == "" {
		t.Errorf("Hardware = %+v, want a model and a driver", hw)
	}
	t.Logf("hardware %+v, GPM %v", hw, src.GPM(0))
	for i := 0; i < 3; i++ {
		rs, err := src.Sample(context.Background(), []int{os.Getpid()}, nil)
		if err != nil {
			t.Fatalf("sample %d: %v", i, err)
		}
		checkReadings(t, rs, 1)
		t.Logf("sample %d: %+v", i, rs[0])
		if i > 0 && src.GPM(0) && !rs[0].Counters.Has(elastico.SMActive) {
			t.Errorf("a GPM device gave no SM activity on sample %d", i)
		}
		time.Sleep(time.Second)
	}
}
