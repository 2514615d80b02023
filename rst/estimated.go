package rst

import (
	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/gavel"
)

// EstimatedGavelFamily builds the family of one of Gavel's models
// (GavelModels) on a GPU Gavel did not measure ("a10", "a100-pcie-40gb",
// "a100-sxm4-80gb", "h100-pcie-80gb", "h100-sxm5-80gb"): Gavel's V100
// family (GavelFamily) with every throughput multiplied by SpeedRatio, the
// model's published speed-up over the V100. Every profile is marked
// Interpolated, since nobody measured it; a host that profiles the job
// replaces it (a measured profile wins over an interpolated one).
//
// What is carried over and why:
//
//   - configurations: Gavel's, the same batch sizes and GPU counts;
//   - throughput: × SpeedRatio, the same at every GPU count;
//   - GPU memory per replica: the V100 profile's, from the model's
//     MemoryModel. A job's footprint is set by its model and local batch,
//     not by the GPU's capacity (TF32 stores FP32 tensors), so a larger
//     GPU leaves room for other jobs rather than a larger demand; every
//     profile is checked to fit the GPU's memory;
//   - SM share: 1, as Gavel measured whole GPUs. A faster GPU may leave
//     more of its SMs idle under a small model, but by how much nobody
//     measured, so RST claims the whole GPU (the safe side for packing);
//   - CPU and RAM: the V100 profile's host share. A faster GPU may need
//     more data-loading cores to reach its ratio; give the job more when
//     its loaders cannot keep up.
//
// The family is ordered as GavelFamily's.
func EstimatedGavelFamily(gpu, model string) ([]elastico.Profile, error) {
	r, _, err := SpeedRatio(model, gpu)
	if err != nil {
		return nil, errorf("estimated family: %w", err)
	}
	g := gpuSpecs[gpu]
	fam, err := GavelFamily(gavel.V100, model)
	if err != nil {
		return nil, err
	}
	for i := range fam {
		p := &fam[i]
		if p.Demand.GPUMemory > g.Memory {
			return nil, errorf("estimated family: %s %s needs %.1f GiB per GPU, above %s's %.1f", model, p.Config.ID, p.Demand.GPUMemory, g.Model, g.Memory)
		}
		p.Throughput *= r
		p.Hardware = elastico.Hardware{GPUModel: g.Model}
		p.Interpolated = true
	}
	return fam, nil
}
