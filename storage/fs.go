package storage

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/chronos-timer/chronos/internal/lockfile"
)

// FS is the one directory a Log keeps its files in. The production one is
// Dir (files of the operating system); the simulator's disk (package sim)
// models what a crash keeps of what was written, and its faults. Every
// name is a plain file name, never a path.
type FS interface {
	// List returns the names of the directory's files, sorted.
	List() ([]string, error)
	// Open opens a file for reading.
	Open(name string) (io.ReadCloser, error)
	// Create creates a file, or empties one that exists, for appending.
	// Its directory entry is durable only after SyncDir.
	Create(name string) (File, error)
	// Truncate cuts a file to size bytes and makes the cut durable.
	Truncate(name string, size int64) error
	// Rename renames a file, replacing any file of the new name; durable
	// after SyncDir.
	Rename(from, to string) error
	// Remove removes a file; durable after SyncDir.
	Remove(name string) error
	// SyncDir makes the directory's entries (creates, renames, removes)
	// durable.
	SyncDir() error
}

// File is a file open for appending.
type File interface {
	// Write appends p. What is written is durable only after Sync.
	Write(p []byte) (int, error)
	// Sync makes everything written so far durable.
	Sync() error
	// Close closes the file (it does not sync it).
	Close() error
}

// Dir is an FS over a directory of the operating system's file system.
// Sync is fsync(2) on the file, SyncDir on the directory.
type Dir struct {
	path string
	lock *os.File
}

var _ FS = (*Dir)(nil)

// lockName is the file a Dir holds a lock on while it is open, so that
// two processes never write one log.
const lockName = "LOCK"

// OpenDir opens the directory at path as an FS, creating it if need be,
// and locks it against a second process (where the system has flock).
// Close releases the lock.
func OpenDir(path string) (*Dir, error) {
	if err := os.MkdirAll(path, 0o755); err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	lock, err := lockfile.Lock(filepath.Join(path, lockName), "storage folder")
	if err != nil {
		return nil, fmt.Errorf("storage: %w", err)
	}
	return &Dir{path: path, lock: lock}, nil
}

// Path returns the directory's path.
func (d *Dir) Path() string { return d.path }

// Close releases the directory's lock.
func (d *Dir) Close() error { return d.lock.Close() }

// List returns the directory's file names, sorted, the lock file left out.
func (d *Dir) List() ([]string, error) {
	entries, err := os.ReadDir(d.path)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if e.Type().IsRegular() && e.Name() != lockName {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names, nil
}

// Open opens a file for reading.
func (d *Dir) Open(name string) (io.ReadCloser, error) { return os.Open(d.join(name)) }

// Create creates or empties a file for appending.
func (d *Dir) Create(name string) (File, error) {
	return os.OpenFile(d.join(name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o644)
}

// Truncate cuts a file to size and syncs it.
func (d *Dir) Truncate(name string, size int64) error {
	f, err := os.OpenFile(d.join(name), os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	err = f.Truncate(size)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// Rename renames a file.
func (d *Dir) Rename(from, to string) error { return os.Rename(d.join(from), d.join(to)) }

// Remove removes a file.
func (d *Dir) Remove(name string) error { return os.Remove(d.join(name)) }

// SyncDir fsyncs the directory.
func (d *Dir) SyncDir() error {
	f, err := os.Open(d.path)
	if err != nil {
		return err
	}
	return errors.Join(f.Sync(), f.Close())
}

func (d *Dir) join(name string) string { return filepath.Join(d.path, name) }
