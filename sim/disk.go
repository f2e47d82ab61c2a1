package sim

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/chronos-timer/chronos/checker"
	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/storage"
)

// Disk is a simulated disk holding one machine's storage directory, with
// a seeded fault model after TigerBeetle's VOPR and FoundationDB's
// simulation. What a crash keeps:
//
//   - a file's bytes up to its last Sync, and of the bytes written after
//     it any prefix (torn: it may end inside a frame), sometimes as zeros
//     (the file's length reached the disk, its data did not);
//   - the directory as of its last SyncDir: a file created, renamed or
//     removed since may be back as it was.
//
// And its faults, each switched on and off by a plan step: a full disk
// (a write lands a prefix and fails), a lying disk (Sync and SyncDir
// report success and persist nothing) and a corrupted block (one bit
// flipped in data already synced, which the log's checksums must catch).
type Disk struct {
	rand *rand.Rand
	// files is the directory as the node sees it; durable as a crash
	// leaves it. They share the files they both name.
	files   map[string]*diskFile
	durable map[string]*diskFile
	// Full fails writes; Lying makes syncs lie.
	Full, Lying bool
	// Lies counts the syncs that lied.
	Lies int
	// corrupted is set once Corrupt flipped a bit.
	corrupted bool
}

// faulted reports whether a fault may have left the disk corrupt: a bit
// flipped, or a sync that lied (a segment the log had moved on from may
// then end torn).
func (d *Disk) faulted() bool { return d.corrupted || d.Lies > 0 }

type diskFile struct {
	data   []byte
	synced int // the prefix of data a crash keeps for certain
}

var _ storage.FS = (*Disk)(nil)

// errNoSpace is a full disk's answer to a write.
var errNoSpace = errors.New("no space left on device")

// NewDisk returns an empty disk drawing its faults from r.
func NewDisk(r *rand.Rand) *Disk {
	return &Disk{rand: r, files: map[string]*diskFile{}, durable: map[string]*diskFile{}}
}

// List returns the file names, sorted.
func (d *Disk) List() ([]string, error) { return slices.Sorted(maps.Keys(d.files)), nil }

// Open returns a reader of a copy of the file.
func (d *Disk) Open(name string) (io.ReadCloser, error) {
	f, ok := d.files[name]
	if !ok {
		return nil, fmt.Errorf("open %s: no such file", name)
	}
	return io.NopCloser(bytes.NewReader(slices.Clone(f.data))), nil
}

// Create creates or empties a file.
func (d *Disk) Create(name string) (storage.File, error) {
	f, ok := d.files[name]
	if !ok {
		f = &diskFile{}
		d.files[name] = f
	}
	f.data, f.synced = f.data[:0], 0
	return &diskHandle{d: d, f: f}, nil
}

// Truncate cuts a file, durably.
func (d *Disk) Truncate(name string, size int64) error {
	f, ok := d.files[name]
	if !ok || size > int64(len(f.data)) {
		return fmt.Errorf("truncate %s to %d: no such file or beyond its end", name, size)
	}
	f.data = f.data[:size]
	f.synced = min(f.synced, int(size))
	return nil
}

// Rename renames a file.
func (d *Disk) Rename(from, to string) error {
	f, ok := d.files[from]
	if !ok {
		return fmt.Errorf("rename %s: no such file", from)
	}
	d.files[to] = f
	delete(d.files, from)
	return nil
}

// Remove removes a file.
func (d *Disk) Remove(name string) error {
	if _, ok := d.files[name]; !ok {
		return fmt.Errorf("remove %s: no such file", name)
	}
	delete(d.files, name)
	return nil
}

// SyncDir makes the directory durable, unless the disk lies.
func (d *Disk) SyncDir() error {
	if d.Lying {
		d.Lies++
		return nil
	}
	d.durable = maps.Clone(d.files)
	return nil
}

// diskHandle is a file open for appending; it writes the file it was
// opened on, whatever its name is now.
type diskHandle struct {
	d      *Disk
	f      *diskFile
	closed bool
}

func (h *diskHandle) Write(p []byte) (int, error) {
	if h.closed {
		return 0, errors.New("write: file closed")
	}
	if h.d.Full {
		k := h.d.rand.IntN(len(p) + 1)
		h.f.data = append(h.f.data, p[:k]...)
		return k, errNoSpace
	}
	h.f.data = append(h.f.data, p...)
	return len(p), nil
}

func (h *diskHandle) Sync() error {
	if h.closed {
		return errors.New("sync: file closed")
	}
	if h.d.Lying {
		h.d.Lies++
		return nil
	}
	h.f.synced = len(h.f.data)
	return nil
}

func (h *diskHandle) Close() error {
	h.closed = true
	return nil
}

