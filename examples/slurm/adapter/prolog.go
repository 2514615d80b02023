package adapter

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// TaskProlog returns the TaskProlog script that exports a job's launch
// parameters into each of its tasks. slurmd runs it as the job's user with
// the job's environment; every "export NAME=value" line it prints is set in
// the task. The adapter writes one file per run, envDir/<job>.<run>.env
// (run = SLURM_RESTART_COUNT, 0 on the first run), before it releases the
// run, so a step started by the old run of a job being reconfigured can
// never read the new run's parameters. A run with no file of its own (Slurm
// requeued the job by itself) gets the latest earlier run's file.
func TaskProlog(envDir string) string {
	return `#!/bin/sh
# elastico Slurm adapter: exports the launch parameters the adapter chose
# for this run of the job (written by the adapter before it released it).
# Installed by elastico-slurmd; set TaskProlog= to this file in slurm.conf.
d=` + shellQuote(envDir) + `
[ -n "$SLURM_JOB_ID" ] || exit 0
r=${SLURM_RESTART_COUNT:-0}
while [ "$r" -ge 0 ]; do
	f="$d/$SLURM_JOB_ID.$r.env"
	if [ -r "$f" ]; then
		cat "$f"
		exit 0
	fi
	r=$((r - 1))
done
exit 0
`
}

// InstallTaskProlog writes TaskProlog(envDir) to path (atomically, mode
// 0755) and creates envDir (mode 0755: jobs run as their users and must
// read their files).
func InstallTaskProlog(path, envDir string) error {
	if !filepath.IsAbs(path) || !filepath.IsAbs(envDir) {
		return fmt.Errorf("adapter: TaskProlog %q and env dir %q must be absolute paths", path, envDir)
	}
	if err := os.MkdirAll(envDir, 0o755); err != nil {
		return fmt.Errorf("adapter: %w", err)
	}
	if err := os.Chmod(envDir, 0o755); err != nil {
		return fmt.Errorf("adapter: %w", err)
	}
	return writeAtomic(path, []byte(TaskProlog(envDir)), 0o755)
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func envFile(envDir string, job, run int) string {
	return filepath.Join(envDir, strconv.Itoa(job)+"."+strconv.Itoa(run)+".env")
}

// writeEnv writes one run's environment as TaskProlog lines.
func writeEnv(envDir string, job, run int, env []string) error {
	var b strings.Builder
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsAny(kv, " \t\n\r'\"\\$`") {
			return fmt.Errorf("adapter: job %d: environment entry %q cannot be exported by a TaskProlog", job, kv)
		}
		fmt.Fprintf(&b, "export %s=%s\n", k, v)
	}
	return writeAtomic(envFile(envDir, job, run), []byte(b.String()), 0o644)
}

// removeEnv deletes every env file of a job.
func removeEnv(envDir string, job int) {
	files, _ := filepath.Glob(filepath.Join(envDir, strconv.Itoa(job)+".*.env"))
	for _, f := range files {
		os.Remove(f)
	}
}
