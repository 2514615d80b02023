package sim

import (
	"math"
	"strings"
	"testing"

	"github.com/elastico/elastico"
	"github.com/google/go-cmp/cmp"
)

func shippedGavel(t testing.TB) *Trace {
	t.Helper()
	tr, err := ReadShipped("gavel/0e4a51.trace")
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

func TestWorkloadLoadScaling(t *testing.T) {
	truth := testTruth(t)
	tr := shippedGavel(t)
	for _, tc := range []struct {
		name string
		gpus int
		load float64
	}{{"64 GPUs, 100 %", 64, 1}, {"64 GPUs, 150 %", 64, 1.5}, {"512 GPUs, 50 %", 512, 0.5}} {
		t.Run(tc.name, func(t *testing.T) {
			jobs, st, err := truth.Workload(tr, WorkloadOptions{GPUs: tc.gpus, Load: tc.load, Jobs: 300, Seed: 3})
			if err != nil {
				t.Fatal(err)
			}
			if len(jobs) != 300 || math.Abs(st.OfferedLoad-tc.load) > 1e-9 {
				t.Errorf("%d jobs, offered load %g, want 300 and %g", len(jobs), st.OfferedLoad, tc.load)
			}
			for i := 1; i < len(jobs); i++ {
				if jobs[i].Arrival < jobs[i-1].Arrival {
					t.Fatalf("arrivals out of order at %d", i)
				}
			}
		})
	}
	// The arrival rate grows with the cluster: 8× the GPUs, 1/8 the span.
	_, s64, _ := truth.Workload(tr, WorkloadOptions{GPUs: 64, Load: 1, Jobs: 300, Seed: 3})
	_, s512, _ := truth.Workload(tr, WorkloadOptions{GPUs: 512, Load: 1, Jobs: 300, Seed: 3})
	if r := s64.Span / s512.Span; math.Abs(r-8) > 1e-9 {
		t.Errorf("span at 64 / span at 512 GPUs = %g, want 8", r)
	}
}

func TestWorkloadDeterministicPerSeed(t *testing.T) {
	truth := testTruth(t)
	tr := shippedGavel(t)
	o := WorkloadOptions{GPUs: 64, Load: 1, Jobs: 100, Seed: 7, InferenceFraction: 0.3, InferenceFloor: 0.5, ProfileNoise: 0.05}
	a, _, err := truth.Workload(tr, o)
	if err != nil {
		t.Fatal(err)
	}
	b, _, _ := truth.Workload(tr, o)
	ids := func(js []Job) (out []string) {
		for _, j := range js {
			out = append(out, j.ID+"/"+j.Family.Name)
		}
		return out
	}
	if diff := cmp.Diff(ids(a), ids(b)); diff != "" {
		t.Errorf("same seed, different jobs:\n%s", diff)
	}
	o.Seed = 8
	c, _, _ := truth.Workload(tr, o)
	if cmp.Equal(ids(a), ids(c)) {
		t.Errorf("seeds 7 and 8 gave the same window")
	}
	infer := 0
	for _, j := range a {
		if j.Class == elastico.Inference {
			infer++
			if j.Floor <= 0 || j.Requested().GPUs != 1 {
				t.Errorf("inference job %s: floor %g, %d GPUs", j.ID, j.Floor, j.Requested().GPUs)
			}
		}
		if j.Profiles[0].Config.ID != j.Configs[0].ID {
			t.Errorf("job %s: profiles and configurations out of step", j.ID)
		}
	}
	if infer == 0 {
		t.Errorf("no inference job with InferenceFraction 0.3")
	}
}

func TestWorkloadWorkMatchesTheTrace(t *testing.T) {
	truth := testTruth(t)
	tr, err := ReadGavel(strings.NewReader("ResNet-50 (batch size 64)\tc\ta\t0\t10000\t0\t2\nResNet-18 (batch size 32)\tc\ta\t0\t5000\t100\t16\n"), "t")
	if err != nil {
		t.Fatal(err)
	}
	jobs, st, err := truth.Workload(tr, WorkloadOptions{GPUs: 8, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if st.Capped != 1 {
		t.Errorf("capped %d, want 1 (16 GPUs asked of 8)", st.Capped)
	}
	for _, j := range jobs {
		if j.ID != "job00000" {
			continue
		}
		// Gavel's run time is steps over its measured steps/s.
		steps := all2(t)
		if want := 10000 / steps; math.Abs(j.Dedicated-want) > 1e-6*want {
			t.Errorf("dedicated %g s, want Gavel's %g s", j.Dedicated, want)
		}
	}
	if _, _, err := truth.Workload(tr, WorkloadOptions{GPUs: 8, Load: -1}); err == nil {
		t.Error("negative load accepted")
	}
	bad, _ := ReadCSV(strings.NewReader("arrival,gpus,duration,family\n0,1,5,GPT-9\n"), "bad.csv")
	if _, _, err := truth.Workload(bad, WorkloadOptions{GPUs: 8}); err == nil || !strings.Contains(err.Error(), "bad.csv:2") {
		t.Errorf("unknown family: %v, want an error naming bad.csv:2", err)
	}
}

// all2 returns Gavel's V100 steps/s of ResNet-50 batch 64 on 2 GPUs.
func all2(t *testing.T) float64 {
	c, err := testTruth(t).Config("ResNet-50", 64, 2)
	if err != nil {
		t.Fatal(err)
	}
	return c.Throughput / 64
}
