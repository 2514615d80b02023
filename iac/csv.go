package iac

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"strconv"
	"strings"

	"github.com/elastico/elastico"
)

// The columns of profiles.csv. Every one of them must be in the header (in
// any order); other columns are ignored, except gpu_model, read into
// Profile.Hardware.GPUModel when present.
var profileColumns = []string{
	"id", "family", "class", "batch_size", "amp", "checkpointing", "kv_cache_frac", "params", "gpus", "throughput",
	"gr_engine_active", "sm_active", "sm_occupancy", "tensor_active", "fp_active",
	"dram_active", "fb_used_frac", "pcie_frac", "nvlink_frac", "power_frac",
}

// The columns of pairs.csv.
var pairColumns = []string{"a", "b", "speed_a", "speed_b"}

// csvFile reads one CSV file and turns cell problems into errors naming the
// file, the line, the column number and the column's name.
type csvFile struct {
	name string
	r    *csv.Reader
	col  map[string]int // column name → field index
	rec  []string
}

func newCSV(r io.Reader, name string, required []string) (*csvFile, error) {
	f := &csvFile{name: name, r: csv.NewReader(r)}
	f.r.Comment = '#'
	header, err := f.r.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("iac: %s: empty file, want a header line", name)
	}
	if err != nil {
		return nil, fmt.Errorf("iac: %s: %w", name, err)
	}
	f.col = make(map[string]int, len(header))
	for i, h := range header {
		h = strings.TrimSpace(h)
		if i == 0 {
			h = strings.TrimPrefix(h, "\ufeff")
		}
		if _, dup := f.col[h]; dup {
			line, col := f.r.FieldPos(i)
			return nil, fmt.Errorf("iac: %s:%d:%d: column %q appears twice", name, line, col, h)
		}
		f.col[h] = i
	}
	var missing []string
	for _, c := range required {
		if _, ok := f.col[c]; !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("iac: %s:1: header lacks column(s) %s (want at least %s)", name, strings.Join(missing, ", "), strings.Join(required, ","))
	}
	return f, nil
}

// next reads the next record; false at the end.
func (f *csvFile) next() (bool, error) {
	rec, err := f.r.Read()
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		var pe *csv.ParseError
		if errors.As(err, &pe) {
			return false, fmt.Errorf("iac: %s:%d:%d: %v", f.name, pe.Line, pe.Column, pe.Err)
		}
		return false, fmt.Errorf("iac: %s: %w", f.name, err)
	}
	f.rec = rec
	return true, nil
}

func (f *csvFile) line() int {
	l, _ := f.r.FieldPos(0)
	return l
}

// cell returns the trimmed cell of column name.
func (f *csvFile) cell(name string) string {
	return strings.TrimSpace(f.rec[f.col[name]])
}

// errorf names the file, line, column number and column.
func (f *csvFile) errorf(name, format string, args ...any) error {
	i := f.col[name]
	line, _ := f.r.FieldPos(i)
	return fmt.Errorf("iac: %s:%d:%d (%s): %s", f.name, line, i+1, name, fmt.Sprintf(format, args...))
}

// float parses a finite number in [lo, hi]; ok is false for an empty cell.
func (f *csvFile) float(name string, lo, hi float64, loOpen bool) (v float64, ok bool, err error) {
	s := f.cell(name)
	if s == "" {
		return 0, false, nil
	}
	v, perr := strconv.ParseFloat(s, 64)
	if perr != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false, f.errorf(name, "%q is not a finite number", s)
	}
	if v < lo || v > hi || (loOpen && v == lo) {
		lb := "["
		if loOpen {
			lb = "("
		}
		hb := fmt.Sprintf("%g]", hi)
		if math.IsInf(hi, 1) {
			hb = "∞)"
		}
		return 0, false, f.errorf(name, "%g is out of range, want %s%g, %s", v, lb, lo, hb)
	}
	return v, true, nil
}

func (f *csvFile) integer(name string, required bool) (int, error) {
	s := f.cell(name)
	if s == "" {
		if required {
			return 0, f.errorf(name, "is empty, want an integer ≥ 1")
		}
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, f.errorf(name, "%q is not an integer ≥ 1", s)
	}
	return n, nil
}

func (f *csvFile) boolean(name string) (bool, error) {
	switch strings.ToLower(f.cell(name)) {
	case "1", "true":
		return true, nil
	case "0", "false":
		return false, nil
	case "":
		return false, f.errorf(name, "is empty, want 0 or 1")
	}
	return false, f.errorf(name, "%q is not 0, 1, true or false", f.cell(name))
}

