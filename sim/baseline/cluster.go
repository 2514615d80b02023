package baseline

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"slices"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/rst"
)

// view is one epoch's picture of the cluster: every GPU with what the
// running jobs hold on it, and every node's host resources.
type view struct {
	st    *elastico.State
	gpus  []gpu
	idx   map[string]int
	nodes []node
	// jobGPUs[i] are the GPU indices job i holds now (nil when waiting).
	jobGPUs [][]int
}

type gpu struct {
	id       string
	node     int
	local    int     // index among its node's GPUs (the device index)
	mem      float64 // capacity, GiB
	model    string  // GPU.Model: a profile runs only on its own (Profile.RunsOn)
	shared   bool
	sm, used float64 // SM share and memory held
	jobs     []int   // indices into st.Jobs
}

type node struct {
	cpu, ram         float64 // capacity
	usedCPU, usedRAM float64
	gpus             []int
}

// newView builds the view. It checks what the baselines rely on (every
// job has a family, a running job's configuration and GPUs exist) rather
// than calling State.Validate, whose full check of every profile costs more
// than the policies themselves at trace scale.
func newView(st *elastico.State) (*view, error) {
	if st == nil {
		return nil, errorf("nil State")
	}
	v := &view{st: st, idx: make(map[string]int, st.Cluster.NumGPUs())}
	for n := range st.Cluster.Nodes {
		nd := &st.Cluster.Nodes[n]
		v.nodes = append(v.nodes, node{cpu: nd.CPU, ram: nd.RAM})
		for k, g := range nd.GPUs {
			v.idx[g.ID] = len(v.gpus)
			v.nodes[n].gpus = append(v.nodes[n].gpus, len(v.gpus))
			v.gpus = append(v.gpus, gpu{id: g.ID, node: n, local: k, mem: g.Memory, model: g.Model, shared: g.Shared})
		}
	}
	v.jobGPUs = make([][]int, len(st.Jobs))
	for i := range st.Jobs {
		j := &st.Jobs[i]
		if len(j.Profiles) == 0 {
			return nil, errorf("job %q: empty family", j.ID)
		}
		if j.Running == nil {
			continue
		}
		p, ok := j.Profile(j.Running.ConfigID)
		if !ok {
			return nil, errorf("job %q: running configuration %q is not in its family", j.ID, j.Running.ConfigID)
		}
		if len(j.Running.GPUs) != p.Demand.GPUs {
			return nil, errorf("job %q: runs on %d GPUs, configuration %q needs %d", j.ID, len(j.Running.GPUs), p.Config.ID, p.Demand.GPUs)
		}
		gs := make([]int, len(j.Running.GPUs))
		for k, id := range j.Running.GPUs {
			g, ok := v.idx[id]
			if !ok {
				return nil, errorf("job %q: GPU %q is not in the cluster", j.ID, id)
			}
			gs[k] = g
		}
		v.hold(i, p, gs)
	}
	return v, nil
}

// hold records job i holding gs under profile p.
func (v *view) hold(i int, p *elastico.Profile, gs []int) {
	v.jobGPUs[i] = gs
	for _, g := range gs {
		x := &v.gpus[g]
		x.sm += p.Demand.SM
		x.used += p.Demand.GPUMemory
		x.jobs = append(x.jobs, i)
		v.nodes[x.node].usedCPU += p.Demand.CPU
		v.nodes[x.node].usedRAM += p.Demand.RAM
	}
}

// release undoes hold.
func (v *view) release(i int) {
	j := &v.st.Jobs[i]
	gs := v.jobGPUs[i]
	if gs == nil {
		return
	}
	p, _ := j.Profile(j.Running.ConfigID)
	for _, g := range gs {
		x := &v.gpus[g]
		x.sm -= p.Demand.SM
		x.used -= p.Demand.GPUMemory
		x.jobs = slices.DeleteFunc(x.jobs, func(k int) bool { return k == i })
		v.nodes[x.node].usedCPU -= p.Demand.CPU
		v.nodes[x.node].usedRAM -= p.Demand.RAM
	}
	v.jobGPUs[i] = nil
}

// hostFits reports whether node n has the host resources for k replicas.
func (v *view) hostFits(n int, p *elastico.Profile, k int) bool {
	nd := &v.nodes[n]
	return nd.usedCPU+float64(k)*p.Demand.CPU <= nd.cpu+1e-9 && nd.usedRAM+float64(k)*p.Demand.RAM <= nd.ram+1e-9
}

