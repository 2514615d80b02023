package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/examples/kubernetes/annotation"
	"github.com/elastico/elastico/examples/kubernetes/controller"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
)

// runningController is a controller started by a test, with the last
// epochs it ran.
type runningController struct {
	t      *testing.T
	stop   context.CancelFunc
	done   chan error
	mu     sync.Mutex
	epochs []*controller.Epoch
}

func startController(t *testing.T, cs kubernetes.Interface, sched elastico.Scheduler) *runningController {
	t.Helper()
	rc := &runningController{t: t, done: make(chan error, 1)}
	c, err := controller.New(controller.Config{
		Client: cs, Scheduler: sched, Interval: 200 * time.Millisecond, EpochTimeout: 5 * time.Second,
		OnEpoch: func(e *controller.Epoch) {
			rc.mu.Lock()
			rc.epochs = append(rc.epochs, e)
			rc.mu.Unlock()
			for _, line := range e.Applied {
				t.Logf("controller: %s", line)
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	rc.stop = cancel
	go func() { rc.done <- c.Run(ctx) }()
	t.Cleanup(rc.halt)
	return rc
}

func (rc *runningController) halt() {
	if rc.stop == nil {
		return
	}
	rc.stop()
	if err := <-rc.done; err != nil {
		rc.t.Errorf("controller.Run: %v", err)
	}
	rc.stop = nil
}

func (rc *runningController) last() *controller.Epoch {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.epochs) == 0 {
		return nil
	}
	return rc.epochs[len(rc.epochs)-1]
}

// applied returns every line the controller wrote.
func (rc *runningController) applied() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	var out []string
	for _, e := range rc.epochs {
		out = append(out, e.Applied...)
	}
	return out
}

func listPods(t *testing.T, cs kubernetes.Interface, ns string) []v1.Pod {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(pods.Items, func(a, b v1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return pods.Items
}

// waitSteady waits until an epoch that started after the call wrote
// nothing and every pod the Plan admitted is bound to the Plan's node; it
// returns that epoch.
func waitSteady(t *testing.T, cs kubernetes.Interface, rc *runningController, ns string, timeout time.Duration) *controller.Epoch {
	t.Helper()
	since := time.Now()
	deadline := since.Add(timeout)
	var why string
	for time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		e := rc.last()
		if e == nil || e.Plan == nil || !e.State.Now.After(since) {
			why = "no epoch yet"
			continue
		}
		if len(e.Applied) > 0 || len(e.Errors) > 0 {
			why = fmt.Sprintf("the last epoch wrote %d changes (%d errors)", len(e.Applied), len(e.Errors))
			continue
		}
		why = ""
		for _, p := range listPods(t, cs, ns) {
			d, ok, err := annotation.ParseDecision(p.Annotations)
			if err == nil && ok && d.Admitted() && p.Spec.NodeName != d.Node {
				why = fmt.Sprintf("pod %s is admitted on %s but bound to %q", p.Name, d.Node, p.Spec.NodeName)
				break
			}
		}
		if why == "" {
			// That epoch wrote nothing: the pods carry its Plan.
			return e
		}
	}
	t.Fatalf("not steady after %v: %s", timeout, why)
	return nil
}

func events(t *testing.T, cs kubernetes.Interface, ns, name string) []v1.Event {
	t.Helper()
	sel := fields.OneTermEqualSelector("involvedObject.name", name).String()
	ev, err := cs.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		t.Fatal(err)
	}
	return ev.Items
}

func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func condition(p *v1.Pod, typ v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == typ {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func gated(p *v1.Pod) bool {
	for _, g := range p.Spec.SchedulingGates {
		if g.Name == annotation.SchedulingGate {
			return true
		}
	}
	return false
}

// startKubelet plays the one part of a kubelet the tests need: a pod being
// deleted (an eviction) stops after delay and is removed, which frees its
// GPUs. No kubelet runs in the test cluster, so without it an evicted pod
// would stay Terminating forever.
func startKubelet(t *testing.T, cs kubernetes.Interface, ns string, delay time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		zero := int64(0)
		for ctx.Err() == nil {
			pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
			if err == nil {
				for _, p := range pods.Items {
					if p.DeletionTimestamp != nil && time.Since(p.DeletionTimestamp.Add(-time.Duration(*p.DeletionGracePeriodSeconds)*time.Second)) > delay {
						if err := cs.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &zero}); err == nil {
							t.Logf("kubelet: pod %s on %s terminated", p.Name, p.Spec.NodeName)
						}
					}
				}
			}
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
}
