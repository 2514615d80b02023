package placement

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
	gocmp "github.com/google/go-cmp/cmp"
)

// cluster builds nodes × gpus identical GPUs (ID "nXgY").
func cluster(nodes, gpus int, mem float64, shared bool, cpu, ram float64) *elastico.Cluster {
	c := &elastico.Cluster{}
	for i := range nodes {
		n := elastico.Node{ID: fmt.Sprintf("n%d", i), CPU: cpu, RAM: ram}
		for k := range gpus {
			n.GPUs = append(n.GPUs, elastico.GPU{ID: fmt.Sprintf("n%dg%d", i, k), Memory: mem, Shared: shared})
		}
		c.Nodes = append(c.Nodes, n)
	}
	return c
}

func item(id string, gpus int, sm, mem float64) elastico.PlacementItem {
	return elastico.PlacementItem{
		Job:     &elastico.Job{ID: id},
		Profile: &elastico.Profile{Family: id, Config: elastico.Configuration{ID: "c"}, Demand: elastico.Demand{GPUs: gpus, SM: sm, GPUMemory: mem, CPU: 1, RAM: 4}},
	}
}

func ref(n, g int) elastico.GPURef { return elastico.GPURef{Node: n, GPU: g} }

// spreadGang is a running on GPU ra (SM smA), b on rb (SM 0.9), and g, a
// 2-GPU gang whose job may spread.
func spreadGang(smA float64, ra, rb elastico.GPURef) []elastico.PlacementItem {
	a, b := item("a", 1, smA, 4), item("b", 1, 0.9, 4)
	a.Current, b.Current = []elastico.GPURef{ra}, []elastico.GPURef{rb}
	g := item("g", 2, 0.5, 4)
	g.Job.Spread = true
	return []elastico.PlacementItem{a, b, g}
}

// besideA is a running on n0's first GPU at SM 0.4, and b, the same, new.
func besideA() []elastico.PlacementItem {
	a := item("a", 1, 0.4, 4)
	a.Current = []elastico.GPURef{ref(0, 0)}
	return []elastico.PlacementItem{a, item("b", 1, 0.4, 4)}
}

// fakePredictor says how much each family slows the other: table[victim +
// "|" + aggressor], 1 when absent.
type fakePredictor map[string]float64

func (f fakePredictor) Slowdown(v, a *elastico.Profile) float64 {
	if s, ok := f[v.Family+"|"+a.Family]; ok {
		return s
	}
	return 1
}

