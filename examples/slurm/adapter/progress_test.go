package adapter

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/elastico/elastico"
)

func TestParseProgress(t *testing.T) {
	at := time.Unix(1_772_366_640, 0)
	tests := []struct {
		text    string
		want    Progress
		wantErr string
	}{
		{text: "412.5 1772366640 3\n", want: Progress{412.5, at, 3}},
		{text: "  1e3\t1772366640.25 1 ", want: Progress{1000, at.Add(250 * time.Millisecond), 1}},
		{text: "0 2026-03-01T12:04:00Z 2", want: Progress{0, time.Date(2026, 3, 1, 12, 4, 0, 0, time.UTC), 2}},
		{text: "", wantErr: "has 0 fields, want 3"},
		{text: "412.5 1772366640", wantErr: "has 2 fields, want 3"},
		{text: "412.5 1772366640 3\n400 1772366700 3\n", wantErr: "has 6 fields, want 3"},
		{text: "fast 1772366640 3", wantErr: `rate is "fast"`},
		{text: "NaN 1772366640 3", wantErr: `rate is "NaN"`},
		{text: "Inf 1772366640 3", wantErr: `rate is "Inf"`},
		{text: "-2 1772366640 3", wantErr: `rate is "-2"`},
		{text: "5 yesterday 3", wantErr: `since is "yesterday"`},
		{text: "5 0 3", wantErr: `since is "0"`},
		{text: "5 -1772366640 3", wantErr: `since is "-1772366640"`},
		{text: "5 1e300 3", wantErr: `since is "1e300"`},
		{text: "5 2026-03-01T12:04:00 3", wantErr: `since is "2026-03-01T12:04:00"`},
		{text: "5 1772366640 0", wantErr: `generation is "0"`},
		{text: "5 1772366640 3.0", wantErr: `generation is "3.0"`},
	}
	for _, tt := range tests {
		t.Run(tt.text, func(t *testing.T) {
			got, err := ParseProgress(tt.text)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("ParseProgress(%q) = %+v, %v; want an error containing %q", tt.text, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got.Rate != tt.want.Rate || !got.Since.Equal(tt.want.Since) || got.Generation != tt.want.Generation {
				t.Errorf("ParseProgress(%q) = %+v, %v; want %+v", tt.text, got, err, tt.want)
			}
		})
	}
	p := Progress{Rate: 87.25, Since: at.Add(1500 * time.Millisecond), Generation: 4}
	if got, err := ParseProgress(p.String()); err != nil || got.Rate != p.Rate || !got.Since.Equal(p.Since) || got.Generation != p.Generation {
		t.Errorf("ParseProgress(%q) = %+v, %v; want %+v", p.String(), got, err, p)
	}
}

// sharing starts a training and an inference job on one GPU and ticks until
// both run and their stints have begun; it returns the harness, the two
// job IDs and when the stints began.
func sharing(t *testing.T) (h *harness, a, b int, stint time.Time) {
	f := newFake(4, 4)
	a = f.submit(trainSpec, true, "")
	b = f.submit(inferSpec, true, "")
	h = newHarness(t, f, startAs(map[string]elastico.Assignment{
		strconv.Itoa(a): {ConfigID: "b128-g1", GPUs: []string{"node1/gpu1"}},
		strconv.Itoa(b): {ConfigID: "kv0.3-s64-g1", GPUs: []string{"node1/gpu1"}},
	}))
	h.a.lookupUID = func(name string) (string, error) {
		switch name {
		case "alice":
			return strconv.Itoa(os.Getuid()), nil
		case "bob":
			return strconv.Itoa(os.Getuid() + 1), nil
		}
		return "", errors.New("unknown user")
	}
	h.tick()
	f.schedule()
	h.now = h.now.Add(5 * time.Second)
	h.tick() // both run: their stints begin
	return h, a, b, h.now
}

func TestProgressBecomesObserved(t *testing.T) {
	h, a, b, stint := sharing(t)
	dir := filepath.Join(h.dir, "progress")
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o777 || fi.Mode()&fs.ModeSticky == 0 {
		t.Errorf("progress dir: %v, %v; want drwxrwxrwt", fi.Mode(), err)
	}
	if got, want := h.envOf(a, 0)["ELASTICO_PROGRESS_FILE"], filepath.Join(dir, strconv.Itoa(a)); got != want {
		t.Errorf("ELASTICO_PROGRESS_FILE = %q, want %q", got, want)
	}
	line := func(rate string, since time.Time, gen string) string {
		return rate + " " + strconv.FormatInt(since.Unix(), 10) + " " + gen + "\n"
	}
	writes := func(text string) func(string) error {
		return func(p string) error { return os.WriteFile(p, []byte(text), 0o644) }
	}
	tests := []struct {
		name    string
		write   func(path string) error // nil: no file
		user    string                  // the job's owner; "" means alice
		want    elastico.Observation
		wantLog string
	}{
		{name: "a window within the stint",
			write: writes(line("90", stint.Add(10*time.Second), "1")),
			want:  elastico.Observation{Rate: 90, Over: 50 * time.Second}},
		{name: "no file: unobserved"},
		{name: "a window begun before the stint",
			write: writes(line("90", stint.Add(-time.Second), "1"))},
		{name: "another launch's report",
			write: writes(line("90", stint.Add(10*time.Second), "2"))},
		{name: "a window begun after the adapter's now",
			write:   writes(line("90", stint.Add(2*time.Minute), "1")),
			wantLog: "later than the adapter's clock"},
		{name: "a line that does not parse",
			write:   writes("90 samples/s\n"),
			wantLog: "has 2 fields, want 3"},
		{name: "a file of another user's",
			write: writes(line("90", stint.Add(10*time.Second), "1")),
			user:  "bob", wantLog: "not by the job's user bob"},
		{name: "a user the adapter's host does not know",
			write: writes(line("90", stint.Add(10*time.Second), "1")),
			user:  "mallory", wantLog: `the job's user \"mallory\": unknown user`},
		{name: "a link",
			write: func(p string) error {
				target := filepath.Join(h.dir, "elsewhere")
				if err := os.WriteFile(target, []byte(line("90", stint.Add(10*time.Second), "1")), 0o644); err != nil {
					return err
				}
				return os.Symlink(target, p)
			},
			wantLog: "is not a regular file"},
		{name: "a file over one line",
			write:   writes(strings.Repeat("9", 300)),
			wantLog: "is over 256 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, a, _, _ := sharing(t)
			path := filepath.Join(h.dir, "progress", strconv.Itoa(a))
			if tt.write != nil {
				if err := tt.write(path); err != nil {
					t.Fatal(err)
				}
			}
			if tt.user != "" {
				h.f.job(a).User = tt.user
			}
			h.now = h.now.Add(time.Minute)
			h.tick()
			st := h.s.states[len(h.s.states)-1]
			for _, j := range st.Jobs {
				want := elastico.Observation{}
				if j.ID == strconv.Itoa(a) {
					want = tt.want
				}
				if j.Observed != want {
					t.Errorf("job %s: Observed = %+v, want %+v", j.ID, j.Observed, want)
				}
			}
			logs := h.logs.String()
			if tt.wantLog != "" && !(strings.Contains(logs, tt.wantLog) && strings.Contains(logs, "job="+strconv.Itoa(a))) {
				t.Errorf("the log does not name job %d and say %q:\n%s", a, tt.wantLog, logs)
			}
			if tt.wantLog == "" && strings.Contains(logs, "progress file ignored") {
				t.Errorf("the log complains:\n%s", logs)
			}
		})
	}

	// A neighbour that leaves ends the stint: the same report no longer
	// counts. The file goes when the job leaves squeue.
	path := filepath.Join(dir, strconv.Itoa(a))
	if err := os.WriteFile(path, []byte(line("90", stint.Add(10*time.Second), "1")), 0o644); err != nil {
		t.Fatal(err)
	}
	h.now = h.now.Add(time.Minute)
	h.tick()
	if got := h.s.states[len(h.s.states)-1].Jobs[0].Observed; got.Rate != 90 {
		t.Fatalf("Observed = %+v before the neighbour leaves, want a rate of 90", got)
	}
	h.f.finish(b)
	h.now = h.now.Add(time.Minute)
	h.tick()
	if got := h.s.states[len(h.s.states)-1].Jobs[0].Observed; got != (elastico.Observation{}) {
		t.Errorf("Observed = %+v after the neighbour left, want none", got)
	}
	h.f.jobs = h.f.jobs[:0]
	h.tick()
	h.tick()
	if _, err := os.Lstat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("progress file of a job gone from squeue: %v, want it removed", err)
	}
}
