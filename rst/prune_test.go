package rst

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/elastico/elastico"
	"github.com/google/go-cmp/cmp"
)

func TestPrune(t *testing.T) {
	tests := []struct {
		name    string
		family  []elastico.Profile
		wantIDs []string
	}{
		{"empty", nil, []string{}},
		{"one", []elastico.Profile{prof("a", 1, 1, 8, 4, 16, 100, 1)}, []string{"a"}},
		{
			name: "more of everything for less goodput is dropped",
			family: []elastico.Profile{
				prof("big-slow", 2, 1, 12, 4, 16, 150, 0.6), // G 90, total {2, 24, 8, 32}
				prof("small-fast", 1, 1, 8, 4, 16, 100, 1),  // G 100, total {1, 8, 4, 16}
			},
			wantIDs: []string{"small-fast"},
		},
		{
			name: "a trade-off stays",
			family: []elastico.Profile{
				prof("two", 2, 1, 8, 4, 16, 180, 1), // more goodput for more GPUs
				prof("one", 1, 1, 8, 4, 16, 100, 1),
				prof("lean", 1, 0.5, 4, 4, 16, 60, 1), // less of everything, less goodput
			},
			wantIDs: []string{"two", "one", "lean"},
		},
		{
			name: "equal demand, equal goodput: the first stays",
			family: []elastico.Profile{
				prof("x", 1, 1, 8, 4, 16, 100, 1),
				prof("y", 1, 1, 8, 4, 16, 100, 1),
			},
			wantIDs: []string{"x"},
		},
		{
			name: "same total in other pieces: neither fits wherever the other does",
			family: []elastico.Profile{
				prof("whole", 1, 1, 16, 4, 16, 100, 1),
				prof("halves", 2, 0.5, 8, 2, 8, 100, 1),
			},
			wantIDs: []string{"whole", "halves"},
		},
		{
			name: "equal demand, more goodput wins",
			family: []elastico.Profile{
				prof("fp32", 1, 1, 8, 4, 16, 100, 1),
				prof("amp", 1, 1, 8, 4, 16, 140, 1),
			},
			wantIDs: []string{"amp"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Prune(tc.family)
			gotIDs := make([]string, len(got))
			for i, p := range got {
				gotIDs[i] = p.Config.ID
			}
			if diff := cmp.Diff(tc.wantIDs, gotIDs); diff != "" {
				t.Errorf("kept (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPruneKeepsTheFrontier checks Prune against its definition on random
// families: nothing kept is dominated by anything (but an equal earlier
// twin), and everything dropped is dominated by something kept.
func TestPruneKeepsTheFrontier(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 500 {
		fam := randomFamily(rng, 1+rng.IntN(12))
		keep := PruneIndices(nil, fam)
		kept := map[int]bool{}
		for _, k := range keep {
			kept[k] = true
		}
		for i := range fam {
			if kept[i] {
				for k := range fam {
					if k != i && Dominates(&fam[k], &fam[i]) && !(Dominates(&fam[i], &fam[k]) && i < k) {
						t.Fatalf("trial %d: kept %d is dominated by %d", trial, i, k)
					}
				}
				continue
			}
			found := false
			for _, k := range keep {
				found = found || Dominates(&fam[k], &fam[i])
			}
			if !found {
				t.Fatalf("trial %d: dropped %d is dominated by nothing kept", trial, i)
			}
		}
	}
}

func randomFamily(rng *rand.Rand, k int) []elastico.Profile {
	fam := make([]elastico.Profile, k)
	for i := range fam {
		g := 1 << rng.IntN(3)
		// Coarse values so that ties and dominations happen.
		fam[i] = prof(fmt.Sprint("c", i), g, float64(1+rng.IntN(4))/4, float64(4+4*rng.IntN(4)), float64(2+2*rng.IntN(2)), 16,
			float64(50+50*rng.IntN(5)), float64(5+rng.IntN(6))/10)
	}
	return fam
}

// BenchmarkPrune prunes 20,000 families of 8 configurations, the production
// size of a production family.
func BenchmarkPrune(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	fams := make([][]elastico.Profile, 20000)
	for i := range fams {
		fams[i] = randomFamily(rng, 8)
	}
	keep := make([]int, 0, 8)
	b.ReportAllocs()
	b.ResetTimer()
	total := 0
	for b.Loop() {
		total = 0
		for _, f := range fams {
			keep = PruneIndices(keep[:0], f)
			total += len(keep)
		}
	}
	b.ReportMetric(float64(total)/float64(len(fams)), "kept/job")
}
