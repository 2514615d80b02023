package placement

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/check"
	"github.com/elastico/elastico/internal/slab"
)

// Placer is the default elastico.Placer. It is safe for concurrent use; it
// keeps one call's scratch space for the next.
type Placer struct {
	cfg Config
	// spare is the last call's scratch space, kept for the next (a
	// sync.Pool would lose it to every garbage collection); a concurrent
	// call builds its own.
	mu    sync.Mutex
	spare *work
}

var _ elastico.Placer = (*Placer)(nil)

// New returns a Placer, or an error wrapping ErrConfig that names the first
// field out of range.
func New(cfg Config) (*Placer, error) {
	c, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	return &Placer{cfg: c}, nil
}

// Config returns the configuration in force, defaults filled in.
func (p *Placer) Config() Config { return p.cfg }

// GPULimits implements elastico.GPULimits: the SM share and the jobs one
// GPU holds at most (Config.Oversubscription, Config.MaxJobsPerGPU).
func (p *Placer) GPULimits() (float64, int) { return p.cfg.Oversubscription, p.cfg.MaxJobsPerGPU }

var _ elastico.GPULimits = (*Placer)(nil)

// Place implements elastico.Placer. It returns an error wrapping
// elastico.ErrInvalid for a malformed request (naming the item and the
// field), or the context's error if it is cancelled; out is then
// unspecified. An item that does not fit is not an error: its GPUs are nil
// and its Reasons entry says why.
func (p *Placer) Place(ctx context.Context, req *elastico.PlacementRequest, out *elastico.Placement) error {
	if req == nil || req.Cluster == nil {
		return fmt.Errorf("placement: %w", &elastico.ValidationError{Kind: "request", Field: "Cluster", Reason: "is nil"})
	}
	if out == nil {
		return fmt.Errorf("placement: %w", &elastico.ValidationError{Kind: "request", Field: "out", Reason: "is nil"})
	}
	p.mu.Lock()
	w := p.spare
	p.spare = nil
	p.mu.Unlock()
	if w == nil {
		w = &work{}
	}
	defer func() {
		w.req = nil
		p.mu.Lock()
		p.spare = w
		p.mu.Unlock()
	}()
	if err := w.setup(p.cfg, req); err != nil {
		return fmt.Errorf("placement: %w", err)
	}
	if err := w.run(ctx); err != nil {
		return err
	}
	w.output(out)
	return nil
}

// shape is a demand that found no room; resources only shrink during a
// Place call, so every item demanding at least as much fails too.
type shape struct {
	spread            bool
	model             int32 // as work.imodel: an item of another model may still fit
	need              int
	sm, mem, cpu, ram float64
}

func (s shape) covers(t shape) bool {
	return (s.spread || !t.spread) && (s.model == t.model || s.model == 0) && s.need <= t.need && s.sm <= t.sm && s.mem <= t.mem && s.cpu <= t.cpu && s.ram <= t.ram
}

const maxFailures = 32

type work struct {
	cfg   Config
	req   *elastico.PlacementRequest
	gpus  []gpu
	res   []int32 // residents: MaxJobsPerGPU slots per GPU
	nodes []node
	idx   index
	smTol float64

	maxGPUMem   float64
	maxMemTol   float64
	maxNodeGPUs int
	capacity    elastico.Vector

	order []int32
	keys  []sortKey
	rkeys []uint64
	ridx  []int32
	keyOf []float64
	dem   []elastico.Demand // each item's, copied: read often, in no order
	// models are the cluster's distinct GPU models (GPU.Model, non-empty);
	// imodel[i] is item i's profile's: 1 + its index there, 0 for a
	// profile that names none (it runs on any GPU), -1 for a model the
	// cluster does not have (it runs only on GPUs that name none).
	models []string
	imodel []int32
	midx   []index // per model (number − 1), when every GPU names one
	start  []int32 // item i's GPUs are at[start[i] : start[i]+need]
	at     []int32
	placed []bool
	// Item i's reason is rbuf[rfrom[i]:rto[i]].
	rbuf       []byte
	rfrom, rto []int32
	codes      []elastico.Code   // per item not placed: Unplaceable or Interference
	slab       []elastico.GPURef // the last output's GPU sets
	slabOwner  *elastico.Placement
	avoidOff   []int32 // CSR of the symmetric Avoid relation; nil when empty
	avoid      []int32
	failures   []shape
	cands      []cand
	stamp      uint32
	loud       bool // the item's search passed over a GPU for a loud neighbour
}

