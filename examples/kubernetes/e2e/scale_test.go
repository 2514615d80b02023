package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/elastico/elastico/examples/kubernetes/annotation"
	"github.com/elastico/elastico/examples/kubernetes/plugin"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// TestScale measures the controller and the plugin on a cluster of the
// size of a real one, against the real API server and scheduler: 1,000
// GPU nodes (Node objects, no kubelet) and 5,000 opted-in pods
// (ELASTICO_SCALE_NODES and ELASTICO_SCALE_PODS change them). It runs
// only with ELASTICO_SCALE=1: it takes minutes. The controller runs in a
// process of its own (the test binary again, see runScaleController), so
// that its memory is measured alone. It reports, and checks:
//   - the controller's tick (building the State, pds's Epoch, writing);
//   - that it lists nothing per tick (it reads through informers);
//   - its API writes per tick once the cluster is steady (0), and after
//     one arrival (at most two per pod whose decision changed: the
//     annotations and the Admitted condition);
//   - the plugin's time per pod, and the controller's memory.
func TestScale(t *testing.T) {
	if os.Getenv("ELASTICO_SCALE") == "" {
		t.Skip("set ELASTICO_SCALE=1 to run (minutes): see the README's scale table")
	}
	nNodes, nPods := envInt("ELASTICO_SCALE_NODES", 1000), envInt("ELASTICO_SCALE_PODS", 5000)
	schedulerQPS = envInt("ELASTICO_SCALE_SCHEDULER_QPS", 500)
	defer func() { schedulerQPS = 50 }()
	times := &pluginTimes{}
	pluginFactory = timedFactory(times)
	defer func() { pluginFactory = plugin.New }()
	cp := startControlPlane(t)
	rc := rest.CopyConfig(cp.cfg)
	rc.QPS, rc.Burst = 5000, 10000
	cs := kubernetes.NewForConfigOrDie(rc)
	ctx := context.Background()
	const ns = "scale"
	createNamespace(t, cp, ns)

	// Nodes: 8 A100s each; half of them share GPUs under MPS.
	t0 := time.Now()
	parallel(t, nNodes, func(i int) error {
		sharing := "none"
		if i%2 == 0 {
			sharing = "mps"
		}
		_, err := cs.CoreV1().Nodes().Create(ctx, nodeObject(nodeSpec{fmt.Sprintf("gpu-%04d", i), 8, 81920, "NVIDIA-A100-SXM4-80GB", sharing, "128", "1Ti"}), metav1.CreateOptions{})
		return err
	})
	t.Logf("%d nodes created in %v", nNodes, time.Since(t0).Round(time.Millisecond))
	t0 = time.Now()
	parallel(t, nPods, func(i int) error {
		_, err := cs.CoreV1().Pods(ns).Create(ctx, elasticoPod(ns, fmt.Sprintf("job-%05d", i), scaleJob(t, i)), metav1.CreateOptions{})
		return err
	})
	t.Logf("%d pods created in %v", nPods, time.Since(t0).Round(time.Millisecond))

	// The test's own view of the pods, through an informer.
	inf := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	lister := inf.Core().V1().Pods().Lister()
	stop := make(chan struct{})
	defer close(stop)
	inf.Start(stop)
	cache.WaitForCacheSync(stop, inf.Core().V1().Pods().Informer().HasSynced)
	boundCount := func() (bound, admitted int) {
		pods, _ := lister.List(labels.Everything())
		for _, p := range pods {
			if p.Annotations[annotation.Config] != "" {
				admitted++
				if p.Spec.NodeName == p.Annotations[annotation.Node] {
					bound++
				}
			}
		}
		return bound, admitted
	}

	ctl := startScaleController(t, cp.kubeconf)
	// 1. Admission: every pod the Plan admits is bound, and an epoch writes
	// nothing.
	t0 = time.Now()
	var first epochReport
	ctl.until(t, 15*time.Minute, func(r epochReport) bool {
		if r.Epoch == 1 {
			first = r
		}
		b, a := boundCount()
		t.Logf("epoch %d: %d jobs, %d admitted, %d written (%d pod writes, %d events, %d lists); build %.0f ms, plan %.0f ms, apply %.0f ms; %d bound; heap %.0f MiB, RSS %.0f MiB",
			r.Epoch, r.Jobs, r.Admitted, len(r.Changed), r.PodWrites, r.Events, r.Lists, r.BuildMs, r.PlanMs, r.ApplyMs, b, r.HeapMiB, r.RSSMiB)
		return r.PodWrites == 0 && r.Errors == 0 && b == a && a == r.Admitted && r.Epoch > 1
	})
	admitTime := time.Since(t0)
	bound, _ := boundCount()
	perPod := time.Duration(0)
	if n := times.pods.Load(); n > 0 {
		perPod = time.Duration((times.preFilter.Load() + times.filter.Load() + times.reserve.Load() + times.permit.Load()) / n)
	}
	t.Logf("admission: %d of %d pods admitted and bound after %v; the first epoch wrote %d pods (%d writes) in %.1f s",
		bound, nPods, admitTime.Round(time.Second), len(first.Changed), first.PodWrites, first.ApplyMs/1000)
	t.Logf("plugin: %d scheduling cycles, %v per pod (PreFilter %v, Filter %v, Reserve %v, Permit %v)", times.pods.Load(), perPod,
		avg(&times.preFilter, times.pods.Load()), avg(&times.filter, times.pods.Load()), avg(&times.reserve, times.pods.Load()), avg(&times.permit, times.pods.Load()))

	// 2. Steady: no writes, no lists, tick after tick.
	var ticks []float64
	var steadyWrites, steadyLists int64
	for range envInt("ELASTICO_SCALE_STEADY_EPOCHS", 6) {
		r := ctl.next(t, time.Minute)
		ticks = append(ticks, r.BuildMs+r.PlanMs+r.ApplyMs)
		steadyWrites += r.PodWrites
		steadyLists += r.Lists
		t.Logf("steady epoch %d: tick %.0f ms (build %.0f, plan %.0f, apply %.0f), %d pod writes, %d lists, heap %.0f MiB, RSS %.0f MiB",
			r.Epoch, r.BuildMs+r.PlanMs+r.ApplyMs, r.BuildMs, r.PlanMs, r.ApplyMs, r.PodWrites, r.Lists, r.HeapMiB, r.RSSMiB)
	}
	slices.Sort(ticks)
	if steadyWrites != 0 || steadyLists != 0 {
		t.Errorf("a steady cluster: %d pod writes and %d lists over %d epochs, want 0", steadyWrites, steadyLists, len(ticks))
	}

	// 3. One arrival: it is written, and only the pods whose decision
	// changed are.
	createPod(t, cs, elasticoPod(ns, "arrival", scaleJob(t, 0)))
	var arrivalWrites int64
	changed := map[string]bool{}
	ctl.until(t, 2*time.Minute, func(r epochReport) bool {
		arrivalWrites += r.PodWrites
		for _, p := range r.Changed {
			changed[p] = true
		}
		p, err := lister.Pods(ns).Get("arrival")
		return err == nil && p.Spec.NodeName != "" && r.PodWrites == 0
	})
	t.Logf("one arrival: %d pod writes, %d pods changed (%v)", arrivalWrites, len(changed), slices.Sorted(mapKeys(changed)))
	if !changed[ns+"/arrival"] || arrivalWrites > int64(2*len(changed)) {
		t.Errorf("one arrival: %d pod writes for %d pods whose decision changed (%v), want the arrival written and at most 2 writes each", arrivalWrites, len(changed), changed)
	}
	last := ctl.stop(t)
	t.Logf("SCALE nodes=%d pods=%d | tick min %.0f, median %.0f, max %.0f ms | writes/tick steady %d | writes after one arrival %d (%d pods changed) | controller RSS %.0f MiB (peak %.0f), heap %.0f MiB | plugin %v/pod | admission of all %v",
		nNodes, nPods, ticks[0], ticks[(len(ticks)-1)/2], ticks[len(ticks)-1], steadyWrites/int64(len(ticks)), arrivalWrites, len(changed),
		last.RSSMiB, last.HWMMiB, last.HeapMiB, perPod, admitTime.Round(time.Second))
}

