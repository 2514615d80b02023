package adapter

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/elastico/elastico/examples/slurm/slurmtest"
)

// benchEnv is the opt-in switch of TestSlurmTickAtScale: a shape
// "NODESxGPUS,JOBS" ("8x64,2000"), or "1" for that default.
const benchEnv = "ELASTICO_SLURM_BENCH"

// TestSlurmTickAtScale measures the adapter's tick on a real slurmctld
// with the shape of BenchmarkTick (512 GPUs, 2,000 queued opted-in jobs):
// NODES slurmd, each in its network namespace, with GPUS placeholder GPUs
// of 4 shards. The plan starts nobody and keeps every running job, so each
// tick is squeue --json, sinfo --json and the adapter's own work; the
// default scheduler's epoch on the same State is timed apart. It takes
// minutes (2,000 sbatch): opt in with ELASTICO_SLURM_BENCH=1.
func TestSlurmTickAtScale(t *testing.T) {
	spec := os.Getenv(benchEnv)
	if spec == "" {
		t.Skip("set " + benchEnv + "=1 (or NODESxGPUS,JOBS) to time the adapter's tick on a real slurmctld at scale")
	}
	nodes, gpus, njobs := 8, 64, 2000
	if spec != "1" {
		if _, err := fmt.Sscanf(spec, "%dx%d,%d", &nodes, &gpus, &njobs); err != nil || nodes < 1 || gpus < 1 || njobs < 1 {
			t.Fatalf("%s=%q: want NODESxGPUS,JOBS (8x64,2000) or 1", benchEnv, spec)
		}
	}
	t0 := time.Now()
	c := slurmtest.Start(t, slurmtest.Options{Nodes: nodes, GPUs: gpus, ShardsPerGPU: 4, CPUs: 128})
	t.Logf("%d nodes of %d GPUs up in %v", nodes, gpus, time.Since(t0).Round(time.Millisecond))

	// Submit in parallel: one sbatch is a few tens of milliseconds of
	// slurmctld's time, most of it waiting.
	t1 := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, njobs)
	next := make(chan int)
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				comment := trainSpec
				if i%2 == 1 {
					comment = inferSpec
				}
				var err error
				for try := 0; try < 5; try++ { // slurmctld busy: "Resource temporarily unavailable"
					if _, err = c.Sbatch("--hold", "--comment="+comment, "-J", "b"+strconv.Itoa(i), "-o", "/dev/null", "--wrap", "sleep 1"); err == nil {
						break
					}
					time.Sleep(time.Second)
				}
				if err != nil {
					errs <- err
				}
			}
		}()
	}
	for i := range njobs {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("sbatch: %v", err)
	}
	t.Logf("%d jobs submitted in %v", njobs, time.Since(t1).Round(time.Millisecond))

	cli := &CLI{Conf: c.Conf}
	counted := &countingCLI{CLI: cli}
	s := &scripted{plan: keep}
	now := time.Now()
	a, err := New(Config{Slurm: counted, Scheduler: s, StateDir: t.TempDir(), GPUMemory: 80,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx := context.Background()
	tick := func() time.Duration {
		t.Helper()
		at := time.Now()
		rep, err := a.Tick(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if rep.Plan == nil {
			t.Fatal("no plan: the adapter saw no job")
		}
		return time.Since(at)
	}
	// The first ticks write every waiting job's AdminComment,
	// StatusPerTick a tick (once: the clock stands still, so they are not
	// rewritten).
	var warm []time.Duration
	for {
		n := counted.updates
		warm = append(warm, tick())
		if counted.updates == n {
			break
		}
	}
	first := warm[0]
	var warmAll time.Duration
	for _, d := range warm {
		warmAll += d
	}
	st := s.states[len(s.states)-1]
	if len(st.Jobs) != njobs || st.Cluster.NumGPUs() != nodes*gpus {
		t.Fatalf("the State has %d jobs and %d GPUs, want %d and %d", len(st.Jobs), st.Cluster.NumGPUs(), njobs, nodes*gpus)
	}
	const n = 10
	var ticks, reads, sinfo []time.Duration
	for range n {
		ticks = append(ticks, tick())
		at := time.Now()
		if _, err := cli.Jobs(ctx); err != nil {
			t.Fatal(err)
		}
		reads = append(reads, time.Since(at))
		at = time.Now()
		if _, err := cli.Nodes(ctx); err != nil {
			t.Fatal(err)
		}
		sinfo = append(sinfo, time.Since(at))
	}
	// The default scheduler on the same State, as the daemon runs it.
	var epochs []time.Duration
	sched := newScheduler(t)
	starts := 0
	for range 3 {
		at := time.Now()
		p, err := sched.Epoch(ctx, st)
		if err != nil {
			t.Fatal(err)
		}
		epochs = append(epochs, time.Since(at))
		starts = len(p.Actions)
	}
	t.Logf("real slurmctld, %d nodes x %d GPUs (%d), %d held opted-in jobs, %d ticks:\n"+
		"  %d waiting AdminComments written over %d ticks (%d a tick) in %v; the first tick took %v\n"+
		"  tick, plan that starts nobody: %s\n"+
		"    of which squeue --json: %s; sinfo --json: %s\n"+
		"  pds epoch on that State (3 runs, %d starts planned): %s",
		nodes, gpus, nodes*gpus, njobs, n, counted.updates, len(warm)-1, StatusPerTick, warmAll.Round(time.Millisecond), first.Round(time.Millisecond),
		spread(ticks), spread(reads), spread(sinfo), starts, spread(epochs))
}

// countingCLI counts the adapter's scontrol updates (Tick runs them in
// the test's goroutine).
type countingCLI struct {
	*CLI
	updates int
}

func (c *countingCLI) Update(ctx context.Context, id int, fields ...string) error {
	c.updates++
	return c.CLI.Update(ctx, id, fields...)
}

// spread writes durations as "median (min–max)".
func spread(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	r := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	return fmt.Sprintf("median %s (%s–%s)", r(s[len(s)/2]), r(s[0]), r(s[len(s)-1]))
}
