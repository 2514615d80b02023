package adapter

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/elastico/elastico"
)

// Prefix marks a job that opted in: its Slurm comment starts with it.
const Prefix = "elastico:"

// Spec is what an opted-in job's comment says: the job's class, its
// scheduling parameters, and its family of configurations.
//
// The text form (after the "elastico:" prefix) is one header and one or more
// configurations, separated by '|' (or by new lines in a family file):
//
//	train resnet50 opt=sgd ref=128 floor=300 | b=128 sm=.5 mem=6 tput=520 | b=256 sm=1 mem=11 tput=900 amp
//
// The header is the class ("train" or "infer"), an optional family name
// (the model), and key=value pairs:
//
//	w=      weight w_j (default 1)        floor=  minimum throughput L_j
//	prio=   priority (integer)            opt=    sgd | adam | adascale (training)
//	ref=    reference batch size          params= model parameters (e.g. 7e9)
//	work=   remaining work (samples or tokens; 0 = unknown)
//	spread  (a flag) the replicas of a configuration with g= above 1 may
//	        run on several nodes: the job reads its ranks from the
//	        environment (ELASTICO_NODE_RANK, ELASTICO_MASTER_ADDR, ...).
//	        Without it a configuration runs on one node, unless one of
//	        the job's needs more GPUs than any node has.
//
// ref= is the batch the learning rate was tuned for. A training job under
// sgd (the default) or adam whose configurations have two batch sizes or
// more must give it: the learning-rate scale of every batch follows from it,
// and no configuration's batch is a safe guess.
//
// Each configuration is key=value pairs and flags:
//
//	sm=     SM share per GPU, in (0, 1] (required)
//	mem=    GPU memory per GPU, GiB, at most 1024 (required)
//	tput=   isolated throughput, the job's unit per second (required)
//	b=      batch size               g=     GPUs (replicas; default 1)
//	cpu=    host cores per GPU       ram=   host GiB per GPU
//	eff=    statistical efficiency in (0, 1]
//	kv=     KV-cache fraction (inference)   seqs=  max concurrent sequences
//	gpu=    the GPU model it was measured on, as the adapter names the
//	        nodes' models (Config.GPUModels: gpu_v100 → V100); it runs
//	        only on GPUs of that model. Absent: on any GPU
//	id=     the configuration's ID (default: built from the knobs, e.g.
//	        "b256-amp-g1", and gpu=: "b256-amp-g1-V100")
//	amp     mixed precision          ckpt   activation checkpointing
//	<counter>=  a measured hardware counter in [0, 1], by its profiles.csv
//	            name (sm_active=.62 dram_active=.3 ...), for the predictor
type Spec struct {
	Class          elastico.Class
	Family         string
	Weight         float64
	Floor          float64
	Priority       int
	Optimizer      elastico.Optimizer
	ReferenceBatch int
	Params         float64
	Remaining      float64
	// Spread lets the plan put a configuration's GPUs on several nodes.
	Spread  bool
	Configs []elastico.Profile
}

