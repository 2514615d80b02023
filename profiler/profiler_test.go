package profiler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/elastico/elastico"
)

var nan = math.NaN()

// baseCounters: every counter but NVLink measured.
var baseCounters = [elastico.NumCounters]float64{
	elastico.GrEngineActive: 0.9, elastico.SMActive: 0.8, elastico.SMOccupancy: 0.4,
	elastico.TensorActive: 0.6, elastico.FPActive: 0.3, elastico.DRAMActive: 0.5,
	elastico.FBUsedFrac: 0.25, elastico.PCIeFrac: 0.01, elastico.NVLinkFrac: nan,
	elastico.PowerFrac: 0.7,
}

var testHW = elastico.Hardware{GPUModel: "NVIDIA A100-SXM4-40GB", Driver: "550.54.15"}

var testReq = elastico.ProfileRequest{
	Family: "resnet50", Class: elastico.Training, Params: 25.6e6,
	Config: elastico.Configuration{ID: "bs256-amp", BatchSize: 256, AMP: true},
}

type rig struct {
	clock    *fakeClock
	launcher *fakeLauncher
	source   *fakeSource
	cfg      Config
}

func newRig() *rig {
	c := newFakeClock()
	r := &rig{
		clock:    c,
		launcher: &fakeLauncher{clock: c, tmpl: fakeJob{Rate: 10, WorkPerIter: 32, CPU: 2.5, RSS: 6}},
		source:   &fakeSource{hw: testHW, devices: 1, reading: steady(baseCounters, 10)},
	}
	r.cfg = Config{Launcher: r.launcher, Source: r.source, Clock: c}
	return r
}

