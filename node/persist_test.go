package node

import (
	"bytes"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// memStorage is a Storage that keeps what is synced in a map, as a disk
// would keep it across a crash; changes queued and not yet synced are
// what a crash loses. Sync answers at once unless hold is set, when the
// test answers the barriers itself.
type memStorage struct {
	durable map[uint64][]byte
	queued  []memChange
	hold    bool
	held    []func(error)
	syncs   int
	meta    []byte
}

type memChange struct {
	id  uint64
	rec []byte
}

func newMemStorage() *memStorage { return &memStorage{durable: map[uint64][]byte{}} }

func (s *memStorage) Put(id uint64, rec []byte) { s.queued = append(s.queued, memChange{id, rec}) }
func (s *memStorage) Delete(id uint64)          { s.queued = append(s.queued, memChange{id, nil}) }
func (s *memStorage) PutMeta(rec []byte)        { s.meta = rec }

func (s *memStorage) Sync(done func(error)) {
	if s.hold {
		s.held = append(s.held, done)
		return
	}
	s.sync()
	done(nil)
}

func (s *memStorage) sync() {
	s.syncs++
	for _, c := range s.queued {
		if c.rec == nil {
			delete(s.durable, c.id)
		} else {
			s.durable[c.id] = c.rec
		}
	}
	s.queued = nil
}

// restore hands n every durable record, in ID order.
func (s *memStorage) restore(t testing.TB, n *Node) {
	t.Helper()
	ids := make([]uint64, 0, len(s.durable))
	for id := range s.durable {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		if err := n.Restore(id, s.durable[id]); err != nil {
			t.Fatalf("Restore: %v", err)
		}
	}
}

// TestRecordRoundTripsEveryField proves that AppendRecord and decodeRecord
// carry every field of a Timer but its place in the store and what the
// node heard of the other holders: each field is
// set in turn, by reflection, so that a field added to Timer or
// TimerExtra without a place in the record fails here.
func TestRecordRoundTripsEveryField(t *testing.T) {
	h := newHarness(t)
	// heard is what this node heard since it started:
	// never kept, a record loaded knows none.
	skip := map[string]bool{"due": true, "prev": true, "next": true, "slot": true, "ID": true, "heard": true}
	base := func() *Timer {
		return withParts(&Timer{ID: 77}, h.node.placement([]string{"a:1"}, nil), nil)
	}
	check := func(name string, t0 *Timer) {
		t.Helper()
		got, err := h.node.decodeRecord(t0.ID, AppendRecord(nil, t0))
		if err != nil {
			t.Fatalf("%s: decode: %v", name, err)
		}
		// Parts are compared by what they hold, not by the table
		// they were interned in.
		g, w := *got, *t0
		g.parts, w.parts = nil, nil
		if !reflect.DeepEqual(g, w) || !reflect.DeepEqual(got.key(), t0.key()) {
			t.Fatalf("%s: round trip gave %+v (extra %+v), want %+v (extra %+v)", name, got, got.Extra(), t0, t0.Extra())
		}
	}
	fields := reflect.TypeOf(Timer{})
	for i := range fields.NumField() {
		f := fields.Field(i)
		if skip[f.Name] {
			continue
		}
		if f.Name == "parts" {
			// Each of a record's parts, as each field.
			for _, part := range reflect.VisibleFields(reflect.TypeOf(partsKey{})) {
				t0 := base()
				k := t0.key()
				v := reflect.ValueOf(&k).Elem().FieldByIndex(part.Index)
				v = reflect.NewAt(v.Type(), v.Addr().UnsafePointer()).Elem()
				if !setSample(v, h.node) {
					t.Fatalf("part %s of type %s: no sample value; teach setSample (and AppendRecord) about it", part.Name, part.Type)
				}
				t0.setKey(k, nil)
				check(part.Name, t0)
			}
			continue
		}
		t0 := base()
		v := reflect.ValueOf(t0).Elem().Field(i)
		v = reflect.NewAt(v.Type(), v.Addr().UnsafePointer()).Elem()
		if f.Name == "interval" || f.Name == "repeatFor" {
			v.SetUint(wire.MaxTimingSeconds - 3) // whole seconds within the API's bound (Timer.setTiming)
		} else if !setSample(v, h.node) {
			t.Fatalf("field %s of type %s: no sample value; teach setSample (and AppendRecord) about it", f.Name, f.Type)
		}
		check(f.Name, t0)
	}
	extra := reflect.TypeOf(TimerExtra{})
	for i := range extra.NumField() {
		t0 := base()
		t0.putExtra(&TimerExtra{})
		if !setSample(reflect.ValueOf(t0.Extra()).Elem().Field(i), h.node) {
			t.Fatalf("field Extra.%s: no sample value", extra.Field(i).Name)
		}
		check("Extra."+extra.Field(i).Name, t0)
	}
}

// setSample sets v to a value other than its zero, reporting false for a
// type it does not know.
func setSample(v reflect.Value, n *Node) bool {
	switch v.Interface().(type) {
	case uint64:
		v.SetUint(1<<40 + 3)
	case int64:
		v.SetInt(-(1<<35 + 5))
	case time.Duration: // kept in whole milliseconds
		v.SetInt(int64(-(1<<35 + 5) * time.Millisecond))
	case uint32:
		v.SetUint(1<<31 + 7)
	case uint8, State:
		v.SetUint(2)
	case *Placement:
		lists := n.placement([]string{"10.0.0.1:7253", "10.0.0.2:7253"}, []string{"site1", "site2"})
		v.Set(reflect.ValueOf(n.shared.under(lists, 1<<40+3))) // the record's view with them
	case *string:
		v.Set(reflect.ValueOf(n.shared.host("http://cb.example:80")))
	case string:
		v.SetString("\x05/hookopaque")
	case *TimerExtra:
		v.Set(reflect.ValueOf(&TimerExtra{Missed: 3, Owed: 1}))
	case []wire.Tag:
		v.Set(reflect.ValueOf([]wire.Tag{{Type: "a", Count: 2}, {Type: "b", Count: 1}}))
	case []Progress:
		v.Set(reflect.ValueOf([]Progress{{Def: 9, Seq: 4, Start: 1e12, Interval: time.Second, RepeatFor: 5 * time.Second}, {Def: 3, Seq: 1, Start: -7}}))
	case *Timer:
		info := withParts(&Timer{ID: 77, Version: 5, Seq: 2}, n.placement([]string{"a:1"}, nil), nil)
		info.putExtra(&TimerExtra{Tags: []wire.Tag{{Type: "x", Count: 1}}})
		v.Set(reflect.ValueOf(info))
	default:
		return false
	}
	return true
}

// TestRestartPopsWhatIsLeft proves the restart duty end to end in one
// node: a timer created and answered is durable, a pop made is persisted
// lazily, and a node restored from what was synced pops the rest of the
// timer's pops, none of those before, even though nothing was synced
// after the pop but the lazy flush.
func TestRestartPopsWhatIsLeft(t *testing.T) {
	disk := newMemStorage()
	h := newHarness(t, func(c *Config) { c.Storage = disk })
	wid := h.create(timerJSON(10, 30, "http://cb/x", "data"))
	id := mustID(t, wid)
	if _, ok := disk.durable[id]; !ok {
		t.Fatalf("timer not durable once its create was answered; durable %d records", len(disk.durable))
	}
	h.clock.advance(10 * time.Second)
	if got := h.drainPops("http://cb/", 200); len(got) != 1 {
		t.Fatalf("pops by 10 s: %d, want 1", len(got))
	}
	h.clock.advance(persistLazily)

	// The machine restarts 5 s later, on its clock.
	h2 := restarted(t, h, disk, 5*time.Second)
	if st := h2.node.Stats(); st.Timers != 1 {
		t.Fatalf("restored node holds %d live timers, want 1", st.Timers)
	}
	h2.clock.advance(25 * time.Second)
	var seqs []string
	for _, r := range h2.drainPops("http://cb/", 200) {
		seqs = append(seqs, r.Header.Get(wire.HeaderSequenceNumber))
	}
	if !slices.Equal(seqs, []string{"2", "3"}) {
		t.Fatalf("restored node popped sequence numbers %v, want [2 3]", seqs)
	}
}

// TestRestartKnowsThePopsItMade proves that a pop whose callback
// succeeded reaches the disk as made. A pop counts as missed while its
// callback is in flight, and the lazy flush may write it so; the success
// that follows changes the record in place, and must be written too, or a
// restart reads the pop back as missed and tells the other replicas to
// make it again.
func TestRestartKnowsThePopsItMade(t *testing.T) {
	disk := newMemStorage()
	h := newHarness(t, func(c *Config) { c.Storage = disk })
	id := mustID(t, h.create(timerJSON(10, 30, "http://cb/x", "data")))
	h.clock.advance(10 * time.Second) // pop 1 is sent; its callback waits
	h.clock.advance(persistLazily)    // the lazy flush writes it as missed
	if got := h.pops("http://cb/", 200); len(got) != 1 {
		t.Fatalf("pops by 11 s: got %d, want 1", len(got))
	}
	h.clock.advance(persistLazily)

	h2 := restarted(t, h, disk, time.Second)
	got, ok := h2.node.Timer(id)
	if !ok {
		t.Fatal("restored node holds no record of the timer")
	}
	if missed, owed := got.popMarks(); got.Seq != 1 || missed != 0 || owed != 0 {
		t.Fatalf("restored record: got sequence %d, missed %b, owed %b; want 1, 0, 0", got.Seq, missed, owed)
	}
}

// restarted is a node restarted from disk on h's machine, after d.
func restarted(t *testing.T, h *harness, disk *memStorage, d time.Duration) *harness {
	t.Helper()
	h2 := &harness{t: t, clock: &manualClock{now: h.clock.now.Add(d)}, net: &heldNet{}}
	cfg := h.node.cfg
	cfg.Clock, cfg.Network, cfg.Storage = h2.clock, h2.net, newMemStorage()
	n, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h2.node = n
	disk.restore(t, n)
	return h2
}

// TestAnswerWaitsForDurability proves that a write is answered only once
// the Storage says its changes are durable, and with a 503 when it cannot
// make them so; a read is answered at once.
func TestAnswerWaitsForDurability(t *testing.T) {
	disk := newMemStorage()
	disk.hold = true
	h := newHarness(t, func(c *Config) { c.Storage = disk })
	var got []Response
	h.node.Handle(Request{Method: "POST", URL: "/timers", Header: Header{}, Body: []byte(timerJSON(10, 10, "http://cb/x", ""))},
		func(r Response) { got = append(got, r) })
	if len(got) != 0 || len(disk.held) != 1 {
		t.Fatalf("create answered %d times with %d barriers held, want 0 answers before the barrier, 1 barrier", len(got), len(disk.held))
	}
	disk.sync()
	disk.held[0](nil)
	if len(got) != 1 || got[0].Status != 200 {
		t.Fatalf("after the barrier: answers %+v, want one 200", got)
	}
	h.node.Handle(Request{Method: "POST", URL: "/timers", Header: Header{}, Body: []byte(timerJSON(10, 10, "http://cb/y", ""))},
		func(r Response) { got = append(got, r) })
	disk.held[1](errors.New("disk on fire"))
	if len(got) != 2 || got[1].Status != 503 || h.node.Stats().StorageFailures != 1 {
		t.Fatalf("after a failed barrier: answers %+v, failures %d; want a 503 and 1", got, h.node.Stats().StorageFailures)
	}
	if r := h.do("GET", "/ping", ""); r.Status != 200 {
		t.Fatalf("GET /ping: %d, want 200 at once", r.Status)
	}
}

// TestRestoreRefusesBadRecords proves that a record that does not decode,
// or of a later version, stops the restore with an error naming it.
func TestRestoreRefusesBadRecords(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Storage = newMemStorage() })
	good := AppendRecord(nil, withParts(&Timer{ID: 1, Version: 1, interval: sec(time.Second), repeatFor: sec(time.Second)}, h.node.placement([]string{"a:1"}, nil), nil))
	for _, rec := range [][]byte{{}, {0}, {recordVersion + 1}, good[:len(good)-1], append(slices.Clone(good), 0)} {
		if err := h.node.Restore(1, rec); err == nil {
			t.Errorf("Restore(% x) = nil, want an error", rec)
		}
	}
	if err := h.node.Restore(1, good); err != nil {
		t.Fatalf("Restore(good) = %v", err)
	}
}

