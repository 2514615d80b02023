package rst

import (
	"slices"
	"strings"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/gavel"
)

// ModelConfigID returns the ID of configuration id on GPU model model in a
// family that holds several models: id + "@" + model, e.g. "b64-g1@V100".
// IDs must be unique within a family, and one configuration has a profile
// per model. ParseConfigID reads it back.
func ModelConfigID(id, model string) string {
	if model == "" {
		return id
	}
	return id + "@" + model
}

// JoinFamilies joins one job's families on several GPU models into one
// family, in argument order: every profile keeps its configuration and
// hardware, and its ID becomes ModelConfigID(ID, GPUModel), unique across
// the models. Each family must be non-empty and of one model, named in its
// profiles' Hardware.GPUModel, and no two families of the same model; the
// error names the family and the field. The families are not modified.
//
// A scheduler places each profile only on GPUs of its model
// (elastico.Profile.RunsOn), so the joined family lets it choose the model
// as it chooses the configuration. For a model nobody measured, join an
// estimate built from a measured model and a per-model speed ratio, marked
// Interpolated (EstimatedGavelFamily does so for Gavel's models on A100
// and H100 from SpeedRatio; GavelFamilyOn joins them).
func JoinFamilies(fams ...[]elastico.Profile) ([]elastico.Profile, error) {
	var out []elastico.Profile
	var seen []string
	for i, fam := range fams {
		if len(fam) == 0 {
			return nil, errorf("join families: family %d is empty", i)
		}
		m := fam[0].Hardware.GPUModel
		for k := range fam {
			if g := fam[k].Hardware.GPUModel; g == "" || g != m {
				return nil, errorf("join families: family %d (%s): profile %d (%s): Hardware.GPUModel is %q, want the family's one model (%q), not empty",
					i, fam[k].Family, k, fam[k].Config.ID, g, m)
			}
		}
		if slices.Contains(seen, m) {
			return nil, errorf("join families: family %d (%s): GPU model %s is given twice", i, fam[0].Family, m)
		}
		seen = append(seen, m)
		for k := range fam {
			p := fam[k]
			p.Config.ID = ModelConfigID(p.Config.ID, m)
			out = append(out, p)
		}
	}
	return out, nil
}

// GavelFamilyOn builds the family of one of Gavel's models (GavelModels)
// on several GPUs, joined by JoinFamilies in the order given: each key is
// a GPU Gavel measured ("V100", "P100", "K80", any case: GavelFamily, Gavel's
// throughputs on that GPU) or one it did not ("a10", "a100-pcie-40gb",
// "a100-sxm4-80gb", "h100-pcie-80gb", "h100-sxm5-80gb":
// EstimatedGavelFamily, the V100 measurements × SpeedRatio, Interpolated).
// No keys: Gavel's three measured GPUs. Each profile names its GPU model
// (DataGPU.Model, GPUSpec.Model: "V100", "P100", "K80", "A100-SXM4-80GB",
// ...), which the cluster's GPUs must name too.
func GavelFamilyOn(model string, gpus ...string) ([]elastico.Profile, error) {
	if len(gpus) == 0 {
		gpus = gavel.Models
	}
	fams := make([][]elastico.Profile, 0, len(gpus))
	for _, g := range gpus {
		var fam []elastico.Profile
		var err error
		if _, ok := gpuSpecs[g]; ok {
			fam, err = EstimatedGavelFamily(g, model)
		} else {
			fam, err = GavelFamily(g, model)
		}
		if err != nil {
			return nil, err
		}
		fams = append(fams, fam)
	}
	fam, err := JoinFamilies(fams...)
	if err != nil {
		return nil, errorf("gavel on %s: %w", strings.Join(gpus, ", "), err)
	}
	return fam, nil
}
