package rst

import (
	"math"
	"slices"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/gavel"
)

// GPUSpec is a GPU as the starter families see it: the memory a job can
// allocate and the datasheet peaks the roofline model of LLM inference
// reads.
type GPUSpec struct {
	// Model names the GPU; families copy it into Profile.Hardware.GPUModel.
	Model string
	// Memory is the GiB a job can allocate: nvidia-smi's total.
	Memory float64
	// BandwidthGBs is the peak memory bandwidth in GB/s (10⁹ bytes).
	BandwidthGBs float64
	// TensorTFLOPs is the peak dense FP16 tensor-core rate in TFLOP/s
	// (datasheets often print the rate with 2:4 sparsity, twice this).
	TensorTFLOPs float64
	// LinkGBs is the GPU-to-GPU bandwidth in GB/s, both directions
	// together, that a tensor-parallel all-reduce uses: NVLink where every
	// GPU of a server has it, otherwise PCIe. Zero: no multi-GPU
	// configuration.
	LinkGBs float64
}

// validate reports the first field of g that is unusable.
func (g *GPUSpec) validate() error {
	bad := func(v float64) bool { return !(v > 0 && v <= math.MaxFloat64) }
	switch {
	case g.Model == "":
		return errorf("GPUSpec.Model is empty")
	case bad(g.Memory) || g.Memory > elastico.MaxGPUMemory:
		return errorf("GPUSpec.Memory of %s is %g GiB, want a size in (0, %d]", g.Model, g.Memory, elastico.MaxGPUMemory)
	case bad(g.BandwidthGBs):
		return errorf("GPUSpec.BandwidthGBs of %s is %g, want > 0", g.Model, g.BandwidthGBs)
	case bad(g.TensorTFLOPs):
		return errorf("GPUSpec.TensorTFLOPs of %s is %g, want > 0", g.Model, g.TensorTFLOPs)
	case !(g.LinkGBs >= 0 && g.LinkGBs <= math.MaxFloat64):
		return errorf("GPUSpec.LinkGBs of %s is %g, want ≥ 0", g.Model, g.LinkGBs)
	}
	return nil
}

// The GPUs the starter families know, keyed as GPUSpecOf takes them.
// Memory is nvidia-smi's total (MiB / 1024); bandwidth, FP16 tensor rate
// (dense) and interconnect are NVIDIA's datasheets: "NVIDIA Tesla V100 GPU
// Accelerator" (2018), "NVIDIA T4 Tensor Core GPU" (2019), "NVIDIA A100
// Tensor Core GPU" (2021, 40 and 80 GB editions), "NVIDIA H100 Tensor Core
// GPU" (2023). The PCIe cards' NVLink bridges join pairs only, so a
// tensor-parallel group of four or eight talks over PCIe: LinkGBs is the
// PCIe figure (Gen3 ×16 32 GB/s, Gen4 64 GB/s, Gen5 128 GB/s).
var gpuSpecs = map[string]GPUSpec{
	// 16,160 MiB; 900 GB/s HBM2; 125 TFLOP/s; NVLink 2 300 GB/s.
	"v100-sxm2-16gb": {Model: "V100-SXM2-16GB", Memory: 16160.0 / 1024, BandwidthGBs: 900, TensorTFLOPs: 125, LinkGBs: 300},
	// 22,731 MiB (the Alibaba trace's simulator, hkust-adsl/kubernetes-
	// scheduler-simulator, pkg/type/open-gpu-share/utils/const.go); 600 GB/s
	// GDDR6; 125 TFLOP/s; PCIe Gen4 ("NVIDIA A10 Tensor Core GPU", 2021).
	"a10": {Model: "A10", Memory: 22731.0 / 1024, BandwidthGBs: 600, TensorTFLOPs: 125, LinkGBs: 64},
	// 15,109 MiB; 320 GB/s GDDR6; 65 TFLOP/s; PCIe Gen3.
	"t4": {Model: "T4", Memory: 15109.0 / 1024, BandwidthGBs: 320, TensorTFLOPs: 65, LinkGBs: 32},
	// 40,536 MiB; 1,555 GB/s HBM2; 312 TFLOP/s; PCIe Gen4.
	"a100-pcie-40gb": {Model: "A100-PCIE-40GB", Memory: 40536.0 / 1024, BandwidthGBs: 1555, TensorTFLOPs: 312, LinkGBs: 64},
	// 81,920 MiB; 2,039 GB/s HBM2e; 312 TFLOP/s; NVLink 3 600 GB/s.
	"a100-sxm4-80gb": {Model: "A100-SXM4-80GB", Memory: 81920.0 / 1024, BandwidthGBs: 2039, TensorTFLOPs: 312, LinkGBs: 600},
	// 81,559 MiB; 2,000 GB/s HBM2e; 756 TFLOP/s; PCIe Gen5.
	"h100-pcie-80gb": {Model: "H100-PCIE-80GB", Memory: 81559.0 / 1024, BandwidthGBs: 2000, TensorTFLOPs: 756, LinkGBs: 128},
	// 81,559 MiB; 3,350 GB/s HBM3; 989 TFLOP/s; NVLink 4 900 GB/s.
	"h100-sxm5-80gb": {Model: "H100-SXM5-80GB", Memory: 81559.0 / 1024, BandwidthGBs: 3350, TensorTFLOPs: 989, LinkGBs: 900},
}