func (r *rig) profile(t *testing.T, ctx context.Context, req elastico.ProfileRequest) (elastico.Profile, error) {
	t.Helper()
	p, err := New(r.cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p.Profile(ctx, req)
}

func counters(vals [elastico.NumCounters]float64) elastico.Counters {
	var cs elastico.Counters
	for c, v := range vals {
		if !math.IsNaN(v) {
			cs.Set(elastico.Counter(c), v)
		}
	}
	return cs
}

func TestProfile(t *testing.T) {
	spiky := func(i, dev int) Reading {
		r := steady(baseCounters, 10)(i, dev)
		if i == 40 || i == 41 || i == 50 { // three spikes out of 60: above the 90 % cut
			r.Counters.Set(elastico.SMActive, 1)
			r.Counters.Set(elastico.DRAMActive, 0.99)
			r.MemoryUsed = 12 // memory is a peak: spikes count
		}
		return r
	}
	tests := []struct {
		name        string
		job         func(*fakeJob)
		source      func(*fakeSource)
		cfg         func(*Config)
		req         func(*elastico.ProfileRequest)
		want        elastico.Profile
		wantSamples int // source samples, warm-up included
	}{
		{
			name: "steady job, warm-up ends on iterations",
			want: elastico.Profile{
				Demand:     elastico.Demand{GPUs: 1, SM: 0.8, GPUMemory: 10, CPU: 2.5, RAM: 6},
				Throughput: 320, Counters: counters(baseCounters), Hardware: testHW,
			},
			wantSamples: 10 + 60, // 100 iterations at 10/s, then the window
		},
		{
			name: "slow warm-up ends on time after the first report",
			job:  func(j *fakeJob) { j.StartDelay = 40 * time.Second; j.Rate = 2; j.WorkPerIter = 160 },
			want: elastico.Profile{
				Demand:     elastico.Demand{GPUs: 1, SM: 0.8, GPUMemory: 10, CPU: 2.5, RAM: 6},
				Throughput: 320, Counters: counters(baseCounters), Hardware: testHW,
			},
			// first report seen at the 41 s poll; 30 s later, at 71 s, warm-up ends
			wantSamples: 71 + 60,
		},
		{
			name: "outliers are trimmed, peaks are kept",
			job:  func(j *fakeJob) { j.PauseAt = 35 * time.Second; j.PauseFor = 2500 * time.Millisecond },
			source: func(s *fakeSource) {
				s.reading = spiky
			},
			want: elastico.Profile{
				Demand:     elastico.Demand{GPUs: 1, SM: 0.8, GPUMemory: 12, CPU: 2.5, RAM: 6},
				Throughput: 320, Counters: counters(baseCounters), Hardware: testHW,
			},
			wantSamples: 70,
		},
		{
			name:   "no trimming: the spikes and the pause move the means",
			job:    func(j *fakeJob) { j.PauseAt = 35 * time.Second; j.PauseFor = 2500 * time.Millisecond },
			source: func(s *fakeSource) { s.reading = spiky },
			cfg:    func(c *Config) { c.Trim = -1 },
			want: func() elastico.Profile {
				cs := baseCounters
				cs[elastico.SMActive] = (57*0.8 + 3*1.0) / 60
				cs[elastico.DRAMActive] = (57*0.5 + 3*0.99) / 60
				// the pause: no report at the 36 s and 37 s polls, then 5
				// iterations in the 3 s since the last report, among 57
				// one-second intervals at full speed
				return elastico.Profile{
					Demand:     elastico.Demand{GPUs: 1, SM: cs[elastico.SMActive], GPUMemory: 12, CPU: 2.5, RAM: 6},
					Throughput: (57*320 + 5*32/3.0) / 58, Counters: counters(cs), Hardware: testHW,
				}
			}(),
			wantSamples: 70,
		},
		{
			name: "two GPUs: counters averaged, memory peak, host demand per replica",
			req:  func(r *elastico.ProfileRequest) { r.Config.GPUs = 2 },
			source: func(s *fakeSource) {
				s.devices = 2
				s.reading = func(i, dev int) Reading {
					r := steady(baseCounters, 10+float64(dev))(i, dev)
					r.Counters.Set(elastico.SMActive, 0.7+0.2*float64(dev))
					return r
				}
			},
			job: func(j *fakeJob) { j.CPU = 5; j.RSS = 12 },
			cfg: func(c *Config) { c.MPS = true },
			want: func() elastico.Profile {
				cs := baseCounters
				cs[elastico.SMActive] = 0.8
				hw := testHW
				hw.MPS = true
				return elastico.Profile{
					Demand:     elastico.Demand{GPUs: 2, SM: 0.8, GPUMemory: 11, CPU: 2.5, RAM: 6},
					Throughput: 320, Counters: counters(cs), Hardware: hw,
				}
			}(),
			wantSamples: 70,
		},
		{
			name: "no SM counter: graphics-engine activity is the SM share; a counter seen in under half the samples is absent",
			source: func(s *fakeSource) {
				s.reading = func(i, dev int) Reading {
					cs := baseCounters
					cs[elastico.SMActive] = nan
					if i%3 != 0 { // tensor activity in 2/3 of the samples: kept
						cs[elastico.TensorActive] = nan
						cs[elastico.FPActive] = nan
					}
					r := steady(cs, 10)(i, dev)
					if i%3 == 0 { // FP activity in 1/3: dropped
						r.Counters = counters(func() [elastico.NumCounters]float64 {
							c := cs
							c[elastico.FPActive] = nan
							return c
						}())
						r.Counters.Set(elastico.TensorActive, 0.6)
					}
					return r
				}
			},
			want: func() elastico.Profile {
				cs := baseCounters
				cs[elastico.SMActive] = nan
				cs[elastico.FPActive] = nan
				cs[elastico.TensorActive] = nan
				return elastico.Profile{
					Demand:     elastico.Demand{GPUs: 1, SM: 0.9, GPUMemory: 10, CPU: 2.5, RAM: 6},
					Throughput: 320, Counters: counters(cs), Hardware: testHW,
				}
			}(),
			wantSamples: 70,
		},
		{
			name: "an idle job still holds MinSM",
			source: func(s *fakeSource) {
				cs := baseCounters
				cs[elastico.SMActive] = 0.001
				s.reading = steady(cs, 1)
			},
			cfg: func(c *Config) { c.MinSM = 0.05 },
			want: func() elastico.Profile {
				cs := baseCounters
				cs[elastico.SMActive] = 0.001
				return elastico.Profile{
					Demand:     elastico.Demand{GPUs: 1, SM: 0.05, GPUMemory: 1, CPU: 2.5, RAM: 6},
					Throughput: 320, Counters: counters(cs), Hardware: testHW,
				}
			}(),
			wantSamples: 70,
		},
		{
			name: "a pod's device, visible once the job runs: the signature is read after warm-up",
			source: func(s *fakeSource) {
				notYet := fmt.Errorf("dcgm: no device matches any GPU of pod ml/p: %w", ErrNotVisible)
				s.hwFail = func(i int) error { return map[bool]error{true: notYet}[i == 0] }
				s.fail = func(i int) error { return map[bool]error{true: notYet}[i < 4] }
			},
			want: elastico.Profile{
				Demand:     elastico.Demand{GPUs: 1, SM: 0.8, GPUMemory: 10, CPU: 2.5, RAM: 6},
				Throughput: 320, Counters: counters(baseCounters), Hardware: testHW,
			},
			wantSamples: 70,
		},
		{
			name: "tolerated failed samples",
			source: func(s *fakeSource) {
				s.fail = func(i int) error {
					if i == 20 || i == 30 {
						return errors.New("scrape timed out")
					}
					return nil
				}
			},
			cfg: func(c *Config) { c.MaxSampleErrors = 2; c.Window = 10 * time.Second },
			want: elastico.Profile{
				Demand:     elastico.Demand{GPUs: 1, SM: 0.8, GPUMemory: 10, CPU: 2.5, RAM: 6},
				Throughput: 320, Counters: counters(baseCounters), Hardware: testHW,
			},
			wantSamples: 10 + 10,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig()
			if tt.job != nil {
				tt.job(&r.launcher.tmpl)
			}
			if tt.source != nil {
				tt.source(r.source)
			}
			if tt.cfg != nil {
				tt.cfg(&r.cfg)
			}
			req := testReq
			if tt.req != nil {
				tt.req(&req)
			}
			got, err := r.profile(t, context.Background(), req)
			if err != nil {
				t.Fatalf("Profile: %v", err)
			}
			want := tt.want
			want.Family, want.Class, want.Params, want.Config = req.Family, req.Class, req.Params, req.Config
			if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
				t.Errorf("profile (-want +got):\n%s", diff)
			}
			if r.source.samples != tt.wantSamples {
				t.Errorf("source sampled %d times, want %d", r.source.samples, tt.wantSamples)
			}
			if len(r.launcher.jobs) != 1 || r.launcher.jobs[0].stopped != 1 {
				t.Errorf("jobs launched/stopped: %d launched, want 1 stopped once", len(r.launcher.jobs))
			}
			if diff := cmp.Diff([]int{4242}, r.source.pids[len(r.source.pids)-1]); diff != "" {
				t.Errorf("the source did not get the job's PIDs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProfileFailures(t *testing.T) {
	gone := errors.Join(ErrDeviceGone, errors.New("GPU-fake-0 is not in the scrape"))
	tests := []struct {
		name      string
		job       func(*fakeJob)
		source    func(*fakeSource)
		cfg       func(*Config)
		req       func(*elastico.ProfileRequest)
		launchErr error
		wantPhase string
		wantIs    error
		wantText  string
	}{
		{
			name:      "crash during warm-up",
			job:       func(j *fakeJob) { j.ExitAt = 3 * time.Second; j.ExitErr = errors.New("exit status 139") },
			wantPhase: "warm-up", wantIs: ErrExited, wantText: "exit status 139",
		},
		{
			name:      "crash during the window",
			job:       func(j *fakeJob) { j.ExitAt = 45 * time.Second; j.ExitErr = errors.New("CUDA out of memory") },
			wantPhase: "measurement", wantIs: ErrExited, wantText: "after 450 iterations",
		},
		{
			name:      "clean exit before the window ends",
			job:       func(j *fakeJob) { j.ExitAt = 30 * time.Second },
			wantPhase: "measurement", wantIs: ErrExited, wantText: "with no error",
		},
		{
			name:      "stalls",
			job:       func(j *fakeJob) { j.StallAfter = 40 * time.Second },
			cfg:       func(c *Config) { c.StallTimeout = 20 * time.Second },
			wantPhase: "measurement", wantIs: ErrStalled, wantText: "no iteration after 400",
		},
		{
			name:      "stalls for the whole window",
			job:       func(j *fakeJob) { j.StallAfter = 10 * time.Second }, // right after warm-up
			wantPhase: "measurement", wantIs: ErrStalled, wantText: "no iteration reported in the 1m0s window",
		},
		{
			name:      "never reports",
			job:       func(j *fakeJob) { j.StartDelay = time.Hour },
			cfg:       func(c *Config) { c.StartTimeout = 5 * time.Minute },
			wantPhase: "warm-up", wantIs: ErrNoReports, wantText: "within 5m0s",
		},
		{
			name:      "malformed reports",
			job:       func(j *fakeJob) { j.BadAfter = 20 * time.Second },
			wantPhase: "measurement", wantText: "malformed report",
		},
		{
			name:      "device disappears mid-window",
			source:    func(s *fakeSource) { s.fail = func(i int) error { return map[bool]error{true: gone}[i >= 40] } },
			cfg:       func(c *Config) { c.MaxSampleErrors = 100 },
			wantPhase: "measurement", wantIs: ErrDeviceGone, wantText: "GPU-fake-0",
		},
		{
			name: "too many failed samples",
			source: func(s *fakeSource) {
				s.fail = func(i int) error {
					return map[bool]error{true: errors.New("connection refused")}[i >= 30 && i < 33]
				}
			},
			cfg:       func(c *Config) { c.MaxSampleErrors = 2 },
			wantPhase: "measurement", wantText: "3 failed samples (2 tolerated), the last: connection refused",
		},
		{
			name:      "source reads fewer devices than the configuration's GPUs",
			req:       func(r *elastico.ProfileRequest) { r.Config.GPUs = 2 },
			wantPhase: "warm-up", wantText: "source read 1 devices, but the configuration runs on 2 GPUs",
		},
		{
			name:      "no host usage",
			job:       func(j *fakeJob) { j.NoUsage = true },
			wantPhase: "measurement", wantText: "no host CPU and memory usage",
		},
		{
			name: "no SM counter at all",
			source: func(s *fakeSource) {
				cs := baseCounters
				cs[elastico.SMActive], cs[elastico.GrEngineActive] = nan, nan
				s.reading = steady(cs, 10)
			},
			wantPhase: "measurement", wantText: "neither SM activity nor graphics-engine activity",
		},
		{
			name: "no memory reading",
			source: func(s *fakeSource) {
				s.reading = func(i, dev int) Reading { r := steady(baseCounters, 0)(i, dev); r.HasMemory = false; return r }
			},
			wantPhase: "measurement", wantText: "no GPU memory use",
		},
		{
			name: "a device that never becomes visible",
			source: func(s *fakeSource) {
				s.hwFail = func(int) error { return fmt.Errorf("dcgm: no device matches: %w", ErrNotVisible) }
			},
			wantPhase: "reading the hardware signature", wantIs: ErrNotVisible, wantText: "no device matches",
		},
		{
			name: "a device that stays invisible into the window",
			source: func(s *fakeSource) {
				notYet := fmt.Errorf("dcgm: no device matches: %w", ErrNotVisible)
				s.hwFail = func(i int) error { return map[bool]error{true: notYet}[i == 0] }
				s.fail = func(i int) error { return map[bool]error{true: notYet}[i != 9] } // seen once, at the end of warm-up
			},
			wantPhase: "measurement", wantIs: ErrNotVisible, wantText: "1 failed samples (0 tolerated)",
		},
		{
			name:      "invisible without a reason to wait: only a not-visible signature defers",
			source:    func(s *fakeSource) { s.fail = func(i int) error { return fmt.Errorf("x: %w", ErrNotVisible) } },
			wantPhase: "warm-up", wantIs: ErrNotVisible, wantText: "1 failed samples",
		},
		{
			name:      "hardware signature unreadable",
			source:    func(s *fakeSource) { s.hwErr = errors.New("dcgm: no modelName label") },
			wantPhase: "reading the hardware signature", wantText: "no modelName label",
		},
		{
			name:      "launch fails",
			launchErr: errors.New("exec: \"train.py\": permission denied"),
			wantPhase: "launch", wantText: "permission denied",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig()
			if tt.job != nil {
				tt.job(&r.launcher.tmpl)
			}
			if tt.source != nil {
				tt.source(r.source)
			}
			if tt.cfg != nil {
				tt.cfg(&r.cfg)
			}
			r.launcher.err = tt.launchErr
			req := testReq
			if tt.req != nil {
				tt.req(&req)
			}
			_, err := r.profile(t, context.Background(), req)
			var je *JobError
			if !errors.As(err, &je) {
				t.Fatalf("Profile error = %v, want a *JobError", err)
			}
			if je.Job != "resnet50/bs256-amp" || je.Phase != tt.wantPhase {
				t.Errorf("JobError names job %q in phase %q, want %q in %q", je.Job, je.Phase, "resnet50/bs256-amp", tt.wantPhase)
			}
			if !strings.Contains(err.Error(), `job "resnet50/bs256-amp"`) || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("error %q does not name the job or lacks %q", err, tt.wantText)
			}
			if tt.wantIs != nil && !errors.Is(err, tt.wantIs) {
				t.Errorf("error %q does not wrap %v", err, tt.wantIs)
			}
			for _, j := range r.launcher.jobs {
				if j.stopped != 1 {
					t.Errorf("job stopped %d times, want 1", j.stopped)
				}
			}
		})
	}
}

func TestProfileCancelled(t *testing.T) {
	r := newRig()
	ctx, cancel := context.WithCancel(context.Background())
	r.source.fail = func(i int) error {
		if i == 15 {
			cancel()
		}
		return nil
	}
	_, err := r.profile(t, ctx, testReq)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Profile error = %v, want context.Canceled", err)
	}
	if r.launcher.jobs[0].stopped != 1 {
		t.Errorf("the job was not stopped")
	}
}

func TestProfileBadRequest(t *testing.T) {
	tests := []struct {
		name     string
		req      elastico.ProfileRequest
		wantText string
	}{
		{"no family", elastico.ProfileRequest{Config: elastico.Configuration{ID: "a"}}, "Family is empty"},
		{"no config ID", elastico.ProfileRequest{Family: "f"}, "Config.ID is empty"},
		{"negative GPUs", elastico.ProfileRequest{Family: "f", Config: elastico.Configuration{ID: "a", GPUs: -1}}, "GPUs is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig()
			_, err := r.profile(t, context.Background(), tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("Profile error = %v, want one containing %q", err, tt.wantText)
			}
			if len(r.launcher.jobs) != 0 {
				t.Errorf("a bad request launched a job")
			}
		})
	}
}

