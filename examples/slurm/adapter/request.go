package adapter

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/rst"
)

// launchReq is what Slurm is asked for to run one assignment.
type launchReq struct {
	slots  []*gpuSlot // the assignment's GPUs, in its order
	shards []int      // shards per slot (kind "shard")
	kind   string     // "gpu" (whole GPUs) or "shard"
	// nodes are the nodes the GPUs are on, in node-rank order (sinfo's,
	// which is slurm.conf's): rank 0's address is the ranks' meeting point.
	nodes []*nodeInfo
	cpus  int // the job's CPUs, the same number on each node
}

func (q *launchReq) nodeNames() []string {
	out := make([]string, len(q.nodes))
	for i, n := range q.nodes {
		out[i] = n.name
	}
	return out
}

// gres is the per-node GRES list (Slurm's --gres is per node: every node
// of a job gets the same; request checks that the plan asks for that).
func (q *launchReq) gres() string {
	var gs []Gres
	for i, s := range q.slots {
		switch {
		case s.Node != q.nodes[0].name:
		case q.kind == "shard":
			gs = append(gs, Gres{Name: "shard", Type: s.Type, Count: q.shards[i]})
		default:
			gs = append(gs, Gres{Name: "gpu", Type: s.Type, Count: 1})
		}
	}
	return FormatGres(gs)
}

func (q *launchReq) ordinals() []int {
	out := make([]int, len(q.slots))
	for i, s := range q.slots {
		out[i] = s.Ordinal
	}
	return out
}

// record sets the request's placement in r: its GPUs, nodes, GRES, CPUs.
func (q *launchReq) record(r *Record, gpus []string) {
	r.GPUs = slices.Clone(gpus)
	r.IDX = q.ordinals()
	r.Node = q.nodes[0].name
	r.Nodes = nil
	if len(q.nodes) > 1 {
		r.Nodes = q.nodeNames()
	}
	r.Kind = q.kind
	r.Gres = q.gres()
	r.CPUs = q.cpus
}

// request turns an assignment into what Slurm is asked for: the GPUs, the
// GRES kind (shard on GPUs that have shards, whole GPUs otherwise), the
// shards per GPU, the nodes and the CPUs. It returns why not when the
// request must not be released: a GPU unknown, of the other kind, unable to
// hold it now, on several nodes for a job that does not allow it, or a
// spread that Slurm cannot express (each node of a job gets the same GRES).
// keepKind, if set, is the kind the job already has. A reconfiguration
// takes the job's own holdings off inv before it asks.
func (a *Adapter) request(gpus []string, p *elastico.Profile, spread bool, inv *inventory, keepKind *string) (*launchReq, string) {
	if len(gpus) == 0 || len(gpus) != p.Demand.GPUs {
		return nil, fmt.Sprintf("assignment has %d GPUs, configuration %s needs %d", len(gpus), p.Config.ID, p.Demand.GPUs)
	}
	q := &launchReq{slots: make([]*gpuSlot, len(gpus)), shards: make([]int, len(gpus))}
	onNode := map[string][]*gpuSlot{}
	sharded := 0
	for i, g := range gpus {
		s := inv.gpus[g]
		if s == nil {
			return nil, fmt.Sprintf("GPU %s is not a GPU Slurm reports", g)
		}
		if slices.Contains(q.slots[:i], s) {
			return nil, "GPU " + g + " is listed twice"
		}
		q.slots[i] = s
		onNode[s.Node] = append(onNode[s.Node], s)
		if s.Shards > 0 {
			sharded++
		}
	}
	for _, n := range inv.nodes {
		if onNode[n.name] != nil {
			q.nodes = append(q.nodes, n)
		}
	}
	if len(q.nodes) != len(onNode) {
		return nil, "a GPU's node is not in sinfo"
	}
	if len(q.nodes) > 1 && !spread {
		return nil, "the GPUs span nodes " + strings.Join(q.nodeNames(), ", ") + " and the job does not allow spread (the flag spread in its comment's header)"
	}
	q.kind = "gpu"
	switch {
	case keepKind != nil:
		q.kind = *keepKind
	case sharded == len(q.slots):
		q.kind = "shard"
	case sharded > 0:
		return nil, "the GPUs mix shared and unshared ones (one Slurm job cannot hold both gpu and shard)"
	}
	for i, s := range q.slots {
		if q.kind == "shard" {
			if s.Shards == 0 {
				return nil, "GPU " + s.ID + " has no shards"
			}
			// floor: the shards of the jobs the plan puts on one GPU then
			// add up to at most its count whenever their SM shares add up
			// to at most 1.
			q.shards[i] = min(s.Shards, max(1, int(math.Floor(p.Demand.SM*float64(s.Shards)+1e-9))))
		}
		if ok, why := s.fits(q.kind, q.shards[i]); !ok {
			return nil, why
		}
		if !s.usable && !s.ours {
			return nil, "node " + s.Node + " takes no new jobs"
		}
	}
	// Slurm's GRES request is per node: a job on several nodes gets the
	// same GPU types (device indices) and shard counts on each.
	per := func(n *nodeInfo) string {
		var parts []string
		for i, s := range q.slots {
			if s.Node == n.name {
				parts = append(parts, s.Type+":"+strconv.Itoa(q.shards[i]))
			}
		}
		slices.SortFunc(parts, naturalCompare)
		return strings.Join(parts, ",")
	}
	first := per(q.nodes[0])
	for _, n := range q.nodes[1:] {
		if got := per(n); got != first {
			return nil, fmt.Sprintf("Slurm gives every node of a job the same GRES, and the plan asks for different ones: %s on %s, %s on %s",
				describe(first, q.kind), q.nodes[0].name, describe(got, q.kind), n.name)
		}
	}
	perNode := len(gpus) / len(q.nodes)
	need := cpusFor(p, perNode)
	each := ""
	if len(q.nodes) > 1 {
		each = " per node"
	}
	for _, n := range q.nodes {
		if free := n.cpus - n.ours; float64(need) > free+1e-9 {
			return nil, fmt.Sprintf("configuration %s needs %d CPUs%s, node %s has %g free", p.Config.ID, need, each, n.name, math.Max(free, 0))
		}
	}
	q.cpus = need * len(q.nodes)
	return q, ""
}

