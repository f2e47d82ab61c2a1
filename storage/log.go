package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Version is the format version this build writes into every file's
// header. It reads every version up to its own; a file of a later version
// stops Open with an error naming both (docs/design.md, "Durable timers").
const Version = 1

// File names: log-<gen>, snap-<gen>, gen as 16 hex digits so that names
// sort by generation; a snapshot is written as snap-<gen>.tmp and renamed
// once complete.
const (
	segPrefix  = "log-"
	snapPrefix = "snap-"
	tmpSuffix  = ".tmp"
)

// Entry and header payloads start with an op byte.
const (
	opPut    = 1 // op, key uint64 LE, value
	opDelete = 2 // op, key
	opHeader = 3 // op, magic, version uint16 LE, kind, gen uint64 LE
	opEnd    = 4 // op, count uint64 LE: the last frame of a snapshot
	opMeta   = 5 // op, value: the owner's own state, apart from the keys
)

const magic = "chronos\x00"

// File kinds in a header.
const (
	kindLog      = 'L'
	kindSnapshot = 'S'
)

// Options tunes a Log.
type Options struct {
	// SegmentBytes is the size past which the log goes on in a new
	// segment file.
	SegmentBytes int64
	// CompactBytes is the least log, written since the last snapshot,
	// worth writing a snapshot for (see Log.SnapshotDue).
	CompactBytes int64
}

// DefaultOptions are the production sizes.
func DefaultOptions() Options { return Options{SegmentBytes: 64 << 20, CompactBytes: 4 << 20} }

// ErrCorrupt is what Open wraps when a file's contents changed after they
// were written (a checksum or a length does not match, a snapshot is
// incomplete, a segment is missing): the log refuses to serve part of
// its state.
var ErrCorrupt = errors.New("storage: corrupt")

// Log is a write-ahead log of key-value entries with periodic snapshots:
// the latest value of each key is the value of its last entry in the
// segments written since the latest complete snapshot, else its value in
// that snapshot. A Log may be written from one goroutine while a snapshot
// is written from another.
type Log struct {
	fs   FS
	opts Options

	mu       sync.Mutex
	seg      File
	segGen   uint64
	segBytes int64
	// logBytes is the bytes of every segment since the snapshot's;
	// segs the length of each, by generation.
	logBytes  int64
	segs      []segSize
	snapGen   uint64
	snapBytes int64
	// snapping is set while a snapshot is being written.
	snapping bool
	// err, once set, fails every write: a sync that failed leaves what
	// reached the disk unknown, and retrying it may report success for
	// data that was dropped.
	err error
	// meta is the latest meta value written or recovered (see
	// Batch.PutMeta); every snapshot carries it.
	meta []byte
}

// Meta returns the latest meta value the log holds (see Batch.PutMeta),
// nil when none was ever written.
func (l *Log) Meta() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.meta
}

// Open recovers the log in fs and calls apply with each entry in the
// order written (val is nil for a delete; it is valid during the call
// only), then opens a new segment for what is written next. It returns an
// error wrapping ErrCorrupt when a file is corrupt, or an error of apply.
// A torn end of the last segment (a write cut short by a crash) is cut
// off and never applied.
func Open(fs FS, opts Options, apply func(key uint64, val []byte) error) (*Log, error) {
	names, err := fs.List()
	if err != nil {
		return nil, fmt.Errorf("storage: list: %w", err)
	}
	var segs, snaps []uint64
	for _, name := range names {
		switch {
		case strings.HasSuffix(name, tmpSuffix):
			// A snapshot a crash interrupted: never used.
			if err := fs.Remove(name); err != nil {
				return nil, fmt.Errorf("storage: %w", err)
			}
		case strings.HasPrefix(name, segPrefix):
			if g, ok := parseGen(name, segPrefix); ok {
				segs = append(segs, g)
			}
		case strings.HasPrefix(name, snapPrefix):
			if g, ok := parseGen(name, snapPrefix); ok {
				snaps = append(snaps, g)
			}
		}
	}
	l := &Log{fs: fs, opts: opts}
	if len(snaps) > 0 {
		l.snapGen = slices.Max(snaps)
		if l.snapBytes, l.meta, err = readSnapshot(fs, l.snapGen, apply); err != nil {
			return nil, err
		}
	}
	last, err := l.replay(segs, apply)
	if err != nil {
		return nil, err
	}
	if err := l.startSegment(last + 1); err != nil {
		return nil, err
	}
	l.removeBefore(l.snapGen)
	return l, nil
}

