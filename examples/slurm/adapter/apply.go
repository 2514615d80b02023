package adapter

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/sets"
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
	a.tellWaiting(ctx, plan, pending, waiting, now)
	return nil
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
	q, why := a.request(act.To.GPUs, p, j.Spread, inv, nil)
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
	}
	q.record(r, act.To.GPUs)
	a.env(r, j, p, act.Launch, q)
	a.jr.jobs[r.SlurmID] = r
	if err := a.save(); err != nil { // write-ahead: the intent is durable before Slurm hears of it
		return "", err
	}
	inv.holdRecord(r, 1)
	delete(a.status, c.sj.ID)
	return "applied", a.converge(ctx, r, c.sj, now)
}

// reconfigure restarts a running job under a new configuration on the same
// GPUs, or more, on the same nodes or more (requeuehold, then a release
// with the new shard counts, GPUs, nodes and environment). A migration to
// other GPUs is declined: Slurm cannot take GPUs away from a job.
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
	// The job's own GPUs and CPUs are freed by its requeue: take them off
	// before checking the new request.
	inv.holdRecord(r, -1)
	q, why := a.request(act.To.GPUs, p, j.Spread, inv, &r.Kind)
	if why != "" {
		inv.holdRecord(r, 1)
		return "deferred: " + why, nil
	}
	sj := byID[id]
	if !r.same(sj) || sj.Done() {
		inv.holdRecord(r, 1)
		return "declined: the job has ended", nil
	}
	r.Gen++
	r.ConfigID = p.Config.ID
	q.record(r, act.To.GPUs)
	a.env(r, j, p, act.Launch, q)
	r.Phase = PhaseRequeue
	r.RestartBase = sj.Restarts
	r.Attempts, r.Error = 0, ""
	if err := a.save(); err != nil {
		return "", err
	}
	inv.holdRecord(r, 1)
	return "applied", a.converge(ctx, r, sj, now)
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

// launch sets a pending job's GRES, CPUs and nodes (skipped when Slurm has
// them already), writes its run's environment, and releases it.
func (a *Adapter) launch(ctx context.Context, r *Record, sj *Job, relaunch bool) error {
	if err := writeRunEnv(a.cfg.EnvDir, r, sj.Restarts); err != nil {
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
	// A reconfiguration may add nodes (never remove one: GPUs are never
	// taken back), through the same requeue as any other.
	nodes := r.nodes()
	if max(sj.NodeCount, 1) != len(nodes) {
		fields = append(fields, "NumNodes="+strconv.Itoa(len(nodes)))
	}
	if !sets.Equal(expandHostlist(sj.ReqNodes), nodes) {
		fields = append(fields, "NodeList="+strings.Join(nodes, ","))
	}
	if relaunch {
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
