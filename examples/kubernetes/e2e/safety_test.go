package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/elastico/elastico/examples/kubernetes/annotation"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSafety scripts the Plan (the greedy test scheduler, whose jobs can be
// held back) to drive the paths a default scheduler takes rarely:
// preemption of a bound pod, a pod that waits after it was admitted, a pod
// kept off GPUs a terminating pod still holds, and a corrupted decision.
func TestSafety(t *testing.T) {
	cp := startControlPlane(t)
	cs := cp.client
	ctx := context.Background()
	const ns = "safety"
	createNamespace(t, cp, ns)
	createNodes(t, cs, []nodeSpec{
		{"gpu-x", 1, 40960, "NVIDIA-A100-SXM4-40GB", "none", "32", "128Gi"},
		{"gpu-y", 2, 40960, "NVIDIA-A100-SXM4-40GB", "mps", "32", "128Gi"},
	})
	// Each pod's only configuration takes a whole GPU, so that a pod that
	// leaves a GPU is the only way another one gets it.
	whole := func(model string) string {
		return jobJSON(t, annotation.JobSpec{Class: "training", Model: model, Family: []annotation.ProfileSpec{cfg("b64", 64, 1, 1, 30, 100)}})
	}
	for _, name := range []string{"a", "b", "c"} {
		createPod(t, cs, elasticoPod(ns, name, whole("model-"+name)))
		time.Sleep(10 * time.Millisecond) // distinct arrival order
	}
	g := &greedy{}
	ctl := startController(t, cs, g)
	e := waitSteady(t, cs, ctl, ns, 60*time.Second)
	checkPlan(t, cs, ns, e)
	logCluster(t, cs, ns, e)

	get := func(name string) *v1.Pod {
		t.Helper()
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}

	// 1. A pod admitted while the scheduler is down, then held back by the
	// Plan before it is bound: the scheduler must not bind it, and its
	// PodScheduled condition carries the plugin's reason.
	cp.stopScheduler()
	createPod(t, cs, elasticoPod(ns, "d", whole("model-d")))
	g.setHold(ns+"/a", "") // nothing held yet; d waits for a free GPU
	waitFor(t, 20*time.Second, "pod d to get a decision", func() bool { return get("d").Annotations[annotation.Status] != "" })
	t.Logf("pod d (no GPU free): %s", get("d").Annotations[annotation.Status])
	// Preempt a: the Plan holds it back, the controller evicts it. With no
	// kubelet, the evicted pod stays Terminating and keeps its GPU.
	g.setHold(ns+"/a", "a higher-priority job arrived")
	waitFor(t, 20*time.Second, "pod a to be evicted", func() bool { return get("a").DeletionTimestamp != nil })
	aNode, aGPU := get("a").Spec.NodeName, get("a").Annotations[annotation.GPUs]
	var evicted string
	for _, ev := range events(t, cs, ns, "a") {
		if ev.Reason == "ElasticoPreempted" {
			evicted = ev.Message
		}
	}
	if !strings.Contains(evicted, "a higher-priority job arrived") {
		t.Errorf("pod a's ElasticoPreempted event says %q", evicted)
	}
	t.Logf("pod a evicted from %s GPU %s: %s", aNode, aGPU, evicted)
	// d now gets a's GPU in the Plan.
	waitFor(t, 20*time.Second, "pod d to be admitted", func() bool { return get("d").Annotations[annotation.Config] != "" })
	d := get("d")
	if gated(d) || d.Annotations[annotation.Node] != aNode || d.Annotations[annotation.GPUs] != aGPU {
		t.Fatalf("pod d: want admitted on a's GPU %s/%s, got %v (gated %v)", aNode, aGPU, d.Annotations, gated(d))
	}
	cp.startScheduler()
	// a still terminates on that GPU: the plugin keeps d off it and says why.
	var msg string
	waitFor(t, 20*time.Second, "pod d's PodScheduled condition", func() bool {
		c := condition(get("d"), v1.PodScheduled)
		if c != nil && c.Status == v1.ConditionFalse && strings.Contains(c.Message, "still held whole by "+ns+"/a") {
			msg = c.Message
			return true
		}
		return false
	})
	if get("d").Spec.NodeName != "" {
		t.Fatal("pod d was bound onto a GPU a terminating pod holds")
	}
	t.Logf("pod d waits for a to terminate: PodScheduled=False: %s", msg)
	// a finishes terminating (the kubelet would do this): d is bound.
	zero := int64(0)
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "a", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "pod d to be bound", func() bool { return get("d").Spec.NodeName == aNode })
	t.Logf("pod a gone: pod d bound to %s GPU %s", aNode, get("d").Annotations[annotation.GPUs])

	// 2. An admitted pod the Plan holds back before it is bound: the
	// plugin rejects it with the Plan's reason.
	cp.stopScheduler()
	createPod(t, cs, elasticoPod(ns, "e", whole("model-e")))
	g.setHold(ns+"/c", "maintenance window") // frees c's GPU for e
	waitFor(t, 20*time.Second, "pod e to be admitted", func() bool { return get("e").Annotations[annotation.Config] != "" && !gated(get("e")) })
	g.setHold(ns+"/e", "the team's GPU quota is spent")
	waitFor(t, 20*time.Second, "pod e to wait", func() bool { return get("e").Annotations[annotation.Config] == "" })
	cp.startScheduler()
	waitFor(t, 20*time.Second, "pod e's PodScheduled condition", func() bool {
		c := condition(get("e"), v1.PodScheduled)
		if c != nil && c.Status == v1.ConditionFalse && strings.Contains(c.Message, "elastico: waiting: Unaffordable: the team's GPU quota is spent") {
			msg = c.Message
			return true
		}
		return false
	})
	t.Logf("pod e admitted, then held back before binding: PodScheduled=False: %s", msg)
	if get("e").Spec.NodeName != "" {
		t.Error("pod e was bound although its Plan holds it back")
	}

	// 3. A bound pod whose decision is corrupted: the controller leaves it
	// and its node alone, and says why; once repaired, it is back.
	b := get("b")
	good := b.Annotations[annotation.GPUs]
	b.Annotations[annotation.GPUs] = "first"
	if _, err := cs.CoreV1().Pods(ns).Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var invalid string
	waitFor(t, 20*time.Second, "the ElasticoInvalidDecision event", func() bool {
		for _, ev := range events(t, cs, ns, "b") {
			if ev.Reason == "ElasticoInvalidDecision" {
				invalid = ev.Message
				return true
			}
		}
		return false
	})
	time.Sleep(time.Second) // a few epochs
	if got := get("b"); got.Annotations[annotation.GPUs] != "first" || got.DeletionTimestamp != nil {
		t.Errorf("the controller touched pod b after its decision stopped parsing: %v", got.Annotations)
	}
	t.Logf("pod b (decision corrupted): left alone, Event ElasticoInvalidDecision: %s", invalid)
	for _, ev := range events(t, cs, "", b.Spec.NodeName) {
		if ev.Reason == "ElasticoNodeOut" {
			t.Logf("node %s: Event %s: %s", b.Spec.NodeName, ev.Reason, ev.Message)
		}
	}
	b = get("b")
	b.Annotations[annotation.GPUs] = good
	if _, err := cs.CoreV1().Pods(ns).Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	g.setHold(ns+"/e", "")
	// c, evicted in step 2, finishes terminating.
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "c", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	e = waitSteady(t, cs, ctl, ns, 60*time.Second)
	checkPlan(t, cs, ns, e)
	logCluster(t, cs, ns, e)
}
