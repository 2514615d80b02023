package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/profiler"
	"github.com/elastico/elastico/profiler/dcgm"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "profile:", err)
		os.Exit(1)
	}
}

type options struct {
	source, dcgmURL, gpus, visible, store string
	family, class, configID               string
	params, kvCacheFrac                   float64
	batch, nGPUs, maxSeqs                 int
	amp, ckpt, mps, quiet                 bool
	warmupIters                           int64
	warmup, window, interval              time.Duration
	startTimeout, stall, scrapeTimeout    time.Duration
	maxSampleErrors                       int
	gpuModel, driver                      string
	pcieGen, pcieWidth                    int
	powerLimit, nvlinkBandwidth           float64
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o options
	fs := flag.NewFlagSet("profile", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: profile [flags] -- command [args...]")
		fs.PrintDefaults()
	}
	fs.StringVar(&o.source, "source", "dcgm", "telemetry source: dcgm or nvml")
	fs.StringVar(&o.dcgmURL, "dcgm-url", "http://localhost:9400/metrics", "dcgm-exporter metrics URL")
	fs.StringVar(&o.gpus, "gpu", "0", "the job's devices, comma-separated, one per replica")
	fs.StringVar(&o.visible, "visible-devices", "", "CUDA_VISIBLE_DEVICES for the job (default: -gpu, when it lists indices or UUIDs)")
	fs.StringVar(&o.store, "store", "profiles", "profile store directory")
	fs.StringVar(&o.family, "family", "", "job family (required), e.g. resnet50")
	fs.StringVar(&o.class, "class", "training", "training or inference")
	fs.StringVar(&o.configID, "config-id", "", "configuration ID (required), e.g. bs256-amp")
	fs.Float64Var(&o.params, "params", 0, "model parameters (for the interference predictor)")
	fs.IntVar(&o.batch, "batch", 0, "batch size")
	fs.BoolVar(&o.amp, "amp", false, "mixed precision")
	fs.BoolVar(&o.ckpt, "ckpt", false, "activation checkpointing")
	fs.IntVar(&o.nGPUs, "gpus", 0, "GPU count of the configuration (default: the number of -gpu devices)")
	fs.Float64Var(&o.kvCacheFrac, "kv-cache-frac", 0, "inference: KV-cache budget as a fraction of GPU memory")
	fs.IntVar(&o.maxSeqs, "max-seqs", 0, "inference: maximum concurrent sequences")
	fs.BoolVar(&o.mps, "mps", false, "the job runs under an MPS daemon (recorded in the hardware signature)")
	fs.BoolVar(&o.quiet, "quiet", false, "do not pass the job's output through")
	fs.Int64Var(&o.warmupIters, "warmup-iters", profiler.DefaultWarmupIterations, "warm-up iterations")
	fs.DurationVar(&o.warmup, "warmup", profiler.DefaultWarmupTime, "warm-up time after the first report (whichever of the two comes first)")
	fs.DurationVar(&o.window, "window", profiler.DefaultWindow, "measurement window")
	fs.DurationVar(&o.interval, "interval", profiler.DefaultInterval, "sampling interval")
	fs.DurationVar(&o.startTimeout, "start-timeout", profiler.DefaultStartTimeout, "longest wait for the first report")
	fs.DurationVar(&o.stall, "stall", profiler.DefaultStallTimeout, "longest time without a report before the job counts as stalled")
	fs.IntVar(&o.maxSampleErrors, "max-sample-errors", 0, "failed samples tolerated in the window")
	fs.DurationVar(&o.scrapeTimeout, "scrape-timeout", dcgm.DefaultTimeout, "dcgm: one scrape's timeout")
	fs.StringVar(&o.gpuModel, "gpu-model", "", "dcgm: the GPU model, when the exporter has no modelName label")
	fs.StringVar(&o.driver, "driver", "", "dcgm: the driver version, when the exporter does not export it")
	fs.IntVar(&o.pcieGen, "pcie-gen", 0, "dcgm: PCIe generation, when the exporter does not export it")
	fs.IntVar(&o.pcieWidth, "pcie-width", 0, "dcgm: PCIe lanes, when the exporter does not export them")
	fs.Float64Var(&o.powerLimit, "power-limit", 0, "dcgm: power limit in W, when the exporter does not export it")
	fs.Float64Var(&o.nvlinkBandwidth, "nvlink-bandwidth", 0, "NVLink bandwidth one way over all links, bytes/s (0: no NVLink counter)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cmdline := fs.Args()
	switch {
	case len(cmdline) == 0:
		fs.Usage()
		return errors.New("no command to profile (put it after --)")
	case o.family == "":
		return errors.New("-family is required")
	case o.configID == "":
		return errors.New("-config-id is required")
	}
	var class elastico.Class
	switch o.class {
	case "training":
		class = elastico.Training
	case "inference":
		class = elastico.Inference
	default:
		return fmt.Errorf("-class %q: want training or inference", o.class)
	}
	devices := strings.Split(o.gpus, ",")
	if o.nGPUs == 0 {
		o.nGPUs = len(devices)
	}
	if o.nGPUs != len(devices) {
		return fmt.Errorf("-gpus %d but -gpu lists %d devices: one device per replica", o.nGPUs, len(devices))
	}
	visible := o.visible
	if visible == "" {
		for _, d := range devices {
			if strings.ContainsAny(d, "/:") {
				return fmt.Errorf("-gpu %q is a MIG instance or a pod: set -visible-devices (e.g. the MIG device's UUID)", d)
			}
		}
		visible = o.gpus
	}

	var (
		src     profiler.Source
		closeFn = func() error { return nil }
		err     error
	)
	switch o.source {
	case "dcgm":
		sels := make([]dcgm.Selector, len(devices))
		for i, d := range devices {
			if sels[i], err = dcgm.ParseSelector(d); err != nil {
				return err
			}
		}
		src, err = dcgm.New(dcgm.Config{
			URL: o.dcgmURL, Devices: sels, Timeout: o.scrapeTimeout,
			GPUModel: o.gpuModel, Driver: o.driver, PCIeGen: o.pcieGen, PCIeWidth: o.pcieWidth,
			PowerLimit: o.powerLimit, NVLinkBandwidth: o.nvlinkBandwidth,
		})
	case "nvml":
		src, closeFn, err = openNVML(devices, o.nvlinkBandwidth)
	default:
		return fmt.Errorf("-source %q: want dcgm or nvml", o.source)
	}
	if err != nil {
		return err
	}
	defer closeFn()

	st, err := profiler.OpenStore(o.store)
	if err != nil {
		return err
	}
	launcher := &profiler.Command{
		Path: cmdline[0], Args: cmdline[1:], Devices: visible,
		// Number devices as NVML and the exporter do, not fastest first.
		Env: []string{"CUDA_DEVICE_ORDER=PCI_BUS_ID"},
	}
	if !o.quiet {
		launcher.Stdout, launcher.Stderr = stderr, stderr
	}
	p, err := profiler.New(profiler.Config{
		Launcher: launcher, Source: src, Store: st, MPS: o.mps,
		WarmupIterations: o.warmupIters, WarmupTime: o.warmup, Window: o.window, Interval: o.interval,
		StartTimeout: o.startTimeout, StallTimeout: o.stall, MaxSampleErrors: o.maxSampleErrors,
	})
	if err != nil {
		return err
	}
	req := elastico.ProfileRequest{
		Family: o.family, Class: class, Params: o.params,
		Config: elastico.Configuration{
			ID: o.configID, BatchSize: o.batch, Checkpointing: o.ckpt, AMP: o.amp, GPUs: o.nGPUs,
			KVCacheFrac: o.kvCacheFrac, MaxSeqs: o.maxSeqs,
		},
	}
	prof, err := p.Profile(ctx, req)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if err := profiler.Encode(&buf, prof.Family, []elastico.Profile{prof}); err != nil {
		return err
	}
	if _, err := stdout.Write(buf.Bytes()); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "profile: stored in %s\n", st.Path(prof.Family))
	return closeFn()
}
