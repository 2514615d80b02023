package adapter

import (
	"os"
	"strings"
	"testing"

	"github.com/elastico/elastico"
	"github.com/google/go-cmp/cmp"
)

func TestDecodeJobsSample(t *testing.T) {
	f, err := os.Open("testdata/squeue-sample.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	jobs, err := DecodeJobs(f)
	if err != nil {
		t.Fatal(err)
	}
	type row struct {
		ID                   int
		State, Comment, Tres string
		Restarts             int
		Done, Held           bool
	}
	var got []row
	for _, j := range jobs {
		c := j.Comment
		if len(c) > 40 {
			c = c[:40] + "..."
		}
		got = append(got, row{j.ID, j.State, c, j.TresPerNode, j.Restarts, j.Done(), j.Held()})
	}
	want := []row{
		{1, "COMPLETED", `elastico:{"pool":"train","want":"gpu"}`, "gres:gpu:1", 0, true, false},
		{2, "COMPLETED", "", "gres:shard:2", 0, true, false},
		{3, "COMPLETED", "", "gres:gpu:2", 1, true, false},
		{4, "COMPLETED", `elastico:{"pool":"infer","want":"shard"}`, "gres:shard:1", 0, true, false},
		{5, "CANCELLED", `elastico:{"a":"updated value","n":2}`, "", 0, true, false},
		{6, "CANCELLED", strings.Repeat("a", 40) + "...", "", 0, true, false},
		{7, "RUNNING", `elastico:{"k":1}`, "gres:gpu:2", 0, false, false},
		{8, "RUNNING", "", "gres:shard:1", 0, false, false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("jobs (-want +got):\n%s", diff)
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
	}{
		{"not json", "slurm_load_jobs error", "adapter: squeue --json"},
		{"errors reported", `{"errors":[{"error":"boom"}],"jobs":[]}`, "reported errors"},
		{"no jobs", `{"meta":{}}`, `no "jobs" array`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := DecodeJobs(strings.NewReader(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("DecodeJobs = %v, want %q", err, tt.wantErr)
			}
		})
	}
	if _, err := DecodeNodes(strings.NewReader(`{"errors":[]}`)); err == nil || !strings.Contains(err.Error(), `no "nodes"`) {
		t.Errorf("DecodeNodes without nodes = %v", err)
	}
}

func TestParseGres(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []Gres
	}{
		{"node, typed", "gpu:gpu0:1,gpu:gpu1:1,shard:gpu0:4,shard:gpu1:4",
			[]Gres{{"gpu", "gpu0", 1}, {"gpu", "gpu1", 1}, {"shard", "gpu0", 4}, {"shard", "gpu1", 4}}},
		{"node, untyped with sockets", "gpu:8(S:0-1),shard:16", []Gres{{"gpu", "", 8}, {"shard", "", 16}}},
		{"socket list with comma", "gpu:a100:4(S:0,1),mps:200", []Gres{{"gpu", "a100", 4}, {"mps", "", 200}}},
		{"tres_per_node", "gres:shard:gpu1:2,gres:shard:gpu3:2", []Gres{{"shard", "gpu1", 2}, {"shard", "gpu3", 2}}},
		{"gres_detail", "gpu:gpu0:1(IDX:0),gpu:gpu1:0(IDX:),shard:gpu2:0(IDX:N/A)",
			[]Gres{{"gpu", "gpu0", 1}, {"gpu", "gpu1", 0}, {"shard", "gpu2", 0}}},
		{"null type and count suffix", "gpu:(null):1,shard:1K", []Gres{{"gpu", "", 1}, {"shard", "", 1024}}},
		{"empty", "", nil},
		{"null", "(null)", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseGres(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseGres(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
	for _, bad := range []string{"gpu:a:b:c", "gpu:a100:x"} {
		if _, err := ParseGres(bad); err == nil || !strings.HasPrefix(err.Error(), "adapter: GRES") {
			t.Errorf("ParseGres(%q) = %v, want an error naming the GRES", bad, err)
		}
	}
}

func TestExpandHostlist(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		{"node1", []string{"node1"}},
		{"node[1-3,5],gpu-a", []string{"node1", "node2", "node3", "node5", "gpu-a"}},
		{"n[08-10]", []string{"n08", "n09", "n10"}},
		{"", nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, expandHostlist(tt.in)); diff != "" {
			t.Errorf("expandHostlist(%q) (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestInventory(t *testing.T) {
	nodes := []Node{
		{Name: "a", State: "mixed", CPUs: 32, RealMemory: 256000, Gres: "gpu:gpu10:1,gpu:gpu2:1,gpu:gpu1:1,shard:gpu1:4,shard:gpu2:4,shard:gpu10:4"},
		{Name: "b", State: "idle", CPUs: 8, RealMemory: 8192, Gres: "gpu:gpu0:1,gpu:gpu1:1"},
		{Name: "c", State: "idle", CPUs: 8, Gres: "gpu:a100:4"},                           // not typed per GPU
		{Name: "d", State: "idle", Flags: []string{"DRAIN"}, CPUs: 8, Gres: "gpu:gpu0:1"}, // draining
	}
	inv, notes := buildInventory(nodes, &gpuModels{fallback: "H100", defMem: 80})
	if len(notes) != 1 || !strings.Contains(notes[0], "node c") {
		t.Errorf("notes = %q, want one about node c", notes)
	}
	// A foreign job holds b/gpu1 whole and 3 CPUs of b.
	inv.holdForeign(&Job{ID: 9, State: "RUNNING", Nodes: "b", CPUs: 3, GresDetail: []string{"gpu:gpu0:0(IDX:),gpu:gpu1:1(IDX:1)"}})
	got := inv.cluster()
	want := elastico.Cluster{Nodes: []elastico.Node{
		{ID: "a", CPU: 32, RAM: 250, GPUs: []elastico.GPU{
			{ID: "a/gpu1", Model: "H100", Memory: 80, Shared: true},
			{ID: "a/gpu2", Model: "H100", Memory: 80, Shared: true},
			{ID: "a/gpu10", Model: "H100", Memory: 80, Shared: true},
		}},
		{ID: "b", CPU: 5, RAM: 8, GPUs: []elastico.GPU{{ID: "b/gpu0", Model: "H100", Memory: 80}}},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cluster (-want +got):\n%s", diff)
	}
	if o := inv.gpus["a/gpu10"].Ordinal; o != 2 {
		t.Errorf("a/gpu10 ordinal = %d, want 2 (natural order)", o)
	}
}