// checkInvariants fails t if out breaks a rule of the package doc.
func checkInvariants(t *testing.T, cfg Config, req *elastico.PlacementRequest, out *elastico.Placement) {
	t.Helper()
	cfg, _ = cfg.withDefaults()
	type acc struct {
		sm, mem float64
		jobs    []int
	}
	gpus := map[elastico.GPURef]*acc{}
	nodeCPU := map[int]float64{}
	nodeRAM := map[int]float64{}
	if len(out.GPUs) != len(req.Items) || len(out.Reasons) != len(req.Items) {
		t.Fatalf("out has %d GPU sets and %d reasons for %d items", len(out.GPUs), len(out.Reasons), len(req.Items))
	}
	for i, gs := range out.GPUs {
		it := &req.Items[i]
		d := it.Profile.Demand
		if gs == nil {
			if out.Reasons[i] == "" {
				t.Errorf("item %d unplaced without a reason", i)
			}
			continue
		}
		if out.Reasons[i] != "" {
			t.Errorf("item %d placed with reason %q", i, out.Reasons[i])
		}
		if len(gs) != d.GPUs {
			t.Errorf("item %d has %d GPUs, wants %d", i, len(gs), d.GPUs)
		}
		seen := map[elastico.GPURef]bool{}
		for _, g := range gs {
			if seen[g] {
				t.Errorf("item %d holds %v twice", i, g)
			}
			seen[g] = true
			if m := req.Cluster.Nodes[g.Node].GPUs[g.GPU].Model; !it.Profile.RunsOn(m) {
				t.Errorf("item %d, profiled for %q, is on %v, a %q", i, it.Profile.Hardware.GPUModel, g, m)
			}
			if !it.Job.Spread && g.Node != gs[0].Node {
				t.Errorf("gang item %d spans nodes %d and %d", i, gs[0].Node, g.Node)
			}
			a := gpus[g]
			if a == nil {
				a = &acc{}
				gpus[g] = a
			}
			a.sm += d.SM
			a.mem += d.GPUMemory
			a.jobs = append(a.jobs, i)
			nodeCPU[g.Node] += d.CPU
			nodeRAM[g.Node] += d.RAM
		}
	}
	const slack = 1e-6
	for g, a := range gpus {
		hw := req.Cluster.Nodes[g.Node].GPUs[g.GPU]
		if a.sm > cfg.Oversubscription+slack {
			t.Errorf("GPU %s: SM %g > %g", hw.ID, a.sm, cfg.Oversubscription)
		}
		if a.mem > hw.Memory+slack {
			t.Errorf("GPU %s: memory %g > %g", hw.ID, a.mem, hw.Memory)
		}
		if len(a.jobs) > cfg.MaxJobsPerGPU {
			t.Errorf("GPU %s: %d jobs > %d", hw.ID, len(a.jobs), cfg.MaxJobsPerGPU)
		}
		if !hw.Shared && len(a.jobs) > 1 {
			t.Errorf("unshared GPU %s holds %d jobs", hw.ID, len(a.jobs))
		}
		for _, i := range a.jobs {
			for _, k := range req.Items[i].Avoid {
				for _, j := range a.jobs {
					if j == k {
						t.Errorf("GPU %s holds items %d and %d that must avoid each other", hw.ID, i, k)
					}
				}
			}
		}
	}
	// Greedy is maximal: an item left out (and free of Avoid lists) fits
	// nowhere even in the final state, since room only shrinks.
	avoided := map[int]bool{}
	for i := range req.Items {
		for _, k := range req.Items[i].Avoid {
			avoided[i], avoided[k] = true, true
		}
	}
	fitsGPU := func(g elastico.GPURef, d elastico.Demand) bool {
		hw := req.Cluster.Nodes[g.Node].GPUs[g.GPU]
		a := gpus[g]
		if a == nil {
			a = &acc{}
		}
		return len(a.jobs) < cfg.MaxJobsPerGPU && (hw.Shared || len(a.jobs) == 0) &&
			a.sm+d.SM <= cfg.Oversubscription+slack && a.mem+d.GPUMemory <= hw.Memory+slack
	}
	loud := func(i int, g elastico.GPURef) bool {
		a := gpus[g]
		if a == nil || req.Predictor == nil || !cfg.Sharing.On() {
			return false
		}
		for _, r := range a.jobs {
			p, q := req.Items[i].Profile, req.Items[r].Profile
			if !cfg.Sharing.Allows(req.Predictor.Slowdown(p, q), req.Predictor.Slowdown(q, p), iac.JobLimit(req.Items[i].Job, p), iac.JobLimit(req.Items[r].Job, q)) {
				return true
			}
		}
		return false
	}
	for i, gs := range out.GPUs {
		it := &req.Items[i]
		d := it.Profile.Demand
		if gs != nil || avoided[i] || (it.Job.Spread && d.GPUs > 1) {
			continue
		}
		waitsLoud := strings.HasPrefix(out.Reasons[i], ReasonLoud)
		// A search passes over at most LoudProbes loud GPUs (nodes, for a
		// gang; a quarter as many for a Quiet item) before it looks only
		// at empty GPUs: past that many, only an empty GPU is room.
		probes := cfg.LoudProbes
		if it.Quiet {
			probes = max(1, probes/4)
		}
		loudRoom := map[int]int{} // loud GPUs with room, per node
		total, nodes := 0, 0
		for n := range req.Cluster.Nodes {
			for g := range req.Cluster.Nodes[n].GPUs {
				if fitsGPU(ref(n, g), d) && loud(i, ref(n, g)) {
					loudRoom[n]++
					total++
				}
			}
			if loudRoom[n] > 0 {
				nodes++
			}
		}
		bounded := waitsLoud && (d.GPUs == 1 && total >= probes || d.GPUs > 1 && nodes >= probes)
		for n := range req.Cluster.Nodes {
			nd := &req.Cluster.Nodes[n]
			k := float64(d.GPUs)
			if nodeCPU[n]+k*d.CPU > nd.CPU+slack || nodeRAM[n]+k*d.RAM > nd.RAM+slack {
				continue
			}
			free := 0
			for g := range nd.GPUs {
				r := ref(n, g)
				if fitsGPU(r, d) && it.Profile.RunsOn(nd.GPUs[g].Model) && !(waitsLoud && loud(i, r)) && !(bounded && gpus[r] != nil && len(gpus[r].jobs) > 0) {
					free++
				}
			}
			if free >= d.GPUs {
				t.Errorf("item %d (%+v) left out (%q) but node %d has room for it", i, d, out.Reasons[i], n)
			}
		}
	}
	for n, v := range nodeCPU {
		if v > req.Cluster.Nodes[n].CPU+slack || nodeRAM[n] > req.Cluster.Nodes[n].RAM+slack {
			t.Errorf("node %d: CPU %g/%g RAM %g/%g", n, v, req.Cluster.Nodes[n].CPU, nodeRAM[n], req.Cluster.Nodes[n].RAM)
		}
	}
}

func TestNew(t *testing.T) {
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	want := Config{Oversubscription: 1, MaxJobsPerGPU: 2, TieCandidates: 4, LoudProbes: 8}
	if diff := gocmp.Diff(want, p.Config(), gocmp.AllowUnexported(iac.Limit{})); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	tests := []struct {
		name      string
		cfg       Config
		wantField string
	}{
		{"NaN oversubscription", Config{Oversubscription: math.NaN()}, "Oversubscription"},
		{"negative oversubscription", Config{Oversubscription: -1}, "Oversubscription"},
		{"huge oversubscription", Config{Oversubscription: 5}, "Oversubscription"},
		{"negative max jobs", Config{MaxJobsPerGPU: -1}, "MaxJobsPerGPU"},
		{"too many jobs", Config{MaxJobsPerGPU: 65}, "MaxJobsPerGPU"},
		{"negative ties", Config{TieCandidates: -2}, "TieCandidates"},
		{"negative loud probes", Config{LoudProbes: -1}, "LoudProbes"},
		{"too many loud probes", Config{LoudProbes: MaxLoudProbes + 1}, "LoudProbes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tt.wantField) {
				t.Errorf("New(%+v) = %v, want an ErrConfig naming %s", tt.cfg, err, tt.wantField)
			}
		})
	}
}

