package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
	if s.Meta["gpu_mix"] != "V100:8,K80:8" || h["reference"] != "V100" || len(h["modelled"].([]any)) == 0 {
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
		{mix: "V100:8,A100:8", seeds: 1},
		{mix: "V100:8,K80:8", seeds: 1, gpu: "K80"},
		{mix: "V100:8,K80:8", seeds: 1, policies: "elastico-oracle"},
	} {
		if err := run(context.Background(), o, &bytes.Buffer{}); err == nil {
			t.Errorf("%+v: no error", o)
		}
	}
}

// TestReplayOpenB replays a small Alibaba-style pod list, written here (the
// trace ships with no license), on a node list of three of its models.
func TestReplayOpenB(t *testing.T) {
	dir := t.TempDir()
	pods := "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
	for i := range 24 {
		spec, milli := "", 1000
		switch i % 4 {
		case 1:
			spec = "V100M32"
		case 2:
			spec = "T4|P100"
		case 3:
			milli = 300
		}
		pods += fmt.Sprintf("pod%02d,1,1,1,%d,%s,BE,Running,%d,%d,%d\n", i, milli, spec, 60*i, 60*i+1800, 60*i)
	}
	nodes := "sn,cpu_milli,memory_mib,gpu,model\n" +
		"g2-0,96000,393216,8,G2\ng2-1,96000,393216,8,G2\n" +
		"v32-0,48000,376832,4,V100M32\nt4-0,104000,524288,2,T4\ncpu-0,32000,262144,0,\n"
	podsPath, nodesPath := filepath.Join(dir, "pods.csv"), filepath.Join(dir, "nodes.csv")
	if err := os.WriteFile(podsPath, []byte(pods), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(nodesPath, []byte(nodes), 0o644); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	o := options{trace: podsPath, format: "openb", nodes: nodesPath, gpus: 64, seeds: 1, jobs: 24, load: 1, policies: "elastico,volcano", json: true}
	if err := run(context.Background(), o, &out); err != nil {
		t.Fatal(err)
	}
	var s struct {
		GPUs int
		Jobs float64 `json:"jobs_per_seed"`
		Meta map[string]any
	}
	if err := json.Unmarshal(out.Bytes(), &s); err != nil {
		t.Fatal(err)
	}
	ob, _ := s.Meta["openb"].(map[string]any)
	gt, _ := ob["ground_truth"].(map[string]any)
	if s.GPUs != 22 || s.Meta["gpu_mix"] != "G2:16,V100M32:4,T4:2" || ob["cpu_only_nodes_skipped"] != 1.0 || len(gt) != 3 {
		t.Errorf("GPUs %d, mix %v, openb meta %v", s.GPUs, s.Meta["gpu_mix"], ob)
	}
	if s.Jobs != 24 || ob["fractional_jobs_per_seed"].([]any)[0] != 6.0 {
		t.Errorf("%g jobs, fractional %v; want 24, 6", s.Jobs, ob["fractional_jobs_per_seed"])
	}

	for _, bad := range []options{
		{trace: podsPath, format: "openb", nodes: nodesPath, gpus: 64, seeds: 1, gpu: "V100"},
		{trace: podsPath, format: "openb", nodes: nodesPath, mix: "V100:8,K80:8", seeds: 1},
		{trace: podsPath, format: "openb", nodes: filepath.Join(dir, "none.csv"), gpus: 64, seeds: 1},
	} {
		if err := run(context.Background(), bad, &bytes.Buffer{}); err == nil {
			t.Errorf("%+v: no error", bad)
		}
	}
}
