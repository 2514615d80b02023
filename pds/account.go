package pds

import (
	"fmt"
	"math"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/slab"
)

// account adds up what a result puts on each GPU and node.
type account struct {
	e        *epoch
	sm, mem  []float64
	jobs     []int32
	cpu, ram []float64
}

// account returns the epoch's account, emptied.
func (e *epoch) account() *account {
	a := &e.acc
	a.e = e
	a.sm = slab.Zeroed(a.sm, e.ngpu)
	a.mem = slab.Zeroed(a.mem, e.ngpu)
	a.jobs = slab.Zeroed(a.jobs, e.ngpu)
	a.cpu = slab.Zeroed(a.cpu, len(e.st.Cluster.Nodes))
	a.ram = slab.Zeroed(a.ram, len(e.st.Cluster.Nodes))
	return a
}

const slack = 1e-9

func over(x, c float64) bool { return x > c+slack*math.Max(1, c) }

// accountOf returns the epoch's account holding every assignment of plan r.
func (e *epoch) accountOf(r *result) *account {
	acc := e.account()
	for j := range e.jobs {
		if gs := r.gpus[j]; gs != nil {
			acc.add(gs, &e.jobs[j].job.Profiles[r.choice[j]])
		}
	}
	return acc
}

// sub takes back one job's replicas from gs, which add put there.
func (a *account) sub(gs []elastico.GPURef, p *elastico.Profile) {
	d := &p.Demand
	for _, r := range gs {
		g := a.e.global(r)
		a.sm[g] -= d.SM
		a.mem[g] -= d.GPUMemory
		a.jobs[g]--
		a.cpu[r.Node] -= d.CPU
		a.ram[r.Node] -= d.RAM
	}
}

// add puts one job's replicas on gs, or returns why they do not fit (a
// GPU of another model than the profile's among them) and leaves the
// account unchanged.
func (a *account) add(gs []elastico.GPURef, p *elastico.Profile) string {
	d := &p.Demand
	cl := &a.e.st.Cluster
	if len(gs) == 1 {
		// One replica (most jobs): the checks below, without the loops.
		r := gs[0]
		g := a.e.nodeFirst[r.Node] + int32(r.GPU)
		hw := &cl.Nodes[r.Node].GPUs[r.GPU]
		n := &cl.Nodes[r.Node]
		sm, mem, cpu, ram := a.sm[g]+d.SM, a.mem[g]+d.GPUMemory, a.cpu[r.Node]+d.CPU, a.ram[r.Node]+d.RAM
		if !over(sm, a.e.overs) && !over(mem, hw.Memory) && (hw.Shared || a.jobs[g] == 0) && p.RunsOn(hw.Model) &&
			(a.e.maxJobs <= 0 || int(a.jobs[g]) < a.e.maxJobs) && !over(cpu, n.CPU) && !over(ram, n.RAM) {
			a.sm[g], a.mem[g], a.cpu[r.Node], a.ram[r.Node] = sm, mem, cpu, ram
			a.jobs[g]++
			return ""
		}
	}
	for k, r := range gs {
		g := a.e.global(r)
		hw := a.e.gpuOf(g)
		for _, r2 := range gs[:k] {
			if r2 == r {
				return fmt.Sprintf("GPU %s is listed twice", hw.ID)
			}
		}
		switch {
		case !p.RunsOn(hw.Model):
			return fmt.Sprintf("GPU %s is a %s, and configuration %s was profiled for %s", hw.ID, hw.Model, p.Config.ID, p.Hardware.GPUModel)
		case over(a.sm[g]+d.SM, a.e.overs):
			return fmt.Sprintf("GPU %s would hold an SM share of %.3g", hw.ID, a.sm[g]+d.SM)
		case over(a.mem[g]+d.GPUMemory, hw.Memory):
			return fmt.Sprintf("GPU %s would hold %.3g GiB of its %.3g", hw.ID, a.mem[g]+d.GPUMemory, hw.Memory)
		case !hw.Shared && a.jobs[g] > 0:
			return fmt.Sprintf("GPU %s is not shared and already holds a job", hw.ID)
		case a.e.maxJobs > 0 && int(a.jobs[g]) >= a.e.maxJobs:
			return fmt.Sprintf("GPU %s already holds %d jobs", hw.ID, a.jobs[g])
		}
	}
	for _, r := range gs {
		n := cl.Nodes[r.Node]
		cpu, ram := 0.0, 0.0
		for _, r2 := range gs {
			if r2.Node == r.Node {
				cpu += d.CPU
				ram += d.RAM
			}
		}
		if over(a.cpu[r.Node]+cpu, n.CPU) || over(a.ram[r.Node]+ram, n.RAM) {
			return fmt.Sprintf("node %s would need %.3g CPU and %.3g GiB RAM of its %.3g and %.3g", n.ID, a.cpu[r.Node]+cpu, a.ram[r.Node]+ram, n.CPU, n.RAM)
		}
	}
	for _, r := range gs {
		g := a.e.global(r)
		a.sm[g] += d.SM
		a.mem[g] += d.GPUMemory
		a.jobs[g]++
		a.cpu[r.Node] += d.CPU
		a.ram[r.Node] += d.RAM
	}
	return ""
}
