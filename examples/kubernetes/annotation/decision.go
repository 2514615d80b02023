package annotation

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Decision is the Plan's verdict on one pod, as the controller writes it in
// the pod's annotations. A waiting pod has only Status and Generation; an
// admitted one has every field.
type Decision struct {
	// Status is elastico.Status.String(): "Scheduled", or the code and the
	// reasons the pod waits ("Unplaceable: no node has 2 free GPUs").
	Status string
	// Generation grows by one whenever Config, Node, GPUs or Launch change:
	// a container that sees a new generation restarts its work under the
	// new decision.
	Generation int64

	Config string // the configuration's ID; "" while the pod waits
	Node   string
	GPUs   []GPU   // one per replica, in replica order
	SM     float64 // SM share per GPU, in (0, 1]
	// MemoryGiB is the GPU memory budget per GPU.
	MemoryGiB float64
	Slowdown  float64 // predicted slowdown Ŝ ≥ 1 from co-runners
	Action    string  // the last Plan action applied (start, reconfigure, migrate)
	// Launch are the launch parameters as KEY=VALUE lines
	// (elastico.LaunchParams.Env), sorted; Env adds the device list, the
	// configuration and the generation to them.
	Launch []string

	// Gang is every member's share of a job that spans pods, in rank
	// order, and Rank this pod's place in it; nil for a one-pod job.
	Gang []Share
	Rank int
}

// GPU is one device a pod holds.
type GPU struct {
	Index  int  // device index on the node (nvidia-smi's numbering)
	Shared bool // other jobs run on it too (under MPS)
}

// Admitted reports whether the decision places the pod.
func (d *Decision) Admitted() bool { return d.Config != "" }

// Indices returns the device indices of d's GPUs.
func (d *Decision) Indices() []int {
	out := make([]int, len(d.GPUs))
	for i, g := range d.GPUs {
		out[i] = g.Index
	}
	return out
}

// SameWork reports whether a container running under d would do exactly
// what it does under e: same configuration, node, devices and launch
// parameters. Sharing flags, status and slowdown are informational.
func (d *Decision) SameWork(e *Decision) bool {
	return d.Config == e.Config && d.Node == e.Node &&
		slices.Equal(d.Indices(), e.Indices()) && slices.Equal(d.Launch, e.Launch) &&
		d.Rank == e.Rank && sameShares(d.Gang, e.Gang)
}

// Environment variables Env adds to the launch parameters.
const (
	EnvVisibleDevices = "CUDA_VISIBLE_DEVICES"
	EnvDeviceOrder    = "CUDA_DEVICE_ORDER"
	EnvConfig         = "ELASTICO_CONFIG"
	EnvGeneration     = "ELASTICO_GENERATION"
)

func synthetic(key string) bool {
	switch key {
	case EnvVisibleDevices, EnvDeviceOrder, EnvConfig, EnvGeneration:
		return true
	}
	return gangSynthetic(key)
}

// Env returns what a container sets before it starts its work: the launch
// parameters, CUDA_VISIBLE_DEVICES (with CUDA_DEVICE_ORDER=PCI_BUS_ID, so
// that index i is nvidia-smi's GPU i), ELASTICO_CONFIG and
// ELASTICO_GENERATION, and a gang member's ELASTICO_GANG_* variables;
// sorted by name. Nil for a waiting pod.
func (d *Decision) Env() []string {
	if !d.Admitted() {
		return nil
	}
	env := append([]string(nil), d.Launch...)
	env = append(env,
		EnvDeviceOrder+"=PCI_BUS_ID",
		EnvVisibleDevices+"="+joinInts(d.Indices()),
		EnvConfig+"="+d.Config,
		EnvGeneration+"="+strconv.FormatInt(d.Generation, 10),
	)
	if len(d.Gang) > 0 {
		env = append(env, gangEnv(d.Gang, d.Rank)...)
	}
	slices.Sort(env)
	return env
}

// Annotations returns the annotations that carry d. Keys of OutputKeys that
// it leaves out must be removed from the pod.
func (d *Decision) Annotations() map[string]string {
	m := map[string]string{
		Status:     d.Status,
		Generation: strconv.FormatInt(d.Generation, 10),
	}
	if !d.Admitted() {
		return m
	}
	sharing := make([]string, len(d.GPUs))
	for i, g := range d.GPUs {
		sharing[i] = "whole"
		if g.Shared {
			sharing[i] = "shared"
		}
	}
	m[Config] = d.Config
	m[Node] = d.Node
	m[GPUs] = joinInts(d.Indices())
	m[GPUSharing] = strings.Join(sharing, ",")
	m[GPUSM] = formatFloat(d.SM)
	m[GPUMemory] = formatFloat(d.MemoryGiB)
	m[Slowdown] = strconv.FormatFloat(d.Slowdown, 'f', 3, 64)
	m[Action] = d.Action
	m[Env] = strings.Join(d.Env(), "\n") + "\n"
	if len(d.Gang) > 0 {
		m[GangRank] = strconv.Itoa(d.Rank)
		m[GangShares] = FormatShares(d.Gang)
	}
	return m
}

