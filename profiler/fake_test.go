package profiler

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/elastico/elastico"
)

// fakeClock jumps instead of waiting.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d > 0 {
		c.mu.Lock()
		c.now = c.now.Add(d)
		c.mu.Unlock()
	}
	return nil
}

// fakeJob is a job whose progress is a function of the fake clock: after
// StartDelay it completes one iteration every 1/Rate seconds, each worth
// WorkPerIter, until StallAfter (if set); it exits at ExitAt (if set).
type fakeJob struct {
	clock       *fakeClock
	launched    time.Time
	Rate        float64 // iterations per second
	WorkPerIter float64
	StartDelay  time.Duration
	StallAfter  time.Duration // 0: never stalls
	ExitAt      time.Duration // 0: never exits
	ExitErr     error
	// The job pauses PauseFor at PauseAt (a checkpoint save, an
	// evaluation): an outlier the trimmed mean drops.
	PauseAt  time.Duration
	PauseFor time.Duration
	CPU      float64 // cores used
	RSS      float64 // GiB
	NoUsage  bool
	BadAfter time.Duration // 0: reports stay well formed
	stopped  int
}

func (j *fakeJob) iterationsAt(el time.Duration) (int64, time.Time) {
	if el < j.StartDelay {
		return 0, time.Time{}
	}
	if j.StallAfter > 0 && el > j.StallAfter {
		el = j.StallAfter
	}
	run := el - j.StartDelay
	if j.PauseFor > 0 && el > j.PauseAt {
		run -= min(el-j.PauseAt, j.PauseFor)
	}
	n := int64(math.Floor(run.Seconds()*j.Rate + 1e-9))
	if n == 0 {
		return 0, time.Time{}
	}
	t := j.StartDelay + time.Duration(float64(n)/j.Rate*float64(time.Second))
	if j.PauseFor > 0 && t > j.PauseAt {
		t += j.PauseFor
	}
	return n, j.launched.Add(t)
}

func (j *fakeJob) Progress() (Progress, error) {
	now := j.clock.Now()
	el := now.Sub(j.launched)
	if j.BadAfter > 0 && el >= j.BadAfter {
		return Progress{}, errors.New("output line 7: malformed report")
	}
	n, at := j.iterationsAt(el)
	p := Progress{Iterations: n, Work: float64(n) * j.WorkPerIter, At: at, PIDs: []int{4242}}
	if !j.NoUsage {
		p.HasUsage, p.CPUSeconds, p.RSS = true, j.CPU*el.Seconds(), j.RSS
	}
	if j.ExitAt > 0 && el >= j.ExitAt {
		p.Exited, p.Err = true, j.ExitErr
	}
	return p, nil
}

func (j *fakeJob) Stop() error {
	j.stopped++
	return nil
}

// fakeLauncher hands out a copy of its template job.
type fakeLauncher struct {
	clock *fakeClock
	tmpl  fakeJob
	err   error
	jobs  []*fakeJob
	reqs  []elastico.ProfileRequest
}

func (l *fakeLauncher) Launch(ctx context.Context, req elastico.ProfileRequest) (Job, error) {
	if l.err != nil {
		return nil, l.err
	}
	j := l.tmpl
	j.clock, j.launched = l.clock, l.clock.Now()
	l.jobs = append(l.jobs, &j)
	l.reqs = append(l.reqs, req)
	return &j, nil
}

// fakeSource returns canned readings: reading(i, dev) for the i-th sample
// (counting warm-up) of device dev.
type fakeSource struct {
	hw    elastico.Hardware
	hwErr error
	// hwFail, when set, returns the error of the i-th Hardware call.
	hwFail  func(i int) error
	hwCalls int
	devices int
	reading func(i, dev int) Reading
	// fail returns the error of the i-th sample, or nil.
	fail    func(i int) error
	samples int
	pids    [][]int
}

func (s *fakeSource) Hardware(ctx context.Context) (elastico.Hardware, error) {
	i := s.hwCalls
	s.hwCalls++
	if s.hwFail != nil {
		if err := s.hwFail(i); err != nil {
			return elastico.Hardware{}, err
		}
	}
	return s.hw, s.hwErr
}

func (s *fakeSource) Sample(ctx context.Context, pids []int, dst []Reading) ([]Reading, error) {
	i := s.samples
	s.samples++
	s.pids = append(s.pids, pids)
	if s.fail != nil {
		if err := s.fail(i); err != nil {
			return dst, err
		}
	}
	for d := 0; d < s.devices; d++ {
		r := s.reading(i, d)
		if r.Device == "" {
			r.Device = fmt.Sprintf("GPU-fake-%d", d)
		}
		dst = append(dst, r)
	}
	return dst, nil
}

// steady is a reading with every counter of the given values.
func steady(vals [elastico.NumCounters]float64, memGiB float64) func(i, dev int) Reading {
	return func(i, dev int) Reading {
		var r Reading
		for c, v := range vals {
			if !math.IsNaN(v) {
				r.Counters.Set(elastico.Counter(c), v)
			}
		}
		r.MemoryUsed, r.HasMemory = memGiB, true
		return r
	}
}
