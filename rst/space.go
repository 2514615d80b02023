package rst

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/elastico/elastico"
)

// Space is a job's configuration space: the values each knob may take. A
// configuration is one value of every knob; the space is their product
// (less the combinations Enumerate documents as impossible).
//
// A nil knob has one implicit value: no checkpointing, no AMP, one GPU, no
// KV-cache budget, no sequence limit, no batch size.
type Space struct {
	Class elastico.Class
	// BatchSizes are global batch sizes (training: required) or engine
	// batch sizes (inference: optional).
	BatchSizes    []int
	Checkpointing []bool // training
	AMP           []bool
	// GPUs are data- or tensor-parallel degrees: replicas, one GPU each.
	GPUs []int
	// KVCacheFracs are KV-cache budgets as fractions of one GPU's memory,
	// in (0, 1] (inference).
	KVCacheFracs []float64
	// MaxSeqs are the engine's limits on concurrent sequences (inference).
	MaxSeqs []int
}

// Validate reports the first problem with the space, naming the knob and
// the offending value.
func (s *Space) Validate() error {
	if s.Class != elastico.Training && s.Class != elastico.Inference {
		return errorf("space: Class is %d, want Training or Inference", int(s.Class))
	}
	if s.Class == elastico.Training {
		if len(s.BatchSizes) == 0 {
			return errorf("space: BatchSizes is empty: a training space needs at least one batch size")
		}
		if len(s.KVCacheFracs) > 0 || len(s.MaxSeqs) > 0 {
			return errorf("space: KVCacheFracs and MaxSeqs are inference knobs, the space is for training")
		}
	} else if len(s.Checkpointing) > 0 {
		return errorf("space: Checkpointing is a training knob, the space is for inference")
	}
	if err := positiveUnique("BatchSizes", s.BatchSizes); err != nil {
		return err
	}
	if err := positiveUnique("GPUs", s.GPUs); err != nil {
		return err
	}
	if err := positiveUnique("MaxSeqs", s.MaxSeqs); err != nil {
		return err
	}
	for i, f := range s.KVCacheFracs {
		if math.IsNaN(f) || f <= 0 || f > 1 {
			return errorf("space: KVCacheFracs[%d] is %g, want a fraction in (0, 1]", i, f)
		}
		// IDs keep the budget to a millionth: two budgets closer than that
		// would share an ID.
		for k := range i {
			if math.Round(s.KVCacheFracs[k]*1e6) == math.Round(f*1e6) {
				return errorf("space: KVCacheFracs[%d] = %g duplicates KVCacheFracs[%d] (to a millionth)", i, f, k)
			}
		}
	}
	for _, k := range []struct {
		name string
		v    []bool
	}{{"Checkpointing", s.Checkpointing}, {"AMP", s.AMP}} {
		if len(k.v) > 2 || len(k.v) == 2 && k.v[0] == k.v[1] {
			return errorf("space: %s is %v, want each of false and true at most once", k.name, k.v)
		}
	}
	return nil
}

func positiveUnique(name string, v []int) error {
	for i, x := range v {
		if x < 1 {
			return errorf("space: %s[%d] is %d, want ≥ 1", name, i, x)
		}
		if slices.Index(v, x) < i {
			return errorf("space: %s[%d] = %d is a duplicate", name, i, x)
		}
	}
	return nil
}

// Size returns the number of knob combinations, before Enumerate drops the
// impossible ones.
func (s *Space) Size() int {
	n := 1
	for _, k := range []int{len(s.BatchSizes), len(s.Checkpointing), len(s.AMP), len(s.GPUs), len(s.KVCacheFracs), len(s.MaxSeqs)} {
		n *= max(1, k)
	}
	return n
}

// Enumerate returns every configuration of the space, with its ID, in a
// deterministic order: by GPU count, then batch size, checkpointing, AMP,
// KV-cache budget and sequence limit, each increasing (false before true),
// whatever order the knob values were given in. A training configuration
// whose batch is smaller than its GPU count (less than one sample per GPU)
// is impossible and left out.
func (s *Space) Enumerate() ([]elastico.Configuration, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	batches := sortedOr(s.BatchSizes, 0)
	gpus := sortedOr(s.GPUs, 1)
	seqs := sortedOr(s.MaxSeqs, 0)
	kvs := sortedOr(s.KVCacheFracs, 0)
	ckpt := boolsOr(s.Checkpointing)
	amp := boolsOr(s.AMP)
	out := make([]elastico.Configuration, 0, s.Size())
	for _, g := range gpus {
		for _, b := range batches {
			if s.Class == elastico.Training && b < g {
				continue
			}
			for _, ck := range ckpt {
				for _, a := range amp {
					for _, kv := range kvs {
						for _, sq := range seqs {
							c := elastico.Configuration{BatchSize: b, Checkpointing: ck, AMP: a, GPUs: g, KVCacheFrac: kv, MaxSeqs: sq}
							c.ID = ConfigID(c)
							out = append(out, c)
						}
					}
				}
			}
		}
	}
	return out, nil
}

func sortedOr[T int | float64](v []T, def T) []T {
	if len(v) == 0 {
		return []T{def}
	}
	return slices.Sorted(slices.Values(v))
}

