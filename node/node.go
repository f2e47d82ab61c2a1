package node

import (
	"fmt"

	"github.com/chronos-timer/chronos/wire"

	"hash"
	"log/slog"
	"net/netip"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/twmb/murmur3"
)

// TombstoneMin is how long a tombstone of a zero-interval timer is kept: a
// tombstone normally lives one interval (api.md), which for interval 0
// would not outlast a delayed replication message.
const TombstoneMin = 10 * time.Second

// MaxLackingHold bounds how long past its life a tombstone is kept while
// a replica of its timer may lack it (TimerExtra.Lacking: the write's
// replication to it went unanswered). Such a replica may hold an older
// definition and pop it whenever it is reachable again; the tombstone
// must still be there to answer its notice, or to be pushed to it by a
// repair round (lackingTombstone). A replica that stays away longer than
// this may bring the older definition back.
const MaxLackingHold = time.Hour

// Node is one Chronos node: the replicating proxy and the local timer
// wheel. It is single-threaded: the driver calls Handle, alarm callbacks and
// network completions one at a time, never concurrently.
type Node struct {
	cfg Config
	// macs sign and check internal requests under the cluster keys, the
	// signing key first (see newMACs); none without a key.
	macs []hash.Hash
	// peerIPs are the addresses a node without a key takes internal
	// requests from (see fromMember).
	peerIPs map[netip.Addr]bool
	// scratch is the buffer signatures are made in.
	scratch []byte
	log     *slog.Logger
	self    string
	clock   Clock
	net     Network

	ring *Ring
	// prevRing is the ring of the view before the latest change of view
	// (nil before the first): where the records a hand-off moves were
	// placed before it (handOffTargets).
	prevRing *Ring
	// scaleFrom is, while the membership names joining or leaving
	// nodes (a scale under way), the ring of the view the scale started
	// from: the steady members and the leaving ones (nil otherwise). A
	// node started since the scale began knows it from its membership
	// alone (pastRings).
	scaleFrom *Ring
	ids       idGen
	instance  int
	// instanceHeader is instanceHeaderOf this node, which every
	// internal request carries: written when the number is set.
	instanceHeader string
	store          *Store
	callbacks      *CallbackPolicy
	// hostVerdicts caches the policy's verdict per callback host
	// (scheme://authority), at most maxCallbackHosts (see hostVerdict).
	hostVerdicts map[string]error
	// heldBytes is what the held records count against
	// Limits.MaxHeldBytes (see recordBytes).
	heldBytes int64

	alarm    Alarm
	alarmAt  int64
	alarmGen uint64
	popping  bool
	popBuf   []*Timer

	placements map[string]*Placement
	replicaBuf []string  // placeNow's scratch
	shared     *interned // callback hosts and placements the held records share
	inFlight   int
	stats      Stats
	shedLog    shedLog

	// resyncGen numbers the resyncs started; resyncStatus is the latest's
	// progress, and resyncRepopulate whether it repopulates (resync.go).
	resyncGen        uint64
	resyncStatus     ResyncStatus
	resyncRepopulate bool

	// rand is the node's seeded randomness (jitter only); repairAlarm
	// and repairGen are the next repair round's (repair.go).
	rand        rng
	repairAlarm Alarm
	repairGen   uint64
	// repairMarks counts the notes that the replicas may differ
	// (repairNeeded); repairAsked is, for each peer, the count its last
	// round started under. A peer is owed a round while the two differ:
	// a note is discharged only by a round with that peer begun after it,
	// not by a round that left the peer out because one with it was
	// still under way (repairRound).
	repairMarks uint64
	repairAsked map[string]uint64
	repairBusy  map[string]bool
	// repairRoom is what is left of this node's room (room) for the
	// records its current round asks its peers for and holds none of.
	repairRoom room
	// lackedRoomAt, when set, is the node's room when it last refused a
	// record at a limit, or left one out of a round's asks for want of
	// room; it runs a round once it has more (roomFreed).
	lackedRoomAt *room
	// peerRoom is this node's one account of each peer's room, which
	// repair's pushes and hand-offs to the peer draw on alike
	// (roomAccount); handOffHeld the peers a hand-off held records back
	// from for want of it (handOffRoom).
	peerRoom    map[string]*roomAccount
	handOffHeld map[string]bool
	// repairMarkedNext is, per peer, the ID the next round's pushes of
	// the records marking the peer as may lack them take up from, when
	// the last round pushed a page of them and left some (repairLacking).
	repairMarkedNext map[string]uint64
	// repairOwedFull are the peers whose next round leaves nothing out
	// as young (repairAges): every peer after a start or a change of
	// membership, until a full round with it is answered.
	repairOwedFull map[string]bool
	// repairServing is, per peer, the round of the peer's this node is
	// answering page by page (repairServe).
	repairServing map[string]*repairServed
	// collisions are the collision refusals between this node and its
	// peers that keep repair from sending the refused records again
	// while neither side's record changes (repaircollision.go).
	collisions map[collisionKey]collisionNote
	// repairWalks counts the walks of the store repair took (heldFor).
	repairWalks int
	// startPushes are the pushes of an earlier start under way, by timer
	// and peer (pushStart): one at a time, however many messages with
	// the later start the peer sends meanwhile.
	startPushes map[startPush]bool
	// tombsHanded are the tombstones (ID to version) this node holds but
	// is not a replica of that every replica its latest change of view
	// added holds: handOff pushes them no more. A change of view empties
	// it (placeAll).
	tombsHanded map[uint64]uint64
	// handing are the records a hand-off is pushing, by ID: a later
	// hand-off of the same copy waits for that push's outcome instead
	// of pushing it again (handOff).
	handing map[uint64]*handingOff
	// handHeard are, by ID, the targets of a hand-off that answered
	// that they hold the copy it pushed (or something newer), while
	// another may lack it: later hand-offs of that copy push them no
	// more until every target is heard (handOff).
	handHeard map[uint64]*heardCopy
	// clashes are the other nodes known to use this node's instance
	// number, with until when (ms); peerInstances the number each peer
	// was last heard with (instance.go).
	clashes       map[string]int64
	peerInstances map[string]int
	// probeHits counts the passes through each coverage probe (probe.go).
	probeHits []uint64
	persist   persist
	// bulk is the flow control of the bulk sends (resync and hand-off)
	// under way, per peer (flow.go).
	bulk map[string]*bulkPeer
}

