package pds

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkEpochPasses measures, on BenchmarkEpoch's States (churn 2 %),
// two of the per-job passes of an epoch on their own, without the noise of
// pricing and placement: market (buildMarket: the options, Γ, the
// reservation; the predictions it asks come from the warm cache) and plan
// (the Plan from the best result: decisions, actions, Carry).
func BenchmarkEpochPasses(b *testing.B) {
	for _, size := range []struct{ jobs, gpus int }{{500, 512}, {20000, 16384}} {
		b.Run(fmt.Sprintf("jobs=%d/gpus=%d", size.jobs, size.gpus), func(b *testing.B) {
			s, err := New(Config{})
			if err != nil {
				b.Fatal(err)
			}
			st := benchState(b, s, size.jobs, size.gpus, 0.02)
			e := s.spare
			b.Run("pass=market", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					e.init(s, st)
					e.buildMarket()
					e.release()
				}
			})
			b.Run("pass=plan", func(b *testing.B) {
				e.init(s, st)
				if _, err := e.run(context.Background()); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					e.plan()
				}
				e.release()
			})
		})
	}
}
