package adapter

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/sets"
	"github.com/elastico/elastico/rst"
)

// apply carries out the plan's actions that Slurm can carry out, in the
// plan's order, and tells waiting jobs why they wait.
func (a *Adapter) apply(ctx context.Context, plan *elastico.Plan, state *elastico.State, inv *inventory, pending map[string]candidate, byID map[int]*Job, rep *Report, now time.Time) error {
	jobs := make(map[string]*elastico.Job, len(state.Jobs))
	for i := range state.Jobs {
		jobs[state.Jobs[i].ID] = &state.Jobs[i]
	}
	waiting := map[string]string{} // job → why it waits, for its AdminComment
	for _, act := range plan.Actions {
		var out string
		var err error
		j := jobs[act.JobID]
		switch {
		case j == nil:
			out = "declined: the job is not in the State"
		case act.Kind == elastico.Start:
			out, err = a.start(ctx, act, j, pending[act.JobID], inv, now)
		case act.Kind == elastico.Reconfigure, act.Kind == elastico.Migrate:
			out, err = a.reconfigure(ctx, act, j, inv, byID, now)
		case act.Kind == elastico.Preempt:
			// Slurm binds a job's GPUs at its first start (a GRES update is
			// merged into the job's list, never replaces it), so a stopped
			// job could only come back on the same GPUs: stopping it would
			// free nothing for long. It keeps running.
			out = "declined: a Slurm job keeps its GPUs until it ends; it keeps running"
		default:
			out = "declined: unknown action kind " + act.Kind.String()
		}
		if err != nil {
			return err
		}
		rep.Actions = append(rep.Actions, Applied{Action: act, Outcome: out})
		key := "act:" + act.JobID
		if out == "applied" {
			delete(a.said, key)
			a.log.Info("applied", "action", act.String())
		} else {
			a.sayOnce(slog.LevelInfo, key, "not applied", "action", act.String(), "outcome", out)
			if _, ok := pending[act.JobID]; ok && act.Kind == elastico.Start {
				waiting[act.JobID] = "start " + out
			}
		}
	}
	// Waiting jobs learn why in their AdminComment (scontrol show job).
	for _, d := range plan.Decisions {
		c, ok := pending[d.JobID]
		if !ok || a.jr.jobs[c.sj.ID] != nil {
			continue
		}
		why, kind := waiting[d.JobID], "deferred"
		if why == "" {
			if d.Assignment != nil {
				continue
			}
			why, kind = d.Status.String(), d.Status.Code.String()
		}
		text := truncate("elastico: waiting: "+why, 500)
		if c.sj.AdminComment == text {
			continue
		}
		// The reasons carry prices that move every epoch: rewrite the
		// comment when the kind of wait changes, else once a StatusEvery,
		// not on every tick (each update is a slurmctld state save).
		last := a.status[c.sj.ID]
		if last.kind == kind && now.Sub(last.at) < StatusEvery {
			continue
		}
		if err := a.cfg.Slurm.Update(ctx, c.sj.ID, "AdminComment="+text); err != nil {
			a.sayOnce(slog.LevelWarn, "status:"+d.JobID, "could not set AdminComment", "job", d.JobID, "err", err)
			continue
		}
		a.status[c.sj.ID] = statusMark{kind: kind, at: now}
	}
	return nil
}

// StatusEvery is the least time between two rewrites of a waiting job's
// AdminComment for the same kind of wait.
const StatusEvery = 30 * time.Second

type statusMark struct {
	kind string
	at   time.Time
}

