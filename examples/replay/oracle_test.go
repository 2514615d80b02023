package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// elastico-oracle is a bound: labelled as one, never a default.
func TestReplayOracleIsALabelledBound(t *testing.T) {
	for _, list := range []string{"", "elastico,volcano"} {
		pols, err := selectPolicies(list, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pols {
			if p.Name == "elastico-oracle" {
				t.Errorf("-policies %q selects the oracle", list)
			}
		}
	}
	var out bytes.Buffer
	o := options{gpus: 8, seeds: 1, jobs: 16, load: 1, policies: "elastico-oracle,volcano", epoch: time.Minute, epochs: "changes"}
	if err := run(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"elastico-oracle (bound: a perfect predictor)", "elastico-oracle is a bound, not a result"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	o.json = true
	if err := run(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	var s struct{ Bounds map[string]string }
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if s.Bounds["elastico-oracle"] != oracleBound || len(s.Bounds) != 1 {
		t.Errorf("JSON bounds %v", s.Bounds)
	}
}

func TestReplaySaturated(t *testing.T) {
	var out bytes.Buffer
	o := options{gpus: 8, seeds: 2, saturated: 16, load: 1, policies: "volcano,lucid", epoch: time.Minute, epochs: "changes"}
	if err := run(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"makespan (h)", "work/GPU-h", "makespan gain vs volcano", "16 jobs (0 inference) per seed, all submitted at t = 0"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	out.Reset()
	o.json = true
	if err := run(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	var s struct {
		Saturated bool
		Meta      map[string]any
		Policies  []struct {
			Policy  string
			Metrics map[string]map[string]any
		}
	}
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if !s.Saturated || s.Meta["load"] != 0.0 || s.Meta["jobs_per_window"] != 16.0 {
		t.Errorf("saturated %v, meta load %v, jobs %v", s.Saturated, s.Meta["load"], s.Meta["jobs_per_window"])
	}
	for _, p := range s.Policies {
		w := p.Metrics["work_per_gpu_h"]
		// Above 1 only by sharing, which volcano never does.
		if x, ok := w["mean"].(float64); !ok || x <= 0 || p.Policy == "volcano" && x > 1 {
			t.Errorf("%s: work per GPU-hour %v", p.Policy, w["mean"])
		}
		if _, ok := p.Metrics["makespan"]["gain_vs_baseline"]; !ok {
			t.Errorf("%s: no makespan gain against volcano", p.Policy)
		}
	}
	for _, bad := range []options{
		{gpus: 8, seeds: 1, saturated: -1},
		{gpus: 8, seeds: 1, saturated: 16, jobs: 20},
	} {
		if err := run(context.Background(), bad, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "-saturated") {
			t.Errorf("%+v: %v, want an error naming -saturated", bad, err)
		}
	}
}
