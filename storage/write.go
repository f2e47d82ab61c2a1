package storage

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// Batch is entries to append, built apart from the log (the production
// adapter builds it under the node's lock while the log writes the one
// before) and written by Log.Write with one sync.
type Batch struct {
	b    []byte
	n    int
	meta []byte
}

// Put adds an entry setting key to val (at most MaxValueBytes).
func (b *Batch) Put(key uint64, val []byte) {
	if len(val) > MaxValueBytes {
		panic(fmt.Sprintf("storage: value of %d bytes for key %d, over MaxValueBytes", len(val), key))
	}
	b.b = appendFrame(b.b, func(p []byte) []byte {
		p = append(p, opPut)
		p = binary.LittleEndian.AppendUint64(p, key)
		return append(p, val...)
	})
	b.n++
}

// Delete adds an entry deleting key.
func (b *Batch) Delete(key uint64) {
	b.b = appendFrame(b.b, func(p []byte) []byte {
		return binary.LittleEndian.AppendUint64(append(p, opDelete), key)
	})
	b.n++
}

// PutMeta adds an entry setting the meta value: the owner's own state
// beside its keys (a node's cluster views), which Log.Meta returns after
// recovery and every snapshot carries.
func (b *Batch) PutMeta(val []byte) {
	b.b = appendFrame(b.b, func(p []byte) []byte { return append(append(p, opMeta), val...) })
	b.meta = bytes.Clone(val)
	b.n++
}

// Append adds o's entries after b's.
func (b *Batch) Append(o *Batch) {
	b.b = append(b.b, o.b...)
	b.n += o.n
	if o.meta != nil {
		b.meta = o.meta
	}
}

// Len returns the number of entries in the batch; Bytes its size.
func (b *Batch) Len() int   { return b.n }
func (b *Batch) Bytes() int { return len(b.b) }

// Reset empties the batch, keeping its memory.
func (b *Batch) Reset() { b.b, b.n, b.meta = b.b[:0], 0, nil }

// Write appends the batch to the log and syncs it: once it returns nil,
// the entries survive a crash. A failed write (a full disk) is cut off
// the segment again and returned, and the log goes on; a failed sync
// fails this and every later write (see Log.err).
func (l *Log) Write(b *Batch) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	if len(b.b) == 0 {
		return nil
	}
	if _, err := l.seg.Write(b.b); err != nil {
		return l.undoWrite(err)
	}
	if err := l.seg.Sync(); err != nil {
		l.err = fmt.Errorf("storage: sync %s: %w", genName(segPrefix, l.segGen), err)
		return l.err
	}
	l.segBytes += int64(len(b.b))
	l.logBytes += int64(len(b.b))
	l.segs[len(l.segs)-1].bytes = l.segBytes
	if b.meta != nil {
		l.meta = b.meta
	}
	if l.segBytes >= l.opts.SegmentBytes {
		// A full disk leaves the log on the segment it has.
		_ = l.rotate()
	}
	return nil
}

// undoWrite cuts what a failed write left of a batch off the segment, so
// that no torn frame sits before the next one; if it cannot, the log
// fails for good.
func (l *Log) undoWrite(err error) error {
	err = fmt.Errorf("storage: write %s: %w", genName(segPrefix, l.segGen), err)
	name := genName(segPrefix, l.segGen)
	if terr := l.fs.Truncate(name, l.segBytes); terr != nil {
		l.err = errors.Join(err, fmt.Errorf("storage: cut %s back: %w", name, terr))
		return l.err
	}
	return err
}

// startSegment creates segment gen, durable and empty but for its header,
// and makes it the one written.
func (l *Log) startSegment(gen uint64) error {
	name := genName(segPrefix, gen)
	f, err := l.fs.Create(name)
	if err != nil {
		return fmt.Errorf("storage: create %s: %w", name, err)
	}
	hdr := appendHeader(nil, kindLog, gen)
	_, err = f.Write(hdr)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = l.fs.SyncDir()
	}
	if err != nil {
		f.Close()
		_ = l.fs.Remove(name)
		return fmt.Errorf("storage: start %s: %w", name, err)
	}
	if l.seg != nil {
		l.seg.Close()
	}
	l.seg, l.segGen, l.segBytes = f, gen, int64(len(hdr))
	l.logBytes += int64(len(hdr))
	l.segs = append(l.segs, segSize{gen, l.segBytes})
	return nil
}

