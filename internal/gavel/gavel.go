// Package gavel reads Gavel's measured throughputs (OSDI'20,
// github.com/stanford-futuredata/gavel, MIT): the isolated throughput of 26
// training job types on V100, P100 and K80 GPUs at 1, 2, 4 and 8 GPUs, and
// the throughputs of every pair of single-GPU job types sharing one GPU.
// The file ships embedded (data/, with its license); Load parses it.
//
// Who reads it and why apart: see the root package doc, The shipped
// measurements.
//
// GPU models are named as elastico.GPU.Model and Profile.Hardware.GPUModel
// name them (V100, P100, K80); the file's own keys ("v100",
// "v100_unconsolidated", ...) stay inside this package.
package gavel

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

//go:embed data/simulation_throughputs.json
var simulationThroughputs []byte

// The GPU models Gavel measured, spelt as elastico.GPU.Model.
const (
	V100 = "V100"
	P100 = "P100"
	K80  = "K80"
)

// Models are the GPU models Gavel measured, in its order.
var Models = []string{V100, P100, K80}

// Model returns the canonical name of one of Gavel's GPU models given in
// any case ("v100", "V100"), and whether it is one.
func Model(s string) (string, bool) {
	for _, m := range Models {
		if strings.EqualFold(s, m) {
			return m, true
		}
	}
	return "", false
}

// fileKey is the data file's key of a model's consolidated table; the
// unconsolidated one (multi-GPU jobs whose replicas are spread over
// servers) adds "_unconsolidated".
func fileKey(model string) string { return strings.ToLower(model) }

// JobType is one of Gavel's 26 job types: a model and its batch size (0 for
// A3C and CycleGAN, which Gavel lists without one).
type JobType struct {
	Model     string // "ResNet-18", "ResNet-50", "Transformer", "LM", "Recommendation", "A3C", "CycleGAN"
	BatchSize int
}

func (t JobType) String() string {
	if t.BatchSize == 0 {
		return t.Model
	}
	return fmt.Sprintf("%s (batch size %d)", t.Model, t.BatchSize)
}

// Key is a job type at a scale factor (number of GPUs).
type Key struct {
	Type  JobType
	Scale int
}

// Pair is what two single-GPU job types achieve sharing one GPU, in steps/s:
// Self for the first of the pair, Other for the second.
type Pair struct{ Self, Other float64 }

// Table is one GPU model's measurements.
type Table struct {
	// Isolated[k] is the throughput in steps/s of k alone.
	Isolated map[Key]float64
	// Pairs[[2]JobType{a, b}] is a and b sharing one GPU (scale factor 1);
	// only measured, non-zero pairs are present.
	Pairs map[[2]JobType]Pair
}

// Speed returns the co-location speed of a next to b (throughput shared
// divided by throughput alone, in (0, 1] for a slowdown) and whether the pair
// was measured.
func (t *Table) Speed(a, b JobType) (float64, bool) {
	p, ok := t.Pairs[[2]JobType{a, b}]
	if !ok {
		return 0, false
	}
	iso := t.Isolated[Key{a, 1}]
	if iso <= 0 {
		return 0, false
	}
	return p.Self / iso, true
}

// Types returns the table's single-GPU job types, sorted by model then batch
// size.
func (t *Table) Types() []JobType {
	var out []JobType
	for k := range t.Isolated {
		if k.Scale == 1 {
			out = append(out, k.Type)
		}
	}
	slices.SortFunc(out, func(a, b JobType) int {
		if c := strings.Compare(a.Model, b.Model); c != 0 {
			return c
		}
		return a.BatchSize - b.BatchSize
	})
	return out
}

// Throughputs holds every table of a file, under the file's own keys.
type Throughputs struct{ byKey map[string]*Table }

// Table returns the measurements of a GPU model (V100, P100, K80; any
// case) on one server, or nil if the file has none.
func (t Throughputs) Table(model string) *Table {
	m, ok := Model(model)
	if !ok {
		return nil
	}
	return t.byKey[fileKey(m)]
}

