package esp_test

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/elastico/elastico/esp"
)

func TestNewDefaults(t *testing.T) {
	tests := []struct {
		name string
		cfg  esp.Config
		want esp.Config
	}{{
		name: "zero is every default",
		want: esp.Config{
			Eta0:              esp.DefaultEta0,
			MaxIterations:     esp.DefaultMaxIterations,
			Epsilon:           esp.DefaultEpsilon,
			ParallelThreshold: esp.DefaultParallelThreshold,
			Workers:           min(runtime.GOMAXPROCS(0), esp.MaxWorkers),
		},
	}, {
		name: "set fields are kept",
		cfg:  esp.Config{Eta0: 0.1, MaxIterations: 5, Epsilon: 0.01, ParallelThreshold: 100, Workers: 3},
		want: esp.Config{Eta0: 0.1, MaxIterations: 5, Epsilon: 0.01, ParallelThreshold: 100, Workers: 3},
	}, {
		name: "upper bounds are valid",
		cfg:  esp.Config{Eta0: esp.MaxEta0, MaxIterations: esp.MaxMaxIterations, Epsilon: esp.MaxEpsilon, Workers: esp.MaxWorkers},
		want: esp.Config{Eta0: esp.MaxEta0, MaxIterations: esp.MaxMaxIterations, Epsilon: esp.MaxEpsilon,
			ParallelThreshold: esp.DefaultParallelThreshold, Workers: esp.MaxWorkers},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := esp.New(tt.cfg)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, s.Config()); d != "" {
				t.Errorf("Config() (-want +got):\n%s", d)
			}
		})
	}
}

func TestNewRejects(t *testing.T) {
	tests := []struct {
		name      string
		cfg       esp.Config
		wantField string
	}{
		{"NaN η0", esp.Config{Eta0: math.NaN()}, "Eta0"},
		{"negative η0", esp.Config{Eta0: -0.1}, "Eta0"},
		{"infinite η0", esp.Config{Eta0: math.Inf(1)}, "Eta0"},
		{"η0 above its range", esp.Config{Eta0: esp.MaxEta0 * 2}, "Eta0"},
		{"negative iterations", esp.Config{MaxIterations: -1}, "MaxIterations"},
		{"too many iterations", esp.Config{MaxIterations: esp.MaxMaxIterations + 1}, "MaxIterations"},
		{"NaN ε", esp.Config{Epsilon: math.NaN()}, "Epsilon"},
		{"negative ε", esp.Config{Epsilon: -1e-3}, "Epsilon"},
		{"ε above one", esp.Config{Epsilon: 1.5}, "Epsilon"},
		{"negative parallel threshold", esp.Config{ParallelThreshold: -1}, "ParallelThreshold"},
		{"negative workers", esp.Config{Workers: -2}, "Workers"},
		{"too many workers", esp.Config{Workers: esp.MaxWorkers + 1}, "Workers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := esp.New(tt.cfg)
			if !errors.Is(err, esp.ErrConfig) {
				t.Fatalf("New returned (%v, %v), want an error wrapping ErrConfig", s, err)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "esp: ") || !strings.Contains(msg, tt.wantField+" is") {
				t.Errorf("error %q does not start with \"esp: \" and name %s", msg, tt.wantField)
			}
		})
	}
}
