package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/elastico/elastico/sim"
)

// openbCluster builds the cluster of about gpus GPUs of the node list at
// path, and says what it kept and how each model is simulated.
func openbCluster(path string, gpus int) (sim.Mix, map[string]any, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	list, err := sim.ReadOpenBNodes(f, filepath.Base(path))
	if err != nil {
		return nil, nil, err
	}
	kept, every := list.Thin(gpus)
	mix, err := sim.OpenBMix(kept)
	if err != nil {
		return nil, nil, err
	}
	truths := map[string]string{}
	var parts []string
	for _, p := range mix {
		m := p.Truth.GPU.Model
		truths[m], _ = sim.OpenBGroundTruth(m)
		parts = append(parts, fmt.Sprintf("%s %d", m, p.GPUs))
	}
	info := map[string]any{
		"node_list": list.Name, "listed_gpus": list.GPUs(), "listed_nodes": len(list.Nodes), "cpu_only_nodes_skipped": list.Skipped,
		"every": every, "nodes": len(kept), "gpus": mix.GPUs(), "ground_truth": truths,
		"summary": fmt.Sprintf("node list %s: every %d. node of each model, %d of %d nodes: %s GPUs (reference %s)",
			list.Name, every, len(kept), len(list.Nodes), strings.Join(parts, ", "), mix[0].Truth.GPU.Model),
	}
	return mix, info, nil
}

// openbMeta records the node list and what the binding did with the pods'
// GPU models and shares.
func openbMeta(meta map[string]any, nodes map[string]any, out *sim.Outcome) {
	var frac, left []int
	for _, w := range out.Workloads {
		frac, left = append(frac, w.Fractional), append(left, w.NoModel)
	}
	nodes["fractional_jobs_per_seed"] = frac
	nodes["left_out_no_model_per_seed"] = left
	nodes["modelled"] = []string{
		"a pod runs only on the GPU models its gpu_spec names (all the cluster's when empty): its family has configurations on those only, the requested one on the first of them in the mix's order",
		"a pod asking for a share s of one GPU (gpu_milli < 1000) runs on one GPU and claims s of it; a configuration keeping more than s of the SMs busy alone runs at s/SM of its speed",
		"a pod's work is its run time (deletion − scheduled) at its requested configuration; LS pods are inference, the others training, each drawn a family of the ground truth",
		"the offered load counts a fractional pod's GPU whole",
	}
	nodes["not_modelled"] = []string{
		"the pods' cpu_milli and memory_mib (jobs take the ground truth's per-replica CPU and RAM)",
		"pod phases: a pod that failed or is still running ran deletion − scheduled seconds all the same",
	}
	meta["openb"] = nodes
}
