// Command replay replays a GPU-cluster trace in elastico's simulator under
// elastico and the baselines it is compared with, and prints the comparison
// (mean ± 95 % confidence interval over seeds).
//
//	go run ./examples/replay                        # the shipped Gavel trace, 64 GPUs, load 1.0, 5 seeds
//	go run ./examples/replay -gpus 512 -load 1.5 -out results
//	go run ./examples/replay -trace philly.csv -format philly
//	go run ./examples/replay -trace openb_pod_list_default.csv -format openb   # the user's copy of Alibaba's v2023 trace
//	go run ./examples/replay -gpus V100:36,P100:36,K80:36   # Gavel's mixed cluster
//	go run ./examples/replay -format openb -trace PODS.csv -nodes NODES.csv -gpus 256   # Alibaba's pods on ~256 of its GPUs
//
// -nodes reads the Alibaba v2023 node list (openb_node_list_*.csv) and
// builds the cluster from it: every k-th node of each GPU model, k chosen
// to keep about -gpus GPUs, each model simulated by the ground truth
// sim.OpenBGroundTruth names (README: "The Alibaba v2023 trace"). Pods
// run only on the models their gpu_spec names, and a pod asking for a
// share of a GPU (gpu_milli < 1000) holds that share.
//
// -gpus is a count of -gpu's model, or a mix of Gavel's GPU models,
// model:count joined by commas (sim.GavelMix; the first model is the
// reference, whose requested configurations set the jobs' dedicated
// times). In a mix each job's family holds its configurations on every
// model, from that model's ground truth; a job runs at the throughput of
// the model it is placed on, and sharing a GPU at the co-location speeds
// of that model only. The JSON's "heterogeneity" says so; elastico-oracle
// and -capacity need one model.
//
// Policies: elastico, elastico-paper-tau (pds under the paper's Eq. 11,
// without learning from co-runs), its ablations elastico-no-learn (the
// predictor's answers uncorrected), elastico-no-rst (fixed configuration),
// elastico-no-esp (greedy first fit), elastico-no-iac (memory-only
// co-location) and elastico-no-pds (no reservation, no coordinated
// reconfiguration), and the baselines volcano, lucid, tiresias and pollux.
// elastico-oracle, pds with the ground truth's own slowdowns for predictor,
// is a bound on what a perfect predictor would give, labelled as one; it
// is never a default.
//
// With -saturated N, each seed's window of N jobs is submitted at t = 0
// (a fixed batch) and the table gives the makespan and the work per
// GPU-hour instead of throughput over the arrival window.
//
// Epochs fall every ΔT (-epoch, default 1 min) while a job runs or waits,
// as a host's loop calls Epoch; -epochs changes calls the policy only after
// an arrival or a completion, the simulator's old event-driven mode. A
// policy's flaps (a plan undone with nothing changed, sim.Flap) are counted
// in the flaps column; with -strict-flaps the first one fails the run, as
// the simulator's Stability invariant does by default. Tiresias's and
// Pollux's flaps are always only counted (they swap jobs back by design).
//
// With -out DIR it writes table.txt, summary.json, summary.csv, jobs.csv
// (every job of every run) and three PNG plots. With -json it prints the
// JSON summary instead of the table. Progress goes to the terminal only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
	"github.com/elastico/elastico/pds"
	"github.com/elastico/elastico/sim"
	"github.com/elastico/elastico/sim/baseline"
	"github.com/elastico/elastico/sim/plots"
)

// defaultTrace is the shipped trace replayed when -trace is not given.
const defaultTrace = "gavel/0e4a51.trace"

// defaultEpoch is the replay's ΔT: with an epoch every ΔT, a host's 5 s
// made the default replay take 3 to 8 minutes on 2 cores, 1 min takes 15 to
// 50 s (examples/replay/README.md).
const defaultEpoch = time.Minute

// policyEntry is a policy the replay knows.
type policyEntry struct {
	name       string
	help       string
	new        func(pred elastico.Predictor) (elastico.Scheduler, error) // pred: elastico's (predictorFor)
	heartbeat  time.Duration
	allowFlaps bool
}

