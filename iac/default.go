package iac

import (
	"bytes"
	_ "embed"
	"sync"
)

// The recipe of the embedded model: Gavel's P100 and K80 pairs
// (iac/gaveldata), DefaultTrainConfig, and rand.New(rand.NewPCG(DefaultSeed,
// 0)), trained by package iac/train. examples/iactrain runs it and checks
// that it reproduces the file.
const DefaultSeed = 1

// DefaultGPUs are the Gavel GPU models the embedded model is trained on. Not
// V100: a replay whose ground truth is Gavel's V100 pairs can then use
// Default without the predictor having seen the answers.
var DefaultGPUs = []string{"P100", "K80"}

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
