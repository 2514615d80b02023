package placement

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/check"
)

// Defaults and valid ranges of Config.
const (
	// DefaultOversubscription lets the SM shares on one GPU sum to 1: no
	// oversubscription, each job gets the share its profile was measured
	// with.
	DefaultOversubscription = 1.0
	MaxOversubscription     = 4.0
	// DefaultMaxJobsPerGPU is the paper's pairwise sharing: the predictor
	// is trained on pairs, so a third job on a GPU is an unmeasured risk.
	DefaultMaxJobsPerGPU = 2
	MaxMaxJobsPerGPU     = 64
	// DefaultTieCandidates is how many GPUs of the best bucket are compared
	// by predicted slowdown. More finds quieter neighbours at the cost of
	// two predictions per candidate and resident.
	DefaultTieCandidates = 4
	MaxTieCandidates     = 64
	// DefaultLoudProbes is how many GPUs with loud neighbours a search
	// predicts for before it looks only at empty GPUs (see
	// Config.LoudProbes).
	DefaultLoudProbes = 8
	MaxLoudProbes     = 1024
)

// ReasonLoud begins the reason of an item that waits because every GPU
// with room has a neighbour predicted above MaxSlowdown.
const ReasonLoud = "every GPU with room has a neighbour predicted above "

// ErrConfig is wrapped by every error New returns for a bad Config.
var ErrConfig = errors.New("placement: invalid config")

// Config tunes a Placer. The zero value means every documented default.
type Config struct {
	// Oversubscription is the most the SM shares of one GPU's jobs may sum
	// to. Zero: DefaultOversubscription; valid range (0,
	// MaxOversubscription].
	Oversubscription float64
	// MaxJobsPerGPU is the most jobs one shared GPU holds. Zero:
	// DefaultMaxJobsPerGPU; valid range [1, MaxMaxJobsPerGPU].
	MaxJobsPerGPU int
	// TieCandidates is how many equally good GPUs are compared by predicted
	// slowdown. Zero: DefaultTieCandidates; valid range [1,
	// MaxTieCandidates].
	TieCandidates int
	// MaxSlowdown, when positive and the request has a Predictor, keeps an
	// item off a GPU where it or a resident is predicted to slow above it
	// ("loud" neighbours): the item goes elsewhere, or waits with a reason
	// that says so. The search for a quiet GPU is bounded by LoudProbes.
	// Zero: no limit (the predictor only breaks ties). Valid range: 0 or
	// [1, +Inf).
	MaxSlowdown float64
	// LoudProbes is how many GPUs with loud neighbours (nodes, for a gang)
	// a search predicts for before it looks only at empty GPUs; a Quiet
	// item probes an eighth as many, at least one. A wider search packs
	// more jobs beside quiet neighbours and asks the predictor more: where
	// most pairs are loud, it is most of an epoch's time. Zero:
	// DefaultLoudProbes; valid range [1, MaxLoudProbes].
	LoudProbes int
	// LoudLastResort makes a GPU with loud neighbours a last resort rather
	// than forbidden: the item goes there if nothing else has room (unless
	// the item is Quiet).
	LoudLastResort bool
}

func (c Config) withDefaults() (Config, error) {
	bad := func(field string, v any, want string) error {
		return fmt.Errorf("%w: %s is %v, want %s", ErrConfig, field, v, want)
	}
	switch {
	case math.IsNaN(c.Oversubscription) || c.Oversubscription < 0 || c.Oversubscription > MaxOversubscription:
		return c, bad("Oversubscription", c.Oversubscription, fmt.Sprintf("a number in (0, %g] (0 for the default)", MaxOversubscription))
	case c.MaxJobsPerGPU < 0 || c.MaxJobsPerGPU > MaxMaxJobsPerGPU:
		return c, bad("MaxJobsPerGPU", c.MaxJobsPerGPU, fmt.Sprintf("[1, %d] (0 for the default)", MaxMaxJobsPerGPU))
	case c.TieCandidates < 0 || c.TieCandidates > MaxTieCandidates:
		return c, bad("TieCandidates", c.TieCandidates, fmt.Sprintf("[1, %d] (0 for the default)", MaxTieCandidates))
	case math.IsNaN(c.MaxSlowdown) || c.MaxSlowdown < 0 || (c.MaxSlowdown > 0 && c.MaxSlowdown < 1):
		return c, bad("MaxSlowdown", c.MaxSlowdown, "0 (no limit) or a slowdown ≥ 1")
	case c.LoudProbes < 0 || c.LoudProbes > MaxLoudProbes:
		return c, bad("LoudProbes", c.LoudProbes, fmt.Sprintf("[1, %d] (0 for the default)", MaxLoudProbes))
	}
	if c.LoudProbes == 0 {
		c.LoudProbes = DefaultLoudProbes
	}
	if c.Oversubscription == 0 {
		c.Oversubscription = DefaultOversubscription
	}
	if c.MaxJobsPerGPU == 0 {
		c.MaxJobsPerGPU = DefaultMaxJobsPerGPU
	}
	if c.TieCandidates == 0 {
		c.TieCandidates = DefaultTieCandidates
	}
	return c, nil
}

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

