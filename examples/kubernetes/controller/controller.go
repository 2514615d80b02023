package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/examples/kubernetes/annotation"
	"github.com/elastico/elastico/internal/stint"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
)

// Config configures a Controller. Client and Scheduler are required; every
// other zero field means the documented default.
type Config struct {
	Client kubernetes.Interface
	// Scheduler decides every epoch; the elastico-controller command uses
	// pds.New(pds.Config{}).
	Scheduler elastico.Scheduler
	// Interval is the time between epochs (default 5s).
	Interval time.Duration
	// EpochTimeout bounds one Epoch call (default: Interval). A scheduler
	// that honours its context returns its best plan by then.
	EpochTimeout time.Duration
	// GPUResource is the node resource that counts GPUs (default
	// nvidia.com/gpu).
	GPUResource v1.ResourceName
	// SchedulerName is the scheduler profile that runs elastico's plugin
	// (default elastico-scheduler); an opted-in pod that names another one
	// is left alone.
	SchedulerName string
	// Writers is how many API writes the controller has in flight at once
	// (default 16); the client's QPS limit still applies.
	Writers int
	// StatusRefresh is how often at most the status of a pod that keeps
	// waiting for the same cause is rewritten with new reasons (default
	// 30s); a new cause, or an admission, is written at once.
	StatusRefresh time.Duration
	// Now is the clock that stamps each State (default time.Now).
	Now func() time.Time
	// Recorder receives the Events the controller writes about pods and
	// nodes (default: an EventRecorder writing to the API server).
	Recorder record.EventRecorder
	// Logger (default klog's).
	Logger *klog.Logger
	// OnEpoch, if set, is called after every epoch with what it saw and
	// did (for logs and tests).
	OnEpoch func(*Epoch)
}

// Epoch is one epoch as the controller ran it.
type Epoch struct {
	State *elastico.State
	Plan  *elastico.Plan
	// Applied lists what was written, one line per pod ("update ns/name:
	// ..." or "evict ns/name: ..."), in the order it was written.
	Applied []string
	// Errors are writes that failed; they are retried next epoch.
	Errors []error
	// Build, Schedule and Apply are how long the epoch took to build the
	// State from the informers' caches, to run the Scheduler's Epoch, and
	// to compare the Plan with the pods and write the changes.
	Build, Schedule, Apply time.Duration
}

// Controller runs the elastico Plan on a cluster. Build it with New, then
// call Run (or Start and Step).
type Controller struct {
	cfg      Config
	log      klog.Logger
	factory  informers.SharedInformerFactory
	pods     corelisters.PodLister
	nodes    corelisters.NodeLister
	synced   []cache.InformerSynced
	recorder record.EventRecorder
	bcast    record.EventBroadcaster

	mu    sync.Mutex
	carry elastico.Carry
	// written holds the pods this controller wrote, until the informer's
	// cache catches up: an epoch that read the pod as it was before the
	// write would plan with a stale assignment.
	written map[types.UID]written
	wmu     sync.Mutex // guards written while applyAll runs
	// said is the last message of each Event reason per object, so that a
	// standing problem is reported once, not every epoch.
	said map[string]string
	// statusAt is when the status of each waiting pod was last written.
	statusAt map[types.UID]time.Time
	// stints says since when each running job has run as it runs now,
	// beside the neighbours it has now: the throughputs its pod reports
	// count only from then on (see observe).
	stints stint.Tracker
	// parsed are the pods' jobs, parsed (see jobCache).
	parsed *jobCache
}

type written struct {
	before string  // the resourceVersion the write replaced
	pod    *v1.Pod // what the write returned; nil for an eviction
}