// placeGang picks p.Demand.GPUs GPUs of p's model that ok accepts: on one node if any
// node can hold the whole gang (the node with the fewest acceptable GPUs
// that suffices: best fit), else over several nodes, fullest-acceptable
// nodes first. It returns nil when no set exists. rank orders acceptable
// GPUs within a node (lower first).
func (v *view) placeGang(p *elastico.Profile, ok func(g int) bool, rank func(g int) float64) []int {
	n := p.Demand.GPUs
	type cand struct {
		node int
		gs   []int
	}
	var cands []cand
	total := 0
	for k := range v.nodes {
		var gs []int
		for _, g := range v.nodes[k].gpus {
			if ok(g) && p.RunsOn(v.gpus[g].model) {
				gs = append(gs, g)
			}
		}
		// host resources bound the replicas this node can take
		for len(gs) > 0 && !v.hostFits(k, p, len(gs)) {
			gs = gs[:len(gs)-1]
		}
		if len(gs) == 0 {
			continue
		}
		if rank != nil {
			slices.SortStableFunc(gs, func(a, b int) int { return cmp.Compare(rank(a), rank(b)) })
		}
		cands = append(cands, cand{k, gs})
		total += len(gs)
	}
	if total < n {
		return nil
	}
	best := -1
	for i, c := range cands {
		if len(c.gs) >= n && (best < 0 || len(c.gs) < len(cands[best].gs)) {
			best = i
		}
	}
	if best >= 0 {
		return slices.Clone(cands[best].gs[:n])
	}
	slices.SortStableFunc(cands, func(a, b cand) int { return cmp.Compare(len(b.gs), len(a.gs)) })
	var out []int
	for _, c := range cands {
		take := min(n-len(out), len(c.gs))
		out = append(out, c.gs[:take]...)
		if len(out) == n {
			break
		}
	}
	return out
}

// free reports whether GPU g holds no job.
func (v *view) free(g int) bool { return len(v.gpus[g].jobs) == 0 }

// wholeGPUs returns free GPUs of one node with room for p's gang, or nil:
// whole GPUs, as Volcano and Tiresias give them and Lucid tries first.
func (v *view) wholeGPUs(p *elastico.Profile) []int {
	return v.placeGang(p, func(g int) bool { return v.free(g) && v.gpus[g].mem >= p.Demand.GPUMemory }, nil)
}

// planner accumulates the decisions of one epoch and turns them into a Plan.
type planner struct {
	v         *view
	decisions []elastico.Decision
}

func newPlanner(v *view) *planner {
	pl := &planner{v: v, decisions: make([]elastico.Decision, len(v.st.Jobs))}
	for i := range v.st.Jobs {
		j := &v.st.Jobs[i]
		pl.decisions[i] = elastico.Decision{JobID: j.ID, Slowdown: 1}
		if j.Running != nil {
			pl.decisions[i].Assignment = j.Running
		} else {
			pl.decisions[i].Status = elastico.Status{Code: elastico.Unplaceable, Reasons: []string{"waiting for free GPUs"}}
		}
	}
	return pl
}

// assign places job i under profile index c on gs (and records the hold).
func (pl *planner) assign(i int, p *elastico.Profile, gs []int) {
	ids := make([]string, len(gs))
	for k, g := range gs {
		ids[k] = pl.v.gpus[g].id
	}
	pl.v.hold(i, p, gs)
	pl.decisions[i].Assignment = &elastico.Assignment{ConfigID: p.Config.ID, GPUs: ids}
	pl.decisions[i].Status = elastico.Status{}
}

// wait leaves job i waiting (preempting it if it runs) with a reason.
// startWhole starts job i under p on whole GPUs, or leaves it waiting.
func (pl *planner) startWhole(i int, p *elastico.Profile) {
	gs := pl.v.wholeGPUs(p)
	if gs == nil {
		pl.wait(i, elastico.Unplaceable, fmt.Sprintf("gang of %d whole GPUs does not fit the free GPUs", p.Demand.GPUs))
		return
	}
	pl.assign(i, p, gs)
}

func (pl *planner) wait(i int, code elastico.Code, reason string) {
	if pl.v.st.Jobs[i].Running != nil {
		pl.v.release(i)
		code = elastico.Preempted
	}
	pl.decisions[i].Assignment = nil
	pl.decisions[i].Status = elastico.Status{Code: code, Reasons: []string{reason}}
}

// plan builds the Plan: actions in the order preemptions, migrations and
// reconfigurations, starts; each start or restart with launch parameters.
func (pl *planner) plan() *elastico.Plan {
	st := pl.v.st
	out := &elastico.Plan{Decisions: pl.decisions, Carry: st.Carry}
	var pre, mid, starts []elastico.Action
	for i, d := range pl.decisions {
		j := &st.Jobs[i]
		from, to := j.Running, d.Assignment
		switch {
		case from == nil && to == nil:
		case from == nil:
			starts = append(starts, elastico.Action{Kind: elastico.Start, JobID: j.ID, To: to, Launch: pl.launch(j, to)})
		case to == nil:
			pre = append(pre, elastico.Action{Kind: elastico.Preempt, JobID: j.ID, From: from})
		case sameGPUs(from.GPUs, to.GPUs):
			if from.ConfigID != to.ConfigID {
				mid = append(mid, elastico.Action{Kind: elastico.Reconfigure, JobID: j.ID, From: from, To: to, Launch: pl.launch(j, to)})
			}
		case subset(from.GPUs, to.GPUs) || subset(to.GPUs, from.GPUs):
			// No replica goes to a GPU it was not on: a restart in place,
			// growing or shrinking (Pollux's reshapes).
			mid = append(mid, elastico.Action{Kind: elastico.Reconfigure, JobID: j.ID, From: from, To: to, Launch: pl.launch(j, to)})
		default:
			mid = append(mid, elastico.Action{Kind: elastico.Migrate, JobID: j.ID, From: from, To: to, Launch: pl.launch(j, to)})
		}
	}
	out.Actions = append(append(pre, mid...), starts...)
	return out
}

