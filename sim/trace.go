package sim

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/gavel"
)

// Trace is a list of jobs as a trace file states them, before they are bound
// to the ground truth's families (see [Workload]).
type Trace struct {
	Name   string // file name, for errors and reports
	Format string // "gavel", "pollux", "philly", "openb", "csv"
	Jobs   []TraceJob
	// Skipped counts rows the reader left out on purpose (CPU-only pods,
	// pods never scheduled), with the reason.
	Skipped map[string]int
}

// TraceJob is one job of a trace. Fields a format does not state are zero.
type TraceJob struct {
	ID      string
	Line    int     // line in the file, for errors
	Arrival float64 // seconds from the trace's origin
	// Family is the trace's model or application ("ResNet-50", "cifar10");
	// empty when the trace has none and the binding draws one.
	Family string
	// Batch is the per-GPU batch (Gavel) and GlobalBatch the total batch
	// (Pollux); zero when not stated.
	Batch, GlobalBatch int
	GPUs               int     // requested GPUs, ≥ 1
	GPUShare           float64 // fraction of one GPU requested (openb), 1 if whole GPUs
	// Models are the GPU models the job may run on (openb's gpu_spec);
	// empty: any.
	Models []string
	// Steps is the work in training steps at the requested configuration
	// (Gavel); Duration the run time under the requested configuration, in
	// seconds (Philly, openb); Work the work in the family's
	// reference-equivalent unit (generic CSV). At most one is used, in the
	// order Work, Steps, Duration; a job with none gets its work from the
	// family (Pollux: the application's full training).
	Steps, Duration, Work float64
	Class                 elastico.Class
	ClassKnown            bool // Class comes from the trace
	// Inference knobs requested (generic CSV); zero means the default.
	KVCacheFrac float64
	MaxSeqs     int
}

// Formats lists the trace formats, for flags and errors.
var Formats = []string{"gavel", "pollux", "philly", "openb", "csv"}

// ReadTrace reads a trace in the named format; name is used in errors.
func ReadTrace(r io.Reader, format, name string) (*Trace, error) {
	switch format {
	case "gavel":
		return ReadGavel(r, name)
	case "pollux":
		return ReadPollux(r, name)
	case "philly":
		return ReadPhilly(r, name)
	case "openb":
		return ReadOpenB(r, name)
	case "csv":
		return ReadCSV(r, name)
	}
	return nil, fmt.Errorf("sim: %s: unknown trace format %q (want one of %s)", name, format, strings.Join(Formats, ", "))
}

// TraceError names the file, the line and the field of a bad trace row.
type TraceError struct {
	File  string
	Line  int
	Field string
	Err   error
}

func (e *TraceError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("sim: %s:%d: %v", e.File, e.Line, e.Err)
	}
	return fmt.Sprintf("sim: %s:%d: %s: %v", e.File, e.Line, e.Field, e.Err)
}

func (e *TraceError) Unwrap() error { return e.Err }

func traceErr(file string, line int, field, format string, args ...any) error {
	return &TraceError{File: file, Line: line, Field: field, Err: fmt.Errorf(format, args...)}
}

func parseFloat(file string, line int, field, s string, min float64) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, traceErr(file, line, field, "%q is not a number", s)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) || v < min {
		return 0, traceErr(file, line, field, "%g is out of range (want a finite number ≥ %g)", v, min)
	}
	return v, nil
}

func parseInt(file string, line int, field, s string, min int) (int, error) {
	v, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil {
		// Some traces write integers as floats ("1.0").
		f, ferr := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<31 {
			return 0, traceErr(file, line, field, "%q is not an integer", s)
		}
		v = int(f)
	}
	if v < min {
		return 0, traceErr(file, line, field, "%d is out of range (want ≥ %d)", v, min)
	}
	return v, nil
}

