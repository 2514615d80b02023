package annotation

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGangDecision(t *testing.T) {
	d := Decision{Status: "Scheduled", Generation: 2, Config: "g8", Node: "gpu-b", GPUs: []GPU{{Index: 0}, {Index: 1}, {Index: 2}},
		SM: 1, MemoryGiB: 30, Slowdown: 1, Action: "start", Launch: []string{"ELASTICO_BATCH_SIZE=64"},
		Gang: []Share{{Pod: "ft-0", Node: "gpu-a", GPUs: []int{2, 3, 4, 5, 6}}, {Pod: "ft-1", Node: "gpu-b", GPUs: []int{0, 1, 2}}}, Rank: 1}
	ann := d.Annotations()
	if ann[GangShares] != "ft-0=gpu-a:2,3,4,5,6;ft-1=gpu-b:0,1,2" || ann[GangRank] != "1" {
		t.Errorf("gang annotations: %q, %q", ann[GangShares], ann[GangRank])
	}
	for _, want := range []string{"ELASTICO_GANG_RANK=1", "ELASTICO_GANG_MEMBERS=2", "ELASTICO_GANG_LEADER=ft-0", "ELASTICO_WORLD_SIZE=8", "ELASTICO_RANK_OFFSET=5", "CUDA_VISIBLE_DEVICES=0,1,2"} {
		if !strings.Contains(ann[Env], want+"\n") {
			t.Errorf("env lacks %s:\n%s", want, ann[Env])
		}
	}
	got, _, err := ParseDecision(ann)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(d, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	if e := got; !e.SameWork(&d) {
		t.Error("a decision is not the same work as itself")
	}
	moved := d
	moved.Gang = []Share{d.Gang[0], {Pod: "ft-1", Node: "gpu-b", GPUs: []int{0, 1, 3}}}
	if moved.SameWork(&d) {
		t.Error("a gang whose shares changed does the same work")
	}

	bad := map[string]string{
		"gpu-a:0;ft-1=gpu-b:0,1,2":      "entry 0 is",
		"ft-0=gpu-a:0;ft-0=gpu-b:1":     "names pod ft-0 twice",
		"ft-0=gpu-a:x;ft-1=gpu-b:0,1,2": "entry 0 (ft-0)",
		"ft-0=gpu-a:0;ft-1=gpu-b:0,1,3": "entry 1 is gpu-b:0,1,3, the pod's",
	}
	for v, want := range bad {
		a := d.Annotations()
		a[GangShares] = v
		if _, _, err := ParseDecision(a); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("shares %q: error %v, want %q", v, err, want)
		}
	}
	a := d.Annotations()
	a[GangRank] = "2"
	if _, _, err := ParseDecision(a); err == nil || !strings.Contains(err.Error(), "gang-rank is 2") {
		t.Errorf("rank 2 of 2: %v", err)
	}
}

func TestJobMembers(t *testing.T) {
	const fam = `"family":[{"id":"g4","gpus":4,"sm":1,"gpuMemoryGiB":10,"throughput":1},{"id":"g2","gpus":2,"sm":1,"gpuMemoryGiB":10,"throughput":1}]`
	spec, j, err := ParseJobSpec("ns/gang:g", `{"class":"inference","members":2,`+fam+`}`)
	if err != nil || spec.Members != 2 || !j.Spread {
		t.Errorf("members 2: %+v %v, Spread %v", spec, err, j.Spread)
	}
	if _, j, err := ParseJobSpec("ns/p", `{"class":"inference",`+fam+`}`); err != nil || j.Spread {
		t.Errorf("one pod: %v, Spread %v", err, j.Spread)
	}
	for v, want := range map[string]string{
		`{"class":"inference","members":3,` + fam + `}`:  "family[1].gpus: is 2, want ≥ members (3)",
		`{"class":"inference","members":-1,` + fam + `}`: "members: is -1",
	} {
		if _, err := ParseJob("ns/gang:g", v); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", v, err, want)
		}
	}
}
