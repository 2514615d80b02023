// Command iactrain trains the interference predictor that package iac
// embeds (iac.Default) and reproduces it bit for bit:
//
//	go run ./examples/iactrain                 # rewrite iac/models/default.json
//	go run ./examples/iactrain -check          # retrain, compare with the file, exit 1 if they differ
//	go run ./examples/iactrain -gpu V100 -out /tmp/v100.json   # another model
//
// The default model is fitted to Gavel's measured P100 and K80 pairs (see
// iac/gaveldata for what Gavel has and lacks) with iac.DefaultTrainConfig()
// and seed 1. It is not trained on V100 so that a replay whose ground truth
// is Gavel's V100 pairs can use iac.Default() without the predictor having
// seen the answers (a predictor evaluated on the ground truth it was trained on proves nothing). Run from the repository root.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"

	"github.com/elastico/elastico/iac"
	"github.com/elastico/elastico/iac/gaveldata"
	"github.com/elastico/elastico/iac/train"
)

func main() {
	gpu := flag.String("gpu", strings.Join(iac.DefaultGPUs, ","), "Gavel GPU models to train on (V100, P100, K80; any case), comma-separated")
	seed := flag.Uint64("seed", iac.DefaultSeed, "random seed")
	out := flag.String("out", "iac/models/default.json", "model file to write (or to compare with -check)")
	check := flag.Bool("check", false, "do not write: retrain and compare with -out")
	flag.Parse()
	if err := run(strings.Split(*gpu, ","), *seed, *out, *check); err != nil {
		fmt.Fprintln(os.Stderr, "iactrain:", err)
		os.Exit(1)
	}
}

func run(gpus []string, seed uint64, out string, check bool) error {
	d, err := gaveldata.Load(gpus...)
	if err != nil {
		return err
	}
	cfg := iac.TrainConfig{Label: fmt.Sprintf("%s: %d profiles, %d pairs, %d ordered samples; iac.DefaultTrainConfig(), seed %d (go run ./examples/iactrain)",
		d.Name, len(d.Profiles), len(d.Pairs), len(d.Samples()), seed)}
	m, err := train.Fit(d, cfg, rand.New(rand.NewPCG(seed, 0)))
	if err != nil {
		return err
	}
	info := m.Info()
	fmt.Printf("%s\n  inputs %v\n  hidden %v, best epoch %d of %d, %d samples (%d held out to choose the epoch)\n  train loss %.5f, validation loss %.5f\n",
		info.Label, m.Inputs(), m.Hidden(), info.BestEpoch, info.Epochs, info.TrainSamples, info.ValSamples, info.TrainLoss, info.ValidationLoss)
	if !check {
		if err := iac.WriteFile(out, m); err != nil {
			return err
		}
		fmt.Println("wrote", out)
		return nil
	}
	var fresh bytes.Buffer
	if err := iac.Encode(&fresh, m); err != nil {
		return err
	}
	old, err := os.ReadFile(out)
	if err != nil {
		return err
	}
	if !bytes.Equal(old, fresh.Bytes()) {
		return fmt.Errorf("%s differs from the retrained model (%d vs %d bytes)", out, len(old), fresh.Len())
	}
	fmt.Println(out, "reproduced bit for bit")
	return nil
}
