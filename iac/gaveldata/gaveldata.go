// Package gaveldata turns Gavel's measured co-location throughputs (OSDI'20,
// github.com/stanford-futuredata/gavel, MIT; embedded by internal/gavel with
// its notice) into [iac.Dataset]s: 26 training job types per GPU model (V100,
// P100, K80) and every measured pair of them sharing one GPU.
//
// It lives apart from package iac so that a program importing the
// predictor does not carry Gavel's 1.2 MB file: see the root package doc,
// The shipped measurements.
//
// # What Gavel has, and what it does not
//
// Gavel measured throughputs only: no hardware counters, no memory. So every
// counter of the feature vector is missing (never zero), and so are the
// pairwise sums built from counters. What a profile does carry, and why:
//
//   - Family: Gavel's model name (ResNet-18, ResNet-50, Transformer, LM,
//     Recommendation, A3C, CycleGAN); Class: training, all of them.
//   - BatchSize: the batch size in Gavel's job type. CycleGAN's job type has
//     none, but its command line (traces/physical_cluster/*.trace:
//     "python3 cyclegan.py --dataset_path ... --decay_epoch 0") leaves
//     cyclegan.py's default, --batch_size 1. A3C has no batch size (4 workers
//     of 20-step rollouts): missing.
//   - AMP and Checkpointing: false. None of the commands in Gavel's traces
//     passes a mixed-precision or checkpointing flag, and the workloads
//     (PyTorch reference implementations of 2019) have none.
//   - Params: the parameter count of each family's model as Gavel's
//     workloads/pytorch code builds it, to two significant digits (see
//     [Params]); a family descriptor, constant within a family.
//   - Throughput: Gavel's isolated throughput on that GPU model in samples
//     per second: steps/s × batch size (1 for A3C and CycleGAN), the unit the
//     root package documents for training and that rst.GavelFamily and the
//     simulator's profiles use, so the embedded model sees at prediction time
//     the scale it was trained on.
//   - Config.GPUs and Demand.GPUs: 1 (pairs were measured at scale factor 1).
//   - Hardware.GPUModel: the GPU model as elastico.GPU.Model names it
//     ("V100", "P100", "K80").
//
// A pair's speeds are Gavel's co-located throughputs divided by the isolated
// ones. On V100, 80 of 636 directed pairs have a co-located throughput equal
// to the isolated one to the last digit (speed exactly 1; Gavel seems to cap
// co-located throughput at the isolated one); they are kept, and learned as
// "no measurable slowdown" ([iac.SlowdownOf]).
package gaveldata

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
	"github.com/elastico/elastico/internal/gavel"
)

// GPU models with co-location measurements.
const (
	V100 = gavel.V100
	P100 = gavel.P100
	K80  = gavel.K80
)

// Families are Gavel's model families, in the order reports list them.
var Families = []string{"ResNet-18", "ResNet-50", "Transformer", "LM", "Recommendation", "A3C", "CycleGAN"}

// Params maps a family to its model's parameter count, to two significant
// digits, counted from the model Gavel's workload builds (commit c4fa400 of
// stanford-futuredata/gavel, workloads/pytorch/):
//
//   - ResNet-18: CIFAR-10 ResNet-18 (image_classification/cifar10): 11,173,962.
//   - ResNet-50: torchvision resnet50 (image_classification/imagenet): 25,557,032.
//   - Transformer: translation/train.py defaults (6+6 layers, d_model 512,
//     d_inner 2048, 8 heads, target projection shared): 44.1 M in the layers
//     plus the Multi30k source and target embeddings (about 9–10 k tokens ×
//     512); about 49 M.
//   - LM: language_modeling/main.py defaults (2-layer LSTM, 200 embedding and
//     hidden units, untied) over WikiText-2's 33,278-word vocabulary:
//     13,987,678.
//   - Recommendation: recommendation/train.py's DynamicAutoencoder with one
//     hidden layer of 200 over ML-20M's 20,108 items (after the VAE-CF
//     preprocessing its pro_sg data directory comes from): 8,063,508.
//   - A3C: rl/main.py's A3Clstm (four convolutions, an LSTM cell 1024 → 512,
//     Pong's 6 actions): 3,249,639.
//   - CycleGAN: cyclegan.py, two ResNet generators with 9 residual blocks
//     (about 11.38 M each) and two PatchGAN discriminators (about 2.76 M
//     each): about 28.3 M.
var Params = map[string]float64{
	"ResNet-18":      11e6,
	"ResNet-50":      26e6,
	"Transformer":    49e6,
	"LM":             14e6,
	"Recommendation": 8.1e6,
	"A3C":            3.2e6,
	"CycleGAN":       28e6,
}

