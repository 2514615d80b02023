package controller

import (
	"fmt"
	"maps"
	"strings"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/examples/kubernetes/annotation"
	"github.com/elastico/elastico/rst"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// change is what one pod needs so that it says what the Plan decided.
type change struct {
	pod  *v1.Pod
	kind changeKind
	// want is the decision the pod must carry (for update).
	want annotation.Decision
	// ungate removes elastico's scheduling gate.
	ungate bool
	// renew is true when want has a new generation: the container must
	// restart its work.
	renew bool
	// cond is the Admitted condition the pod's status must carry; nil
	// when it already does.
	cond *v1.PodCondition
	// event tells the pod's owner what happened ("" for none).
	reason, message string
}

type changeKind int

const (
	noChange changeKind = iota
	update              // write the decision's annotations (and maybe ungate)
	evict               // the pod is bound where the Plan no longer runs it
)

// diff compares every job's pod with the Plan and returns what must change,
// except the new reasons of a pod that keeps waiting for the same cause when
// fresh[pod UID] says its status was written recently (reasons that quote
// prices change every epoch; rewriting them every epoch would only load the
// API server). It returns changes
// evictions first, then pods already bound (reconfigurations, moves on
// their node), then pods not yet bound (admissions): the order in which
// GPUs are given up before they are handed out. Problems are decisions the
// controller cannot apply (reported as Events; the pod is left as it is).
func diff(s *snapshot, plan *elastico.Plan, fresh map[types.UID]bool) (changes []change, problems []problem) {
	if len(plan.Decisions) != len(s.state.Jobs) {
		return nil, nil // checked by the caller; nothing is safe to apply
	}
	holders := map[string]int{} // GPU ID -> jobs the Plan puts on it
	for _, d := range plan.Decisions {
		if d.Assignment != nil {
			for _, g := range d.Assignment.GPUs {
				holders[g]++
			}
		}
	}
	actions := map[string]*elastico.Action{}
	for i := range plan.Actions {
		a := &plan.Actions[i]
		if a.Kind != elastico.Preempt {
			actions[a.JobID] = a
		}
	}
	gpuMem := map[string]float64{}
	for _, n := range s.state.Cluster.Nodes {
		for _, g := range n.GPUs {
			gpuMem[g.ID] = g.Memory
		}
	}

	var evictions, bound, unbound []change
	for _, d := range plan.Decisions {
		jp := s.jobs[d.JobID]
		if jp == nil {
			problems = append(problems, problem{nil, "ElasticoPlan", fmt.Sprintf("the Plan decides on job %q, which is not in the State", d.JobID)})
			continue
		}
		if jp.members != nil {
			ev, b, u, probs := gangDiff(jp, &d, actions[d.JobID], holders, gpuMem, fresh)
			evictions, bound, unbound = append(evictions, ev...), append(bound, b...), append(unbound, u...)
			problems = append(problems, probs...)
			continue
		}
		want, err := desired(jp, &d, actions[d.JobID], holders, gpuMem)
		if err != nil {
			problems = append(problems, problem{jp.pod, "ElasticoPlan", "not applied: " + err.Error()})
			continue
		}
		if cur := &jp.current; fresh[jp.pod.UID] && jp.hasDec && !cur.Admitted() && !want.Admitted() && code(cur.Status) == code(want.Status) {
			continue
		}
		c := change{pod: jp.pod, want: want, cond: condition(jp.pod, &d), renew: want.Generation != jp.current.Generation}
		node := jp.pod.Spec.NodeName
		switch {
		case node != "" && (!want.Admitted() || want.Node != node):
			c.kind = evict
			c.reason, c.message = "ElasticoPreempted", "evicted: the Plan stops the job: "+want.Status
			if want.Admitted() {
				c.reason, c.message = "ElasticoMoved", fmt.Sprintf("evicted: the Plan moves the job from %s to %s; its owner recreates the pod", node, want.Node)
			}
			evictions = append(evictions, c)
			continue
		case !sameAnnotations(jp.pod.Annotations, want.Annotations()):
			c.kind = update
		}
		c.ungate = want.Admitted() && jp.gated
		if c.ungate {
			c.kind = update
		}
		c.reason, c.message = event(&jp.current, jp.hasDec, &want)
		if c.kind == noChange && c.cond == nil {
			continue
		}
		if node != "" {
			bound = append(bound, c)
		} else {
			unbound = append(unbound, c)
		}
	}
	changes = append(append(evictions, bound...), unbound...)
	return changes, problems
}

// code returns the Code part of a Status string ("Unaffordable: ...").
func code(status string) string {
	c, _, _ := strings.Cut(status, ":")
	return c
}

// desired is the decision a job's pod must carry after the Plan.
func desired(jp *jobPod, d *elastico.Decision, act *elastico.Action, holders map[string]int, gpuMem map[string]float64) (annotation.Decision, error) {
	cur := jp.current
	want := annotation.Decision{Status: d.Status.String(), Generation: cur.Generation}
	a := d.Assignment
	if a == nil {
		if cur.Admitted() {
			want.Generation++
		}
		return want, nil
	}
	p, err := profileFor(jp.job, a)
	if err != nil {
		return want, err
	}
	first, _, _ := annotation.ParseGPUID(a.GPUs[0])
	for _, id := range a.GPUs[1:] {
		if n, _, err := annotation.ParseGPUID(id); err == nil && n != first {
			return want, fmt.Errorf("the Plan spreads the job over nodes %s and %s; a pod runs on one node", first, n)
		}
	}
	want.Slowdown = d.Slowdown
	if err := place(&want, jp.job, p, &cur, a.GPUs, act, holders, gpuMem); err != nil {
		return want, err
	}
	if !cur.Admitted() || !want.SameWork(&cur) {
		want.Generation = cur.Generation + 1
	}
	return want, nil
}

// profileFor returns the profile of a's configuration, checking that a
// gives it the GPUs it needs.
func profileFor(job *elastico.Job, a *elastico.Assignment) (*elastico.Profile, error) {
	p, ok := job.Profile(a.ConfigID)
	if !ok {
		return nil, fmt.Errorf("configuration %q is not in the job's family", a.ConfigID)
	}
	if len(a.GPUs) != p.Demand.GPUs || len(a.GPUs) == 0 {
		return nil, fmt.Errorf("configuration %q needs %d GPUs, the Plan gives %d", a.ConfigID, p.Demand.GPUs, len(a.GPUs))
	}
	return p, nil
}

// place fills want (whose Gang and Rank, for a gang's member, are set)
// with the work of one pod: configuration p on the GPUs ids, all on one
// node, with the launch parameters of the Plan's action, or the ones the
// pod was started with when nothing about its work changed. The caller
// sets the generation.
func place(want *annotation.Decision, job *elastico.Job, p *elastico.Profile, cur *annotation.Decision, ids []string, act *elastico.Action, holders map[string]int, gpuMem map[string]float64) error {
	want.Config, want.SM, want.MemoryGiB = p.Config.ID, p.Demand.SM, p.Demand.GPUMemory
	launch := make([]rst.LaunchGPU, len(ids))
	for i, id := range ids {
		node, idx, err := annotation.ParseGPUID(id)
		if err != nil {
			return err
		}
		want.Node = node
		shared := holders[id] > 1
		want.GPUs = append(want.GPUs, annotation.GPU{Index: idx, Shared: shared})
		// Index is the device as the container sees it: the controller sets
		// CUDA_VISIBLE_DEVICES, so the pod's first GPU is its device 0.
		launch[i] = rst.LaunchGPU{Index: i, Memory: gpuMem[id], Shared: shared}
	}
	keep := cur.Admitted() && cur.Config == want.Config && cur.Node == want.Node &&
		equalInts(cur.Indices(), want.Indices()) && cur.Rank == want.Rank &&
		annotation.FormatShares(cur.Gang) == annotation.FormatShares(want.Gang)
	switch {
	case act != nil:
		want.Launch = launchParams(act.Launch, rst.Launch(job, p, launch)).Env()
		want.Action = act.Kind.String()
	case keep:
		// The job keeps running as it is: its container keeps the launch
		// parameters it was started with.
		want.Launch, want.Action = cur.Launch, cur.Action
	default:
		// A scheduler that moves a job without an Action: start it as
		// though the Plan had said so.
		want.Launch = rst.Launch(job, p, launch).Env()
		want.Action = elastico.Start.String()
		if cur.Admitted() {
			want.Action = elastico.Migrate.String()
			if cur.Node == want.Node && equalInts(cur.Indices(), want.Indices()) {
				want.Action = elastico.Reconfigure.String()
			}
		}
	}
	return nil
}

// launchParams takes the Plan's launch parameters but the MPS settings of
// the host's own: the Plan numbers devices on the node, while the container
// sees only its own GPUs, numbered from 0. A scheduler that sets no launch
// parameters (LRScale 0) gets rst.Launch's throughout.
func launchParams(plan, host elastico.LaunchParams) elastico.LaunchParams {
	if plan.LRScale == 0 {
		return host
	}
	plan.MPSPinnedMemLimit = host.MPSPinnedMemLimit
	plan.MPSActiveThreadPercentage = host.MPSActiveThreadPercentage
	return plan
}

// condition returns the Admitted condition the pod must carry, or nil when
// it carries it already.
func condition(pod *v1.Pod, d *elastico.Decision) *v1.PodCondition {
	want := v1.PodCondition{Type: annotation.AdmittedCnd, Status: v1.ConditionFalse, Reason: d.Status.Code.String(),
		Message: strings.Join(d.Status.Reasons, "; ")}
	if d.Assignment != nil {
		want.Status = v1.ConditionTrue
		want.Reason = "Admitted"
		want.Message = "the Plan runs the job under configuration " + d.Assignment.ConfigID
	}
	return wantCondition(pod, want)
}

// wantCondition returns want, or nil when the pod carries it already.
func wantCondition(pod *v1.Pod, want v1.PodCondition) *v1.PodCondition {
	for _, c := range pod.Status.Conditions {
		if c.Type == want.Type {
			if c.Status == want.Status && c.Reason == want.Reason && c.Message == want.Message {
				return nil
			}
			break
		}
	}
	return &want
}

// event returns the Event that tells the pod's owner about a new decision,
// or "" when the decision did not change in a way worth telling.
func event(cur *annotation.Decision, hasDec bool, want *annotation.Decision) (reason, message string) {
	switch {
	case want.Admitted() && (!cur.Admitted() || !want.SameWork(cur)):
		reason = "ElasticoAdmitted"
		if cur.Admitted() {
			reason = "ElasticoReconfigured"
		}
		return reason, fmt.Sprintf("%s: configuration %s on node %s, GPUs %s (%s), generation %d",
			want.Action, want.Config, want.Node, want.Annotations()[annotation.GPUs], want.Annotations()[annotation.GPUSharing], want.Generation)
	case !want.Admitted() && (!hasDec || cur.Status != want.Status):
		return "ElasticoWaiting", want.Status
	}
	return "", ""
}

// sameAnnotations reports whether have carries exactly the output
// annotations of want (and none of the others).
func sameAnnotations(have, want map[string]string) bool {
	for _, k := range annotation.OutputKeys() {
		hv, hok := have[k]
		wv, wok := want[k]
		if hok != wok || hv != wv {
			return false
		}
	}
	return true
}

// applyAnnotations returns a copy of ann carrying want's output annotations.
func applyAnnotations(ann, want map[string]string) map[string]string {
	out := maps.Clone(ann)
	if out == nil {
		out = map[string]string{}
	}
	for _, k := range annotation.OutputKeys() {
		delete(out, k)
	}
	maps.Copy(out, want)
	return out
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