// start launches a held job on the GPUs the plan chose.
func (a *Adapter) start(ctx context.Context, act elastico.Action, j *elastico.Job, c candidate, inv *inventory, now time.Time) (string, error) {
	if c.sj == nil {
		return "declined: the job is not a held, opted-in job waiting for a start", nil
	}
	if a.jr.jobs[c.sj.ID] != nil {
		return "declined: the adapter already drives the job", nil
	}
	if act.To == nil {
		return "declined: start without an assignment", nil
	}
	p, ok := j.Profile(act.To.ConfigID)
	if !ok {
		return fmt.Sprintf("declined: configuration %q is not in the job's family", act.To.ConfigID), nil
	}
	slots, kind, shards, why := a.request(act.To.GPUs, p, inv, nil, 0)
	if why != "" {
		return "deferred: " + why, nil
	}
	r := &Record{
		SlurmID:  c.sj.ID,
		Submit:   c.sj.Submit,
		Arrival:  c.sj.Submit,
		User:     c.sj.User,
		Name:     c.sj.Name,
		Spec:     c.text,
		Phase:    PhaseStart,
		Gen:      1,
		ConfigID: p.Config.ID,
		GPUs:     slices.Clone(act.To.GPUs),
		Node:     slots[0].Node,
		Kind:     kind,
		Gres:     gresFor(slots, kind, shards),
		CPUs:     cpusFor(p),
		IDX:      ordinals(slots),
	}
	r.Env = a.env(r, j, p, act.Launch, slots, shards)
	a.jr.jobs[r.SlurmID] = r
	if err := a.save(); err != nil { // write-ahead: the intent is durable before Slurm hears of it
		return "", err
	}
	gs, _ := ParseGres(r.Gres)
	inv.hold(r.Node, gs, true)
	if n := inv.node(r.Node); n != nil {
		n.ours += float64(r.CPUs)
	}
	delete(a.status, c.sj.ID)
	return "applied", a.converge(ctx, r, c.sj, now)
}

// reconfigure restarts a running job under a new configuration on the same
// GPUs (requeuehold, then a release with the new shard counts and
// environment). A migration to other GPUs is declined: Slurm cannot take
// GPUs away from a job.
func (a *Adapter) reconfigure(ctx context.Context, act elastico.Action, j *elastico.Job, inv *inventory, byID map[int]*Job, now time.Time) (string, error) {
	id, _ := strconv.Atoi(act.JobID)
	r := a.jr.jobs[id]
	if r == nil || !r.active() {
		return "declined: the adapter does not drive the job", nil
	}
	if act.To == nil {
		return "declined: no target assignment", nil
	}
	// A GRES update is merged into the job's list: GPUs can be added to a
	// job (growing in place) but never taken away from it.
	if !sets.Subset(r.GPUs, act.To.GPUs) {
		return "declined: a Slurm job keeps the GPUs it started on (GRES updates merge); moving or shrinking it needs a new job", nil
	}
	if r.Phase != PhaseLaunched {
		return "deferred: a launch of the job is under way (" + string(r.Phase) + ")", nil
	}
	if act.To.ConfigID == r.ConfigID {
		return "applied", nil // nothing to change
	}
	p, ok := j.Profile(act.To.ConfigID)
	if !ok {
		return fmt.Sprintf("declined: configuration %q is not in the job's family", act.To.ConfigID), nil
	}
	// The job's own shards are freed by its requeue: take them off before
	// checking the new counts.
	old, _ := ParseGres(r.Gres)
	for _, g := range old {
		if s := inv.gpus[r.Node+"/"+g.Type]; s != nil && g.Name == "shard" {
			s.used -= g.Count
		} else if s != nil && g.Name == "gpu" {
			s.whole--
		}
	}
	slots, kind, shards, why := a.request(act.To.GPUs, p, inv, &r.Kind, r.CPUs)
	if why != "" {
		inv.hold(r.Node, old, true)
		return "deferred: " + why, nil
	}
	sj := byID[id]
	if !r.same(sj) || sj.Done() {
		inv.hold(r.Node, old, true)
		return "declined: the job has ended", nil
	}
	r.Gen++
	r.ConfigID = p.Config.ID
	r.GPUs = slices.Clone(act.To.GPUs)
	r.IDX = ordinals(slots)
	r.Kind = kind
	r.Gres = gresFor(slots, kind, shards)
	if n := inv.node(r.Node); n != nil {
		n.ours += float64(cpusFor(p) - r.CPUs)
	}
	r.CPUs = cpusFor(p)
	r.Env = a.env(r, j, p, act.Launch, slots, shards)
	r.Phase = PhaseRequeue
	r.RestartBase = sj.Restarts
	r.Attempts, r.Error = 0, ""
	if err := a.save(); err != nil {
		return "", err
	}
	gs, _ := ParseGres(r.Gres)
	inv.hold(r.Node, gs, true)
	return "applied", a.converge(ctx, r, sj, now)
}

