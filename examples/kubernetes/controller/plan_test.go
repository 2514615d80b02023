package controller

import (
	"strings"
	"testing"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/examples/kubernetes/annotation"
	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

func scheduled(id, config string, gpus ...string) elastico.Decision {
	return elastico.Decision{JobID: id, Assignment: &elastico.Assignment{ConfigID: config, GPUs: gpus}, Status: elastico.Status{Code: elastico.Scheduled}, Slowdown: 1.1}
}

func waiting(id string, code elastico.Code, why string) elastico.Decision {
	return elastico.Decision{JobID: id, Status: elastico.Status{Code: code, Reasons: []string{why}}}
}

func TestDiff(t *testing.T) {
	nodes := []*v1.Node{gpuNode("a", 2, 40960, "mps"), gpuNode("b", 2, 40960, "")}
	type want struct {
		pod        string
		kind       changeKind
		ungate     bool
		config     string // "" for a waiting pod
		gpus       string
		sharing    string
		generation int64
		action     string
		reason     string
	}
	tests := []struct {
		name         string
		pods         []*v1.Pod
		decisions    func(s *snapshot) []elastico.Decision
		actions      []elastico.Action
		want         []want
		wantProblems []string
	}{
		{
			name: "two new pods share a GPU: annotated, ungated, generation 1",
			pods: []*v1.Pod{newPod("p", 0, oneGPU), newPod("q", 1, oneGPU)},
			decisions: func(*snapshot) []elastico.Decision {
				return []elastico.Decision{scheduled("ns/p", "small", "a/gpu1"), scheduled("ns/q", "small", "a/gpu1")}
			},
			actions: []elastico.Action{{Kind: elastico.Start, JobID: "ns/p"}, {Kind: elastico.Start, JobID: "ns/q"}},
			want: []want{
				{"p", update, true, "small", "1", "shared", 1, "start", "ElasticoAdmitted"},
				{"q", update, true, "small", "1", "shared", 1, "start", "ElasticoAdmitted"},
			},
		},
		{
			name: "a running pod the Plan keeps is not written to",
			pods: []*v1.Pod{admitted(newPod("p", 0, oneGPU), "small", "a", true, 0)},
			decisions: func(*snapshot) []elastico.Decision {
				d := scheduled("ns/p", "small", "a/gpu0")
				d.Slowdown = 1
				return []elastico.Decision{d}
			},
		},
		{
			name: "a reconfiguration in place: new generation, the launch parameters of the action",
			pods: []*v1.Pod{admitted(newPod("p", 0, oneGPU), "small", "b", true, 0)},
			decisions: func(*snapshot) []elastico.Decision {
				return []elastico.Decision{scheduled("ns/p", "pair", "b/gpu0", "b/gpu1")}
			},
			actions: []elastico.Action{{Kind: elastico.Reconfigure, JobID: "ns/p", Launch: elastico.LaunchParams{BatchSize: 64, LRScale: 2}}},
			want:    []want{{"p", update, false, "pair", "0,1", "whole,whole", 2, "reconfigure", "ElasticoReconfigured"}},
		},
		{
			name: "preemption and a move to another node evict bound pods, first",
			pods: []*v1.Pod{newPod("new", 0, oneGPU), admitted(newPod("p", 1, oneGPU), "small", "a", true, 0), admitted(newPod("q", 2, oneGPU), "small", "a", true, 1)},
			decisions: func(*snapshot) []elastico.Decision {
				return []elastico.Decision{scheduled("ns/new", "pair", "a/gpu0", "a/gpu1"), waiting("ns/p", elastico.Preempted, "room for ns/new"), scheduled("ns/q", "small", "b/gpu0")}
			},
			actions: []elastico.Action{{Kind: elastico.Preempt, JobID: "ns/p"}, {Kind: elastico.Migrate, JobID: "ns/q"}, {Kind: elastico.Start, JobID: "ns/new"}},
			want: []want{
				{"p", evict, false, "", "", "", 2, "", "ElasticoPreempted"},
				{"q", evict, false, "small", "0", "whole", 2, "migrate", "ElasticoMoved"},
				{"new", update, true, "pair", "0,1", "whole,whole", 1, "start", "ElasticoAdmitted"},
			},
		},
		{
			name: "an admitted pod not bound yet goes back to waiting",
			pods: []*v1.Pod{admitted(newPod("p", 0, oneGPU), "small", "a", false, 0)},
			decisions: func(*snapshot) []elastico.Decision {
				return []elastico.Decision{waiting("ns/p", elastico.Unaffordable, "prices rose")}
			},
			want: []want{{"p", update, false, "", "", "", 2, "", "ElasticoWaiting"}},
		},
		{
			name: "a plan without actions: the controller starts the job itself",
			pods: []*v1.Pod{newPod("p", 0, oneGPU)},
			decisions: func(*snapshot) []elastico.Decision {
				return []elastico.Decision{scheduled("ns/p", "small", "b/gpu1")}
			},
			want: []want{{"p", update, true, "small", "1", "whole", 1, "start", "ElasticoAdmitted"}},
		},
		{
			name: "decisions that cannot be applied are reported",
			pods: []*v1.Pod{newPod("p", 0, oneGPU), newPod("q", 1, oneGPU), newPod("r", 2, oneGPU)},
			decisions: func(*snapshot) []elastico.Decision {
				return []elastico.Decision{scheduled("ns/p", "pair", "a/gpu0", "b/gpu0"), scheduled("ns/q", "nope", "a/gpu0"), scheduled("ns/r", "pair", "a/gpu0")}
			},
			wantProblems: []string{"spreads the job over nodes a and b", `configuration "nope" is not in the job's family`, `configuration "pair" needs 2 GPUs, the Plan gives 1`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := buildState(epoch0, tt.pods, nodes, testOptions)
			plan := &elastico.Plan{Decisions: tt.decisions(&s), Actions: tt.actions}
			changes, problems := diff(&s, plan, nil)
			var got []want
			for _, c := range changes {
				if c.kind == noChange && c.cond != nil {
					continue // a condition to write only
				}
				ann := c.want.Annotations()
				got = append(got, want{c.pod.Name, c.kind, c.ungate, c.want.Config, ann[annotation.GPUs], ann[annotation.GPUSharing], c.want.Generation, c.want.Action, c.reason})
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
			if len(problems) != len(tt.wantProblems) {
				t.Fatalf("problems = %+v, want %d", problems, len(tt.wantProblems))
			}
			for i, p := range problems {
				if !strings.Contains(p.message, tt.wantProblems[i]) {
					t.Errorf("problem %d = %q, want it to contain %q", i, p.message, tt.wantProblems[i])
				}
			}
		})
	}
}

func TestDesiredLaunch(t *testing.T) {
	// Two jobs share a/gpu1: each container sees its GPU as device 0, and
	// the MPS limits say so, whatever device numbers the Plan used.
	s := buildState(epoch0, []*v1.Pod{newPod("p", 0, oneGPU), newPod("q", 1, oneGPU)}, []*v1.Node{gpuNode("a", 2, 40960, "mps")}, testOptions)
	plan := &elastico.Plan{
		Decisions: []elastico.Decision{scheduled("ns/p", "small", "a/gpu1"), scheduled("ns/q", "small", "a/gpu1")},
		Actions: []elastico.Action{{Kind: elastico.Start, JobID: "ns/p", Launch: elastico.LaunchParams{
			BatchSize: 32, LRScale: 1, MemoryFraction: 0.25, MPSPinnedMemLimit: "1=10240MB", MPSActiveThreadPercentage: 50}}},
	}
	changes, problems := diff(&s, plan, nil)
	if len(problems) != 0 || len(changes) != 2 {
		t.Fatalf("changes %d, problems %v", len(changes), problems)
	}
	wantP := []string{
		"CUDA_DEVICE_ORDER=PCI_BUS_ID", "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50", "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=10240MB",
		"CUDA_VISIBLE_DEVICES=1", "ELASTICO_AMP=0", "ELASTICO_BATCH_SIZE=32", "ELASTICO_CHECKPOINTING=0", "ELASTICO_CONFIG=small",
		"ELASTICO_GENERATION=1", "ELASTICO_LR_SCALE=1", "ELASTICO_MEMORY_FRACTION=0.2500",
	}
	if diff := cmp.Diff(wantP, changes[0].want.Env()); diff != "" {
		t.Errorf("env of p, launched by the Plan (-want +got):\n%s", diff)
	}
	// q has no action: the controller derives everything with rst.Launch.
	if env := strings.Join(changes[1].want.Env(), " "); !strings.Contains(env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=10240MB") || !strings.Contains(env, "ELASTICO_MEMORY_FRACTION=0.2500") {
		t.Errorf("env of q: %s", env)
	}
}

func TestDiffHoldsBackFreshReasons(t *testing.T) {
	p := newPod("p", 0, oneGPU)
	d := annotation.Decision{Status: "Unaffordable: prices at 1.2", Generation: 0}
	for k, v := range d.Annotations() {
		p.Annotations[k] = v
	}
	s := buildState(epoch0, []*v1.Pod{p}, []*v1.Node{gpuNode("a", 1, 40960, "")}, testOptions)
	fresh := map[types.UID]bool{p.UID: true}
	tests := []struct {
		name      string
		decision  elastico.Decision
		fresh     map[types.UID]bool
		wantWrite bool
	}{
		{"same cause, new reasons, written recently", waiting("ns/p", elastico.Unaffordable, "prices at 1.3"), fresh, false},
		{"same cause, new reasons, not written recently", waiting("ns/p", elastico.Unaffordable, "prices at 1.3"), nil, true},
		{"a new cause is written at once", waiting("ns/p", elastico.Unplaceable, "fragmented"), fresh, true},
		{"an admission is written at once", scheduled("ns/p", "small", "a/gpu0"), fresh, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			changes, _ := diff(&s, &elastico.Plan{Decisions: []elastico.Decision{tt.decision}}, tt.fresh)
			if got := len(changes) > 0 && changes[0].kind == update; got != tt.wantWrite {
				t.Errorf("written = %v, want %v (%+v)", got, tt.wantWrite, changes)
			}
		})
	}
}