// ParseSpec parses the text of a comment after its "elastico:" prefix (or a
// family file's content). In a file, '#' starts a comment that runs to the
// end of the line, and new lines separate configurations like '|'.
func ParseSpec(text string) (*Spec, error) {
	var parts []string
	for _, line := range strings.Split(text, "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		for _, p := range strings.Split(line, "|") {
			if strings.TrimSpace(p) != "" {
				parts = append(parts, p)
			}
		}
	}
	if len(parts) == 0 {
		return nil, fmt.Errorf("adapter: spec is empty: want \"train|infer [family] [key=value...] | config | ...\"")
	}
	s := &Spec{}
	if err := s.parseHeader(strings.Fields(parts[0])); err != nil {
		return nil, err
	}
	if len(parts) == 1 {
		return nil, fmt.Errorf("adapter: spec has no configuration: add \"| sm=.. mem=.. tput=..\" after the header")
	}
	ids := map[string]int{}
	for k, p := range parts[1:] {
		prof, err := s.parseConfig(strings.Fields(p))
		if err != nil {
			return nil, fmt.Errorf("adapter: configuration %d (%q): %w", k+1, strings.TrimSpace(p), err)
		}
		if prev, ok := ids[prof.Config.ID]; ok {
			return nil, fmt.Errorf("adapter: configuration %d: id %q is already configuration %d's: give one of them id=", k+1, prof.Config.ID, prev)
		}
		ids[prof.Config.ID] = k + 1
		s.Configs = append(s.Configs, prof)
	}
	if s.Class == elastico.Training && s.ReferenceBatch == 0 && s.Optimizer != elastico.AdaScale {
		if a, b, ok := twoBatches(s.Configs); ok {
			return nil, fmt.Errorf("adapter: ref= is missing: opt=%v scales the learning rate from it, and the configurations have b=%d and b=%d: give the batch the learning rate was tuned for", s.Optimizer, a, b)
		}
	}
	best := 0.0
	for _, p := range s.Configs {
		best = math.Max(best, p.Throughput)
	}
	if s.Floor > best {
		return nil, fmt.Errorf("adapter: floor=%g is above every configuration's tput (best %g)", s.Floor, best)
	}
	return s, nil
}

func (s *Spec) parseHeader(f []string) error {
	if len(f) == 0 {
		return fmt.Errorf("adapter: header is empty: want train or infer")
	}
	switch f[0] {
	case "train":
		s.Class = elastico.Training
	case "infer":
		s.Class = elastico.Inference
	default:
		return fmt.Errorf("adapter: header: class %q: want train or infer", f[0])
	}
	f = f[1:]
	if len(f) > 0 && !strings.Contains(f[0], "=") && f[0] != "spread" {
		s.Family, f = f[0], f[1:]
	}
	for _, kv := range f {
		k, v, ok := strings.Cut(kv, "=")
		if kv == "spread" {
			s.Spread = true
			continue
		}
		if !ok {
			return fmt.Errorf("adapter: header: %q: want key=value, the flag spread (or a family name first)", kv)
		}
		var err error
		switch k {
		case "w":
			s.Weight, err = number(v, false)
			if err == nil && s.Weight == 0 {
				err = fmt.Errorf("is 0, want > 0")
			}
		case "floor":
			s.Floor, err = number(v, false)
		case "prio":
			s.Priority, err = strconv.Atoi(v)
		case "opt":
			switch v {
			case "sgd":
				s.Optimizer = elastico.SGD
			case "adam":
				s.Optimizer = elastico.Adam
			case "adascale":
				s.Optimizer = elastico.AdaScale
			default:
				err = fmt.Errorf("want sgd, adam or adascale")
			}
		case "ref":
			s.ReferenceBatch, err = count(v, 1)
		case "params":
			s.Params, err = number(v, false)
		case "work":
			s.Remaining, err = number(v, false)
		default:
			return fmt.Errorf("adapter: header: unknown key %q (know w, floor, prio, opt, ref, params, work)", k)
		}
		if err != nil {
			return fmt.Errorf("adapter: header: %s=%q: %v", k, v, err)
		}
	}
	return nil
}

