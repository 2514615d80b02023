package train

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/elastico/elastico/iac"
)

func TestTrainIsSeeded(t *testing.T) {
	a, b, c := trainQuick(t, 1), trainQuick(t, 1), trainQuick(t, 2)
	if !bytes.Equal(encoded(t, a), encoded(t, b)) {
		t.Errorf("two trainings with seed 1 differ")
	}
	if bytes.Equal(encoded(t, a), encoded(t, c)) {
		t.Errorf("seeds 1 and 2 gave the same model")
	}
}

func TestTrainLearnsAKnownLaw(t *testing.T) {
	train := data(5, 4, 1)
	m, err := MLP(train.Samples(), quick, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	// Fresh profiles from the same law, never seen.
	test := data(3, 4, 9).Samples()
	var ape, base float64
	var mean float64
	for _, s := range train.Samples() {
		mean += s.Slowdown
	}
	mean /= float64(len(train.Samples()))
	for _, s := range test {
		p := m.Predict(&s.Features)
		if !(p >= 1) {
			t.Fatalf("prediction %g < 1", p)
		}
		ape += math.Abs(p-s.Slowdown) / s.Slowdown
		base += math.Abs(mean-s.Slowdown) / s.Slowdown
	}
	ape, base = 100*ape/float64(len(test)), 100*base/float64(len(test))
	if ape > 5 || ape > base/3 {
		t.Errorf("MAPE %.2f %% on unseen profiles (predicting the mean: %.2f %%), want ≤ 5 %% and a third of the mean's", ape, base)
	}
	info := m.Info()
	if info.BestEpoch < 1 || info.BestEpoch > info.Epochs || info.TrainSamples+info.ValSamples == 0 || !(info.ValidationLoss >= 0) {
		t.Errorf("info %+v", info)
	}
	if got := m.Hidden(); !cmp.Equal(got, []int{16, 8}) {
		t.Errorf("Hidden() = %v", got)
	}
	if in := m.Inputs(); len(in) == 0 || !strings.Contains(strings.Join(in, ","), "a_sm_active") || !strings.Contains(strings.Join(in, ","), "a_power_frac?") {
		t.Errorf("Inputs() = %v, want a_sm_active and the mask a_power_frac?", in)
	}
}

func TestTrainConfigValidation(t *testing.T) {
	tests := []struct {
		name    string
		cfg     iac.TrainConfig
		wantErr string
	}{
		{"no layers", iac.TrainConfig{Hidden: []int{}}, "TrainConfig.Hidden"},
		{"too wide", iac.TrainConfig{Hidden: []int{iac.MaxWidth + 1}}, "TrainConfig.Hidden[0]"},
		{"dropout 1", iac.TrainConfig{Dropout: 1}, "TrainConfig.Dropout"},
		{"learning rate", iac.TrainConfig{LearningRate: 2}, "TrainConfig.LearningRate"},
		{"beta1", iac.TrainConfig{Beta1: 1}, "TrainConfig.Beta1"},
		{"beta2", iac.TrainConfig{Beta2: -0.5}, "TrainConfig.Beta2"},
		{"epsilon", iac.TrainConfig{Epsilon: 2}, "TrainConfig.Epsilon"},
		{"batch", iac.TrainConfig{BatchSize: -1}, "TrainConfig.BatchSize"},
		{"epochs", iac.TrainConfig{MaxEpochs: -3}, "TrainConfig.MaxEpochs"},
		{"patience", iac.TrainConfig{Patience: -1}, "TrainConfig.Patience"},
		{"validation", iac.TrainConfig{ValidationFrac: 0.9}, "TrainConfig.ValidationFrac"},
		{"weight decay", iac.TrainConfig{WeightDecay: 1}, "TrainConfig.WeightDecay"},
	}
	samples := data(2, 2, 1).Samples()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := MLP(samples, tc.cfg, rand.New(rand.NewPCG(1, 0)))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "train: ") {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestTrainDefaults(t *testing.T) {
	got, err := resolve(iac.TrainConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(iac.DefaultTrainConfig(), got); d != "" {
		t.Errorf("zero config resolves to (-defaults +got):\n%s", d)
	}
	off, err := resolve(iac.TrainConfig{Dropout: -1, WeightDecay: -1})
	if err != nil || off.Dropout != 0 || off.WeightDecay != 0 {
		t.Errorf("negative Dropout/WeightDecay: %+v, %v; want them off", off, err)
	}
}

func TestTrainRefusesBadInput(t *testing.T) {
	good := data(2, 2, 1).Samples()
	bad := append([]iac.Sample(nil), good...)
	bad[3].Slowdown = 0.5
	nan := append([]iac.Sample(nil), good...)
	nan[0].Features.X[iac.ASMActive] = math.NaN()
	nan[0].Features.Present |= 1 << iac.ASMActive
	tests := []struct {
		name    string
		samples []iac.Sample
		rng     *rand.Rand
		wantErr string
	}{
		{"nil rng", good, nil, "nil *rand.Rand"},
		{"speed-up", bad, rand.New(rand.NewPCG(1, 0)), "sample 3"},
		{"NaN feature", nan, rand.New(rand.NewPCG(1, 0)), "feature a_sm_active is NaN"},
		{"one sample", good[:1], rand.New(rand.NewPCG(1, 0)), "too few samples"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := MLP(tc.samples, quick, tc.rng)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
	if _, err := MLP(good[:1], quick, rand.New(rand.NewPCG(1, 0))); !errors.Is(err, iac.ErrTooFewSamples) {
		t.Errorf("one sample: %v, want ErrTooFewSamples", err)
	}
}

func TestSplitKeepsGroupsTogether(t *testing.T) {
	samples := data(3, 3, 1).Samples()
	train, val := splitGroups(samples, 0.2, rand.New(rand.NewPCG(1, 0)))
	if len(train)+len(val) != len(samples) || len(val) == 0 {
		t.Fatalf("split %d + %d of %d", len(train), len(val), len(samples))
	}
	inVal := map[int]bool{}
	for _, i := range val {
		inVal[samples[i].Group] = true
	}
	for _, i := range train {
		if inVal[samples[i].Group] {
			t.Fatalf("group %d on both sides", samples[i].Group)
		}
	}
}

func TestPredictionsDoNotExtrapolate(t *testing.T) {
	m := trainQuick(t, 1)
	d := data(4, 4, 1)
	a, b := d.Profiles[0], d.Profiles[5]
	edge := m.Slowdown(&a, &b)
	// Far outside every training value: the inputs are clamped to the
	// training range, so the prediction is one the model could make there.
	a.Params, a.Throughput, a.Config.BatchSize = 1e15, 1e9, 1<<20
	far := m.Slowdown(&a, &b)
	a.Params, a.Throughput, a.Config.BatchSize = 1e30, 1e30, 1<<40
	farther := m.Slowdown(&a, &b)
	if far != farther {
		t.Errorf("prediction keeps moving outside the training range: %g, then %g", far, farther)
	}
	if math.IsNaN(edge) || far < 1 {
		t.Errorf("predictions %g, %g", edge, far)
	}
}

// A model with more inputs than hidden units (every feature and mask, two
// narrow layers) predicts without running out of scratch space.
func TestManyInputsNarrowLayers(t *testing.T) {
	var cols []iac.Column
	for f := iac.Feature(0); f < iac.NumFeatures; f++ {
		cols = append(cols, iac.Column{Feature: f, Std: 1, Lo: -5, Hi: 5}, iac.Column{Feature: f, Mask: true, Std: 1, Lo: -5, Hi: 5})
	}
	c, err := resolve(iac.TrainConfig{Hidden: []int{8, 4}})
	if err != nil {
		t.Fatal(err)
	}
	tr := newTrainer(cols, c, rand.New(rand.NewPCG(1, 0)))
	tr.init()
	m, err := iac.NewMLP(cols, tr.net, 100, iac.ModelInfo{})
	if err != nil {
		t.Fatal(err)
	}
	d := data(2, 2, 1)
	for i := range d.Profiles {
		if s := m.Slowdown(&d.Profiles[i], &d.Profiles[0]); !(s >= 1) {
			t.Errorf("Slowdown = %g", s)
		}
	}
	if most := 2 * int(iac.NumFeatures); len(cols) != most {
		t.Errorf("%d inputs, want the most there can be (%d)", len(cols), most)
	}
}
