package rst

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/elastico/elastico"
)

// Infeasible says why one configuration was dropped.
type Infeasible struct {
	ConfigID string
	Reason   string
}

func (i Infeasible) String() string { return i.ConfigID + ": " + i.Reason }

// Checker decides which configurations can run on a cluster at all,
// whatever else runs there: the GPU model, memory per GPU, the number of
// GPUs, a gang on one node, host CPU and RAM, and the job's floor. A
// profile that names a GPU model (Hardware.GPUModel) is checked against
// the GPUs of that model and those that name none. Build it once per
// cluster (NewChecker); its methods are safe for concurrent use.
type Checker struct {
	// byModel[i] checks the profiles of GPU model models[i] (ch itself
	// when every GPU may run them); anon, the GPUs that name no model, for
	// a model the cluster lacks (nil: every GPU names one). Nil when no
	// GPU names a model. (A slice, not a map: Why asks it of every
	// profile of every job each epoch, and clusters have a few models.)
	byModel []*Checker
	anon    *Checker
	models  []string // the models GPUs name, sorted
	// mem are every GPU's memory, in decreasing order.
	mem []float64
	// shapes are the distinct node shapes, for gangs on one node.
	shapes []nodeShape
	// maxCPU and maxRAM are the largest node's.
	maxCPU, maxRAM float64
}

type nodeShape struct {
	cpu, ram float64
	mem      []float64 // GPU memories, decreasing
}

// NewChecker summarizes a cluster for feasibility checks. It returns an
// error naming the node or GPU whose capacity is NaN, infinite or negative.
func NewChecker(c *elastico.Cluster) (*Checker, error) {
	if c == nil {
		return nil, errorf("checker: nil cluster")
	}
	ch, err := newChecker(c, func(*elastico.GPU) bool { return true })
	if err != nil {
		return nil, err
	}
	anon := false
	for i := range c.Nodes {
		for k := range c.Nodes[i].GPUs {
			if m := c.Nodes[i].GPUs[k].Model; m == "" {
				anon = true
			} else if !slices.Contains(ch.models, m) {
				ch.models = append(ch.models, m)
			}
		}
	}
	if len(ch.models) == 0 {
		return ch, nil
	}
	slices.Sort(ch.models)
	ch.byModel = make([]*Checker, len(ch.models))
	for i, m := range ch.models {
		if len(ch.models) == 1 && !anon {
			ch.byModel[i] = ch
			continue
		}
		ch.byModel[i], _ = newChecker(c, func(g *elastico.GPU) bool { return g.Model == m || g.Model == "" })
	}
	if anon {
		ch.anon, _ = newChecker(c, func(g *elastico.GPU) bool { return g.Model == "" })
	}
	return ch, nil
}

// newChecker summarizes the GPUs of c that keep selects.
func newChecker(c *elastico.Cluster, keep func(*elastico.GPU) bool) (*Checker, error) {
	ch := &Checker{}
	seen := map[string]bool{}
	for i := range c.Nodes {
		n := &c.Nodes[i]
		if bad(n.CPU) || bad(n.RAM) {
			return nil, errorf("checker: node %q: CPU %g or RAM %g is NaN, infinite or negative", n.ID, n.CPU, n.RAM)
		}
		s := nodeShape{cpu: n.CPU, ram: n.RAM, mem: make([]float64, 0, len(n.GPUs))}
		for k := range n.GPUs {
			if !keep(&n.GPUs[k]) {
				continue
			}
			m := n.GPUs[k].Memory
			if bad(m) {
				return nil, errorf("checker: gpu %q: Memory %g is NaN, infinite or negative", n.GPUs[k].ID, m)
			}
			s.mem = append(s.mem, m)
			ch.mem = append(ch.mem, m)
		}
		slices.SortFunc(s.mem, func(a, b float64) int { return cmpDesc(a, b) })
		ch.maxCPU = math.Max(ch.maxCPU, n.CPU)
		ch.maxRAM = math.Max(ch.maxRAM, n.RAM)
		key := fmt.Sprint(s.cpu, s.ram, s.mem)
		if !seen[key] {
			seen[key] = true
			ch.shapes = append(ch.shapes, s)
		}
	}
	slices.SortFunc(ch.mem, func(a, b float64) int { return cmpDesc(a, b) })
	return ch, nil
}

func bad(x float64) bool { return math.IsNaN(x) || math.IsInf(x, 0) || x < 0 }

func cmpDesc(a, b float64) int {
	switch {
	case a > b:
		return -1
	case a < b:
		return 1
	}
	return 0
}