// request turns an assignment into what Slurm is asked for: the GPUs, the
// GRES kind (shard on GPUs that have shards, whole GPUs otherwise) and the
// shards per GPU. It returns why not when the request must not be
// released: a GPU unknown, on another node, of the other kind, or unable to
// hold it now. keepKind, if set, is the kind the job already has.
// own is the CPUs the job itself holds now (a reconfiguration frees them).
func (a *Adapter) request(gpus []string, p *elastico.Profile, inv *inventory, keepKind *string, own int) ([]*gpuSlot, string, []int, string) {
	if len(gpus) == 0 || len(gpus) != p.Demand.GPUs {
		return nil, "", nil, fmt.Sprintf("assignment has %d GPUs, configuration %s needs %d", len(gpus), p.Config.ID, p.Demand.GPUs)
	}
	slots := make([]*gpuSlot, len(gpus))
	sharded := 0
	for i, g := range gpus {
		s := inv.gpus[g]
		if s == nil {
			return nil, "", nil, fmt.Sprintf("GPU %s is not a GPU Slurm reports", g)
		}
		if i > 0 && s.Node != slots[0].Node {
			return nil, "", nil, "the GPUs span nodes " + slots[0].Node + " and " + s.Node + " (the adapter runs one-node jobs)"
		}
		if slices.Contains(slots[:i], s) {
			return nil, "", nil, "GPU " + g + " is listed twice"
		}
		slots[i] = s
		if s.Shards > 0 {
			sharded++
		}
	}
	kind := "gpu"
	switch {
	case keepKind != nil:
		kind = *keepKind
	case sharded == len(slots):
		kind = "shard"
	case sharded > 0:
		return nil, "", nil, "the GPUs mix shared and unshared ones (one Slurm job cannot hold both gpu and shard)"
	}
	shards := make([]int, len(slots))
	for i, s := range slots {
		if kind == "shard" {
			if s.Shards == 0 {
				return nil, "", nil, "GPU " + s.ID + " has no shards"
			}
			// floor: the shards of the jobs the plan puts on one GPU then
			// add up to at most its count whenever their SM shares add up
			// to at most 1.
			shards[i] = min(s.Shards, max(1, int(math.Floor(p.Demand.SM*float64(s.Shards)+1e-9))))
		}
		if ok, why := s.fits(kind, shards[i]); !ok {
			return nil, "", nil, why
		}
		if !s.usable && !s.ours {
			return nil, "", nil, "node " + s.Node + " takes no new jobs"
		}
	}
	if n := inv.node(slots[0].Node); n != nil {
		free := n.cpus - n.ours + float64(own)
		if float64(cpusFor(p)) > free+1e-9 {
			return nil, "", nil, fmt.Sprintf("configuration %s needs %d CPUs, node %s has %g free", p.Config.ID, cpusFor(p), n.name, math.Max(free, 0))
		}
	}
	return slots, kind, shards, ""
}

func ordinals(slots []*gpuSlot) []int {
	out := make([]int, len(slots))
	for i, s := range slots {
		out[i] = s.Ordinal
	}
	return out
}

func gresFor(slots []*gpuSlot, kind string, shards []int) string {
	gs := make([]Gres, len(slots))
	for i, s := range slots {
		if kind == "shard" {
			gs[i] = Gres{Name: "shard", Type: s.Type, Count: shards[i]}
		} else {
			gs[i] = Gres{Name: "gpu", Type: s.Type, Count: 1}
		}
	}
	return FormatGres(gs)
}

// cpusFor is the CPUs Slurm allocates to a configuration.
func cpusFor(p *elastico.Profile) int {
	return max(1, int(math.Ceil(p.Demand.CPU*float64(p.Demand.GPUs)-1e-9)))
}

