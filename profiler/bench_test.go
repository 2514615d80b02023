package profiler

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/elastico/elastico"
)

// BenchmarkProfile is the profiler's own cost for one profile with the
// default 60 s window (100 warm-up iterations, 70 samples), the job, the
// source and the clock being free.
func BenchmarkProfile(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		r := newRig()
		p, err := New(r.cfg)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := p.Profile(context.Background(), testReq); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkTrimmedMean trims one counter's 60 samples of a window.
func BenchmarkTrimmedMean(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	src := make([]float64, 60)
	for i := range src {
		src[i] = rng.Float64()
	}
	xs := make([]float64, len(src))
	b.ReportAllocs()
	for b.Loop() {
		copy(xs, src)
		TrimmedMean(xs, 0.1)
	}
}

// BenchmarkStorePut adds a measured profile to a family file that already
// holds 64 configurations on 2 hardware signatures.
func BenchmarkStorePut(b *testing.B) {
	st, err := OpenStore(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for i := 0; i < 64; i++ {
		for _, hw := range []elastico.Hardware{testHW, h100} {
			if _, err := st.Put(storeProfile("resnet50", fmt.Sprintf("cfg%02d", i), hw, 900, false)); err != nil {
				b.Fatal(err)
			}
		}
	}
	p := storeProfile("resnet50", "cfg07", h100, 950, false)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := st.Put(p); err != nil {
			b.Fatal(err)
		}
	}
}