// policies are the replay's policies, in report order.
// Tiresias's 2D-LAS swaps jobs back by design (a job preempted for one of
// less attained service resumes once that one has attained as much), and so
// can Pollux (its restart penalty eases as jobs age, and its fair share
// moves with the number of jobs): their flaps are counted, not failed.
var policies = []policyEntry{
	{"elastico", "pds.New with every default", pdsWith(pds.Ablation{}), 0, false},
	{"elastico-paper-tau", "pds with the paper's rule: each job of a pair within τ(t) of Eq. 11", func(pred elastico.Predictor) (elastico.Scheduler, error) {
		return pds.New(pds.Config{Predictor: pred, Sharing: iac.PaperSharing(iac.DefaultTolerance), Ablation: pds.Ablation{NoCoRunLearning: true}})
	}, 0, false},
	{"elastico-no-learn", "ablation: the predictor's answers as they are, not corrected from observed co-runs", pdsWith(pds.Ablation{NoCoRunLearning: true}), 0, false},
	{"elastico-no-rst", "ablation −RST: fixed configuration", pdsWith(pds.Ablation{FixedConfiguration: true}), 0, false},
	{"elastico-no-esp", "ablation −ESP: greedy first fit instead of prices", pdsWith(pds.Ablation{GreedyFirstFit: true}), 0, false},
	{"elastico-no-iac", "ablation −IAC: memory-only co-location", pdsWith(pds.Ablation{MemoryOnlyColocation: true}), 0, false},
	{"elastico-no-pds", "ablation −PDS: no reservation, no coordinated reconfiguration", pdsWith(pds.Ablation{NoReservation: true, NoCoordinatedReconfiguration: true}), 0, false},
	{"elastico-oracle", "bound, not a result: pds with a perfect predictor, the ground truth's slowdowns (oracle.go)", func(elastico.Predictor) (elastico.Scheduler, error) { return oraclePDS() }, 0, false},
	{baseline.VolcanoName, "Volcano-like gang FIFO with backfill, whole GPUs", peer(func() elastico.Scheduler { return baseline.Volcano{} }), 0, false},
	{baseline.LucidName, "Lucid: shortest estimated GPU-time first (run times learned from finished jobs), affine pairs by sharing score", peer(func() elastico.Scheduler { return &baseline.Lucid{} }), 0, false},
	{baseline.TiresiasName, "Tiresias-like 2D-LAS", peer(func() elastico.Scheduler { return baseline.Tiresias{} }), baseline.TiresiasHeartbeat, true},
	{baseline.PolluxName, "Pollux-like goodput-optimizing GPU counts and batch sizes, p = −1, restart penalty, whole GPUs", peer(func() elastico.Scheduler { return baseline.Pollux{} }), baseline.PolluxInterval, true},
	{baseline.GavelName, "Gavel-like heterogeneity-aware max-min fairness (LP), 6-minute rounds, whole GPUs, no space sharing", peer(func() elastico.Scheduler { return &baseline.Gavel{} }), baseline.GavelRound, true},
	{baseline.GavelSSName, "gavel with space sharing (Gavel's +SS): the LP also gives time to pairs of jobs on the same GPUs, their speeds from elastico's predictor", func(pred elastico.Predictor) (elastico.Scheduler, error) {
		return &baseline.Gavel{SpaceSharing: true, Predictor: pred}, nil
	}, baseline.GavelRound, true},
	{baseline.VolcanoAgnosticName, "volcano on free GPUs of any model (heterogeneity-agnostic)", peer(func() elastico.Scheduler { return baseline.Volcano{AnyModel: true} }), 0, false},
	{baseline.LucidAgnosticName, "lucid on GPUs of any model (heterogeneity-agnostic)", peer(func() elastico.Scheduler { return &baseline.Lucid{AnyModel: true} }), 0, false},
	{baseline.TiresiasAgnosticName, "tiresias on free GPUs of any model (heterogeneity-agnostic)", peer(func() elastico.Scheduler { return baseline.Tiresias{AnyModel: true} }), baseline.TiresiasHeartbeat, true},
}

// optIn reports whether a peer runs only when named: gavel, gavel-ss and the
// heterogeneity-agnostic variants matter on mixed clusters (-gpus), and the
// default set stays the one the README reports.
func optIn(name string) bool {
	return name == baseline.GavelName || name == baseline.GavelSSName || strings.HasSuffix(name, "-agnostic")
}

func pdsWith(a pds.Ablation) func(elastico.Predictor) (elastico.Scheduler, error) {
	return func(pred elastico.Predictor) (elastico.Scheduler, error) {
		return pds.New(pds.Config{Predictor: pred, Ablation: a})
	}
}

