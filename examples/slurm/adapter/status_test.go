package adapter

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/elastico/elastico"
)

// A tick writes at most StatusPerTick AdminComments: 120 waiting jobs are
// told over three ticks, and when all are due again the stalest go first.
func TestWaitingStatusBudget(t *testing.T) {
	f := newFake(1, 4)
	for range 120 {
		f.submit(trainSpec, true, "")
	}
	n := 0
	h := newHarness(t, f, func(st *elastico.State) *elastico.Plan {
		n++
		p := keep(st)
		for i := range p.Decisions {
			p.Decisions[i].Status = elastico.Status{Code: elastico.Unaffordable, Reasons: []string{"prices " + strconv.Itoa(n)}}
		}
		return p
	})
	t0 := h.now
	tick := func() []int {
		t.Helper()
		before := len(f.calls)
		h.tick()
		var ids []int
		for _, c := range f.calls[before:] {
			if !strings.Contains(c, " AdminComment=elastico: waiting: ") {
				t.Fatalf("unexpected call %q", c)
			}
			id, _ := strconv.Atoi(strings.Fields(c)[1])
			ids = append(ids, id)
		}
		h.now = h.now.Add(time.Second)
		return ids
	}
	var batches [][]int
	for range 3 {
		batches = append(batches, tick())
	}
	if got := []int{len(batches[0]), len(batches[1]), len(batches[2])}; !slices.Equal(got, []int{StatusPerTick, StatusPerTick, 120 - 2*StatusPerTick}) {
		t.Fatalf("writes per tick %v, want %d, %d, %d", got, StatusPerTick, StatusPerTick, 120-2*StatusPerTick)
	}
	all := slices.Concat(batches...)
	slices.Sort(all)
	if len(slices.Compact(all)) != 120 {
		t.Errorf("%d jobs told in three ticks, want all 120", len(all))
	}
	if again := tick(); len(again) != 0 {
		t.Errorf("a fourth tick rewrote %d comments within StatusEvery", len(again))
	}
	h.now = t0.Add(StatusEvery + 5*time.Second) // every comment is due
	if again := tick(); !slices.Equal(again, batches[0]) {
		t.Errorf("rewrote %v, want the stalest, the first tick's %v", again, batches[0])
	}
}
