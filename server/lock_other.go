//go:build !unix

package server

import "os"

// lockFile opens path, creating it. Without flock there is no lock: a
// second process given the same pid file is stopped only by the address
// it cannot bind.
func lockFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
}
