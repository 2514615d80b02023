package train

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/elastico/elastico/iac"
)

// TestBackpropMatchesFiniteDifferences checks the training gradient against
// central differences of the loss, without dropout.
func TestBackpropMatchesFiniteDifferences(t *testing.T) {
	const in, n = 4, 3
	rng := rand.New(rand.NewPCG(5, 6))
	c, err := resolve(iac.TrainConfig{Hidden: []int{7, 5}, Dropout: -1})
	if err != nil {
		t.Fatal(err)
	}
	tr := newTrainer(benchColumns(in), c, rng)
	x, y := benchBatch(n, in, rng)
	tr.xTrain, tr.yTrain = x, y
	tr.init()
	for i := range tr.param { // biases away from zero so that ReLUs are mixed
		tr.param[i] += 0.1 * rng.NormFloat64()
	}
	if err := tr.gradient([]int{0, 1, 2}); err != nil {
		t.Fatal(err)
	}
	total := func() float64 { return tr.loss(x, y) * n }
	const h = 1e-6
	for i := range tr.param {
		old := tr.param[i]
		tr.param[i] = old + h
		up := total()
		tr.param[i] = old - h
		down := total()
		tr.param[i] = old
		num := (up - down) / (2 * h)
		if math.Abs(num-tr.grad[i]) > 1e-6*math.Max(1, math.Abs(num)) {
			t.Errorf("parameter %d: backprop %g, finite differences %g", i, tr.grad[i], num)
		}
	}
}
