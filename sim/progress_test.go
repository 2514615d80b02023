package sim

import (
	"os"
	"path/filepath"
	"testing"
)

func TestTerminalProgressQuietOffTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if p := TerminalProgress(f, "x"); p != nil {
		t.Error("a progress callback for a plain file; want nil (quiet)")
	}
	if p := TerminalProgress(nil, "x"); p != nil {
		t.Error("a progress callback for no file")
	}
}
