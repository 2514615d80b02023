package esp

import (
	"context"
	"fmt"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/elastico/elastico"
)

var PhaseMarket func(n int) *elastico.Market

func TestPhases(t *testing.T) {
	if PhaseMarket == nil {
		t.Skip()
	}
	for _, n := range []int{500, 20000} {
		m := PhaseMarket(n)
		s, _ := New(Config{Workers: 1})
		var sol elastico.Solution
		s.Solve(context.Background(), m, &sol)
		sc := &s.sc
		var tv, tl, tt, tr, ti time.Duration
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		const reps = 50
		first := true
		for range reps {
			t0 := cpuNow()
			t1 := cpuNow()
			sc.load(m)
			t2 := cpuNow()
			lambda, _, _, _ := s.tatonnement(context.Background(), sc, m.Prices)
			t3 := cpuNow()
			sc.repair()
			t4 := cpuNow()
			v0 := sc.objective()
			l0 := sc.loadOf()
			sc.improve(&lambda)
			t5 := cpuNow()
			if first {
				fmt.Println("after repair", v0, l0, "after improve", sc.objective(), sc.loadOf())
				first = false
			}
			tv += t1.Sub(t0)
			tl += t2.Sub(t1)
			tt += t3.Sub(t2)
			tr += t4.Sub(t3)
			ti += t5.Sub(t4)
		}
		fmt.Println(n, "validate", tv/reps, "load", tl/reps, "taton", tt/reps, "repair", tr/reps, "improve", ti/reps)
	}
}

type cpuT int64

func (a cpuT) Sub(b cpuT) time.Duration { return time.Duration(a - b) }

func cpuNow() cpuT {
	var ru syscall.Rusage
	syscall.Getrusage(1, &ru) // RUSAGE_THREAD
	return cpuT(ru.Utime.Nano() + ru.Stime.Nano())
}