// replay applies the segments from the snapshot's on, which must all be
// there, and returns the last segment's generation (the snapshot's, or 0,
// when there is none).
func (l *Log) replay(segs []uint64, apply func(uint64, []byte) error) (uint64, error) {
	first := max(l.snapGen, 1)
	segs = slices.DeleteFunc(slices.Sorted(slices.Values(segs)), func(g uint64) bool { return g < first })
	last := l.snapGen
	for i, g := range segs {
		if g != first+uint64(i) {
			return 0, fmt.Errorf("%w: segment %s is missing (found %s after it)", ErrCorrupt, genName(segPrefix, first+uint64(i)), genName(segPrefix, g))
		}
		n, err := l.replaySegment(g, i == len(segs)-1, apply)
		if err != nil {
			return 0, err
		}
		if n == 0 {
			// The last segment, begun by a crash too early to hold
			// its header: it held nothing, and is begun again.
			if err := l.fs.Remove(genName(segPrefix, g)); err != nil {
				return 0, fmt.Errorf("storage: %w", err)
			}
			break
		}
		l.segs = append(l.segs, segSize{g, n})
		l.logBytes += n
		last = g
	}
	if l.snapGen > 0 && len(segs) == 0 {
		return 0, fmt.Errorf("%w: segment %s of snapshot %s is missing", ErrCorrupt, genName(segPrefix, l.snapGen), genName(snapPrefix, l.snapGen))
	}
	return last, nil
}

// replaySegment applies one segment and returns its length. The last one
// may end torn: it is cut to its last whole frame, and its length is 0
// when not even its header was whole.
func (l *Log) replaySegment(gen uint64, last bool, apply func(uint64, []byte) error) (int64, error) {
	name := genName(segPrefix, gen)
	r, err := l.fs.Open(name)
	if err != nil {
		return 0, fmt.Errorf("storage: %w", err)
	}
	defer r.Close()
	header := false
	end, err := readFrames(r, func(p []byte) error {
		if !header {
			header = true
			return checkHeader(p, kindLog, gen)
		}
		switch {
		case p[0] == opPut && len(p) >= 9:
			return apply(binary.LittleEndian.Uint64(p[1:]), p[9:])
		case p[0] == opDelete && len(p) == 9:
			return apply(binary.LittleEndian.Uint64(p[1:]), nil)
		case p[0] == opMeta:
			l.meta = bytes.Clone(p[1:])
			return nil
		}
		return fmt.Errorf("%w: entry of op %d and %d bytes", ErrCorrupt, p[0], len(p))
	})
	switch {
	case errors.Is(err, errTorn) && last:
		if err := l.fs.Truncate(name, end); err != nil {
			return 0, fmt.Errorf("storage: cut the torn end of %s: %w", name, err)
		}
		return end, nil
	case err != nil:
		return 0, fileError(name, err)
	case !header && !last:
		return 0, fmt.Errorf("%w: %s is empty", ErrCorrupt, name)
	}
	return end, nil
}