// TestRecordWithAnInformationalCopyIsReadPast: a record an earlier build
// wrote with the informational copy a tombstone kept decodes, without it.
func TestRecordWithAnInformationalCopyIsReadPast(t *testing.T) {
	h := newHarness(t)
	rec := withParts(&Timer{ID: 1, Version: 2, State: Moved}, h.node.placement([]string{"a:1"}, nil), &TimerExtra{Buried: 5})
	// Record version 2, which ends at the mark that version 3 follows
	// with the first try (0 here).
	b := AppendRecord(nil, rec)
	b[0] = 2
	b = appendFields(append(b[:len(b)-2], 1), withParts(&Timer{ID: 1, Version: 2}, h.node.placement([]string{"b:1"}, nil), nil))
	got, err := h.node.decodeRecord(1, b)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if got.Extra() == nil || got.Extra().Buried != 5 || got.State != Moved {
		t.Errorf("decoded %+v, want the record without its copy", got)
	}
}

// FuzzDecodeRecord proves that no bytes on a disk crash the decoder, and
// that what decodes round trips.
func FuzzDecodeRecord(f *testing.F) {
	h := newHarness(&testing.T{})
	f.Add(AppendRecord(nil, withParts(&Timer{ID: 1, Version: 2}, h.node.placement([]string{"a:1"}, []string{"s"}), &TimerExtra{Tags: []wire.Tag{{Type: "t", Count: 1}}})))
	f.Fuzz(func(t *testing.T, rec []byte) {
		tm, err := h.node.decodeRecord(1, rec)
		if err != nil {
			return
		}
		again, err := h.node.decodeRecord(1, AppendRecord(nil, tm))
		if err != nil || !reflect.DeepEqual(again, tm) {
			t.Fatalf("record % x decodes to %+v, which round trips to %+v, %v", rec, tm, again, err)
		}
	})
}