// ReadProfiles reads profiles.csv into a Dataset without pairs. name is the
// file's name in errors. The format:
//
//	id,family,class,batch_size,amp,checkpointing,kv_cache_frac,params,gpus,throughput,
//	gr_engine_active,sm_active,sm_occupancy,tensor_active,fp_active,
//	dram_active,fb_used_frac,pcie_frac,nvlink_frac,power_frac
//
// one header line naming the columns (any order; unknown columns ignored,
// gpu_model optional), lines starting with # ignored, then one line per
// profile:
//
//   - id: unique, non-empty; family: non-empty (leave-family-out groups by it);
//   - class: training or inference;
//   - batch_size: an integer ≥ 1, or empty when the job has none;
//   - amp, checkpointing: 0/1 (or false/true), required;
//   - kv_cache_frac: the KV-cache reservation over GPU memory in [0, 1];
//     empty means 0 for a training job and is an error for inference;
//   - params: the model's parameter count (> 0), or empty if unknown;
//   - gpus: an integer ≥ 1;
//   - throughput: isolated throughput (> 0) in the job's own unit, or empty;
//   - the ten counters: ratios in [0, 1] averaged over the profiling
//     window (profiler/dcgm and profiler/nvml say how each is read from
//     DCGM or NVML); an empty cell is a counter that was not measured.
func ReadProfiles(r io.Reader, name string) (*Dataset, error) {
	f, err := newCSV(r, name, profileColumns)
	if err != nil {
		return nil, err
	}
	_, hasGPU := f.col["gpu_model"]
	d := &Dataset{Name: name}
	lines := map[string]int{}
	for {
		ok, err := f.next()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		p, id, err := f.profile(hasGPU)
		if err != nil {
			return nil, err
		}
		if l, dup := lines[id]; dup {
			return nil, f.errorf("id", "%q already defined on line %d", id, l)
		}
		lines[id] = f.line()
		d.IDs = append(d.IDs, id)
		d.Profiles = append(d.Profiles, p)
	}
	if len(d.Profiles) == 0 {
		return nil, fmt.Errorf("iac: %s: no profiles after the header", name)
	}
	return d, nil
}

func (f *csvFile) profile(hasGPU bool) (elastico.Profile, string, error) {
	var p elastico.Profile
	id := f.cell("id")
	if id == "" {
		return p, "", f.errorf("id", "is empty")
	}
	if p.Family = f.cell("family"); p.Family == "" {
		return p, "", f.errorf("family", "is empty")
	}
	switch c := strings.ToLower(f.cell("class")); c {
	case "training":
		p.Class = elastico.Training
	case "inference":
		p.Class = elastico.Inference
	default:
		return p, "", f.errorf("class", "%q is neither training nor inference", f.cell("class"))
	}
	var err error
	p.Config.ID = id
	if p.Config.BatchSize, err = f.integer("batch_size", false); err != nil {
		return p, "", err
	}
	if p.Config.AMP, err = f.boolean("amp"); err != nil {
		return p, "", err
	}
	if p.Config.Checkpointing, err = f.boolean("checkpointing"); err != nil {
		return p, "", err
	}
	kv, ok, err := f.float("kv_cache_frac", 0, 1, false)
	if err != nil {
		return p, "", err
	}
	if !ok && p.Class == elastico.Inference {
		return p, "", f.errorf("kv_cache_frac", "is empty, want the KV-cache share of GPU memory for an inference job")
	}
	p.Config.KVCacheFrac = kv
	if p.Params, _, err = f.float("params", 0, math.Inf(1), true); err != nil {
		return p, "", err
	}
	if p.Config.GPUs, err = f.integer("gpus", true); err != nil {
		return p, "", err
	}
	p.Demand.GPUs = p.Config.GPUs
	if p.Throughput, _, err = f.float("throughput", 0, math.Inf(1), true); err != nil {
		return p, "", err
	}
	for c := elastico.Counter(0); c < elastico.NumCounters; c++ {
		v, ok, err := f.float(c.String(), 0, 1, false)
		if err != nil {
			return p, "", err
		}
		if ok {
			p.Counters.Set(c, v)
		}
	}
	if hasGPU {
		p.Hardware.GPUModel = f.cell("gpu_model")
	}
	return p, id, nil
}

