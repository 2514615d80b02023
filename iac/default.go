package iac

import (
	"bytes"
	_ "embed"
	"fmt"
	"math/rand/v2"
	"sync"
)

// The recipe of the embedded model: Gavel's P100 and K80 pairs
// (iac/gaveldata), DefaultTrainConfig, and rand.New(rand.NewPCG(DefaultSeed,
// 0)). examples/iactrain runs it and checks that it reproduces the file.
const DefaultSeed = 1

// DefaultGPUs are the Gavel GPU types the embedded model is trained on. Not
// V100: a replay whose ground truth is Gavel's V100 pairs can then use
// Default without the predictor having seen the answers.
var DefaultGPUs = []string{"p100", "k80"}

//go:embed models/default.json
var defaultModel []byte

const defaultModelName = "iac/models/default.json (embedded)"

var loadDefault = sync.OnceValues(func() (*MLP, error) {
	return Decode(bytes.NewReader(defaultModel), defaultModelName)
})

// Default returns the embedded model, trained on Gavel's measured P100 and
// K80 pairs (MIT; models/NOTICE). It is decoded once and shared: an MLP is
// immutable and safe for concurrent use.
func Default() (*MLP, error) { return loadDefault() }

// Fit trains an MLP on every measured pair of d: the one call that retrains
// the predictor on a user's own measurements (ReadDataset reads them). An
// empty cfg.Label becomes a description of d.
func Fit(d *Dataset, cfg TrainConfig, rng *rand.Rand) (*MLP, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	samples := d.Samples()
	if cfg.Label == "" {
		cfg.Label = fmt.Sprintf("%s: %d profiles, %d pairs, %d ordered samples", d.Name, len(d.Profiles), len(d.Pairs), len(samples))
	}
	return Train(samples, cfg, rng)
}
