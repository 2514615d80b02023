package placement

import (
	"math"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
)

// loudness is how far item it is from being allowed beside g's residents
// under the sharing rule (iac.Limit.Excess, the worst over the residents):
// ≤ 0 when it may share with all of them; -Inf on an empty GPU.
func (w *work) loudness(it int32, g int32) float64 {
	return w.loudnessAbove(it, g, math.Inf(1))
}

// loudnessAbove is loudness, except that it may stop as soon as the worst
// so far exceeds stop, and return that: a search that only needs to know
// whether a GPU is loud (and no quieter than the quietest loud one seen)
// asks the predictor half as often.
func (w *work) loudnessAbove(it int32, g int32, stop float64) float64 {
	s := math.Inf(-1)
	if w.req.Predictor == nil {
		return s
	}
	for _, r := range w.residents(g) {
		if s = max(s, w.pairLoudness(it, r)); s > stop {
			return s
		}
	}
	return s
}

// pairLoudness judges items a and b on one GPU: by the request's
// PairJudge if it is one, else by Config.Sharing with the predictor's
// slowdowns both ways and each job's own limit. With no rule it ranks the
// pair by the larger slowdown (never loud: see judging).
func (w *work) pairLoudness(a, b int32) float64 {
	pr := w.req.Predictor
	if j, ok := pr.(PairJudge); ok {
		return j.ExcessItems(int(a), int(b))
	}
	var sa, sb float64
	if ip, ok := pr.(ItemPredictor); ok {
		sa, sb = ip.SlowdownItems(int(a), int(b)), ip.SlowdownItems(int(b), int(a))
	} else {
		pa, pb := w.req.Items[a].Profile, w.req.Items[b].Profile
		sa, sb = pr.Slowdown(pa, pb), pr.Slowdown(pb, pa)
	}
	l := w.cfg.Sharing
	if !l.On() {
		return l.Load(sa, sb) - 1
	}
	ia, ib := &w.req.Items[a], &w.req.Items[b]
	return l.Excess(sa, sb, iac.JobLimit(ia.Job, ia.Profile), iac.JobLimit(ib.Job, ib.Profile))
}

// judging reports whether the request's pairs are judged (a loud GPU
// exists): a PairJudge, or a Predictor with Config.Sharing on.
func (w *work) judging() bool {
	if _, ok := w.req.Predictor.(PairJudge); ok {
		return true
	}
	return w.req.Predictor != nil && w.cfg.Sharing.On()
}

// PairJudge is what a request's Predictor may also be: it judges two items
// on one GPU itself, ExcessItems(a, b) being the sharing rule's
// iac.Limit.Excess for them (≤ 0: they may share). pds's is one: it
// applies the rule in force that epoch, which moves with the queue; the
// placer's Config.Sharing is then not used.
type PairJudge interface {
	elastico.Predictor
	ExcessItems(a, b int) float64
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