// Stats are the node's plain counters, read by the production adapter's
// metrics and by tests.
type Stats struct {
	// Timers is the number of live timers held; Tombstones the deleted or
	// finished ones still kept.
	Timers     int
	Tombstones int
	// Pops counts callbacks sent; CallbackFailures those that failed.
	Pops             uint64
	CallbackFailures uint64
	// PopLatenessMs accumulates how late pops were sent, in milliseconds,
	// relative to their skewed due time.
	PopLatenessMs uint64
	// ReplicationsSent and ReplicationsReceived count internal PUTs (to
	// the replicas of this site and to other sites); of those sent,
	// ReplicationsFailed had no answer (an error, a timeout, shed by the
	// driver) and ReplicationsRefused an answer other than 2xx (409 for a
	// newer record or a collision, 403, 503).
	ReplicationsSent     uint64
	ReplicationsReceived uint64
	ReplicationsFailed   uint64
	ReplicationsRefused  uint64
	// HeldBytes is what the held records count against
	// Limits.MaxHeldBytes: their callback URIs and opaque data, and
	// RecordOverheadBytes each.
	HeldBytes int64
	// ShedTimers counts the requests refused with 503 because the node
	// holds Limits.MaxTimers (client writes and replicas it could not
	// take); ShedBytes those refused because they would take it past
	// Limits.MaxHeldBytes; ShedInFlight those refused because it has
	// Limits.MaxInFlight requests outstanding.
	ShedTimers   uint64
	ShedBytes    uint64
	ShedInFlight uint64
	// IDCollisions counts records refused because they belong to another
	// timer under the same ID (see collides), and creates this node
	// restarted under a fresh ID because of one.
	IDCollisions uint64
	// InstanceClashes counts the other nodes heard issuing IDs with this
	// node's instance number (instance.go).
	InstanceClashes uint64
	// Forbidden counts internal requests refused for want of a valid
	// cluster key signature (or, without a key, because they came from
	// outside the cluster); Misaddressed those addressed to another
	// member; Stale those sent longer ago than MaxMessageAge plus
	// MaxClockSkew, or dated more than MaxClockSkew ahead (see admit).
	Forbidden    uint64
	Misaddressed uint64
	Stale        uint64
	// CallbacksRefused counts the records refused because the callback
	// policy forbids their callback (CallbackPolicy), whichever path
	// brought them; DeadlinePassed the client writes refused because
	// their deadline had passed (HeaderDeadline).
	CallbacksRefused uint64
	DeadlinePassed   uint64
	// ResyncPagesServed counts the GET /timers pages this node answered;
	// ResyncReferences the DELETE /timers/references entries it received.
	ResyncPagesServed uint64
	ResyncReferences  uint64
	// RepairRounds counts the repair rounds this node started;
	// RepairPushes the records it sent a peer because the peer held an
	// older one or none, RepairWants those it asked a peer for, and
	// RepairHandoffs the records it held without being their replica
	// and passed on to their replicas (repair.go). RepairListed counts
	// the records it listed in its answers to its peers' rounds: what
	// the rounds cost it beyond one walk of its store a page.
	// RepairHeldForRoom counts the records a round did not push a peer,
	// or ask a peer for, because the node that lacks them had no room
	// for them (room). RepairCollisionsSkipped counts the records a
	// round did not push a peer, or ask a peer for, because the peer and
	// this node refused each other's record of the timer as a collision
	// and neither record changed since (collisionStands).
	RepairRounds, RepairPushes, RepairWants, RepairHandoffs, RepairListed, RepairHeldForRoom uint64
	RepairCollisionsSkipped                                                                  uint64
	// LateRebalanced counts the messages a node sent placing a record
	// written under another view on the current one as it arrived, during
	// a scale (see lateRebalance).
	LateRebalanced uint64
	// StorageFailures counts the barriers the Storage failed: the
	// answers waiting on them were 503s.
	StorageFailures uint64
	// Tags counts live timers per statistics tag (weighted by count).
	Tags map[string]int
}

