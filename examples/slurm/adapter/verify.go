package adapter

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

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
	a.log.Error("Slurm started the job on other devices than its GRES name: requeued to run where the plan put it", "job", r.SlurmID, "run", sj.Restarts, "nodes", sj.Nodes, "gres_detail", strings.Join(sj.GresDetail, " "), "gres", r.Gres, "wrong", strings.Join(wrong, "; "))
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
	// gres_detail has one entry per node of the job, in the order of its
	// node list.
	hosts := expandHostlist(sj.Nodes)
	if len(hosts) == 0 && len(sj.GresDetail) == 1 {
		hosts = []string{r.Node}
	}
	if len(hosts) != len(sj.GresDetail) {
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
	for k, host := range hosts {
		allocs, err := ParseDetail(sj.GresDetail[k])
		if err != nil {
			return "", nil
		}
		on := ""
		if len(hosts) > 1 {
			on = " on " + host
		}
		for _, al := range allocs {
			g := host + "/" + al.Type
			want, ok := idx[g]
			switch {
			case !ok:
				wrong = append(wrong, fmt.Sprintf("%s%s, not asked", al.Gres, on))
			case !slices.Equal(al.IDX, []int{want}):
				wrong = append(wrong, fmt.Sprintf("%s%s on device %v, want %d", al.Gres, on, al.IDX, want))
			}
			seen[g] = true
		}
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
				a.log.Error("Slurm ran the job on other devices than its GRES name (seen as the run stops)", "job", r.SlurmID, "run", l.Run, "nodes", sj.Nodes, "gres_detail", strings.Join(sj.GresDetail, " "), "gres", l.Gres, "wrong", strings.Join(wrong, "; "))
			}
			return
		}
	}
	l.Placed = "unverified: " + why
	a.log.Warn("run not checked where it landed", "job", r.SlurmID, "run", l.Run, "gen", l.Gen, "why", why)
}
