package adapter

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// fakeSlurm is an in-memory slurmctld with the behaviour measured on Slurm
// 22.05 (this package's README): GRES
// updates only while pending and merged into the job's list, gpu and shard
// never together, release of a job that is not held succeeds, hold of a
// running job succeeds (its priority drops to 0; it keeps running),
// requeuehold only of a running job, and a scheduler pass that starts
// released jobs whose typed GRES fit.
type fakeSlurm struct {
	nodes []Node
	jobs  []*Job
	next  int
	clock int64
	// calls logs every mutating call as "verb id args".
	calls []string
	// failAfter, when > 0, makes every mutating call after that many fail
	// (an adapter crash in the middle of a tick).
	failAfter int
	down      bool // slurmctld unreachable: every call fails
	// lieAt, when > 0, makes the lieAt-th mutating call take effect and
	// then report an error (a timeout after slurmctld did the work).
	lieAt int
	// dead is set by the lie: the adapter is dead, nothing more it sends
	// reaches Slurm until the test restarts it.
	dead bool
	// misplace makes the next start of a job use this device index,
	// whatever its GRES type says (seen once after a slurmctld restart).
	misplace map[int]int
	// gres is each job's merged GRES list (what Slurm really holds).
	gres map[int][]Gres
	// afterJobs, when set, runs once after the next Jobs call has taken
	// its snapshot: slurmctld acting between the adapter's read and its
	// commands (a released job starting just after squeue, say).
	afterJobs func()
}

var errCrash = errors.New("injected crash")

func newFake(gpus, shards int) *fakeSlurm {
	var g []string
	for i := range gpus {
		g = append(g, fmt.Sprintf("gpu:gpu%d:1", i))
	}
	if shards > 0 {
		for i := range gpus {
			g = append(g, fmt.Sprintf("shard:gpu%d:%d", i, shards))
		}
	}
	return &fakeSlurm{
		nodes: []Node{{Name: "node1", State: "idle", Gres: strings.Join(g, ","), CPUs: 16, RealMemory: 64000}},
		next:  1, clock: 1_000_000, gres: map[int][]Gres{}, misplace: map[int]int{},
	}
}

// submit adds a job; held like sbatch --hold; gres like --gres.
func (f *fakeSlurm) submit(comment string, held bool, gres string) int {
	id := f.next
	f.next++
	f.clock++
	j := &Job{ID: id, Name: "job" + strconv.Itoa(id), User: "alice", State: "PENDING", Comment: comment, Submit: f.clock, CPUs: 1, Priority: 1000}
	if held {
		j.Priority, j.Reason = 0, "JobHeldUser"
	}
	if gres != "" {
		gs, _ := ParseGres(gres)
		f.gres[id] = gs
		j.TresPerNode = tres(gs)
	}
	f.jobs = append(f.jobs, j)
	return id
}

func tres(gs []Gres) string {
	parts := make([]string, len(gs))
	for i, g := range gs {
		parts[i] = "gres:" + g.String()
	}
	return strings.Join(parts, ",")
}

func (f *fakeSlurm) job(id int) *Job {
	for _, j := range f.jobs {
		if j.ID == id {
			return j
		}
	}
	return nil
}

func (f *fakeSlurm) Jobs(context.Context) ([]Job, error) {
	if f.down {
		return nil, errors.New("slurm_load_jobs error: Unable to contact slurm controller")
	}
	out := make([]Job, len(f.jobs))
	for i, j := range f.jobs {
		out[i] = *j
		out[i].GresDetail = slices.Clone(j.GresDetail)
	}
	if fn := f.afterJobs; fn != nil {
		f.afterJobs = nil
		fn()
	}
	return out, nil
}

func (f *fakeSlurm) Nodes(context.Context) ([]Node, error) {
	if f.down {
		return nil, errors.New("slurm_load_node error: Unable to contact slurm controller")
	}
	return slices.Clone(f.nodes), nil
}

func (f *fakeSlurm) mutate(verb string, id int, args ...string) (*Job, error) {
	if f.down {
		return nil, errors.New("Unable to contact slurm controller")
	}
	if f.dead || f.failAfter > 0 && len(f.calls) >= f.failAfter {
		return nil, errCrash
	}
	f.calls = append(f.calls, strings.TrimSpace(fmt.Sprintf("%s %d %s", verb, id, strings.Join(args, " "))))
	j := f.job(id)
	if j == nil {
		return nil, fmt.Errorf("Invalid job id specified")
	}
	return j, nil
}

func (f *fakeSlurm) Update(_ context.Context, id int, fields ...string) error {
	return f.lie(f.update(id, fields...))
}

func (f *fakeSlurm) update(id int, fields ...string) error {
	j, err := f.mutate("update", id, fields...)
	if err != nil {
		return err
	}
	for _, fl := range fields {
		k, v, _ := strings.Cut(fl, "=")
		switch k {
		case "Gres":
			if j.State != "PENDING" {
				return errors.New("Job is no longer pending execution")
			}
			add, err := ParseGres(v)
			if err != nil {
				return err
			}
			merged := slices.Clone(f.gres[id])
			for _, g := range add {
				k := slices.IndexFunc(merged, func(m Gres) bool { return m.Name == g.Name && m.Type == g.Type })
				switch {
				case k >= 0 && g.Count > 0:
					merged[k].Count = g.Count
				case k < 0:
					merged = append(merged, g)
				}
			}
			names := map[string]bool{}
			for _, g := range merged {
				names[g.Name] = true
			}
			if names["gpu"] && names["shard"] {
				return errors.New("Invalid generic resource (gres) specification")
			}
			f.gres[id] = merged
			j.TresPerNode = tres(add)
		case "NumCPUs":
			j.CPUs, _ = strconv.Atoi(v)
		case "AdminComment":
			j.AdminComment = v
		case "NodeList", "StartTime", "NumNodes":
			if j.State != "PENDING" {
				return errors.New("Job is no longer pending execution")
			}
			switch k {
			case "NodeList":
				j.ReqNodes = v
			case "NumNodes":
				j.NodeCount, _ = strconv.Atoi(v)
			}
		default:
			return fmt.Errorf("fake: unknown field %s", k)
		}
	}
	return nil
}

