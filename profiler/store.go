package profiler

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/atomicfile"
)

// The store's file format: one JSON file per job family holding every
// profile of the family, on every hardware signature.
const (
	StoreFormat  = "elastico-profiles"
	StoreVersion = 1
	storeSuffix  = ".profiles.json"
)

// Store keeps profiles in a directory, one versioned JSON file per family
// (<family>.profiles.json), each written atomically (a temporary file, then
// a rename). A profile is keyed by family, configuration ID and hardware
// signature; a measured profile is never replaced by an interpolated one. A
// file that is corrupt, of another format, of a newer version or of another
// family is refused with an error naming it.
//
// One process should write a directory at a time: a Store serializes its own
// writers, not other processes'.
type Store struct {
	dir string
	mu  sync.Mutex
}

// OpenStore returns the store in dir, creating the directory if needed.
func OpenStore(dir string) (*Store, error) {
	if dir == "" {
		return nil, errors.New("profiler: store: directory name is empty")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("profiler: store: %w", err)
	}
	return &Store{dir: dir}, nil
}

// Dir returns the store's directory.
func (s *Store) Dir() string { return s.dir }

// Path returns the file that holds family's profiles.
func (s *Store) Path(family string) string {
	return filepath.Join(s.dir, escapeFamily(family)+storeSuffix)
}

// Put stores p, replacing the profile with the same key unless that one was
// measured and p is interpolated; it reports whether p was stored.
func (s *Store) Put(p elastico.Profile) (bool, error) {
	if err := p.Validate(); err != nil {
		return false, fmt.Errorf("profiler: store: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	path := s.Path(p.Family)
	ps, err := s.read(p.Family, path)
	if err != nil {
		return false, err
	}
	i := slices.IndexFunc(ps, func(q elastico.Profile) bool { return sameKey(&q, &p) })
	switch {
	case i < 0:
		ps = append(ps, p)
	case p.Interpolated && !ps[i].Interpolated:
		return false, nil
	default:
		ps[i] = p
	}
	var buf bytes.Buffer
	if err := Encode(&buf, p.Family, ps); err != nil {
		return false, err
	}
	if err := atomicfile.Write(path, buf.Bytes(), 0o600); err != nil {
		return false, fmt.Errorf("profiler: store: %w", err)
	}
	return true, nil
}

// Get returns the profile of family's configuration configID measured (or
// interpolated) on hw.
func (s *Store) Get(family, configID string, hw elastico.Hardware) (elastico.Profile, bool, error) {
	ps, err := s.Family(family, hw)
	if err != nil {
		return elastico.Profile{}, false, err
	}
	for _, p := range ps {
		if p.Config.ID == configID {
			return p, true, nil
		}
	}
	return elastico.Profile{}, false, nil
}

// Family returns family's profiles on hw, sorted by configuration ID; none
// (and no error) when the store has no file for the family.
func (s *Store) Family(family string, hw elastico.Hardware) ([]elastico.Profile, error) {
	s.mu.Lock()
	ps, err := s.read(family, s.Path(family))
	s.mu.Unlock()
	if err != nil {
		return nil, err
	}
	out := ps[:0]
	for _, p := range ps {
		if p.Hardware == hw {
			out = append(out, p)
		}
	}
	return out, nil
}

// All returns every profile of family, on every hardware signature.
func (s *Store) All(family string) ([]elastico.Profile, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.read(family, s.Path(family))
}

// Families lists the families the store holds files for, sorted.
func (s *Store) Families() ([]string, error) {
	ents, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("profiler: store: %w", err)
	}
	var fams []string
	for _, e := range ents {
		name, ok := strings.CutSuffix(e.Name(), storeSuffix)
		if !ok || e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		f, err := unescapeFamily(name)
		if err != nil {
			return nil, fmt.Errorf("profiler: store: %s: %w", filepath.Join(s.dir, e.Name()), err)
		}
		fams = append(fams, f)
	}
	slices.Sort(fams)
	return fams, nil
}

// read returns the profiles in path, checked to be family's; none if the
// file does not exist.
func (s *Store) read(family, path string) ([]elastico.Profile, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("profiler: store: %w", err)
	}
	defer f.Close()
	fam, ps, err := Decode(f, path)
	if err != nil {
		return nil, err
	}
	if fam != family {
		return nil, fmt.Errorf("profiler: store: %s: holds family %q, not %q", path, fam, family)
	}
	return ps, nil
}

