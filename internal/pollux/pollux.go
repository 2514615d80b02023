// Package pollux reads the measurements Pollux (OSDI'21, the osdi21-artifact
// branch of github.com/petuum/adaptdl, Apache-2.0) ships with its simulator,
// for six training jobs (bert, cifar10, deepspeech2, imagenet, ncf, yolov3)
// measured on AWS g4dn.12xlarge nodes (4 NVIDIA T4 each):
//
//   - placements.csv: the step time and its gradient-synchronization part
//     against the local (per-GPU) batch size and the GPU placement;
//   - validation-<batch>.csv: a whole training run at one global batch size,
//     with the progress (in steps at the smallest batch size), the
//     validation metric and the gradient statistics (|g|², tr Σ) per epoch.
//
// The files ship embedded (data/, with the license); Load parses one model.
// The package only parses: the goodput model that uses the gradient
// statistics lives in package rst. Who reads it and why apart: see the root
// package doc, The shipped measurements.
package pollux

import (
	"embed"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"
)

//go:embed data
var embedded embed.FS

// Data returns the embedded data folder, one sub-folder per model.
func Data() fs.FS {
	// fs.Sub fails only on an invalid path, and "data" is valid.
	sub, _ := fs.Sub(embedded, "data")
	return sub
}

// Models returns the names of the embedded models, sorted.
func Models() []string {
	return []string{"bert", "cifar10", "deepspeech2", "imagenet", "ncf", "yolov3"}
}

// Point is one row of a validation file: the state of a training run at the
// end of an epoch.
type Point struct {
	// Progress is the work done so far in steps at the model's smallest
	// validated batch size (AdaptDL's "progress": the sum of each step's gain
	// relative to that batch size).
	Progress float64
	// Iteration is the number of optimizer steps taken so far.
	Iteration float64
	// Metric is the validation metric (accuracy, F1, WER, ... : the model's).
	Metric float64
	// GradSqr is the estimate of |E g|², the squared norm of the true
	// gradient; GradVar the estimate of tr Σ, the trace of the gradient's
	// covariance, for a batch of the smallest validated size (AdaptDL
	// normalizes it so). Either may be 0 when AdaptDL's estimate was clipped.
	GradSqr, GradVar float64
}

// Run is one validation file: a training run at one global batch size.
type Run struct {
	Batch  int
	Points []Point
}

// Placement is one row of placements.csv.
type Placement struct {
	// Placement is one digit per node, the number of GPUs used there: "22"
	// is two nodes with two GPUs each.
	Placement string
	Nodes     int // len(Placement)
	Replicas  int // sum of the digits
	// LocalBatch is the batch size per GPU.
	LocalBatch int
	// StepTime is the seconds per optimizer step; SyncTime the part of it
	// spent synchronizing gradients.
	StepTime, SyncTime float64
}

// Samples returns the samples per second of the placement: replicas ×
// local batch / step time.
func (p *Placement) Samples() float64 {
	return float64(p.Replicas*p.LocalBatch) / p.StepTime
}

// App is everything measured of one model.
type App struct {
	Name string
	// Runs are the validation runs, by increasing batch size.
	Runs []Run
	// Placements are the rows of placements.csv, in file order.
	Placements []Placement
}

// Load reads one embedded model.
func Load(model string) (*App, error) { return LoadFS(Data(), model) }

