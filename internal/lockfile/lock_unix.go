//go:build unix

// Package lockfile takes an exclusive lock on a file, so that two
// processes never share what it guards (a pid file, a storage folder).
package lockfile

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// Lock opens path, creating it, and takes an exclusive lock on it without
// waiting; the lock lasts until the file is closed or the process ends.
// guards says what the lock protects, for the error when another process
// holds it.
func Lock(path, guards string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%s is locked: another process holds this %s", path, guards)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return f, nil
}