// env is one run's environment: the plan's launch parameters, with the
// memory fraction and MPS limits computed for the job's own view of its
// devices (Slurm sets CUDA_VISIBLE_DEVICES, so device 0 is the job's first
// GPU), and MPS limits always set on shards: a neighbour may join the GPU
// later without restarting this job.
func (a *Adapter) env(r *Record, j *elastico.Job, p *elastico.Profile, base elastico.LaunchParams, slots []*gpuSlot, shards []int) []string {
	byOrdinal := slices.Clone(slots)
	slices.SortFunc(byOrdinal, func(x, y *gpuSlot) int { return x.Ordinal - y.Ordinal })
	lg := make([]rst.LaunchGPU, len(slots))
	for i, s := range slots {
		lg[i] = rst.LaunchGPU{Index: slices.Index(byOrdinal, s), Memory: s.Memory, Shared: r.Kind == "shard"}
	}
	own := rst.Launch(j, p, lg)
	l := base
	if l == (elastico.LaunchParams{}) {
		l = own
	}
	l.MemoryFraction = own.MemoryFraction
	l.MPSPinnedMemLimit = own.MPSPinnedMemLimit
	l.MPSActiveThreadPercentage = own.MPSActiveThreadPercentage
	shared := "0"
	if r.Kind == "shard" {
		shared = "1"
	}
	env := append(l.Env(),
		"ELASTICO_CONFIG="+p.Config.ID,
		"ELASTICO_GENERATION="+strconv.Itoa(r.Gen),
		"ELASTICO_GPUS="+strings.Join(r.GPUs, ","),
		"ELASTICO_PROGRESS_FILE="+progressFile(a.cfg.ProgressDir, r.SlurmID),
		"ELASTICO_SHARED="+shared,
		"ELASTICO_SLURM_GRES="+r.Gres,
	)
	slices.Sort(env)
	return env
}

// converge takes one job forward from where Slurm says it is to where its
// record says it should be. Each step looks at Slurm's state before it
// acts, so running it again (after a crash of the adapter, or of
// slurmctld, between a command and the journal write) does nothing twice.
func (a *Adapter) converge(ctx context.Context, r *Record, sj *Job, now time.Time) error {
	var err error
	switch r.Phase {
	case PhaseStart:
		switch {
		case sj.State == "PENDING" && (sj.Held() || !a.hasGres(r, sj)):
			if err = a.launch(ctx, r, sj, false); err == nil {
				a.launched(r, sj, now)
			}
		case sj.State == "PENDING" || sj.Holds():
			a.launched(r, sj, now) // released before a crash: it waits for Slurm or runs
		}
	case PhaseRequeue:
		switch {
		case sj.Restarts > r.RestartBase:
			r.Phase, r.RequeuedAt = PhaseRelaunch, now // the requeue happened (before a crash)
			a.settle(r, sj, "requeued while the adapter was down, before it was checked")
		case sj.State == "RUNNING" || sj.State == "CONFIGURING":
			// The run is about to stop: check it now if it was not yet
			// (the plan may reconfigure a job the tick after it starts).
			a.settle(r, sj, "requeued before Slurm reported its devices")
			if err = a.cfg.Slurm.RequeueHold(ctx, sj.ID); err == nil {
				r.Phase, r.RequeuedAt = PhaseRelaunch, now
				a.log.Info("requeued for reconfiguration", "job", sj.ID, "config", r.ConfigID, "gen", r.Gen)
			}
		case sj.State == "PENDING":
			// Released but not started yet: no run to stop, and a pending
			// job's GRES counts can still change.
			if err = a.cfg.Slurm.Hold(ctx, sj.ID); err == nil {
				r.Phase, r.RequeuedAt = PhaseRelaunch, time.Time{}
			}
		}
	case PhaseLaunched:
		if a.verify(r, sj); r.Phase == PhaseRequeue {
			if err := a.save(); err != nil { // the intent first
				return err
			}
			return a.converge(ctx, r, sj, now)
		}
	case PhaseRelaunch:
		switch {
		case sj.State == "PENDING" && (sj.Held() || !a.hasGres(r, sj)):
			if sj.Held() && now.Before(r.RequeuedAt.Add(a.cfg.RequeueDelay)) {
				return nil
			}
			if err = a.launch(ctx, r, sj, true); err == nil {
				a.launched(r, sj, now)
			}
		case sj.State == "PENDING" || sj.State == "RUNNING" && sj.Restarts > r.RestartBase:
			a.launched(r, sj, now) // released before a crash
		case sj.Holds() && sj.Restarts == r.RestartBase && r.RequeuedAt.IsZero():
			// Held, not requeued, yet it runs the same run: either the
			// adapter released the new launch and crashed before the
			// journal said so (the job carries its AdminComment), or the
			// hold came too late. Slurm 22.05 holds a running job without
			// an error: slurmctld started the released run between squeue
			// and the hold. That run still has the old configuration: it
			// is stopped like any running job.
			if sj.AdminComment == launchComment(r) {
				a.launched(r, sj, now)
				break
			}
			a.log.Warn("the job started before the hold meant to reconfigure it: requeued instead", "job", sj.ID, "run", sj.Restarts, "state", sj.State, "config", r.ConfigID, "gen", r.Gen)
			r.Phase = PhaseRequeue
			if err := a.save(); err != nil { // the intent first
				return err
			}
			return a.converge(ctx, r, sj, now)
		}
	default:
		return nil
	}
	if err != nil {
		r.Attempts++
		r.Error = err.Error()
		if r.Attempts >= a.cfg.MaxAttempts {
			a.log.Error("giving the job up: Slurm refused a step too often; it is left to Slurm", "job", sj.ID, "phase", r.Phase, "err", err)
			r.Phase = PhaseFailed
		} else {
			a.log.Warn("step failed, will retry", "job", sj.ID, "phase", r.Phase, "attempt", r.Attempts, "err", err)
		}
	}
	return a.save()
}