func TestNewConfig(t *testing.T) {
	r := newRig()
	tests := []struct {
		name     string
		cfg      Config
		wantText string
	}{
		{"no launcher", Config{Source: r.source}, "Launcher is nil"},
		{"no source", Config{Launcher: r.launcher}, "Source is nil"},
		{"negative window", Config{Launcher: r.launcher, Source: r.source, Window: -time.Second}, "Window is negative"},
		{"window below interval", Config{Launcher: r.launcher, Source: r.source, Window: time.Second, Interval: 2 * time.Second}, "shorter than"},
		{"trim half", Config{Launcher: r.launcher, Source: r.source, Trim: 0.5}, "Trim is 0.5"},
		{"MinSM above 1", Config{Launcher: r.launcher, Source: r.source, MinSM: 2}, "MinSM is 2"},
		{"negative warm-up", Config{Launcher: r.launcher, Source: r.source, WarmupIterations: -1}, "WarmupIterations is negative"},
		{"negative tolerance", Config{Launcher: r.launcher, Source: r.source, MaxSampleErrors: -1}, "MaxSampleErrors is negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.wantText) || !strings.HasPrefix(err.Error(), "profiler: ") {
				t.Errorf("New error = %v, want a profiler error containing %q", err, tt.wantText)
			}
		})
	}
	p, err := New(Config{Launcher: r.launcher, Source: r.source})
	if err != nil {
		t.Fatal(err)
	}
	got := p.cfg
	want := Config{
		Launcher: r.launcher, Source: r.source, Clock: SystemClock{},
		WarmupIterations: 100, WarmupTime: 30 * time.Second, Window: time.Minute, Interval: time.Second,
		Trim: 0.1, StartTimeout: 10 * time.Minute, StallTimeout: 2 * time.Minute, MinSM: 0.01,
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b Launcher) bool { return a == b }), cmp.Comparer(func(a, b Source) bool { return a == b })); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
}

