package annotation

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/elastico/elastico"
)

// JobSpec is the JSON a pod carries in its elastico.io/job annotation: what
// kind of job it is and every configuration it may run under, with the
// profile RST measured for each. Field names follow elastico.Job and
// elastico.Profile; family[i].sm is Profiles[i].Demand.SM, and so on.
type JobSpec struct {
	// Class is "training" or "inference". Required.
	Class string `json:"class"`
	// Model names the program (elastico.Profile.Family), e.g. "resnet50".
	Model string `json:"model,omitempty"`
	// Params is the model's parameter count (the predictor reads it).
	Params float64 `json:"params,omitempty"`
	// Weight is w_j (0 means 1); Floor is L_j, the lowest throughput
	// accepted; Priority and Remaining are elastico.Job's.
	Weight    float64 `json:"weight,omitempty"`
	Floor     float64 `json:"floor,omitempty"`
	Priority  int     `json:"priority,omitempty"`
	Remaining float64 `json:"remaining,omitempty"`
	// Optimizer is "sgd" (the default), "adam" or "adascale": how the
	// learning rate follows a change of batch size. ReferenceBatch is the
	// batch the user's learning rate was tuned for; under sgd or adam it is
	// required when the family has two batch sizes or more (no
	// configuration's batch is a safe guess).
	Optimizer      string `json:"optimizer,omitempty"`
	ReferenceBatch int    `json:"referenceBatch,omitempty"`
	// Members is the number of pods of a job that spans nodes (a gang):
	// each carries this annotation and the GangLabel, and holds its node's
	// share of the configuration's GPUs. 0 or 1: the job is this pod.
	Members int `json:"members,omitempty"`
	// Family lists the configurations, at least one.
	Family []ProfileSpec `json:"family"`
}

// ProfileSpec is one configuration of a JobSpec with its measured profile.
type ProfileSpec struct {
	ID            string  `json:"id"`
	BatchSize     int     `json:"batchSize,omitempty"`
	Checkpointing bool    `json:"checkpointing,omitempty"`
	AMP           bool    `json:"amp,omitempty"`
	KVCacheFrac   float64 `json:"kvCacheFrac,omitempty"`
	MaxSeqs       int     `json:"maxSeqs,omitempty"`
	// GPUs is the number of replicas, one GPU each, all on one node.
	GPUs int `json:"gpus"`
	// SM is each replica's share of one GPU's SMs, in (0, 1];
	// GPUMemoryGiB its GPU memory; CPU and RAMGiB its host share.
	SM           float64 `json:"sm"`
	GPUMemoryGiB float64 `json:"gpuMemoryGiB"`
	CPU          float64 `json:"cpu,omitempty"`
	RAMGiB       float64 `json:"ramGiB,omitempty"`
	// Throughput is the isolated throughput in the job's own unit;
	// Efficiency the statistical efficiency of the batch size (0: not
	// modelled).
	Throughput float64 `json:"throughput"`
	Efficiency float64 `json:"efficiency,omitempty"`
	// Counters are the hardware counters by their profiles.csv names
	// ("sm_active", "dram_active", ...), each a ratio in [0, 1].
	Counters     map[string]float64 `json:"counters,omitempty"`
	GPUModel     string             `json:"gpuModel,omitempty"`
	Interpolated bool               `json:"interpolated,omitempty"`
}

// ParseJob decodes the elastico.io/job annotation's value into a job with
// the given ID. Unknown fields, trailing data and values the library would
// reject are errors that name the field; the job's Arrival and Running are
// left for the caller to fill.
func ParseJob(id, value string) (elastico.Job, error) {
	_, j, err := ParseJobSpec(id, value)
	return j, err
}

// ParseJobSpec is ParseJob that also returns the spec (its Members).
func ParseJobSpec(id, value string) (JobSpec, elastico.Job, error) {
	var spec JobSpec
	dec := json.NewDecoder(strings.NewReader(value))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&spec); err != nil {
		return spec, elastico.Job{}, fmt.Errorf("annotation: %s: %w", Job, jsonError(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return spec, elastico.Job{}, fmt.Errorf("annotation: %s: unexpected data after the JSON object", Job)
	}
	j, err := spec.Job(id)
	if err != nil {
		return spec, elastico.Job{}, fmt.Errorf("annotation: %s: %w", Job, err)
	}
	return spec, j, nil
}

// jsonError rewords encoding/json's errors so that they name the JSON field
// path rather than the Go type.
func jsonError(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return fmt.Errorf("%s: cannot take a JSON %s (want %s)", te.Field, te.Value, te.Type)
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Errorf("invalid JSON at byte %d: %v", se.Offset, se)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return errors.New("invalid JSON: it ends before the object does")
	}
	return err
}