// peer is a baseline's constructor (a fresh one per run: some keep state
// between epochs); baselines predict nothing.
func peer(s func() elastico.Scheduler) func(elastico.Predictor) (elastico.Scheduler, error) {
	return func(elastico.Predictor) (elastico.Scheduler, error) { return s(), nil }
}

type options struct {
	trace, format, gpu, policies, out string
	mix                               string // -gpus type:count,...; "": gpus of gpu
	nodes                             string // -nodes: an openb node list; -gpus its size to keep
	gpus, seeds, jobs                 int
	load, inference, floor, noise     float64
	epoch, heartbeat, restart         time.Duration
	epochs                            string // every|changes; "": every
	json, capacity, strictFlaps       bool
	parallel                          int
	saturated                         int // jobs submitted at t = 0; 0: arrivals at -load
}

func main() {
	var o options
	flag.StringVar(&o.trace, "trace", "", "trace file, or shipped:<path> for an embedded one (default shipped:"+defaultTrace+"; also shipped:pollux/workload-<1..8>.csv and shipped:"+sim.ShippedPolluxAll+", the eight joined)")
	flag.StringVar(&o.format, "format", "", "trace format: "+strings.Join(sim.Formats, "|")+" (default gavel, or the shipped trace's)")
	flag.StringVar(&o.gpu, "gpu", "", "ground truth: V100|P100|K80 (Gavel's measurements) or T4 (Pollux's), any case; default T4 for -format pollux, else V100")
	o.gpus = 64
	flag.Func("gpus", "GPUs in the cluster (default 64), or a mix of Gavel's GPU models, model:count joined by commas: V100:36,P100:36,K80:36, any case (the first is the reference)", func(s string) error {
		if strings.Contains(s, ":") {
			o.mix = s
			return nil
		}
		n, err := strconv.Atoi(s)
		o.gpus = n
		return err
	})
	flag.StringVar(&o.nodes, "nodes", "", "Alibaba v2023 node list (openb_node_list_*.csv): the cluster is every k-th node of each GPU model, about -gpus GPUs")
	flag.Float64Var(&o.load, "load", 1.0, "offered load: 1.0 = the requested GPU-time arrives at the cluster's capacity (0: the trace's own arrival times)")
	flag.IntVar(&o.seeds, "seeds", 5, "seeds (each replays another window of the trace)")
	flag.IntVar(&o.jobs, "jobs", 0, "jobs per window (default 6 per GPU, at most 3,072)")
	flag.StringVar(&o.policies, "policies", "", "comma-separated policies (default elastico,volcano,lucid,tiresias,pollux; \"all\" adds the ablations): "+policyNames())
	flag.BoolVar(&o.json, "json", false, "print the JSON summary instead of the table")
	flag.StringVar(&o.out, "out", "", "write table, JSON, CSV, per-job CSV and plots into this folder")
	flag.Float64Var(&o.inference, "inference", 0, "fraction of single-GPU training jobs turned into offline LLM inference jobs (a modelled family)")
	flag.Float64Var(&o.floor, "floor", 0.5, "an inference job's floor, as a fraction of its requested throughput")
	flag.Float64Var(&o.noise, "noise", 0, "relative error of the profiled throughputs the policies see")
	flag.DurationVar(&o.epoch, "epoch", defaultEpoch, "ΔT, the epoch interval in simulated time")
	flag.StringVar(&o.epochs, "epochs", "every", "every: an epoch every ΔT while a job runs or waits, as a host's loop; changes: only the first ΔT after an arrival or a completion (and heartbeats)")
	flag.DurationVar(&o.restart, "restart", sim.DefaultCosts.Resume, "what a checkpoint and restart cost a job (a reconfiguration, a migration, a resume after preemption); the policies are told it (Job.RestartTime)")
	flag.DurationVar(&o.heartbeat, "heartbeat", 0, "with -epochs changes, an epoch at least this often while jobs wait, for every policy (default: tiresias every "+baseline.TiresiasHeartbeat.String()+", pollux every "+baseline.PolluxInterval.String()+", the others none)")
	flag.BoolVar(&o.strictFlaps, "strict-flaps", false, "fail a policy's run at its first flap (a plan undone with nothing changed) instead of counting it; tiresias's and pollux's are always only counted")
	flag.BoolVar(&o.capacity, "capacity", false, "also find the GPUs each policy needs to match volcano's average JCT (slow)")
	flag.IntVar(&o.parallel, "parallel", 0, "simulations at once (default GOMAXPROCS)")
	flag.IntVar(&o.saturated, "saturated", 0, "submit N jobs of each seed's window at t = 0 instead of arrivals at -load: the table gives makespan and work per GPU-hour")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "replay:", err)
		os.Exit(1)
	}
}

