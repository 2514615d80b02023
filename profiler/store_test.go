package profiler

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/elastico/elastico"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func storeProfile(family, id string, hw elastico.Hardware, throughput float64, interpolated bool) elastico.Profile {
	return elastico.Profile{
		Family: family, Class: elastico.Training, Params: 25.6e6,
		Config:       elastico.Configuration{ID: id, BatchSize: 64, AMP: true, GPUs: 1},
		Demand:       elastico.Demand{GPUs: 1, SM: 0.8, GPUMemory: 9.5, CPU: 3, RAM: 12},
		Throughput:   throughput,
		Counters:     counters(baseCounters),
		Hardware:     hw,
		Interpolated: interpolated,
	}
}

var h100 = elastico.Hardware{GPUModel: "NVIDIA H100 80GB HBM3", Driver: "550.54.15"}

func TestStorePutGet(t *testing.T) {
	st, err := OpenStore(filepath.Join(t.TempDir(), "profiles"))
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		name       string
		put        elastico.Profile
		wantStored bool
		wantGet    elastico.Profile // of the put's key
	}{
		{
			name:       "measured into an empty store",
			put:        storeProfile("resnet50", "bs64", testHW, 900, false),
			wantStored: true,
			wantGet:    storeProfile("resnet50", "bs64", testHW, 900, false),
		},
		{
			name:       "an interpolated profile never replaces a measured one",
			put:        storeProfile("resnet50", "bs64", testHW, 1000, true),
			wantStored: false,
			wantGet:    storeProfile("resnet50", "bs64", testHW, 900, false),
		},
		{
			name:       "a new measurement replaces the old",
			put:        storeProfile("resnet50", "bs64", testHW, 950, false),
			wantStored: true,
			wantGet:    storeProfile("resnet50", "bs64", testHW, 950, false),
		},
		{
			name:       "another hardware signature is another key",
			put:        storeProfile("resnet50", "bs64", h100, 2100, true),
			wantStored: true,
			wantGet:    storeProfile("resnet50", "bs64", h100, 2100, true),
		},
		{
			name:       "a measurement replaces an interpolation",
			put:        storeProfile("resnet50", "bs64", h100, 2000, false),
			wantStored: true,
			wantGet:    storeProfile("resnet50", "bs64", h100, 2000, false),
		},
		{
			name:       "another configuration",
			put:        storeProfile("resnet50", "bs32", testHW, 700, false),
			wantStored: true,
			wantGet:    storeProfile("resnet50", "bs32", testHW, 700, false),
		},
		{
			name:       "a family whose name is no file name",
			put:        storeProfile("llama-2/70b chat", "kv0.4", h100, 3000, false),
			wantStored: true,
			wantGet:    storeProfile("llama-2/70b chat", "kv0.4", h100, 3000, false),
		},
	}
	for _, s := range steps {
		stored, err := st.Put(s.put)
		if err != nil || stored != s.wantStored {
			t.Fatalf("%s: Put = %v, %v; want %v", s.name, stored, err, s.wantStored)
		}
		got, ok, err := st.Get(s.put.Family, s.put.Config.ID, s.put.Hardware)
		if err != nil || !ok {
			t.Fatalf("%s: Get = %v, %v", s.name, ok, err)
		}
		if diff := cmp.Diff(s.wantGet, got); diff != "" {
			t.Errorf("%s: Get (-want +got):\n%s", s.name, diff)
		}
	}

	fam, err := st.Family("resnet50", testHW)
	if err != nil {
		t.Fatal(err)
	}
	want := []elastico.Profile{storeProfile("resnet50", "bs32", testHW, 700, false), storeProfile("resnet50", "bs64", testHW, 950, false)}
	if diff := cmp.Diff(want, fam); diff != "" {
		t.Errorf("Family (-want +got):\n%s", diff)
	}
	all, err := st.All("resnet50")
	if err != nil || len(all) != 3 {
		t.Errorf("All = %d profiles, %v; want 3", len(all), err)
	}
	fams, err := st.Families()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"llama-2/70b chat", "resnet50"}, fams); diff != "" {
		t.Errorf("Families (-want +got):\n%s", diff)
	}
	if _, ok, err := st.Get("resnet50", "bs128", testHW); ok || err != nil {
		t.Errorf("Get of a missing configuration = %v, %v", ok, err)
	}
	if ps, err := st.Family("vgg16", testHW); len(ps) != 0 || err != nil {
		t.Errorf("Family of a missing family = %v, %v", ps, err)
	}
	// Atomic writes leave nothing but the family files behind.
	ents, _ := os.ReadDir(st.Dir())
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{"llama-2%2F70b%20chat.profiles.json", "resnet50.profiles.json"}, names); diff != "" {
		t.Errorf("files in the store (-want +got):\n%s", diff)
	}
}

func TestStorePutInvalid(t *testing.T) {
	st, _ := OpenStore(t.TempDir())
	bad := storeProfile("resnet50", "bs64", testHW, 900, false)
	bad.Demand.SM = 0
	if _, err := st.Put(bad); err == nil || !strings.Contains(err.Error(), "Demand.SM") {
		t.Errorf("Put of SM 0: %v", err)
	}
	noModel := storeProfile("resnet50", "bs64", elastico.Hardware{}, 900, false)
	if _, err := st.Put(noModel); err == nil || !strings.Contains(err.Error(), "GPUModel is empty") {
		t.Errorf("Put without a GPU model: %v", err)
	}
	if _, err := OpenStore(""); err == nil {
		t.Errorf("OpenStore(\"\") succeeded")
	}
}