// New returns a node for cfg, or the first reason cfg is invalid.
func New(cfg Config) (*Node, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Validate has checked both.
	instance, _ := InstanceFor(cfg.Address, cfg.InstanceID, cfg.Cluster.withSelf(cfg.Address))
	callbacks, _ := cfg.CallbackPolicy()
	n := &Node{
		cfg:            cfg,
		macs:           newMACs(cfg),
		log:            log.With("node", cfg.Address),
		self:           cfg.Address,
		clock:          cfg.Clock,
		net:            cfg.Network,
		ids:            newIDGen(uint64(instance), cfg.MaxClockLead.Milliseconds()),
		instance:       instance,
		instanceHeader: instanceHeaderOf(instance, cfg.Address),
		callbacks:      callbacks,
		hostVerdicts:   map[string]error{},
		placements:     map[string]*Placement{},
		shared:         newInterned(),
		stats:          Stats{Tags: map[string]int{}},
		repairBusy:     map[string]bool{},
		repairAsked:    map[string]uint64{},
		clashes:        map[string]int64{},
		peerInstances:  map[string]int{},
		probeHits:      make([]uint64, len(probeNames)),
	}
	n.store = NewStore(n.nowMs())
	n.store.KeyIndex(cfg.Seed)
	if cfg.Storage != nil {
		n.persist.marked = map[uint64]struct{}{}
		n.store.changed = n.mark
	}
	n.setCluster(cfg.Cluster)
	n.rand = rng{state: cfg.Seed ^ uint64(murmur3.StringSum32(cfg.Address))}
	// A node that starts may have lost what it held: compare soon, in
	// full.
	n.repairSoon()
	return n, nil
}

