package adapter

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Slurm is what the adapter needs from Slurm: two reads and four writes.
// [CLI] implements it with squeue, sinfo and scontrol; tests use a fake.
type Slurm interface {
	// Jobs returns every job slurmctld still holds in memory (squeue --json).
	Jobs(ctx context.Context) ([]Job, error)
	// Nodes returns every node (sinfo --json).
	Nodes(ctx context.Context) ([]Node, error)
	// Update sets fields of a job ("scontrol update JobId=N Gres=... ...").
	Update(ctx context.Context, id int, fields ...string) error
	// Hold holds a pending job; Release lets a held job run.
	Hold(ctx context.Context, id int) error
	Release(ctx context.Context, id int) error
	// RequeueHold stops a running batch job and puts it back, held, in the
	// queue ("scontrol requeuehold").
	RequeueHold(ctx context.Context, id int) error
}

// Job is one Slurm job, as squeue --json reports it (openapi v0.0.38).
type Job struct {
	ID           int      `json:"job_id"`
	Name         string   `json:"name"`
	User         string   `json:"user_name"`
	State        string   `json:"job_state"`    // PENDING, RUNNING, COMPLETING, COMPLETED, ...
	Reason       string   `json:"state_reason"` // JobHeldUser, BeginTime, Resources, ...
	Comment      string   `json:"comment"`
	AdminComment string   `json:"admin_comment"`
	TresPerNode  string   `json:"tres_per_node"`  // "gres:shard:gpu1:2,gres:shard:gpu3:2"
	GresDetail   []string `json:"gres_detail"`    // while it runs: "gpu:gpu1:1(IDX:1),gpu:gpu3:1(IDX:3)"
	Nodes        string   `json:"nodes"`          // "n[1-2]": gres_detail has one entry per node, in this order
	ReqNodes     string   `json:"required_nodes"` // NodeList= as set by scontrol update
	// NodeCount is the nodes the job asks for (NumNodes=) or holds; 0
	// (absent) reads as 1.
	NodeCount int   `json:"node_count"`
	Restarts  int   `json:"restart_cnt"`
	Submit    int64 `json:"submit_time"`
	CPUs      int   `json:"cpus"`
	// Priority is 0 while the job is held (by its user, by an admin, or
	// after requeuehold).
	Priority float64 `json:"priority"`
}

// Held reports whether the job waits for a release.
func (j *Job) Held() bool { return j.State == "PENDING" && j.Priority == 0 }

// Done reports whether the job has ended for good (it will not run again
// unless someone requeues it).
func (j *Job) Done() bool {
	switch j.State {
	case "PENDING", "RUNNING", "SUSPENDED", "CONFIGURING", "COMPLETING", "REQUEUED",
		"REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED":
		return false
	}
	return true
}

// Holds reports whether Slurm has, or is about to have, resources allocated
// to the job (it runs, starts, or is being torn down).
func (j *Job) Holds() bool {
	switch j.State {
	case "RUNNING", "CONFIGURING", "COMPLETING", "SUSPENDED", "SIGNALING", "STAGE_OUT", "STOPPED", "RESIZING":
		return true
	}
	return false
}

// Node is one Slurm node, as sinfo --json reports it.
type Node struct {
	Name       string   `json:"name"`
	Address    string   `json:"address"`     // NodeAddr: where a multi-node job's ranks meet
	State      string   `json:"state"`       // idle, mixed, allocated, down, ...
	Flags      []string `json:"state_flags"` // DRAIN, ...
	Gres       string   `json:"gres"`        // "gpu:gpu0:1,...,shard:gpu0:4,..."
	CPUs       int      `json:"cpus"`
	RealMemory int64    `json:"real_memory"` // MB
	// Features are the node's AvailableFeatures (slurm.conf Features=),
	// which name its GPU model: "gpu_v100" (see Config.GPUModels).
	Features Features `json:"features"`
}

// Features is a node's feature list as sinfo --json gives it: one
// comma-separated string (Slurm 22.05, "gpu_v100,ib") or a list of strings
// (later releases).
type Features struct {
	Names []string
	// Bad is the JSON value when it was neither, which leaves the node's
	// GPU model unknown (the node is left out).
	Bad string
}

// UnmarshalJSON reads a string or a list of strings; any other value is
// kept in Bad, not refused, so that one odd node does not stop the tick.
func (f *Features) UnmarshalJSON(b []byte) error {
	*f = Features{}
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		for _, name := range strings.Split(one, ",") {
			if name = strings.TrimSpace(name); name != "" && name != "(null)" {
				f.Names = append(f.Names, name)
			}
		}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err == nil {
		for _, name := range list {
			if name = strings.TrimSpace(name); name != "" {
				f.Names = append(f.Names, name)
			}
		}
		return nil
	}
	f.Bad = string(b)
	return nil
}

// Usable reports whether the node takes new jobs.
func (n *Node) Usable() bool {
	switch strings.ToLower(n.State) {
	case "idle", "mixed", "allocated", "completing":
	default:
		return false
	}
	for _, f := range n.Flags {
		switch strings.ToUpper(f) {
		case "DRAIN", "DRAINING", "DRAINED", "MAINTENANCE", "RESERVED", "NOT_RESPONDING", "POWER_DOWN", "POWERED_DOWN", "FAIL":
			return false
		}
	}
	return true
}