// describe writes one node's part of a request ("gpu0:2,gpu1:2") for a log
// line: the types, and the shard counts on shards.
func describe(per, kind string) string {
	if kind == "shard" {
		return "shards " + per
	}
	var types []string
	for _, p := range strings.Split(per, ",") {
		t, _, _ := strings.Cut(p, ":")
		types = append(types, t)
	}
	return strings.Join(types, ",")
}

// cpusFor is the CPUs Slurm allocates on each node to a configuration
// with gpus GPUs there.
func cpusFor(p *elastico.Profile, gpus int) int {
	return max(1, int(math.Ceil(p.Demand.CPU*float64(gpus)-1e-9)))
}

// masterPort is the port a multi-node job's rank 0 listens on: fixed per
// job, below Linux's ephemeral ports (32768 up), distinct for jobs whose
// IDs are less than 20,000 apart.
func masterPort(job int) int { return 10000 + job%20000 }

// env sets one run's environment in r (Env, and NodeEnv on several nodes):
// the plan's launch parameters, with the memory fraction and MPS limits
// computed for each node's GPUs as the job sees them there (Slurm sets
// CUDA_VISIBLE_DEVICES, so device 0 is the job's first GPU on the node),
// and MPS limits always set on shards: a neighbour may join the GPU later
// without restarting this job. Each node learns its rank among the job's
// nodes and where rank 0 listens.
func (a *Adapter) env(r *Record, j *elastico.Job, p *elastico.Profile, base elastico.LaunchParams, q *launchReq) {
	shared := "0"
	if r.Kind == "shard" {
		shared = "1"
	}
	full := make([][]string, len(q.nodes))
	rankBase := 0
	for k, n := range q.nodes {
		var slots []*gpuSlot
		var ids []string
		for i, s := range q.slots {
			if s.Node == n.name {
				slots = append(slots, s)
				ids = append(ids, r.GPUs[i])
			}
		}
		byOrdinal := slices.Clone(slots)
		slices.SortFunc(byOrdinal, func(x, y *gpuSlot) int { return x.Ordinal - y.Ordinal })
		lg := make([]rst.LaunchGPU, len(slots))
		for i, s := range slots {
			lg[i] = rst.LaunchGPU{Index: slices.Index(byOrdinal, s), Memory: s.Memory, Shared: r.Kind == "shard"}
		}
		own := rst.Launch(j, p, lg)
		l := base
		if l == (elastico.LaunchParams{}) {
			l = own
		}
		l.MemoryFraction = own.MemoryFraction
		l.MPSPinnedMemLimit = own.MPSPinnedMemLimit
		l.MPSActiveThreadPercentage = own.MPSActiveThreadPercentage
		env := append(l.Env(),
			"ELASTICO_CONFIG="+p.Config.ID,
			"ELASTICO_GENERATION="+strconv.Itoa(r.Gen),
			"ELASTICO_GPUS="+strings.Join(r.GPUs, ","),
			"ELASTICO_PROGRESS_FILE="+progressFile(a.cfg.ProgressDir, r.SlurmID),
			"ELASTICO_SHARED="+shared,
			"ELASTICO_SLURM_GRES="+r.Gres,
			"ELASTICO_NODES="+strings.Join(q.nodeNames(), ","),
			"ELASTICO_NNODES="+strconv.Itoa(len(q.nodes)),
			"ELASTICO_NODE_RANK="+strconv.Itoa(k),
			"ELASTICO_NODE_GPUS="+strings.Join(ids, ","),
			"ELASTICO_WORLD_SIZE="+strconv.Itoa(len(r.GPUs)),
			"ELASTICO_LOCAL_WORLD_SIZE="+strconv.Itoa(len(ids)),
			"ELASTICO_RANK_BASE="+strconv.Itoa(rankBase),
			"ELASTICO_MASTER_ADDR="+q.nodes[0].addr,
			"ELASTICO_MASTER_PORT="+strconv.Itoa(masterPort(r.SlurmID)),
		)
		rankBase += len(ids)
		slices.Sort(env)
		full[k] = env
	}
	if len(full) == 1 {
		r.Env, r.NodeEnv = full[0], nil
		return
	}
	// What every node shares is written once in the journal; each node's
	// file gets it and its own part.
	r.Env = nil
	for _, kv := range full[0] {
		all := true
		for _, e := range full[1:] {
			all = all && slices.Contains(e, kv)
		}
		if all {
			r.Env = append(r.Env, kv)
		}
	}
	r.NodeEnv = make([][]string, len(full))
	for k, e := range full {
		for _, kv := range e {
			if !slices.Contains(r.Env, kv) {
				r.NodeEnv[k] = append(r.NodeEnv[k], kv)
			}
		}
	}
}
