//go:build !unix

package storage

import "os"

// lockFile opens path, creating it. Without flock there is no lock: the
// operator must not start two nodes on one storage directory.
func lockFile(path string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
}
