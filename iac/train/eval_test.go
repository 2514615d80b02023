package train

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/elastico/elastico/iac"
)

var quickEval = EvalConfig{Folds: 3, MLP: quick, GBDT: iac.GBDTConfig{Trees: 60}}

func TestCrossValidate(t *testing.T) {
	d := data(4, 4, 1)
	r, err := CrossValidate(d, quickEval, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	n := len(d.Samples())
	if r.TestPairs != n || r.TrainPairs <= n/2 || r.TrainPairs >= n {
		t.Errorf("tested %d (want %d), trained on %d per fold", r.TestPairs, n, r.TrainPairs)
	}
	// The law is smooth and noiseless: the MLP and the trees learn it, a
	// straight line in log space does not.
	if r.MLP.MAPE > 5 || r.MLP.R2 < 0.9 {
		t.Errorf("MLP: %+v, want MAPE ≤ 5 %% and R² ≥ 0.9", r.MLP)
	}
	if r.GBDT.MAPE > 8 {
		t.Errorf("GBDT: %+v, want MAPE ≤ 8 %%", r.GBDT)
	}
	if !(r.Linear.MAPE > r.MLP.MAPE) {
		t.Errorf("linear (%.2f %%) beats the MLP (%.2f %%) on a product law", r.Linear.MAPE, r.MLP.MAPE)
	}
	var fams []string
	total := 0
	for _, f := range r.PerFamily {
		fams = append(fams, f.Family)
		total += f.MLP.N
	}
	if d := cmp.Diff([]string{"f0", "f1", "f2", "f3"}, fams); d != "" || total != n {
		t.Errorf("per-family rows %v covering %d samples (want all %d):\n%s", fams, total, n, d)
	}
	again, err := CrossValidate(d, quickEval, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(r, again); d != "" {
		t.Errorf("same seed, different report:\n%s", d)
	}
}

func TestHoldoutTestsOnlyTheHeldFamily(t *testing.T) {
	d := data(4, 3, 1)
	r, err := Holdout(d, []string{"f1"}, quickEval, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	touching, rest := 0, 0
	for _, s := range d.Samples() {
		if s.Victim == "f1" || s.Aggressor == "f1" {
			touching++
		} else {
			rest++
		}
	}
	if r.TestPairs != touching || r.TrainPairs != rest {
		t.Errorf("tested %d, trained %d; want %d and %d", r.TestPairs, r.TrainPairs, touching, rest)
	}
	if !strings.Contains(r.Mode, "holdout f1") {
		t.Errorf("mode %q", r.Mode)
	}
	if _, err := Holdout(d, []string{"nope"}, quickEval, rand.New(rand.NewPCG(1, 0))); err == nil || !strings.Contains(err.Error(), `family "nope"`) {
		t.Errorf("unknown family: %v", err)
	}
	if _, err := Holdout(d, nil, quickEval, rand.New(rand.NewPCG(1, 0))); err == nil {
		t.Errorf("no family: no error")
	}
}

func TestLeaveOneFamilyOutAndTransfer(t *testing.T) {
	d := data(3, 3, 1)
	rs, err := LeaveOneFamilyOut(d, quickEval, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	if len(rs) != 3 {
		t.Fatalf("%d reports, want one per family", len(rs))
	}
	r, err := Transfer(d, data(3, 3, 2), quickEval, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	if r.TrainPairs != len(d.Samples()) || r.MLP.MAPE > 10 {
		t.Errorf("transfer to fresh profiles of the same law: %+v", r)
	}
}

func TestEvalRefusesBadInput(t *testing.T) {
	d := data(2, 2, 1)
	if _, err := CrossValidate(d, EvalConfig{Folds: 1}, rand.New(rand.NewPCG(1, 0))); err == nil || !strings.Contains(err.Error(), "Folds") {
		t.Errorf("1 fold: %v", err)
	}
	if _, err := CrossValidate(d, EvalConfig{}, nil); err == nil {
		t.Errorf("nil rng: no error")
	}
	small := &iac.Dataset{Name: "s", IDs: d.IDs, Profiles: d.Profiles, Pairs: d.Pairs[:2]}
	if _, err := CrossValidate(small, EvalConfig{}, rand.New(rand.NewPCG(1, 0))); err == nil || !strings.Contains(err.Error(), "too few") {
		t.Errorf("2 pairs in 5 folds: %v", err)
	}
}

func TestMetrics(t *testing.T) {
	ss := []iac.Sample{{Slowdown: 1}, {Slowdown: 2}, {Slowdown: 4}}
	outs := []outcome{{s: &ss[0], mlp: 1.1}, {s: &ss[1], mlp: 2}, {s: &ss[2], mlp: 3}}
	m := metrics(outs, func(o *outcome) float64 { return o.mlp })
	want := Metrics{
		MAPE:      100 * (0.1 + 0 + 0.25) / 3,
		R2:        1 - (0.01+0+1)/((1-7.0/3)*(1-7.0/3)+(2-7.0/3)*(2-7.0/3)+(4-7.0/3)*(4-7.0/3)),
		SpeedMAPE: 100 * (math.Abs(1/1.1-1)*1 + 0 + math.Abs(1.0/3-0.25)*4) / 3,
		N:         3,
	}
	if d := cmp.Diff(want, m, cmp.Comparer(func(a, b float64) bool { return math.Abs(a-b) < 1e-12 })); d != "" {
		t.Errorf("metrics (-want +got):\n%s", d)
	}
}

// TestMetricsJSON: a metric that cannot be computed encodes as null (a
// report with one must still encode) and reads back as NaN.
func TestMetricsJSON(t *testing.T) {
	r := Report{Mode: "holdout", MLP: Metrics{MAPE: 3.5, R2: math.NaN(), SpeedMAPE: 3.1, N: 4}, GBDT: Metrics{MAPE: math.Inf(1)}}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("a report with a NaN metric does not encode: %v", err)
	}
	if !strings.Contains(string(b), `"mlp":{"mape":3.5,"r2":null,"speed_mape":3.1,"n":4}`) {
		t.Errorf("encoded %s", b)
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.MLP.MAPE != 3.5 || !math.IsNaN(back.MLP.R2) || back.MLP.N != 4 || !math.IsNaN(back.GBDT.MAPE) {
		t.Errorf("read back %+v", back)
	}
}
