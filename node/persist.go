package node

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// Persistence (docs/design.md 4.16). A node given a Storage hands it every
// change of its records and asks it for a barrier before it answers a
// request that changed anything: an acknowledged write is on disk on
// every replica that acknowledged it. The node itself does no I/O: as
// etcd-io/raft's Ready hands out the entries to persist before the
// messages that depend on them, the node hands out records and waits for
// the driver's word that they are durable before it answers.
//
// Every change of a held record passes through the store (Store.Put,
// Store.Remove, a pop), or is made in place and marked the same way
// (changedInPlace): the store marks the record's ID, and the marked
// records are encoded and handed to the Storage at the next barrier, or
// at the latest persistLazily after the first mark. So progress (sequence
// numbers, missed pops) reaches the disk lazily: a restart may repeat the
// pops made in that window, never skip one, since a record on disk is
// never ahead of the one in memory.

// Storage keeps a node's records across restarts. A nil Storage in Config
// keeps them in memory only. The driver owns the I/O: Put and Delete only
// queue a change; Sync makes every change queued before it durable.
type Storage interface {
	// Put queues the change of the record held under id to rec, the
	// node's encoding of it (see Node.Restore). rec is the caller's no
	// longer: the Storage may keep it.
	Put(id uint64, rec []byte)
	// Delete queues the removal of the record held under id.
	Delete(id uint64)
	// PutMeta queues the node's own state beside its records (the
	// cluster views it has been in, see Node.RestoreMeta).
	PutMeta(rec []byte)
	// Sync calls done once every change queued before the call is
	// durable, with nil, or with the error that kept it from being so.
	// done is called exactly once, serialized like every other call into
	// the node (it may be called before Sync returns: the node relies on
	// nothing after the call); concurrent barriers should share one sync
	// of the disk (group commit).
	Sync(done func(error))
}

// persistLazily bounds how long a change the node need not wait for (a
// pop, a record a resync took) stays in memory only.
const persistLazily = time.Second

// persist is the node's side of persistence: the IDs of the records
// changed since they were last handed to the Storage, in the order first
// changed (no map order reaches the Storage).
type persist struct {
	marked map[uint64]struct{}
	order  []uint64
	alarm  bool
	// meta is set when the node's own state changed (its views).
	meta bool
	// restoring is set while Restore holds recovered records: they are on
	// disk already.
	restoring bool
	buf       []byte
	// restarted is the node's time at its first Restore, and quiet the
	// end of the backup skew after it in which a pop whose turn came
	// while the node was down waits for word (dueOf); both 0 for a node
	// that restored nothing.
	restarted, quiet int64
}

// mark notes that the record under id changed (Store's change hook).
func (n *Node) mark(id uint64) {
	p := &n.persist
	if p.restoring {
		return
	}
	if _, ok := p.marked[id]; ok {
		return
	}
	p.marked[id] = struct{}{}
	p.order = append(p.order, id)
	if !p.alarm {
		p.alarm = true
		n.clock.AfterFunc(persistLazily, func() {
			p.alarm = false
			n.whenDurable(func(error) {})
		})
	}
}

// changedInPlace notes that t, if it is the record held under its ID,
// changed without passing through the store (a pop made, marks merged,
// a replica marked): it reaches the disk as any change does. Without it
// the disk kept the pop as missed, which a pop counts as while its
// callback is in flight, and a restart told the other replicas so: one
// that had not attempted it popped it again
// (TestRestartKnowsThePopsItMade).
func (n *Node) changedInPlace(t *Timer) {
	if n.store.changed != nil && n.store.Get(t.ID) == t {
		n.store.changed(t.ID)
	}
}

// handOver hands every marked record to the Storage.
func (n *Node) handOver() {
	p := &n.persist
	s := n.cfg.Storage
	for _, id := range p.order {
		if t := n.store.Get(id); t != nil {
			s.Put(id, AppendRecord(nil, t))
		} else {
			s.Delete(id)
		}
	}
	clear(p.marked)
	clear(p.order)
	p.order = p.order[:0]
	if p.meta {
		p.meta = false
		s.PutMeta(n.appendMeta(nil))
	}
}

