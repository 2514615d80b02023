package iac_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/elastico/elastico/iac"
	"github.com/elastico/elastico/iac/internal/synthetic"
	"github.com/elastico/elastico/iac/train"
)

// trainQuick trains a small model on a synthetic dataset.
func trainQuick(t testing.TB, seed uint64) *iac.MLP {
	t.Helper()
	m, err := train.MLP(synthetic.Dataset(4, 4, 1).Samples(), synthetic.Quick, rand.New(rand.NewPCG(seed, 0)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// encoded is m's model file.
func encoded(t *testing.T, m *iac.MLP) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := iac.Encode(&b, m); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}
