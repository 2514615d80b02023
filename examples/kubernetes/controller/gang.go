package controller

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/examples/kubernetes/annotation"
	v1 "k8s.io/api/core/v1"
)

// A gang is a job of several pods, one per node share of its GPUs: each
// carries the label elastico.io/gang=<name> and the same elastico.io/job,
// whose members field counts them. The State has one job for the gang,
// which may spread over nodes (Job.Spread); the controller splits its
// assignment into one share per member (see shares) and the plugin binds
// the members together (Permit) or none of them.

// GangID returns the ID a gang's job has in the State:
// "<namespace>/gang:<name>" (a pod's name cannot hold a colon, so no
// pod's job has it).
func GangID(namespace, name string) string { return namespace + "/gang:" + name }

// JobIDOf returns the ID of the job a pod belongs to: its gang's, or its
// own.
func JobIDOf(pod *v1.Pod) string {
	if g, ok := pod.Labels[annotation.GangLabel]; ok {
		return GangID(pod.Namespace, g)
	}
	return JobID(pod)
}

// gangJob turns the live pods of one gang (key "<namespace>/<name>") into
// one job, or reports why it cannot: members that disagree or do not
// parse (left alone, with Events, their nodes out of the plan like any pod
// elastico cannot account for), or a gang that misses members (it waits;
// the members it has say so, and bound ones are evicted: a gang runs
// whole or not at all).
func (s *snapshot) gangJob(key string, pods []*v1.Pod, o options, out map[string]string) (elastico.Job, *jobPod, bool) {
	ns, name, _ := strings.Cut(key, "/")
	id := GangID(ns, name)
	slices.SortFunc(pods, func(a, b *v1.Pod) int {
		return cmp.Or(cmp.Compare(completionIndex(a), completionIndex(b)), cmp.Compare(a.Name, b.Name))
	})
	names := make([]string, len(pods))
	for i, p := range pods {
		names[i] = JobID(p)
	}
	leave := func(reason string, msg func(p *v1.Pod) string) (elastico.Job, *jobPod, bool) {
		for _, p := range pods {
			if m := msg(p); m != "" {
				s.problems = append(s.problems, problem{p, reason, "left alone: " + m})
			}
			if p.Spec.NodeName != "" {
				out[p.Spec.NodeName] = fmt.Sprintf("pod %s of gang %s is bound here and the gang cannot be planned", JobID(p), name)
			}
		}
		return elastico.Job{}, nil, false
	}

	// Every member must say the same: one job, one scheduler.
	first := pods[0]
	spec, job, err := annotation.ParseJobSpec(id, first.Annotations[annotation.Job])
	for _, p := range pods {
		if perr := firstErr(p, o); perr != nil {
			return leave("ElasticoInvalidJob", func(q *v1.Pod) string {
				if q == p {
					return perr.Error()
				}
				return fmt.Sprintf("gang %s: its member %s is left alone", name, JobID(p))
			})
		}
		if v := p.Annotations[annotation.Job]; v != first.Annotations[annotation.Job] {
			fields := differingFields(first.Annotations[annotation.Job], v)
			return leave("ElasticoInvalidJob", func(q *v1.Pod) string {
				return fmt.Sprintf("gang %s: the %s of pod %s differs from pod %s's in %s: every member must carry the same job",
					name, annotation.Job, JobID(p), JobID(first), fields)
			})
		}
	}
	if err != nil {
		return leave("ElasticoInvalidJob", func(*v1.Pod) string { return err.Error() })
	}
	if why, skipped := o.skip[id]; skipped {
		return leave("ElasticoInvalidJob", func(*v1.Pod) string { return why })
	}
	switch {
	case spec.Members < 2:
		return leave("ElasticoInvalidJob", func(p *v1.Pod) string {
			return fmt.Sprintf("pod %s has label %s=%s but its %s has members %d: a gang has 2 members or more", JobID(p), annotation.GangLabel, name, annotation.Job, spec.Members)
		})
	case len(pods) > spec.Members:
		return leave("ElasticoInvalidJob", func(*v1.Pod) string {
			return fmt.Sprintf("gang %s has %d pods (%s) but its %s says members %d", name, len(pods), strings.Join(names, ", "), annotation.Job, spec.Members)
		})
	}

	jp := &jobPod{pod: first, members: make([]member, len(pods))}
	for i, p := range pods {
		dec, has, err := annotation.ParseDecision(p.Annotations)
		if err != nil {
			return leave("ElasticoInvalidDecision", func(q *v1.Pod) string {
				if q == p {
					return err.Error()
				}
				return fmt.Sprintf("gang %s: the decision of its member %s does not parse", name, JobID(p))
			})
		}
		jp.members[i] = member{pod: p, current: dec, hasDec: has, gated: hasGate(p)}
		jp.gated = jp.gated || jp.members[i].gated
		// The member of the highest generation was written last: it says
		// where the whole gang runs (a restart may find a write cut short).
		if has && (!jp.hasDec || dec.Generation > jp.current.Generation) {
			jp.current, jp.hasDec = dec, true
		}
	}
	if len(pods) < spec.Members {
		s.incomplete(jp, name, spec.Members)
		return elastico.Job{}, nil, false
	}

	job.Arrival = first.CreationTimestamp.Time
	for _, p := range pods[1:] {
		if p.CreationTimestamp.Before(&first.CreationTimestamp) {
			job.Arrival = p.CreationTimestamp.Time
		}
	}
	a, why := gangRunning(jp, &job)
	if why != "" {
		return leave("ElasticoUnaccounted", func(p *v1.Pod) string {
			if p.Spec.NodeName == "" {
				return ""
			}
			return fmt.Sprintf("gang %s: %s", name, why)
		})
	}
	job.Running = a
	return job, jp, true
}

