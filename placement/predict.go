package placement

import (
	"math"

	"github.com/elastico/elastico"
)

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