// Job converts the spec into an elastico.Job with the given ID and checks it
// the way elastico.State.Validate does.
func (s *JobSpec) Job(id string) (elastico.Job, error) {
	j := elastico.Job{
		ID:             id,
		Weight:         s.Weight,
		Floor:          s.Floor,
		Priority:       s.Priority,
		Remaining:      s.Remaining,
		ReferenceBatch: s.ReferenceBatch,
	}
	switch s.Class {
	case "training":
		j.Class = elastico.Training
	case "inference":
		j.Class = elastico.Inference
	case "":
		return j, errors.New(`class: is missing, want "training" or "inference"`)
	default:
		return j, fmt.Errorf(`class: is %q, want "training" or "inference"`, s.Class)
	}
	switch s.Optimizer {
	case "", "sgd":
		j.Optimizer = elastico.SGD
	case "adam":
		j.Optimizer = elastico.Adam
	case "adascale":
		j.Optimizer = elastico.AdaScale
	default:
		return j, fmt.Errorf(`optimizer: is %q, want "sgd", "adam" or "adascale"`, s.Optimizer)
	}
	if len(s.Family) == 0 {
		return j, errors.New("family: is empty, want at least one configuration")
	}
	if s.Members < 0 {
		return j, fmt.Errorf("members: is %d, want ≥ 1 (0 means 1)", s.Members)
	}
	// A gang's replicas may span nodes, a member pod per node share; each
	// member holds one GPU at least.
	j.Spread = s.Members > 1
	for i := range s.Family {
		if g := s.Family[i].GPUs; s.Members > 1 && g < s.Members {
			return j, fmt.Errorf("family[%d].gpus: is %d, want ≥ members (%d): each member pod holds one GPU at least", i, g, s.Members)
		}
	}
	j.Profiles = make([]elastico.Profile, len(s.Family))
	for i := range s.Family {
		p, err := s.Family[i].profile(j.Class, s.Model, s.Params)
		if err != nil {
			return j, fmt.Errorf("family[%d].%w", i, err)
		}
		j.Profiles[i] = p
	}
	// The library's own checks (NaN, ranges, duplicate IDs, the floor, the
	// reference batch): a one-job State with no Running assignment checks
	// exactly the job. Its Now need only be set; no job check reads it.
	st := elastico.State{Now: time.Unix(0, 0), Jobs: []elastico.Job{j}}
	if err := st.Validate(); err != nil {
		return j, err
	}
	return j, nil
}

func (p *ProfileSpec) profile(class elastico.Class, model string, params float64) (elastico.Profile, error) {
	if p.GPUs < 1 {
		return elastico.Profile{}, fmt.Errorf("gpus: is %d, want ≥ 1", p.GPUs)
	}
	out := elastico.Profile{
		Family: model,
		Class:  class,
		Params: params,
		Config: elastico.Configuration{
			ID:            p.ID,
			BatchSize:     p.BatchSize,
			Checkpointing: p.Checkpointing,
			AMP:           p.AMP,
			GPUs:          p.GPUs,
			KVCacheFrac:   p.KVCacheFrac,
			MaxSeqs:       p.MaxSeqs,
		},
		Demand: elastico.Demand{
			GPUs:      p.GPUs,
			SM:        p.SM,
			GPUMemory: p.GPUMemoryGiB,
			CPU:       p.CPU,
			RAM:       p.RAMGiB,
		},
		Throughput:   p.Throughput,
		Efficiency:   p.Efficiency,
		Hardware:     elastico.Hardware{GPUModel: p.GPUModel},
		Interpolated: p.Interpolated,
	}
	names := make([]string, 0, len(p.Counters))
	for name := range p.Counters {
		names = append(names, name)
	}
	slices.Sort(names) // the first bad counter reported is always the same one
	for _, name := range names {
		c, ok := elastico.CounterByName(name)
		if !ok {
			return out, fmt.Errorf("counters.%s: is not a counter name (want one of %s)", name, counterNames())
		}
		v := p.Counters[name]
		if !(v >= 0 && v <= 1) {
			return out, fmt.Errorf("counters.%s: is %g, want a ratio in [0, 1]", name, v)
		}
		out.Counters.Set(c, v)
	}
	return out, nil
}

func counterNames() string {
	var b bytes.Buffer
	for c := elastico.Counter(0); c < elastico.NumCounters; c++ {
		if c > 0 {
			b.WriteString(", ")
		}
		b.WriteString(c.String())
	}
	return b.String()
}
