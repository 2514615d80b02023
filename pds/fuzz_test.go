package pds

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
)

// bytesState decodes fuzz input into a small State: a few nodes and GPUs,
// a few jobs with families, some running (on GPUs that may or may not
// exist), numbers that are sometimes NaN, infinite, negative or zero, IDs
// that sometimes collide. Every byte string is some State.
type reader struct {
	b []byte
	i int
}

func (r *reader) byte() byte {
	if r.i >= len(r.b) {
		return 0
	}
	c := r.b[r.i]
	r.i++
	return c
}

func (r *reader) intn(n int) int { return int(r.byte()) % n }

// num is a number in [0, scale], or now and then a bad one.
func (r *reader) num(scale float64) float64 {
	c := r.byte()
	switch c {
	case 255:
		return math.NaN()
	case 254:
		return math.Inf(1)
	case 253:
		return -1
	case 252:
		return 0
	}
	return scale * float64(c) / 251
}

func bytesState(data []byte) *elastico.State {
	r := &reader{b: data}
	st := &elastico.State{}
	var gpuIDs []string
	for i := range 1 + r.intn(3) {
		n := elastico.Node{ID: fmt.Sprintf("n%d", i%(1+r.intn(4))), CPU: r.num(64), RAM: r.num(512)}
		for k := range 1 + r.intn(3) {
			id := fmt.Sprintf("n%dg%d", i, k)
			if r.intn(16) == 0 {
				id = "dup"
			}
			n.GPUs = append(n.GPUs, elastico.GPU{ID: id, Memory: r.num(80), Shared: r.intn(2) == 0})
			gpuIDs = append(gpuIDs, id)
		}
		st.Cluster.Nodes = append(st.Cluster.Nodes, n)
	}
	for i := range r.intn(6) {
		j := elastico.Job{ID: fmt.Sprintf("j%d", i%(1+r.intn(8))), Class: elastico.Class(r.intn(3) % 2), Weight: r.num(3), Spread: r.intn(4) == 0}
		if r.intn(8) == 0 {
			j.Class = 7
		}
		for k := range r.intn(4) {
			g := 1 + r.intn(3)
			p := elastico.Profile{
				Family:     families[r.intn(len(families))],
				Config:     elastico.Configuration{ID: fmt.Sprintf("c%d", k%(1+r.intn(4))), BatchSize: 8 * r.intn(9), GPUs: g},
				Demand:     elastico.Demand{GPUs: g, SM: r.num(1.2), GPUMemory: r.num(60), CPU: r.num(8), RAM: r.num(64)},
				Throughput: r.num(500), Efficiency: r.num(1),
			}
			j.Profiles = append(j.Profiles, p)
		}
		if r.intn(3) == 0 {
			j.Floor = r.num(300)
		}
		if len(j.Profiles) > 0 && r.intn(2) == 0 {
			p := &j.Profiles[r.intn(len(j.Profiles))]
			a := &elastico.Assignment{ConfigID: p.Config.ID}
			for range p.Demand.GPUs {
				if r.intn(10) == 0 {
					a.GPUs = append(a.GPUs, "nowhere")
				} else if len(gpuIDs) > 0 {
					a.GPUs = append(a.GPUs, gpuIDs[r.intn(len(gpuIDs))])
				}
			}
			j.Running = a
		}
		st.Jobs = append(st.Jobs, j)
	}
	if r.intn(4) == 0 {
		st.Carry.Prices[elastico.SM] = r.num(5)
		st.Carry.Penalties = map[string]map[string]float64{"j0": {"c0": r.num(2)}}
	}
	// Read last, so that the seeds decode to the States they did before
	// these fields were checked: a byte past the end reads 0, and 0 picks
	// a valid Now, a reference batch and profiles of the job's class.
	st.Now = day0
	if r.intn(16) == 15 {
		st.Now = time.Time{}
	}
	for i := range st.Jobs {
		j := &st.Jobs[i]
		j.ReferenceBatch = 8 * ((1 + r.intn(10)) % 10) // 0 one time in ten
		for k := range j.Profiles {
			j.Profiles[k].Class = j.Class
		}
		if len(j.Profiles) > 0 && r.intn(16) == 15 {
			other := elastico.Inference
			if j.Class == elastico.Inference {
				other = elastico.Training
			}
			j.Profiles[len(j.Profiles)-1].Class = other
		}
	}
	return st
}

// FuzzEpoch: Epoch never panics; it rejects a State that fails validation
// with an error wrapping elastico.ErrInvalid, and on any other State
// returns a plan that keeps every guarantee, pinned or not. Seeds are in
// testdata/fuzz/FuzzEpoch; go test -fuzz FuzzEpoch ./pds explores more.
func FuzzEpoch(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{2, 10, 200, 2, 100, 0, 100, 1, 3, 0, 2, 1, 1, 60, 100, 40, 80, 200, 250, 0, 1, 0})
	f.Add([]byte{1, 0, 255, 254, 1, 253, 0, 5, 2, 2, 1, 255, 3})
	s, err := New(Config{Predictor: randomPredictor, Sharing: iac.PaperSharing(iac.Tolerance{Tau0: 1.2})})
	if err != nil {
		f.Fatal(err)
	}
	pinned, err := New(Config{Predictor: randomPredictor, Sharing: iac.PaperSharing(iac.Tolerance{Tau0: 1.2}), Pinned: true})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		st := bytesState(data)
		valid := st.Validate()
		plan, err := s.Epoch(context.Background(), st)
		switch {
		case valid != nil:
			if !errors.Is(err, elastico.ErrInvalid) {
				t.Fatalf("invalid State (%v) gave %v, want an error wrapping ErrInvalid", valid, err)
			}
		case err != nil:
			t.Fatalf("valid State rejected: %v", err)
		default:
			checkPlan(t, st, plan, randomPredictor, iac.MaxSlowdown(1.2))
			plan, err := pinned.Epoch(context.Background(), st)
			if err != nil {
				t.Fatalf("valid State rejected (Pinned): %v", err)
			}
			checkPinned(t, st, plan, randomPredictor, iac.MaxSlowdown(1.2))
		}
	})
}
