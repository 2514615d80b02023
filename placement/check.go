package placement

import (
	"fmt"
	"math"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/internal/check"
)

func itemID(it *elastico.PlacementItem) string {
	if it.Job == nil {
		return ""
	}
	return it.Job.ID
}

// ok reports whether x is a finite number ≥ 0.
func ok(x float64) bool { return x >= 0 && x <= math.MaxFloat64 }

// checkItem returns why item i of the request is malformed, or nil. A
// valid item (the usual case) costs a handful of comparisons.
func (w *work) checkItem(i int, it *elastico.PlacementItem) error {
	if it.Job != nil && it.Profile != nil {
		d := &it.Profile.Demand
		valid := d.GPUs >= 1 && d.SM > 0 && d.SM <= 1 && ok(d.GPUMemory) && ok(d.CPU) && ok(d.RAM)
		for _, ref := range it.Current {
			valid = valid && ref.Node >= 0 && ref.Node < len(w.nodes) && ref.GPU >= 0 && ref.GPU < int(w.nodes[ref.Node].count)
		}
		for _, a := range it.Avoid {
			valid = valid && a >= 0 && a < len(w.req.Items) && a != i
		}
		if valid {
			return nil
		}
	}
	bad := func(field, reason string) error {
		return &elastico.ValidationError{Kind: "item", ID: itemID(it), Field: fmt.Sprintf("Items[%d].%s", i, field), Reason: reason}
	}
	if it.Job == nil {
		return bad("Job", "is nil")
	}
	if it.Profile == nil {
		return bad("Profile", "is nil")
	}
	d := &it.Profile.Demand
	if d.GPUs < 1 {
		return bad("Profile.Demand.GPUs", fmt.Sprintf("is %d, want ≥ 1", d.GPUs))
	}
	if math.IsNaN(d.SM) || d.SM <= 0 || d.SM > 1 {
		return bad("Profile.Demand.SM", fmt.Sprintf("is %g, want a share in (0, 1]", d.SM))
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"GPUMemory", d.GPUMemory}, {"CPU", d.CPU}, {"RAM", d.RAM}} {
		if r := check.Number(f.v); r != "" {
			return bad("Profile.Demand."+f.name, r)
		}
	}
	for k, ref := range it.Current {
		if ref.Node < 0 || ref.Node >= len(w.nodes) || ref.GPU < 0 || ref.GPU >= int(w.nodes[ref.Node].count) {
			return bad(fmt.Sprintf("Current[%d]", k), fmt.Sprintf("%+v is not a GPU of the cluster", ref))
		}
	}
	for k, a := range it.Avoid {
		if a < 0 || a >= len(w.req.Items) || a == i {
			return bad(fmt.Sprintf("Avoid[%d]", k), fmt.Sprintf("is %d, want another item's index", a))
		}
	}
	return nil
}
