package slurmtest

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestCycle starts a cluster, runs a job on a typed shard and one on a
// typed whole GPU, restarts slurmctld with a held job queued, and checks
// what the jobs saw.
func TestCycle(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real Slurm daemons")
	}
	start := time.Now()
	c := Start(t, Options{GPUs: 2, ShardsPerGPU: 4})
	t.Logf("cluster up in %v under %s", time.Since(start).Round(time.Millisecond), c.Root)
	out := filepath.Join(c.Root, "out")
	script := `env > ` + out + `/$SLURM_JOB_ID.env`
	shard, err := c.Sbatch("--gres=shard:gpu1:3", "-o", "/dev/null", "--wrap", script)
	if err != nil {
		t.Fatal(err)
	}
	whole, err := c.Sbatch("--gres=gpu:gpu0:1", "-o", "/dev/null", "--wrap", script)
	if err != nil {
		t.Fatal(err)
	}
	held, err := c.Sbatch("--hold", "--gres=gpu:gpu0:1", "-o", "/dev/null", "--wrap", script)
	if err != nil {
		t.Fatal(err)
	}
	waitFile := func(name string) string {
		deadline := time.Now().Add(20 * time.Second)
		for time.Now().Before(deadline) {
			if b, err := os.ReadFile(filepath.Join(out, name)); err == nil && len(b) > 0 {
				return string(b)
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Fatalf("%s never written", name)
		return ""
	}
	for id, want := range map[int][]string{
		shard: {"CUDA_VISIBLE_DEVICES=1\n", "SLURM_SHARDS_ON_NODE=3\n"},
		whole: {"CUDA_VISIBLE_DEVICES=0\n"},
	} {
		env := waitFile(itoa(id) + ".env")
		for _, w := range want {
			if !strings.Contains(env, w) {
				t.Errorf("job %d env lacks %q", id, strings.TrimSpace(w))
			}
		}
	}
	c.RestartController()
	if _, err := c.Output("scontrol", "release", itoa(held)); err != nil {
		t.Fatal(err)
	}
	if env := waitFile(itoa(held) + ".env"); !strings.Contains(env, "CUDA_VISIBLE_DEVICES=0\n") {
		t.Errorf("held job after the restart: env lacks CUDA_VISIBLE_DEVICES=0")
	}
	t.Logf("cycle done in %v", time.Since(start).Round(time.Millisecond))
}

func itoa(i int) string { return strconv.Itoa(i) }
