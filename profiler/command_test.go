package profiler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/elastico/elastico"
)

func TestParseReport(t *testing.T) {
	tests := []struct {
		name     string
		line     string
		wantIter int64
		wantWork float64
		wantOK   bool
		wantErr  string
	}{
		{name: "report", line: "elastico-progress iter=12 work=3072", wantIter: 12, wantWork: 3072, wantOK: true},
		{name: "fields in any order, spaces around", line: "  elastico-progress work=1.5e3\titer=3 \n", wantIter: 3, wantWork: 1500, wantOK: true},
		{name: "other output", line: "epoch 1 loss 0.32", wantOK: false},
		{name: "a longer word is not the prefix", line: "elastico-progressive iter=1 work=1", wantOK: false},
		{name: "missing work", line: "elastico-progress iter=1", wantOK: true, wantErr: "want both"},
		{name: "negative iter", line: "elastico-progress iter=-1 work=1", wantOK: true, wantErr: "iter=\"-1\""},
		{name: "NaN work", line: "elastico-progress iter=1 work=NaN", wantOK: true, wantErr: "work=\"NaN\""},
		{name: "unknown field", line: "elastico-progress iter=1 work=2 loss=0.1", wantOK: true, wantErr: "unknown field \"loss\""},
		{name: "not key=value", line: "elastico-progress 12 3072", wantOK: true, wantErr: "not key=value"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			iter, work, ok, err := ParseReport(tt.line)
			if ok != tt.wantOK {
				t.Errorf("ok = %v, want %v", ok, tt.wantOK)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || iter != tt.wantIter || work != tt.wantWork {
				t.Errorf("ParseReport = %d, %g, %v; want %d, %g", iter, work, err, tt.wantIter, tt.wantWork)
			}
		})
	}
}

// TestHelperProcess is the program Command runs in these tests; it does
// nothing in a normal test run.
func TestHelperProcess(t *testing.T) {
	mode := os.Getenv("ELASTICO_TEST_HELPER")
	if mode == "" {
		return
	}
	defer os.Exit(0)
	batch, _ := strconv.Atoi(os.Getenv("ELASTICO_BATCH_SIZE"))
	switch mode {
	case "steady":
		if os.Getenv("ELASTICO_CONFIG_ID") != "bs8" || os.Getenv("CUDA_VISIBLE_DEVICES") != "3" || os.Getenv("ELASTICO_AMP") != "1" {
			fmt.Fprintln(os.Stderr, "wrong environment")
			os.Exit(2)
		}
		for i := 1; ; i++ {
			fmt.Println("step", i) // ordinary output passes through
			fmt.Printf("elastico-progress iter=%d work=%d\n", i, i*batch)
			time.Sleep(2 * time.Millisecond)
		}
	case "crash":
		fmt.Println("elastico-progress iter=1 work=8")
		fmt.Fprintln(os.Stderr, "RuntimeError: CUDA error: an illegal memory access was encountered")
		os.Exit(3)
	case "malformed":
		fmt.Println("elastico-progress iter=1 work=8")
		fmt.Println("elastico-progress iter=two work=16")
		time.Sleep(time.Minute)
	case "stubborn":
		signal.Ignore(syscall.SIGTERM)
		fmt.Println("elastico-progress iter=1 work=8")
		time.Sleep(time.Minute)
	case "parent":
		// A worker process beside the main one, as a data loader would be.
		child := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$")
		child.Env = append(os.Environ(), "ELASTICO_TEST_HELPER=spin")
		if err := child.Start(); err != nil {
			os.Exit(4)
		}
		fmt.Println("elastico-progress iter=1 work=8")
		time.Sleep(time.Minute)
	case "spin":
		deadline := time.Now().Add(time.Minute)
		for x := 0; time.Now().Before(deadline); x++ {
		}
	}
}

