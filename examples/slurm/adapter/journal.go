package adapter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/atomicfile"
)

// Phase is where a managed job is in the adapter's state machine. Every
// transition is written to the journal before the Slurm command that
// carries it out, and every step checks Slurm's state before acting, so a
// restart of the adapter (or of slurmctld) repeats no step and skips none.
type Phase string

const (
	// PhaseStart: the job is held; the adapter is to set its GRES (once:
	// Slurm merges later GRES updates into the job's list) and release it.
	PhaseStart Phase = "start"
	// PhaseLaunched: released; the job runs or is about to.
	PhaseLaunched Phase = "launched"
	// PhaseRequeue: to be stopped with requeuehold for a reconfiguration.
	PhaseRequeue Phase = "requeue"
	// PhaseRelaunch: stopped; to be released under its new configuration
	// once RequeueDelay has passed since the requeue (slurmd refuses a
	// job credential issued within the second of the revocation).
	PhaseRelaunch Phase = "relaunch"
	// PhaseDone: the job ended (Record.End says how).
	PhaseDone Phase = "done"
	// PhaseFailed: Slurm refused a step three times; the adapter stopped
	// touching the job (Record.Error says why).
	PhaseFailed Phase = "failed"
)

// Record is the adapter's memory of one job it manages.
type Record struct {
	SlurmID int
	// Submit, User and Name tell the job from another that got its ID
	// (slurmctld gives the ID of a job it lost to the next one). A requeue
	// moves a job's submit time forward: Submit follows it.
	Submit int64
	User   string
	Name   string
	// Arrival is the submit time before any requeue: the job's arrival.
	Arrival int64
	// Spec is the job's spec text, frozen at its first start, so that an
	// edited comment or family file cannot pull a running job's
	// configuration out of its family.
	Spec  string
	Phase Phase
	// Gen counts the launches the adapter ordered (1: the first start).
	Gen      int
	ConfigID string
	GPUs     []string // elastico GPU IDs, in the order of the assignment
	IDX      []int    // their device indices on their nodes (the GRES types' natural order)
	Node     string   // the job's first node (its only one, unless Nodes says more)
	// Nodes are the nodes of a job that spans several, in node-rank order
	// (Node is Nodes[0]); empty for a one-node job.
	Nodes []string `json:",omitempty"`
	Kind  string   // "gpu" (whole GPUs) or "shard"
	Gres  string   // exactly what scontrol update Gres= was given: per node, the same on each
	CPUs  int      // the job's CPUs (NumCPUs=), split evenly over its nodes
	// Env is the run's environment: all of it for a one-node job; the part
	// every node shares for a job on several, and NodeEnv[k] the rest for
	// Nodes[k].
	Env     []string
	NodeEnv [][]string `json:",omitempty"`
	// RestartBase is the job's restart count when the requeue was decided.
	RestartBase int
	// RequeuedAt is when the run was stopped for a relaunch; zero when the
	// job was held before it started (no run to stop).
	RequeuedAt time.Time
	Attempts   int
	Error      string
	End        string
	Launches   []Launch
}

// Launch is one launch the adapter ordered, kept for audit.
type Launch struct {
	Gen      int
	Run      int // the job's restart count for this run (SLURM_RESTART_COUNT)
	ConfigID string
	GPUs     []string
	Gres     string
	At       time.Time
	// Placed is "" until the run is seen running, then "ok", or what was
	// wrong when Slurm put it on other devices than the GRES named (seen
	// once, on a shard job scheduled right after a slurmctld restart):
	// "misplaced: ...". A run the adapter loses sight of before it is seen
	// running (requeued for a reconfiguration the tick after its start, or
	// ended while the adapter was down) is checked as it is requeued, from
	// the devices Slurm still reports, or else marked "unverified: why".
	// Only the last launch of a job that still runs may have "".
	Placed string
}

// same reports whether sj is the job of the record: the same submit time,
// or a later one after a requeue (a restart count above zero) with the same
// user and name. A new job that got a lost job's ID has not been requeued.
func (r *Record) same(sj *Job) bool {
	switch {
	case sj == nil || sj.ID != r.SlurmID:
		return false
	case sj.Submit == r.Submit:
		return true
	}
	return sj.Restarts > 0 && sj.Submit > r.Submit && sj.User == r.User && sj.Name == r.Name
}

// nodes returns the job's nodes, in node-rank order.
func (r *Record) nodes() []string {
	if len(r.Nodes) > 0 {
		return r.Nodes
	}
	if r.Node == "" {
		return nil
	}
	return []string{r.Node}
}

// active reports whether the adapter still drives the job.
func (r *Record) active() bool { return r.Phase != PhaseDone && r.Phase != PhaseFailed }

const journalVersion = 1

type journalFile struct {
	Version int
	Jobs    []*Record
	Carry   elastico.Carry
}

// journal is the adapter's durable state: one JSON file, rewritten whole and
// atomically (temp file, fsync, rename, fsync of the directory) on every
// change.
type journal struct {
	path  string
	jobs  map[int]*Record
	carry elastico.Carry
	last  []byte // what the file holds: an unchanged journal is not rewritten
}

func loadJournal(path string) (*journal, error) {
	j := &journal{path: path, jobs: map[int]*Record{}}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return j, nil
	}
	if err != nil {
		return nil, fmt.Errorf("adapter: journal %s: %w", path, err)
	}
	var f journalFile
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("adapter: journal %s is corrupt (%v): move it away only if no job it lists is running", path, err)
	}
	if f.Version != journalVersion {
		return nil, fmt.Errorf("adapter: journal %s: version %d, want %d", path, f.Version, journalVersion)
	}
	for i, r := range f.Jobs {
		if r == nil || r.SlurmID <= 0 {
			return nil, fmt.Errorf("adapter: journal %s: Jobs[%d]: no SlurmID", path, i)
		}
		if j.jobs[r.SlurmID] != nil {
			return nil, fmt.Errorf("adapter: journal %s: job %d is listed twice", path, r.SlurmID)
		}
		j.jobs[r.SlurmID] = r
	}
	j.carry = f.Carry
	j.last = b
	return j, nil
}

func (j *journal) save() error {
	f := journalFile{Version: journalVersion, Carry: j.carry}
	for _, r := range j.jobs {
		f.Jobs = append(f.Jobs, r)
	}
	slices.SortFunc(f.Jobs, func(a, b *Record) int { return a.SlurmID - b.SlurmID })
	b, err := json.MarshalIndent(&f, "", " ")
	if err != nil {
		return fmt.Errorf("adapter: journal: %w", err)
	}
	b = append(b, '\n')
	if bytes.Equal(b, j.last) {
		return nil
	}
	if err := writeAtomic(j.path, b, 0o600); err != nil {
		return err
	}
	j.last = b
	return nil
}

// writeAtomic is atomicfile.Write with the adapter's error prefix.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	if err := atomicfile.Write(path, data, mode); err != nil {
		return fmt.Errorf("adapter: writing %s: %w", path, err)
	}
	return nil
}
