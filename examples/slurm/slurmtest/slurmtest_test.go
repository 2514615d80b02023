package slurmtest

import (
	"os"
	"path/filepath"
	"slices"
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

// TestTwoNodes starts two slurmd, each in its network namespace, runs one
// job on both (a task per node, each on its node's gpu1), and restarts
// slurmctld: both nodes register again.
func TestTwoNodes(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real Slurm daemons")
	}
	start := time.Now()
	c := Start(t, Options{Nodes: 2, GPUs: 2, ShardsPerGPU: 2, Features: []string{"gpu_v100", "gpu_k80"}})
	t.Logf("two nodes up in %v: %v at %v", time.Since(start).Round(time.Millisecond), c.Nodes, c.Addrs)
	feats, err := c.Output("sinfo", "-h", "-N", "-o", "%N %f")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(feats); strings.Join(got, " ") != "node1 gpu_v100 node2 gpu_k80" {
		t.Errorf("sinfo features: %q", feats)
	}
	out := filepath.Join(c.Root, "out")
	id, err := c.Sbatch("-N", "2", "--gres=gpu:gpu1:1", "-o", out+"/%j.log", "--wrap",
		`srun -l sh -c 'echo $SLURMD_NODENAME $SLURM_NODEID $CUDA_VISIBLE_DEVICES'`)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(time.Minute)
	var lines []string
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(filepath.Join(out, itoa(id)+".log"))
		if lines = strings.Split(strings.TrimSpace(string(b)), "\n"); len(lines) == 2 {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	slices.Sort(lines)
	if want := []string{"0: node1 0 1", "1: node2 1 1"}; !slices.Equal(lines, want) {
		t.Errorf("the job's tasks printed %q, want %q", lines, want)
	}
	c.RestartController()
	t.Logf("done in %v", time.Since(start).Round(time.Millisecond))
}