// DecodeJobs reads squeue --json output.
func DecodeJobs(r io.Reader) ([]Job, error) {
	var out struct {
		Errors []json.RawMessage `json:"errors"`
		Jobs   []Job             `json:"jobs"`
	}
	if err := json.NewDecoder(r).Decode(&out); err != nil {
		return nil, fmt.Errorf("adapter: squeue --json: %w", err)
	}
	if len(out.Errors) > 0 {
		return nil, fmt.Errorf("adapter: squeue --json reported errors: %s", out.Errors[0])
	}
	if out.Jobs == nil {
		return nil, fmt.Errorf("adapter: squeue --json: no \"jobs\" array")
	}
	return out.Jobs, nil
}

// DecodeNodes reads sinfo --json output.
func DecodeNodes(r io.Reader) ([]Node, error) {
	var out struct {
		Errors []json.RawMessage `json:"errors"`
		Nodes  []Node            `json:"nodes"`
	}
	if err := json.NewDecoder(r).Decode(&out); err != nil {
		return nil, fmt.Errorf("adapter: sinfo --json: %w", err)
	}
	if len(out.Errors) > 0 {
		return nil, fmt.Errorf("adapter: sinfo --json reported errors: %s", out.Errors[0])
	}
	if out.Nodes == nil {
		return nil, fmt.Errorf("adapter: sinfo --json: no \"nodes\" array")
	}
	return out.Nodes, nil
}

// Gres is one generic-resource entry: "gpu:gpu3:1", "shard:gpu0:4",
// "gpu:2".
type Gres struct {
	Name, Type string
	Count      int
}

func (g Gres) String() string {
	if g.Type == "" {
		return g.Name + ":" + strconv.Itoa(g.Count)
	}
	return g.Name + ":" + g.Type + ":" + strconv.Itoa(g.Count)
}

// ParseGres reads a GRES list as Slurm prints it in a node's Gres, a job's
// tres_per_node ("gres:" prefixes) or gres_detail ("(IDX:..)" and
// "(S:..)" suffixes are dropped). Counts may carry a K/M/G suffix.
func ParseGres(s string) ([]Gres, error) {
	var out []Gres
	for _, item := range splitTop(s) {
		item = strings.TrimSpace(item)
		if item == "" || item == "(null)" {
			continue
		}
		if i := strings.IndexByte(item, '('); i >= 0 {
			item = item[:i]
		}
		item = strings.TrimPrefix(item, "gres:")
		item = strings.TrimPrefix(item, "gres/")
		f := strings.Split(item, ":")
		var g Gres
		cnt := "1"
		switch len(f) {
		case 1:
			g.Name = f[0]
		case 2:
			g.Name = f[0]
			if _, err := parseCount(f[1]); err == nil {
				cnt = f[1]
			} else {
				g.Type = f[1]
			}
		case 3:
			g.Name, g.Type, cnt = f[0], f[1], f[2]
			if g.Type == "(null)" {
				g.Type = ""
			}
		default:
			return nil, fmt.Errorf("adapter: GRES %q: want name[:type][:count]", item)
		}
		n, err := parseCount(cnt)
		if err != nil {
			return nil, fmt.Errorf("adapter: GRES %q: count %q: %v", item, cnt, err)
		}
		g.Count = n
		out = append(out, g)
	}
	return out, nil
}

func parseCount(s string) (int, error) {
	mul := 1
	switch {
	case strings.HasSuffix(s, "K"):
		mul, s = 1<<10, s[:len(s)-1]
	case strings.HasSuffix(s, "M"):
		mul, s = 1<<20, s[:len(s)-1]
	case strings.HasSuffix(s, "G"):
		mul, s = 1<<30, s[:len(s)-1]
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("not a count")
	}
	return n * mul, nil
}

// splitTop splits on commas outside parentheses.
func splitTop(s string) []string {
	var out []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	return append(out, s[start:])
}

// Alloc is one entry of a running job's gres_detail: the GRES and the
// device indices Slurm gave it on the node ("shard:gpu2:1(IDX:2)").
type Alloc struct {
	Gres
	IDX []int
}

// ParseDetail reads one node's gres_detail entry. Entries with a zero count
// (Slurm lists every type for an untyped request) are dropped.
func ParseDetail(s string) ([]Alloc, error) {
	var out []Alloc
	for _, item := range splitTop(s) {
		gs, err := ParseGres(item)
		if err != nil {
			return nil, err
		}
		if len(gs) == 0 || gs[0].Count == 0 {
			continue
		}
		a := Alloc{Gres: gs[0]}
		if i := strings.Index(item, "(IDX:"); i >= 0 {
			body := strings.TrimSuffix(item[i+len("(IDX:"):], ")")
			for _, r := range strings.Split(body, ",") {
				lo, hi, isRange := strings.Cut(r, "-")
				x, err1 := strconv.Atoi(lo)
				y, err2 := strconv.Atoi(hi)
				if err1 != nil || isRange && (err2 != nil || y < x) {
					return nil, fmt.Errorf("adapter: gres_detail %q: IDX %q", item, r)
				}
				if !isRange {
					y = x
				}
				for k := x; k <= y; k++ {
					a.IDX = append(a.IDX, k)
				}
			}
		}
		out = append(out, a)
	}
	return out, nil
}

// FormatGres writes a GRES list the way scontrol update Gres= takes it.
func FormatGres(gs []Gres) string {
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = g.String()
	}
	return strings.Join(parts, ",")
}

// sameGres reports whether two GRES lists hold the same entries with
// nonzero counts, in any order.
func sameGres(a, b []Gres) bool {
	m := map[Gres]int{}
	for _, g := range a {
		if g.Count > 0 {
			m[g]++
		}
	}
	for _, g := range b {
		if g.Count > 0 {
			m[g]--
		}
	}
	for _, v := range m {
		if v != 0 {
			return false
		}
	}
	return true
}