// metaVersion is the version of the node's own state as PutMeta hands it:
// version 1 held the cluster views the node had been in (no longer kept:
// placement is derived from the current view, place.go), version 2 holds
// the time field of the last ID the node issued. A version 1 state is read
// as holding nothing.
const metaVersion = 2

// appendMeta appends the node's own state: the time field of the last ID
// it issued, so that a node restarted on a clock stepped back issues no ID
// or version it issued before (a create it proxied but holds no replica
// of is on no disk of its own).
func (n *Node) appendMeta(b []byte) []byte {
	return binary.AppendVarint(append(b, metaVersion), n.ids.lastMs)
}

// RestoreMeta takes back the node's own state recovered from storage
// (Storage.PutMeta), nil when there was none.
func (n *Node) RestoreMeta(rec []byte) error {
	switch {
	case rec == nil || len(rec) > 0 && rec[0] == 1:
		return nil
	case len(rec) == 0 || rec[0] != metaVersion:
		return fmt.Errorf("node: restore state: % x is not of version %d, the one this build reads", rec[:min(len(rec), 1)], metaVersion)
	}
	last, k := binary.Varint(rec[1:])
	if k <= 0 || 1+k != len(rec) {
		return fmt.Errorf("node: restore state: a bad last-ID time")
	}
	n.ids.lastMs, n.ids.seq = max(n.ids.lastMs, last), 1<<seqBits-1
	n.persist.meta = true
	return nil
}

// whenDurable calls then once every change made so far is durable, with
// the error that kept it from being so; at once, with nil, when the node
// has no Storage.
func (n *Node) whenDurable(then func(error)) {
	if n.cfg.Storage == nil {
		then(nil)
		return
	}
	n.handOver()
	n.cfg.Storage.Sync(func(err error) {
		if err != nil {
			n.stats.StorageFailures++
			n.log.Error("storage: changes not durable", "err", err)
		}
		then(err)
	})
}

// durably wraps the reply to a request that may change records: it is
// sent once the changes are durable, and replaced by a 503 when they
// cannot be made so (the change may still take effect, as any 503 says).
func (n *Node) durably(reply func(Response)) func(Response) {
	return func(r Response) {
		n.whenDurable(func(err error) {
			if err != nil {
				reply(unavailable("storage: " + err.Error()))
				return
			}
			reply(r)
		})
	}
}

// Restore holds a record recovered from storage, rec as Storage.Put was
// given it, or drops the record under id when rec is nil (a later removal
// the storage recovered). The driver calls it for every recovered entry,
// in the order written, after New and before anything else: the node then
// pops its timers again, and resyncs with its peers for what it missed
// when the driver starts the start-up resync.
func (n *Node) Restore(id uint64, rec []byte) error {
	n.persist.restoring = true
	defer func() { n.persist.restoring = false }()
	n.release(n.store.Get(id))
	if rec == nil {
		return nil
	}
	t, err := n.decodeRecord(id, rec)
	if err != nil {
		return fmt.Errorf("node: restore record %s: %w", wire.FormatID(id), err)
	}
	n.ids.observe(t.Version, n.nowMs())
	// Stored under the view the node had when it wrote the record; held
	// under the one it has now (place.go): a node restarted during a
	// scale would otherwise pop at its old rank beside the new primary.
	n.placeNow(t)
	n.hitIf(t.State == Live && !slices.Contains(t.Placement().Replicas, n.self), probePlacedAway)
	if n.persist.restarted == 0 {
		n.persist.restarted = n.nowMs()
		n.persist.quiet = n.persist.restarted + ReplicaSkew.Milliseconds()
	}
	n.holdNext(t)
	return nil
}

