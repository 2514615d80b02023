package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/elastico/elastico"
)

// Oracle is the perfect co-location predictor: it answers the slowdown the
// ground truth imposes on a victim beside an aggressor, the very number
// Run applies to two jobs sharing a GPU (Truth.pairSpeed). A scheduler
// that uses it knows what no real one can: it measures how far an honest
// predictor is from a perfect one, a bound, never a result. Safe for
// concurrent use; it never allocates once built.
type Oracle struct {
	t *Truth
	// kinds maps a training family and per-GPU batch to its co-location
	// kind, for every batch the family has (the kind does not depend on
	// the GPU count).
	kinds map[familyBatch]int
}

type familyBatch struct {
	family string
	batch  int
}

var _ elastico.Predictor = (*Oracle)(nil)

// NewOracle returns the oracle of t.
func NewOracle(t *Truth) (*Oracle, error) {
	if t == nil {
		return nil, fmt.Errorf("sim: oracle: nil Truth")
	}
	o := &Oracle{t: t, kinds: map[familyBatch]int{}}
	for _, f := range t.families {
		if f.Class != elastico.Training {
			continue
		}
		for _, b := range f.batches {
			k, ok := t.trainingKind(f, b)
			if !ok {
				return nil, fmt.Errorf("sim: oracle: family %q: no co-location kind for batch %d", f.Name, b)
			}
			o.kinds[familyBatch{f.Name, b}] = k
		}
	}
	return o, nil
}

// Slowdown returns how many times slower victim runs beside aggressor on
// one GPU in the ground truth (1 / its speed there, ≥ 1). A profile the
// ground truth does not know (see Kind) gets NaN, which a scheduler
// must read as "never safe" (pds does).
func (o *Oracle) Slowdown(victim, aggressor *elastico.Profile) float64 {
	v, err := o.Kind(victim)
	if err != nil {
		return math.NaN()
	}
	a, err := o.Kind(aggressor)
	if err != nil {
		return math.NaN()
	}
	return 1 / o.t.kindSpeed(v, a)
}

// Kind returns the co-location kind (an index into Truth.Kinds) of the
// configuration p profiles: its family, by Profile.Family, and, for
// training, its per-GPU batch, read from the configuration ID the ground
// truth gave it (Truth.Config's "b<batch>x<gpus>"); for inference, the
// configuration with that ID. It fails, naming the family, the
// configuration and the field, for a profile the ground truth did not make.
func (o *Oracle) Kind(p *elastico.Profile) (int, error) {
	t := o.t
	f, ok := t.byName[p.Family]
	if !ok {
		return 0, fmt.Errorf("sim: oracle: profile %q/%q: Family: not a family of the %s ground truth", p.Family, p.Config.ID, t.GPU.Model)
	}
	if m := p.Hardware.GPUModel; m != "" && m != t.GPU.Model {
		return 0, fmt.Errorf("sim: oracle: profile %q/%q: Hardware.GPUModel is %q, the ground truth is %s's", p.Family, p.Config.ID, m, t.GPU.Model)
	}
	if p.Class != f.Class {
		return 0, fmt.Errorf("sim: oracle: profile %q/%q: Class is %s, the family's is %s", p.Family, p.Config.ID, p.Class, f.Class)
	}
	if f.Class == elastico.Inference {
		for i := range f.Configs {
			if f.Configs[i].ID == p.Config.ID {
				return f.Configs[i].Kind, nil
			}
		}
		return 0, fmt.Errorf("sim: oracle: profile %q/%q: Config.ID: not a configuration of the family", p.Family, p.Config.ID)
	}
	batch, gpus, ok := parseTrainingID(p.Config.ID)
	if !ok {
		return 0, fmt.Errorf("sim: oracle: profile %q/%q: Config.ID: want b<batch>x<gpus>", p.Family, p.Config.ID)
	}
	if gpus != p.Demand.GPUs {
		return 0, fmt.Errorf("sim: oracle: profile %q/%q: Demand.GPUs is %d, the ID says %d", p.Family, p.Config.ID, p.Demand.GPUs, gpus)
	}
	k, ok := o.kinds[familyBatch{f.Name, batch}]
	if !ok {
		return 0, fmt.Errorf("sim: oracle: profile %q/%q: Config.ID: batch %d not among the family's %v", p.Family, p.Config.ID, batch, f.batches)
	}
	return k, nil
}

// trainingID is the ID of a training configuration: per-GPU batch and GPU
// count (Gavel's and Pollux's families alike).
func trainingID(localBatch, gpus int) string {
	return "b" + strconv.Itoa(localBatch) + "x" + strconv.Itoa(gpus)
}

// parseTrainingID inverts trainingID without allocating.
func parseTrainingID(id string) (localBatch, gpus int, ok bool) {
	rest, found := strings.CutPrefix(id, "b")
	if !found {
		return 0, 0, false
	}
	b, g, found := strings.Cut(rest, "x")
	if !found {
		return 0, 0, false
	}
	lb, err1 := strconv.Atoi(b)
	n, err2 := strconv.Atoi(g)
	if err1 != nil || err2 != nil || lb < 0 || n < 1 || trainingIDLen(lb, n) != len(id) {
		return 0, 0, false // "b+1x2" or "b01x2" is no ID trainingID makes
	}
	return lb, n, true
}

// trainingIDLen is len(trainingID(lb, n)) for lb ≥ 0, n ≥ 1.
func trainingIDLen(lb, n int) int { return 2 + digits(lb) + digits(n) }

func digits(x int) int {
	d := 1
	for x >= 10 {
		x /= 10
		d++
	}
	return d
}

// trainingKind returns the co-location kind of a training family's replica
// at a per-GPU batch: Gavel's job type, or Pollux's model at that local
// batch. Truth.Config and the Oracle both go through it.
func (t *Truth) trainingKind(f *Family, localBatch int) (int, bool) {
	var name string
	switch {
	case f.pollux != nil:
		name = polluxKindName(f.Name, localBatch)
	case f.Class == elastico.Training && f.infer == nil:
		name = gavelType(f, localBatch).String()
	default:
		return 0, false
	}
	k, ok := t.kindIdx[name]
	return k, ok
}

// polluxKindName is the kind of a Pollux model at a local batch.
func polluxKindName(model string, localBatch int) string {
	return fmt.Sprintf("%s (local batch %d)", model, localBatch)
}

// kindSpeed is how fast a replica of kind victim runs beside one of kind
// aggressor, relative to alone: the factor Run applies, per co-runner, to
// a job sharing a GPU, and the Oracle's answer.
func (t *Truth) kindSpeed(victim, aggressor int) float64 {
	s, _ := t.Speed(victim, aggressor)
	return s
}
