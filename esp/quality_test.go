package esp_test

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/elastico/elastico/esp"
	"github.com/elastico/elastico/esp/esptest"
)

// TestQuality holds the default Solver to the target on 200 random
// markets small enough to solve exactly: up to 30 jobs of up to 6
// configurations, 4 resources, capacity 25–75 % of the mean demand. Every
// answer is checked within capacity; the objective must average at least
// 97 % of the exact optimum and never fall below 90 %.
func TestQuality(t *testing.T) {
	s, err := esp.New(esp.Config{})
	if err != nil {
		t.Fatal(err)
	}
	const count = 200
	mean, minimum, err := esptest.Quality(context.Background(), s, rand.New(rand.NewPCG(2, 2026)), count, 30, 6)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("objective / exact optimum over %d markets (≤ 30 jobs × ≤ 6 configurations): mean %.4f, min %.4f", count, mean, minimum)
	if mean < 0.97 {
		t.Errorf("mean objective / optimum %.4f, want ≥ 0.97", mean)
	}
	if minimum < 0.90 {
		t.Errorf("minimum objective / optimum %.4f, want ≥ 0.90", minimum)
	}
}
