package gavel

import (
	"strings"
	"testing"
)

func TestLoad(t *testing.T) {
	all, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{V100: 636, P100: 656, K80: 589} // directed non-zero pairs, per SOURCES.md
	for gpu, n := range want {
		tab := all.Table(gpu)
		if tab == nil {
			t.Fatalf("no %s table", gpu)
		}
		if got := len(tab.Types()); got != 26 {
			t.Errorf("%s: %d single-GPU job types, want 26", gpu, got)
		}
		if got := len(tab.Pairs); got != n {
			t.Errorf("%s: %d measured pairs, want %d", gpu, got, n)
		}
		if got := len(tab.Isolated); got != 83 {
			t.Errorf("%s: %d job keys, want 83", gpu, got)
		}
	}
	if all.Unconsolidated(V100) == nil {
		t.Error("no unconsolidated V100 table")
	}
	if all.Table("v100") != all.Table(V100) {
		t.Error(`Table("v100") is not Table("V100")`)
	}
	v := all.Table(V100)
	r50 := JobType{"ResNet-50", 64}
	if iso := v.Isolated[Key{r50, 1}]; iso <= 0 {
		t.Errorf("ResNet-50 bs64 on V100: isolated %g", iso)
	}
	if s, ok := v.Speed(r50, JobType{"Transformer", 128}); !ok || s <= 0 || s > 1.5 {
		t.Errorf("speed of ResNet-50 next to Transformer: %g %v", s, ok)
	}
}

func TestModel(t *testing.T) {
	for in, want := range map[string]string{"v100": V100, "V100": V100, "p100": P100, "K80": K80, "t4": "", "v100_unconsolidated": ""} {
		if got, ok := Model(in); got != want || ok != (want != "") {
			t.Errorf("Model(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
}

func TestParseKey(t *testing.T) {
	tests := []struct {
		in      string
		want    Key
		wantErr bool
	}{
		{"('ResNet-50 (batch size 64)', 2)", Key{JobType{"ResNet-50", 64}, 2}, false},
		{"('A3C', 1)", Key{JobType{"A3C", 0}, 1}, false},
		{"('LM (batch size 5)', 8)", Key{JobType{"LM", 5}, 8}, false},
		{"ResNet-50", Key{}, true},
		{"('ResNet-50 (batch size x)', 1)", Key{}, true},
		{"('ResNet-50', 0)", Key{}, true},
	}
	for _, tc := range tests {
		got, err := ParseKey(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseKey(%q) = %v, %v; want %v, err %v", tc.in, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestParseRejectsCorrupt(t *testing.T) {
	for _, in := range []string{`{"v100": {"('A3C', 1)": {"null": "fast"}}}`, `{"v100": {"bad": {}}}`, `{"v100"`} {
		if _, err := Parse(strings.NewReader(in), "x.json"); err == nil || !strings.Contains(err.Error(), "x.json") {
			t.Errorf("Parse(%q) = %v, want an error naming x.json", in, err)
		}
	}
}