func helperCommand(mode string, stdout, stderr *syncBuffer) *Command {
	return &Command{
		Path:      os.Args[0],
		Args:      []string{"-test.run=^TestHelperProcess$"},
		Env:       []string{"ELASTICO_TEST_HELPER=" + mode},
		Devices:   "3",
		Stdout:    stdout,
		Stderr:    stderr,
		StopGrace: 200 * time.Millisecond,
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

var helperReq = elastico.ProfileRequest{
	Family: "helper", Config: elastico.Configuration{ID: "bs8", BatchSize: 8, AMP: true},
}

// waitFor polls f until it holds or a few seconds pass.
func waitFor(t *testing.T, what string, f func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if f() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

func TestCommandCrash(t *testing.T) {
	var out, errOut syncBuffer
	job, err := helperCommand("crash", &out, &errOut).Launch(context.Background(), helperReq)
	if err != nil {
		t.Fatal(err)
	}
	var pr Progress
	waitFor(t, "the job to exit", func() bool {
		pr, err = job.Progress()
		return err != nil || pr.Exited
	})
	if err != nil {
		t.Fatalf("Progress: %v", err)
	}
	if pr.Iterations != 1 || pr.Work != 8 || pr.Err == nil || !strings.Contains(pr.Err.Error(), "exit status 3") {
		t.Errorf("Progress = %+v, want 1 iteration, work 8, exit status 3", pr)
	}
	if !strings.Contains(errOut.String(), "illegal memory access") {
		t.Errorf("stderr was not passed through: %q", errOut.String())
	}
	if err := job.Stop(); err != nil {
		t.Errorf("Stop after exit: %v", err)
	}
}

func TestCommandMalformed(t *testing.T) {
	job, err := helperCommand("malformed", nil, nil).Launch(context.Background(), helperReq)
	if err != nil {
		t.Fatal(err)
	}
	defer job.Stop()
	waitFor(t, "the malformed report", func() bool { _, err = job.Progress(); return err != nil })
	if !strings.Contains(err.Error(), `output line 2: malformed report "elastico-progress iter=two work=16"`) {
		t.Errorf("Progress error = %v", err)
	}
}

func TestCommandStopKillsStubbornJob(t *testing.T) {
	job, err := helperCommand("stubborn", nil, nil).Launch(context.Background(), helperReq)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the first report", func() bool { pr, _ := job.Progress(); return pr.Iterations == 1 })
	start := time.Now()
	if err := job.Stop(); err != nil {
		t.Fatal(err)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("Stop took %v", el)
	}
	pr, _ := job.Progress()
	if !pr.Exited {
		t.Errorf("job still running after Stop")
	}
}

func TestCommandProcessTree(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("host usage is read from /proc")
	}
	job, err := helperCommand("parent", nil, nil).Launch(context.Background(), helperReq)
	if err != nil {
		t.Fatal(err)
	}
	defer job.Stop()
	var pr Progress
	waitFor(t, "the worker to burn CPU", func() bool {
		pr, err = job.Progress()
		return err == nil && len(pr.PIDs) == 2 && pr.CPUSeconds >= 0.05
	})
	if !pr.HasUsage || pr.RSS <= 0 {
		t.Errorf("Progress = %+v, want usage with RSS", pr)
	}
}

func TestCommandLaunchErrors(t *testing.T) {
	if _, err := (&Command{}).Launch(context.Background(), helperReq); err == nil || !strings.Contains(err.Error(), "Path is empty") {
		t.Errorf("empty path: %v", err)
	}
	_, err := (&Command{Path: "/nonexistent/train.py"}).Launch(context.Background(), helperReq)
	if err == nil || !strings.HasPrefix(err.Error(), "profiler: command /nonexistent/train.py") {
		t.Errorf("missing program: %v", err)
	}
}

// TestProfileCommand runs the whole pipeline on a real process and the
// wall clock, with a window of a fraction of a second.
func TestProfileCommand(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("host usage is read from /proc")
	}
	var out syncBuffer
	src := &fakeSource{hw: testHW, devices: 1, reading: steady(baseCounters, 10)}
	p, err := New(Config{
		Launcher: helperCommand("steady", &out, nil), Source: src,
		WarmupIterations: 5, Window: 300 * time.Millisecond, Interval: 30 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	prof, err := p.Profile(context.Background(), helperReq)
	if err != nil {
		t.Fatalf("Profile: %v\noutput: %s", err, out.String())
	}
	// The helper sleeps 2 ms per 8 samples: at most 4000 samples/s.
	if prof.Throughput <= 0 || prof.Throughput > 4000 {
		t.Errorf("throughput %g, want in (0, 4000]", prof.Throughput)
	}
	if prof.Demand.RAM <= 0 || prof.Demand.CPU < 0 {
		t.Errorf("host demand %+v", prof.Demand)
	}
	want := counters(baseCounters)
	if diff := cmp.Diff(want, prof.Counters); diff != "" {
		t.Errorf("counters (-want +got):\n%s", diff)
	}
	if !strings.Contains(out.String(), "step 1\n") || strings.Contains(out.String(), ReportPrefix) {
		t.Errorf("stdout passed through wrongly: %.200q", out.String())
	}
	if pids := src.pids[len(src.pids)-1]; len(pids) == 0 {
		t.Errorf("no PIDs reached the source")
	}
}

func TestParseStat(t *testing.T) {
	tests := []struct {
		name    string
		stat    string
		want    procStat
		wantErr bool
	}{
		{
			name: "a command name with spaces and parentheses",
			stat: "4242 (python3 (worker) 1) S 4100 4242 4100 0 -1 4194560 1000 0 0 0 250 30 12 8 20 0 8 0 9000 5000000 20480 18446744073709551615",
			want: procStat{ppid: 4100, ticks: 300, rssPages: 20480},
		},
		{name: "truncated", stat: "4242 (python3) S 4100 4242", wantErr: true},
		{name: "no command", stat: "garbage", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat([]byte(tt.stat))
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v, wantErr %v", err, tt.wantErr)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(procStat{})); diff != "" {
				t.Errorf("parseStat (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTreeUsage(t *testing.T) {
	procs := map[int]procStat{
		1:  {ppid: 0, ticks: 99999, rssPages: 99999},
		10: {ppid: 1, ticks: 200, rssPages: 1 << 18}, // the job: 2 s, 1 GiB
		11: {ppid: 10, ticks: 150, rssPages: 1 << 17},
		12: {ppid: 11, ticks: 50, rssPages: 1 << 17},
		20: {ppid: 1, ticks: 500, rssPages: 500}, // someone else
	}
	pids, cpu, rss := treeUsage(10, procs, 4096)
	if len(pids) != 3 || cpu != 4 || rss != 2 {
		t.Errorf("treeUsage = %v, %g s, %g GiB; want 3 processes, 4 s, 2 GiB", pids, cpu, rss)
	}
	if pids, _, _ := treeUsage(77, procs, 4096); len(pids) != 0 {
		t.Errorf("a missing root gave processes %v", pids)
	}
}

func TestSystemClock(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (SystemClock{}).Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep on a cancelled context = %v", err)
	}
	if err := (SystemClock{}).Sleep(context.Background(), time.Millisecond); err != nil {
		t.Errorf("Sleep = %v", err)
	}
}
