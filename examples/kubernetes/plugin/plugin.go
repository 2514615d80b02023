package plugin

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/elastico/elastico/examples/kubernetes/annotation"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// Name is the plugin's name in a KubeSchedulerConfiguration.
const Name = "Elastico"

// Args are the plugin's arguments (pluginConfig[].args).
type Args struct {
	// GPUResource is the node resource that counts GPUs (default
	// nvidia.com/gpu); it must match the controller's.
	GPUResource string `json:"gpuResource,omitempty"`
	// GangTimeoutSeconds is how long a gang's member waits at Permit for
	// the others before the gang is sent back to the queue (default 60).
	GangTimeoutSeconds int `json:"gangTimeoutSeconds,omitempty"`
}

// Plugin is the scheduler plugin. Its zero value is not usable; build it
// with New (or NewWithLister in tests).
type Plugin struct {
	gpuResource v1.ResourceName
	gangTimeout time.Duration
	pods        corelisters.PodLister
	handle      fwk.Handle // the waiting pods of Permit; nil in unit tests
}

var (
	_ fwk.PreFilterPlugin   = (*Plugin)(nil)
	_ fwk.FilterPlugin      = (*Plugin)(nil)
	_ fwk.ReservePlugin     = (*Plugin)(nil)
	_ fwk.PermitPlugin      = (*Plugin)(nil)
	_ fwk.EnqueueExtensions = (*Plugin)(nil)
	_ fwk.SignPlugin        = (*Plugin)(nil)
)

// New builds the plugin; it is the factory app.WithPlugin takes.
func New(_ context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	var args Args
	if obj != nil {
		if err := frameworkruntime.DecodeInto(obj, &args); err != nil {
			return nil, fmt.Errorf("plugin: decoding %s args: %w", Name, err)
		}
	}
	// Registering the pod informer here is what makes it start with the
	// scheduler's other informers.
	pods := h.SharedInformerFactory().Core().V1().Pods()
	pods.Informer()
	p, err := NewWithLister(args, pods.Lister())
	if err != nil {
		return nil, err
	}
	p.handle = h
	return p, nil
}

// NewWithLister builds the plugin with the pod lister Reserve reads the
// latest decision from.
func NewWithLister(args Args, pods corelisters.PodLister) (*Plugin, error) {
	p := &Plugin{gpuResource: "nvidia.com/gpu", gangTimeout: DefaultGangTimeout, pods: pods}
	if args.GangTimeoutSeconds < 0 {
		return nil, fmt.Errorf("plugin: args.gangTimeoutSeconds is %d, want ≥ 0 (0: %v)", args.GangTimeoutSeconds, DefaultGangTimeout)
	}
	if args.GangTimeoutSeconds > 0 {
		p.gangTimeout = time.Duration(args.GangTimeoutSeconds) * time.Second
	}
	if args.GPUResource != "" {
		if strings.ContainsAny(args.GPUResource, " \t\n") {
			return nil, fmt.Errorf("plugin: args.gpuResource is %q, want a resource name", args.GPUResource)
		}
		p.gpuResource = v1.ResourceName(args.GPUResource)
	}
	return p, nil
}

// Name returns Name.
func (p *Plugin) Name() string { return Name }

const stateKey fwk.StateKey = Name

type cycleState struct{ dec annotation.Decision }

func (s *cycleState) Clone() fwk.StateData { return s }

func optedIn(pod *v1.Pod) bool {
	_, ok := pod.Annotations[annotation.Job]
	return ok
}

// PreFilter turns the pod's decision into the one node to evaluate, or
// into the reason the pod waits.
func (p *Plugin) PreFilter(_ context.Context, state fwk.CycleState, pod *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if !optedIn(pod) {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	dec, st := decision(pod)
	if st != nil {
		return nil, st
	}
	state.Write(stateKey, &cycleState{dec: dec})
	return &fwk.PreFilterResult{NodeNames: sets.New(dec.Node)}, nil
}

// decision returns the pod's admitted decision, or the status that keeps
// the pod waiting.
func decision(pod *v1.Pod) (annotation.Decision, *fwk.Status) {
	dec, ok, err := annotation.ParseDecision(pod.Annotations)
	switch {
	case err != nil:
		return dec, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "elastico: the pod's decision does not parse: "+err.Error())
	case !ok:
		return dec, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "elastico: waiting for the controller's first decision")
	case !dec.Admitted():
		return dec, fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "elastico: waiting: "+dec.Status)
	}
	return dec, nil
}

// PreFilterExtensions returns nil: Filter reads the node's pods itself.
func (p *Plugin) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter accepts only the Plan's node, and only while the Plan's GPUs are
// free there.
func (p *Plugin) Filter(_ context.Context, state fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	data, err := state.Read(stateKey)
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("plugin: reading the cycle state: %w", err))
	}
	dec := data.(*cycleState).dec
	node := ni.Node()
	if node.Name != dec.Node {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "elastico: the Plan placed the pod on node "+dec.Node)
	}
	return p.gpusFree(pod, &dec, ni)
}

// usage is what the pods on one GPU hold.
type usage struct {
	sm, mem float64
	holders []string // pod names
	whole   string   // a pod that holds the GPU whole, if any
}

