package storage_test

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/chronos-timer/chronos/sim"
	"github.com/chronos-timer/chronos/storage"
)

// small sizes, so that short tests rotate segments and write snapshots.
var small = storage.Options{SegmentBytes: 512, CompactBytes: 256}

// tb is what the helpers need of a test: a testing.T or a rapid.T.
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
}

// open opens the log on fs and returns it with the state it recovered.
func open(t tb, fs storage.FS) (*storage.Log, map[uint64]string, error) {
	t.Helper()
	state := map[uint64]string{}
	l, err := storage.Open(fs, small, func(k uint64, v []byte) error {
		if v == nil {
			delete(state, k)
		} else {
			state[k] = string(v)
		}
		return nil
	})
	return l, state, err
}

func mustOpen(t tb, fs storage.FS) (*storage.Log, map[uint64]string) {
	t.Helper()
	l, state, err := open(t, fs)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	return l, state
}

// snapshot writes a snapshot of state into l.
func snapshot(t tb, l *storage.Log, state map[uint64]string) {
	t.Helper()
	s, err := l.BeginSnapshot()
	if err != nil {
		t.Fatalf("BeginSnapshot: %v", err)
	}
	for _, k := range slices.Sorted(maps.Keys(state)) {
		s.Put(k, []byte(state[k]))
	}
	if err := s.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
}

func newDisk(seed uint64) *sim.Disk { return sim.NewDisk(rand.New(rand.NewPCG(seed, 1))) }

// TestCrashesKeepEveryWrite proves, against a map as the model, that what
// Write returned for survives any number of crashes and snapshots (some
// abandoned, torn, by the crash), and nothing else appears: after each
// crash the log recovers exactly the model. Every write here is synced
// before the crash, so no segment ends torn: TestWritesAfterATornTailSurvive
// tears one.
func TestCrashesKeepEveryWrite(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		disk := newDisk(rapid.Uint64().Draw(rt, "disk"))
		l, got := mustOpen(rt, disk)
		if len(got) > 0 {
			rt.Fatalf("a new disk recovered %v, want nothing", got)
		}
		model := map[uint64]string{}
		var b storage.Batch
		for step := range rapid.IntRange(1, 60).Draw(rt, "steps") {
			switch rapid.IntRange(0, 9).Draw(rt, "op") {
			case 0: // a crash, in the middle of whatever was under way
				if rapid.Bool().Draw(rt, "mid-snapshot") {
					if s, err := l.BeginSnapshot(); err == nil {
						s.Put(1, []byte("half a snapshot"))
					}
				}
				disk.Crash()
				l, got = mustOpen(rt, disk)
				if !maps.Equal(got, model) {
					rt.Fatalf("step %d: recovered %v, want %v", step, got, model)
				}
				b.Reset()
			case 1:
				if l.SnapshotDue() {
					snapshot(rt, l, model)
				}
			default:
				b.Reset()
				for range rapid.IntRange(1, 4).Draw(rt, "entries") {
					k := rapid.Uint64Range(1, 8).Draw(rt, "key")
					if rapid.IntRange(0, 3).Draw(rt, "delete") == 0 {
						b.Delete(k)
						delete(model, k)
						continue
					}
					v := strings.Repeat(fmt.Sprint(step), rapid.IntRange(1, 40).Draw(rt, "len"))
					b.Put(k, []byte(v))
					model[k] = v
				}
				if err := l.Write(&b); err != nil {
					rt.Fatalf("Write: %v", err)
				}
			}
		}
	})
}

// TestEveryBitFlipIsCaught proves that corruption is refused, never served
// in part: flipping any one bit of any file of a log (with segments and a
// snapshot) makes Open fail with ErrCorrupt, or, where the flip hit the
// torn-able end of the last segment, recover a prefix of what was written.
func TestEveryBitFlipIsCaught(t *testing.T) {
	disk := newDisk(1)
	l, _ := mustOpen(t, disk)
	model := map[uint64]string{}
	var b storage.Batch
	for i := range 30 {
		b.Reset()
		k := uint64(i % 7)
		model[k] = fmt.Sprintf("value %d", i)
		b.Put(k, []byte(model[k]))
		if err := l.Write(&b); err != nil {
			t.Fatal(err)
		}
		if i == 20 {
			snapshot(t, l, model)
		}
	}
	names, _ := disk.List()
	for _, name := range names {
		r, _ := disk.Open(name)
		var buf bytes.Buffer
		buf.ReadFrom(r)
		for at := range buf.Len() {
			for bit := range 8 {
				c := disk.Clone()
				c.Flip(name, at, bit)
				_, got, err := open(t, c)
				switch {
				case errors.Is(err, storage.ErrCorrupt):
				case err != nil:
					t.Fatalf("%s byte %d bit %d: Open: %v, want ErrCorrupt", name, at, bit, err)
				case !maps.Equal(got, model):
					t.Fatalf("%s byte %d bit %d: Open served %v, want an error or %v", name, at, bit, got, model)
				}
			}
		}
	}
}

