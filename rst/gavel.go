// Gavel's measurements as profile families; the other roles of the data:
// see the root package doc, The shipped measurements.

package rst

import (
	"math"
	"slices"
	"strings"
	"sync"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/gavel"
)

// DataGPU is a GPU model of the shipped data sets: its memory as the driver
// reports it (what a job can actually allocate), and one GPU's share of the
// host of the servers the data were measured on.
type DataGPU struct {
	Model  string
	Memory float64 // GiB
	CPU    float64 // vCPUs per GPU
	RAM    float64 // GiB per GPU
	Server string
}

// The GPUs of the shipped data. Memory: nvidia-smi's total for the 16 GB
// V100 (16,160 MiB), the 16 GB P100 (16,280 MiB), one K80 die (11,441 MiB)
// and the T4 (15,109 MiB). Host shares: Gavel's V100s sat in AWS
// p3.16xlarge servers (8 GPUs, 64 vCPUs, 488 GiB); its P100s and K80s in
// servers RST takes to be alike; Pollux's T4s in AWS g4dn.12xlarge (4 GPUs,
// 48 vCPUs, 192 GiB).
var dataGPUs = map[string]DataGPU{
	gavel.V100: {Model: "V100", Memory: 16160.0 / 1024, CPU: 8, RAM: 61, Server: "AWS p3.16xlarge"},
	gavel.P100: {Model: "P100", Memory: 16280.0 / 1024, CPU: 8, RAM: 61, Server: "like p3.16xlarge (not stated by Gavel)"},
	gavel.K80:  {Model: "K80", Memory: 11441.0 / 1024, CPU: 8, RAM: 61, Server: "like p3.16xlarge (not stated by Gavel)"},
	"T4":       {Model: "T4", Memory: 15109.0 / 1024, CPU: 12, RAM: 48, Server: "AWS g4dn.12xlarge"},
}

// DataGPUOf returns the GPU of the shipped data sets with the given model
// ("V100", "P100", "K80" for Gavel; "T4" for Pollux; any case).
func DataGPUOf(model string) (DataGPU, bool) {
	for k, g := range dataGPUs {
		if strings.EqualFold(k, model) {
			return g, true
		}
	}
	return DataGPU{}, false
}

// gavelData parses the embedded Gavel file once; RST only reads it. It is
// a function, not a sync.OnceValues variable, so that a program that never
// calls it (one that imports pds, which uses rst's Checker and Launch) does
// not link the file: a package variable's initializer is always linked.
func gavelData() (gavel.Throughputs, error) {
	gavelOnce.Do(func() { gavelTab, gavelErr = gavel.Load() })
	return gavelTab, gavelErr
}

var (
	gavelOnce sync.Once
	gavelTab  gavel.Throughputs
	gavelErr  error
)

// GavelModels returns the models of Gavel's 26 job types, sorted: A3C,
// CycleGAN, LM, Recommendation, ResNet-18, ResNet-50, Transformer.
func GavelModels() []string {
	return []string{"A3C", "CycleGAN", "LM", "Recommendation", "ResNet-18", "ResNet-50", "Transformer"}
}

// GavelFamily builds the profile family of one of Gavel's models
// (GavelModels) on one of its GPU models ("V100", "P100", "K80"; any case) from
// Gavel's measured isolated throughputs (scheduler/simulation_throughputs.json,
// embedded by internal/gavel):
//
//   - one configuration per measured job type (the model at one batch size
//     B) and scale factor k ∈ {1, 2, 4, 8} with a throughput: k GPUs on one
//     server (Gavel's consolidated placement), each with batch B, so the
//     global batch size is k·B (Gavel's workers each take the type's batch
//     size);
//   - throughput in samples/s = steps/s × B: Gavel counts the steps of all
//     workers (ResNet-50 at batch 64 on P100 runs 2.6 steps/s on one GPU and
//     18.2 on eight; were those synchronous steps of 8×64 samples, eight
//     GPUs would be 56 times faster than one). A3C and CycleGAN have no batch
//     size: samples/s = steps/s, and their configurations have none;
//   - GPU memory per replica from the model's MemoryModel at the local batch
//     B; SM share 1 (Gavel measured whole GPUs); CPU and RAM one GPU's share
//     of the measuring server (DataGPU);
//   - Efficiency left zero (not modelled): Gavel has no gradient statistics.
//     Give it with NoiseScale.SetEfficiency, e.g. Pollux's cifar10 fit for
//     ResNet-18 and imagenet fit for ResNet-50, the same networks.
//
// The family is in the order of its canonical configuration IDs' space
// (GPUs, then batch size).
func GavelFamily(gpu, model string) ([]elastico.Profile, error) {
	all, err := gavelData()
	if err != nil {
		return nil, errorf("%w", err)
	}
	return gavelFamily(all, gpu, model)
}

