package e2e

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/examples/kubernetes/annotation"
	"github.com/elastico/elastico/examples/kubernetes/controller"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
)

// checkPlan asserts that every opted-in pod of ns says what the epoch's
// Plan decided, that every admitted pod is bound where the Plan put it, and
// that no GPU is over-committed, reading only the pods and nodes. It
// returns the number of pods bound, of GPUs shared, and the classes bound.
func checkPlan(t *testing.T, cs kubernetes.Interface, ns string, e *controller.Epoch) (bound, shared int, classes map[elastico.Class]int) {
	t.Helper()
	decisions := map[string]*elastico.Decision{}
	holders := map[string]int{}
	for i := range e.Plan.Decisions {
		d := &e.Plan.Decisions[i]
		decisions[d.JobID] = d
		if d.Assignment != nil {
			for _, g := range d.Assignment.GPUs {
				holders[g]++
			}
		}
	}
	jobs := map[string]*elastico.Job{}
	for i := range e.State.Jobs {
		jobs[e.State.Jobs[i].ID] = &e.State.Jobs[i]
	}
	nodes := map[string]elastico.Node{}
	for _, n := range e.State.Cluster.Nodes {
		nodes[n.ID] = n
	}
	type hold struct {
		sm, mem float64
		pods    []string
		whole   bool
	}
	gpus := map[string]*hold{}
	classes = map[elastico.Class]int{}
	for _, p := range listPods(t, cs, ns) {
		if _, opted := p.Annotations[annotation.Job]; !opted {
			continue
		}
		id := controller.JobIDOf(&p)
		d, inPlan := decisions[id]
		got, has, err := annotation.ParseDecision(p.Annotations)
		if !inPlan {
			// A gang that misses members waits outside the Plan, saying so.
			if incomplete := has && !got.Admitted() && strings.HasPrefix(got.Status, "Incomplete: "); (has && !incomplete) || err != nil {
				t.Errorf("pod %s is not in the Plan but carries a decision (%v)", id, err)
			}
			continue
		}
		if err != nil || !has {
			t.Errorf("pod %s: decision missing or unreadable: %v", id, err)
			continue
		}
		// A waiting pod keeps the status it has while the Plan's code for
		// it stays the same (the controller does not rewrite a reason
		// that changed its words only: controller/plan.go).
		if want := d.Status.String(); got.Status != want && (d.Assignment != nil || !sameCode(got.Status, want)) {
			t.Errorf("pod %s: status %q, the Plan says %q", id, got.Status, d.Status)
		}
		cond := condition(&p, annotation.AdmittedCnd)
		if d.Assignment == nil {
			if got.Admitted() || p.Spec.NodeName != "" {
				t.Errorf("pod %s waits in the Plan but carries configuration %q on node %q", id, got.Config, p.Spec.NodeName)
			}
			if cond == nil || cond.Status != v1.ConditionFalse || cond.Reason != d.Status.Code.String() {
				t.Errorf("pod %s waits (%s) but its %s condition is %+v", id, d.Status, annotation.AdmittedCnd, cond)
			}
			continue
		}
		wantNode, _, _ := annotation.ParseGPUID(d.Assignment.GPUs[0])
		var ids []string
		for _, g := range got.GPUs {
			ids = append(ids, annotation.GPUID(got.Node, g.Index))
		}
		planned := slices.Equal(ids, d.Assignment.GPUs)
		if len(got.Gang) > 0 {
			// A gang's member holds its share of the gang's GPUs, on its node.
			wantNode, planned = got.Node, len(ids) > 0
			for _, g := range ids {
				planned = planned && slices.Contains(d.Assignment.GPUs, g)
			}
		}
		if got.Config != d.Assignment.ConfigID || got.Node != wantNode || !planned {
			t.Errorf("pod %s carries %s on %v, the Plan says %s on %v", id, got.Config, ids, d.Assignment.ConfigID, d.Assignment.GPUs)
		}
		if p.Spec.NodeName != wantNode {
			t.Errorf("pod %s is bound to %q, the Plan chose %q", id, p.Spec.NodeName, wantNode)
		}
		if gated(&p) {
			t.Errorf("pod %s is admitted but still gated", id)
		}
		if cond == nil || cond.Status != v1.ConditionTrue {
			t.Errorf("pod %s is admitted but its %s condition is %+v", id, annotation.AdmittedCnd, cond)
		}
		prof, ok := jobs[id].Profile(got.Config)
		if !ok || prof.Demand.SM != got.SM || prof.Demand.GPUMemory != got.MemoryGiB {
			t.Errorf("pod %s: configuration %s's demand is not what the pod carries (SM %g, %g GiB)", id, got.Config, got.SM, got.MemoryGiB)
		}
		env := p.Annotations[annotation.Env]
		for _, want := range []string{"CUDA_VISIBLE_DEVICES=" + p.Annotations[annotation.GPUs], "ELASTICO_CONFIG=" + got.Config,
			fmt.Sprintf("ELASTICO_GENERATION=%d", got.Generation)} {
			if !strings.Contains(env, want+"\n") {
				t.Errorf("pod %s: env lacks %s:\n%s", id, want, env)
			}
		}
		for i, g := range got.GPUs {
			gid := ids[i]
			if n, idx := nodes[got.Node], g.Index; ok && idx < len(n.GPUs) && !prof.RunsOn(n.GPUs[idx].Model) {
				t.Errorf("pod %s: configuration %s, profiled for %s, runs on %s, a %s", id, got.Config, prof.Hardware.GPUModel, gid, n.GPUs[idx].Model)
			}
			if g.Shared != (holders[gid] > 1) {
				t.Errorf("pod %s: GPU %s is marked shared=%v, the Plan puts %d jobs on it", id, gid, g.Shared, holders[gid])
			}
			h := gpus[gid]
			if h == nil {
				h = &hold{}
				gpus[gid] = h
			}
			h.sm += got.SM
			h.mem += got.MemoryGiB
			h.pods = append(h.pods, p.Name)
			h.whole = h.whole || !g.Shared
		}
		bound++
		classes[jobs[id].Class]++
	}
	for _, gid := range slices.Sorted(maps.Keys(gpus)) {
		h := gpus[gid]
		node, idx, _ := annotation.ParseGPUID(gid)
		n := nodes[node]
		if idx >= len(n.GPUs) {
			t.Errorf("GPU %s held by %v is not in the cluster", gid, h.pods)
			continue
		}
		g := n.GPUs[idx]
		if len(h.pods) > 1 {
			shared++
			if !g.Shared {
				t.Errorf("GPU %s is shared by %v on a node without MPS", gid, h.pods)
			}
			if h.whole {
				t.Errorf("GPU %s is held whole by one of %v", gid, h.pods)
			}
		}
		if h.sm > 1+1e-9 || h.mem > g.Memory+1e-9 {
			t.Errorf("GPU %s is over-committed: SM %.2f, memory %.1f of %.1f GiB, by %v", gid, h.sm, h.mem, g.Memory, h.pods)
		}
	}
	return bound, shared, classes
}

