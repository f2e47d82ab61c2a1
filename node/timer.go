package node

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/wire"

	"github.com/twmb/murmur3"
)

// State is what a held record is: a definition this replica pops, or a
// tombstone. A tombstone pops nothing and beats older records of its timer
// (see Supersedes).
type State uint8

// States of a record.
const (
	// Live is a definition this replica pops.
	Live State = iota
	// Tombstone is a deleted or finished timer, kept for one interval
	// (TombstoneMin at least) so that stale replication cannot resurrect
	// it.
	Tombstone
	// Moved is a tombstone kept because the timer moved to other
	// replicas (rebalancing): this node is not a replica under the
	// record's view. It is a tombstone in every way but one: the same
	// definition placed back on this node under its current view (a later
	// scale) replaces it (see movedBack).
	Moved
)

// entomb makes the record a tombstone. A tombstone pops nothing, so it
// keeps no missed or owed pops.
func (t *Timer) entomb() { t.entombAs(Tombstone) }

// entombAs makes the record a tombstone of the given kind. A Moved copy
// keeps the pops this replica owes (Owed, as its Missed marks too): it
// pops nothing while moved away, but placed back (movedBack) it owes
// what it had not attempted, and no more. A pop it attempted, or has in
// flight, is not owed: one attempt per replica per pop.
func (t *Timer) entombAs(s State) {
	t.State = s
	if s == Moved {
		_, owed := t.popMarks()
		t.setPopMarks(owed, owed)
		return
	}
	t.setPopMarks(0, 0)
}

// expire makes a finished record that knew of missed pops a tombstone
// at the end of its life (onAlarm). It owes nothing, but it keeps the
// Missed marks, and its messages carry them: they say the definition
// ended by a life measured on this node's clock, not by a pop made, so
// a replica takes it only once every replica's turn at the last pop is
// past on its own clock too (fromFuture). Without them, a replica whose
// clock ran ahead ended its life early by the gain, and its tombstone
// buried the copies of the replicas whose turn at the pop it had missed
// was still to come (scenarios/README.md N65).
func (t *Timer) expire() {
	missed, _ := t.popMarks()
	t.State = Tombstone
	t.setPopMarks(missed, 0)
}

// Timer is one replica's record of a timer: its definition, how far it has
// popped, and where it sits in the store. Times are milliseconds on the
// holding node's wall clock (Unix epoch); durations are milliseconds.
//
// The record is kept small on purpose (docs/design.md section 5: at most 200
// bytes per stored timer beyond its URI and opaque data): 96 bytes, one
// size class of the Go allocator, plus one allocation for the callback.
// Rarely used parts live behind Extra; replica lists (with the view they
// were placed under) and callback hosts are interned and shared (see
// interned), and a record keeps the three behind one pointer (parts). Fields are ordered so that the small ones fill whole words: a
// new field costs a size class (16 bytes a record;
// TestTimerFitsItsSizeClass).
type Timer struct {
	// ID is the 64-bit unique ID (without the replica bloom filter).
	ID uint64
	// Version identifies the client write that defined this timer: the
	// unique ID issued for the create, update or delete that produced it.
	// Versions order competing definitions of one timer; within one
	// version, Seq orders its pops.
	Version uint64
	// Start is when the definition took effect; pop k (1-based) is due at
	// Start + k*Interval, and a zero-interval timer pops once at Start.
	Start int64
	// interval and repeatFor are the timing of api.md in whole seconds,
	// as the API and every body between nodes carry it (at most
	// wire.MaxTimingSeconds, ten years, well within 32 bits); read them
	// with Interval and RepeatFor. repeatFor is stated (package wire's
	// convention): a timer without one has repeatFor == interval.
	interval  uint32
	repeatFor uint32
	// Seq is how many pops of this definition have happened (the internal
	// API's sequence-number). The next callback carries X-Sequence-Number
	// Seq+1.
	Seq uint32
	// State is whether the record pops (Live) or is a tombstone, and of
	// which kind.
	State State
	// RF is the replication factor the client asked for, which may be
	// more than the cluster had nodes for.
	RF uint8
	// heard marks the later holders this node knows hold this
	// definition: one of them answered this node a message of it (a
	// write's replication, a pop notice, a forward). Bits 0 to 11 are
	// replicas, by position in Placement.Replicas; bits 12 to 15 sites,
	// by position in Placement.Sites (heardReplicas, heardSites). A
	// holder past those positions is never marked, so it counts as not
	// heard from: a pop waits rather than be left to it, the safe side.
	// Only this node knows them: they are neither sent nor kept on disk,
	// and a record that knows nothing (taken from a message, loaded after
	// a restart) knows none holds it. A holder leaves a pop to later
	// holders only when it knows one of them holds the definition
	// (handOnAfter). On a tombstone the bits mark the replicas this node
	// knows hold the tombstone or its definition (they took or sent a
	// message of its version): a mark that one of them may lack it is
	// not learnt again (holdsTombstone). It sits in the padding after
	// RF, so that a Timer stays in its size class (docs/design.md 5.1).
	heard uint16
	// parts holds what records share rather than each keep: the
	// placement, the callback's host and the rarely used parts (Placement,
	// Extra, host), interned per node (see parts); nil when all three
	// are.
	parts *parts

	// The HTTP callback (CallbackURI, Opaque) is kept in two parts: its
	// host, the URI's interned scheme://authority (in parts, nil when
	// the URI has none), and cb, one allocation holding the rest of the
	// URI and the opaque data, "uvarint(len(rest)) rest opaque" (""
	// when both are empty).
	cb string

	// Store bookkeeping, owned by Store.
	due        int64
	prev, next *Timer
	slot       int32

	// def fingerprints the definition (see definitionHash), 0 when it is
	// unknown (a client delete's tombstone, or a record from a node that
	// does not send one). Two records of one ID and version with different
	// fingerprints are two timers whose IDs collided. It sits here to use
	// the padding after slot.
	def uint32
}