// Unconsolidated returns the measurements of a GPU model with a multi-GPU
// job's replicas spread over servers, or nil if the file has none.
func (t Throughputs) Unconsolidated(model string) *Table {
	m, ok := Model(model)
	if !ok {
		return nil
	}
	return t.byKey[fileKey(m)+"_unconsolidated"]
}

// Load parses the embedded copy of Gavel's simulation_throughputs.json.
func Load() (Throughputs, error) {
	return Parse(bytes.NewReader(simulationThroughputs), "simulation_throughputs.json")
}

// Parse reads a file in Gavel's throughput format:
// {gpu_type: {"('<type>', <scale>)": {"null": iso, "('<type>', 1)": [self, other]}}}.
// name is used in errors.
func Parse(r io.Reader, name string) (Throughputs, error) {
	var raw map[string]map[string]map[string]json.RawMessage
	if err := json.NewDecoder(r).Decode(&raw); err != nil {
		return Throughputs{}, fmt.Errorf("gavel: %s: %w", name, err)
	}
	out := Throughputs{byKey: make(map[string]*Table, len(raw))}
	for gpu, jobs := range raw {
		t := &Table{Isolated: map[Key]float64{}, Pairs: map[[2]JobType]Pair{}}
		for jk, entries := range jobs {
			k, err := ParseKey(jk)
			if err != nil {
				return Throughputs{}, fmt.Errorf("gavel: %s: %s: %w", name, gpu, err)
			}
			for ok, v := range entries {
				if ok == "null" {
					var iso float64
					if err := json.Unmarshal(v, &iso); err != nil {
						return Throughputs{}, fmt.Errorf("gavel: %s: %s %q: isolated throughput: %w", name, gpu, jk, err)
					}
					t.Isolated[k] = iso
					continue
				}
				other, err := ParseKey(ok)
				if err != nil {
					return Throughputs{}, fmt.Errorf("gavel: %s: %s %q: %w", name, gpu, jk, err)
				}
				var p [2]float64
				if err := json.Unmarshal(v, &p); err != nil {
					return Throughputs{}, fmt.Errorf("gavel: %s: %s %q with %q: %w", name, gpu, jk, ok, err)
				}
				if k.Scale == 1 && other.Scale == 1 && p[0] > 0 && p[1] > 0 {
					t.Pairs[[2]JobType{k.Type, other.Type}] = Pair{p[0], p[1]}
				}
			}
		}
		out.byKey[gpu] = t
	}
	return out, nil
}

// ParseKey parses "('ResNet-50 (batch size 64)', 2)".
func ParseKey(s string) (Key, error) {
	in := strings.TrimSpace(s)
	if !strings.HasPrefix(in, "('") || !strings.HasSuffix(in, ")") {
		return Key{}, fmt.Errorf("job key %q: want ('<type>', <scale>)", s)
	}
	body := in[2 : len(in)-1]
	q := strings.LastIndex(body, "',")
	if q < 0 {
		return Key{}, fmt.Errorf("job key %q: want ('<type>', <scale>)", s)
	}
	jt, err := ParseJobType(body[:q])
	if err != nil {
		return Key{}, err
	}
	sf, err := strconv.Atoi(strings.TrimSpace(body[q+2:]))
	if err != nil || sf < 1 {
		return Key{}, fmt.Errorf("job key %q: bad scale factor", s)
	}
	return Key{jt, sf}, nil
}

// ParseJobType parses "ResNet-50 (batch size 64)" or "A3C".
func ParseJobType(s string) (JobType, error) {
	const marker = " (batch size "
	i := strings.Index(s, marker)
	if i < 0 {
		if s == "" || strings.ContainsAny(s, "()") {
			return JobType{}, fmt.Errorf("job type %q: want '<model> (batch size <n>)' or '<model>'", s)
		}
		return JobType{Model: s}, nil
	}
	if !strings.HasSuffix(s, ")") {
		return JobType{}, fmt.Errorf("job type %q: unclosed batch size", s)
	}
	b, err := strconv.Atoi(s[i+len(marker) : len(s)-1])
	if err != nil || b < 1 {
		return JobType{}, fmt.Errorf("job type %q: bad batch size", s)
	}
	return JobType{Model: s[:i], BatchSize: b}, nil
}