// waitForWord returns due, the time a pop of t is due on this replica,
// or, for a pop whose turn came while the node was down (before its
// restart from disk), the end of the backup skew after the restart.
// Such a turn passed when the notices of the pops the other holders
// made could not reach the node: popped at once, before the start-up
// resync heard from them, every pop they made meanwhile was made again
// (a backup of a timer popping every second, down for 20 s, made 18 of
// them again at its restart;
// TestRestartedBackupMakesNoPopTheOthersMadeWhileItWasDown). In that
// skew their pages and notices tell it which pops were made, whichever
// peer answers first; what none made it pops then, late as it was. A
// record no other node holds has nobody to hear from, and pops at once.
func (n *Node) waitForWord(t *Timer, due int64) int64 {
	if due > n.persist.restarted || !n.othersHold(t) {
		return due
	}
	if n.persist.quiet > n.nowMs() {
		n.hit(probeRestoredWaits)
	}
	return max(due, n.persist.quiet)
}

// othersHold reports whether t's placement names a holder besides this
// node: another replica, or another site.
func (n *Node) othersHold(t *Timer) bool {
	return slices.ContainsFunc(t.Placement().Replicas, func(r string) bool { return r != n.self }) ||
		len(t.Placement().Sites) > 1
}

// SnapshotCursor is where Snapshot goes on: after the last record it
// handed out, in the store's order. The zero cursor starts at the first.
type SnapshotCursor struct {
	due     int64
	id      uint64
	started bool
}

// Snapshot calls fn with the encoded record of up to limit held timers
// after cur, in the store's order, for a snapshot of the storage, and
// returns where to go on and whether every record has been handed out.
// fn must not call into the node; the record buffer is reused, so fn
// copies what it keeps. Between calls the node may change: a record that
// changes is handed to the Storage again, after the snapshot began, so a
// record missed or handed out stale here is replayed over the snapshot.
func (n *Node) Snapshot(cur SnapshotCursor, limit int, fn func(id uint64, rec []byte)) (SnapshotCursor, bool) {
	from := int64(math.MinInt64)
	if cur.started {
		from = cur.due
	}
	handed, done := 0, true
	n.store.AscendFrom(from, func(t *Timer) bool {
		if cur.started && t.due == cur.due && t.ID <= cur.id {
			return true
		}
		if handed == limit {
			done = false
			return false
		}
		n.persist.buf = AppendRecord(n.persist.buf[:0], t)
		fn(t.ID, n.persist.buf)
		cur = SnapshotCursor{due: t.due, id: t.ID, started: true}
		handed++
		return true
	})
	return cur, done
}

// recordVersion is the version of the record encoding AppendRecord
// writes. A decoder reads every version up to its own, so an upgrade
// reads what the build before it wrote. Version 2 keeps a list of the
// progress of replaced definitions (TimerExtra.Replaced), where version
// 1 kept one. Version 3 adds the first try of the client write a retry's
// record is of (TimerExtra.FirstTry), and of each replaced definition's.
const recordVersion = 3

// AppendRecord appends the encoding of t (all of it but its place in the
// store) to b: a version byte, then the fields in a fixed order, integers
// as varints.
func AppendRecord(b []byte, t *Timer) []byte {
	b = append(b, recordVersion)
	return appendFields(b, t)
}