// verify checks, once per run, that Slurm gave the job the devices its
// GRES types name (gpuN is device N: the ordinals recorded at the start).
// A job on other devices breaks the plan's co-location and Slurm's own
// accounting of the shards: it is requeued at once and relaunched under the
// same configuration.
func (a *Adapter) verify(r *Record, sj *Job) {
	if sj.State != "RUNNING" || len(r.Launches) == 0 {
		return
	}
	l := &r.Launches[len(r.Launches)-1]
	if l.Placed != "" || l.Run != sj.Restarts {
		return
	}
	placed, wrong := a.placement(r, l, sj)
	if placed == "" {
		return
	}
	l.Placed = placed
	if len(wrong) == 0 {
		return
	}
	a.log.Error("Slurm started the job on other devices than its GRES name: requeued to run where the plan put it", "job", r.SlurmID, "run", sj.Restarts, "gres_detail", sj.GresDetail[0], "gres", r.Gres, "wrong", strings.Join(wrong, "; "))
	r.Gen++
	for i, kv := range r.Env {
		if strings.HasPrefix(kv, "ELASTICO_GENERATION=") {
			r.Env[i] = "ELASTICO_GENERATION=" + strconv.Itoa(r.Gen)
		}
	}
	r.Phase, r.RestartBase, r.Attempts, r.Error = PhaseRequeue, sj.Restarts, 0, ""
}

// placement compares the devices Slurm reports for the job's run (its
// gres_detail) with those of launch l: "ok", or "misplaced: what" and what
// was wrong; "" when Slurm reports no devices for it to compare.
func (a *Adapter) placement(r *Record, l *Launch, sj *Job) (string, []string) {
	if len(sj.GresDetail) == 0 || len(r.IDX) != len(r.GPUs) {
		return "", nil
	}
	allocs, err := ParseDetail(sj.GresDetail[0])
	if err != nil {
		return "", nil
	}
	// The launch's GPUs are among the record's (a reconfiguration keeps
	// or adds GPUs), whose device ordinals the record keeps.
	idx := map[string]int{}
	for _, g := range l.GPUs {
		k := slices.Index(r.GPUs, g)
		if k < 0 {
			return "", nil
		}
		idx[g] = r.IDX[k]
	}
	var wrong []string
	seen := map[string]bool{}
	for _, al := range allocs {
		g := r.Node + "/" + al.Type
		want, ok := idx[g]
		switch {
		case !ok:
			wrong = append(wrong, fmt.Sprintf("%s, not asked", al.Gres))
		case !slices.Equal(al.IDX, []int{want}):
			wrong = append(wrong, fmt.Sprintf("%s on device %v, want %d", al.Gres, al.IDX, want))
		}
		seen[g] = true
	}
	for _, g := range l.GPUs {
		if !seen[g] {
			wrong = append(wrong, g+" missing")
		}
	}
	if len(wrong) == 0 {
		return "ok", nil
	}
	return "misplaced: " + strings.Join(wrong, "; "), wrong
}