// rotate goes on in a new segment; what was written is synced already.
func (l *Log) rotate() error { return l.startSegment(l.segGen + 1) }

// SnapshotDue reports whether a snapshot is worth writing: the log since
// the last one has reached half its size (and Options.CompactBytes), so
// that the files hold at most about 1.5 times the live data, and 2.5
// times while a snapshot is written.
func (l *Log) SnapshotDue() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.err == nil && !l.snapping && l.logBytes >= max(l.opts.CompactBytes, l.snapBytes/2)
}

// Sizes returns the bytes of the latest snapshot and of the log written
// since.
func (l *Log) Sizes() (snapshot, log int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.snapBytes, l.logBytes
}

// Snapshot is a snapshot being written: the caller puts the latest value
// of every live key, read after BeginSnapshot, then commits it.
type Snapshot struct {
	l     *Log
	gen   uint64
	f     File
	w     *bufio.Writer
	count uint64
	bytes int64
	buf   []byte
	err   error
}

// BeginSnapshot starts the log on a new segment and a snapshot to stand
// for every segment before it. Values put in the snapshot need only be as
// new as they were when BeginSnapshot returned: a key changed since has
// its entry in the new segment, and replay applies it over the snapshot.
func (l *Log) BeginSnapshot() (*Snapshot, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return nil, l.err
	}
	if l.snapping {
		return nil, errors.New("storage: a snapshot is being written already")
	}
	if err := l.rotate(); err != nil {
		return nil, err
	}
	gen := l.segGen
	name := genName(snapPrefix, gen) + tmpSuffix
	f, err := l.fs.Create(name)
	if err != nil {
		return nil, fmt.Errorf("storage: create %s: %w", name, err)
	}
	l.snapping = true
	s := &Snapshot{l: l, gen: gen, f: f, w: bufio.NewWriterSize(f, 1<<16)}
	s.write(appendHeader(nil, kindSnapshot, gen))
	return s, nil
}

// Put adds key's value to the snapshot.
func (s *Snapshot) Put(key uint64, val []byte) {
	s.buf = appendFrame(s.buf[:0], func(p []byte) []byte {
		p = append(p, opPut)
		p = binary.LittleEndian.AppendUint64(p, key)
		return append(p, val...)
	})
	s.write(s.buf)
	s.count++
}

func (s *Snapshot) write(p []byte) {
	if s.err != nil {
		return
	}
	_, s.err = s.w.Write(p)
	s.bytes += int64(len(p))
}

// Commit ends the snapshot, makes it durable and the one recovery starts
// from, and removes the files it stands for. On an error the snapshot is
// dropped and the log goes on as before. The snapshot carries the meta
// value the log holds now, which is at least as new as at its beginning.
func (s *Snapshot) Commit() error {
	if meta := s.l.Meta(); meta != nil {
		s.write(appendFrame(nil, func(p []byte) []byte { return append(append(p, opMeta), meta...) }))
	}
	s.write(appendFrame(nil, func(p []byte) []byte {
		return binary.LittleEndian.AppendUint64(append(p, opEnd), s.count)
	}))
	if s.err == nil {
		s.err = s.w.Flush()
	}
	if s.err == nil {
		s.err = s.f.Sync()
	}
	if err := s.f.Close(); s.err == nil {
		s.err = err
	}
	tmp, name := genName(snapPrefix, s.gen)+tmpSuffix, genName(snapPrefix, s.gen)
	if s.err == nil {
		s.err = s.l.fs.Rename(tmp, name)
	}
	if s.err == nil {
		s.err = s.l.fs.SyncDir()
	}
	l := s.l
	l.mu.Lock()
	defer l.mu.Unlock()
	l.snapping = false
	if s.err != nil {
		_ = l.fs.Remove(tmp)
		return fmt.Errorf("storage: snapshot %s: %w", name, s.err)
	}
	l.snapBytes = s.bytes
	l.logBytes -= l.bytesBefore(s.gen)
	l.snapGen = s.gen
	l.removeBefore(s.gen)
	return nil
}

// Abort drops the snapshot.
func (s *Snapshot) Abort() {
	s.f.Close()
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	s.l.snapping = false
	_ = s.l.fs.Remove(genName(snapPrefix, s.gen) + tmpSuffix)
}
