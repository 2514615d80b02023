package controller

import (
	"fmt"
	"strings"
	"testing"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/examples/kubernetes/annotation"
	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
)

// twoMembers is a gang of two pods whose configurations take four GPUs.
const twoMembers = `{"class":"training","model":"m","referenceBatch":32,"members":2,"family":[
  {"id":"g4","batchSize":32,"gpus":4,"sm":1,"gpuMemoryGiB":10,"throughput":100},
  {"id":"g4-b64","batchSize":64,"gpus":4,"sm":1,"gpuMemoryGiB":12,"throughput":150}]}`

// member is pod name of gang g, created at epoch0 + age seconds.
func gangMember(g, name string, age int, job string) *v1.Pod {
	p := newPod(name, age, job)
	p.Labels = map[string]string{annotation.GangLabel: g}
	return p
}

// withShare gives a gang's member its share of a decision of generation
// gen under config ("pod=node:i,j;..." for shares) and optionally binds it.
func withShare(p *v1.Pod, config, shares string, gen int64, bound bool) *v1.Pod {
	sh, err := annotation.ParseShares(shares)
	if err != nil {
		panic(err)
	}
	rank := -1
	for i, s := range sh {
		if s.Pod == p.Name {
			rank = i
		}
	}
	d := annotation.Decision{Status: "Scheduled", Generation: gen, Config: config, Node: sh[rank].Node, SM: 1, MemoryGiB: 10, Slowdown: 1,
		Action: "start", Launch: []string{"ELASTICO_BATCH_SIZE=32"}, Gang: sh, Rank: rank}
	for _, g := range sh[rank].GPUs {
		d.GPUs = append(d.GPUs, annotation.GPU{Index: g})
	}
	for k, v := range d.Annotations() {
		p.Annotations[k] = v
	}
	p.Spec.SchedulingGates = nil
	if bound {
		p.Spec.NodeName = d.Node
	}
	return p
}

func TestGangState(t *testing.T) {
	nodes := []*v1.Node{gpuNode("a", 2, 40960, ""), gpuNode("b", 2, 40960, ""), gpuNode("c", 4, 40960, "")}
	const both = "g-0=a:0,1;g-1=b:0,1"
	other := strings.Replace(twoMembers, `"batchSize":64`, `"batchSize":128`, 1)
	tests := []struct {
		name         string
		pods         []*v1.Pod
		wantJobs     []string // "id" or "id running config@gpus"
		wantNodes    int
		wantProblems []string
		wantExtra    []string // "kind pod"
	}{
		{
			name:      "a new gang is one job that may spread",
			pods:      []*v1.Pod{gangMember("g", "g-1", 1, twoMembers), gangMember("g", "g-0", 2, twoMembers)},
			wantJobs:  []string{"ns/gang:g"},
			wantNodes: 3,
		},
		{
			name:      "a bound gang runs on its members' shares, in rank order",
			pods:      []*v1.Pod{withShare(gangMember("g", "g-0", 0, twoMembers), "g4", both, 3, true), withShare(gangMember("g", "g-1", 0, twoMembers), "g4", both, 3, true)},
			wantJobs:  []string{"ns/gang:g running g4@a/gpu0,a/gpu1,b/gpu0,b/gpu1"},
			wantNodes: 3,
		},
		{
			name: "a write cut short: the member written last says where the gang runs",
			pods: []*v1.Pod{withShare(gangMember("g", "g-0", 0, twoMembers), "g4", both, 2, false),
				withShare(gangMember("g", "g-1", 0, twoMembers), "g4", "g-0=c:0,1;g-1=c:2,3", 1, false)},
			wantJobs:  []string{"ns/gang:g running g4@a/gpu0,a/gpu1,b/gpu0,b/gpu1"},
			wantNodes: 3,
		},
		{
			name: "members that disagree: left alone; a bound one takes its node out",
			pods: []*v1.Pod{gangMember("g", "g-0", 0, twoMembers),
				withShare(gangMember("g", "g-1", 0, other), "g4", "g-0=c:0,1;g-1=a:0,1", 1, true)},
			wantNodes: 2,
			wantProblems: []string{"ElasticoInvalidJob: the elastico.io/job of pod ns/g-1 differs from pod ns/g-0's in field family",
				"ElasticoInvalidJob: field family", "ElasticoNodeOut: pod ns/g-1 of gang g is bound here"},
		},
		{
			name: "a member count that does not match, and a gang of one",
			pods: []*v1.Pod{gangMember("g", "g-0", 0, twoMembers), gangMember("g", "g-1", 0, twoMembers), gangMember("g", "g-2", 0, twoMembers),
				gangMember("solo", "solo-0", 0, oneGPU)},
			wantNodes: 3,
			wantProblems: []string{"ElasticoInvalidJob: gang g has 3 pods (ns/g-0, ns/g-1, ns/g-2) but its elastico.io/job says members 2",
				"ElasticoInvalidJob: gang g has 3 pods", "ElasticoInvalidJob: gang g has 3 pods",
				"ElasticoInvalidJob: pod ns/solo-0 has label elastico.io/gang=solo but its elastico.io/job has members 0"},
		},
		{
			name:      "a gang that lost a member: the bound one is evicted, the gang waits",
			pods:      []*v1.Pod{withShare(gangMember("g", "g-0", 0, twoMembers), "g4", both, 3, true)},
			wantNodes: 3,
			wantExtra: []string{"evict g-0"},
		},
		{
			name:      "a gang not complete yet waits, saying so",
			pods:      []*v1.Pod{gangMember("g", "g-0", 0, twoMembers)},
			wantNodes: 3,
			wantExtra: []string{"update g-0 Incomplete: gang g has 1 of its 2 member pods (ns/g-0)"},
		},
		{
			name: "a bound member its gang's record does not account for takes its node out",
			pods: []*v1.Pod{withShare(gangMember("g", "g-0", 0, twoMembers), "g4", "g-0=a:0,1;old-1=b:0,1", 3, true),
				gangMember("g", "g-1", 0, twoMembers)},
			wantNodes:    2,
			wantProblems: []string{"ElasticoUnaccounted: member ns/g-0 is bound to a but its latest decision names pod old-1", "ElasticoNodeOut"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := buildState(epoch0, tt.pods, nodes, testOptions)
			if err := s.state.Validate(); err != nil {
				t.Fatalf("the State does not validate: %v", err)
			}
			var jobs []string
			for _, j := range s.state.Jobs {
				if !j.Spread {
					t.Errorf("job %s of a gang does not allow Spread", j.ID)
				}
				line := j.ID
				if j.Running != nil {
					line += " running " + j.Running.ConfigID + "@" + strings.Join(j.Running.GPUs, ",")
				}
				jobs = append(jobs, line)
			}
			if diff := cmp.Diff(tt.wantJobs, jobs); diff != "" {
				t.Errorf("jobs (-want +got):\n%s", diff)
			}
			if len(s.state.Cluster.Nodes) != tt.wantNodes {
				t.Errorf("%d nodes in the plan, want %d", len(s.state.Cluster.Nodes), tt.wantNodes)
			}
			checkProblems(t, s.problems, tt.wantProblems)
			var extra []string
			for _, c := range s.extra {
				line := map[changeKind]string{evict: "evict", update: "update", noChange: "cond"}[c.kind] + " " + c.pod.Name
				if c.kind == update {
					line += " " + c.want.Status
				}
				extra = append(extra, line)
			}
			if diff := cmp.Diff(tt.wantExtra, extra); diff != "" {
				t.Errorf("writes outside the Plan (-want +got):\n%s", diff)
			}
		})
	}
}

