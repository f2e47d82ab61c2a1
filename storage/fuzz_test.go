package storage_test

import (
	"testing"

	"github.com/chronos-timer/chronos/storage"
)

// FuzzOpen proves that recovery survives any bytes on a disk: a segment
// and a snapshot of arbitrary content make Open return an error or a
// log, never panic or hang, and a log it returns takes writes.
func FuzzOpen(f *testing.F) {
	disk := newDisk(9)
	l, _ := mustOpen(f, disk)
	var b storage.Batch
	b.Put(1, []byte("one"))
	b.Delete(2)
	b.PutMeta([]byte("meta"))
	l.Write(&b)
	snapshot(f, l, map[uint64]string{1: "one"})
	names, _ := disk.List()
	for _, name := range names {
		f.Add(name, disk.Bytes(name))
	}
	f.Fuzz(func(t *testing.T, name string, data []byte) {
		d := newDisk(1)
		d.Put(name, data)
		l, _, err := open(t, d)
		if err != nil {
			return
		}
		var b storage.Batch
		b.Put(3, []byte("three"))
		if err := l.Write(&b); err != nil {
			t.Fatalf("Write after Open of %q: %v", name, err)
		}
	})
}
