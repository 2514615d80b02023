package sim

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/rst"
)

const openbHeader = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"

func TestReadOpenBGPUSpec(t *testing.T) {
	for _, tc := range []struct {
		spec string
		want []string
	}{
		{"", nil},
		{"nan", nil},
		{"V100M32", []string{"V100M32"}},
		{"V100M16|V100M32", []string{"V100M16", "V100M32"}},
		{"G2|P100|T4|V100M16|V100M32", []string{"G2", "P100", "T4", "V100M16", "V100M32"}},
		{"T4||P100|T4", []string{"T4", "P100"}}, // empty parts dropped, as the trace's converter does
	} {
		tr, err := ReadOpenB(strings.NewReader(openbHeader+"p,1,1,1,1000,"+tc.spec+",BE,Running,0,10,0\n"), "pods.csv")
		if err != nil {
			t.Errorf("gpu_spec %q: %v", tc.spec, err)
			continue
		}
		if got := tr.Jobs[0].Models; !slices.Equal(got, tc.want) {
			t.Errorf("gpu_spec %q: Models %q, want %q", tc.spec, got, tc.want)
		}
	}
}

func TestReadOpenBRejects(t *testing.T) {
	for _, tc := range []struct {
		name, row string
		field     string
	}{
		{"unknown model", "p,1,1,1,1000,H100,BE,Running,0,10,0", "gpu_spec"},
		{"model in lower case", "p,1,1,1,1000,v100m32,BE,Running,0,10,0", "gpu_spec"},
		{"one bad part", "p,1,1,1,1000,T4|K80,BE,Running,0,10,0", "gpu_spec"},
		{"share of several GPUs", "p,1,1,2,500,,BE,Running,0,10,0", "gpu_milli"},
		{"zero share", "p,1,1,1,0,,BE,Running,0,10,0", "gpu_milli"},
	} {
		_, err := ReadOpenB(strings.NewReader(openbHeader+"ok,1,1,1,1000,,BE,Running,0,10,0\n"+tc.row+"\n"), "pods.csv")
		var te *TraceError
		if !errors.As(err, &te) || te.File != "pods.csv" || te.Line != 3 || te.Field != tc.field {
			t.Errorf("%s: %v, want an error at pods.csv:3 naming %s", tc.name, err, tc.field)
		}
	}
}

const nodesHeader = "sn,cpu_milli,memory_mib,gpu,model\n"

func TestReadOpenBNodes(t *testing.T) {
	l, err := ReadOpenBNodes(strings.NewReader(nodesHeader+
		"n0,64000,262144,2,P100\n"+
		"n1,32000,262144,0,\n"+ // a CPU node of the all_node list
		"n2,96000,786432,8,V100M32\n"), "nodes.csv")
	if err != nil {
		t.Fatal(err)
	}
	want := []OpenBNode{
		{Name: "n0", CPU: 64, RAM: 256, GPUs: 2, Model: "P100", Line: 2},
		{Name: "n2", CPU: 96, RAM: 768, GPUs: 8, Model: "V100M32", Line: 4},
	}
	if !slices.Equal(l.Nodes, want) || l.Skipped != 1 || l.GPUs() != 10 {
		t.Errorf("nodes %+v, skipped %d, want %+v and 1", l.Nodes, l.Skipped, want)
	}

	for _, tc := range []struct {
		name, in string
		line     int
		field    string
	}{
		{"missing column", "sn,cpu_milli,memory_mib,gpu\nn0,1,1,1\n", 1, "model"},
		{"unknown model", nodesHeader + "n0,1000,1024,8,A100\n", 2, "model"},
		{"no model", nodesHeader + "n0,1000,1024,8,\n", 2, "model"},
		{"empty sn", nodesHeader + "n0,1000,1024,1,T4\n,1000,1024,1,T4\n", 3, "sn"},
		{"duplicate sn", nodesHeader + "n0,1000,1024,1,T4\nn0,1000,1024,1,T4\n", 3, "sn"},
		{"bad gpu", nodesHeader + "n0,1000,1024,two,T4\n", 2, "gpu"},
		{"negative gpu", nodesHeader + "n0,1000,1024,-1,T4\n", 2, "gpu"},
		{"no cpu", nodesHeader + "n0,0,1024,1,T4\n", 2, "cpu_milli"},
		{"bad memory", nodesHeader + "n0,1000,lots,1,T4\n", 2, "memory_mib"},
	} {
		_, err := ReadOpenBNodes(strings.NewReader(tc.in), "nodes.csv")
		var te *TraceError
		if !errors.As(err, &te) || te.File != "nodes.csv" || te.Line != tc.line || te.Field != tc.field {
			t.Errorf("%s: %v, want an error at nodes.csv:%d naming %s", tc.name, err, tc.line, tc.field)
		}
	}
	if _, err := ReadOpenBNodes(strings.NewReader(nodesHeader+"n0,1000,1024,0,\n"), "cpu.csv"); err == nil {
		t.Error("a list without GPU nodes accepted")
	}
}