func (pl *planner) launch(j *elastico.Job, a *elastico.Assignment) elastico.LaunchParams {
	p, _ := j.Profile(a.ConfigID)
	gs := make([]rst.LaunchGPU, len(a.GPUs))
	for k, id := range a.GPUs {
		g := pl.v.idx[id]
		gs[k] = rst.LaunchGPU{Index: pl.v.gpus[g].local, Memory: pl.v.gpus[g].mem, Shared: len(pl.v.gpus[g].jobs) > 1}
	}
	return rst.Launch(j, p, gs)
}

func sameGPUs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	x, y := slices.Clone(a), slices.Clone(b)
	slices.Sort(x)
	slices.Sort(y)
	return slices.Equal(x, y)
}

// subset reports whether every GPU of a is in b.
func subset(a, b []string) bool {
	for _, g := range a {
		if !slices.Contains(b, g) {
			return false
		}
	}
	return true
}

// requested returns the job's requested configuration: by the simulator's
// convention, the first profile of its family.
func requested(j *elastico.Job) *elastico.Profile { return &j.Profiles[0] }

// fifo returns job indices by arrival, ties by ID.
func fifo(st *elastico.State) []int {
	order := make([]int, len(st.Jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		ja, jb := &st.Jobs[a], &st.Jobs[b]
		if c := ja.Arrival.Compare(jb.Arrival); c != 0 {
			return c
		}
		return cmp.Compare(ja.ID, jb.ID)
	})
	return order
}

func errorf(format string, args ...any) error { return fmt.Errorf("baseline: "+format, args...) }

// onModel returns the profile of j's family with p's configuration on GPU
// model m (p itself when p runs there), or nil: in a mixed cluster a job
// keeps its configuration and takes the profile of the model it lands on.
func onModel(j *elastico.Job, p *elastico.Profile, m string) *elastico.Profile {
	if p.RunsOn(m) {
		return p
	}
	for k := range j.Profiles {
		q := &j.Profiles[k]
		if q.Hardware.GPUModel == m && q.Family == p.Family && sameConfig(q.Config, p.Config) {
			return q
		}
	}
	return nil
}

// sameConfig compares two configurations' knobs, not their IDs (which
// name the model).
func sameConfig(a, b elastico.Configuration) bool {
	a.ID, b.ID = "", ""
	return a == b
}

// models returns the cluster's GPU models in the order they first appear,
// and how many GPUs each has.
func (v *view) models() ([]string, []int) {
	var ms []string
	var n []int
	for _, g := range v.gpus {
		k := slices.Index(ms, g.model)
		if k < 0 {
			k = len(ms)
			ms, n = append(ms, g.model), append(n, 0)
		}
		n[k]++
	}
	return ms, n
}

// anyModelWhole returns free whole GPUs of any one model for j's gang
// under p's configuration, and the family's profile of that configuration
// on that model, or nil: heterogeneity-agnostic. The models are tried in
// an order that a hash of the job's ID rotates (Gavel shuffles the GPU
// types for its agnostic policies; the hash keeps the order the same from
// one epoch to the next).
func (v *view) anyModelWhole(j *elastico.Job, p *elastico.Profile) (*elastico.Profile, []int) {
	ms, _ := v.models()
	h := fnv.New32a()
	h.Write([]byte(j.ID))
	off := int(h.Sum32() % uint32(max(len(ms), 1)))
	for k := range ms {
		q := onModel(j, p, ms[(off+k)%len(ms)])
		if q == nil {
			continue
		}
		if gs := v.wholeGPUs(q); gs != nil {
			return q, gs
		}
	}
	return nil, nil
}

// startAnyModel starts job i under p's configuration on free whole GPUs of
// any model (anyModelWhole), or leaves it waiting.
func (pl *planner) startAnyModel(i int, p *elastico.Profile) {
	q, gs := pl.v.anyModelWhole(&pl.v.st.Jobs[i], p)
	if gs == nil {
		pl.wait(i, elastico.Unplaceable, fmt.Sprintf("gang of %d whole GPUs of one model does not fit the free GPUs", p.Demand.GPUs))
		return
	}
	pl.assign(i, q, gs)
}

// start starts job i under p on whole GPUs: of p's model, or of any model
// when anyModel is set.
func (pl *planner) start(i int, p *elastico.Profile, anyModel bool) {
	if anyModel {
		pl.startAnyModel(i, p)
		return
	}
	pl.startWhole(i, p)
}
