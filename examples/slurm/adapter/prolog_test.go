package adapter

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestTaskProlog(t *testing.T) {
	dir := t.TempDir()
	prolog := filepath.Join(dir, "taskprolog.sh")
	envDir := filepath.Join(dir, "env dir's") // quoting survives spaces and quotes
	if err := InstallTaskProlog(prolog, envDir); err != nil {
		t.Fatal(err)
	}
	if err := writeEnv(envDir, 5, 0, []string{"ELASTICO_CONFIG=b64-g1", "ELASTICO_GENERATION=1"}); err != nil {
		t.Fatal(err)
	}
	if err := writeEnv(envDir, 5, 2, []string{"ELASTICO_CONFIG=b128-g1", "ELASTICO_GENERATION=2"}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		env  []string
		want string
	}{
		{"first run", []string{"SLURM_JOB_ID=5"}, "export ELASTICO_CONFIG=b64-g1\nexport ELASTICO_GENERATION=1\n"},
		{"its own run's file", []string{"SLURM_JOB_ID=5", "SLURM_RESTART_COUNT=2"}, "export ELASTICO_CONFIG=b128-g1\nexport ELASTICO_GENERATION=2\n"},
		{"requeued by Slurm: the latest earlier file", []string{"SLURM_JOB_ID=5", "SLURM_RESTART_COUNT=1"}, "export ELASTICO_CONFIG=b64-g1\nexport ELASTICO_GENERATION=1\n"},
		{"a job the adapter never launched", []string{"SLURM_JOB_ID=6"}, ""},
		{"no job", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := exec.Command(prolog)
			cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, tt.env...)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			if string(out) != tt.want {
				t.Errorf("TaskProlog printed %q, want %q", out, tt.want)
			}
		})
	}
	if err := writeEnv(envDir, 7, 0, []string{"A=$(rm -rf /)"}); err == nil || !strings.Contains(err.Error(), "cannot be exported") {
		t.Errorf("writeEnv with shell syntax: %v", err)
	}
	if err := InstallTaskProlog("relative.sh", envDir); err == nil {
		t.Errorf("InstallTaskProlog with a relative path: no error")
	}
}
