//go:build !unix

package adapter

import (
	"fmt"
	"os"
)

// lockDir creates dir/lock; without flock a second adapter is not detected.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(dir+"/lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("adapter: %w", err)
	}
	return f, nil
}
