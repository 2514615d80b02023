package controller

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/examples/kubernetes/annotation"
	"k8s.io/apimachinery/pkg/types"
)

// gangDiff is diff for a gang: the Plan's decision on the gang's job,
// split into one share per member (see shares), each written on its
// member. All members carry one generation, which grows when any
// member's work changes: the gang restarts together. A gang that must
// leave a node one of its members is bound to (preempted, or a share
// moved) has every bound member evicted.
func gangDiff(jp *jobPod, d *elastico.Decision, act *elastico.Action, holders map[string]int, gpuMem map[string]float64, fresh map[types.UID]bool) (evictions, bound, unbound []change, problems []problem) {
	var gen int64
	consistent := true
	waiting, admitted := true, false // every member carries a waiting decision; one an admitted one
	for _, m := range jp.members {
		gen = max(gen, m.current.Generation)
		consistent = consistent && m.hasDec == jp.members[0].hasDec && m.current.Generation == jp.members[0].current.Generation
		waiting = waiting && m.hasDec && !m.current.Admitted()
		admitted = admitted || m.current.Admitted()
	}
	plan := *d // what the members' condition says
	wants := make([]annotation.Decision, len(jp.members))
	var shares []annotation.Share
	if a := d.Assignment; a != nil {
		p, err := profileFor(jp.job, a)
		if err == nil {
			shares, err = gangShares(jp, a.GPUs)
			if err != nil && !jp.bound() {
				// The Plan's room cannot be split among the members: wait.
				plan.Assignment, plan.Status = nil, elastico.Status{Code: elastico.Unplaceable, Reasons: []string{err.Error()}}
				err = nil
			}
		}
		for i, m := range jp.members {
			if err != nil || shares == nil {
				break
			}
			wants[i] = annotation.Decision{Status: d.Status.String(), Gang: shares, Rank: i}
			err = place(&wants[i], jp.job, p, &m.current, shareGPUs(shares[i]), act, holders, gpuMem)
		}
		if err != nil {
			return nil, nil, nil, []problem{{jp.pod, "ElasticoPlan", fmt.Sprintf("not applied to gang %s: %v", jp.pod.Labels[annotation.GangLabel], err)}}
		}
	}
	if plan.Assignment == nil {
		if fresh[jp.pod.UID] && waiting && code(jp.current.Status) == code(plan.Status.String()) {
			return nil, nil, nil, nil
		}
		if admitted {
			gen++
		}
		for i := range wants {
			wants[i] = annotation.Decision{Status: plan.Status.String(), Generation: gen}
		}
	} else {
		changed := !consistent
		for i, m := range jp.members {
			changed = changed || !m.current.Admitted() || !wants[i].SameWork(&m.current)
		}
		if changed {
			gen++
		}
		for i := range wants {
			wants[i].Generation, wants[i].Slowdown = gen, d.Slowdown
		}
	}
	moved := false
	for i, m := range jp.members {
		if n := m.pod.Spec.NodeName; n != "" && (!wants[i].Admitted() || wants[i].Node != n) {
			moved = true
		}
	}
	for i, m := range jp.members {
		want := wants[i]
		c := change{pod: m.pod, want: want, cond: condition(m.pod, &plan), renew: want.Generation != m.current.Generation}
		if node := m.pod.Spec.NodeName; moved && node != "" {
			c.kind, c.cond = evict, nil
			c.reason, c.message = "ElasticoPreempted", "evicted with its gang: the Plan stops the job: "+want.Status
			if want.Admitted() {
				c.reason, c.message = "ElasticoMoved", fmt.Sprintf("evicted with its gang: the Plan moves this member from %s to %s; its owner recreates the pod", node, want.Node)
			}
			evictions = append(evictions, c)
			continue
		}
		if !sameAnnotations(m.pod.Annotations, want.Annotations()) {
			c.kind = update
		}
		if c.ungate = want.Admitted() && m.gated; c.ungate {
			c.kind = update
		}
		c.reason, c.message = event(&m.current, m.hasDec, &want)
		if c.kind == noChange && c.cond == nil {
			continue
		}
		if m.pod.Spec.NodeName != "" {
			bound = append(bound, c)
		} else {
			unbound = append(unbound, c)
		}
	}
	return evictions, bound, unbound, nil
}

// gangShares splits a gang's GPUs into one share per member, each on one
// node: a node's GPUs are one share, and while there are fewer nodes than
// members the largest share is halved (members then share a node). A
// member keeps the share it holds, or one on its node, when the new
// assignment has it, so that a gang that stays keeps every member where
// it is. More nodes than members cannot be split: an error says so.
func gangShares(jp *jobPod, gpus []string) ([]annotation.Share, error) {
	type group struct {
		node string
		idx  []int
	}
	var groups []group
	for _, id := range gpus {
		node, i, err := annotation.ParseGPUID(id)
		if err != nil {
			return nil, err
		}
		k := slices.IndexFunc(groups, func(g group) bool { return g.node == node })
		if k < 0 {
			k = len(groups)
			groups = append(groups, group{node: node})
		}
		groups[k].idx = append(groups[k].idx, i)
	}
	n := len(jp.members)
	if len(groups) > n {
		return nil, fmt.Errorf("the Plan spreads the gang over %d nodes; it has %d member pods, one per node share", len(groups), n)
	}
	slices.SortFunc(groups, func(a, b group) int { return cmp.Compare(a.node, b.node) })
	for i := range groups {
		slices.Sort(groups[i].idx)
	}
	for len(groups) < n {
		k := 0
		for i, g := range groups {
			if len(g.idx) > len(groups[k].idx) {
				k = i
			}
		}
		g := groups[k]
		if len(g.idx) < 2 {
			return nil, fmt.Errorf("the Plan gives the gang %d GPUs for %d member pods", len(gpus), n)
		}
		h := (len(g.idx) + 1) / 2
		groups = slices.Insert(groups, k+1, group{node: g.node, idx: g.idx[h:]})
		groups[k].idx = g.idx[:h]
	}
	// Match: the same share first, then one on the same node, then the
	// rest in order.
	out := make([]annotation.Share, n)
	taken := make([]bool, n)
	give := func(i, k int) {
		out[i] = annotation.Share{Pod: jp.members[i].pod.Name, Node: groups[k].node, GPUs: groups[k].idx}
		taken[k] = true
	}
	cur := func(i int) *annotation.Share {
		for k := range jp.current.Gang {
			if s := &jp.current.Gang[k]; s.Pod == jp.members[i].pod.Name {
				return s
			}
		}
		return nil
	}
	for _, same := range []bool{true, false} {
		for i := range n {
			s := cur(i)
			if s == nil || out[i].Pod != "" {
				continue
			}
			for k, g := range groups {
				if !taken[k] && g.node == s.Node && (!same || slices.Equal(g.idx, s.GPUs)) {
					give(i, k)
					break
				}
			}
		}
	}
	for i := range n {
		if out[i].Pod != "" {
			continue
		}
		k := slices.Index(taken, false)
		give(i, k)
	}
	return out, nil
}

// shareGPUs returns the GPU IDs of a share.
func shareGPUs(s annotation.Share) []string {
	out := make([]string, len(s.GPUs))
	for i, g := range s.GPUs {
		out[i] = annotation.GPUID(s.Node, g)
	}
	return out
}
