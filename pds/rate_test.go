package pds

import (
	"math/rand/v2"
	"testing"
)

func TestViolationRate(t *testing.T) {
	s, _ := New(Config{})
	st := benchState(t, s, 500, 512)
	r := rand.New(rand.NewPCG(1, 1))
	n, bad := 0, 0
	for range 20000 {
		a, b := &st.Jobs[r.IntN(len(st.Jobs))], &st.Jobs[r.IntN(len(st.Jobs))]
		pa, pb := &a.Family[r.IntN(8)], &b.Family[r.IntN(8)]
		n++
		if s.pred.Slowdown(pa, pb) > DefaultTolerance.Tau0 {
			bad++
		}
	}
	t.Logf("violating fraction %.3f", float64(bad)/float64(n))
}