// TestSnapshotHandsOutEveryRecordOnce proves that a snapshot taken in
// chunks hands out every held record exactly once, whatever the chunk
// size, timers due together included.
func TestSnapshotHandsOutEveryRecordOnce(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Storage = newMemStorage() })
	want := map[uint64]bool{}
	for i := range 25 {
		want[mustID(t, h.create(timerJSON(1+i%3, 10, "http://cb/x", "")))] = true
	}
	for _, limit := range []int{1, 2, 7, 100} {
		got := map[uint64]int{}
		var rounds int
		for cur, done := (SnapshotCursor{}), false; !done; rounds++ {
			cur, done = h.node.Snapshot(cur, limit, func(id uint64, rec []byte) {
				got[id]++
				if _, err := h.node.decodeRecord(id, rec); err != nil {
					t.Fatalf("record of %x: %v", id, err)
				}
			})
		}
		for id := range want {
			if got[id] != 1 {
				t.Fatalf("limit %d: record %x handed out %d times, want 1", limit, id, got[id])
			}
		}
		if len(got) != len(want) || rounds < len(want)/limit {
			t.Fatalf("limit %d: %d records in %d rounds, want %d", limit, len(got), rounds, len(want))
		}
	}
}

// TestRestartIssuesNoIDItIssuedBefore proves that a node restarted on a
// clock stepped back still issues IDs after the last one it issued: the
// time field of its last ID is kept beside its records (RestoreMeta), and
// a state an earlier build wrote (its views) is read as holding nothing.
func TestRestartIssuesNoIDItIssuedBefore(t *testing.T) {
	disk := newMemStorage()
	h := newHarness(t, func(c *Config) { c.Storage = disk })
	last := mustID(t, h.create(timerJSON(60, 60, "http://cb/x", "")))
	h.node.whenDurable(func(error) {}) // a barrier hands the state over
	h2 := restarted(t, h, disk, -time.Minute)
	if err := h2.node.RestoreMeta(disk.meta); err != nil {
		t.Fatal(err)
	}
	if next := mustID(t, h2.create(timerJSON(60, 60, "http://cb/x", ""))); next <= last {
		t.Fatalf("restarted a minute back, the node issued %x after %x", next, last)
	}
	if err := h2.node.RestoreMeta([]byte{1, 0}); err != nil {
		t.Fatalf("RestoreMeta of an earlier build's views = %v, want nil", err)
	}
	if err := h2.node.RestoreMeta([]byte{metaVersion + 1}); err == nil {
		t.Fatal("RestoreMeta of a later version = nil, want an error")
	}
}