func sameKey(a, b *elastico.Profile) bool {
	return a.Family == b.Family && a.Config.ID == b.Config.ID && a.Hardware == b.Hardware
}

// escapeFamily makes a family name a file name: bytes outside
// [A-Za-z0-9_-] and a leading dot become %XX.
func escapeFamily(f string) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		c := f[i]
		if 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-' || (c == '.' && i > 0) {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

func unescapeFamily(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' {
			b.WriteByte(s[i])
			continue
		}
		if i+2 >= len(s) {
			return "", errors.New("truncated %-escape in file name")
		}
		var c byte
		if _, err := fmt.Sscanf(s[i+1:i+3], "%02X", &c); err != nil {
			return "", fmt.Errorf("bad %%-escape %q in file name", s[i:i+3])
		}
		b.WriteByte(c)
		i += 2
	}
	return b.String(), nil
}

// The JSON form of a store file. Its own types, with tags, so that the
// root package's structs can change without changing the format.
type storeFile struct {
	Format   string        `json:"format"`
	Version  int           `json:"version"`
	Family   string        `json:"family"`
	Profiles []profileJSON `json:"profiles"`
}

type profileJSON struct {
	Class        string             `json:"class"`
	Params       float64            `json:"params,omitempty"`
	Config       configJSON         `json:"config"`
	Demand       demandJSON         `json:"demand"`
	Throughput   float64            `json:"throughput"`
	Efficiency   float64            `json:"efficiency,omitempty"`
	Counters     map[string]float64 `json:"counters"`
	Hardware     hardwareJSON       `json:"hardware"`
	Interpolated bool               `json:"interpolated,omitempty"`
}

type configJSON struct {
	ID            string  `json:"id"`
	BatchSize     int     `json:"batch_size,omitempty"`
	Checkpointing bool    `json:"checkpointing,omitempty"`
	AMP           bool    `json:"amp,omitempty"`
	GPUs          int     `json:"gpus,omitempty"`
	KVCacheFrac   float64 `json:"kv_cache_frac,omitempty"`
	MaxSeqs       int     `json:"max_seqs,omitempty"`
}

type demandJSON struct {
	GPUs      int     `json:"gpus"`
	SM        float64 `json:"sm"`
	GPUMemory float64 `json:"gpu_memory_gib"`
	CPU       float64 `json:"cpu_cores"`
	RAM       float64 `json:"ram_gib"`
}

type hardwareJSON struct {
	GPUModel string `json:"gpu_model"`
	Driver   string `json:"driver,omitempty"`
	MIG      bool   `json:"mig,omitempty"`
	MPS      bool   `json:"mps,omitempty"`
}