func (w *work) setup(cfg Config, req *elastico.PlacementRequest) error {
	w.cfg, w.req = cfg, req
	w.smTol = 1e-9 * math.Max(1, cfg.Oversubscription)
	cl := req.Cluster
	ng := cl.NumGPUs()
	w.gpus = slab.Zeroed(w.gpus, ng)
	w.res = slab.Zeroed(w.res, ng*cfg.MaxJobsPerGPU)
	w.nodes = slab.Zeroed(w.nodes, len(cl.Nodes))
	w.maxGPUMem, w.maxNodeGPUs = 0, 0
	w.models = w.models[:0]
	w.capacity = elastico.Vector{}
	g := int32(0)
	for i := range cl.Nodes {
		n := &cl.Nodes[i]
		if r := check.Number(n.CPU); r != "" {
			return &elastico.ValidationError{Kind: "node", ID: n.ID, Field: "CPU", Reason: r}
		}
		if r := check.Number(n.RAM); r != "" {
			return &elastico.ValidationError{Kind: "node", ID: n.ID, Field: "RAM", Reason: r}
		}
		w.nodes[i] = node{
			freeCPU: n.CPU, freeRAM: n.RAM,
			cpuTol: 1e-9 * math.Max(1, n.CPU), ramTol: 1e-9 * math.Max(1, n.RAM),
			first: g, count: int32(len(n.GPUs)), empty: int32(len(n.GPUs)),
		}
		w.maxNodeGPUs = max(w.maxNodeGPUs, len(n.GPUs))
		w.capacity[elastico.CPU] += n.CPU
		w.capacity[elastico.RAM] += n.RAM
		for k := range n.GPUs {
			gg := &n.GPUs[k]
			if r := check.Number(gg.Memory); r != "" {
				return &elastico.ValidationError{Kind: "gpu", ID: gg.ID, Field: "Memory", Reason: r}
			}
			w.gpus[g] = gpu{
				freeSM: cfg.Oversubscription, freeMem: gg.Memory, memTol: 1e-9 * math.Max(1, gg.Memory),
				node: int32(i), local: int32(k), cell: -1, pos: -1, mcell: -1, mpos: -1, shared: gg.Shared, model: w.modelOf(gg.Model, true),
			}
			w.maxGPUMem = max(w.maxGPUMem, gg.Memory)
			w.capacity[elastico.SM]++
			w.capacity[elastico.GPUMemory] += gg.Memory
			g++
		}
	}
	w.maxMemTol = 1e-9 * max(1, w.maxGPUMem)
	var inv elastico.Vector
	for r, c := range w.capacity {
		inv[r] = 1 / c // +Inf for none: any demand there is infinite
	}
	qm := w.maxGPUMem / memLevels
	if qm <= 0 {
		qm = 1
	}
	w.idx.reset(qm, cfg.Oversubscription/smLevels)
	// Inserted last to first: a bucket is scanned from its end, so empty
	// GPUs are taken in cluster order, filling one node before the next.
	for g := int32(ng) - 1; g >= 0; g-- {
		w.idx.insert(w.gpus, g)
		w.nodes[w.gpus[g].node].open++
	}
	// An index per GPU model as well, when every GPU names one (see
	// indexFor).
	w.midx = w.midx[:0]
	anyModel := false
	for g := range w.gpus {
		anyModel = anyModel || w.gpus[g].model == 0
	}
	if len(w.models) > 0 && !anyModel {
		if cap(w.midx) >= len(w.models) {
			w.midx = w.midx[:len(w.models)] // keeps the buckets' arrays
		} else {
			w.midx = make([]index, len(w.models))
		}
		for m := range w.midx {
			w.midx[m].byModel = true
			w.midx[m].reset(qm, cfg.Oversubscription/smLevels)
		}
		for g := int32(ng) - 1; g >= 0; g-- {
			w.midx[w.gpus[g].model-1].insert(w.gpus, g)
		}
	}

	items := req.Items
	ni := len(items)
	w.start = slab.Zeroed(w.start, ni+1)
	w.placed = slab.Zeroed(w.placed, ni)
	w.rfrom = slab.Zeroed(w.rfrom, ni)
	w.rto = slab.Zeroed(w.rto, ni)
	w.codes = slab.Zeroed(w.codes, ni)
	w.rbuf = w.rbuf[:0]
	w.keyOf = slab.Zeroed(w.keyOf, ni)
	w.dem = slab.Zeroed(w.dem, ni)
	w.imodel = slab.Zeroed(w.imodel, ni)
	w.order = w.order[:0]
	w.failures = w.failures[:0]
	hasAvoid := false
	total := int32(0)
	for i := range items {
		it := &items[i]
		if err := w.checkItem(i, it); err != nil {
			return err
		}
		w.start[i] = total
		w.dem[i] = it.Profile.Demand
		if m := it.Profile.Hardware.GPUModel; m != "" && len(w.models) > 0 {
			w.imodel[i] = w.modelOf(m, false)
		}
		total += int32(w.dem[i].GPUs)
		t := w.dem[i].Total()
		w.keyOf[i] = max(t[0]*inv[0], t[1]*inv[1], t[2]*inv[2], t[3]*inv[3])
		if math.IsNaN(w.keyOf[i]) { // 0 demand × +Inf
			w.keyOf[i] = t.DominantShare(w.capacity)
		}
		hasAvoid = hasAvoid || len(it.Avoid) > 0
	}
	w.start[ni] = total
	w.at = slab.Zeroed(w.at, int(total))
	w.avoidOff = w.avoidOff[:0]
	if hasAvoid {
		w.buildAvoid()
	}
	return nil
}

