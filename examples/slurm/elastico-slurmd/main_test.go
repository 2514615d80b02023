package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/elastico/elastico/examples/slurm/slurmtest"
)

func TestFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no GPU memory", []string{"-state", t.TempDir(), "-once"}, "GPUMemory is 0"},
		{"stray argument", []string{"-state", t.TempDir(), "extra"}, `unexpected arguments ["extra"]`},
		{"bad flag", []string{"-gpu-memory", "lots"}, "invalid value"},
		{"bad model pairs", []string{"-state", t.TempDir(), "-gpu-memory", "80", "-gpu-models", "gpu_v100"}, `-gpu-models: "gpu_v100": want key=value pairs`},
		{"bad model memory", []string{"-state", t.TempDir(), "-gpu-memory", "80", "-gpu-model-memory", "V100=16GB"}, `-gpu-model-memory: V100="16GB": want GiB`},
		{"model memory in MiB", []string{"-state", t.TempDir(), "-gpu-memory", "80", "-gpu-model-memory", "V100=16384"}, `Config.GPUModelMemory["V100"] is 16384`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			err := run(context.Background(), tt.args, &stderr)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("run(%q) = %v, want %q", tt.args, err, tt.wantErr)
			}
		})
	}
}

// TestDaemon installs the TaskProlog with the daemon, then runs it (one
// tick at a time, as -once does) against a real Slurm until an opted-in job
// has run under the configuration it chose.
func TestDaemon(t *testing.T) {
	if testing.Short() {
		t.Skip("starts real Slurm daemons")
	}
	state, err := os.MkdirTemp("", "elastico-slurmd-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(state) })
	os.Chmod(state, 0o755)
	var stderr bytes.Buffer
	if err := run(context.Background(), []string{"-state", state, "-install-prolog"}, &stderr); err != nil {
		t.Fatal(err)
	}
	prolog := filepath.Join(state, "taskprolog.sh")
	if !strings.Contains(stderr.String(), "TaskProlog="+prolog) {
		t.Errorf("install output %q does not give the slurm.conf line", stderr.String())
	}
	c := slurmtest.Start(t, slurmtest.Options{GPUs: 2, ShardsPerGPU: 4, TaskProlog: prolog})
	out := filepath.Join(c.Root, "out")
	id, err := c.Sbatch("--hold", "--comment=elastico:infer tiny | kv=.2 seqs=8 sm=.25 mem=4 tput=100",
		"-o", "/dev/null", "--wrap", "env > "+out+"/$SLURM_JOB_ID.env")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"-state", state, "-slurm-conf", c.Conf, "-gpu-memory", "80", "-gpu-model", "placeholder", "-once"}
	envFile := filepath.Join(out, itoa(id)+".env")
	deadline := time.Now().Add(30 * time.Second)
	for {
		stderr.Reset()
		if err := run(context.Background(), args, &stderr); err != nil {
			t.Fatalf("tick: %v\n%s", err, stderr.String())
		}
		if b, err := os.ReadFile(envFile); err == nil && bytes.Contains(b, []byte("ELASTICO_CONFIG=kv0.2-s8-g1\n")) {
			if !bytes.Contains(b, []byte("SLURM_SHARDS_ON_NODE=1\n")) || !bytes.Contains(b, []byte("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25\n")) {
				t.Errorf("job env lacks its shard or MPS share:\n%s", b)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d did not run under elastico's configuration; last tick:\n%s", id, stderr.String())
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func itoa(i int) string { return strconv.Itoa(i) }
