package sim

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/gavel"
	"github.com/elastico/elastico/rst"
)

// The Alibaba GPU cluster trace v2023 ("openb", Weng et al., ATC'23) names
// seven GPU models: its pods' gpu_spec lists those a pod may run on, and its
// node list gives each node's model. No data set measured Gavel's jobs on
// most of them, so each maps onto a ground truth the simulator has
// (openbModels); the replay's README gives the table.

// openbModel is how one of the trace's GPU models is simulated.
type openbModel struct {
	spec GPUSpec
	// gavel is Gavel's GPU model whose measurements it carries.
	gavel string
	// ratio, when set, makes the truth an estimate: Gavel's throughputs
	// of each model × ratio(model), every configuration Interpolated.
	ratio func(model string) (float64, error)
	basis string // the mapping and where its figures come from
}

// Memory per model is what nvidia-smi reports, as the trace's own
// simulator lists it (github.com/hkust-adsl/kubernetes-scheduler-simulator,
// pkg/type/open-gpu-share/utils/const.go, MapGpuTypeMemoryMiB): V100M32
// 32,510 MiB, A10 22,731 MiB, and for the undisclosed G1, G2, G3 its
// placeholders of 10,000, 20,000 and 30,000 MiB.
var openbModels = map[string]openbModel{
	"V100M16": {spec: withModel(V100, "V100M16", V100.Memory), gavel: gavel.V100,
		basis: "Gavel's V100 measurements (V100-SXM2-16GB, the same part)"},
	"V100M32": {spec: withModel(V100, "V100M32", 32510.0/1024), gavel: gavel.V100,
		basis: "Gavel's V100 measurements (the same chip with 32 GB; 31.75 GiB usable)"},
	"P100": {spec: P100, gavel: gavel.P100,
		basis: "Gavel's P100 measurements (P100-PCIE-16GB)"},
	"T4": {spec: T4, gavel: gavel.V100, ratio: func(string) (float64, error) { return t4Ratio, nil },
		basis: fmt.Sprintf("estimated: Gavel's V100 × %.2f, ResNet-18 on CIFAR-10 as Pollux measured it on a T4 over Gavel's V100 (the one network both measured in FP32); Pollux's T4 families are other jobs", t4Ratio)},
	"A10": {spec: a10, gavel: gavel.V100, ratio: func(m string) (float64, error) { r, _, err := rst.SpeedRatio(m, "a10"); return r, err },
		basis: "estimated: Gavel's V100 × rst.SpeedRatio(model, \"a10\"), Lambda's A10 over V100 benchmarks (0.95× ResNet-50, 1.29× Transformer-XL, 0.91× NCF)"},
	"G1": undisclosed("G1", 10000),
	"G2": undisclosed("G2", 20000),
	"G3": undisclosed("G3", 30000),
}

// t4Ratio is the T4's throughput over the V100's: Pollux's cifar10
// (ResNet-18 on CIFAR-10, FP32) on one T4 at local batches 129 and 257
// (1,242 and 1,374 samples/s) over Gavel's ResNet-18 on one V100 at 128
// and 256 (2,303 and 2,637), geometric mean. TestT4Ratio recomputes it.
const t4Ratio = 0.53

// a10 is the A10 as rst.GPUSpecOf("a10") has it, 72 SMs.
var a10 = func() GPUSpec {
	g, _ := rst.GPUSpecOf("a10")
	return GPUSpec{Model: "A10", Memory: g.Memory, SMs: 72, PerNode: 1, NodeCPU: 128, NodeRAM: 1024, BandwidthGBs: g.BandwidthGBs, TensorTFLOPs: g.TensorTFLOPs}
}()

// undisclosed is the fallback for Alibaba's undisclosed models: nothing
// says how fast they are, so they run at Gavel's V100 throughputs (ratio
// 1), with the trace simulator's placeholder memory, marked estimated.
func undisclosed(name string, mib float64) openbModel {
	return openbModel{spec: withModel(V100, name, mib/1024), gavel: gavel.V100,
		ratio: func(string) (float64, error) { return 1, nil },
		basis: fmt.Sprintf("no defensible mapping (undisclosed by Alibaba): fallback, Gavel's V100 throughputs (ratio 1, estimated) with %.0f MiB, the trace simulator's placeholder", mib)}
}