func TestProfileStores(t *testing.T) {
	r := newRig()
	st, err := OpenStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	r.cfg.Store = st
	got, err := r.profile(t, context.Background(), testReq)
	if err != nil {
		t.Fatal(err)
	}
	stored, ok, err := st.Get(testReq.Family, testReq.Config.ID, testHW)
	if err != nil || !ok {
		t.Fatalf("Get = %v, %v", ok, err)
	}
	if diff := cmp.Diff(got, stored); diff != "" {
		t.Errorf("stored profile differs (-measured +stored):\n%s", diff)
	}
}

func TestTrimmedMean(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		trim float64
		want float64
	}{
		{"empty", nil, 0.1, nan},
		{"one", []float64{3}, 0.1, 3},
		{"nine values: nothing to trim at 10 %", []float64{9, 1, 2, 3, 4, 5, 6, 7, 8}, 0.1, 5},
		{"ten values: one off each end", []float64{100, 1, 2, 3, 4, 5, 6, 7, 8, -50}, 0.1, 4.5},
		{"no trim", []float64{100, 1, 2, 3, 4, 5, 6, 7, 8, -50}, 0, 8.6},
		{"heavy trim keeps the middle", []float64{1, 2, 3, 1000}, 0.49, 2.5},
		{"sixty samples lose six at each end", append(fill(54, 1), fill(6, 1000)...), 0.1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := TrimmedMean(tt.xs, tt.trim)
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateNaNs(), cmpopts.EquateApprox(0, 1e-12)); diff != "" {
				t.Errorf("TrimmedMean (-want +got):\n%s", diff)
			}
		})
	}
}

func fill(n int, v float64) []float64 {
	xs := make([]float64, n)
	for i := range xs {
		xs[i] = v
	}
	return xs
}

func TestPCIeBandwidth(t *testing.T) {
	tests := []struct {
		name       string
		gen, width int
		want       float64
		wantErr    string
	}{
		{"gen3 x16", 3, 16, 8e9 * 128 / 130 * 2, ""},
		{"gen4 x16", 4, 16, 16e9 * 128 / 130 * 2, ""},
		{"gen5 x16", 5, 16, 32e9 * 128 / 130 * 2, ""},
		{"gen1 x1", 1, 1, 2.5e9 * 0.8 / 8, ""},
		{"gen6 x16", 6, 16, 64e9 * 242 / 256 * 2, ""},
		{"gen 0", 0, 16, 0, "PCIe generation 0"},
		{"width 0", 4, 0, 0, "PCIe link width 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PCIeBandwidth(tt.gen, tt.width)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || math.Abs(got-tt.want) > 1 {
				t.Errorf("PCIeBandwidth = %g, %v; want %g", got, err, tt.want)
			}
		})
	}
}
