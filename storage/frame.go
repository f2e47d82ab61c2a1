package storage

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
)

// A file is a sequence of frames:
//
//	[0:4]   n, the payload's length, uint32 little-endian
//	[4:8]   CRC-32C (Castagnoli) of bytes [0:4]
//	[8:12]  CRC-32C of bytes [0:4] and of the payload
//	[12:12+n] the payload
//
// The length has a checksum of its own, so that a flipped length bit is
// caught as corruption instead of passing for a frame cut short by a crash
// (see errTorn).
const (
	frameHeader = 12
	// MaxValueBytes bounds a value (a node's encoded record): a record
	// holds a callback URI and opaque data of at most node.MaxBodyBytes
	// (1 MiB) together, and the record it replaced once more.
	MaxValueBytes = 4 << 20
	// maxPayload bounds a frame's payload: an entry is an op, a key and a
	// value.
	maxPayload = 1 + 8 + MaxValueBytes
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// appendFrame appends a frame of the payload that fill appends to b.
func appendFrame(b []byte, fill func([]byte) []byte) []byte {
	start := len(b)
	b = append(b, make([]byte, frameHeader)...)
	b = fill(b)
	n := len(b) - start - frameHeader
	binary.LittleEndian.PutUint32(b[start:], uint32(n))
	crc := crc32.Update(0, castagnoli, b[start:start+4])
	binary.LittleEndian.PutUint32(b[start+4:], crc)
	binary.LittleEndian.PutUint32(b[start+8:], crc32.Update(crc, castagnoli, b[start+frameHeader:]))
	return b
}

// errTorn is a file that ends inside a frame, or in zeros where a frame
// should start: the last write before a crash was cut short. Only the end
// of the last log segment may be torn; it was never acknowledged.
var errTorn = errors.New("torn final frame")

// errCorrupt marks a frame whose checksum does not match, or whose length
// is impossible: the data on disk changed after it was written.
var errCorrupt = errors.New("corrupt frame")

// readFrames calls fn with the payload of every frame in r, in order, and
// returns the offset just past the last whole, valid frame. It returns nil
// at a clean end, errTorn (with that offset) at a torn one, an error
// wrapping errCorrupt at a bad checksum, or fn's error. The payload is
// valid during the call only.
func readFrames(r io.Reader, fn func(payload []byte) error) (int64, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var hdr [frameHeader]byte
	var buf []byte
	var off int64
	for {
		k, err := io.ReadFull(br, hdr[:])
		switch {
		case err == io.EOF:
			return off, nil
		case err == io.ErrUnexpectedEOF:
			return off, tornOrCorrupt(br, hdr[:k], off)
		case err != nil:
			return off, err
		}
		lenCRC := crc32.Update(0, castagnoli, hdr[:4])
		if lenCRC != binary.LittleEndian.Uint32(hdr[4:]) {
			return off, tornOrCorrupt(br, hdr[:], off)
		}
		n := binary.LittleEndian.Uint32(hdr[:4])
		if n == 0 || n > maxPayload {
			return off, fmt.Errorf("%w at offset %d: length %d not in [1, %d]", errCorrupt, off, n, maxPayload)
		}
		if cap(buf) < int(n) {
			buf = make([]byte, n)
		}
		buf = buf[:n]
		if _, err := io.ReadFull(br, buf); err == io.ErrUnexpectedEOF || err == io.EOF {
			// The length is sound: the write was cut short.
			return off, errTorn
		} else if err != nil {
			return off, err
		}
		if crc32.Update(lenCRC, castagnoli, buf) != binary.LittleEndian.Uint32(hdr[8:]) {
			return off, fmt.Errorf("%w at offset %d: checksum mismatch", errCorrupt, off)
		}
		if err := fn(buf); err != nil {
			return off, err
		}
		off += frameHeader + int64(n)
	}
}

// tornOrCorrupt judges what follows the last good frame when no whole
// frame starts there: zeros to the end (a file extended before its data
// reached the disk) or a short remnant is torn; anything else is corrupt.
func tornOrCorrupt(br *bufio.Reader, head []byte, off int64) error {
	rest, err := io.ReadAll(br)
	if err != nil {
		return err
	}
	if len(head) < frameHeader || isZero(head) && isZero(rest) {
		return errTorn
	}
	return fmt.Errorf("%w at offset %d: the length's checksum does not match", errCorrupt, off)
}

func isZero(b []byte) bool { return len(bytes.Trim(b, "\x00")) == 0 }
