package main

import (
	"strings"
	"testing"
	"time"

	"github.com/elastico/elastico/pds"
)

// TestScenarios: what the table shows, for pds's defaults: no job is
// displaced after the first epoch except for a heavier one (the gang at
// Weight 100 takes the GPUs of the 1-GPU jobs), the running gang is not
// evicted for a small job, a lighter or lower-priority job never starts
// in a running job's place, the waiting gang starts within ReserveAfter
// plus the 8 epochs of service on its GPUs, and every State Epoch
// produces is a fixed point.
func TestScenarios(t *testing.T) {
	bound := int(pds.DefaultReserveAfter/(5*time.Second)) + 8 + 1
	for _, sc := range scenarios() {
		s, err := pds.New(pds.Config{})
		if err != nil {
			t.Fatal(err)
		}
		o, err := run(s, sc)
		if err != nil {
			t.Fatalf("%s: %v", sc.name, err)
		}
		heavier := strings.Contains(sc.name, "Weight 100")
		if o.first+o.later > 0 && !heavier {
			t.Errorf("%s: %d displacements in the first epoch, %d later; want none", sc.name, o.first, o.later)
		}
		if o.again != 0 {
			t.Errorf("%s: Epoch on its own result gives %d actions, want none", sc.name, o.again)
		}
		switch sc.watch {
		case "gang":
			if o.started < 0 || o.started > bound {
				t.Errorf("%s: the gang started at epoch %d, want within %d", sc.name, o.started, bound)
			}
		case "small", "low":
			if o.started >= 0 {
				t.Errorf("%s: job %s started at epoch %d in a running job's place", sc.name, sc.watch, o.started)
			}
		}
	}
}