// gpusFree checks the pod's GPUs against the other pods on the node.
func (p *Plugin) gpusFree(pod *v1.Pod, dec *annotation.Decision, ni fwk.NodeInfo) *fwk.Status {
	node := ni.Node()
	q := node.Status.Allocatable[p.gpuResource]
	ng, err := annotation.ParseNode(node.Labels, q.Value())
	if err != nil {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("elastico: node %s: %v", node.Name, err))
	}
	use := map[int]*usage{}
	for _, pi := range ni.GetPods() {
		other := pi.GetPod()
		if other.UID == pod.UID {
			continue
		}
		od, ok, err := annotation.ParseDecision(other.Annotations)
		if err != nil || !ok || !od.Admitted() || od.Node != node.Name {
			continue
		}
		for _, g := range od.GPUs {
			u := use[g.Index]
			if u == nil {
				u = &usage{}
				use[g.Index] = u
			}
			u.sm += od.SM
			u.mem += od.MemoryGiB
			u.holders = append(u.holders, other.Namespace+"/"+other.Name)
			if !g.Shared {
				u.whole = other.Namespace + "/" + other.Name
			}
		}
	}
	for _, g := range dec.GPUs {
		if g.Index >= ng.Count {
			return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("elastico: the Plan's GPU %d is not on node %s (%d GPUs)", g.Index, node.Name, ng.Count))
		}
		u := use[g.Index]
		if u == nil {
			continue
		}
		switch {
		case u.whole != "":
			return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("elastico: GPU %d of %s is still held whole by %s", g.Index, node.Name, u.whole))
		case !g.Shared:
			return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("elastico: GPU %d of %s is still used by %s", g.Index, node.Name, strings.Join(u.holders, ", ")))
		case u.sm+dec.SM > 1+1e-9:
			return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("elastico: GPU %d of %s has %.2f of its SMs held by %s; the pod needs %.2f", g.Index, node.Name, u.sm, strings.Join(u.holders, ", "), dec.SM))
		case u.mem+dec.MemoryGiB > ng.MemoryGiB*(1+1e-9):
			return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("elastico: GPU %d of %s has %.1f GiB of %.1f held by %s; the pod needs %.1f", g.Index, node.Name, u.mem, ng.MemoryGiB, strings.Join(u.holders, ", "), dec.MemoryGiB))
		}
	}
	return nil
}

// Reserve checks that the decision the cycle scheduled by is still the
// pod's: the controller may have changed it meanwhile.
func (p *Plugin) Reserve(_ context.Context, state fwk.CycleState, pod *v1.Pod, nodeName string) *fwk.Status {
	if !optedIn(pod) {
		return nil
	}
	data, err := state.Read(stateKey)
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("plugin: reading the cycle state: %w", err))
	}
	was := data.(*cycleState).dec
	latest, err := p.pods.Pods(pod.Namespace).Get(pod.Name)
	switch {
	case apierrors.IsNotFound(err):
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "elastico: the pod is gone")
	case err != nil:
		return fwk.AsStatus(fmt.Errorf("plugin: reading pod %s/%s: %w", pod.Namespace, pod.Name, err))
	case latest.UID != pod.UID:
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "elastico: the pod was replaced")
	}
	now, st := decision(latest)
	if st != nil {
		return fwk.NewStatus(fwk.Unschedulable, "elastico: the decision changed during the scheduling cycle: "+st.Message())
	}
	if now.Generation != was.Generation || now.Node != nodeName {
		return fwk.NewStatus(fwk.Unschedulable, fmt.Sprintf("elastico: the decision changed during the scheduling cycle (generation %d, node %s)", now.Generation, now.Node))
	}
	return nil
}

// Unreserve sends a gang's other waiting members back to the queue with
// the pod that failed (see Permit); Reserve keeps no state to undo.
func (p *Plugin) Unreserve(_ context.Context, _ fwk.CycleState, pod *v1.Pod, _ string) {
	if optedIn(pod) {
		p.rejectGang(pod)
	}
}

// SignPod keeps elastico's pods out of the scheduler's batching: each is
// bound to its own node. Other pods are signed with nothing, as though the
// plugin were not there.
func (p *Plugin) SignPod(_ context.Context, pod *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	if optedIn(pod) {
		return nil, fwk.NewStatus(fwk.Unschedulable, "elastico: every pod has its own node")
	}
	return nil, nil
}

// EventsToRegister requeues a waiting pod when its decision changes, when
// a pod that held GPUs leaves or changes its decision, and when a node's
// GPUs appear or change.
func (p *Plugin) EventsToRegister(context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Update}, QueueingHintFn: decisionChanged},
		{Event: fwk.ClusterEvent{Resource: fwk.Pod, ActionType: fwk.Delete}, QueueingHintFn: heldGPUs},
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel | fwk.UpdateNodeAllocatable}, QueueingHintFn: planNode},
	}, nil
}

func decisionChanged(_ klog.Logger, _ *v1.Pod, oldObj, newObj any) (fwk.QueueingHint, error) {
	o, ok1 := oldObj.(*v1.Pod)
	n, ok2 := newObj.(*v1.Pod)
	if !ok1 || !ok2 {
		return fwk.Queue, fmt.Errorf("plugin: pod update with %T and %T", oldObj, newObj)
	}
	for _, k := range annotation.OutputKeys() {
		if o.Annotations[k] != n.Annotations[k] {
			return fwk.Queue, nil
		}
	}
	return fwk.QueueSkip, nil
}

func heldGPUs(_ klog.Logger, _ *v1.Pod, oldObj, _ any) (fwk.QueueingHint, error) {
	o, ok := oldObj.(*v1.Pod)
	if !ok {
		return fwk.Queue, nil // a tombstone: look again
	}
	if _, has := o.Annotations[annotation.GPUs]; has {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}

func planNode(_ klog.Logger, pod *v1.Pod, _, newObj any) (fwk.QueueingHint, error) {
	n, ok := newObj.(*v1.Node)
	if !ok {
		return fwk.Queue, fmt.Errorf("plugin: node event with %T", newObj)
	}
	if pod.Annotations[annotation.Node] == n.Name {
		return fwk.Queue, nil
	}
	return fwk.QueueSkip, nil
}