func avg(acc interface{ Load() int64 }, n int64) time.Duration {
	if n == 0 {
		return 0
	}
	return time.Duration(acc.Load() / n).Round(time.Microsecond)
}

func mapKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// scaleJob is pod i's job: most take one GPU (half of them may share
// one), a tenth may take two, as a real mix of small jobs does.
func scaleJob(t *testing.T, i int) string {
	m := fmt.Sprintf("model-%d", i%17)
	spec := annotation.JobSpec{Class: "training", Model: m, Params: 1e8, Optimizer: "sgd", ReferenceBatch: 32, Family: []annotation.ProfileSpec{
		cfg("b32", 32, 1, 0.5, 12, 100), amp(cfg("b64", 64, 1, 0.9, 20, 160))}}
	if i%10 == 9 {
		spec.Family = append(spec.Family, amp(cfg("b128-g2", 128, 2, 0.9, 20, 300)))
	}
	if i%3 == 1 {
		spec = annotation.JobSpec{Class: "inference", Model: m, Params: 1e9, Family: []annotation.ProfileSpec{
			kv(cfg("kv20", 0, 1, 0.3, 16, 900), 0.2, 32), kv(cfg("kv40", 0, 1, 0.45, 24, 1500), 0.4, 96)}}
	}
	return jobJSON(t, spec)
}