// Instance returns the instance number the node issues IDs with, and
// whether it was derived from the membership rather than configured.
func (n *Node) Instance() (id int, derived bool) {
	return n.instance, n.cfg.InstanceID == AutoInstanceID
}

// SetCluster replaces the cluster membership (a configuration reload).
// When the cluster view changes it starts a resync to it (see Resync),
// ending any resync still running; timers are also moved as they are
// written (passive rebalancing).
//
// A derived instance number may change with the membership (a clash with
// a new member). IDs the node issues under the new number then start
// MaxClockLead ahead of its clock, past any ID the number's previous
// holder can have issued while its own reload was still on its way.
func (n *Node) SetCluster(m Membership) error {
	if err := m.validate(n.self); err != nil {
		return err
	}
	instance, err := InstanceFor(n.self, n.cfg.InstanceID, m.withSelf(n.self))
	if err != nil {
		return err
	}
	renumbered := instance != n.instance
	if renumbered {
		n.hit(probeClusterRenumbered)
		n.log.Warn("instance number changed with the membership", "from", n.instance, "to", instance)
		n.instance = instance
		n.instanceHeader = instanceHeaderOf(instance, n.self)
		n.ids.renumber(uint64(instance), n.nowMs())
	}
	prev, before := n.ring, n.cfg.Cluster
	n.setCluster(m)
	n.forgetClashes(renumbered)
	if n.ring.ViewID() != prev.ViewID() {
		n.prevRing = prev
		n.placeAll()
		n.Resync(false)
	}
	if !sameMembership(before, n.cfg.Cluster) {
		// Compare with the peers soon, in full: they reload at their own
		// moments, and a round with one not yet reloaded is asked again.
		n.repairSoon()
	}
	return nil
}

func (n *Node) setCluster(m Membership) {
	m = m.withSelf(n.self)
	// New placements go to the steady and joining nodes; leaving nodes
	// only hold what they had.
	members := append(append([]string{}, m.Nodes...), m.Joining...)
	n.cfg.Cluster = m
	n.peerIPs = n.peerAddrs(m)
	n.ring = NewRing(members)
	n.scaleFrom = nil
	if len(m.Joining)+len(m.Leaving) > 0 {
		if from := NewRing(append(slices.Clone(m.Nodes), m.Leaving...)); from.ViewID() != n.ring.ViewID() {
			n.scaleFrom = from
		}
	}
}

// inMembership reports whether addr is a member of this node's
// membership: steady, joining or leaving.
func (n *Node) inMembership(addr string) bool {
	return slices.Contains(n.ring.members, addr) || slices.Contains(n.cfg.Cluster.Leaving, addr)
}

// pastRings appends to dst the rings of the views before this node's
// own that a timer may still be placed under somewhere: the view before
// its latest change of view, and the view the scale under way started
// from (the two are one for a member that reloaded into the scale; a
// node started since knows only the second). A node that held a timer
// under one of them keeps its copy live until the new replicas hold it
// (handOff), so a write must reach it too (alsoHolders).
func (n *Node) pastRings(dst []*Ring) []*Ring {
	for _, r := range [...]*Ring{n.prevRing, n.scaleFrom} {
		if r != nil && r.ViewID() != n.ring.ViewID() && !slices.ContainsFunc(dst, func(d *Ring) bool { return d.ViewID() == r.ViewID() }) {
			dst = append(dst, r)
		}
	}
	return dst
}

// Address returns the node's address as the cluster knows it.
func (n *Node) Address() string { return n.self }

// Membership returns a copy of the membership the node runs with.
func (n *Node) Membership() Membership { return n.cfg.Cluster.withSelf(n.self) }

// ViewID returns the cluster view new timers are placed under: the
// steady and joining members.
func (n *Node) ViewID() uint64 { return n.ring.ViewID() }

