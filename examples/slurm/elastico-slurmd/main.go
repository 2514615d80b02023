// Command elastico-slurmd runs elastico inside a Slurm cluster: every tick
// it reads the queue and the nodes, asks the default elastico scheduler
// (pds) for a plan, and applies it to the jobs that opted in with an
// "elastico:" comment. See examples/slurm/README.md for the deployment.
//
//	elastico-slurmd -state /var/lib/elastico -gpu-memory 80 -gpu-model H100
//	elastico-slurmd -state /var/lib/elastico -install-prolog   # write the TaskProlog, then exit
//
// It runs as root or as SlurmUser (it holds, releases, requeues and updates
// other users' jobs), on any host with the Slurm client commands and the
// cluster's slurm.conf. SIGINT or SIGTERM stops it after the current tick;
// its journal lets the next start carry on where it stopped.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/elastico/elastico/examples/slurm/adapter"
	"github.com/elastico/elastico/pds"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "elastico-slurmd:", err)
		os.Exit(1)
	}
}

// run is the whole program, callable from a test.
func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("elastico-slurmd", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		state    = fs.String("state", "/var/lib/elastico", "state directory: journal, lock, per-run environment files")
		envDir   = fs.String("env", "", "where the TaskProlog reads each run's environment (default STATE/env; must be readable by jobs on every compute node)")
		progress = fs.String("progress", "", "where running jobs write their progress files (default STATE/progress; made world-writable and sticky; must be shared with every compute node)")
		conf     = fs.String("slurm-conf", os.Getenv("SLURM_CONF"), "slurm.conf (default: $SLURM_CONF or Slurm's own default)")
		bin      = fs.String("slurm-bin", "", "directory of squeue, sinfo and scontrol (default: $PATH)")
		families = fs.String("families", "", "directory that \"elastico:@file\" comments may name (default: none, such comments are refused)")
		memory   = fs.Float64("gpu-memory", 0, "memory of each GPU in GiB (required: Slurm does not know it)")
		model    = fs.String("gpu-model", "", "GPU model of a node whose features name none (\"\": any profile runs there)")
		models   = fs.String("gpu-models", "", "node feature=GPU model pairs, comma-separated (volta=V100,ampere=A100); default: gpu_v100 names V100")
		modelMem = fs.String("gpu-model-memory", "", "GPU model=GiB pairs, comma-separated (V100=16,A100=80), where -gpu-memory is not the model's")
		every    = fs.Duration("tick", 2*time.Second, "time between ticks")
		delay    = fs.Duration("requeue-delay", 2*time.Second, "how long a requeued job stays held before its new run is released")
		once     = fs.Bool("once", false, "run one tick and exit")
		install  = fs.Bool("install-prolog", false, "write STATE/taskprolog.sh (point slurm.conf's TaskProlog at it) and exit")
		verbose  = fs.Bool("v", false, "log every tick's decisions at debug level")
	)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	abs, err := filepath.Abs(*state)
	if err != nil {
		return err
	}
	*state = abs
	if *envDir == "" {
		*envDir = filepath.Join(*state, "env")
	}
	if *progress != "" {
		if *progress, err = filepath.Abs(*progress); err != nil {
			return err
		}
	}
	featureModels, err := pairs("-gpu-models", *models)
	if err != nil {
		return err
	}
	memories, err := pairs("-gpu-model-memory", *modelMem)
	if err != nil {
		return err
	}
	memByModel := map[string]float64{}
	for m, v := range memories {
		if memByModel[m], err = strconv.ParseFloat(v, 64); err != nil {
			return fmt.Errorf("-gpu-model-memory: %s=%q: want GiB", m, v)
		}
	}
	if *install {
		prolog := filepath.Join(*state, "taskprolog.sh")
		if err := adapter.InstallTaskProlog(prolog, *envDir); err != nil {
			return err
		}
		fmt.Fprintf(stderr, "wrote %s; add to slurm.conf:\nTaskProlog=%s\n", prolog, prolog)
		return nil
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	// Pinned: Slurm 22.05 never takes a GPU back from a job, so the plan
	// never migrates, preempts or shrinks a running one.
	sched, err := pds.New(pds.Config{Pinned: true})
	if err != nil {
		return err
	}
	a, err := adapter.New(adapter.Config{
		Slurm:          &adapter.CLI{Conf: *conf, Bin: *bin},
		Scheduler:      sched,
		StateDir:       *state,
		EnvDir:         *envDir,
		ProgressDir:    *progress,
		GPUMemory:      *memory,
		GPUModel:       *model,
		GPUModels:      featureModels,
		GPUModelMemory: memByModel,
		FamilyDir:      *families,
		RequeueDelay:   *delay,
		Logger:         log,
	})
	if err != nil {
		return err
	}
	defer a.Close()
	if *once {
		rep, err := a.Tick(ctx)
		if err != nil {
			return err
		}
		report(log, rep)
		return nil
	}
	return a.Run(ctx, *every)
}

// report logs what a tick decided, for -once.
func report(log *slog.Logger, rep *adapter.Report) {
	if rep.Plan == nil {
		log.Info("no opted-in job to plan for", "unparsed", rep.Unparsed)
		return
	}
	for _, ap := range rep.Actions {
		log.Info("action", "action", ap.Action.String(), "outcome", ap.Outcome)
	}
	for _, d := range rep.Plan.Decisions {
		if d.Assignment == nil {
			log.Info("waits", "job", d.JobID, "status", d.Status.String())
		}
	}
}

// pairs reads "k=v,k=v"; empty gives nil.
func pairs(flag, s string) (map[string]string, error) {
	if s == "" {
		return nil, nil
	}
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" || v == "" {
			return nil, fmt.Errorf("%s: %q: want key=value pairs separated by ','", flag, kv)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%s: %q is given twice", flag, k)
		}
		out[k] = v
	}
	return out, nil
}