// batchSize returns the batch size of a job type as its command runs it.
func batchSize(t gavel.JobType) int {
	if t.BatchSize > 0 {
		return t.BatchSize
	}
	if t.Model == "CycleGAN" {
		return 1 // cyclegan.py's default; Gavel's command does not set it
	}
	return 0 // A3C: none
}

// Load returns the measurements of one GPU model (V100, P100 or K80; any
// case), or of several together: then profile IDs are prefixed with the
// GPU model ("P100/LM (batch size 5)"), families stay the model's name, and
// pairs only join profiles of one GPU model.
//
// The dataset's Name is "gavel-" and the models in lower case joined by
// "+" ("gavel-p100+k80"): a label that trained models record (iac's
// embedded model among them), kept as it was when they were trained.
func Load(gpus ...string) (*iac.Dataset, error) {
	if len(gpus) == 0 {
		return nil, fmt.Errorf("gaveldata: Load: no GPU model")
	}
	all, err := gavel.Load()
	if err != nil {
		return nil, fmt.Errorf("gaveldata: %w", err)
	}
	if len(gpus) == 1 {
		return FromTable(all, gpus[0])
	}
	out := &iac.Dataset{Name: datasetName(gpus...)}
	seen := map[string]bool{}
	for _, g := range gpus {
		d, err := FromTable(all, g)
		if err != nil {
			return nil, err
		}
		g = d.Profiles[0].Hardware.GPUModel
		if seen[g] {
			return nil, fmt.Errorf("gaveldata: Load: GPU model %s twice", g)
		}
		seen[g] = true
		off := len(out.Profiles)
		for i, id := range d.IDs {
			out.IDs = append(out.IDs, g+"/"+id)
			p := d.Profiles[i]
			p.Config.ID = g + "/" + id
			out.Profiles = append(out.Profiles, p)
		}
		for _, p := range d.Pairs {
			p.A += off
			p.B += off
			out.Pairs = append(out.Pairs, p)
		}
	}
	if err := out.Validate(); err != nil {
		return nil, fmt.Errorf("gaveldata: %w", err)
	}
	return out, nil
}

// datasetName is Load's Name for a dataset of gpus.
func datasetName(gpus ...string) string {
	return "gavel-" + strings.ToLower(strings.Join(gpus, "+"))
}