func TestPlace(t *testing.T) {
	tests := []struct {
		name        string
		cfg         Config
		cluster     *elastico.Cluster
		items       []elastico.PlacementItem
		predictor   elastico.Predictor
		lastResort  bool // the request's LoudLastResort
		wantGPUs    [][]elastico.GPURef
		wantReasons []string // substrings; "" for a placed item
	}{
		{
			name:     "two halves share one GPU (best fit)",
			cluster:  cluster(1, 2, 16, true, 32, 256),
			items:    []elastico.PlacementItem{item("a", 1, 0.5, 4), item("b", 1, 0.5, 4)},
			wantGPUs: [][]elastico.GPURef{{ref(0, 0)}, {ref(0, 0)}},
		},
		{
			name:     "SM above one GPU separates",
			cluster:  cluster(1, 2, 16, true, 32, 256),
			items:    []elastico.PlacementItem{item("a", 1, 0.6, 4), item("b", 1, 0.6, 4)},
			wantGPUs: [][]elastico.GPURef{{ref(0, 0)}, {ref(0, 1)}},
		},
		{
			name:     "oversubscription lets them share",
			cfg:      Config{Oversubscription: 1.5},
			cluster:  cluster(1, 2, 16, true, 32, 256),
			items:    []elastico.PlacementItem{item("a", 1, 0.6, 4), item("b", 1, 0.6, 4)},
			wantGPUs: [][]elastico.GPURef{{ref(0, 0)}, {ref(0, 0)}},
		},
		{
			name:     "memory above the GPU separates",
			cluster:  cluster(1, 2, 16, true, 32, 256),
			items:    []elastico.PlacementItem{item("a", 1, 0.3, 10), item("b", 1, 0.3, 10)},
			wantGPUs: [][]elastico.GPURef{{ref(0, 0)}, {ref(0, 1)}},
		},
		{
			name:        "an unshared GPU holds one job",
			cluster:     cluster(1, 1, 16, false, 32, 256),
			items:       []elastico.PlacementItem{item("a", 1, 0.2, 2), item("b", 1, 0.2, 2)},
			wantGPUs:    [][]elastico.GPURef{{ref(0, 0)}, nil},
			wantReasons: []string{"", "no GPU has 0.20 SM"},
		},
		{
			name:        "at most two jobs per GPU by default",
			cluster:     cluster(1, 1, 16, true, 32, 256),
			items:       []elastico.PlacementItem{item("a", 1, 0.2, 2), item("b", 1, 0.2, 2), item("c", 1, 0.2, 2)},
			wantGPUs:    [][]elastico.GPURef{{ref(0, 0)}, {ref(0, 0)}, nil},
			wantReasons: []string{"", "", "no GPU has"},
		},
		{
			name:     "MaxJobsPerGPU 3",
			cfg:      Config{MaxJobsPerGPU: 3},
			cluster:  cluster(1, 1, 16, true, 32, 256),
			items:    []elastico.PlacementItem{item("a", 1, 0.2, 2), item("b", 1, 0.2, 2), item("c", 1, 0.2, 2)},
			wantGPUs: [][]elastico.GPURef{{ref(0, 0)}, {ref(0, 0)}, {ref(0, 0)}},
		},
		{
			name:        "a gang stays on one node",
			cluster:     cluster(2, 1, 16, true, 32, 256),
			items:       []elastico.PlacementItem{item("g", 2, 0.5, 4)},
			wantGPUs:    [][]elastico.GPURef{nil},
			wantReasons: []string{"needs 2 GPUs on one node; the largest node has 1"},
		},
		{
			name:    "a spread gang crosses nodes",
			cluster: cluster(2, 1, 16, true, 32, 256),
			items: func() []elastico.PlacementItem {
				it := item("g", 2, 0.5, 4)
				it.Job.Spread = true
				return []elastico.PlacementItem{it}
			}(),
			wantGPUs: [][]elastico.GPURef{{ref(0, 0), ref(1, 0)}},
		},
		{
			// Spread is allowed, not wanted: replica by replica, best fit
			// would put one beside a on n0 (b fills n0's other GPU) and
			// one on n1.
			name:     "a spread gang stays on one node when one holds it",
			cluster:  cluster(2, 2, 16, true, 32, 256),
			items:    spreadGang(0.4, ref(0, 0), ref(0, 1)),
			wantGPUs: [][]elastico.GPURef{{ref(0, 0)}, {ref(0, 1)}, {ref(1, 0), ref(1, 1)}},
		},
		{
			// The default packs: b goes beside a, on the fuller GPU.
			name:     "packs by default",
			cluster:  cluster(1, 2, 16, true, 32, 256),
			items:    besideA(),
			wantGPUs: [][]elastico.GPURef{{ref(0, 0)}, {ref(0, 0)}},
		},
		{
			name:     "ShareLast: a free GPU first",
			cfg:      Config{ShareLast: true},
			cluster:  cluster(1, 2, 16, true, 32, 256),
			items:    besideA(),
			wantGPUs: [][]elastico.GPURef{{ref(0, 0)}, {ref(0, 1)}},
		},
		{
			// Each node has one free GPU: a gang that may spread waits for
			// a node unless told to spread anyway.
			name:        "a spread gang waits for one node",
			cluster:     cluster(2, 2, 16, true, 32, 256),
			items:       spreadGang(0.9, ref(0, 0), ref(1, 0)),
			wantGPUs:    [][]elastico.GPURef{{ref(0, 0)}, {ref(1, 0)}, nil},
			wantReasons: []string{"", "", "no node has 2 GPUs with 0.50 SM and 4.0 GiB free each, and 2.0 CPU and 8.0 GiB RAM free"},
		},
		{
			// Of the empty GPUs, one beside a on node 1 rather than node
			// 0's: node 0 stays whole for a gang.
			name:    "an empty GPU on the fuller node",
			cluster: cluster(2, 4, 16, false, 32, 256),
			items: func() []elastico.PlacementItem {
				a := item("a", 1, 0.5, 4)
				a.Current = []elastico.GPURef{ref(1, 0)}
				return []elastico.PlacementItem{a, item("b", 1, 0.5, 4)}
			}(),
			wantGPUs: [][]elastico.GPURef{{ref(1, 0)}, {ref(1, 1)}},
		},
		{
			// It ran on 4 GPUs of both nodes; shrunk to 2, it keeps
			// node 1's (its first current GPU's), not one of each.
			name:    "a spread gang that shrinks stays on one node",
			cluster: cluster(2, 2, 16, true, 32, 256),
			items: func() []elastico.PlacementItem {
				g := item("g", 2, 0.5, 4)
				g.Job.Spread = true
				g.Current = []elastico.GPURef{ref(1, 0), ref(0, 0), ref(1, 1), ref(0, 1)}
				return []elastico.PlacementItem{g}
			}(),
			wantGPUs: [][]elastico.GPURef{{ref(1, 0), ref(1, 1)}},
		},
		{
			name:     "SpreadAnyway: a spread gang crosses nodes when no node has room",
			cfg:      Config{SpreadAnyway: true},
			cluster:  cluster(2, 2, 16, true, 32, 256),
			items:    spreadGang(0.9, ref(0, 0), ref(1, 0)),
			wantGPUs: [][]elastico.GPURef{{ref(0, 0)}, {ref(1, 0)}, {ref(0, 1), ref(1, 1)}},
		},
		{
			name:    "a gang is all or nothing",
			cluster: cluster(1, 2, 16, true, 32, 256),
			items: func() []elastico.PlacementItem {
				big := item("big", 1, 0.9, 4)
				big.Current = []elastico.GPURef{ref(0, 1)}
				return []elastico.PlacementItem{big, item("g", 2, 0.5, 4)}
			}(),
			wantGPUs:    [][]elastico.GPURef{{ref(0, 1)}, nil},
			wantReasons: []string{"", "no node has 2 GPUs with 0.50 SM"},
		},
		{
			name:    "node CPU limits replicas",
			cluster: cluster(2, 2, 16, true, 1.5, 256),
			items:   []elastico.PlacementItem{item("a", 1, 0.3, 2), item("b", 1, 0.3, 2)},
			// Each replica takes 1 CPU: the second cannot join node 1.
			wantGPUs: [][]elastico.GPURef{{ref(0, 0)}, {ref(1, 0)}},
		},
		{
			name:    "largest first",
			cluster: cluster(1, 2, 16, true, 32, 256),
			items:   []elastico.PlacementItem{item("small", 1, 0.3, 2), item("big", 1, 0.8, 12)},
			// big goes first and takes GPU 0; small does not fit beside it
			// (SM 1.1 > 1), so GPU 1.
			wantGPUs: [][]elastico.GPURef{{ref(0, 1)}, {ref(0, 0)}},
		},
		{
			name:    "sticky: a running job keeps its GPU",
			cluster: cluster(1, 2, 16, true, 32, 256),
			items: func() []elastico.PlacementItem {
				a, b := item("a", 1, 0.5, 4), item("b", 1, 0.5, 4)
				a.Current = []elastico.GPURef{ref(0, 0)}
				b.Current = []elastico.GPURef{ref(0, 1)}
				return []elastico.PlacementItem{a, b}
			}(),
			wantGPUs: [][]elastico.GPURef{{ref(0, 0)}, {ref(0, 1)}},
		},
		{
			name:    "sticky: a job moves when its GPU no longer holds it",
			cluster: cluster(1, 2, 16, true, 32, 256),
			items: func() []elastico.PlacementItem {
				a, b := item("a", 1, 0.7, 4), item("b", 1, 0.6, 4)
				a.Current = []elastico.GPURef{ref(0, 0)}
				b.Current = []elastico.GPURef{ref(0, 0)}
				return []elastico.PlacementItem{a, b}
			}(),
			wantGPUs: [][]elastico.GPURef{{ref(0, 0)}, {ref(0, 1)}},
		},
		{
			name:    "sticky: a shrinking gang keeps a subset of its GPUs",
			cluster: cluster(1, 4, 16, true, 32, 256),
			items: func() []elastico.PlacementItem {
				a := item("a", 2, 0.5, 4)
				a.Current = []elastico.GPURef{ref(0, 0), ref(0, 2), ref(0, 3)}
				return []elastico.PlacementItem{a}
			}(),
			wantGPUs: [][]elastico.GPURef{{ref(0, 0), ref(0, 2)}},
		},
		{
			name:    "sticky: a growing gang keeps its GPU and its node",
			cluster: cluster(2, 2, 16, true, 32, 256),
			items: func() []elastico.PlacementItem {
				a := item("a", 2, 0.5, 4)
				a.Current = []elastico.GPURef{ref(0, 1)}
				return []elastico.PlacementItem{a}
			}(),
			wantGPUs: [][]elastico.GPURef{{ref(0, 1), ref(0, 0)}},
		},
		{
			name:    "avoid separates a pair",
			cluster: cluster(1, 2, 16, true, 32, 256),
			items: func() []elastico.PlacementItem {
				a, b := item("a", 1, 0.4, 4), item("b", 1, 0.4, 4)
				b.Avoid = []int{0}
				return []elastico.PlacementItem{a, b}
			}(),
			wantGPUs: [][]elastico.GPURef{{ref(0, 0)}, {ref(0, 1)}},
		},
		{
			name:    "avoid is symmetric and can leave an item out",
			cluster: cluster(1, 1, 16, true, 32, 256),
			items: func() []elastico.PlacementItem {
				a, b := item("a", 1, 0.4, 4), item("b", 1, 0.3, 4)
				a.Avoid = []int{1}
				return []elastico.PlacementItem{a, b}
			}(),
			wantGPUs:    [][]elastico.GPURef{{ref(0, 0)}, nil},
			wantReasons: []string{"", "must not share a GPU with"},
		},
		{
			name:    "ties go to the quieter neighbour",
			cluster: cluster(1, 2, 16, true, 32, 256),
			items: func() []elastico.PlacementItem {
				loud, quiet, x := item("loud", 1, 0.4, 4), item("quiet", 1, 0.4, 4), item("x", 1, 0.4, 4)
				loud.Current = []elastico.GPURef{ref(0, 1)}
				quiet.Current = []elastico.GPURef{ref(0, 0)}
				return []elastico.PlacementItem{loud, quiet, x}
			}(),
			predictor: fakePredictor{"x|quiet": 1.6, "loud|x": 1.1},
			wantGPUs:  [][]elastico.GPURef{{ref(0, 1)}, {ref(0, 0)}, {ref(0, 1)}},
		},
		{
			name:    "without a predictor the tie goes to the most recent bucket entry",
			cluster: cluster(1, 2, 16, true, 32, 256),
			items: func() []elastico.PlacementItem {
				loud, quiet, x := item("loud", 1, 0.4, 4), item("quiet", 1, 0.4, 4), item("x", 1, 0.4, 4)
				loud.Current = []elastico.GPURef{ref(0, 1)}
				quiet.Current = []elastico.GPURef{ref(0, 0)}
				return []elastico.PlacementItem{loud, quiet, x}
			}(),
			wantGPUs: [][]elastico.GPURef{{ref(0, 1)}, {ref(0, 0)}, {ref(0, 0)}},
		},
		{
			name:      "Sharing: a loud neighbour is passed over for an empty GPU",
			cfg:       Config{Sharing: iac.MaxSlowdown(1.2)},
			cluster:   cluster(1, 2, 16, true, 32, 256),
			items:     besideLoud("x", 1, false),
			predictor: fakePredictor{"x|loud": 1.6},
			wantGPUs:  [][]elastico.GPURef{{ref(0, 0)}, {ref(0, 1)}},
		},
		{
			name:      "without a sharing rule best fit shares the loud GPU",
			cluster:   cluster(1, 2, 16, true, 32, 256),
			items:     besideLoud("x", 1, false),
			predictor: fakePredictor{"x|loud": 1.6},
			wantGPUs:  [][]elastico.GPURef{{ref(0, 0)}, {ref(0, 0)}},
		},
		{
			name:      "LoudLastResort: the loud GPU rather than nothing",
			cfg:       Config{Sharing: iac.MaxSlowdown(1.2), LoudLastResort: true},
			cluster:   cluster(1, 1, 16, true, 32, 256),
			items:     besideLoud("x", 1, false),
			predictor: fakePredictor{"loud|x": 1.6},
			wantGPUs:  [][]elastico.GPURef{{ref(0, 0)}, {ref(0, 0)}},
		},
		{
			name:       "a request's LoudLastResort: the loud GPU rather than nothing",
			cfg:        Config{Sharing: iac.MaxSlowdown(1.2)},
			cluster:    cluster(1, 1, 16, true, 32, 256),
			items:      besideLoud("x", 1, false),
			predictor:  fakePredictor{"loud|x": 1.6},
			lastResort: true,
			wantGPUs:   [][]elastico.GPURef{{ref(0, 0)}, {ref(0, 0)}},
		},
		{
			name:    "LoudProbes: the search stops at the first loud GPU",
			cfg:     Config{Sharing: iac.MaxSlowdown(1.2), LoudProbes: 1},
			cluster: cluster(1, 3, 16, true, 32, 256),
			items:   loudThenQuiet(),
			// Best fit tries g0 (loud) first; with one probe it then
			// looks only for empty GPUs, and there are none.
			predictor:   fakePredictor{"x|r0": 1.6, "x|r1": 1.6},
			wantGPUs:    [][]elastico.GPURef{{ref(0, 0)}, {ref(0, 1)}, {ref(0, 2)}, nil},
			wantReasons: []string{"", "", "", ReasonLoud + "pairs within 1.2×"},
		},
		{
			name:      "LoudProbes: a wider search finds the quiet GPU behind two loud ones",
			cfg:       Config{Sharing: iac.MaxSlowdown(1.2), LoudProbes: 3},
			cluster:   cluster(1, 3, 16, true, 32, 256),
			items:     loudThenQuiet(),
			predictor: fakePredictor{"x|r0": 1.6, "x|r1": 1.6},
			wantGPUs:  [][]elastico.GPURef{{ref(0, 0)}, {ref(0, 1)}, {ref(0, 2)}, {ref(0, 2)}},
		},
		{
			name:        "LoudLastResort: a Quiet item waits rather than take the loud GPU",
			cfg:         Config{Sharing: iac.MaxSlowdown(1.2), LoudLastResort: true},
			cluster:     cluster(1, 1, 16, true, 32, 256),
			items:       besideLoud("x", 1, true),
			predictor:   fakePredictor{"loud|x": 1.6},
			wantGPUs:    [][]elastico.GPURef{{ref(0, 0)}, nil},
			wantReasons: []string{"", ReasonLoud + "pairs within 1.2×"},
		},
		{
			name:        "LoudLastResort: a Quiet gang waits rather than take a loud GPU",
			cfg:         Config{Sharing: iac.MaxSlowdown(1.2), LoudLastResort: true},
			cluster:     cluster(1, 2, 16, true, 32, 256),
			items:       besideLoud("g", 2, true),
			predictor:   fakePredictor{"g|loud": 1.6},
			wantGPUs:    [][]elastico.GPURef{{ref(0, 0)}, nil},
			wantReasons: []string{"", ReasonLoud + "pairs within 1.2×"},
		},
		{
			name:        "Sharing: nothing rather than the loud GPU",
			cfg:         Config{Sharing: iac.MaxSlowdown(1.2)},
			cluster:     cluster(1, 1, 16, true, 32, 256),
			items:       besideLoud("x", 1, false),
			predictor:   fakePredictor{"loud|x": 1.6},
			wantGPUs:    [][]elastico.GPURef{{ref(0, 0)}, nil},
			wantReasons: []string{"", ReasonLoud + "pairs within 1.2×"},
		},
		{
			name:      "Sharing: a gang prefers quiet GPUs on its node",
			cfg:       Config{Sharing: iac.MaxSlowdown(1.2)},
			cluster:   cluster(1, 3, 16, true, 32, 256),
			items:     besideLoud("g", 2, false),
			predictor: fakePredictor{"g|loud": 1.6},
			wantGPUs:  [][]elastico.GPURef{{ref(0, 0)}, {ref(0, 1), ref(0, 2)}},
		},
		{
			name:        "memory above every GPU",
			cluster:     cluster(1, 2, 16, true, 32, 256),
			items:       []elastico.PlacementItem{item("a", 1, 0.4, 40)},
			wantGPUs:    [][]elastico.GPURef{nil},
			wantReasons: []string{"needs 40.0 GiB of GPU memory per replica; the largest GPU has 16.0 GiB"},
		},
		{
			name: "best fit prefers the smaller GPU",
			cluster: &elastico.Cluster{Nodes: []elastico.Node{{ID: "n", CPU: 8, RAM: 64, GPUs: []elastico.GPU{
				{ID: "big", Memory: 80, Shared: true}, {ID: "small", Memory: 16, Shared: true},
			}}}},
			items:    []elastico.PlacementItem{item("a", 1, 0.4, 12), item("b", 1, 0.4, 30)},
			wantGPUs: [][]elastico.GPURef{{ref(0, 1)}, {ref(0, 0)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := New(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			req := &elastico.PlacementRequest{Cluster: tt.cluster, Items: tt.items, Predictor: tt.predictor, LoudLastResort: tt.lastResort}
			var out elastico.Placement
			if err := p.Place(context.Background(), req, &out); err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, tt.cfg, req, &out)
			if diff := gocmp.Diff(tt.wantGPUs, out.GPUs); diff != "" {
				t.Errorf("GPUs (-want +got):\n%s", diff)
			}
			for i, r := range out.Reasons {
				want := ""
				if tt.wantReasons != nil {
					want = tt.wantReasons[i]
				}
				if (want == "") != (r == "") || !strings.Contains(r, want) {
					t.Errorf("Reasons[%d] = %q, want it to contain %q", i, r, want)
				}
			}
		})
	}
}

func TestPlaceValidation(t *testing.T) {
	good := func() *elastico.PlacementRequest {
		return &elastico.PlacementRequest{Cluster: cluster(1, 2, 16, true, 8, 64), Items: []elastico.PlacementItem{item("a", 1, 0.5, 4), item("b", 1, 0.5, 4)}}
	}
	tests := []struct {
		name      string
		mutate    func(*elastico.PlacementRequest)
		wantField string
	}{
		{"nil cluster", func(r *elastico.PlacementRequest) { r.Cluster = nil }, "Cluster"},
		{"nil job", func(r *elastico.PlacementRequest) { r.Items[1].Job = nil }, "Items[1].Job"},
		{"nil profile", func(r *elastico.PlacementRequest) { r.Items[0].Profile = nil }, "Items[0].Profile"},
		{"zero GPUs", func(r *elastico.PlacementRequest) { r.Items[0].Profile.Demand.GPUs = 0 }, "Items[0].Profile.Demand.GPUs"},
		{"NaN SM", func(r *elastico.PlacementRequest) { r.Items[1].Profile.Demand.SM = math.NaN() }, "Items[1].Profile.Demand.SM"},
		{"SM above one", func(r *elastico.PlacementRequest) { r.Items[1].Profile.Demand.SM = 1.5 }, "Items[1].Profile.Demand.SM"},
		{"infinite memory", func(r *elastico.PlacementRequest) { r.Items[0].Profile.Demand.GPUMemory = math.Inf(1) }, "Items[0].Profile.Demand.GPUMemory"},
		{"negative RAM", func(r *elastico.PlacementRequest) { r.Items[0].Profile.Demand.RAM = -1 }, "Items[0].Profile.Demand.RAM"},
		{"current GPU absent", func(r *elastico.PlacementRequest) { r.Items[0].Current = []elastico.GPURef{ref(0, 7)} }, "Items[0].Current[0]"},
		{"current node absent", func(r *elastico.PlacementRequest) { r.Items[0].Current = []elastico.GPURef{ref(3, 0)} }, "Items[0].Current[0]"},
		{"avoid self", func(r *elastico.PlacementRequest) { r.Items[1].Avoid = []int{1} }, "Items[1].Avoid[0]"},
		{"avoid out of range", func(r *elastico.PlacementRequest) { r.Items[0].Avoid = []int{5} }, "Items[0].Avoid[0]"},
		{"NaN node CPU", func(r *elastico.PlacementRequest) { r.Cluster.Nodes[0].CPU = math.NaN() }, "CPU"},
		{"negative GPU memory", func(r *elastico.PlacementRequest) { r.Cluster.Nodes[0].GPUs[1].Memory = -16 }, "Memory"},
	}
	p, _ := New(Config{})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := good()
			tt.mutate(req)
			var out elastico.Placement
			err := p.Place(context.Background(), req, &out)
			if !errors.Is(err, elastico.ErrInvalid) || !strings.HasPrefix(err.Error(), "placement: ") || !strings.Contains(err.Error(), tt.wantField) {
				t.Errorf("Place = %v, want a placement: error wrapping ErrInvalid naming %s", err, tt.wantField)
			}
		})
	}
}

