package pds

import (
	"fmt"
	"slices"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/slab"
)

// cannotStay begins the reason of a running job left out because the State
// runs it against the rules: more on a GPU or node than it holds, a gang
// across nodes that does not allow Spread, or below its floor.
const cannotStay = "the State runs it where it cannot stay: "

// stays returns why running job j cannot stay as the State runs it, beside
// what acc holds, or "" (and adds it to acc).
func (mk *marketState) stays(acc *account, j int) string {
	if why := mk.againstRules(j); why != "" {
		return why
	}
	js := &mk.jobs[j]
	p := &js.job.Profiles[js.cur]
	if why := acc.add(js.curGPUs, p); why != "" {
		return cannotStay + why
	}
	return ""
}

// maxPinPasses bounds pin's passes before it puts every running job back
// as the State has it.
const maxPinPasses = 8

// pin makes result r keep every running job on every GPU it holds
// (Config.Pinned): a running job the placer moved, shrank or left out, or
// that pinForce names, runs as the State has it (its configuration, its
// GPUs); one the placer kept on its GPUs, perhaps reshaped or grown onto
// more, keeps that if it still fits beside those put back, and is put
// back too otherwise. Waiting jobs keep their GPUs where those still have
// room. Only a job the State itself runs against the rules is left out
// (see cannotStay).
func (e *epoch) pin(r *result) {
	n := len(e.jobs)
	e.pinBack = slab.Zeroed(e.pinBack, n)
	for j := range e.jobs {
		js := &e.jobs[j]
		e.pinBack[j] = js.running && (e.pinForce[j] || r.gpus[j] == nil || !holds(r.gpus[j], js.curGPUs))
	}
	var acc *account
	for pass := 0; ; pass++ {
		acc = e.account()
		again := false
		for j := range e.jobs {
			js := &e.jobs[j]
			if !js.running || !e.pinBack[j] {
				continue
			}
			if why := e.stays(acc, j); why != "" {
				r.choice[j], r.gpus[j] = -1, nil
				r.code[j], r.reason[j] = elastico.Unplaceable, why
				continue
			}
			r.choice[j], r.gpus[j] = js.cur, js.curGPUs
			r.code[j], r.reason[j] = elastico.Scheduled, ""
		}
		for j := range e.jobs {
			js := &e.jobs[j]
			if !js.running || e.pinBack[j] {
				continue
			}
			if acc.add(r.gpus[j], &js.job.Profiles[r.choice[j]]) != "" {
				// Its new shape no longer fits beside those put back.
				e.pinBack[j] = true
				again = true
			}
		}
		if !again {
			break
		}
		if pass == maxPinPasses {
			for j := range e.jobs {
				e.pinBack[j] = e.pinBack[j] || e.jobs[j].running
			}
		}
	}
	for j := range e.jobs {
		if e.jobs[j].running || r.gpus[j] == nil {
			continue
		}
		if why := acc.add(r.gpus[j], &e.jobs[j].job.Profiles[r.choice[j]]); why != "" {
			r.choice[j], r.gpus[j] = -1, nil
			r.code[j], r.reason[j] = elastico.Unplaceable, "its GPUs stay with running jobs that cannot move or stop (Config.Pinned): "+why
		}
	}
}

// holds reports whether the GPU set gs includes every GPU of cur.
func holds(gs, cur []elastico.GPURef) bool {
	for _, g := range cur {
		if !slices.Contains(gs, g) {
			return false
		}
	}
	return true
}

// asIs reports whether running job j is on GPU g, under its current
// configuration, in r: where the State has it.
func (e *epoch) asIs(r *result, j, g int32) bool {
	js := &e.jobs[j]
	return js.running && r.choice[j] == js.cur && slices.Contains(js.curGPUs, e.ref(g))
}

// againstRules says why running job j cannot stay as the State runs it
// whatever else runs: a gang across nodes without Spread, or a throughput
// below its floor; "" if it may.
func (mk *marketState) againstRules(j int) string {
	js := &mk.jobs[j]
	if !js.job.Spread {
		for _, r := range js.curGPUs {
			if r.Node != js.curGPUs[0].Node {
				return cannotStay + "its gang spans nodes and it does not allow Spread"
			}
		}
	}
	if f, p := js.job.Floor, &js.job.Profiles[js.cur]; f > 0 && p.Throughput < f {
		return cannotStay + fmt.Sprintf("its throughput %.4g is below its floor %.4g", p.Throughput, f)
	}
	return ""
}
