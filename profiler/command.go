package profiler

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/elastico/elastico"
)

// ReportPrefix starts the line a profiled program prints on its standard
// output after each iteration (or every few):
//
//	elastico-progress iter=<iterations so far> work=<samples or tokens so far>
//
// Both numbers are cumulative since the program started; work is in the
// unit of the throughput the profile should carry (samples for training,
// tokens or requests for inference). Other lines pass through to
// Command.Stdout. A Python program should flush after each report (print(…,
// flush=True)); Command sets PYTHONUNBUFFERED=1 to help.
const ReportPrefix = "elastico-progress"

// ParseReport parses one line of a program's output. ok is false when the
// line is not a report; err is set when it starts like one but is malformed.
func ParseReport(line string) (iter int64, work float64, ok bool, err error) {
	rest, found := strings.CutPrefix(strings.TrimSpace(line), ReportPrefix)
	if !found || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
		return 0, 0, false, nil
	}
	var haveIter, haveWork bool
	for _, f := range strings.Fields(rest) {
		k, v, eq := strings.Cut(f, "=")
		if !eq {
			return 0, 0, true, fmt.Errorf("field %q is not key=value", f)
		}
		switch k {
		case "iter":
			if iter, err = strconv.ParseInt(v, 10, 64); err != nil || iter < 0 {
				return 0, 0, true, fmt.Errorf("iter=%q is not a non-negative integer", v)
			}
			haveIter = true
		case "work":
			if work, err = strconv.ParseFloat(v, 64); err != nil || work < 0 || math.IsNaN(work) || math.IsInf(work, 0) {
				return 0, 0, true, fmt.Errorf("work=%q is not a finite non-negative number", v)
			}
			haveWork = true
		default:
			return 0, 0, true, fmt.Errorf("unknown field %q", k)
		}
	}
	if !haveIter || !haveWork {
		return 0, 0, true, errors.New("want both iter= and work=")
	}
	return iter, work, true, nil
}

// Command launches a program on this node and follows its reports (see
// ReportPrefix). The program learns its configuration from the environment:
//
//	ELASTICO_FAMILY, ELASTICO_CONFIG_ID, ELASTICO_BATCH_SIZE,
//	ELASTICO_CHECKPOINTING (0/1), ELASTICO_AMP (0/1), ELASTICO_GPUS,
//	ELASTICO_KV_CACHE_FRAC, ELASTICO_MAX_SEQS
//
// and CUDA_VISIBLE_DEVICES when Devices is set. On Linux its host CPU and
// memory are read from /proc over its whole process tree; elsewhere they are
// not measured and profiling fails with an error that says so.
type Command struct {
	Path string
	Args []string
	Dir  string
	// Env is added to this process's environment.
	Env []string
	// Devices is the value of CUDA_VISIBLE_DEVICES (e.g. "0" or a MIG
	// UUID); empty leaves the variable as it is.
	Devices string
	// Stdout and Stderr receive the program's output, reports excepted;
	// nil discards it.
	Stdout, Stderr io.Writer
	// Clock time-stamps reports; nil: the wall clock.
	Clock Clock
	// StopGrace is how long Stop waits after SIGTERM before SIGKILL
	// (default 10 s).
	StopGrace time.Duration
}

var _ Launcher = (*Command)(nil)

