package adapter

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/stint"
)

// Config configures an Adapter. Slurm, Scheduler, StateDir and GPUMemory
// are required; every other zero field means the documented default.
type Config struct {
	Slurm     Slurm
	Scheduler elastico.Scheduler
	// StateDir holds the journal (journal.json), the lock and, unless EnvDir
	// and ProgressDir say otherwise, the per-run environment files (env/)
	// and the jobs' progress files (progress/).
	StateDir string
	// EnvDir is where the TaskProlog reads each run's environment; default
	// StateDir/env. Jobs read it as their users: it must be world-readable
	// and, on a multi-node cluster, shared with the compute nodes.
	EnvDir string
	// ProgressDir is where running jobs report their throughput, one file
	// per job named by its ID (see Progress); default StateDir/progress.
	// The adapter makes it writable by every user, sticky like /tmp, and
	// reads only files owned by the job's user. On a multi-node cluster it
	// must be shared with the compute nodes.
	ProgressDir string
	// GPUMemory is every GPU's memory in GiB (Slurm does not know it; at
	// most elastico.MaxGPUMemory, which catches MiB), unless GPUModelMemory
	// gives its model's.
	GPUMemory float64
	// GPUModel is the model of the GPUs of a node whose features name none
	// (see GPUModels); "" lets them run a profile of any model.
	GPUModel string
	// GPUModels maps node features (slurm.conf Features=, AvailableFeatures
	// in scontrol show node) to GPU model names, spelt as profiles spell
	// them (gpu= in a job's comment, Profile.Hardware.GPUModel). Nil: the
	// rule of FeatureModel (gpu_v100 → V100). A node whose features name
	// two models takes no new job, and the log says why.
	GPUModels map[string]string
	// GPUModelMemory is the memory in GiB of each model's GPUs, where it is
	// not GPUMemory.
	GPUModelMemory map[string]float64
	// FamilyDir is where "elastico:@file" comments may point. Empty: such
	// comments are refused (the adapter runs as root and reads no file a
	// user names outside it).
	FamilyDir string
	// RequeueDelay is how long a requeued job stays held before its new run
	// is released (default 2 s). slurmd refuses a credential issued in the
	// same second as the previous run's revocation ("Job credential
	// revoked"), which would end the job FAILED.
	RequeueDelay time.Duration
	// EpochTimeout bounds one Epoch call (default 10 s).
	EpochTimeout time.Duration
	// MaxAttempts is how many times one step may fail before the adapter
	// gives the job up (PhaseFailed) and leaves it to Slurm (default 5).
	MaxAttempts int
	// Logger receives what the adapter does and why; default: discard.
	Logger *slog.Logger
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (c *Config) validate() error {
	switch {
	case c.Slurm == nil:
		return errors.New("adapter: Config.Slurm is nil")
	case c.Scheduler == nil:
		return errors.New("adapter: Config.Scheduler is nil")
	case c.StateDir == "":
		return errors.New("adapter: Config.StateDir is empty")
	case !(c.GPUMemory > 0) || math.IsInf(c.GPUMemory, 0):
		return fmt.Errorf("adapter: Config.GPUMemory is %g, want the GPUs' memory in GiB", c.GPUMemory)
	case c.GPUMemory > elastico.MaxGPUMemory:
		return fmt.Errorf("adapter: Config.GPUMemory is %g, above elastico.MaxGPUMemory (%d): want GiB, not MiB", c.GPUMemory, elastico.MaxGPUMemory)
	case c.RequeueDelay < 0 || c.EpochTimeout < 0 || c.MaxAttempts < 0:
		return errors.New("adapter: Config.RequeueDelay, EpochTimeout and MaxAttempts must not be negative")
	}
	for f, m := range c.GPUModels {
		if m == "" {
			return fmt.Errorf("adapter: Config.GPUModels[%q] is empty, want the GPU model the feature names (or no entry)", f)
		}
	}
	for m, mem := range c.GPUModelMemory {
		if !(mem > 0) || mem > elastico.MaxGPUMemory {
			return fmt.Errorf("adapter: Config.GPUModelMemory[%q] is %g, want GiB in (0, %d]", m, mem, elastico.MaxGPUMemory)
		}
	}
	if c.EnvDir == "" {
		c.EnvDir = filepath.Join(c.StateDir, "env")
	}
	if c.ProgressDir == "" {
		c.ProgressDir = filepath.Join(c.StateDir, "progress")
	}
	// Jobs find their file in their environment, which a TaskProlog can
	// only export unquoted.
	if !filepath.IsAbs(c.ProgressDir) || strings.ContainsAny(c.ProgressDir, " \t\n\r'\"\\$`") {
		return fmt.Errorf("adapter: Config.ProgressDir %q must be an absolute path without blanks, quotes, '\\', '$' or '`'", c.ProgressDir)
	}
	if c.RequeueDelay == 0 {
		c.RequeueDelay = 2 * time.Second
	}
	if c.EpochTimeout == 0 {
		c.EpochTimeout = 10 * time.Second
	}
	if c.MaxAttempts == 0 {
		c.MaxAttempts = 5
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return nil
}

// Adapter runs elastico inside Slurm: on each Tick it reads the queue and
// the nodes, asks the Scheduler for a Plan, and applies it to the jobs that
// opted in.
type Adapter struct {
	cfg  Config
	log  *slog.Logger
	jr   *journal
	lock *os.File
	// said remembers conditions already logged (by key), so that a
	// condition that lasts is logged once, not once per tick.
	said map[string]string
	// missing counts consecutive ticks a journaled job was absent from
	// squeue: one absence is not enough to call it lost.
	missing map[int]int
	// status remembers when each waiting job's AdminComment was last set.
	status map[int]statusMark
	// stints says since when each running job has run as it runs now,
	// beside the neighbours it has now: its progress reports count only
	// from then on (see observe).
	stints stint.Tracker
	// uids caches lookupUID's answers, by user name.
	uids      map[string]uint32
	lookupUID func(name string) (string, error)
}

// New opens (or creates) the state directory, takes its lock and loads the
// journal.
func New(cfg Config) (*Adapter, error) {
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(cfg.StateDir, 0o755); err != nil {
		return nil, fmt.Errorf("adapter: %w", err)
	}
	if err := os.MkdirAll(cfg.EnvDir, 0o755); err != nil {
		return nil, fmt.Errorf("adapter: %w", err)
	}
	if err := os.MkdirAll(cfg.ProgressDir, 0o755); err != nil {
		return nil, fmt.Errorf("adapter: %w", err)
	}
	// Jobs run as their users and write their own files; the sticky bit
	// keeps each user from replacing another's.
	if err := os.Chmod(cfg.ProgressDir, 0o777|fs.ModeSticky); err != nil {
		return nil, fmt.Errorf("adapter: %w", err)
	}
	lock, err := lockDir(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	jr, err := loadJournal(filepath.Join(cfg.StateDir, "journal.json"))
	if err != nil {
		lock.Close()
		return nil, err
	}
	a := &Adapter{cfg: cfg, log: cfg.Logger, jr: jr, lock: lock, said: map[string]string{}, missing: map[int]int{}, status: map[int]statusMark{},
		uids: map[string]uint32{}, lookupUID: lookupUID}
	n := 0
	for _, r := range jr.jobs {
		if r.active() {
			n++
		}
	}
	a.log.Info("adapter started", "state", cfg.StateDir, "journaled_jobs", len(jr.jobs), "active", n)
	return a, nil
}

// Close releases the state directory's lock.
func (a *Adapter) Close() error { return a.lock.Close() }

// Records returns a copy of the journal's records, by Slurm job ID.
func (a *Adapter) Records() []Record {
	out := make([]Record, 0, len(a.jr.jobs))
	for _, r := range a.jr.jobs {
		c := *r
		c.GPUs = slices.Clone(r.GPUs)
		c.Env = slices.Clone(r.Env)
		c.Nodes = slices.Clone(r.Nodes)
		c.NodeEnv = make([][]string, len(r.NodeEnv))
		for k, e := range r.NodeEnv {
			c.NodeEnv[k] = slices.Clone(e)
		}
		if r.NodeEnv == nil {
			c.NodeEnv = nil
		}
		c.Launches = slices.Clone(r.Launches)
		out = append(out, c)
	}
	slices.SortFunc(out, func(x, y Record) int { return x.SlurmID - y.SlurmID })
	return out
}

// Report is what one Tick did.
type Report struct {
	// Plan is the Scheduler's plan; nil when no opted-in job was there to
	// plan for.
	Plan *elastico.Plan
	// Actions are the plan's actions with what became of each.
	Actions []Applied
	// Unparsed lists the opted-in jobs whose comment does not parse: they
	// are left to Slurm (held, untouched) and named in the log.
	Unparsed []int
}

// Applied is one of the Plan's actions and its outcome.
type Applied struct {
	Action elastico.Action
	// Outcome is "applied", or "deferred: why" (retried on a later tick,
	// the job stays held), or "declined: why" (Slurm cannot do it).
	Outcome string
}

// Run calls Tick every interval until ctx is done. A failed tick (slurmctld
// down, say) is logged and retried at the next one.
func (a *Adapter) Run(ctx context.Context, every time.Duration) error {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if _, err := a.Tick(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			a.log.Warn("tick failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// sayOnce logs msg at level for key unless the same message was the last
// one logged for key.
func (a *Adapter) sayOnce(level slog.Level, key, msg string, args ...any) {
	text := msg + fmt.Sprint(args...)
	if a.said[key] == text {
		return
	}
	a.said[key] = text
	a.log.Log(context.Background(), level, msg, args...)
}

func (a *Adapter) save() error { return a.jr.save() }

// candidate is an opted-in, held job the adapter has not started.
type candidate struct {
	sj   *Job
	spec *Spec
	text string
}

// Tick runs one cycle: reconcile the journal with Slurm, plan, apply.
func (a *Adapter) Tick(ctx context.Context) (*Report, error) {
	now := a.cfg.Now()
	jobs, err := a.cfg.Slurm.Jobs(ctx)
	if err != nil {
		return nil, err
	}
	nodes, err := a.cfg.Slurm.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	byID := make(map[int]*Job, len(jobs))
	for i := range jobs {
		byID[jobs[i].ID] = &jobs[i]
	}
	rep := &Report{}

	// 1. Bring every journaled job forward from where Slurm says it is.
	ids := make([]int, 0, len(a.jr.jobs))
	for id := range a.jr.jobs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		r := a.jr.jobs[id]
		sj := byID[id]
		if sj != nil && !r.same(sj) {
			sj = nil // slurmctld gave the ID to another job
		}
		if sj != nil && sj.Submit != r.Submit {
			r.Submit = sj.Submit // requeued
		}
		if sj == nil {
			a.missing[id]++
		} else {
			delete(a.missing, id)
		}
		if sj == nil {
			if a.missing[id] < 2 {
				continue // one absence is not enough: slurmctld may be starting
			}
			if r.active() {
				a.log.Error("job vanished from slurmctld (lost by a controller crash?)", "job", id, "phase", r.Phase, "gen", r.Gen, "config", r.ConfigID)
			}
			delete(a.jr.jobs, id)
			delete(a.missing, id)
			removeEnv(a.cfg.EnvDir, id)
			os.Remove(progressFile(a.cfg.ProgressDir, id))
			if err := a.save(); err != nil {
				return rep, err
			}
			continue
		}
		if !r.active() {
			continue
		}
		if sj.Done() {
			a.settle(r, sj, "the job ended ("+sj.State+") before the adapter saw the run running")
			r.Phase, r.End = PhaseDone, sj.State
			a.log.Info("job ended", "job", id, "state", sj.State, "runs", sj.Restarts+1, "config", r.ConfigID, "gen", r.Gen)
			if err := a.save(); err != nil {
				return rep, err
			}
			continue
		}
		if err := a.converge(ctx, r, sj, now); err != nil {
			return rep, err
		}
	}

	a.forget(byID)

	// 2. Sort the other jobs: opted-in candidates, and everyone else, whose
	// GPUs are out of elastico's reach.
	inv, notes := buildInventory(nodes, &gpuModels{features: a.cfg.GPUModels, fallback: a.cfg.GPUModel, memory: a.cfg.GPUModelMemory, defMem: a.cfg.GPUMemory})
	for _, n := range notes {
		a.sayOnce(slog.LevelWarn, "node:"+n, "node not used", "why", n)
	}
	order := make([]*Job, 0, len(jobs))
	for i := range jobs {
		order = append(order, &jobs[i])
	}
	slices.SortFunc(order, func(x, y *Job) int {
		if x.Submit != y.Submit {
			return int(x.Submit - y.Submit)
		}
		return x.ID - y.ID
	})
	var cands []candidate
	for _, sj := range order {
		if sj.Done() {
			continue
		}
		if r := a.jr.jobs[sj.ID]; r != nil && r.same(sj) {
			if r.active() {
				// Its GPUs are the adapter's, even while a start or a
				// relaunch is under way and Slurm holds nothing yet.
				inv.holdRecord(r, 1)
			} else if sj.Holds() {
				inv.holdForeign(sj)
			}
			continue
		}
		if !strings.HasPrefix(sj.Comment, Prefix) {
			switch {
			case sj.Holds():
				inv.holdForeign(sj)
			case sj.State == "PENDING" && !sj.Held():
				inv.reserveForeign(sj)
			}
			continue
		}
		key := "job:" + strconv.Itoa(sj.ID)
		if sj.State != "PENDING" {
			if sj.Holds() {
				inv.holdForeign(sj)
			}
			a.sayOnce(slog.LevelWarn, key, "opted-in job runs outside the adapter (released by hand?): left alone", "job", sj.ID, "state", sj.State)
			continue
		}
		if sj.TresPerNode != "" {
			a.sayOnce(slog.LevelWarn, key, "opted-in job asked for GRES itself: left to Slurm (submit it with no --gres/--gpus)", "job", sj.ID, "gres", sj.TresPerNode)
			continue
		}
		spec, text, err := a.spec(sj.Comment)
		if err != nil {
			rep.Unparsed = append(rep.Unparsed, sj.ID)
			a.sayOnce(slog.LevelWarn, key, "comment does not parse: job left to Slurm", "job", sj.ID, "name", sj.Name, "user", sj.User, "err", err)
			continue
		}
		if !sj.Held() {
			// Submitted without --hold: hold it before Slurm starts it
			// with no GPU.
			if err := a.cfg.Slurm.Hold(ctx, sj.ID); err != nil {
				a.sayOnce(slog.LevelWarn, key, "could not hold opted-in job", "job", sj.ID, "err", err)
				continue
			}
			a.log.Info("held opted-in job submitted without --hold", "job", sj.ID)
		}
		delete(a.said, key)
		cands = append(cands, candidate{sj: sj, spec: spec, text: text})
	}

	// A node whose GRES slurmd has not registered again since a restart of
	// slurmctld shows no shards: a plan made now would see the adapter's
	// own shared GPUs as unshared. Wait for it.
	for _, n := range inv.nodes {
		if !n.registering {
			continue
		}
		for _, s := range n.gpus {
			if s.ours {
				a.sayOnce(slog.LevelInfo, "registering", "waiting for slurmd to register its GRES again before planning", "node", n.name)
				return rep, a.save()
			}
		}
	}
	delete(a.said, "registering")

	// 3. The State.
	state := &elastico.State{Now: now, Cluster: inv.cluster(), Carry: a.jr.carry}
	widest := inv.widest()
	gpuIn := state.Cluster.Index()
	for _, id := range ids {
		r := a.jr.jobs[id]
		if r == nil || !r.active() {
			continue
		}
		spec, err := ParseSpec(r.Spec)
		if err != nil {
			return rep, fmt.Errorf("adapter: job %d: journaled spec: %w", id, err)
		}
		j := spec.Job(strconv.Itoa(id))
		// A job that runs on several nodes stays allowed to, whatever
		// the cluster has become.
		j.Spread = j.Spread || len(r.nodes()) > 1 || spec.wider(widest)
		j.Running = &elastico.Assignment{ConfigID: r.ConfigID, GPUs: slices.Clone(r.GPUs)}
		j.Arrival = time.Unix(r.Arrival, 0)
		ok := true
		for _, g := range r.GPUs {
			if _, in := gpuIn[g]; !in {
				ok = false
			}
		}
		if !ok {
			a.sayOnce(slog.LevelWarn, "gone:"+strconv.Itoa(id), "running job's node is not in sinfo: job left out of the plan", "job", id, "gpus", r.GPUs)
			continue
		}
		state.Jobs = append(state.Jobs, j)
	}
	pending := map[string]candidate{}
	for _, c := range cands {
		j := c.spec.Job(strconv.Itoa(c.sj.ID))
		if !j.Spread && c.spec.wider(widest) {
			// No node holds one of its configurations: it asked for
			// several nodes in all but name.
			j.Spread = true
			a.sayOnce(slog.LevelInfo, "wide:"+j.ID, "a configuration needs more GPUs than any node has: the job may run on several nodes", "job", j.ID, "gpus_per_node", widest)
		}
		j.Arrival = time.Unix(c.sj.Submit, 0)
		state.Jobs = append(state.Jobs, j)
		pending[j.ID] = c
	}
	for {
		err := state.Validate()
		if err == nil {
			break
		}
		var ve *elastico.ValidationError
		if !errors.As(err, &ve) || ve.Kind != "job" || ve.ID == "" {
			return rep, fmt.Errorf("adapter: the cluster as read from Slurm: %w", err)
		}
		k := slices.IndexFunc(state.Jobs, func(j elastico.Job) bool { return j.ID == ve.ID })
		if k < 0 {
			return rep, fmt.Errorf("adapter: %w", err)
		}
		a.sayOnce(slog.LevelWarn, "plan:"+ve.ID, "job left out of the plan", "job", ve.ID, "err", err)
		state.Jobs = slices.Delete(state.Jobs, k, k+1)
		delete(pending, ve.ID)
	}
	if len(state.Jobs) == 0 {
		return rep, nil
	}
	a.observe(state, byID)

	// 4. Plan and apply.
	ectx, cancel := context.WithTimeout(ctx, a.cfg.EpochTimeout)
	plan, err := a.cfg.Scheduler.Epoch(ectx, state)
	cancel()
	if err != nil {
		return rep, fmt.Errorf("adapter: epoch: %w", err)
	}
	rep.Plan = plan
	a.log.Debug("epoch", "jobs", len(state.Jobs), "gpus", state.Cluster.NumGPUs(), "actions", len(plan.Actions), "took", plan.Stats.Total)
	a.jr.carry = plan.Carry
	if err := a.apply(ctx, plan, state, inv, pending, byID, rep, now); err != nil {
		return rep, err
	}
	return rep, a.save()
}

// forget drops what the adapter remembers about jobs slurmctld no longer
// lists, so that a daemon that runs for months does not grow.
func (a *Adapter) forget(byID map[int]*Job) {
	for k := range a.said {
		if i := strings.LastIndexByte(k, ':'); i >= 0 {
			if id, err := strconv.Atoi(k[i+1:]); err == nil && byID[id] == nil {
				delete(a.said, k)
			}
		}
	}
	for id := range a.status {
		if byID[id] == nil {
			delete(a.status, id)
		}
	}
}

// spec resolves and parses an opted-in comment; text is the spec itself
// (the family file's content for "elastico:@file").
func (a *Adapter) spec(comment string) (*Spec, string, error) {
	body := strings.TrimSpace(strings.TrimPrefix(comment, Prefix))
	text := body
	if name, ok := strings.CutPrefix(body, "@"); ok {
		t, err := a.readFamily(strings.TrimSpace(name))
		if err != nil {
			return nil, "", err
		}
		text = t
	}
	s, err := ParseSpec(text)
	return s, text, err
}

// readFamily reads a family file under FamilyDir.
func (a *Adapter) readFamily(name string) (string, error) {
	if a.cfg.FamilyDir == "" {
		return "", fmt.Errorf("adapter: family file %q: this adapter has no family directory (-families)", name)
	}
	root, err := filepath.EvalSymlinks(a.cfg.FamilyDir)
	if err != nil {
		return "", fmt.Errorf("adapter: family directory: %w", err)
	}
	p := name
	if !filepath.IsAbs(p) {
		p = filepath.Join(root, p)
	}
	p, err = filepath.EvalSymlinks(filepath.Clean(p))
	if err != nil {
		return "", fmt.Errorf("adapter: family file %q: %w", name, err)
	}
	if rel, err := filepath.Rel(root, p); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", fmt.Errorf("adapter: family file %q is outside the family directory %s", name, a.cfg.FamilyDir)
	}
	f, err := os.Open(p)
	if err != nil {
		return "", fmt.Errorf("adapter: family file %q: %w", name, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 1<<20+1))
	if err != nil {
		return "", fmt.Errorf("adapter: family file %q: %w", name, err)
	}
	if len(b) > 1<<20 {
		return "", fmt.Errorf("adapter: family file %q is over 1 MiB", name)
	}
	return string(b), nil
}
