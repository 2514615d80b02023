package plugin

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/elastico/elastico/examples/kubernetes/annotation"
	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

func node(name string, gpus int, memMiB int) *v1.Node {
	rl := v1.ResourceList{"nvidia.com/gpu": *resource.NewQuantity(int64(gpus), resource.DecimalSI)}
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{annotation.GPUMemoryLabel: fmt.Sprint(memMiB)}},
		Status: v1.NodeStatus{Allocatable: rl}}
}

// pod is an opted-in pod with a decision: admitted on node's GPUs (each
// "<index>" or "<index>s" for shared) with the given SM share and memory,
// or waiting when node is "".
func pod(name, node string, sm, mem float64, gpus ...string) *v1.Pod {
	d := annotation.Decision{Status: "Unplaceable: no room", Generation: 3}
	if node != "" {
		d = annotation.Decision{Status: "Scheduled", Generation: 3, Config: "c", Node: node, SM: sm, MemoryGiB: mem, Slowdown: 1, Action: "start"}
		for _, g := range gpus {
			var i int
			fmt.Sscan(strings.TrimSuffix(g, "s"), &i)
			d.GPUs = append(d.GPUs, annotation.GPU{Index: i, Shared: strings.HasSuffix(g, "s")})
		}
	}
	ann := d.Annotations()
	ann[annotation.Job] = "{}"
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name), Annotations: ann}}
}

