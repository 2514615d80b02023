package placement

import (
	"slices"

	"github.com/elastico/elastico"
)

// gpu is one GPU's running account.
type gpu struct {
	freeSM, freeMem float64
	memTol          float64
	node            int32
	local           int32
	n               int32 // residents
	cell, pos       int32 // place in the index; -1 when full
	mcell, mpos     int32 // place in its model's index (work.midx), when there is one
	model           int32 // 1 + its model's index in work.models; 0: no model (any item fits)
	shared          bool
}

type node struct {
	freeCPU, freeRAM float64
	cpuTol, ramTol   float64
	first, count     int32 // its GPUs are [first, first+count)
	open             int32 // its GPUs in the index
	empty            int32 // its GPUs without a resident
	tried            uint32
}

func (w *work) residents(g int32) []int32 {
	m := int32(w.cfg.MaxJobsPerGPU)
	return w.res[g*m : g*m+w.gpus[g].n]
}

// fitsGPU reports whether one replica of item it fits GPU g (GPU model,
// SM, memory, job count, not already there), leaving the node aside.
func (w *work) fitsGPU(it int32, g int32, d *elastico.Demand) bool {
	gp := &w.gpus[g]
	if int(gp.n) >= w.cfg.MaxJobsPerGPU || (!gp.shared && gp.n > 0) {
		return false
	}
	// The GPU's model (0: any) against the item's (0: any, -1: none of the
	// cluster's): small integers, and nothing more to load where GPUs name
	// no model.
	if gp.model != 0 {
		if m := w.imodel[it]; m != 0 && m != gp.model {
			return false
		}
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

// cursor starts below the demand by the fit tolerance, so that a GPU
// whose free room equals the demand up to rounding is not skipped.
func (w *work) cursor(it int32, d *elastico.Demand, capped bool) cursor {
	return w.indexFor(it).cursor(d.SM-w.smTol, d.GPUMemory-w.maxMemTol, capped)
}

// indexFor is the index item it searches: its GPU model's alone when every
// GPU names a model (a search for a model that a tenth of the cluster has
// otherwise walks past the other nine tenths: at 20,000 jobs on three
// models, most of an epoch), else the index of all GPUs.
func (w *work) indexFor(it int32) *index {
	if m := w.imodel[it]; m > 0 && len(w.midx) > 0 {
		return &w.midx[m-1]
	}
	return &w.idx
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
	if gp.n == 0 {
		nd.empty--
	}
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
	if gp.n == 0 {
		nd.empty++
	}
	nd.freeCPU += d.CPU
	nd.freeRAM += d.RAM
	w.reindex(g)
}

func (w *work) reindex(g int32) {
	gp := &w.gpus[g]
	nd := &w.nodes[gp.node]
	if gp.cell >= 0 {
		w.idx.remove(w.gpus, g)
		if len(w.midx) > 0 {
			w.midx[gp.model-1].remove(w.gpus, g)
		}
		nd.open--
	}
	full := int(gp.n) >= w.cfg.MaxJobsPerGPU || (!gp.shared && gp.n > 0) || gp.freeSM <= w.smTol
	if !full {
		w.idx.insert(w.gpus, g)
		if len(w.midx) > 0 {
			w.midx[gp.model-1].insert(w.gpus, g)
		}
		nd.open++
	}
}

func (w *work) global(ref elastico.GPURef) int32 {
	return w.nodes[ref.Node].first + int32(ref.GPU)
}
