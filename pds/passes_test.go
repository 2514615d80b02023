package pds

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/iac"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestWaitingOrder: the waiting jobs come by priority (highest first),
// arrival as Time.Compare orders it, then position, whether the arrivals
// carry a monotonic clock reading, lie before 1970 or share a second.
func TestWaitingOrder(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		arrival func(r *rand.Rand) time.Time
	}{
		{"seconds apart", func(r *rand.Rand) time.Time { return base.Add(time.Duration(r.IntN(50)) * time.Second) }},
		{"nanoseconds apart", func(r *rand.Rand) time.Time { return base.Add(time.Duration(r.IntN(50))) }},
		{"before 1970", func(r *rand.Rand) time.Time {
			return time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.IntN(50)*1e8 - 25e8))
		}},
		{"zero and far", func(r *rand.Rand) time.Time {
			return []time.Time{{}, time.Unix(1<<62, 0), time.Unix(-1<<62, 5), base}[r.IntN(4)]
		}},
		{"monotonic", func(r *rand.Rand) time.Time { return time.Now().Add(time.Duration(r.IntN(50)) * time.Millisecond) }},
		{"some monotonic", func(r *rand.Rand) time.Time {
			t := time.Now().Add(time.Duration(r.IntN(50)) * time.Millisecond)
			if r.IntN(2) == 0 {
				t = t.Round(0)
			}
			return t
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			jobs := make([]elastico.Job, 300)
			e := &epoch{marketState: marketState{jobs: make([]jobState, len(jobs))}}
			var want []int32
			for j := range jobs {
				jobs[j] = elastico.Job{Priority: r.IntN(3), Arrival: tc.arrival(r)}
				e.jobs[j] = jobState{job: &jobs[j], running: r.IntN(4) == 0}
				if !e.jobs[j].running {
					want = append(want, int32(j))
				}
			}
			slices.SortStableFunc(want, func(a, b int32) int {
				if pa, pb := jobs[a].Priority, jobs[b].Priority; pa != pb {
					return pb - pa
				}
				return jobs[a].Arrival.Compare(jobs[b].Arrival)
			})
			e.waitingOrder()
			if diff := cmp.Diff(want, e.waiting, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("waiting order (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKeptApart: separate keeps each violating pair once (per pair of
// configurations), and keptApart names, in the order they were found,
// every pair of a job that the last placement kept apart, as a scan of
// all the pairs would.
func TestKeptApart(t *testing.T) {
	const n = 12
	r := rand.New(rand.NewPCG(3, 4))
	jobs := make([]elastico.Job, n)
	e := &epoch{marketState: marketState{jobs: make([]jobState, n)}, roundState: roundState{apartFirst: make([]int32, n), apartLast: make([]int32, n)}}
	for j := range jobs {
		jobs[j].ID = fmt.Sprintf("j%d", j)
		e.jobs[j].job = &jobs[j]
	}
	res := &result{choice: make([]int32, n)}
	var want []avoidPair // as separate kept them: by a scan of every pair
	for range 80 {
		sv := 1.2 + r.Float64()
		v := violation{victim: int32(r.IntN(n)), aggressor: int32(r.IntN(n)), sv: sv, sa: 1 + r.Float64()*(sv-1), cv: math.Inf(1), ca: math.Inf(1), lim: iac.MaxSlowdown(1.2)}
		if v.victim == v.aggressor {
			continue
		}
		res.choice[v.victim], res.choice[v.aggressor] = int32(r.IntN(2)), int32(r.IntN(2))
		a, b := min(v.victim, v.aggressor), max(v.victim, v.aggressor)
		p := avoidPair{a: a, b: b, ka: res.choice[a], kb: res.choice[b], viol: v}
		if !slices.ContainsFunc(want, func(q avoidPair) bool { return q.a == a && q.b == b && q.ka == p.ka && q.kb == p.kb }) {
			want = append(want, p)
		}
		e.separate(res, v)
	}
	if len(e.avoid) != len(want) {
		t.Fatalf("separate kept %d pairs, want %d", len(e.avoid), len(want))
	}
	// The last placement: every job an item, under family index 0 or 1.
	e.jobItem, e.itemFam = make([]int32, n), make([]int32, n)
	for j := range n {
		e.jobItem[j], e.itemFam[j] = int32(j), int32(r.IntN(2))
	}
	several := 0
	for j := range int32(n) {
		var b strings.Builder
		for _, p := range want {
			if (p.a == j || p.b == j) && e.inForce(p) {
				mine, theirs := p.viol.sv, p.viol.sa
				if p.viol.victim != j {
					mine, theirs = theirs, mine
				}
				fmt.Fprintf(&b, "; kept apart from job %q (predicted %.3g× and %.3g× slower beside each other, above the tolerance 1.2)", jobs[p.a+p.b-j].ID, mine, theirs)
			}
		}
		if strings.Count(b.String(), "kept apart") > 1 {
			several++
		}
		if diff := cmp.Diff(b.String(), e.keptApart(j)); diff != "" {
			t.Errorf("keptApart(%d) (-want +got):\n%s", j, diff)
		}
	}
	if several == 0 {
		t.Fatal("no job is kept apart from several others: the test does not test the order")
	}
}
