// Package atomicfile replaces a file so that a reader sees the old one or
// the new one, never a part, even across a crash: the model files, profile
// stores, reports and journals of elastico are all written through it.
package atomicfile

import (
	"os"
	"path/filepath"
)

// Write writes data to a temporary file beside path, with permissions
// perm, syncs it, renames it over path and syncs the folder (where the
// system can: the data are safe in the file already). On an error the
// temporary file is removed and path is untouched.
func Write(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	fail := func(err error) error {
		tmp.Close()
		os.Remove(name)
		return err
	}
	if _, err := tmp.Write(data); err != nil {
		return fail(err)
	}
	if err := tmp.Chmod(perm); err != nil { // CreateTemp makes it private
		return fail(err)
	}
	if err := tmp.Sync(); err != nil {
		return fail(err)
	}
	if err := tmp.Close(); err != nil {
		os.Remove(name)
		return err
	}
	if err := os.Rename(name, path); err != nil {
		os.Remove(name)
		return err
	}
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
	return nil
}
