package iac

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/elastico/elastico/internal/atomicfile"
)

// The model file: one JSON object
//
//	{"format":"elastico-iac-mlp","version":1,"sha256":"<hex>","model":{…}}
//
// where sha256 is the SHA-256 of the model object's bytes exactly as they
// appear in the file. A reader refuses a file whose format or version it
// does not know, whose checksum does not match, that is truncated, or that
// has anything after the object.
const (
	FileFormat  = "elastico-iac-mlp"
	FileVersion = 1
)

// ErrModelFile is wrapped by every error about a model file's content.
var ErrModelFile = errors.New("bad model file")

type fileEnvelope struct {
	Format  string          `json:"format"`
	Version int             `json:"version"`
	SHA256  string          `json:"sha256"`
	Model   json.RawMessage `json:"model"`
}

type fileModel struct {
	Info        ModelInfo   `json:"info"`
	Inputs      []fileInput `json:"inputs"`
	Layers      []fileLayer `json:"layers"`
	MaxSlowdown float64     `json:"max_slowdown"` // predictions are capped at it
}

type fileInput struct {
	Feature string  `json:"feature"`
	Mask    bool    `json:"mask,omitempty"`
	Mean    float64 `json:"mean"`
	Std     float64 `json:"std"`
	Lo      float64 `json:"lo"` // standardized range seen in training: inputs are clamped to it
	Hi      float64 `json:"hi"`
}

// fileLayer stores W input-major: W[k*Out+j] weighs input k into unit j.
type fileLayer struct {
	In  int       `json:"in"`
	Out int       `json:"out"`
	W   []float64 `json:"w"`
	B   []float64 `json:"b"`
}

// Encode writes m as a model file. Numbers are written in the shortest form
// that reads back to the same bits, so Decode(Encode(m)) predicts exactly
// as m does and encoding the same model twice gives the same bytes.
func Encode(w io.Writer, m *MLP) error {
	b, err := marshal(m)
	if err != nil {
		return err
	}
	if _, err := w.Write(b); err != nil {
		return fmt.Errorf("iac: writing model: %w", err)
	}
	return nil
}

func marshal(m *MLP) ([]byte, error) {
	fm := fileModel{Info: m.info, MaxSlowdown: m.maxSlowdown}
	for _, c := range m.cols {
		fm.Inputs = append(fm.Inputs, fileInput{Feature: c.Feature.String(), Mask: c.Mask, Mean: c.Mean, Std: c.Std, Lo: c.Lo, Hi: c.Hi})
	}
	for _, l := range m.layers {
		fm.Layers = append(fm.Layers, fileLayer{In: l.In, Out: l.Out, W: l.W, B: l.B})
	}
	body, err := json.Marshal(fm)
	if err != nil {
		return nil, fmt.Errorf("iac: encoding model: %w", err)
	}
	sum := sha256.Sum256(body)
	env, err := json.Marshal(fileEnvelope{Format: FileFormat, Version: FileVersion, SHA256: hex.EncodeToString(sum[:]), Model: body})
	if err != nil {
		return nil, fmt.Errorf("iac: encoding model: %w", err)
	}
	return append(env, '\n'), nil
}

// Decode reads a model file; name (the file's path) is named in every
// error.
func Decode(r io.Reader, name string) (*MLP, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("iac: model file %s: %w: %s", name, ErrModelFile, fmt.Sprintf(format, args...))
	}
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("iac: model file %s: %w", name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var env fileEnvelope
	if err := dec.Decode(&env); err != nil {
		if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
			return nil, bad("truncated (%d bytes)", len(data))
		}
		return nil, bad("%v", err)
	}
	if rest, _ := io.ReadAll(dec.Buffered()); len(bytes.TrimSpace(rest)) > 0 || dec.More() {
		return nil, bad("data after the model object")
	}
	if env.Format != FileFormat {
		return nil, bad("format %q, want %q", env.Format, FileFormat)
	}
	if env.Version != FileVersion {
		return nil, bad("version %d, this library reads version %d", env.Version, FileVersion)
	}
	sum := sha256.Sum256(env.Model)
	if got := hex.EncodeToString(sum[:]); got != env.SHA256 {
		return nil, bad("checksum mismatch (file says %.12s…, content hashes to %.12s…): corrupt", env.SHA256, got)
	}
	var fm fileModel
	mdec := json.NewDecoder(bytes.NewReader(env.Model))
	mdec.DisallowUnknownFields()
	if err := mdec.Decode(&fm); err != nil {
		return nil, bad("model: %v", err)
	}
	var (
		cols   []Column
		layers []Layer
	)
	for i, in := range fm.Inputs {
		f, ok := FeatureByName(in.Feature)
		if !ok {
			return nil, bad("input %d: unknown feature %q", i, in.Feature)
		}
		cols = append(cols, Column{Feature: f, Mask: in.Mask, Mean: in.Mean, Std: in.Std, Lo: in.Lo, Hi: in.Hi})
	}
	for _, l := range fm.Layers {
		layers = append(layers, Layer{In: l.In, Out: l.Out, W: l.W, B: l.B})
	}
	m := newMLP(cols, layers, fm.MaxSlowdown, fm.Info)
	if err := m.validate(); err != nil {
		return nil, bad("%v", err)
	}
	return m, nil
}

// ReadFile reads a model file from fsys (os.DirFS for a directory).
func ReadFile(fsys fs.FS, name string) (*MLP, error) {
	f, err := fsys.Open(name)
	if err != nil {
		return nil, fmt.Errorf("iac: %w", err)
	}
	defer f.Close()
	return Decode(f, name)
}

// WriteFile writes m to path atomically: to a temporary file in the same
// directory, synced, then renamed over path. A reader sees the old file or
// the new one, never a part.
func WriteFile(path string, m *MLP) error {
	b, err := marshal(m)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(path, b, 0o644); err != nil {
		return fmt.Errorf("iac: writing %s: %w", path, err)
	}
	return nil
}
