package adapter

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/elastico/elastico"
)

// gpuSlot is one GPU as Slurm knows it: a typed gpu GRES of count 1 on a
// node, with the shards of the same type if there are any.
type gpuSlot struct {
	ID     string // "node1/gpu3": the node and the GRES type
	Node   string
	Type   string
	Shards int // shards of this GPU; 0: not shared
	// Model and Memory (GiB) are the GPU's model, from its node's
	// features, and its memory (see Config.GPUModels).
	Model  string
	Memory float64
	// Ordinal is the GPU's rank among its node's GPUs in the natural order
	// of their types (gpu2 before gpu10), which the site's gres.conf keeps
	// equal to the device order.
	Ordinal int

	// What Slurm holds on it now (or is about to): whole-GPU holders and
	// shards in use, by anyone.
	whole  int
	used   int
	ours   bool // one of the adapter's jobs holds it
	usable bool // on a node that takes new jobs
}

// inventory is the cluster as the adapter sees it in one tick.
type inventory struct {
	gpus  map[string]*gpuSlot
	nodes []*nodeInfo
}

type nodeInfo struct {
	name   string
	addr   string // NodeAddr, else the name
	usable bool
	// registering: slurmctld restarted and slurmd has not registered the
	// node's GRES layout again ("shard:0" in place of the typed shards).
	registering bool
	cpus        float64 // less what foreign jobs hold
	ram         float64
	gpus        []*gpuSlot
	// ours is the CPUs the adapter's own jobs hold (or are about to).
	ours float64
}

// node returns the node named name, or nil.
func (inv *inventory) node(name string) *nodeInfo {
	for _, n := range inv.nodes {
		if n.name == name {
			return n
		}
	}
	return nil
}

// gpuModels says which GPU model a node has, and how much memory its GPUs
// have (Config.GPUModels, GPUModel, GPUModelMemory and GPUMemory).
type gpuModels struct {
	features map[string]string  // nil: the gpu_<model> rule
	fallback string             // a node whose features name no model
	memory   map[string]float64 // by model
	defMem   float64
}

// of returns the model of a node's GPUs and their memory in GiB. A node
// whose features name two models, or do not parse, is an error; the memory
// is then defMem, and the model "".
func (m *gpuModels) of(n *Node) (string, float64, error) {
	if n.Features.Bad != "" {
		return "", m.defMem, fmt.Errorf("features is %s, want a string or a list of strings: its GPU model is unknown", n.Features.Bad)
	}
	model, from := "", ""
	for _, f := range n.Features.Names {
		name, ok := m.features[f]
		if m.features == nil {
			name, ok = FeatureModel(f)
		}
		if !ok || name == model {
			continue
		}
		if model != "" {
			return "", m.defMem, fmt.Errorf("features %s and %s name two GPU models (%s, %s): give each node one", from, f, model, name)
		}
		model, from = name, f
	}
	if model == "" {
		model = m.fallback
	}
	mem, ok := m.memory[model]
	if !ok {
		mem = m.defMem
	}
	return model, mem, nil
}

// FeatureModel is the rule by which, without Config.GPUModels, a node
// feature names a GPU model: "gpu_" (any case) followed by a name that
// starts with a letter, holds a digit, and has only letters, digits and
// '-', upper-cased: gpu_v100 → V100, gpu_a100 → A100, gpu_t4 → T4,
// GPU_H100 → H100, gpu_rtx-a6000 → RTX-A6000. Other features (gpu_nvlink,
// gpu_32gb, gpu_mem_32g, ib) name none.
func FeatureModel(feature string) (string, bool) {
	if len(feature) < 5 || !strings.EqualFold(feature[:4], "gpu_") {
		return "", false
	}
	rest, digit := feature[4:], false
	for k, r := range rest {
		letter := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
		isDigit := r >= '0' && r <= '9'
		if k == 0 && !letter || !letter && !isDigit && r != '-' {
			return "", false
		}
		digit = digit || isDigit
	}
	if !digit {
		return "", false
	}
	return strings.ToUpper(rest), true
}

