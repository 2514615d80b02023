package controller

import (
	"strings"
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/examples/kubernetes/annotation"
	"github.com/elastico/elastico/internal/stint"
	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestBuildState(t *testing.T) {
	cordoned := gpuNode("cordoned", 2, 16384, "")
	cordoned.Spec.Unschedulable = true
	notReady := gpuNode("notready", 2, 16384, "")
	notReady.Status.Conditions[0].Status = v1.ConditionFalse
	unlabelled := gpuNode("unlabelled", 2, 16384, "")
	delete(unlabelled.Labels, annotation.GPUMemoryLabel)
	cpuOnly := gpuNode("cpu", 0, 0, "")
	delete(cpuOnly.Status.Allocatable, "nvidia.com/gpu")

	web := newPod("web", 0, "")
	web.Spec.SchedulingGates = nil
	web.Spec.NodeName = "a" // 1 CPU and 3 GiB less for elastico on node a
	web.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = resource.MustParse("3Gi")
	done := admitted(newPod("done", 1, oneGPU), "small", "a", true, 1)
	done.Status.Phase = v1.PodSucceeded
	deleting := admitted(newPod("deleting", 2, oneGPU), "small", "a", true, 1)
	deleting.DeletionTimestamp = &metav1.Time{Time: epoch0}
	wrongSched := newPod("other-sched", 3, oneGPU)
	wrongSched.Spec.SchedulerName = "default-scheduler"

	tests := []struct {
		name         string
		pods         []*v1.Pod
		nodes        []*v1.Node
		wantNodes    []string          // Cluster node IDs
		wantJobs     []string          // job IDs, in the State's order
		wantRunning  map[string]string // job ID -> "config@gpu,gpu"
		wantProblems []string          // "reason: substring"
	}{
		{
			name:      "nodes that count",
			nodes:     []*v1.Node{gpuNode("b", 2, 40960, "mps"), gpuNode("a", 4, 40960, ""), cordoned, notReady, cpuOnly},
			wantNodes: []string{"a", "b"},
		},
		{
			name:         "a node whose labels do not parse is left out, with an Event",
			nodes:        []*v1.Node{unlabelled, gpuNode("a", 1, 1024, "")},
			wantNodes:    []string{"a"},
			wantProblems: []string{"ElasticoInvalidNode: label nvidia.com/gpu.memory is missing"},
		},
		{
			name: "jobs oldest first; admitted pods run where their decision says",
			pods: []*v1.Pod{
				newPod("young", 30, oneGPU),
				admitted(newPod("bound", 20, oneGPU), "pair", "a", true, 0, 2),
				admitted(newPod("unbound", 10, oneGPU), "small", "b", false, 1),
				web, done, deleting, newPod("plain", 0, ""),
			},
			nodes:       []*v1.Node{gpuNode("a", 4, 40960, ""), gpuNode("b", 2, 40960, "mps")},
			wantNodes:   []string{"a", "b"},
			wantJobs:    []string{"ns/unbound", "ns/bound", "ns/young"},
			wantRunning: map[string]string{"ns/bound": "pair@a/gpu0,a/gpu2", "ns/unbound": "small@b/gpu1"},
		},
		{
			name:         "a bad job annotation: left alone with an Event; bound, it takes its node out",
			pods:         []*v1.Pod{newPod("typo", 0, `{"class":"training","family":[],"x":1}`), admitted(newPod("typo-bound", 1, `{"class":"trainig"}`), "small", "a", true, 0), admitted(newPod("neighbour", 2, oneGPU), "small", "a", true, 1)},
			nodes:        []*v1.Node{gpuNode("a", 2, 40960, ""), gpuNode("b", 2, 40960, "")},
			wantNodes:    []string{"b"},
			wantProblems: []string{`ElasticoInvalidJob: unknown field "x"`, `ElasticoInvalidJob: class: is "trainig"`, "ElasticoNodeOut: pod ns/typo-bound is bound here"},
		},
		{
			name:         "a pod naming another scheduler is left alone",
			pods:         []*v1.Pod{wrongSched},
			nodes:        []*v1.Node{gpuNode("a", 1, 40960, "")},
			wantNodes:    []string{"a"},
			wantProblems: []string{`ElasticoInvalidJob: left alone: spec.schedulerName is "default-scheduler"`},
		},
		{
			name: "a pod bound without a decision takes its node out",
			pods: []*v1.Pod{func() *v1.Pod {
				p := newPod("rogue", 0, oneGPU)
				p.Spec.NodeName, p.Spec.SchedulingGates = "a", nil
				return p
			}()},
			nodes:        []*v1.Node{gpuNode("a", 1, 40960, "")},
			wantProblems: []string{"ElasticoUnaccounted: left alone: bound to a", "ElasticoNodeOut: pod ns/rogue was bound here"},
		},
		{
			name: "a node that is out: its bound jobs leave with it, its unbound ones are planned again",
			pods: []*v1.Pod{admitted(newPod("there", 0, oneGPU), "small", "cordoned", true, 0), admitted(newPod("coming", 1, oneGPU), "small", "cordoned", false, 1),
				admitted(newPod("shrunk", 2, oneGPU), "small", "a", false, 3)},
			nodes:     []*v1.Node{cordoned, gpuNode("a", 2, 40960, "")},
			wantNodes: []string{"a"},
			wantJobs:  []string{"ns/coming", "ns/shrunk"},
		},
		{
			name:         "a configuration the family lost: bound, left alone; unbound, planned again",
			pods:         []*v1.Pod{admitted(newPod("gone", 0, oneGPU), "huge", "a", true, 0), admitted(newPod("gone2", 1, oneGPU), "huge", "b", false, 0)},
			nodes:        []*v1.Node{gpuNode("a", 1, 40960, ""), gpuNode("b", 1, 40960, "")},
			wantNodes:    []string{"b"},
			wantJobs:     []string{"ns/gone2"},
			wantProblems: []string{`ElasticoInvalidDecision: left alone: configuration "huge"`, "ElasticoNodeOut"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := buildState(epoch0, tt.pods, tt.nodes, testOptions)
			if err := s.state.Validate(); err != nil {
				t.Fatalf("the State does not validate: %v", err)
			}
			var nodes, jobs []string
			for _, n := range s.state.Cluster.Nodes {
				nodes = append(nodes, n.ID)
			}
			running := map[string]string{}
			for _, j := range s.state.Jobs {
				jobs = append(jobs, j.ID)
				if j.Running != nil {
					running[j.ID] = j.Running.ConfigID + "@" + strings.Join(j.Running.GPUs, ",")
				}
				if s.jobs[j.ID] == nil || s.jobs[j.ID].job.ID != j.ID {
					t.Errorf("job %s has no pod", j.ID)
				}
			}
			if tt.wantRunning == nil {
				tt.wantRunning = map[string]string{}
			}
			if diff := cmp.Diff(tt.wantNodes, nodes); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantJobs, jobs); diff != "" {
				t.Errorf("jobs (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantRunning, running); diff != "" {
				t.Errorf("running (-want +got):\n%s", diff)
			}
			if len(s.problems) != len(tt.wantProblems) {
				t.Errorf("got %d problems, want %d: %+v", len(s.problems), len(tt.wantProblems), s.problems)
			}
			for _, want := range tt.wantProblems {
				reason, sub, _ := strings.Cut(want, ": ")
				found := false
				for _, p := range s.problems {
					found = found || (p.reason == reason && strings.Contains(p.message, sub))
				}
				if !found {
					t.Errorf("no problem %q among %+v", want, s.problems)
				}
			}
		})
	}
}

func TestBuildStateHostResources(t *testing.T) {
	web := newPod("web", 0, "")
	web.Spec.SchedulingGates, web.Spec.NodeName = nil, "a"
	web.Spec.Containers[0].Resources.Requests[v1.ResourceMemory] = resource.MustParse("3Gi")
	job := admitted(newPod("job", 1, oneGPU), "small", "a", true, 0) // its demand is the Plan's business
	s := buildState(epoch0, []*v1.Pod{web, job}, []*v1.Node{gpuNode("a", 2, 16384, "mps")}, testOptions)
	want := elastico.Node{ID: "a", CPU: 31, RAM: 125, GPUs: []elastico.GPU{
		{ID: "a/gpu0", Memory: 16, Shared: true}, {ID: "a/gpu1", Memory: 16, Shared: true}}}
	if diff := cmp.Diff([]elastico.Node{want}, s.state.Cluster.Nodes); diff != "" {
		t.Errorf("cluster (-want +got):\n%s", diff)
	}
}

// running marks a bound pod's containers as started.
func running(p *v1.Pod) *v1.Pod {
	p.Status.Phase = v1.PodRunning
	return p
}

// reporting gives a pod the observation annotations: rate since epoch0 +
// sinceMin minutes, under generation gen.
func reporting(p *v1.Pod, rate string, sinceMin int, gen string) *v1.Pod {
	p.Annotations[annotation.ObservedRate] = rate
	p.Annotations[annotation.ObservedSince] = epoch0.Add(time.Duration(sinceMin) * time.Minute).Format(time.RFC3339)
	p.Annotations[annotation.ObservedGeneration] = gen
	return p
}

func TestObserve(t *testing.T) {
	// Two epochs: the controller sees before at epoch0 and after ten
	// minutes later; x's pod reports in after.
	x := func() *v1.Pod { return running(admitted(newPod("x", 0, oneGPU), "small", "a", true, 0)) }
	y := func() *v1.Pod { return running(admitted(newPod("y", 1, oneGPU), "small", "a", true, 0)) }
	tests := []struct {
		name         string
		before       []*v1.Pod
		after        []*v1.Pod
		want         elastico.Observation // x's
		wantProblems []string
	}{
		{name: "a window begun within the stint", before: []*v1.Pod{x(), y()}, after: []*v1.Pod{reporting(x(), "87.5", 2, "1"), y()},
			want: elastico.Observation{Rate: 87.5, Over: 8 * time.Minute}},
		{name: "a window begun as the controller first saw the pod", before: []*v1.Pod{x()}, after: []*v1.Pod{reporting(x(), "90", 0, "1")},
			want: elastico.Observation{Rate: 90, Over: 10 * time.Minute}},
		{name: "a window begun before the controller saw the pod", before: []*v1.Pod{x()}, after: []*v1.Pod{reporting(x(), "90", -1, "1")}},
		{name: "a neighbour arrived after the window began", before: []*v1.Pod{x()}, after: []*v1.Pod{reporting(x(), "60", 2, "1"), y()}},
		{name: "a neighbour left after the window began", before: []*v1.Pod{x(), y()}, after: []*v1.Pod{reporting(x(), "60", 2, "1")}},
		{name: "another generation's rate", before: []*v1.Pod{x()}, after: []*v1.Pod{reporting(x(), "90", 2, "2")}},
		{name: "a pod not bound yet", before: []*v1.Pod{x()}, after: []*v1.Pod{func() *v1.Pod {
			p := reporting(x(), "90", 2, "1")
			p.Spec.NodeName, p.Status.Phase = "", v1.PodPending
			return p
		}()}},
		{name: "a pod whose containers have not started", before: []*v1.Pod{x()}, after: []*v1.Pod{func() *v1.Pod {
			p := reporting(x(), "90", 2, "1")
			p.Status.Phase = v1.PodPending
			return p
		}()}},
		{name: "a waiting pod", before: []*v1.Pod{newPod("x", 0, oneGPU)}, after: []*v1.Pod{reporting(newPod("x", 0, oneGPU), "90", 2, "1")}},
		{name: "a rate that does not parse: an Event, the job is still planned", before: []*v1.Pod{x()}, after: []*v1.Pod{reporting(x(), "fast", 2, "1")},
			wantProblems: []string{`ElasticoInvalidObservation: observation ignored: annotation: elastico.io/observed-rate is "fast"`}},
		{name: "a rate without its window", before: []*v1.Pod{x()}, after: []*v1.Pod{func() *v1.Pod {
			p := x()
			p.Annotations[annotation.ObservedRate] = "90"
			return p
		}()}, wantProblems: []string{"ElasticoInvalidObservation: elastico.io/observed-since is missing"}},
		{name: "a window begun after the controller's now", before: []*v1.Pod{x()}, after: []*v1.Pod{reporting(x(), "90", 11, "1")},
			wantProblems: []string{"ElasticoInvalidObservation: elastico.io/observed-since is later than the controller's clock"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			nodes := []*v1.Node{gpuNode("a", 2, 40960, "mps")}
			var tr stint.Tracker
			s := buildState(epoch0, tt.before, nodes, testOptions)
			s.observe(&tr)
			s = buildState(epoch0.Add(10*time.Minute), tt.after, nodes, testOptions)
			s.observe(&tr)
			if err := s.state.Validate(); err != nil {
				t.Fatalf("the State does not validate: %v", err)
			}
			jp := s.jobs["ns/x"]
			if jp == nil {
				t.Fatal("job ns/x is not in the State")
			}
			if jp.job.Observed != tt.want {
				t.Errorf("Observed = %+v, want %+v", jp.job.Observed, tt.want)
			}
			for _, j := range s.state.Jobs {
				if j.ID != "ns/x" && j.Observed != (elastico.Observation{}) {
					t.Errorf("job %s: Observed = %+v, want none", j.ID, j.Observed)
				}
			}
			if len(s.problems) != len(tt.wantProblems) {
				t.Errorf("got %d problems, want %d: %+v", len(s.problems), len(tt.wantProblems), s.problems)
			}
			for _, want := range tt.wantProblems {
				reason, sub, _ := strings.Cut(want, ": ")
				found := false
				for _, p := range s.problems {
					found = found || (p.reason == reason && p.obj == jp.pod && strings.Contains(p.message, sub))
				}
				if !found {
					t.Errorf("no problem %q among %+v", want, s.problems)
				}
			}
		})
	}
}