// readSnapshot applies snapshot gen, which must be whole, and returns its
// length and the meta value it holds.
func readSnapshot(fs FS, gen uint64, apply func(uint64, []byte) error) (int64, []byte, error) {
	name := genName(snapPrefix, gen)
	r, err := fs.Open(name)
	if err != nil {
		return 0, nil, fmt.Errorf("storage: %w", err)
	}
	var meta []byte
	defer r.Close()
	header, ended := false, false
	var count uint64
	n, err := readFrames(r, func(p []byte) error {
		switch {
		case !header:
			header = true
			return checkHeader(p, kindSnapshot, gen)
		case ended:
			return fmt.Errorf("%w: a frame after the end", ErrCorrupt)
		case p[0] == opPut && len(p) >= 9:
			count++
			return apply(binary.LittleEndian.Uint64(p[1:]), p[9:])
		case p[0] == opMeta:
			meta = bytes.Clone(p[1:])
			return nil
		case p[0] == opEnd && len(p) == 9:
			ended = true
			if c := binary.LittleEndian.Uint64(p[1:]); c != count {
				return fmt.Errorf("%w: the end counts %d entries, the snapshot holds %d", ErrCorrupt, c, count)
			}
			return nil
		}
		return fmt.Errorf("%w: entry of op %d and %d bytes", ErrCorrupt, p[0], len(p))
	})
	if err == nil && !ended {
		err = fmt.Errorf("%w: no end frame", ErrCorrupt)
	}
	if err != nil {
		return 0, nil, fileError(name, err)
	}
	return n, meta, nil
}

// fileError names the file an error of reading it came from; a torn or
// corrupt frame is corruption there (a snapshot is synced before it is
// named, a segment before the next is started).
func fileError(name string, err error) error {
	if errors.Is(err, errTorn) || errors.Is(err, errCorrupt) {
		if !errors.Is(err, ErrCorrupt) {
			err = fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
	}
	return fmt.Errorf("storage: %s: %w", name, err)
}

func checkHeader(p []byte, kind byte, gen uint64) error {
	if len(p) != 1+len(magic)+2+1+8 || p[0] != opHeader || string(p[1:1+len(magic)]) != magic {
		return fmt.Errorf("%w: not a chronos storage file", ErrCorrupt)
	}
	p = p[1+len(magic):]
	if v := binary.LittleEndian.Uint16(p); v > Version || v == 0 {
		return fmt.Errorf("storage: format version %d, this build reads versions 1 to %d: run a build at least as new as the one that wrote it", v, Version)
	}
	if p[2] != kind || binary.LittleEndian.Uint64(p[3:]) != gen {
		return fmt.Errorf("%w: header of kind %q generation %d, want %q %d", ErrCorrupt, p[2], binary.LittleEndian.Uint64(p[3:]), kind, gen)
	}
	return nil
}

func appendHeader(b []byte, kind byte, gen uint64) []byte {
	return appendFrame(b, func(b []byte) []byte {
		b = append(b, opHeader)
		b = append(b, magic...)
		b = binary.LittleEndian.AppendUint16(b, Version)
		b = append(b, kind)
		return binary.LittleEndian.AppendUint64(b, gen)
	})
}

func genName(prefix string, gen uint64) string { return fmt.Sprintf("%s%016x", prefix, gen) }

func parseGen(name, prefix string) (uint64, bool) {
	s := strings.TrimPrefix(name, prefix)
	if len(s) != 16 {
		return 0, false
	}
	g, err := strconv.ParseUint(s, 16, 64)
	return g, err == nil && g > 0
}

// segSize is the length of one segment.
type segSize struct {
	gen   uint64
	bytes int64
}

// bytesBefore drops the segments before gen from segs and returns their
// length.
func (l *Log) bytesBefore(gen uint64) int64 {
	var n int64
	keep := l.segs[:0]
	for _, s := range l.segs {
		if s.gen < gen {
			n += s.bytes
		} else {
			keep = append(keep, s)
		}
	}
	l.segs = keep
	return n
}

// removeBefore removes the segments and snapshots before generation gen,
// which the snapshot of gen stands for. A file left behind (an error, or
// a crash before the removal reached the disk) is removed by the next
// Open: recovery never reads it.
func (l *Log) removeBefore(gen uint64) {
	names, err := l.fs.List()
	if err != nil {
		return
	}
	for _, name := range names {
		g, ok := parseGen(name, segPrefix)
		if !ok {
			g, ok = parseGen(name, snapPrefix)
		}
		if ok && g < gen {
			_ = l.fs.Remove(name)
		}
	}
}

// Close closes the segment being written. It does not sync: what a Write
// returned for is durable already.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = errors.New("storage: closed")
	}
	if l.seg == nil {
		return nil
	}
	err := l.seg.Close()
	l.seg = nil
	return err
}