func TestOpenBNodesThin(t *testing.T) {
	l := &OpenBNodes{}
	for i := range 40 {
		l.Nodes = append(l.Nodes, OpenBNode{Name: string(rune('a'+i%26)) + string(rune('0'+i/26)), GPUs: 8, Model: "G2"})
		if i%4 == 0 {
			l.Nodes = append(l.Nodes, OpenBNode{Name: "t" + string(rune('a'+i)), GPUs: 2, Model: "T4"})
		}
	}
	l.Nodes = append(l.Nodes, OpenBNode{Name: "a10", GPUs: 1, Model: "A10"})
	if all, k := l.Thin(1 << 20); len(all) != len(l.Nodes) || k != 1 {
		t.Errorf("Thin(large): %d of %d nodes, every %d", len(all), len(l.Nodes), k)
	}
	kept, k := l.Thin(64) // 341 GPUs: every 6th
	count := map[string]int{}
	for _, n := range kept {
		count[n.Model] += n.GPUs
	}
	if k != 6 || count["G2"] != 7*8 || count["T4"] != 2*2 || count["A10"] != 1 {
		t.Errorf("Thin(64): every %d, GPUs per model %v", k, count)
	}
	again, _ := l.Thin(64)
	if !slices.Equal(kept, again) {
		t.Error("Thin is not deterministic")
	}
}

// TestOpenBTruths: the measured models carry Gavel's measurements, the
// others an estimate from them, marked Interpolated.
func TestOpenBTruths(t *testing.T) {
	v100, err := GavelTruth("V100")
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := v100.Config("ResNet-50", 32, 1)
	a10, _, err := rst.SpeedRatio("ResNet-50", "a10")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		model    string
		ratio    float64
		memory   float64
		measured bool
	}{
		{"V100M16", 1, V100.Memory, true},
		{"V100M32", 1, 32510.0 / 1024, true},
		{"T4", t4Ratio, T4.Memory, false},
		{"A10", a10, 22731.0 / 1024, false},
		{"G2", 1, 20000.0 / 1024, false},
	} {
		tr, err := OpenBTruth(tc.model, 8)
		if err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		c, err := tr.Config("ResNet-50", 32, 1)
		if err != nil {
			t.Fatalf("%s: %v", tc.model, err)
		}
		if tr.GPU.Model != tc.model || math.Abs(tr.GPU.Memory-tc.memory) > 1e-9 || math.Abs(c.Throughput-ref.Throughput*tc.ratio) > 1e-9*ref.Throughput || c.Measured != tc.measured {
			t.Errorf("%s: GPU %s with %.2f GiB, ResNet-50 b32 %.1f/s measured %v; want %.2f GiB, %.1f/s (V100 × %.3f), measured %v",
				tc.model, tr.GPU.Model, tr.GPU.Memory, c.Throughput, c.Measured, tc.memory, ref.Throughput*tc.ratio, tc.ratio, tc.measured)
		}
		f, _ := tr.Family("ResNet-50")
		p := tr.Profiles(f, f.Configs[:1], nil)[0]
		if p.Hardware.GPUModel != tc.model || p.Interpolated == tc.measured {
			t.Errorf("%s: profile on %s, Interpolated %v", tc.model, p.Hardware.GPUModel, p.Interpolated)
		}
		if !tc.measured && !strings.Contains(f.Notes[0], "estimated") {
			t.Errorf("%s: notes %q do not say the throughput is estimated", tc.model, f.Notes[0])
		}
	}
	p100, _ := OpenBTruth("P100", 2)
	if p100.GPU != withPerNode(P100, 2) {
		t.Errorf("P100: %+v", p100.GPU)
	}
	if _, err := OpenBTruth("K80", 8); err == nil {
		t.Error("OpenBTruth(K80) accepted")
	}
	for _, m := range OpenBModels() {
		if b, ok := OpenBGroundTruth(m); !ok || b == "" {
			t.Errorf("%s: no ground truth stated", m)
		}
	}
}