// ReadGavel reads Gavel's tab-separated traces: the 7-field format of the
// Philly-derived per-VC traces (job_type, command, num_steps_arg,
// needs_data_dir, total_steps, arrival_time, scale_factor) and the 10-field
// format of Gavel's current parser (job_type, command, working_directory,
// num_steps_arg, needs_data_dir, total_steps, scale_factor, priority_weight,
// SLO, arrival_time).
func ReadGavel(r io.Reader, name string) (*Trace, error) {
	tr := &Trace{Name: name, Format: "gavel"}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(text) == "" {
			continue
		}
		f := strings.Split(text, "\t")
		var typ, steps, arrival, scale string
		switch len(f) {
		case 7:
			typ, steps, arrival, scale = f[0], f[4], f[5], f[6]
		case 10:
			typ, steps, scale, arrival = f[0], f[5], f[6], f[9]
		default:
			return nil, traceErr(name, line, "", "%d tab-separated fields, want 7 or 10", len(f))
		}
		jt, err := gavel.ParseJobType(typ)
		if err != nil {
			return nil, traceErr(name, line, "job_type", "%v", err)
		}
		j := TraceJob{ID: fmt.Sprintf("job%05d", len(tr.Jobs)), Line: line, Family: jt.Model, Batch: jt.BatchSize, GPUShare: 1}
		if j.Steps, err = parseFloat(name, line, "total_steps", steps, 1); err != nil {
			return nil, err
		}
		if j.Arrival, err = parseFloat(name, line, "arrival_time", arrival, 0); err != nil {
			return nil, err
		}
		if j.GPUs, err = parseInt(name, line, "scale_factor", scale, 1); err != nil {
			return nil, err
		}
		tr.Jobs = append(tr.Jobs, j)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("sim: %s: %w", name, err)
	}
	return finishTrace(tr)
}

// csvRows reads a CSV with a header and calls row for each record with a
// lookup of the named columns. required columns must be in the header.
func csvRows(r io.Reader, name string, required []string, row func(line int, get func(string) string) error) (map[string]bool, error) {
	return csvRowsChecked(r, name, required, nil, row)
}

// csvRowsChecked is csvRows with a check of the header's columns.
func csvRowsChecked(r io.Reader, name string, required []string, check func(has map[string]bool) error, row func(line int, get func(string) string) error) (map[string]bool, error) {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = -1
	cr.TrimLeadingSpace = true
	head, err := cr.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("sim: %s: empty file, want a header", name)
	}
	if err != nil {
		return nil, fmt.Errorf("sim: %s: %w", name, err)
	}
	col := map[string]int{}
	for i, h := range head {
		col[strings.ToLower(strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")))] = i
	}
	for _, c := range required {
		if _, ok := col[c]; !ok {
			return nil, traceErr(name, 1, c, "missing column (header has %s)", strings.Join(head, ","))
		}
	}
	has := map[string]bool{}
	for c := range col {
		has[c] = true
	}
	if check != nil {
		if err := check(has); err != nil {
			return nil, err
		}
	}
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return has, nil
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, traceErr(name, pe.Line, "", "%v", pe.Err)
			}
			return nil, fmt.Errorf("sim: %s: %w", name, err)
		}
		if len(rec) == 1 && strings.TrimSpace(rec[0]) == "" {
			continue
		}
		if len(rec) != len(head) {
			return nil, traceErr(name, line, "", "%d fields, the header has %d", len(rec), len(head))
		}
		get := func(c string) string {
			if i, ok := col[c]; ok {
				return strings.TrimSpace(rec[i])
			}
			return ""
		}
		if err := row(line, get); err != nil {
			return nil, err
		}
	}
}