// checkProblems checks that each "reason: substring" is among problems,
// and that there are as many.
func checkProblems(t *testing.T, problems []problem, want []string) {
	t.Helper()
	if len(problems) != len(want) {
		t.Errorf("got %d problems, want %d: %+v", len(problems), len(want), problems)
	}
	for _, w := range want {
		reason, sub, _ := strings.Cut(w, ": ")
		found := false
		for _, p := range problems {
			found = found || (p.reason == reason && strings.Contains(p.message, sub))
		}
		if !found {
			t.Errorf("no problem %q among %+v", w, problems)
		}
	}
}

func TestGangDiff(t *testing.T) {
	nodes := []*v1.Node{gpuNode("a", 2, 40960, ""), gpuNode("b", 2, 40960, ""), gpuNode("c", 4, 40960, "")}
	const both = "g-0=a:0,1;g-1=b:0,1"
	fresh := []*v1.Pod{gangMember("g", "g-0", 0, twoMembers), gangMember("g", "g-1", 0, twoMembers)}
	bound := func() []*v1.Pod {
		return []*v1.Pod{withShare(gangMember("g", "g-0", 0, twoMembers), "g4", both, 3, true), withShare(gangMember("g", "g-1", 0, twoMembers), "g4", both, 3, true)}
	}
	start := []elastico.Action{{Kind: elastico.Start, JobID: "ns/gang:g"}}
	tests := []struct {
		name     string
		pods     []*v1.Pod
		decision elastico.Decision
		actions  []elastico.Action
		want     []string // "kind pod [ungate] config node:gpus gen rank reason"
	}{
		{
			name:     "admitted over two nodes: a member per node, one generation, ungated",
			pods:     fresh,
			decision: scheduled("ns/gang:g", "g4", "b/gpu1", "a/gpu0", "b/gpu0", "a/gpu1"),
			actions:  start,
			want:     []string{"update g-0 ungate g4 a:0,1 gen 1 rank 0 ElasticoAdmitted", "update g-1 ungate g4 b:0,1 gen 1 rank 1 ElasticoAdmitted"},
		},
		{
			name:     "one node for two members: they share it, half each",
			pods:     fresh,
			decision: scheduled("ns/gang:g", "g4", "c/gpu3", "c/gpu2", "c/gpu1", "c/gpu0"),
			actions:  start,
			want:     []string{"update g-0 ungate g4 c:0,1 gen 1 rank 0 ElasticoAdmitted", "update g-1 ungate g4 c:2,3 gen 1 rank 1 ElasticoAdmitted"},
		},
		{
			name:     "more nodes than members: the gang waits, saying why",
			pods:     fresh,
			decision: scheduled("ns/gang:g", "g4", "a/gpu0", "b/gpu0", "c/gpu0", "c/gpu1"),
			actions:  start,
			want: []string{"update g-0 waits gen 0 Unplaceable: the Plan spreads the gang over 3 nodes; it has 2 member pods, one per node share",
				"update g-1 waits gen 0 Unplaceable: the Plan spreads the gang over 3 nodes; it has 2 member pods, one per node share"},
		},
		{
			name:     "a gang the Plan keeps is not written to, whatever order the Plan lists its GPUs in",
			pods:     bound(),
			decision: scheduled("ns/gang:g", "g4", "b/gpu1", "b/gpu0", "a/gpu1", "a/gpu0"),
		},
		{
			name:     "reconfigured in place: every member, one new generation",
			pods:     bound(),
			decision: scheduled("ns/gang:g", "g4-b64", "a/gpu0", "a/gpu1", "b/gpu0", "b/gpu1"),
			actions:  []elastico.Action{{Kind: elastico.Reconfigure, JobID: "ns/gang:g", Launch: elastico.LaunchParams{BatchSize: 64, LRScale: 2}}},
			want:     []string{"update g-0 g4-b64 a:0,1 gen 4 rank 0 ElasticoReconfigured", "update g-1 g4-b64 b:0,1 gen 4 rank 1 ElasticoReconfigured"},
		},
		{
			name:     "preempted: every member is evicted",
			pods:     bound(),
			decision: waiting("ns/gang:g", elastico.Preempted, "room for a heavier job"),
			want:     []string{"evict g-0 waits gen 4 ElasticoPreempted", "evict g-1 waits gen 4 ElasticoPreempted"},
		},
		{
			name:     "one member's share moves: the whole gang is evicted",
			pods:     bound(),
			decision: scheduled("ns/gang:g", "g4", "a/gpu0", "a/gpu1", "c/gpu0", "c/gpu1"),
			actions:  []elastico.Action{{Kind: elastico.Migrate, JobID: "ns/gang:g"}},
			want:     []string{"evict g-0 g4 a:0,1 gen 4 rank 0 ElasticoMoved", "evict g-1 g4 c:0,1 gen 4 rank 1 ElasticoMoved"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := buildState(epoch0, tt.pods, nodes, testOptions)
			if len(s.state.Jobs) != 1 {
				t.Fatalf("want the gang as one job, got %d jobs (problems %+v)", len(s.state.Jobs), s.problems)
			}
			tt.decision.JobID = s.state.Jobs[0].ID
			if tt.decision.Assignment != nil {
				tt.decision.Slowdown = 1 // as the members carry it
			}
			changes, problems := diff(&s, &elastico.Plan{Decisions: []elastico.Decision{tt.decision}, Actions: tt.actions}, nil)
			checkProblems(t, problems, nil)
			var got []string
			for _, c := range changes {
				if c.kind == noChange {
					continue
				}
				line := map[changeKind]string{evict: "evict", update: "update"}[c.kind] + " " + c.pod.Name
				if c.ungate {
					line += " ungate"
				}
				w := c.want
				if w.Admitted() {
					line += fmt.Sprintf(" %s %s:%s gen %d rank %d %s", w.Config, w.Node, w.Annotations()[annotation.GPUs], w.Generation, w.Rank, c.reason)
				} else {
					line += fmt.Sprintf(" waits gen %d %s", w.Generation, c.reason)
					if c.reason == "ElasticoWaiting" {
						line = fmt.Sprintf("%s waits gen %d %s", line[:strings.Index(line, " waits")], w.Generation, w.Status)
					}
				}
				got = append(got, line)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
			// Every admitted member says where the whole gang runs.
			for _, c := range changes {
				if c.want.Admitted() {
					if d, _, err := annotation.ParseDecision(c.want.Annotations()); err != nil || len(d.Gang) != 2 {
						t.Errorf("member %s: its decision does not read back: %v", c.pod.Name, err)
					}
				}
			}
		})
	}
}

func TestGangRanks(t *testing.T) {
	// An Indexed Job's pods rank by completion index, whatever their names.
	a, b := gangMember("g", "g-a", 0, twoMembers), gangMember("g", "g-b", 0, twoMembers)
	a.Annotations[completionIndexKey], b.Annotations[completionIndexKey] = "1", "0"
	s := buildState(epoch0, []*v1.Pod{a, b}, []*v1.Node{gpuNode("a", 4, 40960, "")}, testOptions)
	jp := s.jobs["ns/gang:g"]
	if jp == nil || jp.members[0].pod.Name != "g-b" || jp.members[1].pod.Name != "g-a" {
		t.Fatalf("ranks: %+v", jp)
	}
}