// Crash leaves the disk as a power cut would (see Disk): the directory as
// of its last SyncDir, each file its synced bytes and a drawn prefix of
// the rest, sometimes zeroed. Faults in force end with the crash.
func (d *Disk) Crash() {
	d.files = maps.Clone(d.durable)
	for _, name := range slices.Sorted(maps.Keys(d.files)) {
		f := d.files[name]
		keep := f.synced + d.rand.IntN(len(f.data)-f.synced+1)
		if keep > f.synced && d.rand.IntN(4) == 0 {
			clear(f.data[f.synced:keep])
		}
		f.data = f.data[:keep]
		f.synced = keep
	}
	d.Full, d.Lying = false, false
}

// Corrupt flips one bit of synced data in a file drawn from those that
// have some, and says where; "" when no file has synced data.
func (d *Disk) Corrupt() string {
	var names []string
	for _, name := range slices.Sorted(maps.Keys(d.files)) {
		if d.files[name].synced > 0 {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return ""
	}
	name := names[d.rand.IntN(len(names))]
	f := d.files[name]
	at := d.rand.IntN(f.synced)
	f.data[at] ^= 1 << d.rand.IntN(8)
	d.corrupted = true
	return fmt.Sprintf("%s@%d", name, at)
}

// Flip flips one bit of a file, for tests of corruption.
func (d *Disk) Flip(name string, at, bit int) { d.files[name].data[at] ^= 1 << bit }

// Clone returns a copy of the disk, files and all, drawing from the same
// source.
func (d *Disk) Clone() *Disk {
	c := &Disk{rand: d.rand, files: map[string]*diskFile{}, durable: map[string]*diskFile{}, Full: d.Full, Lying: d.Lying}
	copies := map[*diskFile]*diskFile{}
	clone := func(f *diskFile) *diskFile {
		if copies[f] == nil {
			copies[f] = &diskFile{data: slices.Clone(f.data), synced: f.synced}
		}
		return copies[f]
	}
	for name, f := range d.files {
		c.files[name] = clone(f)
	}
	for name, f := range d.durable {
		c.durable[name] = clone(f)
	}
	return c
}

// Bytes returns a copy of a file's contents, for tests.
func (d *Disk) Bytes(name string) []byte { return slices.Clone(d.files[name].data) }

// Put makes a file of data, synced and in the durable directory, for
// tests that start from given bytes.
func (d *Disk) Put(name string, data []byte) {
	f := &diskFile{data: slices.Clone(data), synced: len(data)}
	d.files[name], d.durable[name] = f, f
}

// Used returns the bytes of the files the directory names.
func (d *Disk) Used() int {
	n := 0
	for _, f := range d.files {
		n += len(f.data)
	}
	return n
}

// Wipe empties the disk, as an operator does for a node whose storage is
// corrupt: it starts empty and its peers repopulate it.
func (d *Disk) Wipe() {
	d.files, d.durable = map[string]*diskFile{}, map[string]*diskFile{}
	d.Full, d.Lying, d.Lies, d.corrupted = false, false, 0, false
}

// diskSyncTime is how long a simulated fsync takes: barriers that arrive
// meanwhile share the next one (group commit, as the production
// adapter's).
const diskSyncTime = 2 * time.Millisecond

// simStorage is a node's Storage on a simulated disk: the storage package's
// log, driven on the node's clock, with group commit.
type simStorage struct {
	w       *world
	m       *machine
	log     *storage.Log
	batch   storage.Batch
	waiting []func(error)
	armed   bool
	// retrying is set while a batch that failed waits to be tried again.
	retrying bool
}

// storageRetry is how long a batch the disk refused waits before it is
// written again.
const storageRetry = time.Second

var _ node.Storage = (*simStorage)(nil)

func (s *simStorage) Put(id uint64, rec []byte) { s.batch.Put(id, rec) }
func (s *simStorage) Delete(id uint64)          { s.batch.Delete(id) }
func (s *simStorage) PutMeta(rec []byte)        { s.batch.PutMeta(rec) }

// Sync joins the next write of the batch, diskSyncTime from the first
// barrier waiting for it.
func (s *simStorage) Sync(done func(error)) {
	s.waiting = append(s.waiting, done)
	if !s.armed {
		s.armed = true
		s.m.clock.AfterFunc(diskSyncTime, s.commit)
	}
}

// commit writes the batch with one sync, answers the barriers that waited
// for it, and writes a snapshot when the log has grown enough. A batch a
// full disk refused stays queued, ahead of what comes next, and is tried
// again after retryAfter: the node has moved on, and its records must
// still reach the disk.
func (s *simStorage) commit() {
	s.armed = false
	err := s.log.Write(&s.batch)
	if err == nil {
		s.batch.Reset()
	} else if !s.retrying {
		s.retrying = true
		s.m.clock.AfterFunc(storageRetry, func() {
			s.retrying = false
			s.Sync(func(error) {})
		})
	}
	waiting := s.waiting
	s.waiting = nil
	for _, done := range waiting {
		done(err)
	}
	if err == nil && s.log.SnapshotDue() && s.m.node != nil {
		s.snapshot()
	}
}

// snapshot writes a snapshot of the node's records at once: the node
// waits for nothing meanwhile, as it does not in production, where the
// snapshot is written beside the log.
func (s *simStorage) snapshot() {
	snap, err := s.log.BeginSnapshot()
	if err != nil {
		return
	}
	for cur, done := (node.SnapshotCursor{}), false; !done; {
		cur, done = s.m.node.Snapshot(cur, 1000, snap.Put)
	}
	if err := snap.Commit(); err != nil {
		s.w.tr.note("%s: snapshot failed: %v", s.m.addr, err)
	}
}

// simLogOptions are small sizes, so that runs rotate segments and write
// snapshots.
var simLogOptions = storage.Options{SegmentBytes: 16 << 10, CompactBytes: 8 << 10}

// recovered is one entry the storage recovered.
type recovered struct {
	id  uint64
	rec []byte
}

// openStorage opens the machine's storage and returns it with the entries
// recovered, to restore into the node once it is built. A corrupt disk is
// refused, as the production node refuses to start on one; the simulated
// operator then wipes it (checker.DiskWiped) and the node starts empty,
// to be repopulated by its peers. A disk no fault touched since the last
// boot is never corrupt: if it is, the log lost or damaged what it wrote
// (a sync skipped, a segment removed too early), and that is a violation
// ("DISK").
func (w *world) openStorage(m *machine) (*simStorage, []recovered) {
	var got []recovered
	open := func() (*storage.Log, error) {
		got = nil
		return storage.Open(m.disk, simLogOptions, func(id uint64, rec []byte) error {
			got = append(got, recovered{id, bytes.Clone(rec)})
			return nil
		})
	}
	log, err := open()
	if errors.Is(err, errNoSpace) {
		// A node cannot start on a full disk (its log cannot begin a
		// segment), as the production node refuses to; the simulated
		// operator frees space and starts it again. A plan's disk-ok
		// step does that while the node runs, and is skipped for a node
		// that is down or out at its time, so a node brought back later
		// meets the full disk here. Nothing synced is lost.
		w.tr.note("%s: %v; space freed", m.addr, err)
		m.disk.Full = false
		w.fault(checker.DiskOK, []string{m.addr}, nil, "space freed to start")
		log, err = open()
	}
	if errors.Is(err, storage.ErrCorrupt) && !m.disk.faulted() {
		w.apiErrs = append(w.apiErrs, checker.Violation{Guarantee: "DISK", At: w.loop.Now(),
			Message: fmt.Sprintf("%s: storage found corrupt with no disk fault since its last boot: %v", m.addr, err)})
	}
	if errors.Is(err, storage.ErrCorrupt) {
		w.tr.note("%s: %v; disk wiped", m.addr, err)
		w.fault(checker.DiskWiped, []string{m.addr}, nil, err.Error())
		m.disk.Wipe()
		got = nil
		log, err = storage.Open(m.disk, simLogOptions, func(uint64, []byte) error { return nil })
	}
	if err != nil {
		panic(fmt.Sprintf("sim: %s: storage: %v", m.addr, err))
	}
	m.disk.Lies, m.disk.corrupted = 0, false
	return &simStorage{w: w, m: m, log: log}, got
}

// restore hands the node the entries and the state its storage
// recovered.
func (s *simStorage) restore(nd *node.Node, entries []recovered) {
	for _, e := range entries {
		if err := nd.Restore(e.id, e.rec); err != nil {
			panic(fmt.Sprintf("sim: restore: %v", err))
		}
	}
	if err := nd.RestoreMeta(s.log.Meta()); err != nil {
		panic(fmt.Sprintf("sim: restore: %v", err))
	}
}

// diskFault carries out a disk fault step on a machine.
func (w *world) diskFault(s Step) {
	m := w.machine(s.Side[0])
	if m.disk == nil || m.crashed || m.out {
		return
	}
	switch s.Op {
	case OpDiskFull:
		m.disk.Full = true
		w.fault(checker.DiskFull, []string{m.addr}, nil, "")
	case OpDiskLie:
		m.disk.Lying = true
		w.fault(checker.DiskLie, []string{m.addr}, nil, "")
	case OpDiskOK:
		m.disk.Full, m.disk.Lying = false, false
		w.fault(checker.DiskOK, []string{m.addr}, nil, "")
	case OpDiskCorrupt:
		if at := m.disk.Corrupt(); at != "" {
			w.fault(checker.DiskCorrupt, []string{m.addr}, nil, at)
		}
	}
}
