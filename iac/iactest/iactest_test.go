package iactest_test

import (
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac/iactest"
)

// good is a predictor that keeps the contract: a fixed function of the
// profiles' batch sizes.
type good struct{}

func (good) Slowdown(v, a *elastico.Profile) float64 {
	return 1 + float64(v.Config.BatchSize%7+a.Config.BatchSize%5)/10
}

func TestSuitePassesAGoodPredictor(t *testing.T) { iactest.Run(t, good{}) }

// Bad predictors, each breaking one rule.
type speedUp struct{}

func (speedUp) Slowdown(v, a *elastico.Profile) float64 { return 0.8 }

type nan struct{}

func (nan) Slowdown(v, a *elastico.Profile) float64 {
	if v.Family == "bare" {
		return 0 / zero
	}
	return 1
}

var zero float64

type flaky struct{ n atomic.Int64 }

func (f *flaky) Slowdown(v, a *elastico.Profile) float64 { return 1 + float64(f.n.Add(1)%2) }

type allocating struct{}

var sink []float64

func (allocating) Slowdown(v, a *elastico.Profile) float64 {
	sink = make([]float64, 8)
	return 1.5
}

type mutating struct{}

func (mutating) Slowdown(v, a *elastico.Profile) float64 {
	v.Throughput++
	return 1.5
}

// TestHelperBadPredictor runs the suite on a bad predictor; the parent test
// runs it in a child process and expects it to fail.
func TestHelperBadPredictor(t *testing.T) {
	kind := os.Getenv("IACTEST_BAD")
	if kind == "" {
		t.Skip("helper for TestSuiteCatchesBadPredictors")
	}
	preds := map[string]elastico.Predictor{
		"speedup": speedUp{}, "nan": nan{}, "flaky": &flaky{}, "allocating": allocating{}, "mutating": mutating{},
	}
	iactest.Run(t, preds[kind])
}

func TestSuiteCatchesBadPredictors(t *testing.T) {
	if testing.Short() {
		t.Skip("runs child processes")
	}
	tests := []struct {
		kind     string
		wantFail string // the subtest that must fail
	}{
		{"speedup", "AtLeastOne"},
		{"nan", "AtLeastOne"},
		{"flaky", "Deterministic"},
		{"allocating", "ZeroAllocs"},
		{"mutating", "NoMutation"},
	}
	for _, tc := range tests {
		t.Run(tc.kind, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBadPredictor$", "-test.v")
			cmd.Env = append(os.Environ(), "IACTEST_BAD="+tc.kind)
			out, err := cmd.CombinedOutput()
			if err == nil {
				t.Fatalf("the suite passed a %s predictor:\n%s", tc.kind, out)
			}
			if !strings.Contains(string(out), "--- FAIL: TestHelperBadPredictor/"+tc.wantFail) {
				t.Errorf("want subtest %s to fail; output:\n%s", tc.wantFail, out)
			}
		})
	}
}