func boolsOr(v []bool) []bool {
	switch {
	case len(v) == 0:
		return []bool{false}
	case len(v) == 2:
		return []bool{false, true}
	}
	return v
}

// ConfigID returns the configuration's canonical ID: its knobs in a fixed
// order, joined by "-": "b<batch>" (when there is a batch size), "ckpt",
// "amp", "kv<percent>" (KV-cache budget in percent of one GPU's memory),
// "s<max sequences>", and always "g<GPUs>" (0 GPUs counts as 1). For example
// "b64-ckpt-amp-g2" or "b8-kv40-s64-g1". The ID of a configuration is the
// same in every epoch and every process, and ParseConfigID inverts it.
func ConfigID(c elastico.Configuration) string {
	var b strings.Builder
	b.Grow(24)
	sep := func() {
		if b.Len() > 0 {
			b.WriteByte('-')
		}
	}
	if c.BatchSize > 0 {
		b.WriteByte('b')
		b.WriteString(strconv.Itoa(c.BatchSize))
	}
	if c.Checkpointing {
		sep()
		b.WriteString("ckpt")
	}
	if c.AMP {
		sep()
		b.WriteString("amp")
	}
	if c.KVCacheFrac > 0 {
		sep()
		b.WriteString("kv")
		b.WriteString(strconv.FormatFloat(math.Round(c.KVCacheFrac*1e6)/1e4, 'f', -1, 64))
	}
	if c.MaxSeqs > 0 {
		sep()
		b.WriteByte('s')
		b.WriteString(strconv.Itoa(c.MaxSeqs))
	}
	sep()
	b.WriteByte('g')
	b.WriteString(strconv.Itoa(max(1, c.GPUs)))
	return b.String()
}

// ParseConfigID parses an ID written by ConfigID (or ModelConfigID, whose
// "@model" it ignores) back into a configuration (with ID set to id).
func ParseConfigID(id string) (elastico.Configuration, error) {
	c := elastico.Configuration{ID: id}
	if id == "" {
		return c, errorf("configuration ID is empty")
	}
	base := id
	if i := strings.IndexByte(id, '@'); i >= 0 {
		if i == len(id)-1 {
			return c, errorf("configuration ID %q: empty GPU model after @", id)
		}
		base = id[:i]
	}
	c, err := parseConfigID(base)
	c.ID = id
	return c, err
}

func parseConfigID(id string) (elastico.Configuration, error) {
	c := elastico.Configuration{ID: id}
	if id == "" {
		return c, errorf("configuration ID is empty")
	}
	parts := strings.Split(id, "-")
	// Each part must come after the previous kind, once: the canonical order.
	order := 0
	next := func(rank int, p string) error {
		if rank <= order {
			return errorf("configuration ID %q: %q is out of order or repeated", id, p)
		}
		order = rank
		return nil
	}
	for _, p := range parts {
		var err error
		switch {
		case p == "ckpt":
			err = next(2, p)
			c.Checkpointing = true
		case p == "amp":
			err = next(3, p)
			c.AMP = true
		case strings.HasPrefix(p, "kv"):
			if err = next(4, p); err == nil {
				var pct float64
				pct, err = strconv.ParseFloat(p[2:], 64)
				if err != nil || !(pct > 0 && pct <= 100) {
					err = errorf("configuration ID %q: %q: want kv<percent in (0, 100]>", id, p)
				}
				c.KVCacheFrac = pct / 100
			}
		case strings.HasPrefix(p, "b"):
			if err = next(1, p); err == nil {
				c.BatchSize, err = positiveInt(id, p, p[1:])
			}
		case strings.HasPrefix(p, "s"):
			if err = next(5, p); err == nil {
				c.MaxSeqs, err = positiveInt(id, p, p[1:])
			}
		case strings.HasPrefix(p, "g"):
			if err = next(6, p); err == nil {
				c.GPUs, err = positiveInt(id, p, p[1:])
			}
		default:
			err = errorf("configuration ID %q: unknown part %q", id, p)
		}
		if err != nil {
			return elastico.Configuration{ID: id}, err
		}
	}
	if order != 6 {
		return elastico.Configuration{ID: id}, errorf("configuration ID %q: no g<GPUs> at the end", id)
	}
	if ConfigID(c) != id {
		return elastico.Configuration{ID: id}, errorf("configuration ID %q is not canonical (want %q)", id, ConfigID(c))
	}
	return c, nil
}

func positiveInt(id, part, s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || strconv.Itoa(n) != s {
		return 0, errorf("configuration ID %q: %q: want a positive integer without leading zeros", id, part)
	}
	return n, nil
}

// String describes the space briefly, e.g. "training: 4 batch sizes × 2
// checkpointing × 1 AMP × 3 GPU counts = 24".
func (s *Space) String() string {
	return fmt.Sprintf("%s: %d batch sizes × %d checkpointing × %d AMP × %d GPU counts × %d KV budgets × %d sequence limits = %d",
		s.Class, max(1, len(s.BatchSizes)), max(1, len(s.Checkpointing)), max(1, len(s.AMP)), max(1, len(s.GPUs)),
		max(1, len(s.KVCacheFracs)), max(1, len(s.MaxSeqs)), s.Size())
}
