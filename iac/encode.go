package iac

import (
	"fmt"
	"math"
)

// Column is one model input: a feature's standardized value, or the
// standardized indicator that says whether the feature was measured. The
// MLP and both baselines read a feature vector through columns; package
// iac/train fits them with [FitColumns] and builds an MLP on them
// ([NewMLP]).
//
// A data set decides the columns (FitColumns): a feature never measured in
// the training data gives no column (its weights would be noise); a feature
// always measured gives a value column; one measured sometimes gives a value
// column and a mask column, so a model can tell "missing" from "average".
//
// A standardized value is clamped to the range the training data spanned
// ([Lo, Hi]): a model fitted on a few families must not extrapolate a
// straight ReLU line far outside them (without the clamp, leaving one Gavel
// family out gave predictions off by more than 100 %).
type Column struct {
	Feature Feature
	Mask    bool    // the input is whether Feature was measured, not its value
	Mean    float64 // subtracted, then divided by Std
	Std     float64
	Lo, Hi  float64 // standardized range seen in training
}

// maxInputs bounds the number of columns: every feature's value and mask.
const maxInputs = 2 * int(NumFeatures)

// minStd is the spread below which a value is treated as constant.
const minStd = 1e-9

// FitColumns chooses and standardizes the inputs from the training vectors:
// value columns in feature order, then mask columns.
func FitColumns(xs []Vector) []Column {
	var vals, masks []Column
	n := float64(len(xs))
	for f := Feature(0); f < NumFeatures; f++ {
		var cnt, sum float64
		for i := range xs {
			if x, ok := xs[i].Get(f); ok {
				cnt++
				sum += x
			}
		}
		if cnt == 0 {
			continue
		}
		mean := sum / cnt
		var ss float64
		for i := range xs {
			if x, ok := xs[i].Get(f); ok {
				d := x - mean
				ss += d * d
			}
		}
		if std := math.Sqrt(ss / cnt); std > minStd {
			c := Column{Feature: f, Mean: mean, Std: std, Lo: math.Inf(1), Hi: math.Inf(-1)}
			for i := range xs {
				if x, ok := xs[i].Get(f); ok {
					z := (x - mean) / std
					c.Lo, c.Hi = math.Min(c.Lo, z), math.Max(c.Hi, z)
				}
			}
			vals = append(vals, c)
		}
		if cnt < n {
			p := cnt / n
			std := math.Sqrt(p * (1 - p))
			masks = append(masks, Column{Feature: f, Mask: true, Mean: p, Std: std, Lo: -p / std, Hi: (1 - p) / std})
		}
	}
	return append(vals, masks...)
}

// Standardize writes the inputs cols make of v into dst[:len(cols)]. A value
// that was not measured becomes 0: the training mean.
func Standardize(dst []float64, v *Vector, cols []Column) {
	for i := range cols {
		c := &cols[i]
		var x float64
		switch {
		case c.Mask:
			x = boolf(v.Has(c.Feature))
		case v.Has(c.Feature):
			x = v.X[c.Feature]
		default:
			dst[i] = 0
			continue
		}
		z := (x - c.Mean) / c.Std
		if z < c.Lo {
			z = c.Lo
		} else if z > c.Hi {
			z = c.Hi
		}
		dst[i] = z
	}
}

func validateColumns(cols []Column) error {
	if len(cols) == 0 {
		return fmt.Errorf("no inputs")
	}
	if len(cols) > maxInputs {
		return fmt.Errorf("%d inputs, at most %d", len(cols), maxInputs)
	}
	seen := map[[2]int]bool{}
	for i, c := range cols {
		if c.Feature < 0 || c.Feature >= NumFeatures {
			return fmt.Errorf("input %d: feature %d out of range", i, int(c.Feature))
		}
		k := [2]int{int(c.Feature), int(boolf(c.Mask))}
		if seen[k] {
			return fmt.Errorf("input %d: %s repeated", i, c.Feature)
		}
		seen[k] = true
		if !finite(c.Mean) || !finite(c.Std) || c.Std <= 0 {
			return fmt.Errorf("input %d (%s): mean %g, std %g: want finite numbers and std > 0", i, c.Feature, c.Mean, c.Std)
		}
		if !finite(c.Lo) || !finite(c.Hi) || c.Lo > c.Hi {
			return fmt.Errorf("input %d (%s): range [%g, %g]: want finite bounds, lo ≤ hi", i, c.Feature, c.Lo, c.Hi)
		}
	}
	return nil
}
