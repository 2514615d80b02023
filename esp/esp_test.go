package esp_test

import (
	"testing"

	"github.com/elastico/elastico"
	"github.com/elastico/elastico/esp"
	"github.com/elastico/elastico/esp/esptest"
)

func TestConformance(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  esp.Config
	}{
		{"default", esp.Config{}},
		{"parallel", esp.Config{ParallelThreshold: 1, Workers: 3}},
		{"one iteration", esp.Config{MaxIterations: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			esptest.Run(t, func() elastico.PriceSolver {
				s, err := esp.New(tc.cfg)
				if err != nil {
					t.Fatal(err)
				}
				return s
			})
		})
	}
}