// Interval is the timer's interval (whole seconds).
func (t *Timer) Interval() time.Duration { return time.Duration(t.interval) * time.Second }

// RepeatFor is the timer's repeat-for, stated (whole seconds).
func (t *Timer) RepeatFor() time.Duration { return time.Duration(t.repeatFor) * time.Second }

// setTiming sets t's interval and repeat-for, both whole seconds within
// wire.MaxTiming as every definition a node takes is (wire.Timer.Validate;
// the bodies between nodes carry whole seconds): a part of a second, or
// a timing past the bound, is not kept.
func (t *Timer) setTiming(interval, repeatFor time.Duration) {
	t.interval, t.repeatFor = timingSeconds(interval), timingSeconds(repeatFor)
}

// timingSeconds is d in whole seconds, clamped to what Timer keeps.
func timingSeconds(d time.Duration) uint32 {
	return uint32(min(max(d, 0), wire.MaxTiming) / time.Second)
}

// ViewID is the cluster view t's placement was computed under (0 for a
// record with no placement).
func (t *Timer) ViewID() uint64 {
	if t.Placement() == nil {
		return 0
	}
	return t.Placement().View
}

// setViewID marks t, a copy that travels (a message's record), as placed
// under view: it gets a placement of its own, not interned, when its view
// differs. A held record's placement is interned under its view
// (interned.under).
func (t *Timer) setViewID(view uint64) {
	if t.ViewID() == view {
		return
	}
	p := Placement{View: view}
	if t.Placement() != nil {
		p.Replicas, p.Sites = t.Placement().Replicas, t.Placement().Sites
	}
	t.setPlacement(&p)
}

// Positions in Timer.heard.
const (
	heardReplicaBits = 12
	heardSiteBits    = 4
)

// heardReplicas is the mask of the replicas, by position, this node
// heard hold t's definition.
func (t *Timer) heardReplicas() uint32 { return uint32(t.heard) & (1<<heardReplicaBits - 1) }

// heardSites is the mask of the sites, by position, this node heard hold
// t's definition.
func (t *Timer) heardSites() uint32 { return uint32(t.heard) >> heardReplicaBits }

// markHeardAt marks replica position i as heard; false when i is past
// what heard keeps, or already marked.
func (t *Timer) markHeardAt(i int) bool {
	if i < 0 || i >= heardReplicaBits || t.heard&(1<<i) != 0 {
		return false
	}
	t.heard |= 1 << i
	return true
}

