//go:build unix

package adapter

import (
	"fmt"
	"os"
	"syscall"
)

// lockDir takes an exclusive lock on dir/lock, so that two adapters never
// drive the same jobs from one journal. The kernel drops the lock when the
// process dies, so a crashed adapter never blocks its restart.
func lockDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(dir+"/lock", os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("adapter: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, fmt.Errorf("adapter: state dir %s is locked by another adapter (%v)", dir, err)
	}
	return f, nil
}
