package e2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/elastico/elastico/examples/kubernetes/annotation"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// gangPod is one member of a gang: an opted-in pod with the gang's label.
func gangPod(ns, gang string, i int, job string) *v1.Pod {
	p := elasticoPod(ns, fmt.Sprintf("%s-%d", gang, i), job)
	p.Labels = map[string]string{annotation.GangLabel: gang}
	return p
}

// gangSpec is a training job of the given members whose only
// configuration needs gpus whole GPUs.
func gangSpec(members, gpus int) annotation.JobSpec {
	return annotation.JobSpec{Class: "training", Model: "llama-8b-ft", Params: 8e9, Optimizer: "adam", Members: members,
		Family: []annotation.ProfileSpec{amp(cfg(fmt.Sprintf("b64-g%d", gpus), 64, gpus, 1, 30, 50*float64(gpus)))}}
}

// crashAfter is a transport that lets the controller write until it has
// updated one pod whose name starts with prefix, and fails every write
// after it: a controller that dies between two members of a gang.
type crashAfter struct {
	rt      http.RoundTripper
	prefix  string
	mu      sync.Mutex
	tripped bool
	done    chan struct{}
}

func (c *crashAfter) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodGet {
		return c.rt.RoundTrip(req)
	}
	// One write at a time (the controller has several in flight), so that
	// the first one to a member is the last one of all.
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.tripped {
		return nil, errors.New("injected: the controller died")
	}
	resp, err := c.rt.RoundTrip(req)
	if err == nil && req.Method == http.MethodPut && strings.Contains(req.URL.Path, "/pods/"+c.prefix) {
		c.tripped = true
		close(c.done)
	}
	return resp, err
}

