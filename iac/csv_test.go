package iac

import (
	"bytes"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/elastico/elastico"
)

const header = "id,family,class,batch_size,amp,checkpointing,kv_cache_frac,params,gpus,throughput," +
	"gr_engine_active,sm_active,sm_occupancy,tensor_active,fp_active,dram_active,fb_used_frac,pcie_frac,nvlink_frac,power_frac"

const goodProfiles = header + ",notes\n" +
	"# a comment line\n" +
	"r50,resnet50,training,64,1,0,,2.5e7,1,410.5,0.9,0.8,0.5,0.6,0.3,0.4,0.35,0.01,0,0.7,fine\n" +
	"llm,llama,inference,,0,0,0.6,7e9,1,,,,,,,,,,,,\n"

const goodPairs = "b,a,speed_a,speed_b\n" + // columns in any order
	"llm,r50,0.8,0.7\n" +
	"r50,r50,0.5,\n"

func TestReadDataset(t *testing.T) {
	d, err := ReadDataset(strings.NewReader(goodProfiles), "profiles.csv", strings.NewReader(goodPairs), "pairs.csv")
	if err != nil {
		t.Fatal(err)
	}
	var c elastico.Counters
	for i, v := range []float64{0.9, 0.8, 0.5, 0.6, 0.3, 0.4, 0.35, 0.01, 0, 0.7} {
		c.Set(elastico.Counter(i), v)
	}
	want := &Dataset{
		Name: "profiles.csv",
		IDs:  []string{"r50", "llm"},
		Profiles: []elastico.Profile{
			{Family: "resnet50", Class: elastico.Training, Params: 2.5e7, Throughput: 410.5, Counters: c,
				Config: elastico.Configuration{ID: "r50", BatchSize: 64, AMP: true, GPUs: 1}, Demand: elastico.Demand{GPUs: 1}},
			{Family: "llama", Class: elastico.Inference, Params: 7e9,
				Config: elastico.Configuration{ID: "llm", KVCacheFrac: 0.6, GPUs: 1}, Demand: elastico.Demand{GPUs: 1}},
		},
		Pairs: []Pair{{A: 0, B: 1, SpeedA: 0.8, SpeedB: 0.7, Line: 2}, {A: 0, B: 0, SpeedA: 0.5, Line: 3}},
	}
	if diff := cmp.Diff(want, d); diff != "" {
		t.Errorf("dataset (-want +got):\n%s", diff)
	}
	// pairs.csv's a is r50's column b here: speed_a belongs to a.
	s := d.Samples()
	if len(s) != 3 || s[0].Victim != "resnet50" || s[0].Slowdown != 1/0.8 || s[1].Victim != "llama" || s[2].Slowdown != 2 {
		t.Errorf("samples = %+v", s)
	}
}

