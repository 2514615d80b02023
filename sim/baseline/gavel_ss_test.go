package baseline

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/sim"
)

// fixedSlowdown is a predictor that answers one slowdown for every pair.
type fixedSlowdown float64

func (f fixedSlowdown) Slowdown(_, _ *elastico.Profile) float64 { return float64(f) }

// sharedCluster is mixCluster with GPUs that may be shared.
func sharedCluster(v100, k80 int) elastico.Cluster {
	c := mixCluster(v100, k80)
	for n := range c.Nodes {
		for g := range c.Nodes[n].GPUs {
			c.Nodes[n].GPUs[g].Shared = true
		}
	}
	return c
}

// ssRun replays epochs every minute for d on jobs that never finish,
// applying each plan, and returns every epoch's plan in short.
func ssRun(t *testing.T, g *Gavel, st elastico.State, d time.Duration) []string {
	t.Helper()
	st.Jobs = slices.Clone(st.Jobs) // the caller's stay as they were
	var out []string
	for now := time.Duration(0); now < d; now += time.Minute {
		st.Now = t0.Add(now)
		p, err := g.Epoch(context.Background(), &st)
		if err != nil {
			t.Fatal(err)
		}
		for i, dc := range p.Decisions {
			st.Jobs[i].Running = dc.Assignment
		}
		out = append(out, fmt.Sprint(placed(p), len(p.Actions)))
	}
	return out
}

// TestGavelSSSharesAPair: two jobs on one V100, each 0.8 as fast beside
// the other (SM shares of 0.5, memory of 4 GiB: they fit). Gavel without
// space sharing alternates them round by round; with it they share the
// GPU from the first round and keep it.
func TestGavelSSSharesAPair(t *testing.T) {
	st := elastico.State{Cluster: sharedCluster(1, 0), Jobs: []elastico.Job{mixJob("a", 0, 4, 1), mixJob("b", 1, 4, 1)}}
	plans := ssRun(t, &Gavel{SpaceSharing: true, Predictor: fixedSlowdown(1.25)}, st, 10*GavelRound)
	if want := fmt.Sprint(map[string]string{"a": "b32@V100@v0", "b": "b32@V100@v0"}, 2); plans[0] != want {
		t.Fatalf("first round: %s, want %s", plans[0], want)
	}
	for k, p := range plans[1:] {
		if want := fmt.Sprint(map[string]string{"a": "b32@V100@v0", "b": "b32@V100@v0"}, 0); p != want {
			t.Fatalf("epoch %d: %s, want the pair kept (%s)", k+1, p, want)
		}
	}
	alone := ssRun(t, &Gavel{}, st, 2*GavelRound)
	if alone[0] == plans[0] || alone[0] == alone[len(alone)-1] {
		t.Errorf("without space sharing: %s then %s, want one job, then the other", alone[0], alone[len(alone)-1])
	}
}

// TestGavelSSWithoutUsefulPairs: when no pair beats taking turns (each
// job half as fast beside any other), Gavel with space sharing makes
// Gavel's plans, epoch by epoch.
func TestGavelSSWithoutUsefulPairs(t *testing.T) {
	st := elastico.State{Cluster: sharedCluster(2, 2), Jobs: []elastico.Job{
		mixJob("a", 0, 4, 1), mixJob("b", 1, 4, 1), mixJob("c", 2, 1.2, 1), mixJob("d", 3, 1.2, 1), mixJob("e", 4, 2, 1.5), mixJob("f", 5, 3, 1),
	}}
	want := ssRun(t, &Gavel{}, st, 40*GavelRound)
	got := ssRun(t, &Gavel{SpaceSharing: true, Predictor: fixedSlowdown(2)}, st, 40*GavelRound)
	for k := range want {
		if got[k] != want[k] {
			t.Fatalf("epoch %d: %s, Gavel's %s", k, got[k], want[k])
		}
	}
}

// BenchmarkGavelEpoch times a round that recomputes the allocation (a job
// arrives or leaves every round) on the replay's mixed cluster, 36 GPUs
// of each model, with the first jobs of a window of Gavel's trace, with
// and without space sharing (the default predictor).
func BenchmarkGavelEpoch(b *testing.B) {
	mix, err := sim.GavelMix("V100:36,P100:36,K80:36")
	if err != nil {
		b.Fatal(err)
	}
	tr, err := sim.ReadShipped("gavel/0e4a51.trace")
	if err != nil {
		b.Fatal(err)
	}
	cl, err := mix.Cluster()
	if err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{200, 650} {
		sj, _, err := mix.Workload(tr, sim.WorkloadOptions{Load: 1, Jobs: n, Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		for _, ss := range []bool{false, true} {
			name := GavelName
			if ss {
				name = GavelSSName
			}
			b.Run(fmt.Sprintf("%s/jobs=%d", name, n), func(b *testing.B) {
				var all []elastico.Job
				for _, j := range sj {
					all = append(all, elastico.Job{ID: j.ID, Profiles: j.Profiles, Arrival: t0, Weight: 1})
				}
				g := &Gavel{SpaceSharing: ss}
				st := elastico.State{Cluster: cl, Jobs: slices.Clone(all)}
				now := t0
				for k := 0; b.Loop(); k++ {
					// The last job leaves one round and is back the next.
					if k%2 == 0 {
						st.Jobs = st.Jobs[:len(all)-1]
					} else {
						st.Jobs = append(st.Jobs, all[len(all)-1])
					}
					st.Now = now
					now = now.Add(GavelRound)
					p, err := g.Epoch(context.Background(), &st)
					if err != nil {
						b.Fatal(err)
					}
					for i, d := range p.Decisions {
						st.Jobs[i].Running = d.Assignment
					}
				}
			})
		}
	}
}

// pairwise is a predictor whose slowdowns differ from pair to pair (by
// the two throughputs), between 1 and 2.
type pairwise struct{}

func (pairwise) Slowdown(v, a *elastico.Profile) float64 {
	return 1 + math.Mod(v.Throughput*7+a.Throughput*3, 10)/10
}

// TestGavelSSDeterministic: two Gavels with space sharing, on jobs that
// pair differently on each model, make the same plans epoch by epoch, and
// share GPUs.
func TestGavelSSDeterministic(t *testing.T) {
	var jobs []elastico.Job
	for k := range 10 {
		jobs = append(jobs, mixJob(string(rune('a'+k)), k, float64(1+k%4), float64(1+k%3)/2))
	}
	st := elastico.State{Cluster: sharedCluster(3, 3), Jobs: jobs}
	a := ssRun(t, &Gavel{SpaceSharing: true, Predictor: pairwise{}}, st, 30*GavelRound)
	b := ssRun(t, &Gavel{SpaceSharing: true, Predictor: pairwise{}}, st, 30*GavelRound)
	shared := false
	for k := range a {
		if a[k] != b[k] {
			t.Fatalf("epoch %d: %s, then %s", k, a[k], b[k])
		}
		shared = shared || strings.Count(a[k], "@v0") > 1 || strings.Count(a[k], "@k0") > 1
	}
	if !shared {
		t.Error("no two jobs ever shared v0 or k0")
	}
}