func TestPlaceCancelled(t *testing.T) {
	p, _ := New(Config{})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	req := &elastico.PlacementRequest{Cluster: cluster(1, 1, 16, true, 8, 64), Items: []elastico.PlacementItem{item("a", 1, 0.5, 4)}}
	if err := p.Place(ctx, req, &elastico.Placement{}); !errors.Is(err, context.Canceled) {
		t.Errorf("Place on a cancelled context = %v, want context.Canceled", err)
	}
}

// randomRequest is a cluster of mixed GPUs with a mix of single, gang and
// spread items, some running, some avoiding others.
func randomRequest(r *rand.Rand, nodes, items int) *elastico.PlacementRequest {
	c := &elastico.Cluster{}
	for i := range nodes {
		n := elastico.Node{ID: fmt.Sprintf("n%d", i), CPU: float64(16 + r.IntN(64)), RAM: float64(64 + r.IntN(512))}
		mem := []float64{16, 32, 40, 80}[r.IntN(4)]
		for k := range 1 + r.IntN(8) {
			n.GPUs = append(n.GPUs, elastico.GPU{ID: fmt.Sprintf("n%dg%d", i, k), Memory: mem, Shared: r.IntN(5) > 0})
		}
		c.Nodes = append(c.Nodes, n)
	}
	req := &elastico.PlacementRequest{Cluster: c}
	for i := range items {
		g := []int{1, 1, 1, 1, 2, 4, 8}[r.IntN(7)]
		it := item(fmt.Sprintf("j%d", i), g, 0.05+0.95*r.Float64(), 1+30*r.Float64())
		it.Profile.Demand.CPU = float64(1 + r.IntN(8))
		it.Profile.Demand.RAM = float64(4 + r.IntN(64))
		it.Job.Spread = r.IntN(6) == 0
		if r.IntN(3) == 0 {
			n := r.IntN(nodes)
			for k := range g {
				if ng := len(c.Nodes[n].GPUs); k < ng {
					it.Current = append(it.Current, ref(n, (k+i)%ng))
				}
			}
		}
		if i > 0 && r.IntN(8) == 0 {
			it.Avoid = []int{r.IntN(i)}
		}
		req.Items = append(req.Items, it)
	}
	return req
}