// markSiteHeardAt marks site position i as heard, when heard keeps it.
func (t *Timer) markSiteHeardAt(i int) {
	if i >= 0 && i < heardSiteBits {
		t.heard |= 1 << (heardReplicaBits + i)
	}
}

// CallbackURI returns the URI the timer's callback is sent to ("" for a
// tombstone that never had one). It allocates when the URI has a host.
func (t *Timer) CallbackURI() string {
	rest, _ := t.callbackParts()
	if t.host() == nil {
		return rest
	}
	return *t.host() + rest
}

// Opaque returns the opaque data the timer's callback carries.
func (t *Timer) Opaque() string {
	_, opaque := t.callbackParts()
	return opaque
}

// callbackParts decodes cb into the URI after its host, and the opaque.
func (t *Timer) callbackParts() (rest, opaque string) {
	var n uint64
	i := 0
	for shift := uint(0); i < len(t.cb); shift += 7 {
		c := t.cb[i]
		i++
		n |= uint64(c&0x7f) << shift
		if c < 0x80 {
			break
		}
	}
	body := t.cb[i:]
	return body[:n], body[n:]
}

// setCallback stores uri and opaque in t, the URI's host interned in in
// (nil shares nothing).
func (t *Timer) setCallback(uri, opaque string, in *interned) {
	t.setCallbackPlaced(uri, opaque, t.Placement(), in)
}

