package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/rst"
)

// Part is one GPU model of a mixed cluster: its ground truth and how many
// GPUs of it the cluster has.
type Part struct {
	Truth *Truth
	GPUs  int
	// Nodes, when set, are the part's servers as a node list gives them
	// (OpenBMix), GPUs of them all; nil: GPUs in Truth.GPU's servers.
	Nodes []elastico.Node
}

// Mix is a cluster of several GPU models, each with its own ground truth
// (Gavel's own simulated cluster had 36 V100s, 36 P100s and 36 K80s:
// GavelMix("V100:36,P100:36,K80:36")). A job's family holds its
// configurations on every model, each profile naming its model and its
// configuration ID made unique by rst.ModelConfigID ("b64x1@K80"); the
// simulator runs a job at the throughput of the model it is placed on
// and, sharing a GPU, at the co-location speeds measured (or modelled) on
// that model only. The first part is the reference: a job's requested
// configuration, and so its dedicated time, are its.
type Mix []Part

// GavelMix builds a mix of Gavel's GPU models from "model:count" pairs
// joined by commas, e.g. "V100:36,P100:36,K80:36" (models V100, P100, K80,
// in any case, each at most once; the first is the reference). A spec without a colon
// names one type and no count, and is an error: a single-model cluster is
// GavelTruth's.
func GavelMix(spec string) (Mix, error) {
	var m Mix
	for _, part := range strings.Split(spec, ",") {
		typ, n, ok := strings.Cut(strings.TrimSpace(part), ":")
		count, err := strconv.Atoi(n)
		if !ok || err != nil || count < 1 {
			return nil, fmt.Errorf("sim: GPU mix %q: part %q: want model:count with a count ≥ 1, e.g. V100:36", spec, part)
		}
		t, err := GavelTruth(typ)
		if err != nil {
			return nil, fmt.Errorf("sim: GPU mix %q: %w", spec, err)
		}
		for _, p := range m {
			if p.Truth.GPU.Model == t.GPU.Model {
				return nil, fmt.Errorf("sim: GPU mix %q: %s twice", spec, t.GPU.Model)
			}
		}
		m = append(m, Part{Truth: t, GPUs: count})
	}
	return m, nil
}

// String returns the mix as "model:count" pairs, e.g. "V100:36,P100:36",
// which GavelMix reads back for Gavel's types.
func (m Mix) String() string {
	parts := make([]string, len(m))
	for i, p := range m {
		parts[i] = p.Truth.GPU.Model + ":" + strconv.Itoa(p.GPUs)
	}
	return strings.Join(parts, ",")
}

// GPUs returns the cluster's size, every model together.
func (m Mix) GPUs() int {
	n := 0
	for _, p := range m {
		n += p.GPUs
	}
	return n
}

// Truths returns each part's ground truth, in order (Config.Truths).
func (m Mix) Truths() []*Truth {
	out := make([]*Truth, len(m))
	for i, p := range m {
		out[i] = p.Truth
	}
	return out
}

// Cluster returns the mixed cluster: each part's servers
// (GPUSpec.Cluster), their node and GPU IDs prefixed by the model
// ("k80-node000", "k80-gpu0000") so that they stay unique.
func (m Mix) Cluster() (elastico.Cluster, error) {
	var c elastico.Cluster
	if len(m) == 0 {
		return c, fmt.Errorf("sim: empty GPU mix")
	}
	for _, p := range m {
		if p.Truth == nil {
			return c, fmt.Errorf("sim: GPU mix %v: a part has no ground truth", m)
		}
		if p.Nodes != nil {
			c.Nodes = append(c.Nodes, p.Nodes...)
			continue
		}
		part, err := p.Truth.GPU.Cluster(p.GPUs)
		if err != nil {
			return c, err
		}
		prefix := strings.ToLower(p.Truth.GPU.Model) + "-"
		for _, n := range part.Nodes {
			n.ID = prefix + n.ID
			for k := range n.GPUs {
				n.GPUs[k].ID = prefix + n.GPUs[k].ID
			}
			c.Nodes = append(c.Nodes, n)
		}
	}
	return c, nil
}