// TestPlaceRandom checks the rules on random requests, and that a Placer
// gives the same answer twice (its pooled scratch space carries nothing
// over).
func TestPlaceRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		cfg := Config{MaxJobsPerGPU: 1 + r.IntN(4), Oversubscription: []float64{0, 1, 1.5}[r.IntN(3)], Sharing: []iac.Limit{{}, iac.MaxSlowdown(1.1)}[r.IntN(2)]}
		p, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		req := randomRequest(r, 1+r.IntN(12), r.IntN(60))
		if r.IntN(2) == 0 {
			req.Predictor = fakePredictor{"j1|j2": 1.5, "j3|j1": 1.2}
		}
		var a, b elastico.Placement
		if err := p.Place(context.Background(), req, &a); err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		checkInvariants(t, cfg, req, &a)
		if err := p.Place(context.Background(), req, &b); err != nil {
			t.Fatal(err)
		}
		if diff := gocmp.Diff(a, b); diff != "" {
			t.Fatalf("trial %d: two calls differ (-first +second):\n%s", trial, diff)
		}
	}
}

// TestPlaceSticky checks that when every running job still fits where it
// runs, no job moves.
func TestPlaceSticky(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	p, _ := New(Config{})
	for trial := range 50 {
		req := randomRequest(r, 8, 40)
		for i := range req.Items {
			req.Items[i].Current = nil
			req.Items[i].Avoid = nil
		}
		var first elastico.Placement
		if err := p.Place(context.Background(), req, &first); err != nil {
			t.Fatal(err)
		}
		// Feed the placement back as the current one, in a shuffled order,
		// with no more demand: everything stays.
		perm := r.Perm(len(req.Items))
		next := &elastico.PlacementRequest{Cluster: req.Cluster}
		for _, i := range perm {
			it := req.Items[i]
			it.Current = first.GPUs[i]
			next.Items = append(next.Items, it)
		}
		var second elastico.Placement
		if err := p.Place(context.Background(), next, &second); err != nil {
			t.Fatal(err)
		}
		for k, i := range perm {
			if first.GPUs[i] == nil {
				continue
			}
			if diff := gocmp.Diff(first.GPUs[i], second.GPUs[k]); diff != "" {
				t.Errorf("trial %d: item %d moved (-before +after):\n%s", trial, i, diff)
			}
		}
	}
}