// TestFullDiskFailsOnlyTheWrite proves that a write a full disk cut short
// fails, leaves nothing torn in the log, and that the log goes on once
// there is room: the failed batch is not recovered, the next one is.
func TestFullDiskFailsOnlyTheWrite(t *testing.T) {
	disk := newDisk(2)
	l, _ := mustOpen(t, disk)
	var b storage.Batch
	b.Put(1, []byte("kept"))
	if err := l.Write(&b); err != nil {
		t.Fatal(err)
	}
	disk.Full = true
	b.Reset()
	b.Put(2, []byte("no room for this one, which is long enough to be cut"))
	if err := l.Write(&b); err == nil {
		t.Fatal("Write on a full disk = nil, want an error")
	}
	disk.Full = false
	b.Reset()
	b.Put(3, []byte("room again"))
	if err := l.Write(&b); err != nil {
		t.Fatalf("Write once there is room: %v", err)
	}
	disk.Crash()
	_, got := mustOpen(t, disk)
	if want := map[uint64]string{1: "kept", 3: "room again"}; !maps.Equal(got, want) {
		t.Fatalf("recovered %v, want %v", got, want)
	}
}

// TestDiskUseIsBounded proves the bound of docs/design.md: with snapshots
// written when due, the files hold at most about 1.5 times the live data
// (plus the least log worth compacting) while one key after another is
// overwritten many times.
func TestDiskUseIsBounded(t *testing.T) {
	disk := newDisk(3)
	l, _ := mustOpen(t, disk)
	model := map[uint64]string{}
	var b storage.Batch
	live := func() int {
		n := 0
		for _, v := range model {
			n += len(v) + 8 + 13 // the value, its key, its frame
		}
		return n
	}
	for i := range 5000 {
		b.Reset()
		k := uint64(i % 50)
		model[k] = strings.Repeat("v", 20+i%30)
		b.Put(k, []byte(model[k]))
		if err := l.Write(&b); err != nil {
			t.Fatal(err)
		}
		if l.SnapshotDue() {
			snapshot(t, l, model)
		}
		if used, bound := disk.Used(), live()*3/2+int(small.CompactBytes)+int(small.SegmentBytes); used > bound {
			t.Fatalf("after %d writes: %d bytes on disk for %d live, over the bound %d", i+1, used, live(), bound)
		}
	}
}

// TestMetaSurvivesSnapshotsAndCrashes proves that the meta value written
// last is what Open recovers, whether it sits in the log or, once the
// segments that held it are gone, in a snapshot.
func TestMetaSurvivesSnapshotsAndCrashes(t *testing.T) {
	disk := newDisk(5)
	l, _ := mustOpen(t, disk)
	if m := l.Meta(); m != nil {
		t.Fatalf("a new log holds meta %q, want none", m)
	}
	var b storage.Batch
	b.PutMeta([]byte("views 1"))
	b.Put(1, []byte("one"))
	if err := l.Write(&b); err != nil {
		t.Fatal(err)
	}
	snapshot(t, l, map[uint64]string{1: "one"})
	disk.Crash()
	l, _ = mustOpen(t, disk)
	if m := string(l.Meta()); m != "views 1" {
		t.Fatalf("after a snapshot and a crash: meta %q, want %q", m, "views 1")
	}
	b.Reset()
	b.PutMeta([]byte("views 2"))
	if err := l.Write(&b); err != nil {
		t.Fatal(err)
	}
	disk.Crash()
	l, _ = mustOpen(t, disk)
	if m := string(l.Meta()); m != "views 2" {
		t.Fatalf("after a crash: meta %q, want %q", m, "views 2")
	}
}

// TestWritesAfterATornTailSurvive proves that recovery cuts a torn end
// off the last segment before writing after it: a crash that left only
// the first bytes of a frame, then a restart that writes more, then
// another restart recovers every write of both lives, and nothing of the
// torn frame. Were the torn bytes kept, the frames written after them
// would be read as part of the torn one, and lost or taken for
// corruption.
func TestWritesAfterATornTailSurvive(t *testing.T) {
	disk := newDisk(1)
	l, _ := mustOpen(t, disk)
	write := func(l *storage.Log, k uint64, v string) {
		t.Helper()
		var b storage.Batch
		b.Put(k, []byte(v))
		if err := l.Write(&b); err != nil {
			t.Fatalf("Write: %v", err)
		}
	}
	write(l, 1, "before")
	names, _ := disk.List()
	last := slices.MaxFunc(slices.DeleteFunc(names, func(n string) bool { return !strings.HasPrefix(n, "log-") }), strings.Compare)
	whole := disk.Bytes(last)
	write(l, 2, "torn")
	torn := disk.Bytes(last)
	if len(torn) <= len(whole)+3 {
		t.Fatalf("the second write took the segment from %d to %d bytes, want it in the same segment", len(whole), len(torn))
	}
	// A crash in the middle of the second write: three bytes of its frame.
	disk.Put(last, torn[:len(whole)+3])

	l, got := mustOpen(t, disk)
	if want := map[uint64]string{1: "before"}; !maps.Equal(got, want) {
		t.Fatalf("after the torn write: recovered %v, want %v", got, want)
	}
	write(l, 3, "after")
	disk.Crash()
	_, got = mustOpen(t, disk)
	if want := map[uint64]string{1: "before", 3: "after"}; !maps.Equal(got, want) {
		t.Fatalf("after a write following the torn one: recovered %v, want %v", got, want)
	}
}