// ParseDecision reads a decision back from a pod's annotations. ok is false
// when the pod carries none (the controller has not looked at it yet). A
// decision that does not parse is an error naming the annotation.
func ParseDecision(ann map[string]string) (d Decision, ok bool, err error) {
	status, ok := ann[Status]
	if !ok {
		return d, false, nil
	}
	d.Status = status
	if d.Generation, err = parseInt(ann, Generation); err != nil {
		return d, true, err
	}
	cfg, admitted := ann[Config]
	if !admitted {
		for _, k := range []string{Node, GPUs, Env, GangShares, GangRank} {
			if _, has := ann[k]; has {
				return d, true, fmt.Errorf("annotation: %s is set but %s is missing", k, Config)
			}
		}
		return d, true, nil
	}
	if cfg == "" {
		return d, true, fmt.Errorf("annotation: %s is empty", Config)
	}
	d.Config = cfg
	if d.Node = ann[Node]; d.Node == "" {
		return d, true, fmt.Errorf("annotation: %s is missing or empty", Node)
	}
	idx, err := parseInts(ann, GPUs)
	if err != nil {
		return d, true, err
	}
	sharing := strings.Split(ann[GPUSharing], ",")
	if len(sharing) != len(idx) {
		return d, true, fmt.Errorf("annotation: %s is %q, want one of shared/whole per entry of %s (%d)", GPUSharing, ann[GPUSharing], GPUs, len(idx))
	}
	d.GPUs = make([]GPU, len(idx))
	for i, s := range sharing {
		if s != "shared" && s != "whole" {
			return d, true, fmt.Errorf("annotation: %s entry %d is %q, want shared or whole", GPUSharing, i, s)
		}
		d.GPUs[i] = GPU{Index: idx[i], Shared: s == "shared"}
	}
	if d.SM, err = parseFloat(ann, GPUSM); err != nil {
		return d, true, err
	}
	if d.SM <= 0 || d.SM > 1 {
		return d, true, fmt.Errorf("annotation: %s is %g, want a share in (0, 1]", GPUSM, d.SM)
	}
	if d.MemoryGiB, err = parseFloat(ann, GPUMemory); err != nil {
		return d, true, err
	}
	if d.Slowdown, err = parseFloat(ann, Slowdown); err != nil {
		return d, true, err
	}
	d.Action = ann[Action]
	env, ok := ann[Env]
	if !ok {
		return d, true, fmt.Errorf("annotation: %s is missing", Env)
	}
	for n, line := range strings.Split(strings.TrimSuffix(env, "\n"), "\n") {
		k, _, found := strings.Cut(line, "=")
		if !found || k == "" {
			return d, true, fmt.Errorf("annotation: %s line %d is %q, want KEY=VALUE", Env, n+1, line)
		}
		if !synthetic(k) {
			d.Launch = append(d.Launch, line)
		}
	}
	return d, true, parseGang(ann, &d)
}

func parseInt(ann map[string]string, key string) (int64, error) {
	v, err := strconv.ParseInt(ann[key], 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("annotation: %s is %q, want a non-negative integer", key, ann[key])
	}
	return v, nil
}

func parseFloat(ann map[string]string, key string) (float64, error) {
	v, err := strconv.ParseFloat(ann[key], 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("annotation: %s is %q, want a non-negative number", key, ann[key])
	}
	return v, nil
}

func parseInts(ann map[string]string, key string) ([]int, error) {
	s := ann[key]
	if s == "" {
		return nil, fmt.Errorf("annotation: %s is missing or empty", key)
	}
	parts := strings.Split(s, ",")
	out := make([]int, len(parts))
	for i, p := range parts {
		v, err := strconv.Atoi(p)
		if err != nil || v < 0 {
			return nil, fmt.Errorf("annotation: %s entry %d is %q, want a device index", key, i, p)
		}
		if slices.Contains(out[:i], v) {
			return nil, fmt.Errorf("annotation: %s lists device %d twice", key, v)
		}
		out[i] = v
	}
	return out, nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
