package iac_test

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/elastico/elastico/iac"
	"github.com/elastico/elastico/iac/internal/synthetic"
	"github.com/elastico/elastico/iac/train"
)

func TestModelFileRoundTrip(t *testing.T) {
	m := trainQuick(t, 1)
	b := encoded(t, m)
	back, err := iac.Decode(bytes.NewReader(b), "m.json")
	if err != nil {
		t.Fatal(err)
	}
	if again := encoded(t, back); !bytes.Equal(again, b) {
		t.Errorf("re-encoding a decoded model changed its bytes")
	}
	d := synthetic.Dataset(4, 4, 2)
	for i := range d.Profiles {
		for j := range d.Profiles {
			a, b := &d.Profiles[i], &d.Profiles[j]
			if x, y := m.Slowdown(a, b), back.Slowdown(a, b); math.Float64bits(x) != math.Float64bits(y) {
				t.Fatalf("pair %d,%d: %v before the file, %v after", i, j, x, y)
			}
		}
	}
	if back.Info().Config.Hidden[0] != 16 || back.Info().TrainSamples == 0 {
		t.Errorf("info did not survive: %+v", back.Info())
	}
}

func TestModelFileRefusesTruncated(t *testing.T) {
	b := encoded(t, trainQuick(t, 1))
	for n := 0; n < len(b)-1; n += 1 + n/50 { // every short prefix up to ~100 bytes, then sparser
		_, err := iac.Decode(bytes.NewReader(b[:n]), "short.json")
		if err == nil || !errors.Is(err, iac.ErrModelFile) || !strings.Contains(err.Error(), "short.json") {
			t.Fatalf("a %d-byte prefix of a %d-byte file: error %v, want ErrModelFile naming short.json", n, len(b), err)
		}
	}
	// The last byte is the newline: a file without it is complete.
	if _, err := iac.Decode(bytes.NewReader(b[:len(b)-1]), "x"); err != nil {
		t.Errorf("file without its final newline: %v", err)
	}
}

// tinyModel is a model small enough to corrupt every byte of its file.
func tinyModel(t *testing.T) *iac.MLP {
	t.Helper()
	m, err := train.MLP(synthetic.Dataset(2, 2, 1).Samples(), iac.TrainConfig{Hidden: []int{3, 2}, MaxEpochs: 5}, rand.New(rand.NewPCG(1, 0)))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestModelFileRefusesFlippedByte(t *testing.T) {
	b := encoded(t, tinyModel(t))
	for i := 0; i < len(b)-1; i++ { // every byte but the final newline
		c := bytes.Clone(b)
		c[i] ^= 0x04
		_, err := iac.Decode(bytes.NewReader(c), "flipped.json")
		if err == nil || !strings.Contains(err.Error(), "flipped.json") {
			t.Fatalf("byte %d (%q→%q) flipped: error %v, want one naming flipped.json", i, b[i], c[i], err)
		}
	}
}

func TestModelFileRefusesForeign(t *testing.T) {
	good := string(encoded(t, trainQuick(t, 1)))
	tests := []struct {
		name, in, wantErr string
	}{
		{"wrong version", strings.Replace(good, `"version":1`, `"version":2`, 1), "version 2, this library reads version 1"},
		{"wrong format", strings.Replace(good, iac.FileFormat, "something-else", 1), `format "something-else"`},
		{"checksum", strings.Replace(good, `"sha256":"`, `"sha256":"00`, 1), "checksum mismatch"},
		{"trailing data", good + "{}", "data after the model object"},
		{"not JSON", "hello", "invalid character"},
		{"empty", "", "truncated"},
		{"unknown field", strings.Replace(good, `{"format"`, `{"extra":1,"format"`, 1), "unknown field"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := iac.Decode(strings.NewReader(tc.in), "model.json")
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) || !strings.Contains(err.Error(), "model.json") {
				t.Errorf("error %v, want one naming model.json and containing %q", err, tc.wantErr)
			}
		})
	}
}

func TestWriteFileIsAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.json")
	m1, m2 := trainQuick(t, 1), trainQuick(t, 2)
	if err := iac.WriteFile(path, m1); err != nil {
		t.Fatal(err)
	}
	if err := iac.WriteFile(path, m2); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, encoded(t, m2)) {
		t.Errorf("the file does not hold the second model")
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only model.json (no temporary file left)", len(entries))
	}
	if back, err := iac.ReadFile(os.DirFS(dir), "model.json"); err != nil || back == nil {
		t.Errorf("ReadFile: %v", err)
	}
	if err := iac.WriteFile(filepath.Join(dir, "missing", "m.json"), m1); err == nil {
		t.Errorf("WriteFile into a missing directory succeeded")
	}
}
