package profiler_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/profiler"
)

// jumpClock is a Clock for examples and tests: Sleep moves time forward at
// once, so a 60 s window takes microseconds.
type jumpClock struct{ now time.Time }

func (c *jumpClock) Now() time.Time { return c.now }
func (c *jumpClock) Sleep(ctx context.Context, d time.Duration) error {
	c.now = c.now.Add(max(d, 0))
	return ctx.Err()
}

// simJob trains at 25 iterations per second with the request's batch size,
// on 4 CPU cores and 7.5 GiB of host memory.
type simJob struct {
	clock *jumpClock
	start time.Time
	batch int
}

func (j *simJob) Progress() (profiler.Progress, error) {
	el := j.clock.Now().Sub(j.start).Seconds()
	it := int64(el * 25)
	return profiler.Progress{
		Iterations: it, Work: float64(it) * float64(j.batch), At: j.start.Add(time.Duration(float64(it) / 25 * float64(time.Second))),
		CPUSeconds: 4 * el, RSS: 7.5, HasUsage: true,
	}, nil
}

func (j *simJob) Stop() error { return nil }

type simLauncher struct{ clock *jumpClock }

func (l simLauncher) Launch(ctx context.Context, req elastico.ProfileRequest) (profiler.Job, error) {
	return &simJob{clock: l.clock, start: l.clock.Now(), batch: req.Config.BatchSize}, nil
}

// simSource reads one GPU whose SMs are 70 % active and which holds 12 GiB.
type simSource struct{}

func (simSource) Hardware(ctx context.Context) (elastico.Hardware, error) {
	return elastico.Hardware{GPUModel: "NVIDIA A100-SXM4-40GB", Driver: "550.54.15"}, nil
}

func (simSource) Sample(ctx context.Context, pids []int, dst []profiler.Reading) ([]profiler.Reading, error) {
	var r profiler.Reading
	r.Device = "GPU-0"
	r.Counters.Set(elastico.SMActive, 0.7)
	r.Counters.Set(elastico.DRAMActive, 0.4)
	r.MemoryUsed, r.HasMemory = 12, true
	return append(dst, r), nil
}

func ExampleProfiler() {
	clock := &jumpClock{now: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)}
	p, err := profiler.New(profiler.Config{
		Launcher: simLauncher{clock}, // profiler.Command on a GPU node
		Source:   simSource{},        // dcgm.New or nvml.Open on a GPU node
		Clock:    clock,              // nil on a GPU node: the wall clock
	})
	if err != nil {
		log.Fatal(err)
	}
	prof, err := p.Profile(context.Background(), elastico.ProfileRequest{
		Family: "resnet50", Class: elastico.Training,
		Config: elastico.Configuration{ID: "bs64", BatchSize: 64},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("throughput %.0f samples/s\n", prof.Throughput)
	fmt.Printf("demand %+v\n", prof.Demand)
	for c := elastico.Counter(0); c < elastico.NumCounters; c++ {
		if v, ok := prof.Counters.Get(c); ok {
			fmt.Printf("%s %.2f\n", c, v)
		}
	}
	fmt.Println(prof.Hardware.GPUModel)
	// Output:
	// throughput 1600 samples/s
	// demand {GPUs:1 SM:0.7 GPUMemory:12 CPU:4 RAM:7.5}
	// sm_active 0.70
	// dram_active 0.40
	// NVIDIA A100-SXM4-40GB
}

func ExampleTrimmedMean() {
	// One slow second (a checkpoint save) among steady ones.
	rates := []float64{1600, 1610, 1590, 1605, 1595, 1600, 1602, 1598, 1601, 210}
	fmt.Printf("10-90 %% trimmed: %.1f\n", profiler.TrimmedMean(rates, 0.1))
	fmt.Printf("plain mean:      %.1f\n", profiler.TrimmedMean(rates, 0))
	// Output:
	// 10-90 % trimmed: 1598.9
	// plain mean:      1461.1
}

func ExamplePCIeBandwidth() {
	bw, _ := profiler.PCIeBandwidth(4, 16)
	fmt.Printf("%.2f GB/s per direction\n", bw/1e9)
	// Output:
	// 31.51 GB/s per direction
}

func ExampleParseReport() {
	for _, line := range []string{
		"epoch 3 step 120 loss 1.92",
		"elastico-progress iter=120 work=7680",
	} {
		iter, work, ok, err := profiler.ParseReport(line)
		fmt.Println(iter, work, ok, err)
	}
	// Output:
	// 0 0 false <nil>
	// 120 7680 true <nil>
}

func ExampleStore() {
	dir, err := os.MkdirTemp("", "profiles")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	st, err := profiler.OpenStore(dir)
	if err != nil {
		log.Fatal(err)
	}
	hw := elastico.Hardware{GPUModel: "NVIDIA A100-SXM4-40GB", Driver: "550.54.15"}
	measured := elastico.Profile{
		Family: "resnet50", Config: elastico.Configuration{ID: "bs64", BatchSize: 64},
		Demand: elastico.Demand{GPUs: 1, SM: 0.7, GPUMemory: 12, CPU: 4, RAM: 7.5}, Throughput: 1600, Hardware: hw,
	}
	guess := measured
	guess.Throughput, guess.Interpolated = 1800, true
	for _, p := range []elastico.Profile{measured, guess} {
		stored, err := st.Put(p)
		fmt.Println("stored:", stored, err)
	}
	got, _, _ := st.Get("resnet50", "bs64", hw)
	fmt.Println(got.Throughput, got.Interpolated)
	// Output:
	// stored: true <nil>
	// stored: false <nil>
	// 1600 false
}