// Stats returns a snapshot of the node's counters.
func (n *Node) Stats() Stats {
	s := n.stats
	s.HeldBytes = n.heldBytes
	s.Tags = make(map[string]int, len(n.stats.Tags))
	for k, v := range n.stats.Tags {
		s.Tags[k] = v
	}
	return s
}

// Timer returns a copy of the timer held under id and whether there is
// one, for tests and the placement checker.
func (n *Node) Timer(id uint64) (Timer, bool) {
	t := n.store.Get(id)
	if t == nil {
		return Timer{}, false
	}
	return *t, true
}

// Held calls fn for every timer held, in pop order, for the placement
// checker and resync.
func (n *Node) Held(fn func(*Timer) bool) { n.store.Ascend(fn) }

// Handle serves one inbound request and calls reply exactly once, possibly
// later (after replicas acknowledge), from a network completion.
func (n *Node) Handle(req Request, reply func(Response)) {
	if req.Header.Get(HeaderInstance) != "" {
		answer := reply
		reply = func(r Response) {
			if twin := n.twinOf(req); twin != "" {
				if r.Header == nil {
					r.Header = Header{}
				}
				r.Header[HeaderInstanceClash] = twin
			}
			answer(r)
		}
	}
	if n.cfg.Storage != nil && req.Method != "GET" && req.Method != "HEAD" {
		// Anything but a read may change records: its answer waits
		// until they are durable (persist.go).
		reply = n.durably(reply)
	}
	path, _, _ := strings.Cut(req.URL, "?")
	if resp, late := n.expired(req); late {
		reply(resp)
		return
	}
	switch {
	case path == "/ping":
		if req.Method != "GET" && req.Method != "HEAD" {
			reply(methodNotAllowed("GET, HEAD"))
			return
		}
		// The driver sends no body for HEAD, as net/http does.
		reply(text(200, "OK"))
	case path == "/timers":
		switch req.Method {
		case "POST":
			n.create(req.Body, reply)
		case "GET":
			n.resyncGet(req, reply)
		default:
			reply(methodNotAllowed("POST, GET"))
		}
	case path == repairPath:
		n.route(req, reply, "POST", func() { n.repairServe(req, reply) })
	case path == "/timers/references":
		n.route(req, reply, "DELETE", func() { n.references(req, reply) })
	case strings.HasPrefix(path, "/timers/"):
		id := strings.TrimPrefix(path, "/timers/")
		switch req.Method {
		case "PUT":
			n.put(id, req, reply)
		case "DELETE":
			n.remove(id, reply)
		case "GET":
			n.get(id, req, reply)
		default:
			reply(methodNotAllowed("GET, PUT, DELETE"))
		}
	default:
		reply(text(404, "no such resource: "+path))
	}
}

func (n *Node) route(req Request, reply func(Response), method string, serve func()) {
	if req.Method != method {
		reply(methodNotAllowed(method))
		return
	}
	serve()
}

func (n *Node) nowMs() int64 { return n.clock.Now().UnixMilli() }

// startMs is the node's time rounded up to the millisecond: the start of a
// definition a client writes now, and the base a replica adds a received
// start-time-delta to. Senders compute deltas against their truncated
// time (nowMs) and receivers apply them to their rounded-up time, so a
// start can only move later on its way from node to node, and no pop can
// precede the request's arrival + interval on the popping node's clock,
// by any fraction of a millisecond.
func (n *Node) startMs() int64 {
	t := n.clock.Now()
	ms := t.UnixMilli()
	if t.Sub(time.UnixMilli(ms)) > 0 {
		ms++
	}
	return ms
}