// Launch starts the program.
func (c *Command) Launch(ctx context.Context, req elastico.ProfileRequest) (Job, error) {
	if c.Path == "" {
		return nil, errors.New("profiler: Command.Path is empty")
	}
	clock := c.Clock
	if clock == nil {
		clock = SystemClock{}
	}
	cmd := exec.Command(c.Path, c.Args...)
	cmd.Dir = c.Dir
	b2i := func(b bool) string {
		if b {
			return "1"
		}
		return "0"
	}
	cfg := req.Config
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Env = append(cmd.Env,
		"PYTHONUNBUFFERED=1",
		"ELASTICO_FAMILY="+req.Family,
		"ELASTICO_CONFIG_ID="+cfg.ID,
		"ELASTICO_BATCH_SIZE="+strconv.Itoa(cfg.BatchSize),
		"ELASTICO_CHECKPOINTING="+b2i(cfg.Checkpointing),
		"ELASTICO_AMP="+b2i(cfg.AMP),
		"ELASTICO_GPUS="+strconv.Itoa(max(1, cfg.GPUs)),
		"ELASTICO_KV_CACHE_FRAC="+strconv.FormatFloat(cfg.KVCacheFrac, 'g', -1, 64),
		"ELASTICO_MAX_SEQS="+strconv.Itoa(cfg.MaxSeqs),
	)
	if c.Devices != "" {
		cmd.Env = append(cmd.Env, "CUDA_VISIBLE_DEVICES="+c.Devices)
	}
	if c.Stderr != nil {
		cmd.Stderr = c.Stderr
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("profiler: command %s: %w", c.Path, err)
	}
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("profiler: command %s: %w", c.Path, err)
	}
	grace := c.StopGrace
	if grace <= 0 {
		grace = 10 * time.Second
	}
	j := &commandJob{cmd: cmd, clock: clock, grace: grace, done: make(chan struct{}), read: make(chan struct{})}
	go j.follow(out, c.Stdout)
	go func() {
		<-j.read // Wait closes the pipe: let the reader drain it first
		err := cmd.Wait()
		j.mu.Lock()
		j.exited, j.exitErr = true, err
		j.mu.Unlock()
		close(j.done)
	}()
	return j, nil
}

type commandJob struct {
	cmd   *exec.Cmd
	clock Clock
	grace time.Duration
	done  chan struct{} // closed when the process has been waited for
	read  chan struct{} // closed when its standard output is at EOF

	mu      sync.Mutex
	iter    int64
	work    float64
	at      time.Time
	line    int
	bad     error
	exited  bool
	exitErr error
	stopped bool
}

// follow reads the program's output, keeping the latest report.
func (j *commandJob) follow(r io.Reader, pass io.Writer) {
	defer close(j.read)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		iter, work, ok, err := ParseReport(line)
		j.mu.Lock()
		j.line++
		switch {
		case err != nil && j.bad == nil:
			j.bad = fmt.Errorf("output line %d: malformed report %q: %v", j.line, line, err)
		case ok && err == nil:
			j.iter, j.work, j.at = iter, work, j.clock.Now()
		}
		j.mu.Unlock()
		if !ok && pass != nil {
			fmt.Fprintln(pass, line)
		}
	}
	if err := sc.Err(); err != nil {
		j.mu.Lock()
		if j.bad == nil {
			j.bad = fmt.Errorf("reading output: %w", err)
		}
		j.mu.Unlock()
		io.Copy(io.Discard, r) // keep the pipe drained so the program never blocks
	}
}

func (j *commandJob) Progress() (Progress, error) {
	j.mu.Lock()
	p := Progress{Iterations: j.iter, Work: j.work, At: j.at, Exited: j.exited, Err: j.exitErr}
	bad := j.bad
	j.mu.Unlock()
	if bad != nil {
		return p, bad
	}
	if !p.Exited {
		p.PIDs, p.CPUSeconds, p.RSS, p.HasUsage = processTreeUsage(j.cmd.Process.Pid)
	}
	return p, nil
}

func (j *commandJob) Stop() error {
	j.mu.Lock()
	if j.stopped {
		j.mu.Unlock()
		return nil
	}
	j.stopped = true
	j.mu.Unlock()
	select {
	case <-j.done:
		return nil
	default:
	}
	terminate(j.cmd)
	t := time.NewTimer(j.grace)
	defer t.Stop()
	select {
	case <-j.done:
		return nil
	case <-t.C:
	}
	kill(j.cmd)
	<-j.done
	return nil
}