// logCluster writes the nodes and pods as the test left them.
func logCluster(t *testing.T, cs kubernetes.Interface, ns string, e *controller.Epoch) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "%-8s %5s %8s %s\n", "NODE", "GPUS", "GiB/GPU", "SHARING")
	for _, n := range e.State.Cluster.Nodes {
		sharing := "whole GPUs only"
		if len(n.GPUs) > 0 && n.GPUs[0].Shared {
			sharing = "MPS"
		}
		fmt.Fprintf(&b, "%-8s %5d %8.0f %s\n", n.ID, len(n.GPUs), n.GPUs[0].Memory, sharing)
	}
	fmt.Fprintf(&b, "\n%-13s %-9s %-6s %-11s %-13s %-4s %-6s %-8s %-3s %s\n", "POD", "CLASS", "NODE", "CONFIG", "GPUS", "SM", "GiB", "SLOWDOWN", "GEN", "STATUS")
	jobs := map[string]*elastico.Job{}
	for i := range e.State.Jobs {
		jobs[e.State.Jobs[i].ID] = &e.State.Jobs[i]
	}
	for _, p := range listPods(t, cs, ns) {
		a := p.Annotations
		class := "-"
		if j := jobs[controller.JobIDOf(&p)]; j != nil {
			class = j.Class.String()
		} else if _, ok := a[annotation.Job]; !ok {
			class = "(not in)"
		}
		var gpus []string
		idx, sharing := strings.Split(a[annotation.GPUs], ","), strings.Split(a[annotation.GPUSharing], ",")
		for i := range idx {
			if idx[i] != "" && i < len(sharing) {
				gpus = append(gpus, idx[i]+":"+sharing[i])
			}
		}
		status := a[annotation.Status]
		if gated(&p) {
			status += " [gated]"
		}
		if status == "" {
			status = "-"
		}
		fmt.Fprintf(&b, "%-13s %-9s %-6s %-11s %-13s %-4s %-6s %-8s %-3s %s\n", p.Name, class, dash(p.Spec.NodeName), dash(a[annotation.Config]),
			dash(strings.Join(gpus, ",")), dash(a[annotation.GPUSM]), dash(a[annotation.GPUMemory]), dash(a[annotation.Slowdown]), dash(a[annotation.Generation]), status)
	}
	t.Logf("cluster:\n%s", b.String())
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// sameCode reports whether two statuses ("Unplaceable: ...") have the same
// code.
func sameCode(a, b string) bool {
	ca, _, _ := strings.Cut(a, ":")
	cb, _, _ := strings.Cut(b, ":")
	return ca == cb
}