func gavelFamily(all gavel.Throughputs, gpu, model string) ([]elastico.Profile, error) {
	m, ok := gavel.Model(gpu)
	tab := all.Table(m)
	if !ok || tab == nil {
		return nil, errorf("gavel: GPU model %q: want one of %s", gpu, strings.Join(gavel.Models, ", "))
	}
	g := dataGPUs[m]
	mm, ok := memoryModels[model]
	if !ok || !slices.Contains(GavelModels(), model) {
		return nil, errorf("gavel: model %q: want one of %v", model, GavelModels())
	}
	var fam []elastico.Profile
	for _, t := range tab.Types() {
		if t.Model != model {
			continue
		}
		for _, k := range []int{1, 2, 4, 8} {
			steps := tab.Isolated[gavel.Key{Type: t, Scale: k}]
			if !(steps > 0) {
				continue
			}
			c := elastico.Configuration{BatchSize: t.BatchSize * k, GPUs: k}
			c.ID = ConfigID(c)
			fam = append(fam, elastico.Profile{
				Family: model, Class: elastico.Training, Params: mm.Params,
				Config: c,
				Demand: elastico.Demand{GPUs: k, SM: 1, GPUMemory: mm.Replica(t.BatchSize, false, false), CPU: g.CPU, RAM: g.RAM},
				// A batch size of 0 (A3C, CycleGAN) counts one sample per step.
				Throughput: steps * float64(max(1, t.BatchSize)),
				Hardware:   elastico.Hardware{GPUModel: g.Model},
			})
		}
	}
	if len(fam) == 0 {
		return nil, errorf("gavel: model %q has no measurement on %s", model, m)
	}
	slices.SortStableFunc(fam, func(a, b elastico.Profile) int {
		if a.Config.GPUs != b.Config.GPUs {
			return a.Config.GPUs - b.Config.GPUs
		}
		return a.Config.BatchSize - b.Config.BatchSize
	})
	return fam, nil
}

// GavelScalingPerDoubling returns the median, over every doubling of GPUs
// (1→2, 2→4, 4→8) of every job type on V100, P100 and K80 that Gavel
// measured both ways, of the throughput ratio divided by 2, and the number
// of doublings: the source of DefaultScalingPerDoubling.
func GavelScalingPerDoubling() (float64, int, error) {
	all, err := gavelData()
	if err != nil {
		return 0, 0, errorf("%w", err)
	}
	var r []float64
	for _, gpu := range gavel.Models {
		tab := all.Table(gpu)
		for _, t := range tab.Types() {
			for _, k := range []int{1, 2, 4} {
				a, b := tab.Isolated[gavel.Key{Type: t, Scale: k}], tab.Isolated[gavel.Key{Type: t, Scale: 2 * k}]
				if a > 0 && b > 0 {
					r = append(r, b/a/2)
				}
			}
		}
	}
	if len(r) == 0 {
		return math.NaN(), 0, errorf("gavel: no multi-GPU measurement")
	}
	slices.Sort(r)
	med := r[len(r)/2]
	if len(r)%2 == 0 {
		med = (r[len(r)/2-1] + r[len(r)/2]) / 2
	}
	return med, len(r), nil
}