// New checks the configuration and builds a Controller.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil {
		return nil, errors.New("controller: Config.Client is nil")
	}
	if cfg.Scheduler == nil {
		return nil, errors.New("controller: Config.Scheduler is nil")
	}
	if cfg.Interval < 0 || cfg.EpochTimeout < 0 || cfg.StatusRefresh < 0 || cfg.Writers < 0 {
		return nil, fmt.Errorf("controller: Config.Interval (%v), EpochTimeout (%v), StatusRefresh (%v) and Writers (%d) must not be negative", cfg.Interval, cfg.EpochTimeout, cfg.StatusRefresh, cfg.Writers)
	}
	if cfg.Writers == 0 {
		cfg.Writers = 16
	}
	if cfg.StatusRefresh == 0 {
		cfg.StatusRefresh = 30 * time.Second
	}
	if cfg.Interval == 0 {
		cfg.Interval = 5 * time.Second
	}
	if cfg.EpochTimeout == 0 {
		cfg.EpochTimeout = cfg.Interval
	}
	if cfg.GPUResource == "" {
		cfg.GPUResource = "nvidia.com/gpu"
	}
	if cfg.SchedulerName == "" {
		cfg.SchedulerName = "elastico-scheduler"
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	c := &Controller{cfg: cfg, written: map[types.UID]written{}, said: map[string]string{}, statusAt: map[types.UID]time.Time{}, parsed: newJobCache()}
	c.log = klog.Background().WithName("elastico")
	if cfg.Logger != nil {
		c.log = *cfg.Logger
	}
	c.factory = informers.NewSharedInformerFactory(cfg.Client, 0)
	pi, ni := c.factory.Core().V1().Pods(), c.factory.Core().V1().Nodes()
	c.pods, c.nodes = pi.Lister(), ni.Lister()
	c.synced = []cache.InformerSynced{pi.Informer().HasSynced, ni.Informer().HasSynced}
	c.recorder = cfg.Recorder
	if c.recorder == nil {
		c.bcast = record.NewBroadcaster()
		c.recorder = c.bcast.NewRecorder(scheme.Scheme, v1.EventSource{Component: "elastico-controller"})
	}
	return c, nil
}

// Start starts the informers and waits until their caches are filled.
func (c *Controller) Start(ctx context.Context) error {
	if c.bcast != nil {
		c.bcast.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: c.cfg.Client.CoreV1().Events("")})
		context.AfterFunc(ctx, c.bcast.Shutdown)
	}
	c.factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("controller: informer caches did not sync: %w", ctx.Err())
	}
	return nil
}

// Run starts the controller and runs one epoch every Interval until ctx is
// done. It returns nil when ctx is cancelled.
func (c *Controller) Run(ctx context.Context) error {
	if err := c.Start(ctx); err != nil {
		return err
	}
	defer c.factory.Shutdown()
	t := time.NewTicker(c.cfg.Interval)
	defer t.Stop()
	for {
		if _, err := c.Step(ctx); err != nil && ctx.Err() == nil {
			c.log.Error(err, "epoch failed")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Step runs one epoch: it builds the State from the informers' caches, asks
// the Scheduler for a Plan and writes the Plan's decisions on the pods.
func (c *Controller) Step(ctx context.Context) (*Epoch, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	t0 := time.Now()
	pods, err := c.pods.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("controller: listing pods: %w", err)
	}
	nodes, err := c.nodes.List(labels.Everything())
	if err != nil {
		return nil, fmt.Errorf("controller: listing nodes: %w", err)
	}
	pods = c.overlay(pods)
	s := validState(c.cfg.Now(), pods, nodes, options{gpuResource: c.cfg.GPUResource, schedulerName: c.cfg.SchedulerName, parsed: c.parsed})
	c.parsed.prune()
	s.observe(&c.stints)
	s.state.Carry = c.carry
	c.report(s.problems)
	ep := &Epoch{State: &s.state}
	if err := s.state.Validate(); err != nil {
		return ep, fmt.Errorf("controller: the State does not validate: %w", err)
	}
	t1 := time.Now()
	ep.Build = t1.Sub(t0)
	ectx, cancel := context.WithTimeout(ctx, c.cfg.EpochTimeout)
	plan, err := c.cfg.Scheduler.Epoch(ectx, &s.state)
	cancel()
	t2 := time.Now()
	ep.Schedule = t2.Sub(t1)
	if err != nil {
		return ep, fmt.Errorf("controller: Epoch: %w", err)
	}
	ep.Plan = plan
	if len(plan.Decisions) != len(s.state.Jobs) {
		return ep, fmt.Errorf("controller: the Plan has %d decisions for %d jobs", len(plan.Decisions), len(s.state.Jobs))
	}
	for i, d := range plan.Decisions {
		if d.JobID != s.state.Jobs[i].ID {
			return ep, fmt.Errorf("controller: the Plan's decision %d is for job %q, the State's job %d is %q", i, d.JobID, i, s.state.Jobs[i].ID)
		}
	}
	c.carry = plan.Carry
	now := c.cfg.Now()
	fresh := map[types.UID]bool{}
	for _, jp := range s.jobs {
		if at, ok := c.statusAt[jp.pod.UID]; ok && now.Sub(at) < c.cfg.StatusRefresh {
			fresh[jp.pod.UID] = true
		}
	}
	for uid, at := range c.statusAt {
		if now.Sub(at) >= c.cfg.StatusRefresh {
			delete(c.statusAt, uid) // also forgets pods that are gone
		}
	}
	changes, problems := diff(&s, plan, fresh)
	changes = append(s.extra, changes...)
	c.report(problems)
	for i, r := range c.applyAll(ctx, changes) {
		ch, line, err := changes[i], r.line, r.err
		if err != nil {
			ep.Errors = append(ep.Errors, err)
			c.log.Error(err, "applying the Plan", "pod", JobID(ch.pod))
			continue
		}
		if ch.want.Admitted() {
			delete(c.statusAt, ch.pod.UID)
		} else {
			c.statusAt[ch.pod.UID] = now
		}
		if line != "" {
			ep.Applied = append(ep.Applied, line)
		}
	}
	ep.Apply = time.Since(t2)
	if c.cfg.OnEpoch != nil {
		c.cfg.OnEpoch(ep)
	}
	return ep, nil
}

type applied struct {
	line string
	err  error
}

// phase orders the writes: evictions first, then the pods already bound,
// then the others (admissions), so that GPUs are given up before they are
// handed out.
func phase(ch *change) int {
	switch {
	case ch.kind == evict:
		return 0
	case ch.pod.Spec.NodeName != "":
		return 1
	}
	return 2
}

// applyAll writes the changes, Config.Writers at a time within a phase
// and one phase after the other; it returns what each write did, in the
// changes' order. A write waits for the API server's round trip (tens of
// milliseconds on a loaded one): one at a time, 5,000 admissions took
// almost four minutes.
func (c *Controller) applyAll(ctx context.Context, changes []change) []applied {
	out := make([]applied, len(changes))
	order := make([]int, len(changes))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return phase(&changes[a]) - phase(&changes[b]) })
	for start := 0; start < len(order); {
		end := start
		for end < len(order) && phase(&changes[order[end]]) == phase(&changes[order[start]]) {
			end++
		}
		next := make(chan int)
		var wg sync.WaitGroup
		for range min(c.cfg.Writers, end-start) {
			wg.Go(func() {
				for i := range next {
					out[i].line, out[i].err = c.apply(ctx, changes[i])
				}
			})
		}
		for _, i := range order[start:end] {
			next <- i
		}
		close(next)
		wg.Wait()
		start = end
	}
	return out
}

