package adapter

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/elastico/elastico"
)

// Progress is what a running job reports of its own throughput, in its
// progress file (ProgressDir/<job ID>, ELASTICO_PROGRESS_FILE in the job):
// the rate it measured from Since until it wrote the file, under the launch
// of Generation (its ELASTICO_GENERATION).
type Progress struct {
	// Rate is in the unit of the job's profiles (samples/s for training,
	// tokens/s or requests/s for inference): a finite number ≥ 0.
	Rate float64
	// Since is when the measurement began.
	Since time.Time
	// Generation is the launch the job ran under while it measured.
	Generation int
}

// maxProgress bounds what the adapter reads of a progress file: one line.
const maxProgress = 256

// ParseProgress reads a progress file: one line of three fields separated
// by blanks, "<rate> <since> <generation>", where since is Unix seconds
// ("1772366640", "1772366640.25") or an RFC 3339 time
// ("2026-03-01T12:04:00Z"). Errors name the field.
func ParseProgress(text string) (Progress, error) {
	var p Progress
	f := strings.Fields(text)
	if len(f) != 3 {
		return p, fmt.Errorf("has %d fields, want 3: \"<rate> <since> <generation>\"", len(f))
	}
	var err error
	p.Rate, err = strconv.ParseFloat(f[0], 64)
	if err != nil || math.IsNaN(p.Rate) || math.IsInf(p.Rate, 0) || p.Rate < 0 {
		return p, fmt.Errorf("rate is %q, want a throughput ≥ 0 in the job's unit", f[0])
	}
	if p.Since, err = parseSince(f[1]); err != nil {
		return p, err
	}
	if p.Generation, err = strconv.Atoi(f[2]); err != nil || p.Generation < 1 {
		return p, fmt.Errorf("generation is %q, want the job's ELASTICO_GENERATION (≥ 1)", f[2])
	}
	return p, nil
}

func parseSince(s string) (time.Time, error) {
	if secs, err := strconv.ParseFloat(s, 64); err == nil {
		if !(secs > 0) || secs > 1<<40 { // NaN, before 1970, or past year 36000
			return time.Time{}, fmt.Errorf("since is %q, want Unix seconds or an RFC 3339 time", s)
		}
		whole, frac := math.Modf(secs)
		return time.Unix(int64(whole), int64(frac*1e9)), nil
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("since is %q, want Unix seconds or an RFC 3339 time", s)
	}
	return t, nil
}

// String is the line a job writes (Unix seconds to the millisecond).
func (p Progress) String() string {
	return fmt.Sprintf("%s %.3f %d\n", strconv.FormatFloat(p.Rate, 'g', -1, 64), float64(p.Since.UnixMilli())/1e3, p.Generation)
}

func progressFile(dir string, job int) string {
	return filepath.Join(dir, strconv.Itoa(job))
}

// observe updates the stints (package stint) with the State and sets
// Job.Observed of every job that runs as its record says (launched, and
// RUNNING in squeue) and whose progress file reports a rate of its present
// generation measured since the adapter last saw the job's generation,
// configuration, GPUs or GPU neighbours change. A file that cannot be
// trusted or parsed is named in the log once and ignored; a job without
// one is planned unobserved.
func (a *Adapter) observe(state *elastico.State, byID map[int]*Job) {
	a.stints.Update(state, func(j *elastico.Job) string {
		if id, err := strconv.Atoi(j.ID); err == nil && a.jr.jobs[id] != nil {
			return strconv.Itoa(a.jr.jobs[id].Gen)
		}
		return ""
	})
	for i := range state.Jobs {
		j := &state.Jobs[i]
		id, err := strconv.Atoi(j.ID)
		r, sj := a.jr.jobs[id], byID[id]
		if err != nil || j.Running == nil || r == nil || sj == nil || r.Phase != PhaseLaunched || sj.State != "RUNNING" {
			continue
		}
		key := "progress:" + j.ID
		path := progressFile(a.cfg.ProgressDir, id)
		p, ok, err := a.readProgress(path, sj.User)
		switch {
		case err != nil:
			a.sayOnce(slog.LevelWarn, key, "progress file ignored", "job", id, "file", path, "err", err)
			continue
		case !ok || p.Generation != r.Gen:
			continue // none, or a report of an earlier launch
		case p.Since.After(state.Now):
			a.sayOnce(slog.LevelWarn, key, "progress file ignored: its since is later than the adapter's clock (are the node's and the adapter's clocks apart?)", "job", id, "file", path)
			continue
		}
		delete(a.said, key)
		if o, ok := a.stints.Observation(j.ID, state.Now, p.Rate, p.Since); ok {
			j.Observed = o
		}
	}
}

// readProgress reads a job's progress file, if there is one, as root would
// read a file in a directory every user may write: only a regular file
// owned by the job's user, and at most one line of it.
func (a *Adapter) readProgress(path, owner string) (Progress, bool, error) {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Progress{}, false, nil
	}
	if err != nil {
		return Progress{}, false, err
	}
	if !fi.Mode().IsRegular() {
		return Progress{}, false, fmt.Errorf("is not a regular file (%v)", fi.Mode().Type())
	}
	f, err := os.Open(path)
	if err != nil {
		return Progress{}, false, err
	}
	defer f.Close()
	// The file opened is the one looked at: not a link put in its place
	// between the two.
	if ofi, err := f.Stat(); err != nil || !os.SameFile(fi, ofi) {
		return Progress{}, false, errors.New("was replaced while it was read")
	}
	if err := a.ownedBy(fi, owner); err != nil {
		return Progress{}, false, err
	}
	b, err := io.ReadAll(io.LimitReader(f, maxProgress+1))
	if err != nil {
		return Progress{}, false, err
	}
	if len(b) > maxProgress {
		return Progress{}, false, fmt.Errorf("is over %d bytes, want one line", maxProgress)
	}
	p, err := ParseProgress(string(b))
	return p, err == nil, err
}

// ownedBy checks that fi belongs to the user name: in a directory every
// user may write, another user could otherwise report for the job.
func (a *Adapter) ownedBy(fi fs.FileInfo, name string) error {
	uid, ok := fileOwner(fi)
	if !ok {
		return errors.New("its owner cannot be read on this system")
	}
	want, ok := a.uids[name]
	if !ok {
		s, err := a.lookupUID(name)
		if err != nil {
			return fmt.Errorf("the job's user %q: %w", name, err)
		}
		n, err := strconv.ParseUint(s, 10, 32)
		if err != nil {
			return fmt.Errorf("the job's user %q has uid %q", name, s)
		}
		want = uint32(n)
		a.uids[name] = want
	}
	if uid != want {
		return fmt.Errorf("is owned by uid %d, not by the job's user %s (uid %d)", uid, name, want)
	}
	return nil
}

// lookupUID is user.Lookup's uid; tests replace it.
func lookupUID(name string) (string, error) {
	u, err := user.Lookup(name)
	if err != nil {
		return "", err
	}
	return u.Uid, nil
}
