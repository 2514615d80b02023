package main

import "github.com/elastico/elastico/sim"

// heterogeneity records in the replay's metadata what a mixed cluster
// models, and what it does not.
func heterogeneity(meta map[string]any, mix sim.Mix) {
	fits := map[string]sim.FitReport{}
	models := make([]string, len(mix))
	for i, p := range mix {
		models[i] = p.Truth.GPU.Model
		fits[p.Truth.GPU.Model] = p.Truth.CoLocationFit
	}
	meta["gpu_mix"] = mix.String()
	meta["ground_truth_gpus"] = models
	meta["co_location_model"] = fits
	meta["heterogeneity"] = map[string]any{
		"reference": models[0],
		"modelled": []string{
			"each job's family holds its configurations on every model, each from that model's ground truth (Gavel's measured throughputs; profiles name their model, IDs end in @model)",
			"a job runs at the throughput of the model it is placed on; a configuration runs only on GPUs of its profile's model",
			"sharing a GPU, a job runs at that model's co-location speeds only: Gavel's pairs measured on it, the rest from its own rank-one fit",
			"a job's requested configuration and dedicated time are the reference model's",
		},
		"not_modelled": []string{
			"pds's market prices an SM share alike on every model: it does not yet steer jobs to the model where they gain most, nor to idle slower GPUs",
			"a job that moves between models restarts as any migration does; no extra cost for a change of model",
		},
	}
}