// overlay replaces the cached pods this controller wrote by what its writes
// returned, until the cache has caught up (the pod's resourceVersion moved
// past the one the write replaced).
func (c *Controller) overlay(pods []*v1.Pod) []*v1.Pod {
	seen := map[types.UID]bool{}
	out := pods[:0:0]
	for _, p := range pods {
		seen[p.UID] = true
		w, ok := c.written[p.UID]
		switch {
		case !ok:
			out = append(out, p)
		case p.ResourceVersion != w.before:
			delete(c.written, p.UID)
			out = append(out, p)
		case w.pod != nil:
			out = append(out, w.pod)
		}
		// An eviction the cache has not seen yet: the pod is going away.
	}
	for uid := range c.written {
		if !seen[uid] {
			delete(c.written, uid)
		}
	}
	return out
}

// apply writes one change and returns a line saying what it wrote.
func (c *Controller) apply(ctx context.Context, ch change) (string, error) {
	pod := ch.pod
	id := JobID(pod)
	switch ch.kind {
	case evict:
		err := c.cfg.Client.PolicyV1().Evictions(pod.Namespace).Evict(ctx, &policyv1.Eviction{
			ObjectMeta:    metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace},
			DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &pod.UID}},
		})
		if err != nil && !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("controller: evicting %s: %w", id, err)
		}
		c.remember(pod.UID, written{before: pod.ResourceVersion})
		c.recorder.Event(pod, eventType(ch.reason), ch.reason, ch.message)
		return fmt.Sprintf("evict %s: %s", id, ch.message), nil
	case update:
		p := pod.DeepCopy()
		p.Annotations = applyAnnotations(p.Annotations, ch.want.Annotations())
		if ch.ungate {
			p.Spec.SchedulingGates = slices.DeleteFunc(p.Spec.SchedulingGates, func(g v1.PodSchedulingGate) bool {
				return g.Name == annotation.SchedulingGate
			})
		}
		got, err := c.cfg.Client.CoreV1().Pods(pod.Namespace).Update(ctx, p, metav1.UpdateOptions{FieldManager: "elastico-controller"})
		if err != nil {
			// A conflict means the cache was stale: the next epoch sees the
			// pod as it is and decides again.
			return "", fmt.Errorf("controller: updating %s: %w", id, err)
		}
		c.remember(pod.UID, written{before: pod.ResourceVersion, pod: got})
		pod = got
	}
	if ch.cond != nil {
		got, err := c.setCondition(ctx, pod, *ch.cond)
		if err != nil {
			return "", err
		}
		c.remember(ch.pod.UID, written{before: ch.pod.ResourceVersion, pod: got})
	}
	if ch.reason != "" {
		c.recorder.Event(pod, eventType(ch.reason), ch.reason, ch.message)
	}
	if ch.kind == noChange {
		return "", nil
	}
	return fmt.Sprintf("update %s: %s", id, describe(&ch)), nil
}