// setCallbackPlaced is setCallback giving t placement p too, its parts
// interned once.
func (t *Timer) setCallbackPlaced(uri, opaque string, p *Placement, in *interned) {
	host, rest := splitCallbackHost(uri)
	parts := t.key()
	parts.placement, parts.host = p, nil
	if host != "" {
		parts.host = in.host(host)
	}
	t.setKey(parts, in)
	if rest == "" && opaque == "" {
		t.cb = ""
		return
	}
	var prefix [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(prefix[:], uint64(len(rest)))
	var b strings.Builder
	b.Grow(k + len(rest) + len(opaque))
	b.Write(prefix[:k])
	b.WriteString(rest)
	b.WriteString(opaque)
	t.cb = b.String()
}

// splitCallbackHost cuts uri after its scheme://authority, the part that
// timers calling one client share. A URI without "://" has no host part.
func splitCallbackHost(uri string) (host, rest string) {
	i := strings.Index(uri, "://")
	if i < 0 {
		return "", uri
	}
	i += len("://")
	j := strings.IndexAny(uri[i:], "/?#")
	if j < 0 {
		return uri, ""
	}
	return uri[:i+j], uri[i+j:]
}

// maxCallbackHosts bounds the interned callback hosts, as maxPlacements
// bounds placements: clients are few in practice, but each names its own
// hosts, so once the bound is reached the table starts over and the hosts
// in use are interned again as they are met. Records already built keep
// their host. Interning saves memory; it never decides anything.
const maxCallbackHosts = 4096

// hostTable interns callback hosts (scheme://authority), so that the
// records of timers calling one client share one copy of it. Its key and
// value share their bytes.
type hostTable map[string]*string

// intern returns the shared copy of host, adding it if need be. A nil
// table returns a copy of its own.
func (h hostTable) intern(host string) *string {
	if p, ok := h[host]; ok {
		return p
	}
	p := new(string)
	*p = strings.Clone(host)
	if h != nil {
		if len(h) >= maxCallbackHosts {
			clear(h)
		}
		h[*p] = p
	}
	return p
}

// interned is what a node's held records share rather than each keep a
// copy of: their callback hosts, and their placements under each view
// (a placement's lists are interned by Node.placement; the view a record
// was placed under is kept with them, as records of one placement are
// nearly all placed under one or two views). A nil *interned shares
// nothing: each record gets its own.
type interned struct {
	hosts  hostTable
	placed map[placedKey]*Placement
	parts  map[partsKey]*parts
}

// parts is what a record keeps behind one pointer, so that a Timer is
// two words smaller (docs/design.md 5.1): its placement, its callback's
// host and its rarely used parts. Records of one placement, one host and
// no extra parts (or only the mark of a pop in flight, popInFlight) share
// one, interned in the node's table (interned.partsOf); a record with
// extra parts of its own has parts of its own. Never changed in place:
// a record given another placement, host or Extra gets other parts.
type parts struct {
	placement *Placement
	host      *string
	extra     *TimerExtra
	// in is the table the record's next parts are interned in (nil:
	// not shared), so that a record's own methods keep sharing them.
	in *interned
}

// partsKey is the parts of a record, without their table.
type partsKey struct {
	placement *Placement
	host      *string
	extra     *TimerExtra
}

// maxParts bounds the interned parts as maxPlacements bounds placements:
// once the bound is reached the table starts over. Interning saves
// memory; it never decides anything.
const maxParts = 4096

// partsOf returns the parts k, shared when in keeps them, nil when all
// three are nil.
func (in *interned) partsOf(k partsKey) *parts {
	if k == (partsKey{}) {
		return nil
	}
	if in == nil || in.parts == nil || (k.extra != nil && k.extra != &popInFlight) {
		return &parts{placement: k.placement, host: k.host, extra: k.extra, in: in}
	}
	if p, ok := in.parts[k]; ok {
		return p
	}
	if len(in.parts) >= maxParts {
		clear(in.parts)
	}
	p := &parts{placement: k.placement, host: k.host, extra: k.extra, in: in}
	in.parts[k] = p
	return p
}

// Placement is the interned, ordered replica list (primary first) and
// the sites the timer is replicated to, and the cluster view they were
// computed under (ViewID); nil when the record has none.
func (t *Timer) Placement() *Placement {
	if t.parts == nil {
		return nil
	}
	return t.parts.placement
}

// Extra holds the rarely used parts; nil for most timers. It is never
// changed in place: records that share it share it.
func (t *Timer) Extra() *TimerExtra {
	if t.parts == nil {
		return nil
	}
	return t.parts.extra
}

// host is the callback URI's interned scheme://authority, nil when the
// URI has none.
func (t *Timer) host() *string {
	if t.parts == nil {
		return nil
	}
	return t.parts.host
}

// key is t's parts without their table.
func (t *Timer) key() partsKey {
	if t.parts == nil {
		return partsKey{}
	}
	return partsKey{t.parts.placement, t.parts.host, t.parts.extra}
}

// table is where t's parts are interned, nil when they are not.
func (t *Timer) table() *interned {
	if t.parts == nil {
		return nil
	}
	return t.parts.in
}

// setKey gives t the parts k, interned in in.
func (t *Timer) setKey(k partsKey, in *interned) {
	if t.parts != nil && k == t.key() && in == t.parts.in {
		return
	}
	t.parts = in.partsOf(k)
}

// setPlacement gives t placement p, its other parts kept, interned where
// its parts are.
func (t *Timer) setPlacement(p *Placement) { t.setPlacementIn(p, t.table()) }

// setPlacementIn gives t placement p, its parts interned in in (a
// node's own table, for a record it holds).
func (t *Timer) setPlacementIn(p *Placement, in *interned) {
	k := t.key()
	k.placement = p
	t.setKey(k, in)
}

// putExtra gives t the extra parts e (nil: none), its other parts kept.
func (t *Timer) putExtra(e *TimerExtra) {
	k := t.key()
	k.extra = e
	t.setKey(k, t.table())
}

// placedKey is a placement's interned lists and a view.
type placedKey struct {
	lists *Placement
	view  uint64
}

// newInterned returns empty tables.
func newInterned() *interned {
	return &interned{hosts: hostTable{}, placed: map[placedKey]*Placement{}, parts: map[partsKey]*parts{}}
}

// host returns the shared copy of a callback host (see hostTable).
func (in *interned) host(h string) *string {
	if in == nil {
		return hostTable(nil).intern(h)
	}
	return in.hosts.intern(h)
}

// under returns the placement of lists (replica and site lists) under
// view: lists itself when it is under view already, else the shared
// placement of the same lists under view. It is bounded as the lists
// are (maxPlacements): once the bound is reached the table starts over.
// Interning saves memory; it never decides anything.
func (in *interned) under(lists *Placement, view uint64) *Placement {
	if lists == nil {
		if view == 0 {
			return nil
		}
		return &Placement{View: view}
	}
	if lists.View == view {
		return lists
	}
	if in == nil {
		return &Placement{Replicas: lists.Replicas, Sites: lists.Sites, View: view}
	}
	k := placedKey{lists, view}
	if p, ok := in.placed[k]; ok {
		return p
	}
	if len(in.placed) >= maxPlacements {
		clear(in.placed)
	}
	p := &Placement{Replicas: lists.Replicas, Sites: lists.Sites, View: view}
	in.placed[k] = p
	return p
}

// definitionHash fingerprints what a client defined: the timing and the
// callback, each part hashed with the previous part's hash as seed (which
// keeps it free of allocations). It is never 0, so that 0 can mean
// "unknown".
func definitionHash(interval, repeatFor time.Duration, uri, opaque string) uint32 {
	var timing [16]byte // in milliseconds, as the fingerprints on the wire and on disk were made
	binary.LittleEndian.PutUint64(timing[:8], uint64(interval.Milliseconds()))
	binary.LittleEndian.PutUint64(timing[8:], uint64(repeatFor.Milliseconds()))
	h := murmur3.SeedSum32(0x6465666e, timing[:]) // "defn"
	h = murmur3.SeedStringSum32(h, uri)
	h = murmur3.SeedStringSum32(h, opaque)
	return max(h, 1)
}

// TimerExtra holds the parts of a timer most timers do not have.
type TimerExtra struct {
	// Tags are the statistics tags of api.md.
	Tags []wire.Tag
	// Buried is the last due time (this node's clock, ms) of an older
	// definition this record replaced: a replica cut off from the
	// replacing write may pop that one until then, so a tombstone of
	// this record must outlive it
	// (TestTombstoneOfShortUpdateOutlivesTheOldDefinition).
	Buried int64
	// Replaced is the pop progress of the definitions this record
	// replaced, or the records before it replaced, when those had
	// popped: one per client write (a definition written twice is two),
	// the furthest it was told, the latest first, at most MaxReplaced.
	// A proxy that retries its write above this record's version
	// brings that definition back, and it must not pop again
	// what it popped (see keepProgress). Writes that race each retry
	// above the others, so one is not enough: the third write's record
	// took the place of the second's memory of the first, and the
	// first write's retry popped again (TestRetriesOfThreeRacingWritesDoNotPopAgain).
	// Never changed in place: records that share Extra share it.
	Replaced []Progress
	// FirstTry is the version of the first try of the client write this
	// record is a retry of (rewrite), 0 when the record is its write's
	// first try: a replica knows the tries of one write by it, whatever
	// the clocks that rebuilt their starts and dated their versions
	// (sameWrite).
	FirstTry uint64
	// Refused marks, by position in Placement.Replicas, the replicas
	// that answered a pop notice with a collision: they hold another
	// timer under this ID (two nodes issued it) and will never pop this
	// one, so the replicas ranked after them move up a rank instead of
	// popping every pop 2 s late for good (scenarios/README.md I2).
	Refused uint32
	// Lacking marks, by position in Placement.Replicas, the replicas
	// that may not hold this definition: a write of it could not place
	// it on them (its replication went unanswered, or was not taken),
	// as the write's proxy found and told the replicas that took it
	// (reliability.lacking, which every message of the definition
	// carries on), and they have not answered this node a message of it
	// since. A replica does not leave a pop to replicas that may not
	// hold it (handOnAfter): under load it would shed the pop for one
	// nobody makes (scenarios/README.md N29).
	Lacking uint32
	// SitesLacking marks, by position in Placement.Sites, the other
	// sites this node's forward of the definition has not reached: no
	// answer came (or a 5xx) since the last one that did, or none yet.
	// The write marks every other site before its forward leaves, so
	// that a forward in flight, or lost with this node in a crash,
	// counts as not reached; an answer to any message of the definition
	// forwarded there (the write's, a pop notice's) clears it. Unlike
	// Lacking, only the forwarding node knows it. The last holder of a
	// site does not leave a pop to later sites that may all lack the
	// timer (handOnAfter): under load it shed each pop for a site that
	// had never taken it.
	SitesLacking uint32
	// Missed marks, by distance below Seq (bit i is pop Seq-i), the pops
	// up to Seq that were not made as far as this replica knows: its own
	// callback failed, or a pop notice said the sender's had and no
	// replica has told of making it since. Notices carry it, so that a
	// pop one replica failed is left to the next replica even when a
	// later pop's notice arrives first (docs/design.md 4.7). Pops more
	// than MissedWindow below Seq are past every replica's turn.
	Missed uint32
	// Owed marks the pops of Missed that this replica has not attempted
	// itself: it pops them, lowest first, at their own due time plus its
	// skew, before pop Seq+1. A pop it attempted is never owed: one
	// attempt per replica per pop.
	Owed uint32
}

// MissedWindow is how many pops below a record's Seq its Missed and Owed
// marks reach.
const MissedWindow = 32

// popMarks returns t's Missed and Owed marks.
func (t *Timer) popMarks() (missed, owed uint32) {
	if t.Extra() == nil {
		return 0, 0
	}
	return t.Extra().Missed, t.Extra().Owed
}

// setPopMarks sets t's Missed and Owed marks. Extra is copied, never
// changed in place: snapshots of a record (a pop in flight, a notice)
// share it.
func (t *Timer) setPopMarks(missed, owed uint32) {
	if m, o := t.popMarks(); m == missed && o == owed {
		return
	}
	var e TimerExtra
	if t.Extra() != nil {
		e = *t.Extra()
	}
	e.Missed, e.Owed = missed, owed
	if e.empty() {
		t.putExtra(nil) // most records have no extra parts: keep them small
		return
	}
	if e.onlyMissed(1) {
		// The mark of a pop in flight on a record with no other extra
		// part, as every pop sets it: shared, never changed in place.
		t.putExtra(&popInFlight)
		return
	}
	t.setExtra(e)
}

// popInFlight is the Extra of a record whose only extra part is the
// Missed mark of its latest pop, still in flight (pop sets it until the
// callback succeeds). Extra is never changed in place, so every such
// record shares this one and a pop allocates none
// (TestPopInFlightMarkIsShared).
var popInFlight = TimerExtra{Missed: 1}

// onlyMissed reports whether e holds nothing but the Missed mark missed.
// It asks empty of the rest, so that a part added to TimerExtra is never
// dropped for the shared popInFlight.
func (e *TimerExtra) onlyMissed(missed uint32) bool {
	rest := *e
	rest.Missed = 0
	return e.Missed == missed && rest.empty()
}

// lacking returns t's Lacking mark.
func (t *Timer) lacking() uint32 { return t.mask(func(e *TimerExtra) *uint32 { return &e.Lacking }) }

// setLacking sets t's Lacking mark.
func (t *Timer) setLacking(m uint32) {
	t.setMask(func(e *TimerExtra) *uint32 { return &e.Lacking }, m)
}

// sitesLacking returns t's SitesLacking mark.
func (t *Timer) sitesLacking() uint32 {
	return t.mask(func(e *TimerExtra) *uint32 { return &e.SitesLacking })
}

// setSitesLacking sets t's SitesLacking mark.
func (t *Timer) setSitesLacking(m uint32) {
	t.setMask(func(e *TimerExtra) *uint32 { return &e.SitesLacking }, m)
}

// mask returns the mask of Extra that field picks, 0 with no Extra.
func (t *Timer) mask(field func(*TimerExtra) *uint32) uint32 {
	if t.Extra() == nil {
		return 0
	}
	return *field(t.Extra())
}

// setMask sets the mask of Extra that field picks, copying Extra as
// setPopMarks does.
func (t *Timer) setMask(field func(*TimerExtra) *uint32, m uint32) {
	if t.mask(field) == m {
		return
	}
	var e TimerExtra
	if t.Extra() != nil {
		e = *t.Extra()
	}
	*field(&e) = m
	t.setExtra(e)
}

// setExtra gives t a copy of e, or none when e holds nothing.
func (t *Timer) setExtra(e TimerExtra) {
	if e.empty() {
		t.putExtra(nil)
		return
	}
	x := new(TimerExtra) // e stays on its caller's stack when empty
	*x = e
	t.putExtra(x)
}

// empty reports whether e holds nothing, so that its record can do
// without it.
func (e *TimerExtra) empty() bool {
	return len(e.Tags) == 0 && e.Buried == 0 && len(e.Replaced) == 0 && e.Refused == 0 && e.Lacking == 0 && e.SitesLacking == 0 && e.Missed == 0 && e.Owed == 0 && e.FirstTry == 0
}

// popBit is the bit of pop p in the marks of a record at seq, or 0 when p
// is above seq or more than MissedWindow below it.
func popBit(seq, p uint32) uint32 {
	if p > seq || seq-p >= MissedWindow {
		return 0
	}
	return 1 << (seq - p)
}

// shiftMarks moves marks kept at seq from to seq to (to >= from).
func shiftMarks(marks, from, to uint32) uint32 {
	if to-from >= MissedWindow {
		return 0
	}
	return marks << (to - from)
}

// owedPop returns the lowest pop t owes (see Owed), if any.
func (t *Timer) owedPop() (uint32, bool) {
	_, owed := t.popMarks()
	if owed == 0 || t.State != Live {
		return 0, false
	}
	return t.Seq - uint32(31-bits.LeadingZeros32(owed)), true
}

// dueAt is when pop p (1-based) of t is due, before any replica skew.
func (t *Timer) dueAt(p uint32) int64 {
	if t.interval == 0 {
		return t.Start
	}
	return t.Start + int64(p)*t.Interval().Milliseconds()
}

// Progress is how far one definition of a timer popped: its fingerprint,
// timing, start and sequence number, and the first try of the client
// write it is of (Timer.firstTry; 0 when not known).
type Progress struct {
	Def                 uint32
	Seq                 uint32
	Start               int64
	Interval, RepeatFor time.Duration
	FirstTry            uint64
}

// firstTry is the version of the first try of the client write t is of:
// TimerExtra.FirstTry for a retry, t's own version otherwise.
func (t *Timer) firstTry() uint64 {
	if t.Extra() != nil && t.Extra().FirstTry != 0 {
		return t.Extra().FirstTry
	}
	return t.Version
}

// setFirstTry records that t is a retry of the client write whose first
// try is version v (0, or t's own version: t is the first try).
func (t *Timer) setFirstTry(v uint64) {
	if v == t.Version {
		v = 0
	}
	var e TimerExtra
	if t.Extra() != nil {
		e = *t.Extra()
	}
	if e.FirstTry == v {
		return
	}
	e.FirstTry = v
	t.setExtra(e)
}

// Placement is an ordered replica list (primary first, then backups) plus
// the ordered sites, and the cluster view they were computed under. Nodes
// intern placements so that timers sharing one share the memory; a
// placement is never changed in place.
type Placement struct {
	Replicas []string
	Sites    []string
	// View is the cluster view the lists were computed under (a record's
	// ViewID); 0 in the lists Node.placement interns.
	View uint64
}

// Due returns the time at which the store will hand the timer back.
func (t *Timer) Due() int64 { return t.due }

// Tags returns the timer's statistics tags, or nil.
func (t *Timer) Tags() []wire.Tag {
	if t.Extra() == nil {
		return nil
	}
	return t.Extra().Tags
}

// NextPopAt returns the due time of the pop this replica makes next,
// before any replica skew: the lowest pop it owes (see TimerExtra.Owed),
// else pop Seq+1 if that falls within repeat-for.
func (t *Timer) NextPopAt() (int64, bool) {
	p, ok := t.nextPop()
	if !ok {
		return 0, false
	}
	return t.dueAt(p), true
}

// nextPop returns the number of the pop this replica makes next, and
// whether there is one.
func (t *Timer) nextPop() (uint32, bool) {
	if t.State != Live {
		return 0, false
	}
	if p, ok := t.owedPop(); ok {
		return p, true
	}
	if t.interval == 0 {
		return 1, t.Seq == 0
	}
	if int64(t.Seq)+1 > int64(t.repeatFor/t.interval) { // (Seq+1)*Interval > RepeatFor, which cannot overflow
		return 0, false
	}
	return t.Seq + 1, true
}

// lastDue is the latest due time of t or of any definition it replaced.
func (t *Timer) lastDue() int64 {
	end := t.Start + t.RepeatFor().Milliseconds()
	if t.Extra() != nil {
		end = max(end, t.Extra().Buried)
	}
	return end
}

// MaxReplaced bounds how many other definitions' progress a record
// remembers (TimerExtra.Replaced): as many client writes of one timer
// racing each other within a retry window.
const MaxReplaced = 4

// replaced records the progress of definitions t replaces, the latest
// first, ahead of what it remembers already (see TimerExtra.Replaced):
// one per client write (oneWrite), at most MaxReplaced. Of one write it
// keeps the furthest progress, whichever came last: what a replica knows
// was popped of a write only grows. A notice of the write that its
// sender sent before it had popped as far reaches this replica after the
// write was replaced here, and, taken as the latest, it put back pops
// this replica had made, which the write's retry then popped again
// (TestLateNoticeDoesNotLowerTheProgressRemembered). Another write of
// the same definition is kept beside it, not in its place: a late notice
// of an earlier write took the place of a later one's memory
// (TestLateNoticeOfAnotherWriteKeepsTheProgressRemembered).
func (t *Timer) replaced(ps ...Progress) {
	var e TimerExtra
	if t.Extra() != nil {
		e = *t.Extra()
	}
	list := make([]Progress, 0, min(len(ps)+len(e.Replaced), MaxReplaced))
	for _, p := range slices.Concat(ps, e.Replaced) {
		if p.Def == 0 {
			continue
		}
		i := slices.IndexFunc(list, func(q Progress) bool { return q.Def == p.Def && oneWrite(q, p) })
		switch {
		case i >= 0:
			if p.Seq > list[i].Seq {
				list[i] = p
			}
		case len(list) < MaxReplaced:
			list = append(list, p)
		}
	}
	e.Replaced = nil
	if len(list) > 0 {
		e.Replaced = list
	}
	t.setExtra(e)
}

// oneWrite reports whether p and q, progress of one definition, are of
// one client write: tries that name the same first try, or that share
// the first try's start, which a retry keeps (rewrite) and by which a
// sender's build that names no first try tells its tries.
func oneWrite(p, q Progress) bool {
	return p.FirstTry != 0 && p.FirstTry == q.FirstTry || p.Start == q.Start
}

// remembered returns what t remembers (TimerExtra.Replaced) of the
// client write in is a try of (sameWrite, by a retry window of window
// ms), or else the latest it remembers of in's definition, if any.
func (t *Timer) remembered(window int64, in *Timer) (Progress, bool) {
	var latest Progress
	found := false
	if t.Extra() != nil {
		for _, p := range t.Extra().Replaced {
			if p.Def != in.def {
				continue
			}
			if sameWrite(window, p, 0, in, &probeHits{}) {
				return p, true
			}
			if !found {
				latest, found = p, true
			}
		}
	}
	return latest, found
}

// bury records that t replaced a definition due until end. The extra
// record is allocated only when an update shortens a timer's life.
func (t *Timer) bury(end int64) {
	if end <= t.lastDue() {
		return
	}
	var e TimerExtra
	if t.Extra() != nil {
		e = *t.Extra()
	}
	e.Buried = end
	t.putExtra(&e)
}

// newTimer builds the record of one definition of timer id, its callback
// host and its placement under view interned in in (nil: not shared).
func newTimer(id, version uint64, spec wire.Timer, start int64, seq uint32, p *Placement, view uint64, in *interned) *Timer {
	t := makeTimer(id, version, spec, start, seq, p, view, in)
	return &t
}

// makeTimer is newTimer for a record that lives inside another value
// (write.rec).
func makeTimer(id, version uint64, spec wire.Timer, start int64, seq uint32, p *Placement, view uint64, in *interned) Timer {
	t := Timer{
		ID: id, Version: version, Start: start,
		Seq: seq, RF: uint8(spec.ReplicationFactor),
	}
	t.setTiming(spec.Interval, spec.RepeatFor)
	t.setCallbackPlaced(spec.URI, spec.Opaque, in.under(p, view), in)
	if deletes(spec) {
		t.State = Tombstone
	} else {
		t.def = definitionHash(t.Interval(), t.RepeatFor(), spec.URI, spec.Opaque)
	}
	if len(spec.Tags) > 0 {
		t.putExtra(&TimerExtra{Tags: spec.Tags})
	}
	return t
}