func TestCSVRoundTrip(t *testing.T) {
	d, err := ReadDataset(strings.NewReader(goodProfiles), "p", strings.NewReader(goodPairs), "q")
	if err != nil {
		t.Fatal(err)
	}
	d.Profiles[0].Hardware.GPUModel = "A100"
	var p, q bytes.Buffer
	if err := d.WriteProfiles(&p); err != nil {
		t.Fatal(err)
	}
	if err := d.WritePairs(&q); err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{"p.csv": {Data: p.Bytes()}, "q.csv": {Data: q.Bytes()}}
	back, err := ReadDatasetFS(fsys, "p.csv", "q.csv")
	if err != nil {
		t.Fatal(err)
	}
	back.Name = d.Name
	for i := range d.Pairs { // lines differ: the written file has no comment
		d.Pairs[i].Line = back.Pairs[i].Line
	}
	if diff := cmp.Diff(d, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestReadProfilesErrors(t *testing.T) {
	row := func(cells string) string { return header + "\n" + cells + "\n" }
	ok := "x,f,training,8,0,0,0,1e6,1,10,,,,,,,,,,"
	set := func(col int, v string) string {
		c := strings.Split(ok, ",")
		c[col] = v
		return strings.Join(c, ",")
	}
	inference := strings.Replace(set(6, ""), "training", "inference", 1)
	tests := []struct {
		name, in string
		wantErr  string
	}{
		{"empty file", "", "profiles.csv: empty file"},
		{"no rows", header + "\n", "no profiles"},
		{"missing column", "id,family\nx,f\n", "profiles.csv:1: header lacks column(s) class, batch_size"},
		{"duplicate column", header + ",id\n", `profiles.csv:1:`},
		{"short row", header + "\nx,f\n", "profiles.csv:2:"},
		{"empty id", row(set(0, "")), "profiles.csv:2:1 (id): is empty"},
		{"empty family", row(set(1, "")), "profiles.csv:2:2 (family): is empty"},
		{"bad class", row(set(2, "serving")), `profiles.csv:2:3 (class): "serving" is neither`},
		{"bad batch", row(set(3, "0")), `profiles.csv:2:4 (batch_size): "0" is not an integer ≥ 1`},
		{"bad amp", row(set(4, "yes")), `profiles.csv:2:5 (amp): "yes" is not 0, 1`},
		{"empty ckpt", row(set(5, "")), "profiles.csv:2:6 (checkpointing): is empty"},
		{"kv above 1", row(set(6, "1.5")), "profiles.csv:2:7 (kv_cache_frac): 1.5 is out of range"},
		{"inference without kv", row(inference), "profiles.csv:2:7 (kv_cache_frac): is empty"},
		{"zero params", row(set(7, "0")), "profiles.csv:2:8 (params): 0 is out of range"},
		{"no gpus", row(set(8, "")), "profiles.csv:2:9 (gpus): is empty"},
		{"NaN throughput", row(set(9, "NaN")), `profiles.csv:2:10 (throughput): "NaN" is not a finite number`},
		{"counter above 1", row(set(12, "1.2")), "profiles.csv:2:13 (sm_occupancy): 1.2 is out of range"},
		{"negative counter", row(set(19, "-0.1")), "profiles.csv:2:20 (power_frac): -0.1 is out of range"},
		{"duplicate id", header + "\n" + ok + "\n" + ok + "\n", `profiles.csv:3:1 (id): "x" already defined on line 2`},
		{"bad quote", header + "\n\"x,f\n", "profiles.csv:"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ReadProfiles(strings.NewReader(tc.in), "profiles.csv")
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
			if err != nil && !strings.HasPrefix(err.Error(), "iac: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
}

func TestReadPairsErrors(t *testing.T) {
	tests := []struct {
		name, in string
		wantErr  string
	}{
		{"missing column", "a,b,speed_a\n", "pairs.csv:1: header lacks column(s) speed_b"},
		{"no rows", "a,b,speed_a,speed_b\n", "pairs.csv: no pairs"},
		{"unknown profile", "a,b,speed_a,speed_b\nr50,gpt,0.5,0.5\n", `pairs.csv:2:2 (b): profile "gpt" is not in profiles.csv`},
		{"zero speed", "a,b,speed_a,speed_b\nr50,llm,0,0.5\n", "pairs.csv:2:3 (speed_a): 0 is out of range"},
		{"no speed", "a,b,speed_a,speed_b\nr50,llm,,\n", "pairs.csv:2:3 (speed_a): both speeds are empty"},
		{"bad speed", "a,b,speed_a,speed_b\nr50,llm,0.5,fast\n", `pairs.csv:2:4 (speed_b): "fast" is not a finite number`},
		{"repeated pair", "a,b,speed_a,speed_b\nr50,llm,0.5,0.6\nllm,r50,0.6,0.5\n", "pairs.csv:3:1 (a): pair (llm, r50) already measured on line 2"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, err := ReadProfiles(strings.NewReader(goodProfiles), "profiles.csv")
			if err != nil {
				t.Fatal(err)
			}
			err = d.ReadPairs(strings.NewReader(tc.in), "pairs.csv")
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestReadDatasetFSMissingFile(t *testing.T) {
	_, err := ReadDatasetFS(fstest.MapFS{}, "p.csv", "q.csv")
	if err == nil || !strings.Contains(err.Error(), "p.csv") {
		t.Errorf("error %v, want one naming p.csv", err)
	}
}

func TestDatasetValidate(t *testing.T) {
	base := func() *Dataset {
		return &Dataset{Name: "d", IDs: []string{"a", "b"},
			Profiles: []elastico.Profile{{Family: "f"}, {Family: "g"}},
			Pairs:    []Pair{{A: 0, B: 1, SpeedA: 0.5, SpeedB: 0.5}}}
	}
	tests := []struct {
		name    string
		mutate  func(*Dataset)
		wantErr string
	}{
		{"valid", func(*Dataset) {}, ""},
		{"ids and profiles differ", func(d *Dataset) { d.IDs = d.IDs[:1] }, "1 IDs but 2 profiles"},
		{"repeated id", func(d *Dataset) { d.IDs[1] = "a" }, `ID "a" repeated`},
		{"empty family", func(d *Dataset) { d.Profiles[0].Family = "" }, "empty Family"},
		{"index out of range", func(d *Dataset) { d.Pairs[0].B = 2 }, "out of range"},
		{"NaN speed", func(d *Dataset) { d.Pairs[0].SpeedA = -1 }, "SpeedA is -1"},
		{"no speed", func(d *Dataset) { d.Pairs[0].SpeedA, d.Pairs[0].SpeedB = 0, 0 }, "neither speed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := base()
			tc.mutate(d)
			err := d.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Errorf("Validate() = %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Validate() = %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestSlowdownOf(t *testing.T) {
	tests := []struct {
		name  string
		speed float64
		want  float64
	}{
		{"half speed", 0.5, 2},
		{"unchanged", 1, 1},
		{"capped speed-up", 1.2, 1},
	}
	for _, tc := range tests {
		if got := SlowdownOf(tc.speed); got != tc.want {
			t.Errorf("%s: SlowdownOf(%g) = %g, want %g", tc.name, tc.speed, got, tc.want)
		}
	}
}