// LoadFS reads a model from fsys, which holds one folder per model laid out
// like Pollux's simulator/traces: <model>/placements.csv and
// <model>/validation-<batch>.csv.
func LoadFS(fsys fs.FS, model string) (*App, error) {
	if model == "" || strings.ContainsAny(model, `/\`) {
		return nil, fmt.Errorf("pollux: model %q: want a folder name", model)
	}
	app := &App{Name: model}
	entries, err := fs.ReadDir(fsys, model)
	if err != nil {
		return nil, fmt.Errorf("pollux: model %q: %w", model, err)
	}
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "validation-") || !strings.HasSuffix(name, ".csv") {
			continue
		}
		p := path.Join(model, name)
		b, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, "validation-"), ".csv"))
		if err != nil || b < 1 {
			return nil, fmt.Errorf("pollux: %s: the file name must be validation-<batch size>.csv", p)
		}
		f, err := fsys.Open(p)
		if err != nil {
			return nil, fmt.Errorf("pollux: %w", err)
		}
		run, err := ParseValidation(f, p, b)
		f.Close()
		if err != nil {
			return nil, err
		}
		app.Runs = append(app.Runs, run)
	}
	if len(app.Runs) == 0 {
		return nil, fmt.Errorf("pollux: model %q: no validation-<batch>.csv file", model)
	}
	slices.SortFunc(app.Runs, func(a, b Run) int { return a.Batch - b.Batch })

	p := path.Join(model, "placements.csv")
	f, err := fsys.Open(p)
	if err != nil {
		return nil, fmt.Errorf("pollux: %w", err)
	}
	defer f.Close()
	if app.Placements, err = ParsePlacements(f, p); err != nil {
		return nil, err
	}
	return app, nil
}

// ParseValidation reads a validation file (header
// progress,iteration,metric,grad_sqr,grad_var) of a run at global batch size
// batch. name is used in errors, with the line number.
func ParseValidation(r io.Reader, name string, batch int) (Run, error) {
	if batch < 1 {
		return Run{}, fmt.Errorf("pollux: %s: batch size %d, want ≥ 1", name, batch)
	}
	run := Run{Batch: batch}
	err := readCSV(r, name, []string{"progress", "iteration", "metric", "grad_sqr", "grad_var"}, func(line int, rec []string) error {
		var v [5]float64
		for i, s := range rec {
			x, err := number(s)
			if err != nil {
				return fmt.Errorf("pollux: %s:%d: %s: %w", name, line, validationColumns[i], err)
			}
			v[i] = x
		}
		pt := Point{Progress: v[0], Iteration: v[1], Metric: v[2], GradSqr: v[3], GradVar: v[4]}
		if n := len(run.Points); n > 0 {
			prev := run.Points[n-1]
			if pt.Progress < prev.Progress || pt.Iteration < prev.Iteration {
				return fmt.Errorf("pollux: %s:%d: progress and iteration must not decrease", name, line)
			}
		}
		run.Points = append(run.Points, pt)
		return nil
	})
	if err != nil {
		return Run{}, err
	}
	if len(run.Points) == 0 {
		return Run{}, fmt.Errorf("pollux: %s: no rows", name)
	}
	return run, nil
}

var validationColumns = []string{"progress", "iteration", "metric", "grad_sqr", "grad_var"}

// ParsePlacements reads a placements.csv (header
// placement,local_bsz,step_time,sync_time). name is used in errors.
func ParsePlacements(r io.Reader, name string) ([]Placement, error) {
	var out []Placement
	err := readCSV(r, name, []string{"placement", "local_bsz", "step_time", "sync_time"}, func(line int, rec []string) error {
		p := Placement{Placement: rec[0], Nodes: len(rec[0])}
		if p.Nodes == 0 {
			return fmt.Errorf("pollux: %s:%d: placement is empty", name, line)
		}
		for _, c := range rec[0] {
			if c < '1' || c > '9' {
				return fmt.Errorf("pollux: %s:%d: placement %q: want one digit 1-9 per node", name, line, rec[0])
			}
			p.Replicas += int(c - '0')
		}
		b, err := strconv.Atoi(rec[1])
		if err != nil || b < 1 {
			return fmt.Errorf("pollux: %s:%d: local_bsz %q: want a positive integer", name, line, rec[1])
		}
		p.LocalBatch = b
		if p.StepTime, err = number(rec[2]); err != nil || p.StepTime <= 0 {
			return fmt.Errorf("pollux: %s:%d: step_time %q: want a positive number", name, line, rec[2])
		}
		if p.SyncTime, err = number(rec[3]); err != nil || p.SyncTime > p.StepTime {
			return fmt.Errorf("pollux: %s:%d: sync_time %q: want a number in [0, step_time]", name, line, rec[3])
		}
		out = append(out, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("pollux: %s: no rows", name)
	}
	return out, nil
}

// readCSV checks the header and calls row for every record with its 1-based
// line number.
func readCSV(r io.Reader, name string, header []string, row func(line int, rec []string) error) error {
	cr := csv.NewReader(r)
	cr.FieldsPerRecord = len(header)
	cr.ReuseRecord = true
	rec, err := cr.Read()
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("pollux: %s: empty file", name)
	}
	if err != nil {
		return fmt.Errorf("pollux: %s: %w", name, err)
	}
	if !slices.Equal(rec, header) {
		return fmt.Errorf("pollux: %s:1: header %q, want %q", name, strings.Join(rec, ","), strings.Join(header, ","))
	}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("pollux: %s: %w", name, err)
		}
		line, _ := cr.FieldPos(0)
		if err := row(line, rec); err != nil {
			return err
		}
	}
}

// number parses a finite, non-negative float.
func number(s string) (float64, error) {
	x, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a number", s)
	}
	if math.IsNaN(x) || math.IsInf(x, 0) || x < 0 {
		return 0, fmt.Errorf("%q is not a finite non-negative number", s)
	}
	return x, nil
}
