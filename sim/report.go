package sim

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/elastico/elastico/internal/atomicfile"
)

// TableColumns are the metrics of the comparison table, in order.
var TableColumns = []string{"jct_avg", "jct_p95", "jct_infer_avg", "queue_avg", "throughput", "sm_util", "shared_time", "shared_speed", "floor_attainment", "reconfig_per_gpu_h", "migrate_per_gpu_h", "preempt_per_job", "flaps", "epoch_ms"}

// SaturatedColumns replace TableColumns when every job was submitted at
// t = 0 (Summary.Saturated): there is no arrival window to average
// throughput over, so the table gives the makespan and the work per
// GPU-hour.
var SaturatedColumns = []string{"jct_avg", "jct_p95", "queue_avg", "makespan", "work_per_gpu_h", "sm_util_makespan", "shared_time", "shared_speed", "reconfig_per_gpu_h", "migrate_per_gpu_h", "preempt_per_job", "flaps", "epoch_ms"}

// WriteTable prints the comparison: one row per policy, each metric of
// TableColumns (SaturatedColumns for a saturated summary) as mean ± 95 %
// CI (a column no policy has a value for, such as inference JCT without
// inference jobs, is left out), and, against the baseline, the JCT and
// throughput gains (JCT and makespan gains when saturated; work per
// GPU-hour's gain is the makespan's, the same work on the same GPUs). A
// policy that reads the ground truth is labelled a bound.
func WriteTable(w io.Writer, s *Summary) error {
	defs := map[string]MetricDef{}
	for _, d := range MetricDefs {
		defs[d.Key] = d
	}
	columns, gains, gainLabels := TableColumns, []string{"jct_avg", "throughput"}, []string{"JCT", "thr"}
	if s.Saturated {
		columns, gains, gainLabels = SaturatedColumns, []string{"jct_avg", "makespan"}, []string{"JCT", "makespan"}
	}
	var cols []string
	for _, k := range columns {
		for _, p := range s.Policies {
			if !math.IsNaN(p.Metrics[k].Mean) {
				cols = append(cols, k)
				break
			}
		}
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	head := []string{"policy"}
	for _, k := range cols {
		d := defs[k]
		h := d.Label
		if d.Unit != "" {
			h += " (" + d.Unit + ")"
		}
		head = append(head, h)
	}
	base := s.Baseline
	for _, g := range gainLabels {
		head = append(head, g+" gain vs "+base)
	}
	fmt.Fprintln(tw, strings.Join(head, "\t")+"\t")
	for _, p := range s.Policies {
		name := p.Policy
		if b, ok := s.Bounds[name]; ok {
			name += " (bound: " + b + ")"
		}
		row := []string{name}
		for _, k := range cols {
			row = append(row, fmtStat(p.Metrics[k].Stat))
		}
		for _, g := range gains {
			row = append(row, fmtGain(p.Metrics[g].Gain))
		}
		fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var err error
	if s.Saturated {
		_, err = fmt.Fprintf(w, "%d GPUs, %.0f jobs (%.0f inference) per seed, all submitted at t = 0 (saturated); %d seeds; mean ± 95 %% CI\n",
			s.GPUs, s.Jobs, s.Inference, len(s.Seeds))
	} else {
		_, err = fmt.Fprintf(w, "%d GPUs, %.0f jobs (%.0f inference) per seed over %.1f h of arrivals, offered load %.2f; %d seeds; mean ± 95 %% CI\n",
			s.GPUs, s.Jobs, s.Inference, s.SpanHours, s.OfferedLoad, len(s.Seeds))
	}
	if err != nil {
		return err
	}
	for _, name := range slices.Sorted(maps.Keys(s.Bounds)) {
		if _, err := fmt.Fprintf(w, "%s is a bound, not a result: it reads the ground truth (%s)\n", name, s.Bounds[name]); err != nil {
			return err
		}
	}
	for _, f := range s.Failures {
		if _, err := fmt.Fprintf(w, "FAILED: %s\n", f); err != nil {
			return err
		}
	}
	return err
}

func fmtStat(s Stat) string {
	if math.IsNaN(s.Mean) {
		return "n/a"
	}
	if math.IsNaN(s.CI95) {
		return num(s.Mean)
	}
	ci := s.CI95
	if ci < 1e-9*math.Abs(s.Mean) {
		ci = 0 // rounding noise of identical values
	}
	return num(s.Mean) + " ± " + num(ci)
}

func fmtGain(s Stat) string {
	if math.IsNaN(s.Mean) {
		return "n/a"
	}
	if math.IsNaN(s.CI95) {
		return fmt.Sprintf("%.2f×", s.Mean)
	}
	return fmt.Sprintf("%.2f× ± %.2f", s.Mean, s.CI95)
}

// num prints with three significant digits, without exponent for the usual
// range.
func num(x float64) string {
	a := math.Abs(x)
	switch {
	case a == 0:
		return "0"
	case a >= 1000:
		return strconv.FormatFloat(x, 'f', 0, 64)
	case a >= 100:
		return strconv.FormatFloat(x, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(x, 'f', 2, 64)
	case a >= 0.001:
		return strconv.FormatFloat(x, 'f', 3, 64)
	}
	return strconv.FormatFloat(x, 'g', 3, 64)
}

// jsonFloat writes NaN and infinities as null.
type jsonFloat float64

func (f jsonFloat) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(f))
}

type jsonStat struct {
	Mean jsonFloat `json:"mean"`
	CI95 jsonFloat `json:"ci95"`
	N    int       `json:"n"`
}

func toJSONStat(s Stat) jsonStat { return jsonStat{jsonFloat(s.Mean), jsonFloat(s.CI95), s.N} }

// WriteJSON writes the summary: per policy, each metric's mean, ci95 and n,
// its ratio to the baseline ("ratio_vs_<baseline>": policy / baseline) and
// its gain (> 1 is better), each with mean and ci95 over seeds; "bounds"
// names the policies that read the ground truth, and "saturated" marks a
// batch submitted at t = 0.
func WriteJSON(w io.Writer, s *Summary, meta map[string]any) error {
	type metric struct {
		jsonStat
		Unit  string   `json:"unit"`
		Ratio jsonStat `json:"ratio_vs_baseline"`
		Gain  jsonStat `json:"gain_vs_baseline"`
	}
	type policy struct {
		Policy  string            `json:"policy"`
		Metrics map[string]metric `json:"metrics"`
	}
	out := struct {
		Baseline    string            `json:"baseline"`
		GPUs        int               `json:"gpus"`
		Seeds       []uint64          `json:"seeds"`
		Jobs        jsonFloat         `json:"jobs_per_seed"`
		Inference   jsonFloat         `json:"inference_jobs_per_seed"`
		OfferedLoad jsonFloat         `json:"offered_load"`
		SpanHours   jsonFloat         `json:"arrival_span_hours"`
		Meta        map[string]any    `json:"meta,omitempty"`
		Failures    []string          `json:"failures,omitempty"`
		Bounds      map[string]string `json:"bounds,omitempty"`
		Saturated   bool              `json:"saturated,omitempty"`
		Metrics     []MetricDef       `json:"metric_definitions"`
		Policies    []policy          `json:"policies"`
	}{Baseline: s.Baseline, GPUs: s.GPUs, Seeds: s.Seeds, Jobs: jsonFloat(s.Jobs), Inference: jsonFloat(s.Inference),
		OfferedLoad: jsonFloat(s.OfferedLoad), SpanHours: jsonFloat(s.SpanHours), Meta: meta, Metrics: MetricDefs, Failures: s.Failures,
		Bounds: s.Bounds, Saturated: s.Saturated}
	units := map[string]string{}
	for _, d := range MetricDefs {
		units[d.Key] = d.Unit
	}
	for _, p := range s.Policies {
		jp := policy{Policy: p.Policy, Metrics: map[string]metric{}}
		for k, m := range p.Metrics {
			jp.Metrics[k] = metric{jsonStat: toJSONStat(m.Stat), Unit: units[k], Ratio: toJSONStat(m.Ratio), Gain: toJSONStat(m.Gain)}
		}
		out.Policies = append(out.Policies, jp)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// WriteCSV writes one row per policy and metric: policy, metric, unit, mean,
// ci95, n, ratio and gain against the baseline (mean and ci95).
func WriteCSV(w io.Writer, s *Summary) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"policy", "metric", "unit", "mean", "ci95", "n", "ratio_mean", "ratio_ci95", "gain_mean", "gain_ci95"})
	f := func(x float64) string {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return ""
		}
		return strconv.FormatFloat(x, 'g', 8, 64)
	}
	for _, p := range s.Policies {
		for _, d := range MetricDefs {
			m := p.Metrics[d.Key]
			cw.Write([]string{p.Policy, d.Key, d.Unit, f(m.Mean), f(m.CI95), strconv.Itoa(m.N), f(m.Ratio.Mean), f(m.Ratio.CI95), f(m.Gain.Mean), f(m.Gain.CI95)})
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteJobsCSV writes every job of every run: the per-job data behind the
// figures.
func WriteJobsCSV(w io.Writer, o *Outcome) error {
	cw := csv.NewWriter(w)
	cw.Write([]string{"policy", "seed", "job", "family", "class", "gpus", "arrival_s", "start_s", "finish_s", "jct_s", "queue_s", "dedicated_s", "slowdown", "reconfigs", "migrations", "preemptions", "restarts", "flaps", "held_s", "run_s", "shared_s", "gpu_s"})
	f := func(x float64) string {
		if math.IsNaN(x) {
			return ""
		}
		return strconv.FormatFloat(x, 'f', 1, 64)
	}
	for p, name := range o.Policies {
		for _, r := range o.Results[p] {
			if r == nil {
				continue
			}
			for _, j := range r.Jobs {
				cw.Write([]string{name, strconv.FormatUint(r.Seed, 10), j.ID, j.Family, j.Class.String(), strconv.Itoa(j.GPUs),
					f(j.Arrival), f(j.Start), f(j.Finish), f(j.JCT()), f(j.Queue()), f(j.Dedicated),
					strconv.FormatFloat(j.JCT()/j.Dedicated, 'f', 3, 64),
					strconv.Itoa(j.Reconfigs), strconv.Itoa(j.Migrations), strconv.Itoa(j.Preemptions), strconv.Itoa(j.Restarts), strconv.Itoa(j.Flaps),
					f(j.HeldTime), f(j.RunTime), f(j.SharedTime), f(j.GPUTime)})
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// WriteFileAtomic writes the output of fill to path through a temporary
// file in the same folder and a rename, so that a reader never sees half a
// file.
func WriteFileAtomic(path string, fill func(w io.Writer) error) error {
	var buf bytes.Buffer
	if err := fill(&buf); err != nil {
		return fmt.Errorf("sim: %s: %w", path, err)
	}
	if err := atomicfile.Write(path, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("sim: %s: %w", path, err)
	}
	return nil
}
