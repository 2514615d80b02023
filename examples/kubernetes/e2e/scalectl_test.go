package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/elastico/elastico/examples/kubernetes/controller"
	"github.com/elastico/elastico/examples/kubernetes/plugin"
	"github.com/elastico/elastico/pds"
	v1 "k8s.io/api/core/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	fwk "k8s.io/kube-scheduler/framework"
)

// scaleControllerEnv, set to a kubeconfig, makes the test binary run
// TestScale's controller instead of the tests: in its own process, so
// that its memory is its own.
const scaleControllerEnv = "ELASTICO_SCALE_CONTROLLER"

// epochReport is one line the scale controller writes per epoch.
type epochReport struct {
	Epoch     int      `json:"epoch"`
	Jobs      int      `json:"jobs"`
	Admitted  int      `json:"admitted"`
	Applied   int      `json:"applied"`
	Errors    int      `json:"errors"`
	Changed   []string `json:"changed"` // pods written, once each
	PodWrites int64    `json:"podWrites"`
	Events    int64    `json:"events"`
	Lists     int64    `json:"lists"`
	BuildMs   float64  `json:"buildMs"`
	PlanMs    float64  `json:"planMs"`
	ApplyMs   float64  `json:"applyMs"`
	HeapMiB   float64  `json:"heapMiB"`
	RSSMiB    float64  `json:"rssMiB"`
	HWMMiB    float64  `json:"hwmMiB"`
}

// countingTransport counts the controller's API requests by kind: writes
// to pods (updates, status patches, evictions), Event writes, and lists
// (a GET of a collection that is not a watch: what a controller that
// reads through informers does only when it starts).
type countingTransport struct {
	rt                       http.RoundTripper
	podWrites, events, lists atomic.Int64
}

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	p := req.URL.Path
	switch {
	case req.Method != http.MethodGet && strings.Contains(p, "/events"):
		c.events.Add(1)
	case req.Method != http.MethodGet && strings.Contains(p, "/pods"):
		c.podWrites.Add(1)
	case req.Method == http.MethodGet && req.URL.Query().Get("watch") != "true" &&
		(strings.HasSuffix(p, "/pods") || strings.HasSuffix(p, "/nodes")):
		c.lists.Add(1)
	}
	return c.rt.RoundTrip(req)
}

// runScaleController runs the controller with pds against the cluster of
// kubeconfig until its stdin closes, writing an epochReport per epoch to
// stdout. It returns the process's exit code.
func runScaleController(kubeconfig string) int {
	fail := func(err error) int { fmt.Fprintln(os.Stderr, "scale controller:", err); return 1 }
	rc, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fail(err)
	}
	rc.QPS, rc.Burst = float32(envInt("ELASTICO_SCALE_QPS", 1000)), 2*envInt("ELASTICO_SCALE_QPS", 1000)
	ct := &countingTransport{}
	rc.Wrap(func(rt http.RoundTripper) http.RoundTripper { ct.rt = rt; return ct })
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return fail(err)
	}
	sched, err := pds.New(pds.Config{})
	if err != nil {
		return fail(err)
	}
	interval := time.Duration(envInt("ELASTICO_SCALE_INTERVAL_MS", 5000)) * time.Millisecond
	enc := json.NewEncoder(os.Stdout)
	n := 0
	var last [3]int64
	c, err := controller.New(controller.Config{Client: cs, Scheduler: sched, Interval: interval, OnEpoch: func(e *controller.Epoch) {
		n++
		r := epochReport{Epoch: n, Jobs: len(e.State.Jobs), Applied: len(e.Applied), Errors: len(e.Errors),
			BuildMs: ms(e.Build), PlanMs: ms(e.Schedule), ApplyMs: ms(e.Apply)}
		if e.Plan != nil {
			for _, d := range e.Plan.Decisions {
				if d.Assignment != nil {
					r.Admitted++
				}
			}
		}
		seen := map[string]bool{}
		for _, line := range e.Applied {
			if f := strings.Fields(line); len(f) > 1 && !seen[f[1]] {
				seen[f[1]] = true
				r.Changed = append(r.Changed, strings.TrimSuffix(f[1], ":"))
			}
		}
		now := [3]int64{ct.podWrites.Load(), ct.events.Load(), ct.lists.Load()}
		r.PodWrites, r.Events, r.Lists = now[0]-last[0], now[1]-last[1], now[2]-last[2]
		last = now
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		r.HeapMiB = float64(m.HeapInuse) / (1 << 20)
		r.RSSMiB, r.HWMMiB = procStatus("VmRSS"), procStatus("VmHWM")
		_ = enc.Encode(r)
	}})
	if err != nil {
		return fail(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		// The test closes stdin to stop the controller.
		_, _ = bufio.NewReader(os.Stdin).ReadString(0)
		cancel()
	}()
	if err := c.Run(ctx); err != nil {
		return fail(err)
	}
	return 0
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// procStatus reads a "kB" line of /proc/self/status, in MiB.
func procStatus(key string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, key+":"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}

func envInt(key string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(key)); err == nil && v > 0 {
		return v
	}
	return def
}

// pluginTimes adds up the time the plugin takes at each extension point,
// for the opted-in pods.
type pluginTimes struct {
	preFilter, filter, reserve, permit atomic.Int64 // nanoseconds
	pods                               atomic.Int64 // PreFilter calls
}

// timedPlugin is the plugin with its extension points timed.
type timedPlugin struct {
	*plugin.Plugin
	t *pluginTimes
}

func timedFactory(t *pluginTimes) func(context.Context, k8sruntime.Object, fwk.Handle) (fwk.Plugin, error) {
	return func(ctx context.Context, obj k8sruntime.Object, h fwk.Handle) (fwk.Plugin, error) {
		p, err := plugin.New(ctx, obj, h)
		if err != nil {
			return nil, err
		}
		return timedPlugin{p.(*plugin.Plugin), t}, nil
	}
}

func since(acc *atomic.Int64, t0 time.Time) { acc.Add(int64(time.Since(t0))) }

func (p timedPlugin) PreFilter(ctx context.Context, s fwk.CycleState, pod *v1.Pod, n []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	defer since(&p.t.preFilter, time.Now())
	p.t.pods.Add(1)
	return p.Plugin.PreFilter(ctx, s, pod, n)
}

func (p timedPlugin) Filter(ctx context.Context, s fwk.CycleState, pod *v1.Pod, ni fwk.NodeInfo) *fwk.Status {
	defer since(&p.t.filter, time.Now())
	return p.Plugin.Filter(ctx, s, pod, ni)
}

func (p timedPlugin) Reserve(ctx context.Context, s fwk.CycleState, pod *v1.Pod, node string) *fwk.Status {
	defer since(&p.t.reserve, time.Now())
	return p.Plugin.Reserve(ctx, s, pod, node)
}

func (p timedPlugin) Permit(ctx context.Context, s fwk.CycleState, pod *v1.Pod, node string) (*fwk.Status, time.Duration) {
	defer since(&p.t.permit, time.Now())
	return p.Plugin.Permit(ctx, s, pod, node)
}
