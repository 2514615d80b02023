package adapter

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// TaskProlog returns the TaskProlog script that exports a job's launch
// parameters into each of its tasks. slurmd runs it as the job's user with
// the job's environment; every "export NAME=value" line it prints is set in
// the task. The adapter writes one file per run, envDir/<job>.<run>.env
// (run = SLURM_RESTART_COUNT, 0 on the first run), or for a job on several
// nodes one per node, envDir/<job>.<run>.<node>.env, before it releases the
// run, so a step started by the old run of a job being reconfigured can
// never read the new run's parameters. A run with no file of its own (Slurm
// requeued the job by itself) gets the latest earlier run's file. The
// script adds each task's ranks (ELASTICO_LOCAL_RANK, ELASTICO_RANK), which
// only Slurm knows: SLURM_LOCALID, and the node's first rank.
func TaskProlog(envDir string) string {
	return `#!/bin/sh
# elastico Slurm adapter: exports the launch parameters the adapter chose
# for this run of the job (written by the adapter before it released it).
# Installed by elastico-slurmd; set TaskProlog= to this file in slurm.conf.
d=` + shellQuote(envDir) + `
[ -n "$SLURM_JOB_ID" ] || exit 0
emit() {
	cat "$1"
	base=
	while IFS= read -r line; do
		case $line in
		"export ELASTICO_RANK_BASE="*) base=${line#export ELASTICO_RANK_BASE=} ;;
		esac
	done <"$1"
	case $SLURM_LOCALID in
	'' | *[!0-9]*) ;;
	*)
		echo "export ELASTICO_LOCAL_RANK=$SLURM_LOCALID"
		[ -n "$base" ] && echo "export ELASTICO_RANK=$((base + SLURM_LOCALID))"
		;;
	esac
	exit 0
}
r=${SLURM_RESTART_COUNT:-0}
while [ "$r" -ge 0 ]; do
	if [ -n "$SLURMD_NODENAME" ] && [ -r "$d/$SLURM_JOB_ID.$r.$SLURMD_NODENAME.env" ]; then
		emit "$d/$SLURM_JOB_ID.$r.$SLURMD_NODENAME.env"
	fi
	if [ -r "$d/$SLURM_JOB_ID.$r.env" ]; then
		emit "$d/$SLURM_JOB_ID.$r.env"
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

func nodeEnvFile(envDir string, job, run int, node string) string {
	return filepath.Join(envDir, strconv.Itoa(job)+"."+strconv.Itoa(run)+"."+node+".env")
}

// writeRunEnv writes a run's environment: one file for a job on one node,
// one per node (what all share, and the node's own) for a job on several.
func writeRunEnv(envDir string, r *Record, run int) error {
	if len(r.NodeEnv) == 0 {
		return writeEnvFile(envFile(envDir, r.SlurmID, run), r.SlurmID, r.Env)
	}
	nodes := r.nodes()
	if len(nodes) != len(r.NodeEnv) {
		return fmt.Errorf("adapter: job %d: the journal has %d nodes and %d node environments", r.SlurmID, len(nodes), len(r.NodeEnv))
	}
	for k, node := range nodes {
		if node == "" || strings.ContainsAny(node, "/ \t\n'\"\\$`") || node == "." || node == ".." {
			return fmt.Errorf("adapter: job %d: node name %q cannot name an environment file", r.SlurmID, node)
		}
		env := append(slices.Clone(r.Env), r.NodeEnv[k]...)
		slices.Sort(env)
		if err := writeEnvFile(nodeEnvFile(envDir, r.SlurmID, run, node), r.SlurmID, env); err != nil {
			return err
		}
	}
	return nil
}

// writeEnv writes one run's environment as TaskProlog lines.
func writeEnv(envDir string, job, run int, env []string) error {
	return writeEnvFile(envFile(envDir, job, run), job, env)
}

func writeEnvFile(path string, job int, env []string) error {
	var b strings.Builder
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.ContainsAny(kv, " \t\n\r'\"\\$`") {
			return fmt.Errorf("adapter: job %d: environment entry %q cannot be exported by a TaskProlog", job, kv)
		}
		fmt.Fprintf(&b, "export %s=%s\n", k, v)
	}
	return writeAtomic(path, []byte(b.String()), 0o644)
}

// removeEnv deletes every env file of a job.
func removeEnv(envDir string, job int) {
	files, _ := filepath.Glob(filepath.Join(envDir, strconv.Itoa(job)+".*.env"))
	for _, f := range files {
		os.Remove(f)
	}
}
