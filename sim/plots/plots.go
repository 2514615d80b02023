package plots

import (
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/elastico/elastico/sim"
)

// The files Write writes.
const (
	JCTCDF        = "jct_cdf.png"
	SMUtil        = "sm_util.png"
	QueueingDelay = "queueing_delay.png"
)

// Write writes three PNG plots into dir (atomically): the CDF of JCT per
// policy (every seed's jobs pooled), SM utilization over time and queueing
// delay by arrival order (both for the first seed).
func Write(dir string, o *sim.Outcome) error {
	for _, p := range []struct {
		file string
		make func(*sim.Outcome) (*plot.Plot, error)
	}{{JCTCDF, jctCDF}, {SMUtil, smOverTime}, {QueueingDelay, queueByArrival}} {
		pl, err := p.make(o)
		if err != nil {
			return fmt.Errorf("plots: %s: %w", p.file, err)
		}
		wt, err := pl.WriterTo(8*vg.Inch, 5*vg.Inch, "png")
		if err != nil {
			return fmt.Errorf("plots: %s: %w", p.file, err)
		}
		if err := sim.WriteFileAtomic(filepath.Join(dir, p.file), func(w io.Writer) error {
			_, err := wt.WriteTo(w)
			return err
		}); err != nil {
			return err
		}
	}
	return nil
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p
}

func addLine(p *plot.Plot, i int, name string, xys plotter.XYs) error {
	if len(xys) == 0 {
		return nil
	}
	l, err := plotter.NewLine(xys)
	if err != nil {
		return err
	}
	l.Color = plotutil.Color(i)
	l.Dashes = plotutil.Dashes(i / 7)
	l.Width = vg.Points(1.5)
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

func jctCDF(o *sim.Outcome) (*plot.Plot, error) {
	p := newPlot(fmt.Sprintf("JCT CDF, %d GPUs, %d seeds", o.GPUs, len(o.Seeds)), "job completion time (h, log scale)", "fraction of jobs")
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	for i, name := range o.Policies {
		var xs []float64
		for _, r := range o.Results[i] {
			if r == nil {
				continue
			}
			for _, j := range r.Jobs {
				if j.Finished {
					xs = append(xs, math.Max(j.JCT()/3600, 1e-3))
				}
			}
		}
		slices.Sort(xs)
		xys := make(plotter.XYs, len(xs))
		for k, x := range xs {
			xys[k] = plotter.XY{X: x, Y: float64(k+1) / float64(len(xs))}
		}
		if err := addLine(p, i, name, xys); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func smOverTime(o *sim.Outcome) (*plot.Plot, error) {
	p := newPlot(fmt.Sprintf("SM utilization, %d GPUs, seed %d", o.GPUs, o.Seeds[0]), "time (h)", "SM active, all GPUs (%)")
	for i, name := range o.Policies {
		r := o.Results[i][0]
		if r == nil {
			continue
		}
		// A step function, thinned to at most ~2,000 points by averaging
		// over equal time bins.
		end := r.Makespan
		if end <= 0 || len(r.Series) == 0 {
			continue
		}
		const bins = 1000
		w := end / bins
		xys := make(plotter.XYs, 0, bins)
		k := 0
		for b := 0; b < bins; b++ {
			lo, hi := float64(b)*w, float64(b+1)*w
			area := 0.0
			for t := lo; t < hi; {
				for k+1 < len(r.Series) && r.Series[k+1].Time <= t {
					k++
				}
				next := hi
				if k+1 < len(r.Series) {
					next = math.Min(hi, r.Series[k+1].Time)
				}
				v := 0.0
				if r.Series[k].Time <= t {
					v = r.Series[k].SMUtil
				}
				area += v * (next - t)
				t = next
			}
			xys = append(xys, plotter.XY{X: (lo + hi) / 2 / 3600, Y: 100 * area / w})
		}
		if err := addLine(p, i, name, xys); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func queueByArrival(o *sim.Outcome) (*plot.Plot, error) {
	p := newPlot(fmt.Sprintf("Queueing delay by arrival order, %d GPUs, seed %d", o.GPUs, o.Seeds[0]), "job (arrival order)", "queueing delay (h)")
	for i, name := range o.Policies {
		r := o.Results[i][0]
		if r == nil {
			continue
		}
		xys := make(plotter.XYs, 0, len(r.Jobs))
		for k, j := range r.Jobs {
			if !math.IsNaN(j.Start) {
				xys = append(xys, plotter.XY{X: float64(k), Y: j.Queue() / 3600})
			}
		}
		if err := addLine(p, i, name, xys); err != nil {
			return nil, err
		}
	}
	return p, nil
}