// TestSortByKey: the radix sort orders exactly as the comparison sort.
func TestSortByKey(t *testing.T) {
	r := rand.New(rand.NewPCG(4, 4))
	for _, n := range []int{0, 1, 10, radixMin, 3000} {
		req := &elastico.PlacementRequest{Cluster: cluster(1, 1, 16, true, 8, 64)}
		for i := range n {
			g := 1 + r.IntN(3)
			sm := []float64{0.25, 0.5, 0.5, r.Float64()}[r.IntN(4)]
			req.Items = append(req.Items, item(fmt.Sprint(i), g, max(sm, 0.01), 1))
		}
		w := &work{}
		if err := w.setup(Config{Oversubscription: 1, MaxJobsPerGPU: 2, TieCandidates: 4}, req); err != nil {
			t.Fatal(err)
		}
		a, b := make([]int32, n), make([]int32, n)
		for i := range n {
			a[i], b[i] = int32(i), int32(i)
		}
		w.radixSort(a)
		keys := w.keys[:0]
		for _, i := range b {
			keys = append(keys, sortKey{share: w.keyOf[i], gpus: int32(req.Items[i].Profile.Demand.GPUs), i: i})
		}
		slices.SortFunc(keys, func(x, y sortKey) int {
			if x.share != y.share {
				return cmp.Compare(y.share, x.share)
			}
			if x.gpus != y.gpus {
				return cmp.Compare(y.gpus, x.gpus)
			}
			return cmp.Compare(x.i, y.i)
		})
		for k := range keys {
			b[k] = keys[k].i
		}
		if !slices.Equal(a, b) {
			t.Fatalf("n=%d: radix order differs from comparison order", n)
		}
	}
}