func withPerNode(g GPUSpec, n int) GPUSpec {
	g.PerNode = n
	return g
}

// TestT4Ratio recomputes t4Ratio from the two data sets.
func TestT4Ratio(t *testing.T) {
	v100, err := GavelTruth("V100")
	if err != nil {
		t.Fatal(err)
	}
	t4, err := PolluxTruth()
	if err != nil {
		t.Fatal(err)
	}
	prod := 1.0
	for _, b := range [][2]int{{129, 128}, {257, 256}} {
		p, err := t4.Config("cifar10", b[0], 1)
		if err != nil {
			t.Fatal(err)
		}
		g, err := v100.Config("ResNet-18", b[1], 1)
		if err != nil {
			t.Fatal(err)
		}
		prod *= p.Throughput / g.Throughput
	}
	if r := math.Sqrt(prod); math.Abs(r-t4Ratio) > 0.005 {
		t.Errorf("T4 over V100 on ResNet-18: %.4f, t4Ratio %.2f", r, t4Ratio)
	}
}

// openbMix is a small cluster of the trace's models: 4 V100M32, 4 V100M16
// and 2 T4.
func openbMix(t *testing.T) Mix {
	t.Helper()
	l, err := ReadOpenBNodes(strings.NewReader(nodesHeader+
		"v32,48000,376832,4,V100M32\n"+
		"v16,32000,131072,4,V100M16\n"+
		"t4,104000,524288,2,T4\n"), "nodes.csv")
	if err != nil {
		t.Fatal(err)
	}
	m, err := OpenBMix(l.Nodes)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestOpenBMix(t *testing.T) {
	m := openbMix(t)
	if got := m.String(); got != "V100M16:4,V100M32:4,T4:2" {
		t.Errorf("mix %s, want the largest part first, ties by name", got)
	}
	c, err := m.Cluster()
	if err != nil {
		t.Fatal(err)
	}
	if err := (&elastico.State{Now: time0, Cluster: c}).Validate(); err != nil {
		t.Fatal(err)
	}
	for _, n := range c.Nodes {
		if n.ID == "t4" && (n.CPU != 104 || n.RAM != 512 || len(n.GPUs) != 2 || n.GPUs[1].ID != "t4-gpu1" || n.GPUs[1].Model != "T4") {
			t.Errorf("node t4: %+v", n)
		}
	}
}

// TestOpenBWorkloadModels: a pod's gpu_spec limits its configurations to
// those models, requested one included; a pod without one gets every
// model of the cluster; one naming no model of the cluster is left out.
// A share of a GPU keeps the job on one GPU, claiming that share.
func TestOpenBWorkloadModels(t *testing.T) {
	m := openbMix(t)
	tr, err := ReadOpenB(strings.NewReader(openbHeader+
		"v32,1,1,1,1000,V100M32,BE,Running,0,3600,0\n"+
		"any,1,1,2,1000,,BE,Running,1,3601,1\n"+
		"t4,1,1,1,1000,P100|T4,BE,Running,2,3602,2\n"+
		"a10,1,1,1,1000,A10,BE,Running,3,3603,3\n"+
		"frac,1,1,1,250,,LS,Running,4,3604,4\n"), "pods.csv")
	if err != nil {
		t.Fatal(err)
	}
	jobs, st, err := m.Workload(tr, WorkloadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 4 || st.NoModel != 1 || st.Fractional != 1 {
		t.Fatalf("%d jobs, %d left out, %d fractional; want 4, 1 (the A10 pod), 1", len(jobs), st.NoModel, st.Fractional)
	}
	want := map[string][]string{"v32": {"V100M32"}, "any": {"V100M16", "V100M32", "T4"}, "t4": {"T4"}, "frac": {"V100M16", "V100M32", "T4"}}
	for _, j := range jobs {
		var models []string
		for k, p := range j.Profiles {
			if !slices.Contains(models, p.Hardware.GPUModel) {
				models = append(models, p.Hardware.GPUModel)
			}
			if !strings.HasSuffix(j.Configs[k].ID, "@"+p.Hardware.GPUModel) {
				t.Errorf("%s: configuration %s on %s", j.ID, j.Configs[k].ID, p.Hardware.GPUModel)
			}
		}
		if !slices.Equal(models, want[j.ID]) {
			t.Errorf("%s: profiles on %v, want %v", j.ID, models, want[j.ID])
		}
		if req := j.Profiles[0].Hardware.GPUModel; req != want[j.ID][0] {
			t.Errorf("%s: requested on %s, want %s", j.ID, req, want[j.ID][0])
		}
		// The work is the pod's hour at its requested configuration.
		if math.Abs(j.Dedicated-3600) > 1e-6 {
			t.Errorf("%s: dedicated %g s, want the pod's 3600", j.ID, j.Dedicated)
		}
	}
	// The T4 pod's work is an hour at the T4's speed.
	t4 := jobs[slices.IndexFunc(jobs, func(j Job) bool { return j.ID == "t4" })]
	c, _ := m[2].Truth.Config(t4.Family.Name, t4.Requested().LocalBatch, 1)
	if math.Abs(t4.Work-3600*c.Goodput(false)) > 1e-6*t4.Work {
		t.Errorf("T4 pod: work %g, want 3600 s × the T4's %g/s", t4.Work, c.Goodput(false))
	}
	frac := jobs[slices.IndexFunc(jobs, func(j Job) bool { return j.ID == "frac" })]
	if frac.Class != elastico.Inference {
		t.Errorf("LS pod: class %v", frac.Class)
	}
	for k, p := range frac.Profiles {
		c := frac.Configs[k]
		if p.Demand.GPUs != 1 || p.Demand.SM != 0.25 || c.SM > 0.25 {
			t.Errorf("fractional pod: configuration %s on %d GPUs claims SM %g, uses %g; want one GPU, 0.25", c.ID, p.Demand.GPUs, p.Demand.SM, c.SM)
		}
	}
}

// TestAtShare: a share below what a configuration keeps busy slows it in
// proportion; one above leaves it as it is.
func TestAtShare(t *testing.T) {
	c := Variant{Throughput: 100, SpreadThroughput: 100, SM: 0.8, Measured: true}
	if got := c.atShare(0.4); got.Throughput != 50 || got.SM != 0.4 || got.Measured {
		t.Errorf("share 0.4 of an SM use of 0.8: %+v", got)
	}
	if got := c.atShare(0.9); got != c {
		t.Errorf("share 0.9 of an SM use of 0.8: %+v", got)
	}
	if got := c.atShare(1); got != c {
		t.Errorf("whole GPU: %+v", got)
	}
}
