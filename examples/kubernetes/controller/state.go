package controller

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/examples/kubernetes/annotation"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	resourcehelper "k8s.io/component-helpers/resource"
)

// snapshot is what one epoch sees: the State handed to the scheduler, the
// pod behind every job, and the problems to report as Events.
type snapshot struct {
	state    elastico.State
	jobs     map[string]*jobPod // by job ID
	problems []problem
	// extra are writes no Plan decides: gangs that miss members (see
	// gangJob).
	extra []change
}

// options are the parts of Config that buildState reads.
type options struct {
	gpuResource   v1.ResourceName
	schedulerName string
	// skip are jobs (by ID) that State.Validate rejected, with its error:
	// left alone like a job whose annotation does not parse.
	skip map[string]string
	// parsed caches each pod's parsed elastico.io/job; nil: parse every
	// time.
	parsed *jobCache
}

// jobCache keeps the job each pod's elastico.io/job parses to, for as
// long as the annotation stays the same: parsing and checking 5,000 of
// them was most of an epoch on a steady cluster. The jobs it returns
// share their Family with the cache, which nothing writes to.
type jobCache struct {
	byPod map[types.UID]parsedJob
	seen  map[types.UID]bool // this epoch's pods, to forget the others
}

type parsedJob struct {
	value string
	job   elastico.Job
	err   error
}

func newJobCache() *jobCache {
	return &jobCache{byPod: map[types.UID]parsedJob{}, seen: map[types.UID]bool{}}
}

// parse returns annotation.ParseJob(id, value), cached by the pod.
func (c *jobCache) parse(pod *v1.Pod, id, value string) (elastico.Job, error) {
	if c == nil {
		return annotation.ParseJob(id, value)
	}
	c.seen[pod.UID] = true
	if p, ok := c.byPod[pod.UID]; ok && p.value == value && p.job.ID == id {
		return p.job, p.err
	}
	j, err := annotation.ParseJob(id, value)
	c.byPod[pod.UID] = parsedJob{value, j, err}
	return j, err
}

// prune forgets the pods not seen since the last prune.
func (c *jobCache) prune() {
	if c == nil {
		return
	}
	for uid := range c.byPod {
		if !c.seen[uid] {
			delete(c.byPod, uid)
		}
	}
	clear(c.seen)
}

// jobPod is one opted-in pod, or one gang of them, that is a job of the
// State.
type jobPod struct {
	pod     *v1.Pod       // the pod; a gang's member of rank 0
	job     *elastico.Job // points into snapshot.state.Jobs
	current annotation.Decision
	hasDec  bool // the pod carries a decision (current is meaningful)
	gated   bool // the pod still carries elastico's scheduling gate
	// members are a gang's pods in rank order (completion index, then
	// name; see gangJob); nil for a one-pod job.
	members []member
}

// member is one pod of a gang.
type member struct {
	pod     *v1.Pod
	current annotation.Decision
	hasDec  bool
	gated   bool
}

// bound reports whether the job's pod, or one of its gang's, is bound.
func (jp *jobPod) bound() bool {
	if jp.members == nil {
		return jp.pod.Spec.NodeName != ""
	}
	for _, m := range jp.members {
		if m.pod.Spec.NodeName != "" {
			return true
		}
	}
	return false
}

// problem is something the controller tells the owner of an object about.
type problem struct {
	obj     runtime.Object
	reason  string
	message string
}

// JobID returns the ID a pod's job has in the State: "<namespace>/<name>".
func JobID(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }

// live reports whether a pod still holds (or may yet hold) resources: not
// finished and not being deleted.
func live(pod *v1.Pod) bool {
	return pod.DeletionTimestamp == nil && pod.Status.Phase != v1.PodSucceeded && pod.Status.Phase != v1.PodFailed
}

// terminal reports whether a pod has finished.
func terminal(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
}

// elasticoPod reports whether the pod opted in or carries a decision.
func elasticoPod(pod *v1.Pod) bool {
	_, job := pod.Annotations[annotation.Job]
	_, dec := pod.Annotations[annotation.Status]
	return job || dec
}

func hasGate(pod *v1.Pod) bool {
	for _, g := range pod.Spec.SchedulingGates {
		if g.Name == annotation.SchedulingGate {
			return true
		}
	}
	return false
}