// ReadPairs reads pairs.csv into d, whose profiles it references. The format:
// a header naming at least a,b,speed_a,speed_b, then one line per
// co-located run: the two profiles' IDs and each one's speed (throughput
// next to the other over isolated throughput, > 0; empty if that side was
// not measured, but not both). A pair appears once (a,b and b,a are the same
// pair).
func (d *Dataset) ReadPairs(r io.Reader, name string) error {
	f, err := newCSV(r, name, pairColumns)
	if err != nil {
		return err
	}
	index := make(map[string]int, len(d.IDs))
	for i, id := range d.IDs {
		index[id] = i
	}
	seen := map[[2]int]int{}
	var pairs []Pair
	for {
		ok, err := f.next()
		if err != nil {
			return err
		}
		if !ok {
			break
		}
		var p Pair
		for _, side := range []struct {
			col string
			dst *int
		}{{"a", &p.A}, {"b", &p.B}} {
			id := f.cell(side.col)
			i, ok := index[id]
			if !ok {
				return f.errorf(side.col, "profile %q is not in %s", id, d.Name)
			}
			*side.dst = i
		}
		if p.SpeedA, _, err = f.float("speed_a", 0, math.Inf(1), true); err != nil {
			return err
		}
		if p.SpeedB, _, err = f.float("speed_b", 0, math.Inf(1), true); err != nil {
			return err
		}
		if p.SpeedA == 0 && p.SpeedB == 0 {
			return f.errorf("speed_a", "both speeds are empty, want at least one")
		}
		key := [2]int{min(p.A, p.B), max(p.A, p.B)}
		if l, dup := seen[key]; dup {
			return f.errorf("a", "pair (%s, %s) already measured on line %d", d.IDs[p.A], d.IDs[p.B], l)
		}
		p.Line = f.line()
		seen[key] = p.Line
		pairs = append(pairs, p)
	}
	if len(pairs) == 0 {
		return fmt.Errorf("iac: %s: no pairs after the header", name)
	}
	d.Pairs = pairs
	return nil
}

// ReadDataset reads profiles.csv and pairs.csv (see [ReadProfiles] and
// [Dataset.ReadPairs]); the names are used in errors.
func ReadDataset(profiles io.Reader, profilesName string, pairs io.Reader, pairsName string) (*Dataset, error) {
	d, err := ReadProfiles(profiles, profilesName)
	if err != nil {
		return nil, err
	}
	if err := d.ReadPairs(pairs, pairsName); err != nil {
		return nil, err
	}
	return d, nil
}

// ReadDatasetFS reads the two files from fsys.
func ReadDatasetFS(fsys fs.FS, profilesPath, pairsPath string) (*Dataset, error) {
	pf, err := fsys.Open(profilesPath)
	if err != nil {
		return nil, fmt.Errorf("iac: %w", err)
	}
	defer pf.Close()
	qf, err := fsys.Open(pairsPath)
	if err != nil {
		return nil, fmt.Errorf("iac: %w", err)
	}
	defer qf.Close()
	return ReadDataset(pf, profilesPath, qf, pairsPath)
}

// WriteProfiles writes d's profiles in the profiles.csv format, with a
// gpu_model column. Numbers are written so that they read back exactly.
func (d *Dataset) WriteProfiles(w io.Writer) error {
	cw := csv.NewWriter(w)
	header := append(append([]string{}, profileColumns...), "gpu_model")
	if err := cw.Write(header); err != nil {
		return fmt.Errorf("iac: %w", err)
	}
	num := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	opt := func(x float64) string {
		if x == 0 {
			return ""
		}
		return num(x)
	}
	for i := range d.Profiles {
		p := &d.Profiles[i]
		batch := ""
		if p.Config.BatchSize > 0 {
			batch = strconv.Itoa(p.Config.BatchSize)
		}
		gpus := p.Config.GPUs
		if gpus == 0 {
			gpus = max(p.Demand.GPUs, 1)
		}
		rec := []string{
			d.IDs[i], p.Family, p.Class.String(), batch,
			num(boolf(p.Config.AMP)), num(boolf(p.Config.Checkpointing)),
			num(p.Config.KVCacheFrac), opt(p.Params), strconv.Itoa(gpus), opt(p.Throughput),
		}
		for c := elastico.Counter(0); c < elastico.NumCounters; c++ {
			if v, ok := p.Counters.Get(c); ok {
				rec = append(rec, num(v))
			} else {
				rec = append(rec, "")
			}
		}
		rec = append(rec, p.Hardware.GPUModel)
		if err := cw.Write(rec); err != nil {
			return fmt.Errorf("iac: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("iac: %w", err)
	}
	return nil
}

// WritePairs writes d's pairs in the pairs.csv format.
func (d *Dataset) WritePairs(w io.Writer) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(pairColumns); err != nil {
		return fmt.Errorf("iac: %w", err)
	}
	sp := func(x float64) string {
		if x == 0 {
			return ""
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	}
	for _, p := range d.Pairs {
		if err := cw.Write([]string{d.IDs[p.A], d.IDs[p.B], sp(p.SpeedA), sp(p.SpeedB)}); err != nil {
			return fmt.Errorf("iac: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("iac: %w", err)
	}
	return nil
}
