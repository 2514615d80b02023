package train

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/elastico/elastico/iac"
)

// EvalConfig configures an evaluation: the three models' settings and the
// number of folds. Zero values mean the defaults.
type EvalConfig struct {
	Folds  int // cross-validation folds; default 5
	MLP    iac.TrainConfig
	GBDT   iac.GBDTConfig
	Linear iac.LinearConfig
}

// Metrics are one model's errors on a test set. MAPE is the mean of
// |Ŝ − S| / S over test samples, in percent, with S the measured slowdown;
// SpeedMAPE is the same on the speed 1/S (the paper's "decay"); R2 is the
// coefficient of determination of Ŝ against S. A metric that cannot be
// computed is NaN: R2 of a test set whose slowdowns are all equal (it has
// no variance to explain), every metric of an empty one. In JSON a NaN is
// null (JSON has no NaN), and null reads back as NaN.
type Metrics struct {
	MAPE      float64 `json:"mape"`
	R2        float64 `json:"r2"`
	SpeedMAPE float64 `json:"speed_mape"`
	N         int     `json:"n"`
}

// metricsJSON is Metrics as JSON carries it: nil for a metric that cannot
// be computed.
type metricsJSON struct {
	MAPE      *float64 `json:"mape"`
	R2        *float64 `json:"r2"`
	SpeedMAPE *float64 `json:"speed_mape"`
	N         int      `json:"n"`
}

// MarshalJSON writes a metric that cannot be computed (NaN, or ±Inf) as
// null.
func (m Metrics) MarshalJSON() ([]byte, error) {
	orNull := func(x float64) *float64 {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return nil
		}
		return &x
	}
	return json.Marshal(metricsJSON{MAPE: orNull(m.MAPE), R2: orNull(m.R2), SpeedMAPE: orNull(m.SpeedMAPE), N: m.N})
}

// UnmarshalJSON reads null as NaN.
func (m *Metrics) UnmarshalJSON(b []byte) error {
	var j metricsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	orNaN := func(p *float64) float64 {
		if p == nil {
			return math.NaN()
		}
		return *p
	}
	*m = Metrics{MAPE: orNaN(j.MAPE), R2: orNaN(j.R2), SpeedMAPE: orNaN(j.SpeedMAPE), N: j.N}
	return nil
}

// FamilyMetrics are the three models' errors on the test samples whose
// victim belongs to Family.
type FamilyMetrics struct {
	Family string  `json:"family"`
	MLP    Metrics `json:"mlp"`
	GBDT   Metrics `json:"gbdt"`
	Linear Metrics `json:"linear"`
}

// Report is one evaluation's result.
type Report struct {
	// Mode says what was tested: "5-fold cross-validation", "holdout
	// ResNet-50", "train gavel-v100, test gavel-p100".
	Mode   string  `json:"mode"`
	MLP    Metrics `json:"mlp"`
	GBDT   Metrics `json:"gbdt"`
	Linear Metrics `json:"linear"`
	// TrainPairs and TestPairs count ordered pairs (samples). Under
	// cross-validation TrainPairs is the mean training set of a fold and
	// TestPairs every sample (each is tested once).
	TrainPairs int             `json:"train_pairs"`
	TestPairs  int             `json:"test_pairs"`
	PerFamily  []FamilyMetrics `json:"per_family,omitempty"`
}

type outcome struct {
	s                  *iac.Sample
	mlp, gbdt, linearP float64
}

// fitAll trains the three models on train and predicts test. Each model's
// random source is derived from rng in a fixed order.
func fitAll(train, test []iac.Sample, cfg EvalConfig, rng *rand.Rand) ([]outcome, error) {
	mlpRng := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
	gbdtRng := rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))
	mlp, err := MLP(train, cfg.MLP, mlpRng)
	if err != nil {
		return nil, err
	}
	gb, err := iac.TrainGBDT(train, cfg.GBDT, gbdtRng)
	if err != nil {
		return nil, err
	}
	lin, err := iac.TrainLinear(train, cfg.Linear)
	if err != nil {
		return nil, err
	}
	out := make([]outcome, len(test))
	for i := range test {
		v := &test[i].Features
		out[i] = outcome{s: &test[i], mlp: mlp.Predict(v), gbdt: gb.Predict(v), linearP: lin.Predict(v)}
	}
	return out, nil
}

// metrics computes MAPE, speed MAPE and R² of pick over outs.
func metrics(outs []outcome, pick func(*outcome) float64) Metrics {
	n := len(outs)
	if n == 0 {
		return Metrics{}
	}
	var ape, sape, mean float64
	for i := range outs {
		y, p := outs[i].s.Slowdown, pick(&outs[i])
		ape += math.Abs(p-y) / y
		sape += math.Abs(1/p-1/y) * y
		mean += y
	}
	mean /= float64(n)
	var ssRes, ssTot float64
	for i := range outs {
		y, p := outs[i].s.Slowdown, pick(&outs[i])
		ssRes += (y - p) * (y - p)
		ssTot += (y - mean) * (y - mean)
	}
	r2 := math.NaN()
	if ssTot > 0 {
		r2 = 1 - ssRes/ssTot
	}
	return Metrics{MAPE: 100 * ape / float64(n), R2: r2, SpeedMAPE: 100 * sape / float64(n), N: n}
}