// loudThenQuiet: three GPUs, each with a resident; x fits best beside r0,
// then r1, then r2 (the most memory left).
// besideLoud returns a running item "loud" on GPU (0, 0) and a new item
// of the given name and GPUs (Quiet if quiet), both 0.4 SM and 4 GiB.
func besideLoud(name string, gpus int, quiet bool) []elastico.PlacementItem {
	loud, x := item("loud", 1, 0.4, 4), item(name, gpus, 0.4, 4)
	loud.Current = []elastico.GPURef{ref(0, 0)}
	x.Quiet = quiet
	return []elastico.PlacementItem{loud, x}
}

func loudThenQuiet() []elastico.PlacementItem {
	r0, r1, r2, x := item("r0", 1, 0.3, 8), item("r1", 1, 0.3, 7), item("r2", 1, 0.3, 6), item("x", 1, 0.3, 4)
	r0.Current = []elastico.GPURef{ref(0, 0)}
	r1.Current = []elastico.GPURef{ref(0, 1)}
	r2.Current = []elastico.GPURef{ref(0, 2)}
	return []elastico.PlacementItem{r0, r1, r2, x}
}

// byItem answers by item what its fakePredictor answers by profile, and
// counts how often it was asked each way.
type byItem struct {
	fakePredictor
	items             []elastico.PlacementItem
	asItems, asProfil int
}