func (f *fakeSlurm) Hold(_ context.Context, id int) error {
	return f.lie(f.hold(id))
}

func (f *fakeSlurm) hold(id int) error {
	j, err := f.mutate("hold", id)
	if err != nil {
		return err
	}
	if j.Done() {
		return errors.New("Job has already finished")
	}
	// Slurm 22.05 holds a running job without a word: only its priority
	// drops, and it keeps running.
	j.Priority, j.Reason = 0, "JobHeldAdmin"
	return nil
}

func (f *fakeSlurm) Release(_ context.Context, id int) error {
	return f.lie(f.release(id))
}

func (f *fakeSlurm) release(id int) error {
	j, err := f.mutate("release", id)
	if err != nil {
		return err
	}
	if j.Done() {
		return errors.New("Job has already finished")
	}
	if j.Priority == 0 { // a running job held by hand gets its priority back too
		j.Priority, j.Reason = 1000, "None"
	}
	return nil
}

func (f *fakeSlurm) RequeueHold(_ context.Context, id int) error {
	return f.lie(f.requeueHold(id))
}

func (f *fakeSlurm) requeueHold(id int) error {
	j, err := f.mutate("requeuehold", id)
	if err != nil {
		return err
	}
	if j.State == "PENDING" {
		return errors.New("Job is pending execution")
	}
	if j.State != "RUNNING" {
		return errors.New("Job has already finished")
	}
	j.State, j.Priority, j.Reason = "PENDING", 0, "job_requeued_in_held_state"
	j.Restarts++
	f.clock++
	j.Submit = f.clock // slurmctld moves a requeued job's submit time to the requeue
	j.GresDetail = nil
	return nil
}

// lie turns the lieAt-th call's success into an error.
func (f *fakeSlurm) lie(err error) error {
	if err == nil && f.lieAt > 0 && len(f.calls) == f.lieAt && !f.dead {
		f.dead = true
		return errLie
	}
	return err
}

var errLie = errors.New("injected: slurmctld did it but the answer was lost")

// schedule starts every released pending job whose GRES fit now, in
// submit order, as slurmctld's scheduler pass would, on its NodeList (or
// the first node): the job's GRES on each of its nodes.
func (f *fakeSlurm) schedule() {
	for _, j := range f.jobs {
		if j.State != "PENDING" || j.Priority == 0 {
			continue
		}
		if f.fits(j.ID) {
			j.State, j.Reason = "RUNNING", "None"
			var names, details []string
			for _, n := range f.nodesOf(j) {
				names = append(names, n.Name)
				var d []string
				for _, g := range f.gres[j.ID] {
					idx, _ := strconv.Atoi(strings.TrimPrefix(g.Type, "gpu"))
					if m, ok := f.misplace[j.ID]; ok {
						idx = m
						delete(f.misplace, j.ID)
					}
					d = append(d, fmt.Sprintf("%s(IDX:%d)", g, idx))
				}
				details = append(details, strings.Join(d, ","))
			}
			j.Nodes = strings.Join(names, ",")
			j.GresDetail = details
		} else {
			j.Reason = "Resources"
		}
	}
}

// nodesOf is the nodes a job runs on, or would start on: its NodeList,
// else the first node.
func (f *fakeSlurm) nodesOf(j *Job) []*Node {
	var out []*Node
	for _, name := range expandHostlist(j.ReqNodes) {
		for i := range f.nodes {
			if f.nodes[i].Name == name {
				out = append(out, &f.nodes[i])
			}
		}
	}
	if len(out) == 0 {
		out = []*Node{&f.nodes[0]}
	}
	return out
}

func (f *fakeSlurm) fits(id int) bool {
	for _, node := range f.nodesOf(f.job(id)) {
		whole, used := map[string]int{}, map[string]int{}
		for _, o := range f.jobs {
			if o.State != "RUNNING" || !slices.Contains(f.nodesOf(o), node) {
				continue
			}
			for _, g := range f.gres[o.ID] {
				if g.Name == "gpu" {
					whole[g.Type]++
				} else {
					used[g.Type] += g.Count
				}
			}
		}
		have, _ := ParseGres(node.Gres)
		cap := map[string]int{}
		gpus := map[string]bool{}
		for _, g := range have {
			if g.Name == "shard" {
				cap[g.Type] = g.Count
			} else {
				gpus[g.Type] = true
			}
		}
		for _, g := range f.gres[id] {
			switch {
			case g.Type == "" || !gpus[g.Type]:
				return false
			case g.Name == "gpu" && (whole[g.Type] > 0 || used[g.Type] > 0):
				return false
			case g.Name == "shard" && (whole[g.Type] > 0 || used[g.Type]+g.Count > cap[g.Type]):
				return false
			}
		}
	}
	return true
}

// finish ends a running job.
func (f *fakeSlurm) finish(id int) {
	j := f.job(id)
	j.State, j.GresDetail = "COMPLETED", nil
}

// callsOn returns the mutating calls made on one job.
func (f *fakeSlurm) callsOn(id int) []string {
	var out []string
	for _, c := range f.calls {
		if strings.Fields(c)[1] == strconv.Itoa(id) {
			out = append(out, c)
		}
	}
	return out
}
