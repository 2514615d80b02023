package rst

import (
	"fmt"
	"strings"
	"testing"

	"github.com/elastico/elastico"
)

func TestGavelFamilyOn(t *testing.T) {
	fam, err := GavelFamilyOn("ResNet-50")
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	ids := map[string]bool{}
	for _, p := range fam {
		count[p.Hardware.GPUModel]++
		if ids[p.Config.ID] {
			t.Errorf("ID %q twice", p.Config.ID)
		}
		ids[p.Config.ID] = true
		if !strings.HasSuffix(p.Config.ID, "@"+p.Hardware.GPUModel) {
			t.Errorf("ID %q does not name model %s", p.Config.ID, p.Hardware.GPUModel)
		}
		if c, err := ParseConfigID(p.Config.ID); err != nil || c.GPUs != p.Config.GPUs || c.BatchSize != p.Config.BatchSize {
			t.Errorf("ParseConfigID(%q) = %+v, %v", p.Config.ID, c, err)
		}
	}
	for _, g := range []string{"V100", "P100", "K80"} {
		one, err := GavelFamily(g, "ResNet-50")
		if err != nil {
			t.Fatal(err)
		}
		if m := one[0].Hardware.GPUModel; count[m] != len(one) {
			t.Errorf("%s: %d profiles, GavelFamily has %d", m, count[m], len(one))
		}
	}
	// The same configuration runs faster on V100 than on K80.
	v, k := profileByID(fam, "b32-g1@V100"), profileByID(fam, "b32-g1@K80")
	if v == nil || k == nil || !(v.Throughput > k.Throughput) {
		t.Errorf("b32-g1: V100 %v, K80 %v", v, k)
	}

	est, err := GavelFamilyOn("ResNet-50", "V100", "a100-sxm4-80gb")
	if err != nil {
		t.Fatal(err)
	}
	a := profileByID(est, "b32-g1@A100-SXM4-80GB")
	r, _, _ := SpeedRatio("ResNet-50", "a100-sxm4-80gb")
	if a == nil || !a.Interpolated || !near(a.Throughput, r*v.Throughput) {
		t.Errorf("estimated A100 b32-g1 = %+v, want Interpolated at %g × %g", a, r, v.Throughput)
	}
	if v2 := profileByID(est, "b32-g1@V100"); v2 == nil || v2.Interpolated {
		t.Errorf("measured V100 profile %+v", v2)
	}

	for _, bad := range [][]string{{"V100", "V100"}, {"t4"}, {"a100"}} {
		if _, err := GavelFamilyOn("ResNet-50", bad...); err == nil {
			t.Errorf("GavelFamilyOn(%v) accepted", bad)
		}
	}
}

func near(a, b float64) bool { return a > 0.999999*b && a < 1.000001*b }

func profileByID(fam []elastico.Profile, id string) *elastico.Profile {
	for i := range fam {
		if fam[i].Config.ID == id {
			return &fam[i]
		}
	}
	return nil
}

func TestJoinFamiliesErrors(t *testing.T) {
	p := func(model string) elastico.Profile {
		return elastico.Profile{Family: "f", Config: elastico.Configuration{ID: "b8-g1"}, Hardware: elastico.Hardware{GPUModel: model}}
	}
	tests := []struct {
		name string
		fams [][]elastico.Profile
		want string
	}{
		{"empty", [][]elastico.Profile{{p("V100")}, nil}, "family 1 is empty"},
		{"no model", [][]elastico.Profile{{p("")}}, `Hardware.GPUModel is ""`},
		{"two models in one", [][]elastico.Profile{{p("V100"), p("K80")}}, `profile 1 (b8-g1): Hardware.GPUModel is "K80"`},
		{"a model twice", [][]elastico.Profile{{p("V100")}, {p("V100")}}, "GPU model V100 is given twice"},
	}
	for _, tc := range tests {
		if _, err := JoinFamilies(tc.fams...); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
}

// TestCheckerModels: a profile is checked against its model's GPUs.
func TestCheckerModels(t *testing.T) {
	node := func(id, model string, mem float64) elastico.Node {
		n := elastico.Node{ID: id, CPU: 64, RAM: 512}
		for k := range 4 {
			n.GPUs = append(n.GPUs, elastico.GPU{ID: fmt.Sprintf("%s-%d", id, k), Model: model, Memory: mem})
		}
		return n
	}
	prof := func(model string, gpus int, mem float64) *elastico.Profile {
		return &elastico.Profile{Config: elastico.Configuration{ID: "c"}, Demand: elastico.Demand{GPUs: gpus, SM: 1, GPUMemory: mem, CPU: 1, RAM: 1},
			Throughput: 1, Hardware: elastico.Hardware{GPUModel: model}}
	}
	mixed := &elastico.Cluster{Nodes: []elastico.Node{node("v", "V100", 16), node("k", "K80", 11)}}
	anon := &elastico.Cluster{Nodes: []elastico.Node{node("v", "V100", 16), node("x", "", 11)}}
	tests := []struct {
		name    string
		cluster *elastico.Cluster
		p       *elastico.Profile
		want    string // prefix of Why; "" fits
	}{
		{"a V100 profile on the V100s", mixed, prof("V100", 4, 15), ""},
		{"a K80 profile above the K80s' memory", mixed, prof("K80", 1, 15), "needs 15 GiB per GPU, above every GPU's memory (largest 11 GiB)"},
		{"eight V100s where there are four", mixed, prof("V100", 8, 4), "needs 8 GPUs with 4 GiB, the cluster has 4"},
		{"a model the cluster lacks", mixed, prof("A100", 1, 4), "was profiled for GPU model A100; the cluster has K80, V100"},
		{"no model runs anywhere", mixed, prof("", 8, 4), ""},
		{"a model the cluster lacks, on GPUs that name none", anon, prof("A100", 4, 11), ""},
		{"a V100 profile on V100s and anonymous GPUs", anon, prof("V100", 1, 4), ""},
	}
	for _, tc := range tests {
		ch, err := NewChecker(tc.cluster)
		if err != nil {
			t.Fatal(err)
		}
		if got := ch.Why(tc.p, 0, true); (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: Why = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestPruneKeepsEachModel: a fast GPU's profile does not prune a slow
// GPU's, which may be all that is free.
func TestPruneKeepsEachModel(t *testing.T) {
	fam, err := GavelFamilyOn("ResNet-18", "v100", "K80") // any case
	if err != nil {
		t.Fatal(err)
	}
	count := map[string]int{}
	for _, p := range Prune(fam) {
		count[p.Hardware.GPUModel]++
	}
	if count["V100"] == 0 || count["K80"] == 0 {
		t.Errorf("Prune kept %v", count)
	}
	v, k := profileByID(fam, "b32-g1@V100"), profileByID(fam, "b32-g1@K80")
	if Dominates(v, k) {
		t.Error("a V100 profile dominates a K80 one")
	}
	anon := *v
	anon.Hardware.GPUModel = ""
	if !Dominates(&anon, k) {
		t.Error("a profile of no model, faster and no larger, does not dominate")
	}
}
