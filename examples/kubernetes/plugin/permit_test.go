package plugin

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/elastico/elastico/examples/kubernetes/annotation"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// waitingPod records what Permit and Unreserve do to a pod waiting at
// Permit.
type waitingPod struct {
	pod               *v1.Pod
	allowed, rejected bool
}

func (w *waitingPod) GetPod() *v1.Pod                   { return w.pod }
func (w *waitingPod) GetPendingPlugins() []string       { return []string{Name} }
func (w *waitingPod) Allow(string)                      { w.allowed = true }
func (w *waitingPod) Reject(string, string) bool        { w.rejected = true; return true }
func (w *waitingPod) Preempt(string, string) bool       { return false }
func (h *waitingHandle) find(uid types.UID) *waitingPod { return h.pods[uid] }

// waitingHandle is the part of the framework's handle Permit uses.
type waitingHandle struct {
	fwk.Handle
	pods map[types.UID]*waitingPod
}

func (h *waitingHandle) GetWaitingPod(uid types.UID) fwk.WaitingPod {
	if w := h.find(uid); w != nil {
		return w
	}
	return nil
}

func (h *waitingHandle) IterateOverWaitingPods(f func(fwk.WaitingPod)) {
	for _, w := range h.pods {
		f(w)
	}
}

// member is pod name of gang g with rank r of the shares
// "g-0=gpu-a:0,1;g-1=gpu-b:0,1", at generation gen.
func member(name string, r int, gen int64) *v1.Pod {
	p := pod(name, []string{"gpu-a", "gpu-b"}[r], 1, 10, "0", "1")
	d, _, err := annotation.ParseDecision(p.Annotations)
	if err != nil {
		panic(err)
	}
	d.Generation, d.Rank = gen, r
	d.Gang = []annotation.Share{{Pod: "g-0", Node: "gpu-a", GPUs: []int{0, 1}}, {Pod: "g-1", Node: "gpu-b", GPUs: []int{0, 1}}}
	for k, v := range d.Annotations() {
		p.Annotations[k] = v
	}
	p.Labels = map[string]string{annotation.GangLabel: "g"}
	return p
}

func TestPermit(t *testing.T) {
	self := member("g-0", 0, 3)
	boundSib := member("g-1", 1, 3)
	boundSib.Spec.NodeName = "gpu-b"
	tests := []struct {
		name        string
		sibling     *v1.Pod // g-1 as the informer has it; nil: not created
		waiting     bool    // g-1 waits at Permit
		wantCode    string
		wantAllowed bool
	}{
		{"the other member has no node yet", member("g-1", 1, 3), false, "Wait: elastico: waiting for the gang: member g-1 has no node yet", false},
		{"the other member waits at Permit: both go", member("g-1", 1, 3), true, "Success", true},
		{"the other member is bound already (a scheduler restart)", boundSib, false, "Success", false},
		{"the other member carries another generation", member("g-1", 1, 2), true, "Wait: elastico: waiting for the gang: member g-1 does not carry generation 3 of the gang's decision yet", false},
		{"the other member does not exist", nil, false, `Wait: elastico: waiting for the gang: member g-1: pod "g-1" not found`, false},
		{"the other member waits under the decision it had before a rewrite", member("g-1", 1, 3), true, "Wait: elastico: waiting for the gang: member g-1 waited under an older decision", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pods := []*v1.Pod{self}
			h := &waitingHandle{pods: map[types.UID]*waitingPod{}}
			if tt.sibling != nil {
				pods = append(pods, tt.sibling)
				if tt.waiting {
					// What the member was placed by: the lister's copy, or
					// for the last case an older generation.
					placed := tt.sibling
					if strings.Contains(tt.name, "rewrite") {
						placed = member("g-1", 1, 2)
					}
					h.pods[tt.sibling.UID] = &waitingPod{pod: placed}
				}
			}
			pl := newPlugin(t, pods...)
			pl.handle, pl.gangTimeout = h, 7*time.Second
			cs := framework.NewCycleState()
			if _, st := pl.PreFilter(context.Background(), cs, self, nil); !st.IsSuccess() {
				t.Fatal(st)
			}
			st, timeout := pl.Permit(context.Background(), cs, self, "gpu-a")
			if got := code(st); got != tt.wantCode {
				t.Errorf("Permit = %q, want %q", got, tt.wantCode)
			}
			if st.Code() == fwk.Wait && timeout != 7*time.Second {
				t.Errorf("Permit waits %v, want the gang timeout", timeout)
			}
			if w := h.find("g-1"); (w != nil && w.allowed) != tt.wantAllowed {
				t.Errorf("the other member allowed = %v, want %v", w != nil && w.allowed, tt.wantAllowed)
			}
			if w := h.find("g-1"); w != nil && w.rejected != strings.Contains(tt.name, "rewrite") {
				t.Errorf("the other member rejected = %v", w.rejected)
			}
		})
	}

	// A pod that is not a gang's member passes at once.
	single := pod("p", "gpu-a", 0.5, 10, "0")
	pl := newPlugin(t, single)
	cs := framework.NewCycleState()
	if _, st := pl.PreFilter(context.Background(), cs, single, nil); !st.IsSuccess() {
		t.Fatal(st)
	}
	if st, _ := pl.Permit(context.Background(), cs, single, "gpu-a"); !st.IsSuccess() {
		t.Errorf("Permit of a one-pod job = %v", st)
	}
}

func TestUnreserveRejectsTheGang(t *testing.T) {
	a, b := member("g-0", 0, 3), member("g-1", 1, 3)
	other := member("h-0", 0, 3)
	other.Labels[annotation.GangLabel], other.UID = "h", "h-0"
	h := &waitingHandle{pods: map[types.UID]*waitingPod{b.UID: {pod: b}, other.UID: {pod: other}}}
	pl := newPlugin(t, a, b, other)
	pl.handle = h
	pl.Unreserve(context.Background(), framework.NewCycleState(), a, "gpu-a")
	var rejected []string
	for _, w := range h.pods {
		if w.rejected {
			rejected = append(rejected, w.pod.Name)
		}
	}
	if !slices.Equal(rejected, []string{"g-1"}) {
		t.Errorf("rejected %v, want the failed pod's gang only: [g-1]", rejected)
	}
}