func newPlugin(t *testing.T, pods ...*v1.Pod) *Plugin {
	t.Helper()
	idx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, p := range pods {
		if err := idx.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	p, err := NewWithLister(Args{}, corelisters.NewPodLister(idx))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func code(s *fwk.Status) string {
	if s.IsSuccess() {
		return "Success"
	}
	return s.Code().String() + ": " + s.Message()
}

func TestPreFilter(t *testing.T) {
	plain := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
	undecided := pod("new", "", 0, 0)
	undecided.Annotations = map[string]string{annotation.Job: "{}"}
	garbled := pod("garbled", "gpu-a", 0.5, 10, "0")
	garbled.Annotations[annotation.GPUs] = "zero"
	tests := []struct {
		name      string
		pod       *v1.Pod
		wantCode  string
		wantNodes sets.Set[string]
	}{
		{"a pod that did not opt in is skipped", plain, "Skip: ", nil},
		{"no decision yet", undecided, "UnschedulableAndUnresolvable: elastico: waiting for the controller's first decision", nil},
		{"the Plan keeps it waiting", pod("w", "", 0, 0), "UnschedulableAndUnresolvable: elastico: waiting: Unplaceable: no room", nil},
		{"a decision that does not parse", garbled, `UnschedulableAndUnresolvable: elastico: the pod's decision does not parse: annotation: elastico.io/gpus entry 0 is "zero", want a device index`, nil},
		{"admitted: only the Plan's node", pod("p", "gpu-a", 0.5, 10, "1s"), "Success", sets.New("gpu-a")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, st := newPlugin(t).PreFilter(context.Background(), framework.NewCycleState(), tt.pod, nil)
			if got := code(st); got != tt.wantCode {
				t.Errorf("status = %q, want %q", got, tt.wantCode)
			}
			var nodes sets.Set[string]
			if res != nil {
				nodes = res.NodeNames
			}
			if diff := cmp.Diff(tt.wantNodes, nodes); diff != "" {
				t.Errorf("nodes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFilter(t *testing.T) {
	tests := []struct {
		name     string
		pod      *v1.Pod
		node     *v1.Node
		others   []*v1.Pod // already on the node (bound or assumed)
		wantCode string
	}{
		{"the Plan's node, GPUs free", pod("p", "gpu-a", 0.5, 10, "0", "1"), node("gpu-a", 2, 40960), nil, "Success"},
		{"another node", pod("p", "gpu-a", 0.5, 10, "0"), node("gpu-b", 2, 40960), nil,
			"UnschedulableAndUnresolvable: elastico: the Plan placed the pod on node gpu-a"},
		{"a GPU the node does not have", pod("p", "gpu-a", 0.5, 10, "2"), node("gpu-a", 2, 40960), nil,
			"UnschedulableAndUnresolvable: elastico: the Plan's GPU 2 is not on node gpu-a (2 GPUs)"},
		{"sharing within SMs and memory", pod("p", "gpu-a", 0.5, 20, "0s"), node("gpu-a", 2, 40960),
			[]*v1.Pod{pod("q", "gpu-a", 0.5, 20, "0s"), pod("r", "gpu-a", 1, 40, "1")}, "Success"},
		{"a GPU still held whole (a pod terminating there)", pod("p", "gpu-a", 0.5, 10, "0s"), node("gpu-a", 2, 40960),
			[]*v1.Pod{pod("old", "gpu-a", 1, 30, "0")}, "Unschedulable: elastico: GPU 0 of gpu-a is still held whole by ns/old"},
		{"a whole GPU still used by a sharer", pod("p", "gpu-a", 1, 10, "0"), node("gpu-a", 2, 40960),
			[]*v1.Pod{pod("q", "gpu-a", 0.3, 5, "0s")}, "Unschedulable: elastico: GPU 0 of gpu-a is still used by ns/q"},
		{"SMs over-committed", pod("p", "gpu-a", 0.5, 10, "0s"), node("gpu-a", 2, 40960),
			[]*v1.Pod{pod("q", "gpu-a", 0.3, 5, "0s"), pod("r", "gpu-a", 0.3, 5, "0s")},
			"Unschedulable: elastico: GPU 0 of gpu-a has 0.60 of its SMs held by ns/q, ns/r; the pod needs 0.50"},
		{"memory over-committed", pod("p", "gpu-a", 0.2, 20, "1s"), node("gpu-a", 2, 40960),
			[]*v1.Pod{pod("q", "gpu-a", 0.3, 25, "1s")},
			"Unschedulable: elastico: GPU 1 of gpu-a has 25.0 GiB of 40.0 held by ns/q; the pod needs 20.0"},
		{"pods of another node's decision or without one do not count", pod("p", "gpu-a", 1, 40, "0"), node("gpu-a", 2, 40960),
			[]*v1.Pod{pod("elsewhere", "gpu-b", 1, 40, "0"), {ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}}, "Success"},
		{"a node without the memory label", pod("p", "gpu-a", 1, 40, "0"), func() *v1.Node { n := node("gpu-a", 2, 1); n.Labels = nil; return n }(), nil,
			"UnschedulableAndUnresolvable: elastico: node gpu-a: annotation: label nvidia.com/gpu.memory is missing (the memory of one GPU, MiB)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl := newPlugin(t)
			cs := framework.NewCycleState()
			if _, st := pl.PreFilter(context.Background(), cs, tt.pod, nil); !st.IsSuccess() {
				t.Fatalf("PreFilter: %v", st)
			}
			ni := framework.NewNodeInfo(append(tt.others, tt.pod)...) // the pod itself never counts against itself
			ni.SetNode(tt.node)
			if got := code(pl.Filter(context.Background(), cs, tt.pod, ni)); got != tt.wantCode {
				t.Errorf("Filter = %q, want %q", got, tt.wantCode)
			}
		})
	}
}

func TestReserve(t *testing.T) {
	scheduled := pod("p", "gpu-a", 0.5, 10, "0")
	moved := pod("p", "gpu-b", 0.5, 10, "0")
	moved.Annotations[annotation.Generation] = "4"
	tests := []struct {
		name     string
		latest   *v1.Pod // what the informer has now; nil: the pod is gone
		wantCode string
	}{
		{"unchanged", scheduled, "Success"},
		{"the controller moved it meanwhile", moved, "Unschedulable: elastico: the decision changed during the scheduling cycle (generation 4, node gpu-b)"},
		{"the Plan holds it back meanwhile", pod("p", "", 0, 0), "Unschedulable: elastico: the decision changed during the scheduling cycle: elastico: waiting: Unplaceable: no room"},
		{"deleted meanwhile", nil, "UnschedulableAndUnresolvable: elastico: the pod is gone"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var pl *Plugin
			if tt.latest != nil {
				pl = newPlugin(t, tt.latest)
			} else {
				pl = newPlugin(t)
			}
			cs := framework.NewCycleState()
			if _, st := pl.PreFilter(context.Background(), cs, scheduled, nil); !st.IsSuccess() {
				t.Fatal(st)
			}
			if got := code(pl.Reserve(context.Background(), cs, scheduled, "gpu-a")); got != tt.wantCode {
				t.Errorf("Reserve = %q, want %q", got, tt.wantCode)
			}
		})
	}
	plain := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
	if st := newPlugin(t).Reserve(context.Background(), framework.NewCycleState(), plain, "any"); !st.IsSuccess() {
		t.Errorf("Reserve of a pod that did not opt in = %v", st)
	}
}

func TestQueueingHints(t *testing.T) {
	logger := klog.Background()
	a, b := pod("p", "gpu-a", 0.5, 10, "0"), pod("p", "gpu-a", 0.5, 10, "1")
	relabelled := a.DeepCopy()
	relabelled.Labels = map[string]string{"x": "y"}
	tests := []struct {
		name string
		got  func() (fwk.QueueingHint, error)
		want fwk.QueueingHint
	}{
		{"decision changed", func() (fwk.QueueingHint, error) { return decisionChanged(logger, a, a, b) }, fwk.Queue},
		{"other update", func() (fwk.QueueingHint, error) { return decisionChanged(logger, a, a, relabelled) }, fwk.QueueSkip},
		{"a pod holding GPUs left", func() (fwk.QueueingHint, error) { return heldGPUs(logger, b, a, nil) }, fwk.Queue},
		{"a plain pod left", func() (fwk.QueueingHint, error) {
			return heldGPUs(logger, b, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}}, nil)
		}, fwk.QueueSkip},
		{"the Plan's node changed", func() (fwk.QueueingHint, error) { return planNode(logger, a, nil, node("gpu-a", 1, 1)) }, fwk.Queue},
		{"another node changed", func() (fwk.QueueingHint, error) { return planNode(logger, a, nil, node("gpu-z", 1, 1)) }, fwk.QueueSkip},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.got()
			if err != nil || got != tt.want {
				t.Errorf("hint = %v, %v; want %v", got, err, tt.want)
			}
		})
	}
}

func TestArgs(t *testing.T) {
	if _, err := NewWithLister(Args{GPUResource: "nvidia com/gpu"}, nil); err == nil {
		t.Error("NewWithLister accepted a resource name with a space")
	}
	p, err := NewWithLister(Args{GPUResource: "amd.com/gpu"}, nil)
	if err != nil || p.gpuResource != "amd.com/gpu" {
		t.Errorf("NewWithLister = %v, %v", p, err)
	}
}