// TestRestoredRecordsArePlacedUnderTheCurrentView: a node restarted with
// another membership than it wrote its records under (a restart during a
// scale) holds them on the replicas of its view now, not at the rank it
// had: it would otherwise pop beside the new primary.
func TestRestoredRecordsArePlacedUnderTheCurrentView(t *testing.T) {
	disk := newMemStorage()
	h := newHarness(t, func(c *Config) { c.Storage = disk })
	id := mustID(t, h.create(timerJSON(60, 600, "http://cb/x", "")))
	h.node.whenDurable(func(error) {})
	grown := Membership{Nodes: []string{h.node.Address(), "10.9.9.1:7253", "10.9.9.2:7253", "10.9.9.3:7253"}}
	h.node.cfg.Cluster = grown
	h2 := restarted(t, h, disk, time.Second)
	got, ok := h2.node.Timer(id)
	if !ok {
		t.Fatal("the restarted node lost the record")
	}
	if want := NewRing(grown.Nodes).Replicas(id, 2); !slices.Equal(got.Placement().Replicas, want) {
		t.Errorf("restored on %v, want the current view's %v", got.Placement().Replicas, want)
	}
}

// TestVersionOneRecordReadsItsReplacedProgress proves that a record
// written by a build before the list of replaced definitions (record
// version 1, one progress kept) is read back with that progress as the
// list's one entry.
func TestVersionOneRecordReadsItsReplacedProgress(t *testing.T) {
	h := newHarness(t)
	p := Progress{Def: 9, Seq: 2, Start: 1e12, Interval: time.Second, RepeatFor: 3 * time.Second}
	rec := withParts(&Timer{ID: 77, Version: 5}, h.node.placement([]string{"a:1"}, nil), nil)
	bare := AppendRecord(nil, rec)
	rec.replaced(p)
	v3 := AppendRecord(nil, rec)
	// Version 3 writes, where the record without Extra ends, Extra's
	// mark (1), no tags (0), no buried end (0), then the count of
	// replaced definitions (1) that version 1 did not write, the
	// progress with its first try (0) that versions 1 and 2 did not
	// write, and, last, the record's own first try (0), nor that.
	at, end := len(bare)-1, len(bare)-1+4+len(appendReplacedProgress(nil, p))
	if !bytes.Equal(v3[:at], bare[:at]) || !bytes.Equal(v3[at:at+4], []byte{1, 0, 0, 1}) ||
		v3[end-1] != 0 || v3[len(v3)-1] != 0 {
		t.Fatalf("version 3 record %x does not extend %x as this test expects", v3, bare)
	}
	v1 := slices.Concat([]byte{1}, v3[1:at+3], v3[at+4:end-1], v3[end:len(v3)-1])
	got, err := h.node.decodeRecord(77, v1)
	if err != nil {
		t.Fatalf("decode version 1: %v", err)
	}
	if got.Extra() == nil || !slices.Equal(got.Extra().Replaced, []Progress{p}) {
		t.Fatalf("version 1 record read with extra %+v, want replaced [%+v]", got.Extra(), p)
	}
}