// atLeast returns how many of mem (decreasing) are ≥ x.
func atLeast(mem []float64, x float64) int {
	n, _ := slices.BinarySearchFunc(mem, x, func(m, x float64) int {
		if m >= x {
			return -1
		}
		return 1
	})
	return n
}

// hasAtLeast reports whether g of mem (decreasing) are ≥ x: whether the
// g-th largest is (a NaN x fails). Why asks it of every profile of every
// job each epoch; the count itself is only for its message.
func hasAtLeast(mem []float64, g int, x float64) bool {
	return g <= len(mem) && mem[g-1] >= x
}

// Why returns why profile p cannot run on the cluster, or "" if it can.
// spread allows the replicas of a gang on several nodes; floor is the job's
// minimum throughput (0: none).
func (ch *Checker) Why(p *elastico.Profile, floor float64, spread bool) string {
	if m := p.Hardware.GPUModel; m != "" && ch.byModel != nil {
		sub := ch.anon
		for i := range ch.models {
			if ch.models[i] == m {
				sub = ch.byModel[i]
				break
			}
		}
		if sub == nil {
			return fmt.Sprintf("was profiled for GPU model %s; the cluster has %s", m, strings.Join(ch.models, ", "))
		}
		if sub != ch {
			return sub.Why(p, floor, spread)
		}
	}
	d := &p.Demand
	g := max(1, d.GPUs)
	if len(ch.mem) == 0 {
		return "the cluster has no GPU"
	}
	if d.GPUMemory > ch.mem[0] {
		return fmt.Sprintf("needs %.3g GiB per GPU, above every GPU's memory (largest %.3g GiB)", d.GPUMemory, ch.mem[0])
	}
	if !hasAtLeast(ch.mem, g, d.GPUMemory) {
		return fmt.Sprintf("needs %d GPUs with %.3g GiB, the cluster has %d", g, d.GPUMemory, atLeast(ch.mem, d.GPUMemory))
	}
	if d.CPU > ch.maxCPU || d.RAM > ch.maxRAM {
		return fmt.Sprintf("needs %.3g CPU cores and %.3g GiB of RAM per replica, more than any node has", d.CPU, d.RAM)
	}
	if !spread && g > 1 {
		fits := false
		for i := range ch.shapes {
			s := &ch.shapes[i]
			if hasAtLeast(s.mem, g, d.GPUMemory) && s.cpu >= float64(g)*d.CPU && s.ram >= float64(g)*d.RAM {
				fits = true
				break
			}
		}
		if !fits {
			return fmt.Sprintf("needs %d GPUs with %.3g GiB, %.3g CPU cores and %.3g GiB of RAM on one node; no node has them",
				g, d.GPUMemory, float64(g)*d.CPU, float64(g)*d.RAM)
		}
	}
	if floor > 0 && p.Throughput < floor {
		return fmt.Sprintf("throughput %.4g is below the floor %.4g", p.Throughput, floor)
	}
	return ""
}

// Filter returns the family's configurations that can run on the cluster
// and meet the floor, in order, and why each other one cannot. The family
// is not modified.
func (ch *Checker) Filter(family []elastico.Profile, floor float64, spread bool) ([]elastico.Profile, []Infeasible) {
	var kept []elastico.Profile
	var dropped []Infeasible
	for i := range family {
		if why := ch.Why(&family[i], floor, spread); why != "" {
			dropped = append(dropped, Infeasible{family[i].Config.ID, why})
		} else {
			kept = append(kept, family[i])
		}
	}
	return kept, dropped
}

// Reduce is what a scheduler does with a job's family before pricing:
// Filter with the job's floor and Spread, then Prune. When nothing is left
// the error wraps ErrInfeasible and names the job and every reason, ready
// for the job's Status.
func (ch *Checker) Reduce(j *elastico.Job) ([]elastico.Profile, []Infeasible, error) {
	kept, dropped := ch.Filter(j.Profiles, j.Floor, j.Spread)
	if len(kept) == 0 {
		reasons := make([]string, len(dropped))
		for i, d := range dropped {
			reasons[i] = d.String()
		}
		if len(reasons) == 0 {
			reasons = []string{"the family is empty"}
		}
		return nil, dropped, fmt.Errorf("rst: job %q: %w: %s", j.ID, ErrInfeasible, strings.Join(reasons, "; "))
	}
	return Prune(kept), dropped, nil
}

// IsInfeasible reports whether err says a job has no feasible configuration.
func IsInfeasible(err error) bool { return errors.Is(err, ErrInfeasible) }
