package pds

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/elastico/elastico"
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
			e := &epoch{jobs: make([]jobState, len(jobs))}
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