// TestFirstTryIsKeptOnTheWireAndOnDisk proves that a retry's name of its
// first try (TimerExtra.FirstTry), and that of a definition it remembers,
// survive the internal PUT body and the record on disk: a replica that
// received the retry, or restarted from its disk, still knows it as one
// write with the first try (sameWrite).
func TestFirstTryIsKeptOnTheWireAndOnDisk(t *testing.T) {
	h := newHarness(t)
	spec := wire.Timer{Interval: time.Second, RepeatFor: 3 * time.Second, URI: "http://cb.example/cb", ReplicationFactor: 2}
	rec := newTimer(77, 9, spec, 1e12, 1, h.node.placement([]string{"a:1", "b:1"}, nil), 5, nil)
	rec.setFirstTry(4)
	rec.replaced(Progress{Def: 3, Seq: 2, Start: 1e12 - 10, Interval: time.Second, RepeatFor: 2 * time.Second, FirstTry: 2})
	got, err := h.node.decodeRecord(77, AppendRecord(nil, rec))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if got.firstTry() != 4 || !slices.Equal(got.Extra().Replaced, rec.Extra().Replaced) {
		t.Errorf("from disk: first try %d, replaced %+v; want 4, %+v", got.firstTry(), got.Extra().Replaced, rec.Extra().Replaced)
	}
	wspec, r, err := wire.Parse(EncodeReplication(rec, 1e12))
	if err != nil {
		t.Fatalf("wire.Parse: %v", err)
	}
	if in := h.node.fromReplication(77, wspec, r); in.firstTry() != 4 {
		t.Errorf("from the wire: first try %d, want 4", in.firstTry())
	}
	first := newTimer(77, 4, spec, 1e12, 1, h.node.placement([]string{"a:1", "b:1"}, nil), 5, nil)
	if _, r, _ := wire.Parse(EncodeReplication(first, 1e12)); r == nil || r.FirstTry != 0 {
		t.Errorf("a first try's body names a first try: %+v", r)
	}
}