func report(mode string, outs []outcome, trainPairs int) *Report {
	r := &Report{
		Mode:       mode,
		MLP:        metrics(outs, func(o *outcome) float64 { return o.mlp }),
		GBDT:       metrics(outs, func(o *outcome) float64 { return o.gbdt }),
		Linear:     metrics(outs, func(o *outcome) float64 { return o.linearP }),
		TrainPairs: trainPairs,
		TestPairs:  len(outs),
	}
	byFam := map[string][]outcome{}
	for _, o := range outs {
		byFam[o.s.Victim] = append(byFam[o.s.Victim], o)
	}
	fams := make([]string, 0, len(byFam))
	for f := range byFam {
		fams = append(fams, f)
	}
	slices.Sort(fams)
	for _, f := range fams {
		os := byFam[f]
		r.PerFamily = append(r.PerFamily, FamilyMetrics{
			Family: f,
			MLP:    metrics(os, func(o *outcome) float64 { return o.mlp }),
			GBDT:   metrics(os, func(o *outcome) float64 { return o.gbdt }),
			Linear: metrics(os, func(o *outcome) float64 { return o.linearP }),
		})
	}
	return r
}

func (c EvalConfig) folds() (int, error) {
	switch {
	case c.Folds == 0:
		return 5, nil
	case c.Folds < 2:
		return 0, fmt.Errorf("train: EvalConfig.Folds is %d, want ≥ 2", c.Folds)
	}
	return c.Folds, nil
}

// CrossValidate runs k-fold cross-validation of the MLP and both baselines
// on the same folds. Folds split the measured pairs (both directions of a
// co-located run stay in one fold), shuffled by rng.
func CrossValidate(d *iac.Dataset, cfg EvalConfig, rng *rand.Rand) (*Report, error) {
	if rng == nil {
		return nil, errors.New("train: CrossValidate: nil *rand.Rand")
	}
	k, err := cfg.folds()
	if err != nil {
		return nil, err
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	samples := d.Samples()
	groups := make([]int, len(d.Pairs))
	for i := range groups {
		groups[i] = i
	}
	rng.Shuffle(len(groups), func(i, j int) { groups[i], groups[j] = groups[j], groups[i] })
	if len(groups) < k {
		return nil, fmt.Errorf("%w: %d pairs for %d folds", iac.ErrTooFewSamples, len(groups), k)
	}
	fold := make([]int, len(d.Pairs))
	for pos, g := range groups {
		fold[g] = pos % k
	}
	var all []outcome
	trainTotal := 0
	for f := 0; f < k; f++ {
		var train, test []iac.Sample
		for _, s := range samples {
			if fold[s.Group] == f {
				test = append(test, s)
			} else {
				train = append(train, s)
			}
		}
		outs, err := fitAll(train, test, cfg, rng)
		if err != nil {
			return nil, fmt.Errorf("train: fold %d of %d: %w", f+1, k, err)
		}
		all = append(all, outs...)
		trainTotal += len(train)
	}
	return report(fmt.Sprintf("%d-fold cross-validation on %s", k, d.Name), all, trainTotal/k), nil
}

// Holdout trains on every pair that touches none of families and tests on
// every pair that touches one of them: how the models do on a model family
// they never saw.
func Holdout(d *iac.Dataset, families []string, cfg EvalConfig, rng *rand.Rand) (*Report, error) {
	if rng == nil {
		return nil, errors.New("train: Holdout: nil *rand.Rand")
	}
	if len(families) == 0 {
		return nil, errors.New("train: Holdout: no families")
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	known := d.Families()
	held := map[string]bool{}
	for _, f := range families {
		if !slices.Contains(known, f) {
			return nil, fmt.Errorf("train: Holdout: family %q is not in %s (families: %s)", f, d.Name, strings.Join(known, ", "))
		}
		held[f] = true
	}
	var train, test []iac.Sample
	for _, s := range d.Samples() {
		if held[s.Victim] || held[s.Aggressor] {
			test = append(test, s)
		} else {
			train = append(train, s)
		}
	}
	outs, err := fitAll(train, test, cfg, rng)
	if err != nil {
		return nil, fmt.Errorf("train: holdout %s: %w", strings.Join(families, ","), err)
	}
	return report("holdout "+strings.Join(families, ",")+" on "+d.Name, outs, len(train)), nil
}

// LeaveOneFamilyOut runs Holdout for each family of d in turn.
func LeaveOneFamilyOut(d *iac.Dataset, cfg EvalConfig, rng *rand.Rand) ([]*Report, error) {
	var out []*Report
	for _, f := range d.Families() {
		r, err := Holdout(d, []string{f}, cfg, rng)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Transfer trains on every pair of train and tests on every pair of test:
// e.g. measured on one GPU type, used on another.
func Transfer(train, test *iac.Dataset, cfg EvalConfig, rng *rand.Rand) (*Report, error) {
	if rng == nil {
		return nil, errors.New("train: Transfer: nil *rand.Rand")
	}
	if err := train.Validate(); err != nil {
		return nil, err
	}
	if err := test.Validate(); err != nil {
		return nil, err
	}
	tr := train.Samples()
	outs, err := fitAll(tr, test.Samples(), cfg, rng)
	if err != nil {
		return nil, fmt.Errorf("train: train %s, test %s: %w", train.Name, test.Name, err)
	}
	return report("train "+train.Name+", test "+test.Name, outs, len(tr)), nil
}