// Workload binds a trace to the mix: the reference's jobs
// (Truth.Workload, o.GPUs set to the mix's size), each with its
// configurations on every other model added after its own, from that
// model's ground truth (those above its GPUs' memory, or needing more GPUs
// than the model has, left out), and every configuration's ID suffixed
// with its model. A job whose trace names the models it may run on
// (TraceJob.Models) gets configurations on those only, its requested one
// on the first of them in the mix's order that has its GPU count (or, if
// none has, on the one with the most GPUs, capped; failing that, on any
// of them that has its configuration); one naming no model of the mix, or
// none that can run its family, is left out (WorkloadStats.NoModel). Profile noise, if any, is
// drawn for the added profiles from a stream of its own, so that the
// reference's stay as they are.
func (m Mix) Workload(tr *Trace, o WorkloadOptions) ([]Job, WorkloadStats, error) {
	if len(m) == 0 {
		return nil, WorkloadStats{}, fmt.Errorf("sim: workload: empty GPU mix")
	}
	o.GPUs = m.GPUs()
	rng := rand.New(rand.NewPCG(o.Seed, 0x5eed_52))
	var noise func() float64
	if o.ProfileNoise > 0 {
		noise = func() float64 { return math.Max(0.05, 1+o.ProfileNoise*rng.NormFloat64()) }
	}
	place := func(j *Job, tj TraceJob, st *WorkloadStats) (bool, error) {
		var parts []Part
		for _, p := range m {
			if len(tj.Models) == 0 || slices.Contains(tj.Models, p.Truth.GPU.Model) {
				parts = append(parts, p)
			}
		}
		if len(parts) == 0 {
			return false, nil
		}
		gpus := j.Requested().GPUs
		target := slices.IndexFunc(parts, func(p Part) bool { return p.GPUs >= gpus })
		if target < 0 {
			target = 0
			for i, p := range parts {
				if p.GPUs > parts[target].GPUs {
					target = i
				}
			}
		}
		if parts[target].Truth != m[0].Truth || gpus > parts[target].GPUs {
			// The target first, then the others: a model may lack the
			// configuration drawn (an inference family's, for its memory).
			order := []int{target}
			for i := range parts {
				if i != target {
					order = append(order, i)
				}
			}
			moved := false
			for _, i := range order {
				if nj, ok := m.rebind(tr, tj, *j, parts[i], o, rng); ok {
					if nj.Requested().GPUs < gpus {
						st.Capped++
					}
					*j, target, moved = nj, i, true
					break
				}
			}
			if !moved {
				return false, nil
			}
		}
		suffix(j, parts[target].Truth.GPU.Model)
		for i, p := range parts {
			if i != target {
				m.addConfigs(j, tj, p, noise)
			}
		}
		return true, nil
	}
	return m[0].Truth.workload(tr, o, place)
}

// rebind binds j again on part p: the same family, per-GPU batch and GPU
// count (capped at p's), the work from the trace (a duration runs at p's
// speed). False when p cannot run it.
func (m Mix) rebind(tr *Trace, tj TraceJob, j Job, p Part, o WorkloadOptions, rng *rand.Rand) (Job, bool) {
	req := j.Requested()
	if j.Class != tj.Class {
		// Turned into inference (InferenceFraction): keep its dedicated time.
		tj.Duration, tj.Steps, tj.Work = j.Dedicated, 0, 0
	}
	tj.Family, tj.Class, tj.ClassKnown = j.Family.Name, j.Class, true
	tj.Batch, tj.GlobalBatch, tj.GPUs = req.LocalBatch, 0, req.GPUs
	tj.KVCacheFrac, tj.MaxSeqs = req.KVCacheFrac, req.MaxSeqs
	o.GPUs = p.GPUs
	var st WorkloadStats
	moved, err := p.Truth.bind(tr, tj, o, rng, nil, nil, &st)
	if err != nil {
		return Job{}, false // p lacks the family's configuration, or its memory
	}
	moved.Arrival = j.Arrival
	return moved, true
}

// addConfigs adds to j its family's configurations on part p.
func (m Mix) addConfigs(j *Job, tj TraceJob, p Part, noise func() float64) {
	t := p.Truth
	f, ok := t.byName[j.Family.Name]
	if !ok {
		return // a family this model has no data for
	}
	share := tj.share()
	var cfgs []Variant
	for _, c := range f.Configs {
		if c.GPUs <= p.GPUs && c.Memory <= t.GPU.Memory && (share == 1 || c.GPUs == 1) {
			cfgs = append(cfgs, c.atShare(share))
		}
	}
	profs := t.Profiles(f, cfgs, noise)
	claimShare(profs, share)
	for k := range cfgs {
		cfgs[k].ID = rst.ModelConfigID(cfgs[k].ID, t.GPU.Model)
		profs[k].Config.ID = cfgs[k].ID
		profs[k].Family = j.Profiles[0].Family
	}
	j.Configs = append(j.Configs, cfgs...)
	j.Profiles = append(j.Profiles, profs...)
}

// suffix gives every configuration of j its model's ID.
func suffix(j *Job, model string) {
	for k := range j.Configs {
		j.Configs[k].ID = rst.ModelConfigID(j.Configs[k].ID, model)
		j.Profiles[k].Config.ID = j.Configs[k].ID
	}
}