func (b *byItem) Slowdown(v, a *elastico.Profile) float64 {
	b.asProfil++
	return b.fakePredictor.Slowdown(v, a)
}

func (b *byItem) SlowdownItems(v, a int) float64 {
	b.asItems++
	return b.fakePredictor.Slowdown(b.items[v].Profile, b.items[a].Profile)
}

// TestItemPredictor: a Predictor that answers by item is asked that way,
// and the placement is the one its answers by profile give.
func TestItemPredictor(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	table := fakePredictor{"j1|j2": 1.5, "j3|j1": 1.2, "j2|j4": 1.3, "j5|j0": 2}
	asked := 0
	for trial := range 100 {
		cfg := Config{MaxJobsPerGPU: 1 + r.IntN(3), Sharing: []iac.Limit{{}, iac.MaxSlowdown(1.1)}[r.IntN(2)]}
		p, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		req := randomRequest(r, 1+r.IntN(6), r.IntN(40))
		req.Predictor = table
		var want, got elastico.Placement
		if err := p.Place(context.Background(), req, &want); err != nil {
			t.Fatal(err)
		}
		ip := &byItem{fakePredictor: table, items: req.Items}
		req.Predictor = ip
		if err := p.Place(context.Background(), req, &got); err != nil {
			t.Fatal(err)
		}
		if diff := gocmp.Diff(want, got); diff != "" {
			t.Fatalf("trial %d: by item and by profile differ (-profile +item):\n%s", trial, diff)
		}
		asked += ip.asItems
	}
	if asked == 0 {
		t.Fatal("no trial asked by item: the test checks nothing")
	}
}