// Encode writes family's profiles in the store's file format, sorted by
// configuration ID and hardware signature. Every profile must be of family
// and valid, and no two may share a key.
func Encode(w io.Writer, family string, ps []elastico.Profile) error {
	if family == "" {
		return errors.New("profiler: store: family is empty")
	}
	sorted := slices.Clone(ps)
	slices.SortFunc(sorted, func(a, b elastico.Profile) int {
		return strings.Compare(sortKey(&a), sortKey(&b))
	})
	f := storeFile{Format: StoreFormat, Version: StoreVersion, Family: family, Profiles: make([]profileJSON, len(sorted))}
	for i := range sorted {
		p := &sorted[i]
		if p.Family != family {
			return fmt.Errorf("profiler: store: profile %q is of family %q, not %q", p.Config.ID, p.Family, family)
		}
		if err := p.Validate(); err != nil {
			return fmt.Errorf("profiler: store: %w", err)
		}
		if p.Hardware.GPUModel == "" {
			return fmt.Errorf("profiler: store: profile %q of family %q: Hardware.GPUModel is empty", p.Config.ID, family)
		}
		if i > 0 && sameKey(p, &sorted[i-1]) {
			return fmt.Errorf("profiler: store: family %q: two profiles of configuration %q on %+v", family, p.Config.ID, p.Hardware)
		}
		cs := make(map[string]float64)
		for c := elastico.Counter(0); c < elastico.NumCounters; c++ {
			if v, ok := p.Counters.Get(c); ok {
				cs[c.String()] = v
			}
		}
		f.Profiles[i] = profileJSON{
			Class:  p.Class.String(),
			Params: p.Params,
			Config: configJSON{
				ID: p.Config.ID, BatchSize: p.Config.BatchSize, Checkpointing: p.Config.Checkpointing,
				AMP: p.Config.AMP, GPUs: p.Config.GPUs, KVCacheFrac: p.Config.KVCacheFrac, MaxSeqs: p.Config.MaxSeqs,
			},
			Demand: demandJSON{
				GPUs: p.Demand.GPUs, SM: p.Demand.SM, GPUMemory: p.Demand.GPUMemory, CPU: p.Demand.CPU, RAM: p.Demand.RAM,
			},
			Throughput:   p.Throughput,
			Efficiency:   p.Efficiency,
			Counters:     cs,
			Hardware:     hardwareJSON{GPUModel: p.Hardware.GPUModel, Driver: p.Hardware.Driver, MIG: p.Hardware.MIG, MPS: p.Hardware.MPS},
			Interpolated: p.Interpolated,
		}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(&f); err != nil {
		return fmt.Errorf("profiler: store: %w", err)
	}
	return nil
}

func sortKey(p *elastico.Profile) string {
	h := p.Hardware
	return fmt.Sprintf("%s\x00%s\x00%s\x00%t\x00%t", p.Config.ID, h.GPUModel, h.Driver, h.MIG, h.MPS)
}

// Decode reads a store file; name (a path, usually) prefixes every error.
// It refuses a file of another format or a newer version, one that is
// truncated or has fields it does not know, and one whose profiles do not
// validate or repeat a key.
func Decode(r io.Reader, name string) (family string, ps []elastico.Profile, err error) {
	bad := func(format string, args ...any) (string, []elastico.Profile, error) {
		return "", nil, fmt.Errorf("profiler: store: %s: %s", name, fmt.Sprintf(format, args...))
	}
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	var f storeFile
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return bad("truncated or empty: %v", err)
		}
		return bad("not a profile store file: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return bad("data after the profile store object")
	}
	switch {
	case f.Format != StoreFormat:
		return bad("not a profile store file (format %q, want %q)", f.Format, StoreFormat)
	case f.Version > StoreVersion:
		return bad("written by a newer elastico (version %d; this one reads up to %d)", f.Version, StoreVersion)
	case f.Version < 1:
		return bad("version %d, want 1..%d", f.Version, StoreVersion)
	case f.Family == "":
		return bad("family is empty")
	}
	ps = make([]elastico.Profile, len(f.Profiles))
	for i, j := range f.Profiles {
		p := &ps[i]
		p.Family = f.Family
		switch j.Class {
		case "training":
			p.Class = elastico.Training
		case "inference":
			p.Class = elastico.Inference
		default:
			return bad("profiles[%d].class is %q, want training or inference", i, j.Class)
		}
		p.Params = j.Params
		c := j.Config
		p.Config = elastico.Configuration{ID: c.ID, BatchSize: c.BatchSize, Checkpointing: c.Checkpointing,
			AMP: c.AMP, GPUs: c.GPUs, KVCacheFrac: c.KVCacheFrac, MaxSeqs: c.MaxSeqs}
		d := j.Demand
		p.Demand = elastico.Demand{GPUs: d.GPUs, SM: d.SM, GPUMemory: d.GPUMemory, CPU: d.CPU, RAM: d.RAM}
		p.Throughput, p.Efficiency, p.Interpolated = j.Throughput, j.Efficiency, j.Interpolated
		for k, v := range j.Counters {
			c, ok := elastico.CounterByName(k)
			if !ok {
				return bad("profiles[%d].counters has an unknown counter %q", i, k)
			}
			p.Counters.Set(c, v)
		}
		h := j.Hardware
		if h.GPUModel == "" {
			return bad("profiles[%d].hardware.gpu_model is empty", i)
		}
		p.Hardware = elastico.Hardware{GPUModel: h.GPUModel, Driver: h.Driver, MIG: h.MIG, MPS: h.MPS}
		if err := p.Validate(); err != nil {
			return bad("profiles[%d]: %v", i, err)
		}
		for k := 0; k < i; k++ {
			if sameKey(&ps[k], p) {
				return bad("profiles[%d] repeats configuration %q on the hardware of profiles[%d]", i, p.Config.ID, k)
			}
		}
	}
	return f.Family, ps, nil
}