func (s *Spec) parseConfig(f []string) (elastico.Profile, error) {
	p := elastico.Profile{Family: s.Family, Class: s.Class, Params: s.Params}
	p.Demand.GPUs = 1
	var have struct{ sm, mem, tput bool }
	id := ""
	for _, kv := range f {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			switch kv {
			case "amp":
				p.Config.AMP = true
			case "ckpt":
				p.Config.Checkpointing = true
			default:
				return p, fmt.Errorf("unknown flag %q (know amp, ckpt; others are key=value)", kv)
			}
			continue
		}
		var err error
		switch k {
		case "id":
			if v == "" || strings.ContainsAny(v, ",=") {
				err = fmt.Errorf("want a non-empty name without ',' or '='")
			}
			id = v
		case "gpu":
			if v == "" || strings.ContainsAny(v, ",=|#") {
				err = fmt.Errorf("want a GPU model name without ',', '=', '|' or '#', e.g. V100")
			}
			p.Hardware.GPUModel = v
		case "b":
			p.Config.BatchSize, err = count(v, 1)
		case "g":
			p.Demand.GPUs, err = count(v, 1)
		case "sm":
			p.Demand.SM, err = number(v, false)
			if err == nil && (p.Demand.SM == 0 || p.Demand.SM > 1) {
				err = fmt.Errorf("want a share in (0, 1]")
			}
			have.sm = true
		case "mem":
			p.Demand.GPUMemory, err = number(v, false)
			switch {
			case err != nil:
			case p.Demand.GPUMemory == 0:
				err = fmt.Errorf("want > 0 GiB")
			case p.Demand.GPUMemory > elastico.MaxGPUMemory:
				err = fmt.Errorf("is above %d GiB: give GiB, not MiB", elastico.MaxGPUMemory)
			}
			have.mem = true
		case "tput":
			p.Throughput, err = number(v, false)
			if err == nil && p.Throughput == 0 {
				err = fmt.Errorf("want > 0")
			}
			have.tput = true
		case "cpu":
			p.Demand.CPU, err = number(v, false)
		case "ram":
			p.Demand.RAM, err = number(v, false)
		case "eff":
			p.Efficiency, err = number(v, true)
			if err == nil && p.Efficiency == 0 {
				err = fmt.Errorf("want a fraction in (0, 1]")
			}
		case "kv":
			p.Config.KVCacheFrac, err = number(v, true)
		case "seqs":
			p.Config.MaxSeqs, err = count(v, 1)
		default:
			c, ok := elastico.CounterByName(k)
			if !ok {
				return p, fmt.Errorf("unknown key %q (know id, gpu, b, g, sm, mem, tput, cpu, ram, eff, kv, seqs and the counters sm_active, dram_active, ...)", k)
			}
			var x float64
			x, err = number(v, true)
			p.Counters.Set(c, x)
		}
		if err != nil {
			return p, fmt.Errorf("%s=%q: %v", k, v, err)
		}
	}
	switch {
	case !have.sm:
		return p, fmt.Errorf("sm= is missing (SM share per GPU)")
	case !have.mem:
		return p, fmt.Errorf("mem= is missing (GiB per GPU)")
	case !have.tput:
		return p, fmt.Errorf("tput= is missing (isolated throughput)")
	}
	p.Config.GPUs = p.Demand.GPUs
	if id == "" {
		id = configID(&p.Config)
		if m := p.Hardware.GPUModel; m != "" {
			id += "-" + m
		}
	}
	p.Config.ID = id
	return p, nil
}

// twoBatches returns the first two different batch sizes of the
// configurations, if they have two.
func twoBatches(configs []elastico.Profile) (a, b int, ok bool) {
	for i := range configs {
		switch c := configs[i].Config.BatchSize; {
		case c == 0 || c == a:
		case a == 0:
			a = c
		default:
			return a, c, true
		}
	}
	return 0, 0, false
}

// configID names a configuration by its knobs: "b256-ckpt-amp-g2",
// "kv0.4-s64-g1".
func configID(c *elastico.Configuration) string {
	var parts []string
	if c.BatchSize > 0 {
		parts = append(parts, "b"+strconv.Itoa(c.BatchSize))
	}
	if c.Checkpointing {
		parts = append(parts, "ckpt")
	}
	if c.AMP {
		parts = append(parts, "amp")
	}
	if c.KVCacheFrac > 0 {
		parts = append(parts, "kv"+strconv.FormatFloat(c.KVCacheFrac, 'g', 3, 64))
	}
	if c.MaxSeqs > 0 {
		parts = append(parts, "s"+strconv.Itoa(c.MaxSeqs))
	}
	parts = append(parts, "g"+strconv.Itoa(c.GPUs))
	return strings.Join(parts, "-")
}