// modelOf returns the number of GPU model m as gpu.model and imodel hold
// it, adding it to w.models if add; a model not there and not added is -1.
// Clusters have a few models, so a scan beats a map.
func (w *work) modelOf(m string, add bool) int32 {
	if m == "" {
		return 0
	}
	for k, x := range w.models {
		if x == m {
			return int32(k + 1)
		}
	}
	if !add {
		return -1
	}
	w.models = append(w.models, m)
	return int32(len(w.models))
}

// buildAvoid makes the Avoid relation symmetric, as a CSR adjacency.
func (w *work) buildAvoid() {
	items := w.req.Items
	n := len(items)
	w.avoidOff = slab.Zeroed(w.avoidOff, n+1)
	for i := range items {
		for _, a := range items[i].Avoid {
			w.avoidOff[i+1]++
			w.avoidOff[a+1]++
		}
	}
	for i := range n {
		w.avoidOff[i+1] += w.avoidOff[i]
	}
	w.avoid = slab.Zeroed(w.avoid, int(w.avoidOff[n]))
	fill := slab.Zeroed(w.order[:0], n) // borrow order's storage; it is rebuilt later
	for i := range items {
		for _, a := range items[i].Avoid {
			w.avoid[w.avoidOff[i]+fill[i]] = int32(a)
			fill[i]++
			w.avoid[w.avoidOff[a]+fill[a]] = int32(i)
			fill[a]++
		}
	}
	w.order = fill[:0]
}

func (w *work) run(ctx context.Context) error {
	items := w.req.Items
	// Phase 1, sticky: items that can stay where they run, largest first.
	sticky := w.order[:0]
	for i := range items {
		if len(items[i].Current) >= w.dem[i].GPUs {
			sticky = append(sticky, int32(i))
		}
	}
	w.sortByKey(sticky)
	for k, it := range sticky {
		if k&255 == 255 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		w.placed[it] = w.stay(it)
	}
	// Phase 2: the rest, largest first, best fit: first the items that run
	// somewhere (they could not stay), so that a running job finds room
	// before a waiting one takes it; then the others.
	rest := sticky[:0]
	for i := range items {
		if !w.placed[i] && len(items[i].Current) > 0 {
			rest = append(rest, int32(i))
		}
	}
	moving := len(rest)
	w.sortByKey(rest)
	for i := range items {
		if !w.placed[i] && len(items[i].Current) == 0 {
			rest = append(rest, int32(i))
		}
	}
	w.sortByKey(rest[moving:])
	for k, it := range rest {
		if k&255 == 255 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		w.placeItem(it)
	}
	w.order = rest
	return ctx.Err()
}

