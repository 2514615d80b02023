package annotation

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Observed is what a running pod reports of its own throughput, in the
// ObservedRate, ObservedSince and ObservedGeneration annotations: the rate
// it measured from Since until it wrote them, under the decision of
// Generation (the ELASTICO_GENERATION it was started with). The controller
// hands it to the scheduler as elastico.Job.Observed, with Over = the
// epoch's time − Since, when the pod still runs under that generation and
// nothing about its GPUs has changed since Since.
type Observed struct {
	// Rate is in the unit of the job's profiles: samples/s for training,
	// tokens/s or requests/s for inference. A finite number ≥ 0.
	Rate float64
	// Since is when the measurement began.
	Since time.Time
	// Generation is the decision the pod ran under while it measured.
	Generation int64
}

// ParseObserved reads a pod's observation annotations. ok is false when the
// pod carries none of them. One or two of the three without the others, or
// a value that does not parse, is an error naming the annotation.
func ParseObserved(ann map[string]string) (o Observed, ok bool, err error) {
	keys := [...]string{ObservedRate, ObservedSince, ObservedGeneration}
	var have, missing []string
	for _, k := range keys {
		if _, set := ann[k]; set {
			have = append(have, k)
		} else {
			missing = append(missing, k)
		}
	}
	switch {
	case len(have) == 0:
		return o, false, nil
	case len(missing) > 0:
		return o, true, fmt.Errorf("annotation: %s is set but %s is missing: write all three together", have[0], missing[0])
	}
	v := ann[ObservedRate]
	o.Rate, err = strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0) || o.Rate < 0 {
		return o, true, fmt.Errorf("annotation: %s is %q, want a throughput ≥ 0 in the job's unit", ObservedRate, v)
	}
	v = ann[ObservedSince]
	if o.Since, err = time.Parse(time.RFC3339Nano, v); err != nil {
		return o, true, fmt.Errorf("annotation: %s is %q, want an RFC 3339 time (2026-03-01T12:04:00Z)", ObservedSince, v)
	}
	v = ann[ObservedGeneration]
	if o.Generation, err = strconv.ParseInt(v, 10, 64); err != nil || o.Generation < 1 {
		return o, true, fmt.Errorf("annotation: %s is %q, want the ELASTICO_GENERATION the pod runs under (≥ 1)", ObservedGeneration, v)
	}
	return o, true, nil
}

// Annotations returns the annotations that carry o, for a launcher or a
// sidecar that writes them (a merge patch of the pod's metadata).
func (o Observed) Annotations() map[string]string {
	return map[string]string{
		ObservedRate:       formatFloat(o.Rate),
		ObservedSince:      o.Since.UTC().Format(time.RFC3339Nano),
		ObservedGeneration: strconv.FormatInt(o.Generation, 10),
	}
}