// gpu is one GPU's running account.
type gpu struct {
	freeSM, freeMem float64
	memTol          float64
	node            int32
	local           int32
	n               int32 // residents
	cell, pos       int32 // place in the index; -1 when full
	shared          bool
}

type node struct {
	freeCPU, freeRAM float64
	cpuTol, ramTol   float64
	first, count     int32 // its GPUs are [first, first+count)
	open             int32 // its GPUs in the index
	tried            uint32
}

// shape is a demand that found no room; resources only shrink during a
// Place call, so every item demanding at least as much fails too.
type shape struct {
	spread            bool
	need              int
	sm, mem, cpu, ram float64
}

func (s shape) covers(t shape) bool {
	return (s.spread || !t.spread) && s.need <= t.need && s.sm <= t.sm && s.mem <= t.mem && s.cpu <= t.cpu && s.ram <= t.ram
}

const maxFailures = 32

type cand struct {
	g        int32
	current  bool
	cell     int32
	slowdown float64
	score    float64
	seq      int32 // the last tie-break: scan order
	loud     bool  // a neighbour is predicted above MaxSlowdown
}

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

	order  []int32
	keys   []sortKey
	rkeys  []uint64
	ridx   []int32
	keyOf  []float64
	dem    []elastico.Demand // each item's, copied: read often, in no order
	start  []int32           // item i's GPUs are at[start[i] : start[i]+need]
	at     []int32
	placed []bool
	// Item i's reason is rbuf[rfrom[i]:rto[i]].
	rbuf       []byte
	rfrom, rto []int32
	slab       []elastico.GPURef // the last output's GPU sets
	slabOwner  *elastico.Placement
	avoidOff   []int32 // CSR of the symmetric Avoid relation; nil when empty
	avoid      []int32
	failures   []shape
	cands      []cand
	stamp      uint32
	loud       bool // the item's search passed over a GPU for a loud neighbour
}

func growTo[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n)
	}
	s = s[:n]
	clear(s)
	return s
}

func (w *work) setup(cfg Config, req *elastico.PlacementRequest) error {
	w.cfg, w.req = cfg, req
	w.smTol = 1e-9 * math.Max(1, cfg.Oversubscription)
	cl := req.Cluster
	ng := cl.NumGPUs()
	w.gpus = growTo(w.gpus, ng)
	w.res = growTo(w.res, ng*cfg.MaxJobsPerGPU)
	w.nodes = growTo(w.nodes, len(cl.Nodes))
	w.maxGPUMem, w.maxNodeGPUs = 0, 0
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
			first: g, count: int32(len(n.GPUs)),
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
				node: int32(i), local: int32(k), cell: -1, pos: -1, shared: gg.Shared,
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

	items := req.Items
	ni := len(items)
	w.start = growTo(w.start, ni+1)
	w.placed = growTo(w.placed, ni)
	w.rfrom = growTo(w.rfrom, ni)
	w.rto = growTo(w.rto, ni)
	w.rbuf = w.rbuf[:0]
	w.keyOf = growTo(w.keyOf, ni)
	w.dem = growTo(w.dem, ni)
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
		total += int32(w.dem[i].GPUs)
		t := w.dem[i].Total()
		w.keyOf[i] = max(t[0]*inv[0], t[1]*inv[1], t[2]*inv[2], t[3]*inv[3])
		if math.IsNaN(w.keyOf[i]) { // 0 demand × +Inf
			w.keyOf[i] = t.DominantShare(w.capacity)
		}
		hasAvoid = hasAvoid || len(it.Avoid) > 0
	}
	w.start[ni] = total
	w.at = growTo(w.at, int(total))
	w.avoidOff = w.avoidOff[:0]
	if hasAvoid {
		w.buildAvoid()
	}
	return nil
}

func itemID(it *elastico.PlacementItem) string {
	if it.Job == nil {
		return ""
	}
	return it.Job.ID
}

// ok reports whether x is a finite number ≥ 0.
func ok(x float64) bool { return x >= 0 && x <= math.MaxFloat64 }

