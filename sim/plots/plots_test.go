package plots_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/sim"
	"github.com/elastico/elastico/sim/baseline"
	"github.com/elastico/elastico/sim/plots"
)

func TestWrite(t *testing.T) {
	truth, err := sim.GavelTruth("V100")
	if err != nil {
		t.Fatal(err)
	}
	trace, err := sim.ReadShipped("gavel/0e4a51.trace")
	if err != nil {
		t.Fatal(err)
	}
	e := &sim.Experiment{
		Truth: truth, Trace: trace, GPUs: 16, Seeds: []uint64{1, 2},
		Workload: sim.WorkloadOptions{Load: 1.5, Jobs: 30},
		Policies: []sim.Policy{
			{Name: "volcano", New: func() (elastico.Scheduler, error) { return baseline.Volcano{}, nil }},
			{Name: "lucid", New: func() (elastico.Scheduler, error) { return &baseline.Lucid{}, nil }},
		},
	}
	out, err := e.Execute(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := plots.Write(dir, out); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{plots.JCTCDF, plots.SMUtil, plots.QueueingDelay} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG")) {
			t.Errorf("%s: %v, not a PNG", f, err)
		}
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 3 {
		t.Errorf("%d files in the plot folder, want 3 (no temporary file left)", len(entries))
	}
	if err := plots.Write(filepath.Join(dir, "missing"), out); err == nil {
		t.Errorf("Write into a missing folder succeeded")
	}
}
