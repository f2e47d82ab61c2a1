package storage

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestLaterVersionIsRefused proves that a file of a later format version
// stops Open with an error naming both versions, and is not taken for
// corruption; one of this version opens.
func TestLaterVersionIsRefused(t *testing.T) {
	for _, v := range []uint16{Version, Version + 1} {
		dir, err := OpenDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		hdr := appendFrame(nil, func(b []byte) []byte {
			b = append(append(b, opHeader), magic...)
			b = binary.LittleEndian.AppendUint16(b, v)
			return binary.LittleEndian.AppendUint64(append(b, kindLog), 1)
		})
		f, _ := dir.Create(genName(segPrefix, 1))
		f.Write(hdr)
		f.Close()
		_, err = Open(dir, DefaultOptions(), func(uint64, []byte) error { return nil })
		switch {
		case v == Version && err != nil:
			t.Fatalf("Open of version %d: %v", v, err)
		case v > Version && (err == nil || errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), fmt.Sprintf("format version %d", v))):
			t.Fatalf("Open of version %d: %v, want an error naming it", v, err)
		}
		dir.Close()
	}
}

// TestDirHoldsOneProcess proves that a directory a Log is open on cannot
// be opened again until it is closed.
func TestDirHoldsOneProcess(t *testing.T) {
	path := t.TempDir()
	d, err := OpenDir(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDir(path); err == nil {
		t.Fatal("second OpenDir of a locked directory = nil, want an error")
	}
	d.Close()
	d2, err := OpenDir(path)
	if err != nil {
		t.Fatalf("OpenDir after Close: %v", err)
	}
	d2.Close()
}