// completionIndexKey is the annotation an Indexed Job (and so a JobSet)
// gives each pod: a gang made by one ranks its members by it, so that rank
// r is the pod of index r, whose hostname the Job makes stable
// ("<job>-<r>").
const completionIndexKey = "batch.kubernetes.io/job-completion-index"

// completionIndex returns the pod's completion index, or -1 without one
// (members without one rank by name).
func completionIndex(p *v1.Pod) int {
	i, err := strconv.Atoi(p.Annotations[completionIndexKey])
	if err != nil || i < 0 {
		return -1
	}
	return i
}

// firstErr is why a member pod cannot be planned by itself: its job does
// not parse, or it names another scheduler.
func firstErr(p *v1.Pod, o options) error {
	if _, err := annotation.ParseJob(JobID(p), p.Annotations[annotation.Job]); err != nil {
		return err
	}
	if p.Spec.SchedulerName != o.schedulerName {
		return fmt.Errorf("spec.schedulerName is %q; elastico's plugin runs in %q, and another scheduler would ignore the Plan", p.Spec.SchedulerName, o.schedulerName)
	}
	return nil
}

// differingFields names the top-level fields of two elastico.io/job values
// that differ ("family, members"), or says that one is not a JSON object.
func differingFields(a, b string) string {
	var ma, mb map[string]json.RawMessage
	if json.Unmarshal([]byte(a), &ma) != nil || json.Unmarshal([]byte(b), &mb) != nil {
		return "its JSON (one is not an object)"
	}
	keys := maps.Clone(ma)
	maps.Copy(keys, mb)
	var diff []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if !jsonEqual(ma[k], mb[k]) {
			diff = append(diff, k)
		}
	}
	if len(diff) == 0 {
		return "formatting only (keep the annotations identical)"
	}
	return "field " + strings.Join(diff, ", ")
}

func jsonEqual(a, b json.RawMessage) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return string(a) == string(b)
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}

// gangRunning returns where the gang runs: the GPUs its latest record
// (jp.current.Gang) lists, in rank order, when that record names exactly
// the gang's members and every bound member runs where it says. A gang
// not bound anywhere whose record is stale (members recreated, a write cut
// short) is planned again from scratch; a bound one that the record does
// not account for is left alone (why says how).
func gangRunning(jp *jobPod, job *elastico.Job) (a *elastico.Assignment, why string) {
	cur := &jp.current
	stale := ""
	switch p, ok := job.Profile(cur.Config); {
	case !cur.Admitted():
		stale = "its latest decision is to wait"
	case len(cur.Gang) != len(jp.members):
		stale = fmt.Sprintf("its latest decision has %d members, not %d", len(cur.Gang), len(jp.members))
	case !ok:
		stale = fmt.Sprintf("configuration %q is not in the job's family", cur.Config)
	default:
		n := 0
		for _, sh := range cur.Gang {
			n += len(sh.GPUs)
		}
		if n != p.Demand.GPUs {
			stale = fmt.Sprintf("configuration %q has %d GPUs, the decision %d", cur.Config, p.Demand.GPUs, n)
		}
	}
	for i, m := range jp.members {
		if stale == "" && cur.Gang[i].Pod != m.pod.Name {
			stale = fmt.Sprintf("its latest decision names pod %s, not %s", cur.Gang[i].Pod, m.pod.Name)
		}
	}
	if stale != "" {
		for _, m := range jp.members {
			if m.pod.Spec.NodeName != "" {
				return nil, fmt.Sprintf("member %s is bound to %s but %s", JobID(m.pod), m.pod.Spec.NodeName, stale)
			}
		}
		return nil, ""
	}
	a = &elastico.Assignment{ConfigID: cur.Config}
	for i, sh := range cur.Gang {
		if b := jp.members[i].pod.Spec.NodeName; b != "" && b != sh.Node {
			return nil, fmt.Sprintf("member %s is bound to %s, its gang's decision puts it on %s", sh.Pod, b, sh.Node)
		}
		for _, g := range sh.GPUs {
			a.GPUs = append(a.GPUs, annotation.GPUID(sh.Node, g))
		}
	}
	return a, ""
}

// incomplete handles a gang with fewer live pods than its members: it
// waits, and its pods say why. A member still bound is evicted (its
// gang lost a pod: the owner recreates the gang), an admitted one goes
// back to waiting.
func (s *snapshot) incomplete(jp *jobPod, name string, members int) {
	var have []string
	for _, m := range jp.members {
		have = append(have, JobID(m.pod))
	}
	status := fmt.Sprintf("Incomplete: gang %s has %d of its %d member pods (%s)", name, len(jp.members), members, strings.Join(have, ", "))
	gen := jp.current.Generation
	if jp.current.Admitted() {
		gen++
	}
	for _, m := range jp.members {
		want := annotation.Decision{Status: status, Generation: gen}
		c := change{pod: m.pod, want: want, renew: want.Generation != m.current.Generation,
			cond: wantCondition(m.pod, v1.PodCondition{Type: annotation.AdmittedCnd, Status: v1.ConditionFalse, Reason: "Incomplete", Message: status})}
		switch {
		case m.pod.Spec.NodeName != "":
			c.kind, c.cond = evict, nil
			c.reason, c.message = "ElasticoPreempted", "evicted: "+status+"; a gang runs whole or not at all"
		case !sameAnnotations(m.pod.Annotations, want.Annotations()):
			c.kind = update
			c.reason, c.message = "ElasticoWaiting", status
		}
		if c.kind != noChange || c.cond != nil {
			s.extra = append(s.extra, c)
		}
	}
}