// GPUSpecOf returns the datasheet spec of a GPU ("v100-sxm2-16gb", "t4",
// "a10", "a100-pcie-40gb", "a100-sxm4-80gb", "h100-pcie-80gb", "h100-sxm5-80gb").
func GPUSpecOf(key string) (GPUSpec, bool) {
	g, ok := gpuSpecs[key]
	return g, ok
}

// GPUSpecKeys returns the keys GPUSpecOf knows, sorted.
func GPUSpecKeys() []string {
	out := make([]string, 0, len(gpuSpecs))
	for k := range gpuSpecs {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// lambdaFP32 is Lambda's published single-GPU PyTorch training throughput
// (lambdal/deeplearning-benchmark, pytorch/pytorch-train-throughput-fp32.csv
// at commit 4e11f68 of 2024-07-24, the table behind
// lambdalabs.com/gpu-benchmarks): NVIDIA's DeepLearningExamples in the NGC
// PyTorch container, "fp32" columns, which run TF32 on the tensor cores of
// A100 and H100 as NGC does by default, as Gavel's FP32 jobs would. Units
// are each benchmark's own (images/s, tokens/s, samples/s); only ratios
// are used. Keyed by benchmark, then GPUSpec key; "v100-sxm2-16gb" is the
// row "LambdaCloud V100 16GB", the SXM2 part of Gavel's p3.16xlarge, and
// "a10" the row "LambdaCloud A10".
var lambdaFP32 = map[string]map[string]float64{
	"resnet50":          {"v100-sxm2-16gb": 369, "a10": 349, "a100-pcie-40gb": 882, "a100-sxm4-80gb": 1066, "h100-pcie-80gb": 1197, "h100-sxm5-80gb": 1753},
	"transformerxlbase": {"v100-sxm2-16gb": 6920, "a10": 8940, "a100-pcie-40gb": 23192, "a100-sxm4-80gb": 30462, "h100-pcie-80gb": 34241, "h100-sxm5-80gb": 45697},
	"ncf":               {"v100-sxm2-16gb": 9932793, "a10": 9069169, "a100-pcie-40gb": 24053576, "a100-sxm4-80gb": 28653595, "h100-pcie-80gb": 32325375, "h100-sxm5-80gb": 49094300},
}

// speedSource is how a Gavel model's speed-up over the V100 is obtained.
type speedSource struct {
	// Benchmark is the Lambda benchmark (lambdaFP32) whose ratio is used.
	Benchmark string
	// Amdahl, when set, dilutes Benchmark's ratio by the share of the
	// model's V100 step that is not GPU-bound (see SpeedRatio).
	Amdahl bool
	Why    string
}

// speedSources maps every Gavel model to its published analogue.
var speedSources = map[string]speedSource{
	"ResNet-18": {Benchmark: "resnet50",
		Why: "Lambda's resnet50: the nearest convolutional classifier it measured (ResNet-18 on 32×32 images has smaller kernels, so this errs high)"},
	"ResNet-50": {Benchmark: "resnet50",
		Why: "Lambda's resnet50: the same network (ResNet-50 v1.5) on ImageNet"},
	"CycleGAN": {Benchmark: "resnet50",
		Why: "Lambda's resnet50: convolutional too; the lowest of its convolutional ratios (ssd 2.92×/5.04×, waveglow 4.88×/7.61× on A100-SXM4/H100-SXM5)"},
	"Transformer": {Benchmark: "transformerxlbase",
		Why: "Lambda's transformerxlbase: the nearest Transformer trained from scratch"},
	"Recommendation": {Benchmark: "ncf",
		Why: "Lambda's ncf: recommendation on MovieLens, embedding- and memory-bound like Recoder"},
	"LM": {Benchmark: "resnet50", Amdahl: true,
		Why: "no published analogue: a 200-unit LSTM's kernels are too small to be GPU-bound (Lambda's gnmt, 1024-unit LSTMs, gets 5.4×/9.1×), so resnet50's ratio diluted by Amdahl's law"},
	"A3C": {Benchmark: "resnet50", Amdahl: true,
		Why: "no published analogue: its rollouts run on the host, so resnet50's ratio diluted by Amdahl's law"},
}

// SpeedRatio returns how many times faster one of Gavel's models
// (GavelModels) trains on a GPU (a GPUSpecOf key Lambda measured: "a10",
// "a100-pcie-40gb", "a100-sxm4-80gb", "h100-pcie-80gb", "h100-sxm5-80gb")
// than on Gavel's V100, and where the ratio comes from. These are
// estimates from published benchmarks, not measurements of Gavel's jobs:
//
//   - ResNet-18, ResNet-50, CycleGAN: Lambda's resnet50 ratio (A100-SXM4
//     2.89×, H100-SXM5 4.75×);
//   - Transformer: Lambda's transformerxlbase (4.40×, 6.60×);
//   - Recommendation: Lambda's ncf (2.88×, 4.94×);
//   - LM, A3C: no published benchmark resembles them (a small LSTM and a
//     host-bound reinforcement learner), so Amdahl's law: a share f of
//     the model's V100 step is GPU-bound and speeds up like resnet50 (R),
//     the rest does not, ratio = 1 / (1 − f + f/R). f is fitted on
//     Gavel's own K80→V100 speed-ups, of the model (r) against ResNet-50's
//     (R₀), geometric means over batch sizes at one GPU:
//     f = (1 − 1/r) / (1 − 1/R₀).
//
// Lambda's 8-GPU rows give ratios within 10 % of the single-GPU ones
// (resnet50 2.63× and 4.92×, transformerxlbase 4.42× and 6.65×), so one
// ratio serves every GPU count.
func SpeedRatio(model, gpu string) (ratio float64, source string, err error) {
	src, ok := speedSources[model]
	if !ok {
		return 0, "", errorf("speed ratio: model %q: want one of %v", model, GavelModels())
	}
	row := lambdaFP32[src.Benchmark]
	v, ok := row[gpu]
	if !ok || gpu == "v100-sxm2-16gb" {
		return 0, "", errorf("speed ratio: GPU %q: want one of a10, a100-pcie-40gb, a100-sxm4-80gb, h100-pcie-80gb, h100-sxm5-80gb", gpu)
	}
	r := v / row["v100-sxm2-16gb"]
	source = src.Why + "; Lambda GPU benchmarks, PyTorch fp32/TF32, 2024-07-24"
	if src.Amdahl {
		f, err := gpuBoundShare(model)
		if err != nil {
			return 0, "", err
		}
		r = 1 / (1 - f + f/r)
	}
	return r, source, nil
}

// gpuBoundShare is f of SpeedRatio's Amdahl rule, fitted on Gavel's data.
func gpuBoundShare(model string) (float64, error) {
	r, err := gavelSpeedup(model)
	if err != nil {
		return 0, err
	}
	r0, err := gavelSpeedup("ResNet-50")
	if err != nil {
		return 0, err
	}
	return math.Min(1, math.Max(0, (1-1/r)/(1-1/r0))), nil
}

// gavelSpeedup is the geometric mean over a model's job types of its
// one-GPU V100 throughput over its K80 throughput.
func gavelSpeedup(model string) (float64, error) {
	v, err := GavelFamily(gavel.V100, model)
	if err != nil {
		return 0, err
	}
	k, err := GavelFamily(gavel.K80, model)
	if err != nil {
		return 0, err
	}
	var sum float64
	var n int
	for i := range v {
		if v[i].Config.GPUs != 1 {
			continue
		}
		for j := range k {
			if k[j].Config.ID == v[i].Config.ID {
				sum += math.Log(v[i].Throughput / k[j].Throughput)
				n++
			}
		}
	}
	if n == 0 {
		return 0, errorf("speed ratio: model %q: no job type measured alone on both V100 and K80", model)
	}
	return math.Exp(sum / float64(n)), nil
}
