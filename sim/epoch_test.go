package sim

import (
	"context"
	"testing"
	"time"

	"github.com/elastico/elastico"
	"github.com/google/go-cmp/cmp"
)

func TestEpochModes(t *testing.T) {
	tr := testTruth(t)
	jobs := []Job{
		testJob(t, tr, "a", "ResNet-18", 64, 1, 0, 12),
		testJob(t, tr, "b", "ResNet-18", 64, 1, 1000, 10),
	}
	pins := map[string][]string{"a": {"gpu0000"}, "b": {"gpu0000"}}
	tests := []struct {
		mode EpochMode
		want []float64
	}{
		// Every ΔT while a job runs or waits: a runs over [0, 12), b over
		// [1000, 1010); the cluster is empty in between.
		{EpochsEvery, []float64{0, 5, 10, 1000, 1005}},
		{EpochsOnChange, []float64{0, 1000}},
	}
	for _, tc := range tests {
		t.Run(tc.mode.String(), func(t *testing.T) {
			var got []float64
			start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			pin := pinPolicy(pins)
			spy := policyFunc(func(ctx context.Context, st *elastico.State) (*elastico.Plan, error) {
				got = append(got, st.Now.Sub(start).Seconds())
				return pin.Epoch(ctx, st)
			})
			r, err := Run(context.Background(), Config{Truth: tr, Cluster: testCluster(t, 1), Jobs: jobs, Policy: spy, Epochs: tc.mode})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("epochs at (-want +got):\n%s", diff)
			}
			if r.Epochs != len(tc.want) {
				t.Errorf("Result.Epochs %d, want %d", r.Epochs, len(tc.want))
			}
		})
	}
}

func TestParseEpochMode(t *testing.T) {
	for _, m := range []EpochMode{EpochsEvery, EpochsOnChange} {
		if got, err := ParseEpochMode(m.String()); err != nil || got != m {
			t.Errorf("ParseEpochMode(%q) = %v, %v", m.String(), got, err)
		}
	}
	if _, err := ParseEpochMode("sometimes"); err == nil {
		t.Error("ParseEpochMode(sometimes): no error")
	}
	if _, err := Run(context.Background(), Config{Truth: testTruth(t), Cluster: testCluster(t, 1), Policy: pinPolicy(nil),
		Jobs: []Job{testJob(t, testTruth(t), "a", "ResNet-18", 64, 1, 0, 10)}, Epochs: 7}); err == nil {
		t.Error("Config.Epochs 7: no error")
	}
}