// FromTable converts one GPU model's table (V100, P100 or K80; any case) of
// an already parsed Gavel file.
func FromTable(all gavel.Throughputs, gpu string) (*iac.Dataset, error) {
	name := gpu
	gpu, ok := gavel.Model(name)
	tab := all.Table(gpu)
	if !ok || tab == nil {
		return nil, fmt.Errorf("gaveldata: no GPU model %q (want %s)", name, strings.Join(gavel.Models, ", "))
	}
	types := tab.Types()
	d := &iac.Dataset{Name: datasetName(gpu)}
	for _, t := range types {
		params, ok := Params[t.Model]
		if !ok {
			return nil, fmt.Errorf("gaveldata: %s: job type %q of unknown family %q", gpu, t, t.Model)
		}
		iso := tab.Isolated[gavel.Key{Type: t, Scale: 1}]
		if !(iso > 0) {
			return nil, fmt.Errorf("gaveldata: %s: job type %q: isolated throughput %g", gpu, t, iso)
		}
		d.IDs = append(d.IDs, t.String())
		d.Profiles = append(d.Profiles, elastico.Profile{
			Family: t.Model,
			Class:  elastico.Training,
			Params: params,
			Config: elastico.Configuration{
				ID:        t.String(),
				BatchSize: batchSize(t),
				GPUs:      1,
			},
			Demand:     elastico.Demand{GPUs: 1},
			Throughput: iso * float64(max(1, t.BatchSize)),
			Hardware:   elastico.Hardware{GPUModel: gpu},
		})
	}
	speed := func(a, b int) float64 {
		s, ok := tab.Speed(types[a], types[b])
		if !ok {
			return 0
		}
		return s
	}
	for a := range types {
		for b := a; b < len(types); b++ {
			p := iac.Pair{A: a, B: b, SpeedA: speed(a, b), SpeedB: speed(b, a)}
			if a == b {
				// A job next to a copy of itself: Gavel records [self,
				// other] for the one run.
				pp, ok := tab.Pairs[[2]gavel.JobType{types[a], types[a]}]
				if !ok {
					continue
				}
				iso := tab.Isolated[gavel.Key{Type: types[a], Scale: 1}]
				p.SpeedA, p.SpeedB = pp.Self/iso, pp.Other/iso
			}
			if p.SpeedA == 0 && p.SpeedB == 0 {
				continue
			}
			d.Pairs = append(d.Pairs, p)
		}
	}
	if err := d.Validate(); err != nil {
		return nil, fmt.Errorf("gaveldata: %w", err)
	}
	return d, nil
}

// NeighbourMAPE measures how smooth a dataset's slowdowns are in batch size,
// which bounds what any model of Gavel's features can reach in
// distribution: each measured direction (victim, aggressor) is predicted by
// the mean measured slowdown of its neighbours, the same aggressor next to
// the victim's family at the adjacent batch sizes and the same victim next
// to the aggressor's, and the result is the mean absolute percentage error
// of those predictions (percent) over the n directions that have a
// measured neighbour. Neighbours share a family and a GPU model.
func NeighbourMAPE(d *iac.Dataset) (mape float64, n int) {
	type key struct{ family, gpu string }
	groups := map[key][]int{}
	for i := range d.Profiles {
		p := &d.Profiles[i]
		k := key{p.Family, p.Hardware.GPUModel}
		groups[k] = append(groups[k], i)
	}
	neighbours := make([][]int, len(d.Profiles))
	for _, g := range groups {
		slices.SortFunc(g, func(a, b int) int { return d.Profiles[a].Config.BatchSize - d.Profiles[b].Config.BatchSize })
		for k, i := range g {
			if k > 0 {
				neighbours[i] = append(neighbours[i], g[k-1])
			}
			if k+1 < len(g) {
				neighbours[i] = append(neighbours[i], g[k+1])
			}
		}
	}
	slow := map[[2]int]float64{}
	for _, p := range d.Pairs {
		if p.SpeedA > 0 {
			slow[[2]int{p.A, p.B}] = iac.SlowdownOf(p.SpeedA)
		}
		if p.SpeedB > 0 {
			slow[[2]int{p.B, p.A}] = iac.SlowdownOf(p.SpeedB)
		}
	}
	keys := slices.SortedFunc(maps.Keys(slow), func(a, b [2]int) int {
		if a[0] != b[0] {
			return a[0] - b[0]
		}
		return a[1] - b[1]
	})
	var sum float64
	for _, k := range keys {
		var s, c float64
		for _, v := range neighbours[k[0]] {
			if x, ok := slow[[2]int{v, k[1]}]; ok {
				s += x
				c++
			}
		}
		for _, a := range neighbours[k[1]] {
			if x, ok := slow[[2]int{k[0], a}]; ok {
				s += x
				c++
			}
		}
		if c == 0 {
			continue
		}
		y := slow[k]
		sum += math.Abs(s/c-y) / y
		n++
	}
	if n == 0 {
		return math.NaN(), 0
	}
	return 100 * sum / float64(n), n
}