// checkItem returns why item i of the request is malformed, or nil. A
// valid item (the usual case) costs a handful of comparisons.
func (w *work) checkItem(i int, it *elastico.PlacementItem) error {
	if it.Job != nil && it.Profile != nil {
		d := &it.Profile.Demand
		valid := d.GPUs >= 1 && d.SM > 0 && d.SM <= 1 && ok(d.GPUMemory) && ok(d.CPU) && ok(d.RAM)
		for _, ref := range it.Current {
			valid = valid && ref.Node >= 0 && ref.Node < len(w.nodes) && ref.GPU >= 0 && ref.GPU < int(w.nodes[ref.Node].count)
		}
		for _, a := range it.Avoid {
			valid = valid && a >= 0 && a < len(w.req.Items) && a != i
		}
		if valid {
			return nil
		}
	}
	bad := func(field, reason string) error {
		return &elastico.ValidationError{Kind: "item", ID: itemID(it), Field: fmt.Sprintf("Items[%d].%s", i, field), Reason: reason}
	}
	if it.Job == nil {
		return bad("Job", "is nil")
	}
	if it.Profile == nil {
		return bad("Profile", "is nil")
	}
	d := &it.Profile.Demand
	if d.GPUs < 1 {
		return bad("Profile.Demand.GPUs", fmt.Sprintf("is %d, want ≥ 1", d.GPUs))
	}
	if math.IsNaN(d.SM) || d.SM <= 0 || d.SM > 1 {
		return bad("Profile.Demand.SM", fmt.Sprintf("is %g, want a share in (0, 1]", d.SM))
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"GPUMemory", d.GPUMemory}, {"CPU", d.CPU}, {"RAM", d.RAM}} {
		if r := check.Number(f.v); r != "" {
			return bad("Profile.Demand."+f.name, r)
		}
	}
	for k, ref := range it.Current {
		if ref.Node < 0 || ref.Node >= len(w.nodes) || ref.GPU < 0 || ref.GPU >= int(w.nodes[ref.Node].count) {
			return bad(fmt.Sprintf("Current[%d]", k), fmt.Sprintf("%+v is not a GPU of the cluster", ref))
		}
	}
	for k, a := range it.Avoid {
		if a < 0 || a >= len(w.req.Items) || a == i {
			return bad(fmt.Sprintf("Avoid[%d]", k), fmt.Sprintf("is %d, want another item's index", a))
		}
	}
	return nil
}