func withModel(g GPUSpec, model string, mem float64) GPUSpec {
	g.Model, g.Memory = model, mem
	return g
}

// OpenBModels returns the trace's GPU models, sorted.
func OpenBModels() []string {
	out := make([]string, 0, len(openbModels))
	for m := range openbModels {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

// OpenBGroundTruth says which ground truth simulates the trace's GPU model
// and where its figures come from.
func OpenBGroundTruth(model string) (string, bool) {
	m, ok := openbModels[model]
	return m.basis, ok
}

// parseGPUSpec reads a pod's gpu_spec: models joined by "|"
// ("V100M16|V100M32"), empty (or "nan", as pandas prints it) for any. Empty
// parts are dropped, as the trace's own converter does
// (kubernetes-scheduler-simulator, data/pod_csv_to_yaml.py: split('|'),
// then len(x) > 0), and a node matches when its model equals one of them
// (pkg/utils/utils.go, IsNodeAccessibleToPod).
func parseGPUSpec(s string) ([]string, error) {
	if s == "" || strings.EqualFold(s, "nan") {
		return nil, nil
	}
	var out []string
	for _, m := range strings.Split(s, "|") {
		m = strings.TrimSpace(m)
		if m == "" || slices.Contains(out, m) {
			continue
		}
		if _, ok := openbModels[m]; !ok {
			return nil, fmt.Errorf("%q names GPU model %q (want models joined by |, of %s)", s, m, strings.Join(OpenBModels(), ", "))
		}
		out = append(out, m)
	}
	return out, nil
}

// OpenBTruth builds the ground truth of one of the trace's GPU models
// (OpenBModels) in servers of perNode GPUs: Gavel's measurements of the GPU
// it maps to, or an estimate from them (OpenBGroundTruth says which).
func OpenBTruth(model string, perNode int) (*Truth, error) {
	m, ok := openbModels[model]
	if !ok {
		return nil, fmt.Errorf("sim: Alibaba GPU model %q: want one of %s", model, strings.Join(OpenBModels(), ", "))
	}
	if perNode < 1 {
		return nil, fmt.Errorf("sim: Alibaba GPU model %s: %d GPUs per node, want ≥ 1", model, perNode)
	}
	spec := m.spec
	spec.PerNode = perNode
	var est *estimate
	if m.ratio != nil {
		r := map[string]float64{}
		for _, g := range rst.GavelModels() {
			x, err := m.ratio(g)
			if err != nil {
				return nil, fmt.Errorf("sim: Alibaba GPU model %s: %w", model, err)
			}
			r[g] = x
		}
		est = &estimate{Ratio: func(g string) float64 { return r[g] }, Why: m.basis}
	}
	return gavelTruth(spec, m.gavel, est)
}

// OpenBNode is one GPU node of the trace's node list.
type OpenBNode struct {
	Name  string  // sn
	CPU   float64 // cores
	RAM   float64 // GiB
	GPUs  int
	Model string // one of OpenBModels
	Line  int
}

// OpenBNodes is a node list as read.
type OpenBNodes struct {
	Name  string
	Nodes []OpenBNode
	// Skipped counts the nodes without GPUs (openb_node_list_all_node.csv
	// has them).
	Skipped int
}

// ReadOpenBNodes reads the trace's node list (openb_node_list_*.csv:
// sn,cpu_milli,memory_mib,gpu,model). name is used in errors.
func ReadOpenBNodes(r io.Reader, name string) (*OpenBNodes, error) {
	l := &OpenBNodes{Name: name}
	seen := map[string]int{}
	_, err := csvRows(r, name, []string{"sn", "cpu_milli", "memory_mib", "gpu", "model"}, func(line int, get func(string) string) error {
		n := OpenBNode{Name: get("sn"), Line: line, Model: get("model")}
		if n.Name == "" {
			return traceErr(name, line, "sn", "is empty")
		}
		if l, ok := seen[n.Name]; ok {
			return traceErr(name, line, "sn", "%q is a duplicate of line %d", n.Name, l)
		}
		seen[n.Name] = line
		var err error
		if n.GPUs, err = parseInt(name, line, "gpu", get("gpu"), 0); err != nil {
			return err
		}
		if n.GPUs == 0 {
			l.Skipped++
			return nil
		}
		cpu, err := parseInt(name, line, "cpu_milli", get("cpu_milli"), 1)
		if err != nil {
			return err
		}
		mem, err := parseInt(name, line, "memory_mib", get("memory_mib"), 1)
		if err != nil {
			return err
		}
		n.CPU, n.RAM = float64(cpu)/1000, float64(mem)/1024
		if _, ok := openbModels[n.Model]; !ok {
			return traceErr(name, line, "model", "%q, want one of %s", n.Model, strings.Join(OpenBModels(), ", "))
		}
		l.Nodes = append(l.Nodes, n)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(l.Nodes) == 0 {
		return nil, fmt.Errorf("sim: %s: no node with GPUs", name)
	}
	return l, nil
}

// GPUs returns the GPUs of every node.
func (l *OpenBNodes) GPUs() int {
	n := 0
	for _, x := range l.Nodes {
		n += x.GPUs
	}
	return n
}

// Thin keeps about gpus of the list's GPUs: every k-th node of each model,
// in file order and from its first node, k = ⌈GPUs()/gpus⌉ (1 keeps them
// all). Each model keeps a node at least, so that every gpu_spec finds one,
// and the models' shares stay near the list's.
func (l *OpenBNodes) Thin(gpus int) (nodes []OpenBNode, every int) {
	every = 1
	if gpus > 0 {
		every = max(1, int(math.Ceil(float64(l.GPUs())/float64(gpus))))
	}
	seen := map[string]int{}
	for _, n := range l.Nodes {
		if seen[n.Model]%every == 0 {
			nodes = append(nodes, n)
		}
		seen[n.Model]++
	}
	return nodes, every
}

// OpenBMix builds the cluster of these nodes: a part per GPU model, its
// ground truth OpenBTruth's with the model's largest node for a server,
// its nodes as listed (cores, RAM, GPUs). Parts go by GPU count, largest
// first: the reference, whose configurations a job that may run anywhere
// requests, is the model most of the cluster has, the one its pods most
// likely ran on.
func OpenBMix(nodes []OpenBNode) (Mix, error) {
	byModel := map[string][]OpenBNode{}
	var models []string
	for _, n := range nodes {
		if _, ok := openbModels[n.Model]; !ok || n.GPUs < 1 {
			return nil, fmt.Errorf("sim: node %s: model %q with %d GPUs", n.Name, n.Model, n.GPUs)
		}
		if byModel[n.Model] == nil {
			models = append(models, n.Model)
		}
		byModel[n.Model] = append(byModel[n.Model], n)
	}
	if len(models) == 0 {
		return nil, fmt.Errorf("sim: no GPU node")
	}
	var m Mix
	for _, model := range models {
		per, count := 0, 0
		for _, n := range byModel[model] {
			per, count = max(per, n.GPUs), count+n.GPUs
		}
		t, err := OpenBTruth(model, per)
		if err != nil {
			return nil, err
		}
		p := Part{Truth: t, GPUs: count}
		for _, n := range byModel[model] {
			node := elastico.Node{ID: n.Name, CPU: n.CPU, RAM: n.RAM}
			for k := range n.GPUs {
				node.GPUs = append(node.GPUs, elastico.GPU{
					ID: fmt.Sprintf("%s-gpu%d", n.Name, k), Model: t.GPU.Model, SMs: t.GPU.SMs, Memory: t.GPU.Memory, Shared: true,
				})
			}
			p.Nodes = append(p.Nodes, node)
		}
		m = append(m, p)
	}
	slices.SortStableFunc(m, func(a, b Part) int {
		if a.GPUs != b.GPUs {
			return b.GPUs - a.GPUs
		}
		return strings.Compare(a.Truth.GPU.Model, b.Truth.GPU.Model)
	})
	return m, nil
}