// remember records a write for overlay; apply runs on several goroutines.
func (c *Controller) remember(uid types.UID, w written) {
	c.wmu.Lock()
	c.written[uid] = w
	c.wmu.Unlock()
}

// setCondition patches the pod's Admitted condition (a strategic merge on
// the conditions' type, so other conditions are kept).
func (c *Controller) setCondition(ctx context.Context, pod *v1.Pod, cond v1.PodCondition) (*v1.Pod, error) {
	cond.LastTransitionTime = metav1.NewTime(c.cfg.Now())
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"conditions": []v1.PodCondition{cond}}})
	if err != nil {
		return nil, fmt.Errorf("controller: %w", err)
	}
	got, err := c.cfg.Client.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch,
		metav1.PatchOptions{FieldManager: "elastico-controller"}, "status")
	if err != nil {
		return nil, fmt.Errorf("controller: setting %s on %s: %w", cond.Type, JobID(pod), err)
	}
	return got, nil
}

func describe(ch *change) string {
	w := &ch.want
	if !w.Admitted() {
		return "waits: " + w.Status
	}
	ann := w.Annotations()
	where := fmt.Sprintf("%s on %s GPUs [%s] (%s)", w.Config, w.Node, ann[annotation.GPUs], ann[annotation.GPUSharing])
	switch {
	case ch.ungate:
		return fmt.Sprintf("%s %s generation %d, gate removed", w.Action, where, w.Generation)
	case ch.renew:
		return fmt.Sprintf("%s %s generation %d", w.Action, where, w.Generation)
	}
	// Same work: only the sharing, the predicted slowdown or the status
	// changed; the container keeps running.
	return fmt.Sprintf("unchanged work, %s, slowdown %s, status %q", where, ann[annotation.Slowdown], w.Status)
}

// report writes each problem as an Event, once per object, reason and
// message.
func (c *Controller) report(problems []problem) {
	for _, p := range problems {
		if p.obj == nil {
			c.log.Info(p.message, "reason", p.reason)
			continue
		}
		m, err := metaOf(p.obj)
		if err != nil {
			continue
		}
		key := string(m.GetUID()) + "/" + p.reason
		if c.said[key] == p.message {
			continue
		}
		c.said[key] = p.message
		c.log.Info(p.message, "reason", p.reason, "object", m.GetNamespace()+"/"+m.GetName())
		c.recorder.Event(p.obj, eventType(p.reason), p.reason, p.message)
	}
}

func metaOf(obj any) (metav1.Object, error) {
	m, ok := obj.(metav1.Object)
	if !ok {
		return nil, fmt.Errorf("controller: %T has no object metadata", obj)
	}
	return m, nil
}

func eventType(reason string) string {
	switch reason {
	case "ElasticoAdmitted", "ElasticoReconfigured", "ElasticoWaiting":
		return v1.EventTypeNormal
	}
	return v1.EventTypeWarning
}

// validState builds the epoch's snapshot, leaving out each job that
// State.Validate rejects (one whose family runs on no GPU model of the
// cluster, say) with an Event on its pod, so that one bad pod does not stop
// every other job's planning. A State that still does not validate is left
// for the caller to report.
func validState(now time.Time, pods []*v1.Pod, nodes []*v1.Node, o options) snapshot {
	o.skip = map[string]string{}
	for {
		s := buildState(now, pods, nodes, o)
		var ve *elastico.ValidationError
		err := s.state.Validate()
		if !errors.As(err, &ve) || ve.Kind != "job" || s.jobs[ve.ID] == nil || o.skip[ve.ID] != "" {
			return s
		}
		o.skip[ve.ID] = err.Error()
	}
}