// buildAvoid makes the Avoid relation symmetric, as a CSR adjacency.
func (w *work) buildAvoid() {
	items := w.req.Items
	n := len(items)
	w.avoidOff = growTo(w.avoidOff, n+1)
	for i := range items {
		for _, a := range items[i].Avoid {
			w.avoidOff[i+1]++
			w.avoidOff[a+1]++
		}
	}
	for i := range n {
		w.avoidOff[i+1] += w.avoidOff[i]
	}
	w.avoid = growTo(w.avoid, int(w.avoidOff[n]))
	fill := growTo(w.order[:0], n) // borrow order's storage; it is rebuilt later
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

func (w *work) residents(g int32) []int32 {
	m := int32(w.cfg.MaxJobsPerGPU)
	return w.res[g*m : g*m+w.gpus[g].n]
}

// fitsGPU reports whether one replica of item it fits GPU g (SM, memory,
// job count, not already there), leaving the node aside.
func (w *work) fitsGPU(it int32, g int32, d *elastico.Demand) bool {
	gp := &w.gpus[g]
	if int(gp.n) >= w.cfg.MaxJobsPerGPU || (!gp.shared && gp.n > 0) {
		return false
	}
	if gp.freeSM+w.smTol < d.SM || gp.freeMem+gp.memTol < d.GPUMemory {
		return false
	}
	for _, r := range w.residents(g) {
		if r == it {
			return false
		}
	}
	return true
}

func (w *work) fitsNode(n int32, k int, d *elastico.Demand) bool {
	nd := &w.nodes[n]
	fk := float64(k)
	return nd.freeCPU+nd.cpuTol >= fk*d.CPU && nd.freeRAM+nd.ramTol >= fk*d.RAM
}

// conflicts reports whether GPU g holds an item that it must avoid.
func (w *work) conflicts(it int32, g int32) bool {
	if len(w.avoidOff) == 0 {
		return false
	}
	av := w.avoid[w.avoidOff[it]:w.avoidOff[it+1]]
	if len(av) == 0 {
		return false
	}
	for _, r := range w.residents(g) {
		if slices.Contains(av, r) {
			return true
		}
	}
	return false
}

// slowdown is the worst predicted slowdown between item it and g's
// residents, either way round.
func (w *work) slowdown(it int32, g int32) float64 {
	return w.slowdownAbove(it, g, math.Inf(1))
}

// slowdownAbove is slowdown, except that it may stop as soon as the worst
// slowdown so far exceeds stop, and return that: a search that only needs
// to know whether a GPU is loud (and no quieter than the quietest loud one
// seen) asks the predictor half as often.
func (w *work) slowdownAbove(it int32, g int32, stop float64) float64 {
	pr := w.req.Predictor
	s := 1.0
	if pr == nil {
		return s
	}
	if ip, ok := pr.(ItemPredictor); ok {
		for _, r := range w.residents(g) {
			if s = max(s, ip.SlowdownItems(int(it), int(r))); s > stop {
				return s
			}
			if s = max(s, ip.SlowdownItems(int(r), int(it))); s > stop {
				return s
			}
		}
		return s
	}
	items := w.req.Items
	p := items[it].Profile
	for _, r := range w.residents(g) {
		q := items[r].Profile
		if s = max(s, pr.Slowdown(p, q)); s > stop {
			return s
		}
		if s = max(s, pr.Slowdown(q, p)); s > stop {
			return s
		}
	}
	return s
}

// ItemPredictor is what a request's Predictor may also be: it answers by
// item, SlowdownItems(v, a) being Slowdown(Items[v].Profile,
// Items[a].Profile). The placer asks about the same items again and again;
// a host that keeps its answers by job (pds does) then finds them without
// looking the profiles up.
type ItemPredictor interface {
	elastico.Predictor
	SlowdownItems(victim, aggressor int) float64
}

// cursor starts below the demand by the fit tolerance, so that a GPU
// whose free room equals the demand up to rounding is not skipped.
func (w *work) cursor(d *elastico.Demand, capped bool) cursor {
	return w.idx.cursor(d.SM-w.smTol, d.GPUMemory-w.maxMemTol, capped)
}

func (w *work) score(g int32, d *elastico.Demand) float64 {
	gp := &w.gpus[g]
	return (gp.freeMem-d.GPUMemory)/w.idx.qm/memLevels + (gp.freeSM-d.SM)/w.cfg.Oversubscription
}

func (w *work) commit(it int32, g int32, d *elastico.Demand) {
	gp := &w.gpus[g]
	nd := &w.nodes[gp.node]
	gp.freeSM -= d.SM
	gp.freeMem -= d.GPUMemory
	w.res[g*int32(w.cfg.MaxJobsPerGPU)+gp.n] = it
	gp.n++
	nd.freeCPU -= d.CPU
	nd.freeRAM -= d.RAM
	w.reindex(g)
}

func (w *work) uncommit(it int32, g int32, d *elastico.Demand) {
	gp := &w.gpus[g]
	nd := &w.nodes[gp.node]
	gp.freeSM += d.SM
	gp.freeMem += d.GPUMemory
	rs := w.residents(g)
	k := slices.Index(rs, it)
	rs[k] = rs[len(rs)-1]
	gp.n--
	nd.freeCPU += d.CPU
	nd.freeRAM += d.RAM
	w.reindex(g)
}

func (w *work) reindex(g int32) {
	gp := &w.gpus[g]
	nd := &w.nodes[gp.node]
	if gp.cell >= 0 {
		w.idx.remove(w.gpus, g)
		nd.open--
	}
	full := int(gp.n) >= w.cfg.MaxJobsPerGPU || (!gp.shared && gp.n > 0) || gp.freeSM <= w.smTol
	if !full {
		w.idx.insert(w.gpus, g)
		nd.open++
	}
}

func (w *work) global(ref elastico.GPURef) int32 {
	return w.nodes[ref.Node].first + int32(ref.GPU)
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

// sortByKey orders items (given in increasing index) by decreasing
// dominant share, then decreasing GPU count, then index.
func (w *work) sortByKey(s []int32) {
	if len(s) >= radixMin {
		w.radixSort(s)
		return
	}
	w.compareSort(s)
}

// compareSort is sortByKey for few items: pdqsort on the keys.
func (w *work) compareSort(s []int32) {
	keys := w.keys[:0]
	for _, i := range s {
		keys = append(keys, sortKey{share: w.keyOf[i], gpus: int32(w.dem[i].GPUs), i: i})
	}
	// Plain comparisons: a share is never NaN (setup sees to it, as the
	// radix sort needs), and cmp.Compare's care for NaNs cost a third of
	// the sort (BenchmarkSortByKey).
	slices.SortFunc(keys, func(a, b sortKey) int {
		switch {
		case a.share > b.share:
			return -1
		case a.share < b.share:
			return 1
		case a.gpus != b.gpus:
			return int(b.gpus - a.gpus)
		}
		return int(a.i - b.i)
	})
	for k := range keys {
		s[k] = keys[k].i
	}
	w.keys = keys
}

// radixMin is the item count from which a radix sort beats pdqsort
// (BenchmarkSortByKey: both take about 22 µs at 512 items; at 1,024 the
// radix sort 37 µs, pdqsort 75).
const radixMin = 512

// radixSort is sortByKey for many items: stable LSD radix passes, first on
// the GPU count, then on the share's bits (a non-negative float64 orders
// as its bits do), each key complemented so that larger comes first; the
// input's index order survives as the last tie-break.
func (w *work) radixSort(s []int32) {
	n := len(s)
	w.rkeys = slices.Grow(w.rkeys[:0], 2*n)[:2*n]
	w.ridx = slices.Grow(w.ridx[:0], n)[:n]
	keys, tmpKeys := w.rkeys[:n], w.rkeys[n:]
	for k, i := range s {
		keys[k] = uint64(^uint32(w.dem[i].GPUs))
	}
	radixPasses(keys, tmpKeys, s, w.ridx, 32)
	for k, i := range s {
		keys[k] = ^math.Float64bits(w.keyOf[i])
	}
	radixPasses(keys, tmpKeys, s, w.ridx, 64)
}

// radixPasses sorts idx by keys (both permuted together), stably, 8 bits
// at a time over the low width bits, skipping digits all keys share.
func radixPasses(keys, tmpKeys []uint64, idx, tmpIdx []int32, width uint) {
	var and, or uint64 = ^uint64(0), 0
	for _, k := range keys {
		and &= k
		or |= k
	}
	for shift := uint(0); shift < width; shift += 8 {
		if (and>>shift)&0xff == (or>>shift)&0xff {
			continue // every key has this digit
		}
		var count [257]int
		for _, k := range keys {
			count[(k>>shift)&0xff+1]++
		}
		for d := 1; d < 257; d++ {
			count[d] += count[d-1]
		}
		for j, k := range keys {
			d := (k >> shift) & 0xff
			tmpKeys[count[d]] = k
			tmpIdx[count[d]] = idx[j]
			count[d]++
		}
		copy(keys, tmpKeys)
		copy(idx, tmpIdx)
	}
}

type sortKey struct {
	share float64
	gpus  int32
	i     int32
}

// stay tries to keep item it on its current GPUs (the first ones that fit,
// on one node unless it spreads).
func (w *work) stay(it int32) bool {
	item := &w.req.Items[it]
	d := &w.dem[it]
	out := w.at[w.start[it]:w.start[it+1]]
	k := 0
	nodeOf := int32(-1)
	for _, ref := range item.Current {
		g := w.global(ref)
		n := w.gpus[g].node
		if nodeOf >= 0 && n != nodeOf && !item.Job.Spread {
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

func (w *work) placeItem(it int32) {
	item := &w.req.Items[it]
	d := &w.dem[it]
	sh := shape{spread: d.GPUs == 1 || item.Job.Spread, need: d.GPUs, sm: d.SM, mem: d.GPUMemory, cpu: d.CPU, ram: d.RAM}
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
	case item.Job.Spread:
		ok, avoided = w.placeSpread(it, d)
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

// findOne returns the best GPU for one replica of item it, or -1; avoided
// says a GPU with room was passed over because of the Avoid list.
func (w *work) findOne(it int32, d *elastico.Demand) (best int32, avoided bool) {
	// A capped pass first; an exhaustive one only if the cap may have
	// hidden the only GPUs with room (or with quiet neighbours).
	best, fallback, avoided, skipped := w.findOnePass(it, d, true)
	if best < 0 && skipped {
		var fb int32
		best, fb, avoided, _ = w.findOnePass(it, d, false)
		if fb >= 0 {
			fallback = fb
		}
	}
	if best < 0 {
		best = fallback
	}
	return best, avoided
}

// lastResort reports whether item it may go beside a loud neighbour when
// nothing else has room.
func (w *work) lastResort(it int32) bool {
	return w.cfg.LoudLastResort && !w.req.Items[it].Quiet
}

// maxAfterRejected bounds how many GPUs a search scans once it looks only
// at empty ones.
const maxAfterRejected = 1024

// maxLoud is how many loud GPUs (or nodes, for a gang) item it's search
// passes over before it looks only at empty ones: Config.LoudProbes, an
// eighth of it for a Quiet item, one that already found only loud ones
// (see PlacementItem.Quiet). (At 5,000 jobs on 4,096 GPUs, a thousand
// such items probing eight GPUs each, under a configuration that changes
// as the market prices the refusals, made most of an epoch's
// predictions. At 20,000 jobs, a second probe for each Quiet item still
// cost a tenth of an epoch, to place about 5 more of the 8,000 beside a
// neighbour; the replays' gains did not move without it.)
func (w *work) maxLoud(it int32) int {
	if w.req.Items[it].Quiet {
		return max(1, w.cfg.LoudProbes/8)
	}
	return w.cfg.LoudProbes
}

// findOnePass returns the best GPU for one replica (or -1), and the
// quietest GPU it passed over for a neighbour predicted above
// MaxSlowdown (or -1), to fall back on.
func (w *work) findOnePass(it int32, d *elastico.Demand, capped bool) (best, fallback int32, avoided, skipped bool) {
	c := w.cursor(d, capped)
	cands := w.cands[:0]
	firstCell := -1
	limit := w.cfg.MaxSlowdown > 0 && w.req.Predictor != nil
	lastResort := w.lastResort(it)
	fallback, fallbackS := int32(-1), math.Inf(1)
	rejected, after := 0, 0
	maxLoud := w.maxLoud(it)
	for {
		g, cell := c.next()
		if g < 0 || (firstCell >= 0 && cell != firstCell) {
			break
		}
		if rejected >= maxLoud {
			if after == 0 && len(cands) == 0 {
				// Enough loud neighbours: from here on only (nearly)
				// empty GPUs can take the replica, and they sit in the
				// index's top SM column; walk that instead of every
				// partly filled bucket on the way.
				c = w.idx.cursor(w.cfg.Oversubscription-w.smTol, d.GPUMemory-w.maxMemTol, capped)
				firstCell = -1
			}
			if after++; after > maxAfterRejected {
				break
			}
		}
		if !w.fitsGPU(it, g, d) || !w.fitsNode(w.gpus[g].node, 1, d) {
			continue
		}
		if w.conflicts(it, g) {
			avoided = true
			continue
		}
		s := 0.0 // not predicted yet
		if w.gpus[g].n == 0 {
			s = 1
		} else if limit {
			if rejected >= maxLoud {
				continue
			}
			// Loud, and no quieter than the fallback: nothing more to know.
			stop := w.cfg.MaxSlowdown
			if lastResort {
				stop = max(stop, fallbackS)
			}
			if s = w.slowdownAbove(it, g, stop); s > w.cfg.MaxSlowdown {
				rejected++
				w.loud = true
				if s < fallbackS {
					fallback, fallbackS = g, s
				}
				continue
			}
		}
		firstCell = cell
		cands = append(cands, cand{g: g, score: w.score(g, d), slowdown: s, seq: int32(len(cands))})
		if len(cands) == w.cfg.TieCandidates {
			break
		}
	}
	w.cands = cands
	if len(cands) == 0 {
		if !lastResort {
			fallback = -1
		}
		return -1, fallback, avoided, c.skipped
	}
	for k := range cands {
		if cands[k].slowdown == 0 {
			cands[k].slowdown = 1
			if len(cands) > 1 && w.req.Predictor != nil {
				cands[k].slowdown = w.slowdown(it, cands[k].g)
			}
		}
	}
	b := 0
	for k := 1; k < len(cands); k++ {
		if candLess(&cands[k], &cands[b]) {
			b = k
		}
	}
	return cands[b].g, fallback, avoided, c.skipped
}

func candLess(a, b *cand) bool {
	if a.loud != b.loud {
		return b.loud
	}
	if a.current != b.current {
		return a.current
	}
	if a.cell != b.cell {
		return a.cell < b.cell
	}
	if a.slowdown != b.slowdown {
		return a.slowdown < b.slowdown
	}
	if a.score != b.score {
		return a.score < b.score
	}
	return a.seq < b.seq
}

// placeSpread places a gang replica by replica anywhere, current GPUs
// first; all or nothing.
func (w *work) placeSpread(it int32, d *elastico.Demand) (ok, avoided bool) {
	item := &w.req.Items[it]
	out := w.at[w.start[it]:w.start[it+1]]
	k := 0
	for _, ref := range item.Current {
		if k == len(out) {
			break
		}
		g := w.global(ref)
		if w.fitsGPU(it, g, d) && w.fitsNode(w.gpus[g].node, 1, d) && !w.conflicts(it, g) {
			w.commit(it, g, d)
			out[k] = g
			k++
		}
	}
	for k < len(out) {
		g, av := w.findOne(it, d)
		avoided = avoided || av
		if g < 0 {
			for k--; k >= 0; k-- {
				w.uncommit(it, out[k], d)
			}
			return false, avoided
		}
		w.commit(it, g, d)
		out[k] = g
		k++
	}
	return true, avoided
}

// placeGang places a gang on one node: the nodes it runs on first, then
// the node of each fitting GPU in best-fit order. After maxLoud nodes
// whose room was all beside loud neighbours it tries only nodes reached
// through their empty GPUs, as findOnePass does for one replica.
func (w *work) placeGang(it int32, d *elastico.Demand) (ok, avoided bool) {
	item := &w.req.Items[it]
	if d.GPUs > w.maxNodeGPUs {
		return false, false
	}
	w.stamp++
	for _, ref := range item.Current {
		nd := &w.nodes[ref.Node]
		if nd.tried == w.stamp {
			continue
		}
		nd.tried = w.stamp
		if ok, _ := w.tryNode(it, int32(ref.Node), d, false, &avoided); ok {
			return true, avoided
		}
	}
	sm, mem := d.SM-w.smTol, d.GPUMemory-w.maxMemTol // as w.cursor
	c := w.idx.cursor(sm, mem, true)
	rejected, empty, after, need := 0, false, 0, d.GPUs
	for {
		g, _ := c.next()
		if g < 0 && c.capped && c.skipped {
			// Try the buckets the cap cut short, in full.
			c = w.idx.cursor(sm, mem, false)
			g, _ = c.next()
		}
		if g < 0 {
			return false, avoided
		}
		n := w.gpus[g].node
		nd := &w.nodes[n]
		if nd.tried == w.stamp || !w.fitsGPU(it, g, d) {
			continue
		}
		nd.tried = w.stamp
		if empty {
			// Only a node with room on empty GPUs alone can take the
			// gang now; the walk is bounded as findOnePass's is.
			if after += int(nd.count); after > maxAfterRejected {
				return false, avoided
			}
			if w.emptyFits(it, n, d) < need {
				continue
			}
		}
		ok, loud := w.tryNode(it, n, d, empty, &avoided)
		if ok {
			return true, avoided
		}
		if loud {
			if rejected++; rejected == w.maxLoud(it) && !empty {
				// Enough loud nodes: walk the empty GPUs' column.
				empty = true
				sm = w.cfg.Oversubscription - w.smTol
				c = w.idx.cursor(sm, mem, true)
			}
		}
	}
}

// emptyFits counts node n's empty GPUs that one replica of item it fits.
func (w *work) emptyFits(it int32, n int32, d *elastico.Demand) int {
	nd := &w.nodes[n]
	k := 0
	for g := nd.first; g < nd.first+nd.count; g++ {
		if w.gpus[g].n == 0 && w.fitsGPU(it, g, d) && !w.conflicts(it, g) {
			k++
		}
	}
	return k
}

// tryNode places gang item it on node n if it fits there (on its empty
// GPUs only if emptyOnly): on the GPUs that rank first by candLess (quiet
// before loud, current before not, then best fit, then the quieter
// neighbours). loud reports that it did not fit because GPUs with room
// had loud neighbours. Slowdowns are predicted lazily, a bucket of equally
// good GPUs at a time, until the gang has enough quiet GPUs: a node with
// room to spare costs the predictions of the GPUs it takes, not of all
// eight.
func (w *work) tryNode(it int32, n int32, d *elastico.Demand, emptyOnly bool, avoided *bool) (ok, loud bool) {
	nd := &w.nodes[n]
	need := d.GPUs
	if int(nd.open) < need || !w.fitsNode(n, need, d) {
		return false, false
	}
	item := &w.req.Items[it]
	cands := w.cands[:0]
	for g := nd.first; g < nd.first+nd.count; g++ {
		if !w.fitsGPU(it, g, d) || (emptyOnly && w.gpus[g].n > 0) {
			continue
		}
		if w.conflicts(it, g) {
			*avoided = true
			continue
		}
		cur := false
		for _, ref := range item.Current {
			if w.global(ref) == g {
				cur = true
				break
			}
		}
		cands = append(cands, cand{g: g, current: cur, cell: w.gpus[g].cell, score: w.score(g, d), slowdown: 1, seq: g})
	}
	w.cands = cands
	if len(cands) < need {
		return false, false
	}
	limit := w.cfg.MaxSlowdown > 0 && w.req.Predictor != nil
	lastResort := w.lastResort(it)
	// Every slowdown 1 for now: this orders by current, cell, score.
	slices.SortFunc(cands, candCmp)
	if w.req.Predictor != nil && (len(cands) > need || (limit && !lastResort)) {
		// A quiet GPU's slowdown is exact whatever the stop; a loud
		// one's is only known to exceed MaxSlowdown.
		stop := math.Inf(1)
		if limit {
			stop = w.cfg.MaxSlowdown
		}
		quiet, i := 0, 0
		for i < len(cands) && quiet < need {
			if limit && !lastResort && quiet+len(cands)-i < need {
				// Too few GPUs left to predict for, were they all quiet.
				break
			}
			j := i + 1
			for j < len(cands) && cands[j].current == cands[i].current && cands[j].cell == cands[i].cell {
				j++
			}
			for k := i; k < j; k++ {
				if w.gpus[cands[k].g].n > 0 {
					cands[k].slowdown = w.slowdownAbove(it, cands[k].g, stop)
					cands[k].loud = limit && cands[k].slowdown > w.cfg.MaxSlowdown
				}
				if !cands[k].loud {
					quiet++
				} else if !lastResort && quiet+len(cands)-k-1 < need {
					break // as above, within the bucket
				}
			}
			slices.SortFunc(cands[i:j], candCmp)
			i = j
		}
		if quiet < need {
			if !limit || !lastResort {
				w.loud = true
				return false, true
			}
			// The loud GPUs as a last resort, the quietest first: their
			// slowdowns in full.
			for k := range cands {
				if cands[k].loud {
					cands[k].slowdown = w.slowdown(it, cands[k].g)
				}
			}
		}
		// Quiet before loud; the GPUs not predicted rank after every
		// quiet one predicted, as they are in cands already.
		slices.SortStableFunc(cands[:i], func(a, b cand) int {
			switch {
			case a.loud == b.loud:
				return 0
			case b.loud:
				return -1
			}
			return 1
		})
		if quiet < need {
			slices.SortFunc(cands, candCmp)
		}
	}
	out := w.at[w.start[it]:w.start[it+1]]
	for k := range need {
		w.commit(it, cands[k].g, d)
		out[k] = cands[k].g
	}
	return true, false
}

func candCmp(a, b cand) int {
	switch {
	case candLess(&a, &b):
		return -1
	case candLess(&b, &a):
		return 1
	}
	return 0
}

// why records why item it found no room, in w.rbuf: the reasons of a
// call are formatted into one buffer that becomes one string (thousands of
// items may wait in a large cluster, each with its own numbers).
func (w *work) why(it int32, avoided bool) {
	item := &w.req.Items[it]
	d := &w.dem[it]
	b := w.rbuf
	w.rfrom[it] = int32(len(b))
	switch {
	case d.GPUMemory > w.maxGPUMem+1e-9*math.Max(1, w.maxGPUMem):
		b = append(b, "needs "...)
		b = strconv.AppendFloat(b, d.GPUMemory, 'f', 1, 64)
		b = append(b, " GiB of GPU memory per replica; the largest GPU has "...)
		b = strconv.AppendFloat(b, w.maxGPUMem, 'f', 1, 64)
		b = append(b, " GiB"...)
	case d.SM > w.cfg.Oversubscription+w.smTol:
		b = append(b, "needs an SM share of "...)
		b = strconv.AppendFloat(b, d.SM, 'f', 2, 64)
		b = append(b, " per replica; a GPU holds "...)
		b = strconv.AppendFloat(b, w.cfg.Oversubscription, 'f', 2, 64)
	case d.GPUs > len(w.gpus):
		b = append(b, "needs "...)
		b = strconv.AppendInt(b, int64(d.GPUs), 10)
		b = append(b, " GPUs; the cluster has "...)
		b = strconv.AppendInt(b, int64(len(w.gpus)), 10)
	case d.GPUs > 1 && !item.Job.Spread && d.GPUs > w.maxNodeGPUs:
		b = append(b, "needs "...)
		b = strconv.AppendInt(b, int64(d.GPUs), 10)
		b = append(b, " GPUs on one node; the largest node has "...)
		b = strconv.AppendInt(b, int64(w.maxNodeGPUs), 10)
	case avoided:
		b = append(b, "every GPU with room holds a job it must not share a GPU with"...)
	case w.loud:
		b = append(b, ReasonLoud...)
		b = strconv.AppendFloat(b, w.cfg.MaxSlowdown, 'g', 3, 64)
		b = append(b, "× (it or a resident would slow above that)"...)
	case d.GPUs == 1 || item.Job.Spread:
		if d.GPUs == 1 {
			b = append(b, "no GPU has "...)
		} else {
			b = append(b, "fewer than "...)
			b = strconv.AppendInt(b, int64(d.GPUs), 10)
			b = append(b, " GPUs have "...)
		}
		b = strconv.AppendFloat(b, d.SM, 'f', 2, 64)
		b = append(b, " SM and "...)
		b = strconv.AppendFloat(b, d.GPUMemory, 'f', 1, 64)
		b = append(b, " GiB free on a node with "...)
		b = strconv.AppendFloat(b, d.CPU, 'f', 1, 64)
		b = append(b, " CPU and "...)
		b = strconv.AppendFloat(b, d.RAM, 'f', 1, 64)
		b = append(b, " GiB RAM free"...)
	default:
		fd := float64(d.GPUs)
		b = append(b, "no node has "...)
		b = strconv.AppendInt(b, int64(d.GPUs), 10)
		b = append(b, " GPUs with "...)
		b = strconv.AppendFloat(b, d.SM, 'f', 2, 64)
		b = append(b, " SM and "...)
		b = strconv.AppendFloat(b, d.GPUMemory, 'f', 1, 64)
		b = append(b, " GiB free each, and "...)
		b = strconv.AppendFloat(b, fd*d.CPU, 'f', 1, 64)
		b = append(b, " CPU and "...)
		b = strconv.AppendFloat(b, fd*d.RAM, 'f', 1, 64)
		b = append(b, " GiB RAM free"...)
	}
	w.rto[it] = int32(len(b))
	w.rbuf = b
}

// output fills out. The GPU sets are cut from one slab, the last call's
// when out is the Placement it filled (Place reuses out's slices).
func (w *work) output(out *elastico.Placement) {
	n := len(w.req.Items)
	out.GPUs = growTo(out.GPUs, n)
	out.Reasons = growTo(out.Reasons, n)
	if out != w.slabOwner || cap(w.slab) < len(w.at) {
		w.slab = make([]elastico.GPURef, len(w.at))
		w.slabOwner = out
	}
	slab := w.slab[:len(w.at)]
	reasons := string(w.rbuf)
	for i := range n {
		if !w.placed[i] {
			out.Reasons[i] = reasons[w.rfrom[i]:w.rto[i]]
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
