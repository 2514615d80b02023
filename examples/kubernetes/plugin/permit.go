package plugin

import (
	"context"
	"fmt"
	"time"

	"github.com/elastico/elastico/examples/kubernetes/annotation"
	v1 "k8s.io/api/core/v1"
	fwk "k8s.io/kube-scheduler/framework"
)

// DefaultGangTimeout is how long a gang's member waits at Permit for the
// others (Args.GangTimeoutSeconds).
const DefaultGangTimeout = 60 * time.Second

// Permit binds a gang's members all together or not at all. A member that
// passed Filter waits here, on its node, until every member of its
// decision (annotation.Decision.Gang, all of one generation) has passed
// Filter too or is bound already (a scheduler restarted between two
// bindings); the last one to arrive lets them all go. A member that waits
// longer than the gang timeout is rejected, and Unreserve rejects the
// others with it. A pod that is not a gang's member passes.
func (p *Plugin) Permit(_ context.Context, state fwk.CycleState, pod *v1.Pod, _ string) (*fwk.Status, time.Duration) {
	if !optedIn(pod) {
		return nil, 0
	}
	data, err := state.Read(stateKey)
	if err != nil {
		return fwk.AsStatus(fmt.Errorf("plugin: reading the cycle state: %w", err)), 0
	}
	dec := data.(*cycleState).dec
	if len(dec.Gang) == 0 {
		return nil, 0
	}
	if p.handle == nil {
		return fwk.AsStatus(fmt.Errorf("plugin: a gang's member needs the framework handle (build the plugin with New)")), 0
	}
	var waiting []fwk.WaitingPod
	missing := ""
	for _, sh := range dec.Gang {
		if sh.Pod == pod.Name {
			continue
		}
		sib, err := p.pods.Pods(pod.Namespace).Get(sh.Pod)
		if err != nil {
			missing = fmt.Sprintf("member %s: %v", sh.Pod, err)
			continue
		}
		sd, ok, err := annotation.ParseDecision(sib.Annotations)
		switch {
		case err != nil || !ok || sd.Generation != dec.Generation || sib.DeletionTimestamp != nil:
			missing = fmt.Sprintf("member %s does not carry generation %d of the gang's decision yet", sh.Pod, dec.Generation)
		case sib.Spec.NodeName != "":
			// Bound already, under this decision.
		default:
			wp := p.handle.GetWaitingPod(sib.UID)
			if wp == nil {
				missing = fmt.Sprintf("member %s has no node yet", sh.Pod)
				continue
			}
			// The waiting member was placed by the decision it carried
			// then; one the controller rewrote since must go round again.
			if wd, _, err := annotation.ParseDecision(wp.GetPod().Annotations); err != nil || wd.Generation != dec.Generation {
				wp.Reject(Name, fmt.Sprintf("elastico: gang %s: the decision changed while the member waited", pod.Labels[annotation.GangLabel]))
				missing = fmt.Sprintf("member %s waited under an older decision", sh.Pod)
				continue
			}
			waiting = append(waiting, wp)
		}
	}
	if missing != "" {
		return fwk.NewStatus(fwk.Wait, "elastico: waiting for the gang: "+missing), p.gangTimeout
	}
	for _, wp := range waiting {
		wp.Allow(Name)
	}
	return nil, 0
}

// rejectGang rejects the waiting members of pod's gang: one member that
// cannot be bound (its wait timed out, a later plugin failed) sends the
// gang back to the queue whole.
func (p *Plugin) rejectGang(pod *v1.Pod) {
	g, ok := pod.Labels[annotation.GangLabel]
	if !ok || p.handle == nil {
		return
	}
	p.handle.IterateOverWaitingPods(func(wp fwk.WaitingPod) {
		o := wp.GetPod()
		if o.Namespace == pod.Namespace && o.UID != pod.UID && o.Labels[annotation.GangLabel] == g {
			wp.Reject(Name, fmt.Sprintf("elastico: gang %s: member %s could not be bound; the gang waits whole", g, pod.Name))
		}
	})
}