func appendFields(b []byte, t *Timer) []byte {
	b = binary.AppendUvarint(b, t.Version)
	b = binary.AppendVarint(b, t.Start)
	b = binary.AppendVarint(b, t.Interval().Milliseconds())
	b = binary.AppendVarint(b, t.RepeatFor().Milliseconds())
	b = binary.AppendUvarint(b, uint64(t.Seq))
	b = append(b, byte(t.State), t.RF)
	b = binary.AppendUvarint(b, t.ViewID())
	b = binary.AppendUvarint(b, uint64(t.def))
	var replicas, sites []string
	if t.Placement() != nil {
		replicas, sites = t.Placement().Replicas, t.Placement().Sites
	}
	b = appendRecStrings(b, replicas)
	b = appendRecStrings(b, sites)
	if t.host() == nil {
		b = append(b, 0)
	} else {
		b = appendRecString(append(b, 1), *t.host())
	}
	b = appendRecString(b, t.cb)
	if t.Extra() == nil {
		return append(b, 0)
	}
	e := t.Extra()
	b = append(b, 1)
	b = binary.AppendUvarint(b, uint64(len(e.Tags)))
	for _, tag := range e.Tags {
		b = binary.AppendVarint(appendRecString(b, tag.Type), int64(tag.Count))
	}
	b = binary.AppendVarint(b, e.Buried)
	b = binary.AppendUvarint(b, uint64(len(e.Replaced)))
	for _, r := range e.Replaced {
		b = appendReplacedProgress(b, r)
	}
	b = binary.AppendUvarint(b, uint64(e.Refused))
	b = binary.AppendUvarint(b, uint64(e.Missed))
	b = binary.AppendUvarint(b, uint64(e.Owed))
	// A tombstone once kept the live record it replaced here (an
	// informational copy, marked 1); none does now, and a record that
	// has one is read without it. 2 marks the replicas that may lack the
	// record (Lacking), which records written before it was kept lack; 3
	// marks those and the sites that may lack it (SitesLacking).
	switch {
	case e.SitesLacking != 0:
		b = binary.AppendUvarint(append(b, 3), uint64(e.Lacking))
		b = binary.AppendUvarint(b, uint64(e.SitesLacking))
	case e.Lacking != 0:
		b = binary.AppendUvarint(append(b, 2), uint64(e.Lacking))
	default:
		b = append(b, 0)
	}
	return binary.AppendUvarint(b, e.FirstTry)
}

// appendReplacedProgress appends one replaced definition's progress.
func appendReplacedProgress(b []byte, p Progress) []byte {
	b = binary.AppendUvarint(b, uint64(p.Def))
	b = binary.AppendUvarint(b, uint64(p.Seq))
	b = binary.AppendVarint(b, p.Start)
	b = binary.AppendVarint(b, p.Interval.Milliseconds())
	b = binary.AppendVarint(b, p.RepeatFor.Milliseconds())
	return binary.AppendUvarint(b, p.FirstTry)
}

func appendRecString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func appendRecStrings(b []byte, ss []string) []byte {
	b = binary.AppendUvarint(b, uint64(len(ss)))
	for _, s := range ss {
		b = appendRecString(b, s)
	}
	return b
}

// errRecord is a record that does not decode.
var errRecord = errors.New("malformed record")

// decodeRecord decodes a record AppendRecord wrote for timer id, its
// placement and callback host interned.
func (n *Node) decodeRecord(id uint64, rec []byte) (*Timer, error) {
	if len(rec) == 0 || rec[0] == 0 || rec[0] > recordVersion {
		if len(rec) > 0 && rec[0] > recordVersion {
			return nil, fmt.Errorf("record version %d, this build reads versions 1 to %d", rec[0], recordVersion)
		}
		return nil, errRecord
	}
	d := recordDecoder{b: rec[1:], version: rec[0]}
	t := n.decodeFields(&d, id, 0)
	if d.err == nil && len(d.b) != 0 {
		d.err = fmt.Errorf("%w: %d bytes after it", errRecord, len(d.b))
	}
	return t, d.err
}

// maxInfoDepth bounds the records nested as Info: a tombstone keeps one
// live record, which keeps none.
const maxInfoDepth = 1

