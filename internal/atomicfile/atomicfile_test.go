package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWriteReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "model.json")
	for _, tc := range []struct {
		data string
		perm os.FileMode
	}{{"old", 0o644}, {"new, longer", 0o600}} {
		if err := Write(path, []byte(tc.data), tc.perm); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != tc.data {
			t.Errorf("file holds %q, want %q", got, tc.data)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != tc.perm {
			t.Errorf("mode %v, want %v", fi.Mode().Perm(), tc.perm)
		}
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d entries in the folder, want only the file (no temporary left)", len(ents))
	}
}

func TestWriteFailsCleanly(t *testing.T) {
	dir := t.TempDir()
	// A folder where the file should be: the rename fails, the folder
	// stays, and no temporary file is left beside it.
	path := filepath.Join(dir, "taken")
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path, "x"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, []byte("data"), 0o644); err == nil {
		t.Fatal("Write over a non-empty folder succeeded")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("%d entries in the folder, want the folder alone", len(ents))
	}
	if err := Write(filepath.Join(dir, "missing", "f"), []byte("data"), 0o644); err == nil {
		t.Error("Write into a missing folder succeeded")
	}
}
