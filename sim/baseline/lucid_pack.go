package baseline

import "github.com/elastico/elastico"

// Lucid's Packing Analyze Model is a decision tree that gives every job a
// sharing score from its profiled GPU utilization and memory: 0 (light),
// 1 (medium), 2 (heavy). The boundaries below are the depth-two tree on
// utilization that fits the artifact's labelled profiles best
// (simulation/analyzer/single_data.csv: 53 of 66 right, about the accuracy
// of the artifact's own tree), with the profile's measured SM share
// standing in for nvidia-smi's utilization.
const (
	lucidMediumSM = 0.25 // SM share from which a job scores 1
	lucidHeavySM  = 0.60 // SM share from which a job scores 2
	// lucidMaxPairScore is the most two jobs' scores may sum to: heavy
	// jobs pair only with light ones (policy/lucid.py).
	lucidMaxPairScore = 2
	// lucidTimeAware bounds how much longer (estimated GPU-time) a job may
	// be than the partner it joins (job_pair_picker_time_aware).
	lucidTimeAware = 2
)

// shareScore returns Lucid's sharing score of a job using sm of each GPU.
func shareScore(sm float64) int {
	switch {
	case sm < lucidMediumSM:
		return 0
	case sm < lucidHeavySM:
		return 1
	}
	return 2
}

// partner returns the GPUs of the first job on the run list that job i,
// under p, may join as its affine pair, or nil. The pair rule is Lucid's:
// the partner runs alone on its GPUs and has as many as p asks for (the new
// job takes exactly the partner's GPUs), their sharing scores sum to at
// most 2, their memory fits every GPU, and job i's estimated GPU-time is
// at most twice the partner's; here also their SM shares sum to at most
// limit, the GPUs allow sharing and the nodes have the host resources. With
// Lucid.AnyModel the partner may run on any model, and job i joins it under
// the family's profile of p's configuration there (the profile returned).
func (l *Lucid) partner(v *view, pl *planner, runList []int, i int, req *elastico.Profile, prio []float64, limit float64) ([]int, *elastico.Profile) {
	st := v.st
	for _, k := range runList {
		gs := v.jobGPUs[k]
		if len(gs) != req.Demand.GPUs || prio[i] > lucidTimeAware*prio[k] {
			continue
		}
		p := req
		if l.AnyModel {
			if p = onModel(&st.Jobs[i], req, v.gpus[gs[0]].model); p == nil {
				continue
			}
		}
		q, ok := st.Jobs[k].Profile(pl.decisions[k].Assignment.ConfigID)
		if !ok || shareScore(p.Demand.SM)+shareScore(q.Demand.SM) > lucidMaxPairScore {
			continue
		}
		if p.Demand.SM+q.Demand.SM > limit+1e-9 {
			continue
		}
		fits := true
		perNode := map[int]int{}
		for _, g := range gs {
			x := &v.gpus[g]
			if len(x.jobs) != 1 || !x.shared || x.used+p.Demand.GPUMemory > x.mem+1e-9 || !p.RunsOn(x.model) {
				fits = false
				break
			}
			perNode[x.node]++
		}
		for n, c := range perNode {
			fits = fits && v.hostFits(n, p, c)
		}
		if fits {
			return append([]int(nil), gs...), p
		}
	}
	return nil, nil
}