// TestStoreGolden pins the file format: a change that breaks files already
// written shows here.
func TestStoreGolden(t *testing.T) {
	ps := []elastico.Profile{
		storeProfile("resnet50", "bs64", h100, 2000, false),
		storeProfile("resnet50", "bs128", h100, 3100, true),
		storeProfile("resnet50", "bs64", testHW, 900, false),
	}
	ps[1].Efficiency, ps[1].Config.BatchSize = 0.93, 128
	ps[2].Counters = elastico.Counters{}
	ps[2].Counters.Set(elastico.GrEngineActive, 0.99)
	var buf bytes.Buffer
	if err := Encode(&buf, "resnet50", ps); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "resnet50.profiles.json")
	if *update {
		if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(want), buf.String()); diff != "" {
		t.Errorf("encoding changed (-golden +now); rerun with -update if on purpose:\n%s", diff)
	}
	fam, got, err := Decode(bytes.NewReader(want), golden)
	if err != nil || fam != "resnet50" {
		t.Fatalf("Decode = %q, %v", fam, err)
	}
	wantSorted := []elastico.Profile{ps[1], ps[2], ps[0]} // by configuration ID, then GPU model
	if diff := cmp.Diff(wantSorted, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

func TestStoreRefusesBadFiles(t *testing.T) {
	valid, err := os.ReadFile(filepath.Join("testdata", "resnet50.profiles.json"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		content  string
		wantText string
	}{
		{"empty", "", "truncated or empty"},
		{"truncated", string(valid[:len(valid)/2]), "truncated or empty"},
		{"not JSON", "resnet50,bs64,2000\n", "not a profile store file"},
		{"another format", `{"format":"prometheus-snapshot","version":1,"family":"resnet50","profiles":[]}`, `format "prometheus-snapshot"`},
		{"a newer version", strings.Replace(string(valid), `"version": 1`, `"version": 2`, 1), "newer elastico (version 2"},
		{"version 0", strings.Replace(string(valid), `"version": 1`, `"version": 0`, 1), "version 0"},
		{"another family", strings.Replace(string(valid), `"family": "resnet50"`, `"family": "vgg16"`, 1), `holds family "vgg16"`},
		{"an unknown field", strings.Replace(string(valid), `"throughput"`, `"tput": 1, "throughput"`, 1), `unknown field "tput"`},
		{"an unknown counter", strings.Replace(string(valid), `"sm_active"`, `"sm_busy"`, 1), `unknown counter "sm_busy"`},
		{"an unknown class", strings.Replace(string(valid), `"class": "training"`, `"class": "serving"`, 1), `class is "serving"`},
		{"an invalid profile", strings.Replace(string(valid), `"sm": 0.8`, `"sm": 1.5`, 1), "Demand.SM"},
		{"a repeated key", strings.Replace(string(valid), `"id": "bs128"`, `"id": "bs64"`, 1), "repeats configuration"},
		{"trailing data", string(valid) + "{}", "data after"},
		{"no GPU model", strings.Replace(string(valid), `"gpu_model": "NVIDIA H100 80GB HBM3"`, `"gpu_model": ""`, 1), "gpu_model is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.content == string(valid) {
				t.Fatal("the test's replacement did not apply")
			}
			st, _ := OpenStore(t.TempDir())
			path := st.Path("resnet50")
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			_, _, err := st.Get("resnet50", "bs64", h100)
			if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("Get error = %v, want one naming %s and containing %q", err, path, tt.wantText)
			}
			// A refused file is never overwritten by a Put.
			if _, err := st.Put(storeProfile("resnet50", "bs64", h100, 1, false)); err == nil {
				t.Errorf("Put over a bad file succeeded")
			}
			if b, _ := os.ReadFile(path); string(b) != tt.content {
				t.Errorf("the bad file was changed")
			}
		})
	}
}

func TestEncodeRefuses(t *testing.T) {
	p := storeProfile("resnet50", "bs64", h100, 2000, false)
	tests := []struct {
		name     string
		family   string
		ps       []elastico.Profile
		wantText string
	}{
		{"no family", "", []elastico.Profile{p}, "family is empty"},
		{"another family", "vgg16", []elastico.Profile{p}, `of family "resnet50", not "vgg16"`},
		{"a repeated key", "resnet50", []elastico.Profile{p, p}, "two profiles of configuration"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Encode(&bytes.Buffer{}, tt.family, tt.ps)
			if err == nil || !strings.Contains(err.Error(), tt.wantText) {
				t.Errorf("Encode error = %v, want %q", err, tt.wantText)
			}
		})
	}
}

func TestFamilyEscape(t *testing.T) {
	for _, f := range []string{"resnet50", "llama-2/70b chat", ".hidden", "a%b", "ünï", "gpt.2"} {
		e := escapeFamily(f)
		if strings.ContainsAny(e, "/ ") || strings.HasPrefix(e, ".") {
			t.Errorf("escapeFamily(%q) = %q is no safe file name", f, e)
		}
		back, err := unescapeFamily(e)
		if err != nil || back != f {
			t.Errorf("unescapeFamily(%q) = %q, %v; want %q", e, back, err, f)
		}
	}
	for _, bad := range []string{"a%2", "a%zz"} {
		if _, err := unescapeFamily(bad); err == nil {
			t.Errorf("unescapeFamily(%q) succeeded", bad)
		}
	}
}