func (n *Node) decodeFields(d *recordDecoder, id uint64, depth int) *Timer {
	t := &Timer{ID: id}
	t.Version = d.uvarint()
	t.Start = d.varint()
	t.setTiming(d.millis(), d.millis())
	t.Seq = d.uint32()
	t.State, t.RF = State(d.byte()), d.byte()
	view := d.uvarint()
	t.def = d.uint32()
	replicas, sites := d.strings(), d.strings()
	k := partsKey{placement: n.shared.under(n.placement(replicas, sites), view)}
	if d.byte() == 1 {
		k.host = n.shared.host(d.string())
	}
	t.setKey(k, n.shared)
	t.cb = d.string()
	if t.State > Moved {
		d.fail("state %d", t.State)
	}
	if d.byte() == 0 || d.err != nil {
		return t
	}
	e := &TimerExtra{}
	if k := d.count(); k > 0 {
		e.Tags = make([]wire.Tag, k)
		for i := range e.Tags {
			e.Tags[i] = wire.Tag{Type: d.string(), Count: int(d.varint())}
		}
	}
	e.Buried = d.varint()
	e.Replaced = d.replaced()
	e.Refused, e.Missed, e.Owed = d.uint32(), d.uint32(), d.uint32()
	switch d.byte() {
	case 3:
		e.Lacking, e.SitesLacking = d.uint32(), d.uint32()
	case 2:
		e.Lacking = d.uint32()
	case 1:
		// An informational copy written by an earlier build: read past.
		if depth >= maxInfoDepth {
			d.fail("records nested deeper than %d", maxInfoDepth)
			return t
		}
		n.decodeFields(d, id, depth+1)
	}
	if d.version >= 3 {
		e.FirstTry = d.uvarint()
	}
	t.putExtra(e)
	return t
}

// recordDecoder reads a record's fields; the first error sticks and every
// later read returns zero.
type recordDecoder struct {
	b       []byte
	err     error
	version byte
}

// replaced reads TimerExtra.Replaced: one progress, none when its
// definition is 0, in version 1; a count and as many in later versions.
func (d *recordDecoder) replaced() []Progress {
	k := 1
	if d.version > 1 {
		if k = d.count(); k > MaxReplaced {
			d.fail("%d replaced definitions, more than %d", k, MaxReplaced)
			return nil
		}
	}
	var ps []Progress
	for range k {
		p := Progress{Def: d.uint32(), Seq: d.uint32(), Start: d.varint(), Interval: d.millis(), RepeatFor: d.millis()}
		if d.version >= 3 {
			p.FirstTry = d.uvarint()
		}
		if p.Def != 0 && d.err == nil {
			ps = append(ps, p)
		}
	}
	return ps
}

func (d *recordDecoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: "+format, append([]any{errRecord}, args...)...)
	}
}

func (d *recordDecoder) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, k := binary.Uvarint(d.b)
	if k <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[k:]
	return v
}

// millis decodes a duration the record keeps in milliseconds.
func (d *recordDecoder) millis() time.Duration {
	return time.Duration(d.varint()) * time.Millisecond
}

func (d *recordDecoder) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, k := binary.Varint(d.b)
	if k <= 0 {
		d.fail("bad varint")
		return 0
	}
	d.b = d.b[k:]
	return v
}

func (d *recordDecoder) uint32() uint32 {
	v := d.uvarint()
	if v > 1<<32-1 {
		d.fail("%d over 32 bits", v)
	}
	return uint32(v)
}

func (d *recordDecoder) byte() byte {
	if d.err != nil {
		return 0
	}
	if len(d.b) == 0 {
		d.fail("cut short")
		return 0
	}
	c := d.b[0]
	d.b = d.b[1:]
	return c
}

// count reads a length, which cannot exceed the bytes left.
func (d *recordDecoder) count() int {
	v := d.uvarint()
	if v > uint64(len(d.b)) {
		d.fail("length %d over the %d bytes left", v, len(d.b))
		return 0
	}
	return int(v)
}

func (d *recordDecoder) string() string {
	k := d.count()
	if d.err != nil {
		return ""
	}
	s := string(d.b[:k])
	d.b = d.b[k:]
	return s
}

func (d *recordDecoder) strings() []string {
	k := d.count()
	if k == 0 {
		return nil
	}
	ss := make([]string, k)
	for i := range ss {
		ss[i] = d.string()
	}
	return ss
}