// TestGangs runs gangs (jobs of several pods, one per node share) with the
// library's default scheduler: a gang of two pods that needs eight GPUs on
// nodes of four, admitted while a controller dies between writing its two
// members (the scheduler holds the one it got at Permit, and binds neither
// until a new controller finishes the write: then both, on two nodes); a
// gang too large for the cluster, left whole and unbound with its reason;
// members that disagree, and member counts that do not match, reported.
func TestGangs(t *testing.T) {
	t0 := time.Now()
	cp := startControlPlane(t)
	cs := cp.client
	ctx := context.Background()
	const ns = "gangs"
	createNamespace(t, cp, ns)
	createNodes(t, cs, []nodeSpec{
		{"gpu-g1", 4, 81920, "NVIDIA-A100-SXM4-80GB", "none", "64", "512Gi"},
		{"gpu-g2", 4, 81920, "NVIDIA-A100-SXM4-80GB", "none", "64", "512Gi"},
	})
	get := func(name string) *v1.Pod {
		t.Helper()
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	ft := jobJSON(t, gangSpec(2, 8))
	createPod(t, cs, gangPod(ns, "ft", 0, ft))
	createPod(t, cs, gangPod(ns, "ft", 1, ft))
	huge := jobJSON(t, gangSpec(2, 16))
	createPod(t, cs, gangPod(ns, "huge", 0, huge))
	createPod(t, cs, gangPod(ns, "huge", 1, huge))
	// Bad input: members that disagree, too few and too many pods.
	createPod(t, cs, gangPod(ns, "mixed", 0, ft))
	other := gangSpec(2, 8)
	other.Family[0].BatchSize = 128
	createPod(t, cs, gangPod(ns, "mixed", 1, jobJSON(t, other)))
	three := jobJSON(t, gangSpec(3, 6))
	createPod(t, cs, gangPod(ns, "short", 0, three))
	createPod(t, cs, gangPod(ns, "short", 1, three))
	for i := range 3 {
		createPod(t, cs, gangPod(ns, "over", i, ft))
	}

	// 1. A controller that dies after writing the first member of ft.
	crash := &crashAfter{prefix: "ft-", done: make(chan struct{})}
	cfg := rest.CopyConfig(cp.cfg)
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { crash.rt = rt; return crash })
	ctl := startController(t, kubernetes.NewForConfigOrDie(cfg), newScheduler(t))
	select {
	case <-crash.done:
	case <-time.After(60 * time.Second):
		t.Fatal("the controller never wrote gang ft's first member")
	}
	ctl.halt()
	var written, unwritten string
	for _, name := range []string{"ft-0", "ft-1"} {
		if get(name).Annotations[annotation.Config] != "" {
			written = name
		} else {
			unwritten = name
		}
	}
	if written == "" || unwritten == "" {
		t.Fatalf("after the crash want one member of ft admitted and one not, got ft-0 %v, ft-1 %v", get("ft-0").Annotations, get("ft-1").Annotations)
	}
	t.Logf("controller died after writing %s (%s on %s GPUs %s, ungated %v); %s has no decision",
		written, get(written).Annotations[annotation.Config], get(written).Annotations[annotation.Node], get(written).Annotations[annotation.GPUs], !gated(get(written)), unwritten)
	// The scheduler holds the admitted member at Permit, and rejects it
	// when the gang timeout passes: it is never bound alone.
	before := get(written).Annotations
	var held string
	waitFor(t, 30*time.Second, "the admitted member to be rejected at Permit", func() bool {
		c := condition(get(written), v1.PodScheduled)
		if c != nil && c.Status == v1.ConditionFalse && strings.Contains(c.Message, "Elastico") {
			held = c.Message
			return true
		}
		return false
	})
	if n := get(written).Spec.NodeName; n != "" {
		t.Fatalf("member %s was bound to %s without its gang", written, n)
	}
	t.Logf("%s held at Permit, then released unbound: PodScheduled=False: %s", written, held)

	// 2. A new controller finishes the write; the gang is bound whole.
	ctl2 := startController(t, cs, newScheduler(t))
	e := waitSteady(t, cs, ctl2, ns, 90*time.Second)
	logCluster(t, cs, ns, e)
	checkPlan(t, cs, ns, e)
	m0, m1 := get("ft-0"), get("ft-1")
	if m0.Spec.NodeName == "" || m1.Spec.NodeName == "" || m0.Spec.NodeName == m1.Spec.NodeName {
		t.Fatalf("gang ft: want its members bound to two nodes, got %q and %q", m0.Spec.NodeName, m1.Spec.NodeName)
	}
	for i, m := range []*v1.Pod{m0, m1} {
		d, _, err := annotation.ParseDecision(m.Annotations)
		if err != nil || len(d.GPUs) != 4 || d.Rank != i || len(d.Gang) != 2 || d.Generation != mustDecision(t, m0).Generation {
			t.Errorf("member %s: decision %+v, %v: want rank %d of 2, 4 GPUs, the gang's generation", m.Name, d, err, i)
		}
		for _, want := range []string{fmt.Sprintf("ELASTICO_GANG_RANK=%d", i), "ELASTICO_GANG_MEMBERS=2", "ELASTICO_GANG_LEADER=ft-0",
			"ELASTICO_WORLD_SIZE=8", fmt.Sprintf("ELASTICO_RANK_OFFSET=%d", 4*i)} {
			if !strings.Contains(m.Annotations[annotation.Env], want+"\n") {
				t.Errorf("member %s: env lacks %s:\n%s", m.Name, want, m.Annotations[annotation.Env])
			}
		}
		t.Logf("member %s bound to %s, GPUs %s, generation %s, %s", m.Name, m.Spec.NodeName, m.Annotations[annotation.GPUs],
			m.Annotations[annotation.Generation], m.Annotations[annotation.GangShares])
	}
	// The new controller took the gang where the written member said.
	if w := get(written); w.Annotations[annotation.Node] != before[annotation.Node] || w.Annotations[annotation.GPUs] != before[annotation.GPUs] ||
		w.Annotations[annotation.GangShares] != before[annotation.GangShares] {
		t.Errorf("member %s: written as %s GPUs %s (%s) before the restart, now %s GPUs %s (%s)", written, before[annotation.Node], before[annotation.GPUs],
			before[annotation.GangShares], w.Annotations[annotation.Node], w.Annotations[annotation.GPUs], w.Annotations[annotation.GangShares])
	}

	// 3. The gang that cannot fit: both members unbound and gated, with
	// the Plan's reason in their status and condition.
	for _, name := range []string{"huge-0", "huge-1"} {
		p := get(name)
		c := condition(p, annotation.AdmittedCnd)
		if p.Spec.NodeName != "" || !gated(p) || c == nil || c.Status != v1.ConditionFalse || p.Annotations[annotation.Status] == "" {
			t.Errorf("member %s of the gang that cannot fit: node %q, gated %v, condition %+v, status %q", name, p.Spec.NodeName, gated(p), c, p.Annotations[annotation.Status])
			continue
		}
		t.Logf("member %s waits: %s=%s %s: %s", name, c.Type, c.Status, c.Reason, p.Annotations[annotation.Status])
	}

	// 4. Bad input is reported on the pods, which are left alone.
	eventSays := func(pod, reason string, wants ...string) {
		t.Helper()
		var said string
		waitFor(t, 10*time.Second, pod+"'s "+reason+" event", func() bool {
			for _, ev := range events(t, cs, ns, pod) {
				if ev.Reason == reason {
					said = ev.Message
					return true
				}
			}
			return false
		})
		for _, w := range wants {
			if !strings.Contains(said, w) {
				t.Errorf("pod %s: the %s event says %q, want %q in it", pod, reason, said, w)
			}
		}
		t.Logf("pod %s: Event %s: %s", pod, reason, said)
	}
	eventSays("mixed-0", "ElasticoInvalidJob", "pod gangs/mixed-1", "field family")
	eventSays("over-2", "ElasticoInvalidJob", "gang over has 3 pods", "members 2")
	for _, name := range []string{"mixed-0", "mixed-1", "over-0", "short-0"} {
		if p := get(name); !gated(p) || p.Spec.NodeName != "" || p.Annotations[annotation.Config] != "" {
			t.Errorf("pod %s of a bad gang was admitted", name)
		}
	}
	if s := get("short-1").Annotations[annotation.Status]; !strings.HasPrefix(s, "Incomplete: gang short has 2 of its 3 member pods") {
		t.Errorf("gang short: status %q", s)
	} else {
		t.Logf("pod short-1: %s", s)
	}
	t.Logf("whole test: %v", time.Since(t0).Round(time.Millisecond))
}

func mustDecision(t *testing.T, p *v1.Pod) annotation.Decision {
	t.Helper()
	d, ok, err := annotation.ParseDecision(p.Annotations)
	if err != nil || !ok {
		t.Fatalf("pod %s: decision %v, %v", p.Name, ok, err)
	}
	return d
}
