package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestJSONReport(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 15 models")
	}
	var out bytes.Buffer
	err := run([]string{"-profiles", "testdata/profiles.csv", "-pairs", "testdata/pairs.csv", "-json", "-folds", "3"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	for _, k := range []string{"mlp", "gbdt", "linear", "train_pairs", "test_pairs"} {
		if _, ok := got[k]; !ok {
			t.Errorf("JSON lacks %q:\n%s", k, out.String())
		}
	}
	mlp, _ := got["mlp"].(map[string]any)
	if _, ok := mlp["mape"].(float64); !ok {
		t.Errorf("mlp.mape missing: %v", got["mlp"])
	}
	if n := got["test_pairs"].(float64); n != 34 { // 20 pairs: 14 with two directions, 6 with one
		t.Errorf("test_pairs = %v, want every ordered pair (34)", n)
	}
}

func TestHoldoutTable(t *testing.T) {
	if testing.Short() {
		t.Skip("trains 3 models")
	}
	var out bytes.Buffer
	if err := run([]string{"-profiles", "testdata/profiles.csv", "-pairs", "testdata/pairs.csv", "-holdout", "resnet"}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"holdout resnet on testdata/profiles.csv", "mlp", "gbdt", "linear", "by victim family"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestErrors(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no files", nil, "-profiles and -pairs are required"},
		{"missing file", []string{"-profiles", "testdata/nope.csv", "-pairs", "testdata/pairs.csv"}, "nope.csv"},
		{"bad pair", []string{"-profiles", "testdata/profiles.csv", "-pairs", "testdata/bad_pairs.csv"}, `testdata/bad_pairs.csv:3:2 (b): profile "gpt-5"`},
		{"two modes", []string{"-profiles", "p", "-pairs", "q", "-lofo", "-holdout", "x"}, "exclude one another"},
		{"unknown family", []string{"-profiles", "testdata/profiles.csv", "-pairs", "testdata/pairs.csv", "-holdout", "gpt"}, `family "gpt" is not in`},
		{"half a test set", []string{"-profiles", "testdata/profiles.csv", "-pairs", "testdata/pairs.csv", "-test-pairs", "x"}, "go together"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := run(tc.args, &bytes.Buffer{})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}