func policyNames() string {
	var n []string
	for _, p := range policies {
		n = append(n, p.name)
	}
	return strings.Join(n, ",")
}

func selectPolicies(list string, pred elastico.Predictor) ([]sim.Policy, error) {
	var out []sim.Policy
	policy := func(p *policyEntry) sim.Policy {
		build := p.new
		return sim.Policy{Name: p.name, New: func() (elastico.Scheduler, error) { return build(pred) }, Heartbeat: p.heartbeat, AllowFlaps: p.allowFlaps}
	}
	if list == "" || list == "all" {
		for _, p := range policies {
			if list == "all" {
				out = append(out, policy(&p))
				continue
			}
			if !strings.HasPrefix(p.name, "elastico-") && !optIn(p.name) {
				out = append(out, policy(&p))
			}
		}
		return out, nil
	}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		found := false
		for _, p := range policies {
			if p.name == name {
				out = append(out, policy(&p))
				found = true
			}
		}
		if !found {
			return nil, fmt.Errorf("unknown policy %q (have %s)", name, policyNames())
		}
	}
	return out, nil
}

func readTrace(path, format string) (*sim.Trace, error) {
	if path == "" {
		if format != "" && format != "gavel" {
			return nil, fmt.Errorf("-format %s needs -trace", format)
		}
		return sim.ReadShipped(defaultTrace)
	}
	if strings.HasPrefix(path, "shipped:") {
		return sim.ReadShipped(strings.TrimPrefix(path, "shipped:"))
	}
	if format == "" {
		format = "gavel"
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return sim.ReadTrace(f, format, filepath.Base(path))
}

func run(ctx context.Context, o options, stdout io.Writer) error {
	if _, err := selectPolicies(o.policies, nil); err != nil {
		return err
	}
	if (o.mix == "" && o.gpus < 1) || o.seeds < 1 {
		return fmt.Errorf("-gpus %d and -seeds %d must be ≥ 1", o.gpus, o.seeds)
	}
	var err error
	mode := sim.EpochsEvery
	if o.epochs != "" {
		if mode, err = sim.ParseEpochMode(o.epochs); err != nil {
			return fmt.Errorf("-epochs: %w", err)
		}
	}
	tr, err := readTrace(o.trace, o.format)
	if err != nil {
		return err
	}
	gpu := o.gpu
	if gpu == "" {
		gpu = "V100"
		if tr.Format == "pollux" {
			gpu = "T4"
		}
	}
	var truth *sim.Truth
	var mix sim.Mix
	var nodes map[string]any
	switch {
	case o.nodes != "":
		if o.mix != "" || o.gpu != "" || o.capacity {
			return fmt.Errorf("-nodes builds the cluster from a node list: -gpus is then a count, the GPUs to keep, and -gpu and -capacity need one model")
		}
		if mix, nodes, err = openbCluster(o.nodes, o.gpus); err != nil {
			return err
		}
		truth, o.gpus = mix[0].Truth, mix.GPUs()
	case o.mix != "":
		if o.gpu != "" || o.capacity {
			return fmt.Errorf("-gpus %s is a mix of models: -gpu and -capacity need one", o.mix)
		}
		if mix, err = sim.GavelMix(o.mix); err != nil {
			return fmt.Errorf("-gpus: %w", err)
		}
		truth, o.gpus = mix[0].Truth, mix.GPUs()
	case strings.EqualFold(gpu, "T4"):
		truth, err = sim.PolluxTruth()
	default:
		truth, err = sim.GavelTruth(gpu)
	}
	if err != nil {
		return err
	}
	// elastico's predictor never saw the ground truth's pairs.
	pred, err := predictorFor(truth, mix)
	if err != nil {
		return err
	}
	pols, err := selectPolicies(o.policies, pred.Predictor)
	if err != nil {
		return err
	}
	jobs := o.jobs
	if jobs == 0 {
		jobs = min(6*o.gpus, 3072)
	}
	load, jobs, err := saturate(o, jobs)
	if err != nil {
		return err
	}
	seeds := make([]uint64, o.seeds)
	for i := range seeds {
		seeds[i] = uint64(i + 1)
	}
	e := &sim.Experiment{
		Truth: truth, Mix: mix, Trace: tr, GPUs: o.gpus, Seeds: seeds, Policies: pols, Parallel: o.parallel, KeepGoing: true,
		Workload: sim.WorkloadOptions{Load: load, Jobs: jobs, InferenceFraction: o.inference, InferenceFloor: o.floor, ProfileNoise: o.noise, Saturated: o.saturated > 0},
		Run: sim.Config{Epoch: o.epoch, Epochs: mode, Heartbeat: o.heartbeat, AllowFlaps: !o.strictFlaps,
			Costs: sim.Costs{Reconfigure: o.restart, Migrate: o.restart, Resume: o.restart}},
		Progress: sim.TerminalProgress(os.Stderr, fmt.Sprintf("replaying %s on %d GPUs:", tr.Name, o.gpus)),
	}
	start := time.Now()
	out, err := e.Execute(ctx)
	if err != nil {
		return err
	}
	s := sim.Summarize(out, baseline.VolcanoName)
	meta := map[string]any{
		"predictor": pred.Label, "trace": tr.Name, "format": tr.Format, "ground_truth_gpu": truth.GPU.Model, "load": load, "jobs_per_window": jobs,
		"inference_fraction": o.inference, "epoch": o.epoch.String(), "epochs": mode.String(), "heartbeat": o.heartbeat.String(), "strict_flaps": o.strictFlaps,
		"costs": sim.Costs{Reconfigure: o.restart, Migrate: o.restart, Resume: o.restart}, "wall_seconds": time.Since(start).Seconds(), "cpus": runtime.GOMAXPROCS(0),
		"co_location_model": truth.CoLocationFit,
	}
	if mix != nil {
		heterogeneity(meta, mix)
	}
	if nodes != nil {
		openbMeta(meta, nodes, out)
	}
	if o.capacity {
		target := s.Policies[indexOf(s, baseline.VolcanoName)].Metrics["jct_avg"].Mean
		var cands []int
		for g := truth.GPU.PerNode; g <= 2*o.gpus; g += truth.GPU.PerNode {
			cands = append(cands, g)
		}
		need, err := e.GPUsFor(ctx, target, cands)
		if err != nil {
			return err
		}
		meta["gpus_for_volcano_jct"] = need
		meta["volcano_jct_hours"] = target
	}
	if o.json {
		if err := sim.WriteJSON(stdout, s, meta); err != nil {
			return err
		}
	} else {
		if err := sim.WriteTable(stdout, s); err != nil {
			return err
		}
		gt := truth.GPU.Model
		if mix != nil {
			gt = mix.String()
		}
		fmt.Fprintf(stdout, "trace %s (%s), ground truth %s, wall %.1fs\n", tr.Name, tr.Format, gt, time.Since(start).Seconds())
		if nodes != nil {
			fmt.Fprintln(stdout, nodes["summary"])
		}
		fmt.Fprintf(stdout, "elastico's predictor: %s\n", pred.Label)
		if need, ok := meta["gpus_for_volcano_jct"].(map[string]int); ok {
			fmt.Fprintf(stdout, "GPUs needed for volcano's average JCT (%.2f h): %v\n", meta["volcano_jct_hours"], need)
		}
	}
	if o.out != "" {
		if err := writeOut(o.out, s, out, meta); err != nil {
			return err
		}
	}
	if len(out.Failures) > 0 {
		return fmt.Errorf("%d of %d runs failed (listed above)", len(out.Failures), len(pols)*len(seeds))
	}
	return nil
}

func indexOf(s *sim.Summary, name string) int {
	for i, p := range s.Policies {
		if p.Policy == name {
			return i
		}
	}
	return -1
}

func writeOut(dir string, s *sim.Summary, out *sim.Outcome, meta map[string]any) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	files := []struct {
		name string
		fill func(io.Writer) error
	}{
		{"table.txt", func(w io.Writer) error { return sim.WriteTable(w, s) }},
		{"summary.json", func(w io.Writer) error { return sim.WriteJSON(w, s, meta) }},
		{"summary.csv", func(w io.Writer) error { return sim.WriteCSV(w, s) }},
		{"jobs.csv", func(w io.Writer) error { return sim.WriteJobsCSV(w, out) }},
	}
	var errs []error
	for _, f := range files {
		errs = append(errs, sim.WriteFileAtomic(filepath.Join(dir, f.name), f.fill))
	}
	errs = append(errs, plots.Write(dir, out))
	return errors.Join(errs...)
}
