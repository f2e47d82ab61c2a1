//go:build !unix

// Package lockfile takes an exclusive lock on a file, so that two
// processes never share what it guards (a pid file, a storage folder).
package lockfile

import "os"

// Lock opens path, creating it. Without flock there is no lock: the
// operator must not start two processes on what it guards.
func Lock(path, _ string) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE, 0o644)
}