// parallel runs f(0..n-1) on 16 workers and fails the test on the first
// error.
func parallel(t *testing.T, n int, f func(i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	next := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = fmt.Errorf("item %d: %w", i, err)
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		t.Fatal(first)
	}
}

// scaleController is the controller's process and its epochs.
type scaleController struct {
	cmd    *exec.Cmd
	stdin  io.Closer
	epochs chan epochReport
	last   epochReport
}

func startScaleController(t *testing.T, kubeconfig string) *scaleController {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), scaleControllerEnv+"="+kubeconfig)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := &scaleController{cmd: cmd, stdin: stdin, epochs: make(chan epochReport, 1024)}
	go func() {
		defer close(sc.epochs)
		s := bufio.NewScanner(stdout)
		s.Buffer(make([]byte, 1<<20), 64<<20)
		for s.Scan() {
			var r epochReport
			if json.Unmarshal(s.Bytes(), &r) == nil {
				sc.epochs <- r
			}
		}
	}()
	t.Cleanup(func() { sc.stop(t) })
	return sc
}

func (sc *scaleController) next(t *testing.T, timeout time.Duration) epochReport {
	t.Helper()
	select {
	case r, ok := <-sc.epochs:
		if !ok {
			t.Fatal("the controller's process ended")
		}
		sc.last = r
		return r
	case <-time.After(timeout):
		t.Fatalf("no epoch within %v", timeout)
	}
	return epochReport{}
}

// until reads epochs until done says so, and returns that epoch.
func (sc *scaleController) until(t *testing.T, timeout time.Duration, done func(epochReport) bool) epochReport {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		r := sc.next(t, time.Until(deadline))
		if done(r) {
			return r
		}
	}
}

func (sc *scaleController) stop(t *testing.T) epochReport {
	if sc.stdin != nil {
		sc.stdin.Close()
		sc.stdin = nil
		for range sc.epochs {
		}
		if err := sc.cmd.Wait(); err != nil {
			t.Errorf("the controller's process: %v", err)
		}
	}
	return sc.last
}