// number parses a finite non-negative float; unit says it must be ≤ 1.
func number(v string, unit bool) (float64, error) {
	x, err := strconv.ParseFloat(v, 64)
	switch {
	case err != nil:
		return 0, fmt.Errorf("not a number")
	case math.IsNaN(x) || math.IsInf(x, 0):
		return 0, fmt.Errorf("not a finite number")
	case x < 0:
		return 0, fmt.Errorf("is negative")
	case unit && x > 1:
		return 0, fmt.Errorf("want a fraction in [0, 1]")
	}
	return x, nil
}

// count parses an integer ≥ lo.
func count(v string, lo int) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("not an integer")
	}
	if n < lo {
		return 0, fmt.Errorf("want ≥ %d", lo)
	}
	return n, nil
}

// wider reports whether a configuration needs more GPUs than perNode, the
// most a node has (0: unknown).
func (s *Spec) wider(perNode int) bool {
	for i := range s.Configs {
		if perNode > 0 && s.Configs[i].Demand.GPUs > perNode {
			return true
		}
	}
	return false
}

// Job returns the elastico.Job the spec describes, with the given ID.
func (s *Spec) Job(id string) elastico.Job {
	fam := make([]elastico.Profile, len(s.Configs))
	copy(fam, s.Configs)
	return elastico.Job{
		ID:             id,
		Class:          s.Class,
		Profiles:       fam,
		Floor:          s.Floor,
		Weight:         s.Weight,
		Priority:       s.Priority,
		Remaining:      s.Remaining,
		Optimizer:      s.Optimizer,
		ReferenceBatch: s.ReferenceBatch,
		Spread:         s.Spread,
	}
}

// String returns the spec in its text form (without the prefix); ParseSpec
// reads it back to an equal Spec.
func (s *Spec) String() string {
	var b strings.Builder
	if s.Class == elastico.Inference {
		b.WriteString("infer")
	} else {
		b.WriteString("train")
	}
	if s.Family != "" {
		b.WriteString(" " + s.Family)
	}
	kv := func(k string, x float64) {
		if x != 0 {
			b.WriteString(" " + k + "=" + strconv.FormatFloat(x, 'g', -1, 64))
		}
	}
	kv("w", s.Weight)
	kv("floor", s.Floor)
	if s.Priority != 0 {
		b.WriteString(" prio=" + strconv.Itoa(s.Priority))
	}
	if s.Class == elastico.Training {
		b.WriteString(" opt=" + s.Optimizer.String())
	}
	kv("ref", float64(s.ReferenceBatch))
	kv("params", s.Params)
	kv("work", s.Remaining)
	if s.Spread {
		b.WriteString(" spread")
	}
	for i := range s.Configs {
		p := &s.Configs[i]
		b.WriteString(" | id=" + p.Config.ID)
		if m := p.Hardware.GPUModel; m != "" {
			b.WriteString(" gpu=" + m)
		}
		kv("b", float64(p.Config.BatchSize))
		if p.Demand.GPUs != 1 {
			kv("g", float64(p.Demand.GPUs))
		}
		kv("sm", p.Demand.SM)
		kv("mem", p.Demand.GPUMemory)
		kv("tput", p.Throughput)
		kv("cpu", p.Demand.CPU)
		kv("ram", p.Demand.RAM)
		kv("eff", p.Efficiency)
		kv("kv", p.Config.KVCacheFrac)
		kv("seqs", float64(p.Config.MaxSeqs))
		if p.Config.AMP {
			b.WriteString(" amp")
		}
		if p.Config.Checkpointing {
			b.WriteString(" ckpt")
		}
		for c := elastico.Counter(0); c < elastico.NumCounters; c++ {
			if v, ok := p.Counters.Get(c); ok {
				b.WriteString(" " + c.String() + "=" + strconv.FormatFloat(v, 'g', -1, 64))
			}
		}
	}
	return b.String()
}