// buildState turns the cluster's pods and nodes into an elastico.State.
//
// The rules, each of which keeps elastico from handing out a GPU that is in
// use:
//   - A node counts when it is Ready, schedulable, has allocatable GPUs and
//     its labels parse; its GPUs are numbered 0..n-1 with IDs
//     "<node>/gpu<i>", and its host CPU and RAM are what is allocatable
//     minus the requests of the pods bound there that are not jobs of the
//     State.
//   - An opted-in pod is a job unless its elastico.io/job does not parse or
//     it names another scheduler than the one running elastico's plugin (an
//     Event says why; the pod is left alone). A pod that holds an
//     assignment (its decision names a node and GPUs) is Running there,
//     whether or not it is bound yet: the Plan reserved those GPUs.
//   - A pod bound to a node that elastico cannot account for (its job or
//     decision does not parse, or it was bound without a decision) takes its
//     node out of the Cluster, together with every job bound there: they
//     keep running, untouched, and nothing new is placed beside them.
//   - A node that is out (not Ready, cordoned, labels that do not parse)
//     takes its bound jobs with it; an admitted pod that is not bound yet
//     falls back to waiting and is planned again.
//   - A job in o.skip (State.Validate rejected it: say, its family runs on
//     no GPU model of the cluster) is left alone like one whose annotation
//     does not parse, with the same Event and the same effect on its node.
//   - Finished pods and pods being deleted are not jobs; the plugin keeps a
//     new pod off the GPUs of one that is still terminating.
func buildState(now time.Time, pods []*v1.Pod, nodes []*v1.Node, o options) snapshot {
	s := snapshot{state: elastico.State{Now: now}, jobs: map[string]*jobPod{}}
	out := map[string]string{} // node name -> why it is out
	var cands []*jobPod
	var jobs []elastico.Job
	gangs := map[string][]*v1.Pod{} // "<namespace>/<gang>" -> live members

	for _, pod := range pods {
		if !elasticoPod(pod) || !live(pod) {
			continue
		}
		bound := pod.Spec.NodeName
		value, optedIn := pod.Annotations[annotation.Job]
		if g, ok := pod.Labels[annotation.GangLabel]; ok && optedIn {
			gangs[pod.Namespace+"/"+g] = append(gangs[pod.Namespace+"/"+g], pod)
			continue
		}
		if !optedIn {
			// It carries a decision but opted out: its GPUs are in use.
			if bound != "" {
				out[bound] = fmt.Sprintf("pod %s holds GPUs but no longer carries %s", JobID(pod), annotation.Job)
			}
			continue
		}
		job, err := o.parsed.parse(pod, JobID(pod), value)
		if err == nil && pod.Spec.SchedulerName != o.schedulerName {
			err = fmt.Errorf("spec.schedulerName is %q; elastico's plugin runs in %q, and another scheduler would ignore the Plan", pod.Spec.SchedulerName, o.schedulerName)
		}
		if err != nil {
			s.problems = append(s.problems, problem{pod, "ElasticoInvalidJob", "left alone: " + err.Error()})
			if bound != "" {
				out[bound] = fmt.Sprintf("pod %s is bound here and its %s does not parse", JobID(pod), annotation.Job)
			}
			continue
		}
		if why, skipped := o.skip[JobID(pod)]; skipped {
			s.problems = append(s.problems, problem{pod, "ElasticoInvalidJob", "left alone: " + why})
			if bound != "" {
				out[bound] = fmt.Sprintf("pod %s is bound here and its job does not validate", JobID(pod))
			}
			continue
		}
		job.Arrival = pod.CreationTimestamp.Time
		dec, hasDec, err := annotation.ParseDecision(pod.Annotations)
		if err != nil {
			s.problems = append(s.problems, problem{pod, "ElasticoInvalidDecision", "left alone: " + err.Error()})
			if bound != "" {
				out[bound] = fmt.Sprintf("pod %s is bound here and its decision does not parse", JobID(pod))
			}
			continue
		}
		jp := &jobPod{pod: pod, current: dec, hasDec: hasDec, gated: hasGate(pod)}
		if dec.Admitted() {
			if p, ok := job.Profile(dec.Config); !ok || p.Demand.GPUs != len(dec.GPUs) {
				if bound != "" {
					s.problems = append(s.problems, problem{pod, "ElasticoInvalidDecision",
						fmt.Sprintf("left alone: configuration %q with %d GPUs is not in the job's family", dec.Config, len(dec.GPUs))})
					out[bound] = fmt.Sprintf("pod %s runs a configuration its family no longer has", JobID(pod))
					continue
				}
				// Not bound yet: plan it again.
			} else {
				gpus := make([]string, len(dec.GPUs))
				for i, g := range dec.GPUs {
					gpus[i] = annotation.GPUID(dec.Node, g.Index)
				}
				job.Running = &elastico.Assignment{ConfigID: dec.Config, GPUs: gpus}
			}
		}
		if bound != "" && (job.Running == nil || dec.Node != bound) {
			s.problems = append(s.problems, problem{pod, "ElasticoUnaccounted",
				fmt.Sprintf("left alone: bound to %s without a decision of elastico's for that node", bound)})
			out[bound] = fmt.Sprintf("pod %s was bound here without elastico's decision", JobID(pod))
			continue
		}
		jobs = append(jobs, job)
		cands = append(cands, jp)
	}
	for _, key := range slices.Sorted(maps.Keys(gangs)) {
		if job, jp, ok := s.gangJob(key, gangs[key], o, out); ok {
			jobs = append(jobs, job)
			cands = append(cands, jp)
		}
	}

	// Requests of the pods that are not jobs, per node.
	jobUIDs := map[string]bool{}
	for _, jp := range cands {
		jobUIDs[string(jp.pod.UID)] = true
		for _, m := range jp.members {
			jobUIDs[string(m.pod.UID)] = true
		}
	}
	used := map[string]v1.ResourceList{}
	for _, pod := range pods {
		if pod.Spec.NodeName == "" || terminal(pod) || jobUIDs[string(pod.UID)] {
			continue
		}
		req := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
		acc := used[pod.Spec.NodeName]
		if acc == nil {
			acc = v1.ResourceList{}
			used[pod.Spec.NodeName] = acc
		}
		for _, r := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			q := acc[r]
			q.Add(req[r])
			acc[r] = q
		}
	}

	gpuCount := map[string]int{}
	sorted := slices.SortedFunc(slices.Values(nodes), func(a, b *v1.Node) int { return cmp.Compare(a.Name, b.Name) })
	for _, node := range sorted {
		q, ok := node.Status.Allocatable[o.gpuResource]
		if !ok || q.Value() <= 0 {
			continue
		}
		if why, isOut := out[node.Name]; isOut {
			s.problems = append(s.problems, problem{node, "ElasticoNodeOut", "left out of the plan: " + why})
			continue
		}
		if node.Spec.Unschedulable || !ready(node) {
			out[node.Name] = "not ready or cordoned"
			continue
		}
		ng, err := annotation.ParseNode(node.Labels, q.Value())
		if err != nil {
			out[node.Name] = err.Error()
			s.problems = append(s.problems, problem{node, "ElasticoInvalidNode", "left out of the plan: " + err.Error()})
			continue
		}
		alloc := node.Status.Allocatable
		cpu := alloc.Cpu().AsApproximateFloat64()
		ram := float64(alloc.Memory().Value())
		if u := used[node.Name]; u != nil {
			cpu -= u.Cpu().AsApproximateFloat64()
			ram -= float64(u.Memory().Value())
		}
		s.state.Cluster.Nodes = append(s.state.Cluster.Nodes, ng.Node(node.Name, max(0, cpu), max(0, ram)/(1<<30)))
		gpuCount[node.Name] = ng.Count
	}

	// Jobs whose node is out: bound ones leave with it, admitted but
	// unbound ones are planned again.
	order := make([]int, 0, len(jobs))
	for i := range jobs {
		j, jp := &jobs[i], cands[i]
		if a := j.Running; a != nil {
			if !fits(a, gpuCount) {
				if jp.bound() {
					continue
				}
				j.Running = nil
			}
		}
		order = append(order, i)
	}
	// Oldest first, so the State's order (and so the Plan) does not depend
	// on the informer's.
	slices.SortFunc(order, func(a, b int) int {
		return cmp.Or(jobs[a].Arrival.Compare(jobs[b].Arrival), cmp.Compare(jobs[a].ID, jobs[b].ID))
	})
	s.state.Jobs = make([]elastico.Job, len(order))
	for k, i := range order {
		s.state.Jobs[k] = jobs[i]
		jp := cands[i]
		jp.job = &s.state.Jobs[k]
		s.jobs[jobs[i].ID] = jp
	}
	return s
}

// fits reports whether every GPU of a is a GPU of a node in the Cluster.
func fits(a *elastico.Assignment, gpuCount map[string]int) bool {
	for _, id := range a.GPUs {
		node, i, err := annotation.ParseGPUID(id)
		if err != nil || i >= gpuCount[node] {
			return false
		}
	}
	return true
}

func ready(node *v1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status == v1.ConditionTrue
		}
	}
	return false
}