// buildInventory reads the nodes' GRES and features. A node whose GPUs are
// not each typed on their own (Name=gpu Type=gpuN, one File each) cannot be
// placed on GPU by GPU: it is left out, with the reason in notes. A node
// whose GPU model is in doubt takes no new job (the adapter's jobs there
// keep their GPUs, of model ""), with the reason in notes.
func buildInventory(nodes []Node, models *gpuModels) (*inventory, []string) {
	inv := &inventory{gpus: map[string]*gpuSlot{}}
	var notes []string
	for i := range nodes {
		n := &nodes[i]
		gs, err := ParseGres(n.Gres)
		if err != nil {
			notes = append(notes, fmt.Sprintf("node %s: %v", n.Name, err))
			continue
		}
		model, mem, modelErr := models.of(n)
		if modelErr != nil && hasGPU(gs) {
			notes = append(notes, fmt.Sprintf("node %s: %v; no new job goes there", n.Name, modelErr))
		}
		addr := n.Address
		if addr == "" {
			addr = n.Name
		}
		ni := &nodeInfo{name: n.Name, addr: addr, usable: n.Usable() && modelErr == nil, cpus: float64(n.CPUs), ram: float64(n.RealMemory) / 1024}
		shards := map[string]int{}
		untypedShards := false
		ok := true
		for _, g := range gs {
			if g.Name == "shard" && g.Type == "" && g.Count == 0 {
				ni.registering, ni.usable = true, false
				continue
			}
			switch g.Name {
			case "gpu":
				if g.Type == "" || g.Count != 1 {
					notes = append(notes, fmt.Sprintf("node %s: GRES %s is not one typed GPU: elastico needs Name=gpu Type=gpuN File=/dev/nvidiaN per GPU to place jobs GPU by GPU; node left out", n.Name, g))
					ok = false
				}
			case "shard":
				if g.Type == "" {
					untypedShards = true
				} else {
					shards[g.Type] += g.Count
				}
			}
		}
		if !ok {
			continue
		}
		if untypedShards && !ni.registering {
			notes = append(notes, fmt.Sprintf("node %s: shards are not typed per GPU (Name=shard Type=gpuN Count=K File=/dev/nvidiaN): its GPUs are used whole only", n.Name))
			shards = map[string]int{}
		}
		for _, g := range gs {
			if g.Name != "gpu" {
				continue
			}
			s := &gpuSlot{ID: n.Name + "/" + g.Type, Node: n.Name, Type: g.Type, Shards: shards[g.Type], Model: model, Memory: mem, usable: ni.usable}
			if inv.gpus[s.ID] != nil {
				notes = append(notes, fmt.Sprintf("node %s: GPU type %s is listed twice", n.Name, g.Type))
				continue
			}
			inv.gpus[s.ID] = s
			ni.gpus = append(ni.gpus, s)
		}
		slices.SortFunc(ni.gpus, func(a, b *gpuSlot) int { return naturalCompare(a.Type, b.Type) })
		for k, s := range ni.gpus {
			s.Ordinal = k
		}
		inv.nodes = append(inv.nodes, ni)
	}
	return inv, notes
}

// hold records that a job holds GRES on a node (from its tres_per_node or
// gres_detail). Untyped entries (a foreign "gpu:1") name no GPU: they are
// skipped here; gres_detail, which names the types, covers running jobs.
func (inv *inventory) hold(node string, gs []Gres, ours bool) {
	for _, g := range gs {
		if g.Count == 0 || g.Type == "" {
			continue
		}
		s := inv.gpus[node+"/"+g.Type]
		if s == nil {
			continue
		}
		switch g.Name {
		case "gpu":
			s.whole++
		case "shard":
			s.used += g.Count
		default:
			continue
		}
		s.ours = s.ours || ours
	}
}

// widest is the most GPUs a node has.
func (inv *inventory) widest() int {
	n := 0
	for _, ni := range inv.nodes {
		n = max(n, len(ni.gpus))
	}
	return n
}

// holdRecord records (sign 1) or takes back (sign -1) what one of the
// adapter's jobs holds by its record: its GRES on each of its nodes and
// its CPUs, split evenly over them.
func (inv *inventory) holdRecord(r *Record, sign int) {
	gs, _ := ParseGres(r.Gres)
	nodes := r.nodes()
	for _, node := range nodes {
		if sign > 0 {
			inv.hold(node, gs, true)
		} else {
			for _, g := range gs {
				if s := inv.gpus[node+"/"+g.Type]; s != nil && g.Name == "shard" {
					s.used -= g.Count
				} else if s != nil && g.Name == "gpu" {
					s.whole--
				}
			}
		}
		if n := inv.node(node); n != nil {
			n.ours += float64(sign*r.CPUs) / float64(len(nodes))
		}
	}
}

