package server

import (
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/storage"
)

// storageRetry is how long a batch the disk refused (full) waits before
// it is written again.
const storageRetry = time.Second

// snapshotChunk is how many records a snapshot takes from the node per
// turn of its lock, so that writes wait for no more than a chunk.
const snapshotChunk = 1000

// diskStorage is the node's Storage on a storage.Log: the node queues its
// changes under its lock, and one goroutine writes them, every barrier
// that arrived meanwhile sharing one sync (group commit). Snapshots are
// written beside the log by another goroutine, a chunk of records per
// turn of the node's lock.
type diskStorage struct {
	log    *storage.Log
	dir    *storage.Dir
	serial *Serial
	nd     *node.Node
	logger *slog.Logger
	// snapping is set while a snapshot is written; snaps waits for it.
	snapping atomic.Bool
	snaps    sync.WaitGroup

	mu sync.Mutex
	// queued are the changes not yet handed to the writer, waiting the
	// barriers that need them; failed is a batch the disk refused, written
	// again ahead of queued.
	queued  storage.Batch
	waiting []func(error)
	wake    chan struct{}
	closed  bool
	stopped chan struct{}
}

var _ node.Storage = (*diskStorage)(nil)

// storageFolder is the folder the node at addr keeps its storage in.
func storageFolder(dir, addr string) string {
	return filepath.Join(dir, strings.NewReplacer(":", "_", "[", "", "]", "").Replace(addr))
}

// openStorage opens (and locks) the node's storage folder; recover then
// hands the node what it holds.
func openStorage(folder string, serial *Serial, log *slog.Logger) (*diskStorage, error) {
	dir, err := storage.OpenDir(folder)
	if err != nil {
		return nil, err
	}
	return &diskStorage{dir: dir, serial: serial, logger: log, wake: make(chan struct{}, 1), stopped: make(chan struct{})}, nil
}

// recover hands nd every record the folder holds, under the node's lock
// and before the node serves anything, and starts the writer. A corrupt
// file stops the start with an error naming it and what to do.
func (s *diskStorage) recover(nd *node.Node) error {
	s.nd = nd
	start := time.Now()
	records := 0
	var err error
	s.serial.Do(func() {
		s.log, err = storage.Open(s.dir, storage.DefaultOptions(), func(id uint64, rec []byte) error {
			records++
			return nd.Restore(id, rec)
		})
		if err == nil {
			err = nd.RestoreMeta(s.log.Meta())
		}
	})
	if err != nil {
		s.dir.Close()
		if errors.Is(err, storage.ErrCorrupt) {
			return fmt.Errorf("server: storage in %s is corrupt, and the node will not serve part of it: %w "+
				"(move the folder aside and start the node empty: its peers give back the timers they hold; see docs/operations.md)", s.dir.Path(), err)
		}
		return fmt.Errorf("server: storage in %s: %w", s.dir.Path(), err)
	}
	snap, logBytes := s.log.Sizes()
	s.logger.Info("storage recovered", "folder", s.dir.Path(), "entries", records, "snapshot_bytes", snap, "log_bytes", logBytes,
		"took", time.Since(start).Round(time.Millisecond))
	go s.write()
	return nil
}

// Put queues a record change; called under the node's lock.
func (s *diskStorage) Put(id uint64, rec []byte) {
	s.mu.Lock()
	s.queued.Put(id, rec)
	s.mu.Unlock()
}

// Delete queues a record's removal; called under the node's lock.
func (s *diskStorage) Delete(id uint64) {
	s.mu.Lock()
	s.queued.Delete(id)
	s.mu.Unlock()
}

// PutMeta queues the node's own state; called under the node's lock.
func (s *diskStorage) PutMeta(rec []byte) {
	s.mu.Lock()
	s.queued.PutMeta(rec)
	s.mu.Unlock()
}

// Sync asks the writer for a barrier; done runs under the node's lock.
func (s *diskStorage) Sync(done func(error)) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		go s.serial.Do(func() { done(errors.New("storage: closed")) })
		return
	}
	s.waiting = append(s.waiting, done)
	s.mu.Unlock()
	s.poke()
}

func (s *diskStorage) poke() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// write is the writer: each round takes what was queued and the barriers
// that wait for it, writes it with one sync and answers them all under one
// turn of the node's lock. It returns once closed and drained.
func (s *diskStorage) write() {
	defer close(s.stopped)
	var batch, failed storage.Batch
	for range s.wake {
		s.mu.Lock()
		batch, s.queued = s.queued, batch
		s.queued.Reset()
		waiting := s.waiting
		s.waiting = nil
		closed := s.closed
		s.mu.Unlock()
		if failed.Len() > 0 {
			failed.Append(&batch)
			batch, failed = failed, batch
			failed.Reset()
		}
		err := s.log.Write(&batch)
		if err != nil {
			s.logger.Error("storage: write failed; answering the writes that wait for it with 503", "err", err, "entries", batch.Len())
			batch, failed = failed, batch
			time.AfterFunc(storageRetry, s.poke)
		}
		if len(waiting) > 0 {
			s.serial.Do(func() {
				for _, done := range waiting {
					done(err)
				}
			})
		}
		if closed {
			return
		}
		if err == nil && s.log.SnapshotDue() && s.snapping.CompareAndSwap(false, true) {
			s.snaps.Go(s.snapshot)
		}
	}
}

// snapshot writes a snapshot of the node's records, a chunk per turn of
// its lock, while the writer goes on with the log.
func (s *diskStorage) snapshot() {
	defer s.snapping.Store(false)
	start := time.Now()
	snap, err := s.log.BeginSnapshot()
	if err != nil {
		s.logger.Error("storage: snapshot not begun", "err", err)
		return
	}
	var cur node.SnapshotCursor
	for done := false; !done; {
		if !s.serial.Do(func() { cur, done = s.nd.Snapshot(cur, snapshotChunk, snap.Put) }) {
			snap.Abort()
			return
		}
	}
	if err := snap.Commit(); err != nil {
		s.logger.Error("storage: snapshot failed; the log goes on", "err", err)
		return
	}
	size, _ := s.log.Sizes()
	s.logger.Info("storage: snapshot written", "bytes", size, "took", time.Since(start).Round(time.Millisecond))
}

// Close writes what is queued, with one last sync, and closes the log:
// after a clean stop the node comes back with its progress too.
func (s *diskStorage) Close() error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.poke()
	<-s.stopped
	s.snaps.Wait()
	return errors.Join(s.log.Close(), s.dir.Close())
}
