package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReplaySmall(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	o := options{gpus: 16, seeds: 2, jobs: 30, load: 1.5, policies: "volcano,lucid,tiresias,pollux", out: dir, inference: 0.3, floor: 0.5}
	if err := run(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"volcano", "lucid", "tiresias", "pollux", "JCT gain vs volcano", "16 GPUs", "preempt/job", "flaps"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, out.String())
		}
	}
	for _, f := range []string{"table.txt", "summary.json", "summary.csv", "jobs.csv", "jct_cdf.png", "sm_util.png", "queueing_delay.png"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "summary.json"))
	var s struct {
		Policies []struct {
			Policy  string
			Metrics map[string]map[string]any
		}
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.Policies) != 4 {
		t.Fatalf("%d policies in the JSON", len(s.Policies))
	}
	for _, p := range s.Policies {
		m := p.Metrics["jct_avg"]
		if _, ok := m["mean"]; !ok {
			t.Errorf("%s: jct_avg has no mean: %v", p.Policy, m)
		}
		if _, ok := m["ratio_vs_baseline"]; !ok {
			t.Errorf("%s: jct_avg has no ratio against volcano", p.Policy)
		}
	}
}

func TestReplayJSONAndPollux(t *testing.T) {
	var out bytes.Buffer
	o := options{gpus: 8, seeds: 2, jobs: 20, load: 1, policies: "elastico,volcano", json: true, trace: "shipped:pollux/workload-1.csv", format: "pollux"}
	if err := run(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	var s map[string]any
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatalf("-json output does not parse: %v", err)
	}
	meta, _ := s["meta"].(map[string]any)
	if meta["ground_truth_gpu"] != "T4" {
		t.Errorf("a Pollux workload should run on Pollux's T4 truth: %v", meta["ground_truth_gpu"])
	}
	if meta["epochs"] != "every" || meta["strict_flaps"] != false {
		t.Errorf("meta: epochs %v, strict_flaps %v; want every, false", meta["epochs"], meta["strict_flaps"])
	}
}

func TestReplayEpochsChanges(t *testing.T) {
	var out bytes.Buffer
	o := options{gpus: 8, seeds: 1, jobs: 20, load: 1, policies: "volcano,tiresias", epochs: "changes", json: true}
	if err := run(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	var s struct{ Meta map[string]any }
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	if s.Meta["epochs"] != "changes" {
		t.Errorf("meta epochs %v, want changes", s.Meta["epochs"])
	}
}

// TestReplayMix: a cluster of V100s and K80s, each job with profiles for
// both; the JSON names the mix and what is modelled.
func TestReplayMix(t *testing.T) {
	var out bytes.Buffer
	o := options{mix: "v100:8,k80:8", seeds: 1, jobs: 20, load: 1, policies: "elastico,volcano,pollux", epochs: "changes", json: true}
	if err := run(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	var s struct{ Meta map[string]any }
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	h, _ := s.Meta["heterogeneity"].(map[string]any)
	if s.Meta["gpu_mix"] != "v100:8,k80:8" || h["reference"] != "V100" || len(h["modelled"].([]any)) == 0 {
		t.Errorf("meta: gpu_mix %v, heterogeneity %v", s.Meta["gpu_mix"], h)
	}
}

func TestReplayBadFlags(t *testing.T) {
	for _, o := range []options{
		{gpus: 8, seeds: 1, policies: "slurm"},
		{gpus: 0, seeds: 1},
		{gpus: 8, seeds: 1, format: "philly"},
		{gpus: 8, seeds: 1, trace: "/nonexistent.trace"},
		{gpus: 8, seeds: 1, gpu: "a100"},
		{gpus: 8, seeds: 1, epochs: "sometimes"},
		{mix: "v100:8,a100:8", seeds: 1},
		{mix: "v100:8,k80:8", seeds: 1, gpu: "k80"},
		{mix: "v100:8,k80:8", seeds: 1, policies: "elastico-oracle"},
	} {
		if err := run(context.Background(), o, &bytes.Buffer{}); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}