// holdForeign records a job the adapter does not manage: its GPUs (from
// gres_detail, one entry per node) and its CPUs.
func (inv *inventory) holdForeign(j *Job) {
	hosts := expandHostlist(j.Nodes)
	for k, d := range j.GresDetail {
		if k >= len(hosts) {
			break
		}
		gs, err := ParseGres(d)
		if err != nil {
			continue
		}
		inv.hold(hosts[k], gs, false)
	}
	if len(hosts) == 0 {
		return
	}
	per := float64(j.CPUs) / float64(len(hosts))
	for _, h := range hosts {
		for _, n := range inv.nodes {
			if n.name == h {
				n.cpus = max(0, n.cpus-per)
			}
		}
	}
}

// reserveForeign records a foreign job that waits, released, for GPUs it
// named by type: Slurm will start it there, so the adapter must not
// promise those GPUs to its own jobs. Without a node list, every node with
// such a GPU is held back.
func (inv *inventory) reserveForeign(j *Job) {
	gs, err := ParseGres(j.TresPerNode)
	if err != nil {
		return
	}
	hosts := expandHostlist(j.ReqNodes)
	if len(hosts) == 0 {
		for _, n := range inv.nodes {
			hosts = append(hosts, n.name)
		}
	}
	for _, h := range hosts {
		inv.hold(h, gs, false)
	}
}

// fits reports whether a GPU can take one more holder of the given kind
// now, and if not, why.
func (s *gpuSlot) fits(kind string, shards int) (bool, string) {
	switch {
	case s.whole > 0:
		return false, fmt.Sprintf("%s is held whole", s.ID)
	case kind == "gpu" && s.used > 0:
		return false, fmt.Sprintf("%s has %d shards in use", s.ID, s.used)
	case kind == "shard" && s.used+shards > s.Shards:
		return false, fmt.Sprintf("%s has %d of %d shards in use, %d more asked", s.ID, s.used, s.Shards, shards)
	}
	return true, ""
}

// cluster returns the elastico.Cluster to plan on: the usable nodes' GPUs
// that no foreign job holds, plus any GPU one of the adapter's jobs holds
// (so that its running jobs stay valid even on a draining node).
func (inv *inventory) cluster() elastico.Cluster {
	var c elastico.Cluster
	for _, n := range inv.nodes {
		en := elastico.Node{ID: n.name, CPU: n.cpus, RAM: n.ram}
		for _, s := range n.gpus {
			foreign := (s.whole > 0 || s.used > 0) && !s.ours
			if !s.ours && (!s.usable || foreign) {
				continue
			}
			en.GPUs = append(en.GPUs, elastico.GPU{ID: s.ID, Model: s.Model, Memory: s.Memory, Shared: s.Shards > 0})
		}
		if len(en.GPUs) > 0 {
			c.Nodes = append(c.Nodes, en)
		}
	}
	return c
}

// hasGPU reports whether a GRES list has a gpu entry.
func hasGPU(gs []Gres) bool {
	return slices.ContainsFunc(gs, func(g Gres) bool { return g.Name == "gpu" })
}

// naturalCompare orders "gpu2" before "gpu10".
func naturalCompare(a, b string) int {
	for a != "" && b != "" {
		da, db := digits(a), digits(b)
		if da > 0 && db > 0 {
			na, _ := strconv.Atoi(a[:da])
			nb, _ := strconv.Atoi(b[:db])
			if na != nb {
				return na - nb
			}
			a, b = a[da:], b[db:]
			continue
		}
		if a[0] != b[0] {
			return int(a[0]) - int(b[0])
		}
		a, b = a[1:], b[1:]
	}
	return len(a) - len(b)
}

func digits(s string) int {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	return n
}

// expandHostlist expands Slurm's compressed host lists: "node[1-3,5],gpu-a"
// → node1 node2 node3 node5 gpu-a. Zero padding is kept ("n[01-02]").
func expandHostlist(s string) []string {
	var out []string
	for _, item := range splitTop(strings.NewReplacer("[", "(", "]", ")").Replace(s)) {
		item = strings.TrimSpace(item)
		if item == "" || item == "(null)" {
			continue
		}
		open := strings.IndexByte(item, '(')
		if open < 0 || !strings.HasSuffix(item, ")") {
			out = append(out, item)
			continue
		}
		prefix, body := item[:open], item[open+1:len(item)-1]
		for _, r := range strings.Split(body, ",") {
			lo, hi, isRange := strings.Cut(r, "-")
			if !isRange {
				out = append(out, prefix+lo)
				continue
			}
			a, err1 := strconv.Atoi(lo)
			b, err2 := strconv.Atoi(hi)
			if err1 != nil || err2 != nil || b < a || b-a > 100000 {
				out = append(out, prefix+r)
				continue
			}
			for k := a; k <= b; k++ {
				out = append(out, fmt.Sprintf("%s%0*d", prefix, len(lo), k))
			}
		}
	}
	return out
}
