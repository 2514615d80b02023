package e2e

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/examples/kubernetes/annotation"
	v1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func createNamespace(t *testing.T, cp *controlPlane, ns string) {
	t.Helper()
	_, err := cp.client.CoreV1().Namespaces().Create(context.Background(), &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
}

// TestElastico runs the controller with the library's default scheduler
// (pds) and the scheduler plugin against a real API server, etcd and
// kube-scheduler: training and inference pods on three GPU nodes, then a
// controller restart with pods arriving while it is down, then a scheduler
// restart while a fourth GPU node joins.
func TestElastico(t *testing.T) {
	t0 := time.Now()
	cp := startControlPlane(t)
	cs := cp.client
	const ns = "ml"
	createNamespace(t, cp, ns)
	createNodes(t, cs, testNodes)

	var specs []jobSpec
	for i := range max(len(trainingJobs), len(inferenceJobs)) {
		if i < len(trainingJobs) {
			specs = append(specs, trainingJobs[i])
		}
		if i < len(inferenceJobs) {
			specs = append(specs, inferenceJobs[i])
		}
	}
	for _, s := range specs[:7] {
		createPod(t, cs, elasticoPod(ns, s.name, jobJSON(t, s.spec)))
	}
	createPod(t, cs, elasticoPod(ns, giant.name, jobJSON(t, giant.spec)))
	// A job profiled on V100s only: it may run on gpu-c alone.
	createPod(t, cs, elasticoPod(ns, v100Only.name, jobJSON(t, v100Only.spec)))
	// The README's example job, as its Job controller would create the pod.
	if _, err := cs.NodeV1().RuntimeClasses().Create(context.Background(), &nodev1.RuntimeClass{ObjectMeta: metav1.ObjectMeta{Name: "nvidia"}, Handler: "nvidia"}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tmpl := exampleJob(t).Spec.Template
	createPod(t, cs, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "example-job", Namespace: ns, Annotations: tmpl.Annotations}, Spec: tmpl.Spec})
	// An opted-in pod that names another scheduler: left alone.
	wrong := elasticoPod(ns, "wrong-sched", jobJSON(t, inferenceJobs[4].spec))
	wrong.Spec.SchedulerName = "default-scheduler"
	createPod(t, cs, wrong)
	web := createPod(t, cs, plainPod(ns, "web"))
	broken := elasticoPod(ns, "broken", `{"class": "training", "family": [{"id": "b32", "gpus": 1, "sm": 0.5, "gpuMemoryGB": 8, "throughput": 10}]}`)
	createPod(t, cs, broken)

	startKubelet(t, cs, ns, 500*time.Millisecond)
	sched := newScheduler(t)
	ctl := startController(t, cs, sched)
	e := waitSteady(t, cs, ctl, ns, 90*time.Second)
	logCluster(t, cs, ns, e)
	bound, shared, classes := checkPlan(t, cs, ns, e)
	t.Logf("first controller: %d pods bound (%d training, %d inference), %d GPUs shared, after %v",
		bound, classes[elastico.Training], classes[elastico.Inference], shared, time.Since(t0).Round(time.Millisecond))
	if classes[elastico.Training] == 0 || classes[elastico.Inference] == 0 {
		t.Errorf("want both training and inference pods bound, got %v", classes)
	}

	for _, n := range e.State.Cluster.Nodes {
		want := map[string]string{"gpu-a": "A100", "gpu-b": "A100", "gpu-c": "V100"}[n.ID]
		if len(n.GPUs) > 0 && n.GPUs[0].Model != want {
			t.Errorf("node %s: GPU model %q, want %q from its %s label", n.ID, n.GPUs[0].Model, want, annotation.GPUProductLabel)
		}
	}
	if p, err := cs.CoreV1().Pods(ns).Get(context.Background(), v100Only.name, metav1.GetOptions{}); err != nil {
		t.Error(err)
	} else if p.Spec.NodeName != "" && p.Spec.NodeName != "gpu-c" {
		t.Errorf("pod %s, profiled on V100s only, is bound to %s", v100Only.name, p.Spec.NodeName)
	} else {
		t.Logf("pod %s (profiles for V100 only): bound to %q", v100Only.name, p.Spec.NodeName)
	}

	// The pod that did not opt in is scheduled as usual and never written to.
	waitFor(t, 30*time.Second, "the plain pod to be bound", func() bool {
		p, err := cs.CoreV1().Pods(ns).Get(context.Background(), "web", metav1.GetOptions{})
		return err == nil && p.Spec.NodeName != ""
	})
	gotWeb, _ := cs.CoreV1().Pods(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if !maps.Equal(gotWeb.Annotations, web.Annotations) || condition(gotWeb, annotation.AdmittedCnd) != nil {
		t.Errorf("the pod that did not opt in was written to: annotations %v, conditions %v", gotWeb.Annotations, gotWeb.Status.Conditions)
	}
	t.Logf("pod web (not opted in): bound to %s, annotations untouched", gotWeb.Spec.NodeName)

	// The pod whose annotation does not parse is left alone, with an Event.
	gotBroken, _ := cs.CoreV1().Pods(ns).Get(context.Background(), "broken", metav1.GetOptions{})
	if !gated(gotBroken) || gotBroken.Annotations[annotation.Status] != "" || gotBroken.Spec.NodeName != "" {
		t.Errorf("the pod with a bad annotation was touched: %v", gotBroken.Annotations)
	}
	var said string
	waitFor(t, 10*time.Second, "the ElasticoInvalidJob event", func() bool {
		for _, ev := range events(t, cs, ns, "broken") {
			if ev.Reason == "ElasticoInvalidJob" {
				said = ev.Message
				return true
			}
		}
		return false
	})
	if !strings.Contains(said, `unknown field "gpuMemoryGB"`) {
		t.Errorf("the Event says %q, want the unknown field named", said)
	}
	t.Logf("pod broken: left gated, Event ElasticoInvalidJob: %s", said)

	gotWrong, _ := cs.CoreV1().Pods(ns).Get(context.Background(), "wrong-sched", metav1.GetOptions{})
	if !gated(gotWrong) || gotWrong.Annotations[annotation.Status] != "" {
		t.Errorf("the pod naming another scheduler was touched: %v", gotWrong.Annotations)
	}
	for _, ev := range events(t, cs, ns, "wrong-sched") {
		if ev.Reason == "ElasticoInvalidJob" {
			t.Logf("pod wrong-sched: left gated, Event %s: %s", ev.Reason, ev.Message)
		}
	}

	// The pod that cannot run says why, in its status.
	gotGiant, _ := cs.CoreV1().Pods(ns).Get(context.Background(), "giant", metav1.GetOptions{})
	if c := condition(gotGiant, annotation.AdmittedCnd); c == nil || c.Status != v1.ConditionFalse {
		t.Errorf("pod giant: want a False %s condition, got %+v", annotation.AdmittedCnd, c)
	} else {
		t.Logf("pod giant waits: condition %s=%s reason %s: %s", c.Type, c.Status, c.Reason, c.Message)
	}

	// Controller restart: stop it, let pods arrive, start a new one. The
	// new controller knows only what the cluster says.
	ctl.halt()
	before := map[string]v1.Pod{}
	for _, p := range listPods(t, cs, ns) {
		before[p.Name] = p
	}
	for _, s := range specs[7:] {
		createPod(t, cs, elasticoPod(ns, s.name, jobJSON(t, s.spec)))
	}
	t1 := time.Now()
	ctl2 := startController(t, cs, newScheduler(t))
	e = waitSteady(t, cs, ctl2, ns, 90*time.Second)
	logCluster(t, cs, ns, e)
	bound, shared, classes = checkPlan(t, cs, ns, e)
	t.Logf("after the controller restart: %d pods bound (%d training, %d inference), %d GPUs shared; steady %v after the restart",
		bound, classes[elastico.Training], classes[elastico.Inference], shared, time.Since(t1).Round(time.Millisecond))
	moved := map[string]bool{}
	for _, line := range ctl2.applied() {
		if strings.HasPrefix(line, "update ") || strings.HasPrefix(line, "evict ") {
			name := strings.TrimPrefix(strings.Fields(line)[1], ns+"/")
			moved[strings.TrimSuffix(name, ":")] = true
		}
	}
	kept := 0
	for name, old := range before {
		if old.Spec.NodeName == "" || old.Annotations[annotation.Config] == "" {
			continue
		}
		now, err := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			if !moved[name] {
				t.Errorf("pod %s disappeared across the restart without the Plan evicting it: %v", name, err)
			}
			continue
		}
		same := now.Spec.NodeName == old.Spec.NodeName
		for _, k := range []string{annotation.Config, annotation.Node, annotation.GPUs, annotation.Generation, annotation.Env} {
			same = same && now.Annotations[k] == old.Annotations[k]
		}
		switch {
		case same:
			kept++
		case !moved[name]:
			t.Errorf("pod %s changed across the restart although the new controller's Plan did not act on it:\nbefore %v\nafter  %v", name, old.Annotations, now.Annotations)
		default:
			t.Logf("pod %s: the new controller's Plan changed it (generation %s -> %s)", name, old.Annotations[annotation.Generation], now.Annotations[annotation.Generation])
		}
	}
	t.Logf("across the controller restart %d bound pods kept their node, configuration, GPUs and generation", kept)
	if kept == 0 {
		t.Error("no bound pod kept its decision across the restart")
	}

	// Scheduler restart: stop it; a one-GPU node joins and two small
	// serving pods arrive, which the predictor calls quiet together
	// (1.05×) and which are worth more sharing it than any waiting job
	// alone; the controller admits pods onto the new node while no
	// scheduler runs; a new scheduler binds them where the Plan said.
	cp.stopScheduler()
	createNodes(t, cs, []nodeSpec{{"gpu-d", 1, 40960, "NVIDIA-A100-SXM4-40GB", "mps", "32", "256Gi"}})
	createPod(t, cs, elasticoPod(ns, "bert-serve-2", jobJSON(t, inferenceJobs[2].spec)))
	createPod(t, cs, elasticoPod(ns, "bert-serve-3", jobJSON(t, inferenceJobs[2].spec)))
	var admitted []string
	waitFor(t, 30*time.Second, "the controller to admit pods onto gpu-d", func() bool {
		admitted = admitted[:0]
		for _, p := range listPods(t, cs, ns) {
			if p.Annotations[annotation.Node] == "gpu-d" && !gated(&p) && p.Spec.NodeName == "" {
				admitted = append(admitted, p.Name)
			}
		}
		return len(admitted) > 0
	})
	time.Sleep(time.Second) // a few more epochs with no scheduler
	for _, name := range admitted {
		if p, _ := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{}); p.Spec.NodeName != "" {
			t.Errorf("pod %s was bound while no scheduler ran", name)
		}
	}
	t.Logf("scheduler down, node gpu-d added: the Plan admitted %v there; unbound", admitted)
	cp.startScheduler()
	e = waitSteady(t, cs, ctl2, ns, 60*time.Second)
	bound, shared, classes = checkPlan(t, cs, ns, e)
	logCluster(t, cs, ns, e)
	for _, name := range admitted {
		if p, _ := cs.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{}); p.Spec.NodeName == "" {
			t.Errorf("pod %s, admitted while the scheduler was down, is not bound after it restarted", name)
		}
	}
	t.Logf("after the scheduler restart: %d pods bound (%d training, %d inference), %d GPUs shared", bound, classes[elastico.Training], classes[elastico.Inference], shared)
	if shared == 0 {
		t.Error("no GPU is shared: the workload is sized so that the Plan must share")
	}
	for _, p := range listPods(t, cs, ns) {
		if strings.Contains(p.Annotations[annotation.GPUSharing], "shared") && strings.Contains(p.Annotations[annotation.Env], "CUDA_MPS") {
			t.Logf("what pod %s reads from /etc/elastico/env:\n%s", p.Name, p.Annotations[annotation.Env])
			break
		}
	}
	t.Logf("whole test against the real control plane: %v", time.Since(t0).Round(time.Millisecond))
}