// stay tries to keep item it on its current GPUs (the first ones that fit,
// on one node unless it spreads as placeItem spreads it). A gang that
// shrinks keeps GPUs of one node: kept one per node of the larger gang it
// was, a 4-GPU gang spread over four 4-GPU nodes did about half the work
// of one node's (Pollux's T4 measurements).
func (w *work) stay(it int32) bool {
	item := &w.req.Items[it]
	d := &w.dem[it]
	out := w.at[w.start[it]:w.start[it+1]]
	k := 0
	nodeOf := int32(-1)
	spread := w.spreads(item, d)
	for _, ref := range item.Current {
		g := w.global(ref)
		n := w.gpus[g].node
		if nodeOf >= 0 && n != nodeOf && !spread {
			continue
		}
		if !w.fitsGPU(it, g, d) || !w.fitsNode(n, 1, d) || w.conflicts(it, g) {
			continue
		}
		w.commit(it, g, d)
		out[k] = g
		k++
		nodeOf = n
		if k == len(out) {
			return true
		}
	}
	for k--; k >= 0; k-- {
		w.uncommit(it, out[k], d)
	}
	return false
}

// spreads reports whether item's gang of demand d may cross nodes: its
// job allows it (Job.Spread), and no node could hold it or
// Config.SpreadAnyway.
func (w *work) spreads(item *elastico.PlacementItem, d *elastico.Demand) bool {
	return item.Job.Spread && (w.cfg.SpreadAnyway || d.GPUs > w.maxNodeGPUs)
}

func (w *work) placeItem(it int32) {
	item := &w.req.Items[it]
	d := &w.dem[it]
	spread := w.spreads(item, d)
	sh := shape{spread: d.GPUs == 1 || spread, model: w.imodel[it], need: d.GPUs, sm: d.SM, mem: d.GPUMemory, cpu: d.CPU, ram: d.RAM}
	for _, f := range w.failures {
		if f.covers(sh) {
			w.why(it, false)
			return
		}
	}
	var ok, avoided bool
	w.loud = false
	switch {
	case d.GPUs == 1:
		var g int32
		g, avoided = w.findOne(it, d)
		if ok = g >= 0; ok {
			w.commit(it, g, d)
			w.at[w.start[it]] = g
		}
	case spread:
		// One node when one holds it (see Config.SpreadAnyway).
		if ok, avoided = w.placeGang(it, d); !ok {
			var av bool
			ok, av = w.placeSpread(it, d)
			avoided = avoided || av
		}
	default:
		ok, avoided = w.placeGang(it, d)
	}
	w.placed[it] = ok
	if ok {
		return
	}
	w.why(it, avoided)
	if len(w.failures) < maxFailures && !w.loud && (len(w.avoidOff) == 0 || w.avoidOff[it] == w.avoidOff[it+1]) {
		w.failures = append(w.failures, sh)
	}
}

// output fills out. The GPU sets are cut from one slab, the last call's
// when out is the Placement it filled (Place reuses out's slices).
func (w *work) output(out *elastico.Placement) {
	n := len(w.req.Items)
	out.GPUs = slab.Zeroed(out.GPUs, n)
	out.Reasons = slab.Zeroed(out.Reasons, n)
	out.Codes = slab.Zeroed(out.Codes, n)
	if out != w.slabOwner || cap(w.slab) < len(w.at) {
		w.slab = make([]elastico.GPURef, len(w.at))
		w.slabOwner = out
	}
	slab := w.slab[:len(w.at)]
	reasons := string(w.rbuf)
	for i := range n {
		if !w.placed[i] {
			out.Reasons[i] = reasons[w.rfrom[i]:w.rto[i]]
			out.Codes[i] = w.codes[i]
			continue
		}
		s, e := w.start[i], w.start[i+1]
		refs := slab[s:e:e]
		for k, g := range w.at[s:e] {
			refs[k] = elastico.GPURef{Node: int(w.gpus[g].node), GPU: int(w.gpus[g].local)}
		}
		out.GPUs[i] = refs
	}
}