// settle gives the job's last launch a definite placement before the
// adapter loses sight of its run (the run is being requeued, or has
// ended): checked against what Slurm reports of the run while it still
// holds its devices, else "unverified: why". A run that was never checked
// leaves a trace in the journal and the log, never a blank.
func (a *Adapter) settle(r *Record, sj *Job, why string) {
	if len(r.Launches) == 0 {
		return
	}
	l := &r.Launches[len(r.Launches)-1]
	if l.Placed != "" {
		return
	}
	if l.Run == sj.Restarts && sj.Holds() {
		if placed, wrong := a.placement(r, l, sj); placed != "" {
			l.Placed = placed
			if len(wrong) > 0 {
				a.log.Error("Slurm ran the job on other devices than its GRES name (seen as the run stops)", "job", r.SlurmID, "run", l.Run, "gres_detail", sj.GresDetail[0], "gres", l.Gres, "wrong", strings.Join(wrong, "; "))
			}
			return
		}
	}
	l.Placed = "unverified: " + why
	a.log.Warn("run not checked where it landed", "job", r.SlurmID, "run", l.Run, "gen", l.Gen, "why", why)
}

// launch sets a pending job's GRES, CPUs and node (skipped when Slurm has
// them already), writes its run's environment, and releases it.
func (a *Adapter) launch(ctx context.Context, r *Record, sj *Job, relaunch bool) error {
	if err := writeEnv(a.cfg.EnvDir, r.SlurmID, sj.Restarts, r.Env); err != nil {
		return err
	}
	have, _ := ParseGres(sj.TresPerNode)
	want, err := ParseGres(r.Gres)
	if err != nil {
		return err
	}
	var fields []string
	if !sameGres(have, want) {
		fields = append(fields, "Gres="+r.Gres)
	}
	if sj.CPUs != r.CPUs {
		fields = append(fields, "NumCPUs="+strconv.Itoa(r.CPUs))
	}
	if !relaunch {
		if sj.ReqNodes != r.Node {
			fields = append(fields, "NodeList="+r.Node)
		}
	} else {
		fields = append(fields, "StartTime=now") // requeue set it 121 s ahead
	}
	status := launchComment(r)
	if sj.AdminComment != status {
		fields = append(fields, "AdminComment="+status)
	}
	if len(fields) > 0 {
		if err := a.cfg.Slurm.Update(ctx, r.SlurmID, fields...); err != nil {
			return err
		}
	}
	if err := a.cfg.Slurm.Release(ctx, r.SlurmID); err != nil {
		return err
	}
	return nil
}

// launchComment is the AdminComment a launch sets on its job: where the
// adapter put it, and which launch it is.
func launchComment(r *Record) string {
	return truncate(fmt.Sprintf("elastico: gen %d: %s on %s (%s)", r.Gen, r.ConfigID, strings.Join(r.GPUs, ","), r.Gres), 500)
}

// hasGres reports whether Slurm already holds the record's GRES for the job.
func (a *Adapter) hasGres(r *Record, sj *Job) bool {
	have, err1 := ParseGres(sj.TresPerNode)
	want, err2 := ParseGres(r.Gres)
	return err1 == nil && err2 == nil && sameGres(have, want)
}

func (a *Adapter) launched(r *Record, sj *Job, now time.Time) {
	r.Phase = PhaseLaunched
	r.Attempts, r.Error = 0, ""
	l := Launch{Gen: r.Gen, Run: sj.Restarts, ConfigID: r.ConfigID, GPUs: slices.Clone(r.GPUs), Gres: r.Gres, At: now}
	// Launches holds one entry per run: a launch reconfigured while the job
	// was still pending (held back before it ever started) never ran, and
	// the new one takes its place under the same run number.
	if n := len(r.Launches); n > 0 && r.Launches[n-1].Run == l.Run {
		r.Launches[n-1] = l
	} else {
		a.settle(r, sj, fmt.Sprintf("run %d started before the adapter saw this one running", l.Run))
		r.Launches = append(r.Launches, l)
	}
	a.log.Info("launched", "job", r.SlurmID, "gen", r.Gen, "run", sj.Restarts, "config", r.ConfigID, "gpus", strings.Join(r.GPUs, ","), "gres", r.Gres)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
