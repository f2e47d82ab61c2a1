package lifecycle

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"

	"github.com/chronos-timer/chronos/internal/lockfile"
)

// PIDFile is the --pidfile of a running node, and the lock that keeps a
// second process from taking it.
type PIDFile struct {
	path string
	lock *os.File
}

// CreatePIDFile locks path.lock, as the original does, for as long as the
// process lives (a second process given the same pid file stops here),
// then writes the process ID to path atomically: into a temporary file
// in the same folder, renamed over path. An empty path creates nothing.
func CreatePIDFile(path string) (*PIDFile, error) {
	if path == "" {
		return nil, nil
	}
	lock, err := lockfile.Lock(path+".lock", "pid file")
	if err != nil {
		return nil, fmt.Errorf("server: pid file %s: %w", path, err)
	}
	if err := writeAtomic(path, pidText()); err != nil {
		lock.Close()
		return nil, fmt.Errorf("server: pid file: %w", err)
	}
	return &PIDFile{path: path, lock: lock}, nil
}

// pidText is what the pid file holds: the process ID and a newline.
func pidText() []byte { return []byte(strconv.Itoa(os.Getpid()) + "\n") }

// writeAtomic writes data to path through a temporary file renamed over
// it, so that a reader sees the old content or the new, never a part.
func writeAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Chmod(0o644)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if closeErr := tmp.Close(); err == nil {
		err = closeErr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// Remove deletes the pid file if it still names this process (another
// may have taken it over), then releases the lock; the lock file stays,
// as the original leaves it. A nil PIDFile does nothing.
func (p *PIDFile) Remove(log *slog.Logger) {
	if p == nil {
		return
	}
	defer p.lock.Close()
	data, err := os.ReadFile(p.path)
	if err != nil || !bytes.Equal(data, pidText()) {
		log.Warn("pid file no longer names this process; left in place", "path", p.path, "err", err)
		return
	}
	if err := os.Remove(p.path); err != nil {
		log.Warn("pid file not removed", "path", p.path, "err", err)
	}
}