// shed refuses a client write of a body of size bytes with 503 when the
// node is at a limit, and counts and logs it (see noteShed), or while
// another node shares its instance number (clashing); ok is false when
// the node takes it. The body bounds the record's bytes from above.
func (n *Node) shed(size int) (resp Response, ok bool) {
	if resp, clash := n.clashing(); clash {
		n.hit(probeClashRefused)
		return resp, true
	}
	switch {
	case n.store.Len() >= n.cfg.Limits.MaxTimers:
		n.hit(probeShedTimers)
		reason := fmt.Sprintf("node holds %d timers, its limit", n.store.Len())
		n.noteShed(&n.stats.ShedTimers, reason)
		n.lackingRoom()
		return unavailable(reason), true
	case n.heldBytes+int64(size+RecordOverheadBytes) > n.cfg.Limits.MaxHeldBytes:
		reason := fmt.Sprintf("node holds %d bytes of timers, and a body of %d would take it past its budget of %d",
			n.heldBytes, size, n.cfg.Limits.MaxHeldBytes)
		n.noteShed(&n.stats.ShedBytes, reason)
		n.lackingRoom()
		return unavailable(reason), true
	case n.inFlight >= n.cfg.Limits.MaxInFlight:
		n.hit(probeShedInFlight)
		reason := fmt.Sprintf("node has %d requests in flight, its limit", n.inFlight)
		n.noteShed(&n.stats.ShedInFlight, reason)
		return unavailable(reason), true
	}
	return Response{}, false
}

// ShedLogInterval is the least time between two log lines about requests
// the node refused at a limit: under overload every request is refused,
// and one line per request would flood the log.
const ShedLogInterval = 10 * time.Second

// shedLog is the state of the lines about load shed: when the last was
// written (this node's clock, ms) and how many requests were refused
// since.
type shedLog struct {
	written bool
	lastMs  int64
	since   uint64
}

// noteShed counts a request refused at a limit in counter, and logs it
// unless a line was written less than ShedLogInterval ago; the next line
// tells how many were refused in between.
func (n *Node) noteShed(counter *uint64, reason string) {
	*counter++
	n.shedLog.since++
	now := n.nowMs()
	if n.shedLog.written && now-n.shedLog.lastMs < ShedLogInterval.Milliseconds() {
		return
	}
	n.log.Warn("load shed: requests refused with 503 at a limit", "reason", reason,
		"refused", n.shedLog.since, "interval", ShedLogInterval)
	n.shedLog = shedLog{written: true, lastMs: now}
}

// send sends req, counting it against MaxInFlight until done runs. The
// answer to an internal request may name a node that shares this one's
// instance number (clashTold); a callback endpoint's answer is never read
// for it.
func (n *Node) send(req Request, timeout time.Duration, done func(Response, error)) {
	n.inFlight++
	internal := req.Header.Get(HeaderInstance) != ""
	n.net.Send(req, timeout, func(resp Response, err error) {
		n.inFlight--
		if internal && err == nil {
			n.clashTold(resp)
		}
		done(resp, err)
	})
}

func text(status int, body string) Response {
	return Response{
		Status: status,
		Header: Header{HeaderContentType: "text/plain; charset=utf-8"},
		Body:   []byte(body),
	}
}

// MaxReasonBytes bounds the Reason header of an error response: a reason
// that quotes a client's value (a callback URI of up to MaxBodyBytes) is
// cut there, and only the body carries it whole.
const MaxReasonBytes = 512

func badRequest(reason string) Response {
	r := text(400, reason)
	r.Header[wire.HeaderReason] = headerReason(reason)
	return r
}

// headerReason is reason cut to MaxReasonBytes on a UTF-8 boundary, with
// header-breaking control characters replaced.
func headerReason(reason string) string {
	if len(reason) > MaxReasonBytes {
		cut := MaxReasonBytes
		for cut > 0 && !utf8.RuneStart(reason[cut]) {
			cut--
		}
		reason = reason[:cut] + "..."
	}
	return strings.Map(func(r rune) rune {
		if r < ' ' || r == 0x7f {
			return ' '
		}
		return r
	}, reason)
}

func methodNotAllowed(allow string) Response {
	r := text(405, "method not allowed; allowed: "+allow)
	r.Header["Allow"] = allow
	return r
}

func unavailable(reason string) Response {
	r := text(503, reason)
	r.Header[wire.HeaderReason] = headerReason(reason)
	r.Header[wire.HeaderRetryAfter] = "1"
	return r
}