// ReadPollux reads a Pollux or Sia workload: name,time,application,
// num_replicas,batch_size, with batch_size the global batch. The job's work
// is the application's full training (Pollux's completion epoch), so the
// trace states no duration.
func ReadPollux(r io.Reader, name string) (*Trace, error) {
	tr := &Trace{Name: name, Format: "pollux"}
	_, err := csvRows(r, name, []string{"name", "time", "application", "num_replicas", "batch_size"}, func(line int, get func(string) string) error {
		j := TraceJob{ID: get("name"), Line: line, Family: get("application"), GPUShare: 1}
		if j.ID == "" {
			return traceErr(name, line, "name", "is empty")
		}
		if j.Family == "" {
			return traceErr(name, line, "application", "is empty")
		}
		var err error
		if j.Arrival, err = parseFloat(name, line, "time", get("time"), 0); err != nil {
			return err
		}
		if j.GPUs, err = parseInt(name, line, "num_replicas", get("num_replicas"), 1); err != nil {
			return err
		}
		if j.GlobalBatch, err = parseInt(name, line, "batch_size", get("batch_size"), 1); err != nil {
			return err
		}
		tr.Jobs = append(tr.Jobs, j)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return finishTrace(tr)
}

// phillyTime is the timestamp layout of Pollux's philly.csv.
const phillyTime = "2006-01-02 15:04:05"

// ReadPhilly reads Pollux's philly.csv (timestamp,duration,num_gpus,
// gpu_time,cluster): jobs of Microsoft's Philly trace with their submit time,
// run time in seconds and GPU count. The trace names no model: the binding
// draws one.
func ReadPhilly(r io.Reader, name string) (*Trace, error) {
	tr := &Trace{Name: name, Format: "philly"}
	var t0 time.Time
	_, err := csvRows(r, name, []string{"timestamp", "duration", "num_gpus"}, func(line int, get func(string) string) error {
		ts, err := time.Parse(phillyTime, get("timestamp"))
		if err != nil {
			return traceErr(name, line, "timestamp", "%q is not %q", get("timestamp"), phillyTime)
		}
		j := TraceJob{ID: fmt.Sprintf("philly%05d", len(tr.Jobs)), Line: line, GPUShare: 1}
		if j.Duration, err = parseFloat(name, line, "duration", get("duration"), 0); err != nil {
			return err
		}
		if j.GPUs, err = parseInt(name, line, "num_gpus", get("num_gpus"), 1); err != nil {
			return err
		}
		if j.Duration == 0 {
			tr.skip("zero duration")
			return nil
		}
		if t0.IsZero() || ts.Before(t0) {
			t0 = ts
		}
		j.Arrival = float64(ts.Unix())
		tr.Jobs = append(tr.Jobs, j)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for i := range tr.Jobs {
		tr.Jobs[i].Arrival -= float64(t0.Unix())
	}
	return finishTrace(tr)
}

// ReadOpenB reads the Alibaba GPU cluster trace v2023 pod list
// (openb_pod_list_*.csv: name,cpu_milli,memory_mib,num_gpu,gpu_milli,
// gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time). Pods
// that request no GPU or were never scheduled are skipped (and counted); a
// pod arrives at creation_time and runs deletion_time − scheduled_time
// seconds. QoS LS (latency-sensitive) pods are taken as inference, the others
// as training (the FGD paper's reading of the trace). gpu_milli below 1000
// is a share of one GPU (GPUShare); gpu_spec, the GPU models the pod may run
// on, becomes Models (see parseGPUSpec). The trace states no license: read
// it from the user's copy, never ship it.
func ReadOpenB(r io.Reader, name string) (*Trace, error) {
	tr := &Trace{Name: name, Format: "openb"}
	_, err := csvRows(r, name, []string{"name", "num_gpu", "gpu_milli", "qos", "creation_time", "deletion_time", "scheduled_time"}, func(line int, get func(string) string) error {
		gpus, err := parseInt(name, line, "num_gpu", get("num_gpu"), 0)
		if err != nil {
			return err
		}
		if gpus == 0 {
			tr.skip("no GPU requested")
			return nil
		}
		if get("scheduled_time") == "" {
			tr.skip("never scheduled")
			return nil
		}
		j := TraceJob{ID: get("name"), Line: line, GPUs: gpus, ClassKnown: true}
		if j.ID == "" {
			return traceErr(name, line, "name", "is empty")
		}
		milli, err := parseInt(name, line, "gpu_milli", get("gpu_milli"), 0)
		if err != nil {
			return err
		}
		if milli == 0 || milli > 1000 {
			return traceErr(name, line, "gpu_milli", "%d is out of range (want 1..1000)", milli)
		}
		if milli < 1000 && gpus > 1 {
			// The trace shares GPUs only among one-GPU pods (its README).
			return traceErr(name, line, "gpu_milli", "%d of each of %d GPUs: a share of a GPU is for one-GPU pods", milli, gpus)
		}
		j.GPUShare = float64(milli) / 1000
		if j.Models, err = parseGPUSpec(get("gpu_spec")); err != nil {
			return traceErr(name, line, "gpu_spec", "%v", err)
		}
		created, err := parseFloat(name, line, "creation_time", get("creation_time"), 0)
		if err != nil {
			return err
		}
		deleted, err := parseFloat(name, line, "deletion_time", get("deletion_time"), 0)
		if err != nil {
			return err
		}
		sched, err := parseFloat(name, line, "scheduled_time", get("scheduled_time"), 0)
		if err != nil {
			return err
		}
		if sched < created {
			return traceErr(name, line, "scheduled_time", "%g is before creation_time %g", sched, created)
		}
		if deleted <= sched {
			tr.skip("no run time")
			return nil
		}
		j.Arrival, j.Duration = created, deleted-sched
		if get("qos") == "LS" {
			j.Class = elastico.Inference
		}
		tr.Jobs = append(tr.Jobs, j)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return finishTrace(tr)
}

// ReadCSV reads the generic trace format, a CSV with a header:
//
//	column    required  meaning
//	arrival   yes       seconds from the trace's origin
//	gpus      yes       GPUs requested (≥ 1)
//	duration  one of    seconds under the requested configuration, alone
//	work      these     work in the family's unit (reference-equivalent samples, or tokens)
//	id        no        job ID (default: "job" + row number)
//	family    no        a family of the ground truth (default: drawn by the binding)
//	batch     no        per-GPU batch of a training job (default: the family's smallest)
//	class     no        "training" (default) or "inference"
//	kv        no        inference: KV-cache budget as a fraction of GPU memory
//	seqs      no        inference: maximum concurrent sequences
//
// Unknown columns are ignored.
func ReadCSV(r io.Reader, name string) (*Trace, error) {
	tr := &Trace{Name: name, Format: "csv"}
	headerOK := func(has map[string]bool) error {
		if !has["duration"] && !has["work"] {
			return traceErr(name, 1, "duration", "missing column (need duration or work)")
		}
		return nil
	}
	_, err := csvRowsChecked(r, name, []string{"arrival", "gpus"}, headerOK, func(line int, get func(string) string) error {
		j := TraceJob{ID: get("id"), Line: line, Family: get("family"), GPUShare: 1}
		if j.ID == "" {
			j.ID = fmt.Sprintf("job%05d", len(tr.Jobs))
		}
		var err error
		if j.Arrival, err = parseFloat(name, line, "arrival", get("arrival"), 0); err != nil {
			return err
		}
		if j.GPUs, err = parseInt(name, line, "gpus", get("gpus"), 1); err != nil {
			return err
		}
		d, w := get("duration"), get("work")
		switch {
		case d != "" && w != "":
			return traceErr(name, line, "duration", "and work are both set; give one")
		case d != "":
			if j.Duration, err = parseFloat(name, line, "duration", d, 0); err != nil {
				return err
			}
			if j.Duration == 0 {
				return traceErr(name, line, "duration", "is 0")
			}
		case w != "":
			if j.Work, err = parseFloat(name, line, "work", w, 0); err != nil {
				return err
			}
			if j.Work == 0 {
				return traceErr(name, line, "work", "is 0")
			}
		default:
			return traceErr(name, line, "duration", "is empty and so is work; give one")
		}
		if s := get("batch"); s != "" {
			if j.Batch, err = parseInt(name, line, "batch", s, 1); err != nil {
				return err
			}
		}
		switch c := strings.ToLower(get("class")); c {
		case "", "training":
			j.ClassKnown = c != ""
		case "inference":
			j.Class, j.ClassKnown = elastico.Inference, true
		default:
			return traceErr(name, line, "class", "%q, want training or inference", c)
		}
		if s := get("kv"); s != "" {
			if j.KVCacheFrac, err = parseFloat(name, line, "kv", s, 0); err != nil {
				return err
			}
			if j.KVCacheFrac == 0 || j.KVCacheFrac >= 1 {
				return traceErr(name, line, "kv", "%g, want a fraction in (0, 1)", j.KVCacheFrac)
			}
		}
		if s := get("seqs"); s != "" {
			if j.MaxSeqs, err = parseInt(name, line, "seqs", s, 1); err != nil {
				return err
			}
		}
		if j.Class == elastico.Training && (j.KVCacheFrac != 0 || j.MaxSeqs != 0) {
			return traceErr(name, line, "kv", "inference knobs on a training job")
		}
		tr.Jobs = append(tr.Jobs, j)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return finishTrace(tr)
}

func (tr *Trace) skip(reason string) {
	if tr.Skipped == nil {
		tr.Skipped = map[string]int{}
	}
	tr.Skipped[reason]++
}

// finishTrace sorts by arrival (stable: ties keep file order), rejects
// duplicate IDs and empty traces.
func finishTrace(tr *Trace) (*Trace, error) {
	if len(tr.Jobs) == 0 {
		return nil, fmt.Errorf("sim: %s: no jobs", tr.Name)
	}
	slices.SortStableFunc(tr.Jobs, func(a, b TraceJob) int {
		switch {
		case a.Arrival < b.Arrival:
			return -1
		case a.Arrival > b.Arrival:
			return 1
		}
		return 0
	})
	seen := make(map[string]int, len(tr.Jobs))
	for _, j := range tr.Jobs {
		if l, ok := seen[j.ID]; ok {
			return nil, traceErr(tr.Name, j.Line, "id", "%q is a duplicate of line %d", j.ID, l)
		}
		seen[j.ID] = j.Line
	}
	return tr, nil
}

// ConcatTraces joins traces of one format end to end, as one trace called
// name: each begins one mean inter-arrival gap after the previous one's
// last arrival, and job IDs get the prefix "<k>/" (k counts from 1) so that
// they stay unique.
func ConcatTraces(name string, traces ...*Trace) (*Trace, error) {
	if len(traces) == 0 {
		return nil, fmt.Errorf("sim: %s: no trace to join", name)
	}
	out := &Trace{Name: name, Format: traces[0].Format}
	offset := 0.0
	for k, tr := range traces {
		if tr == nil || len(tr.Jobs) == 0 {
			return nil, fmt.Errorf("sim: %s: trace %d is empty", name, k+1)
		}
		if tr.Format != out.Format {
			return nil, fmt.Errorf("sim: %s: trace %d (%s) is %s, the first is %s", name, k+1, tr.Name, tr.Format, out.Format)
		}
		first, last := tr.Jobs[0].Arrival, tr.Jobs[len(tr.Jobs)-1].Arrival
		gap := 0.0
		if len(tr.Jobs) > 1 {
			gap = (last - first) / float64(len(tr.Jobs)-1)
		}
		for _, j := range tr.Jobs {
			j.ID = fmt.Sprintf("%d/%s", k+1, j.ID)
			j.Arrival = offset + j.Arrival - first
			out.Jobs = append(out.Jobs, j)
		}
		offset += last - first + gap
		for r, n := range tr.Skipped {
			if out.Skipped == nil {
				out.Skipped = map[string]int{}
			}
			out.Skipped[r] += n
		}
	}
	return finishTrace(out)
}
