package node

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// Supersedes reports whether incoming should replace existing, both being
// records of the same timer ID. This is the conflict rule every replica
// applies, whether the record comes from a client write, a replica's pop
// notice, a tombstone or (later) a resync:
//
//   - a later client write wins: Version orders definitions;
//   - within one definition, the record that has popped further wins: Seq
//     orders pops, so a stale or duplicated pop notice changes nothing;
//   - a tombstone of a definition beats that definition at any Seq (the
//     final pop, or the record dropped by rebalancing) and is itself final;
//     a copy kept as moved away is the least final of them: the
//     definition's end (a Tombstone of its version) replaces it, so that
//     a stale live offer of the ended definition cannot take it back
//     (movedBack).
//
// Records of one definition at one Seq may still differ in which pops
// they know were missed; apply merges that knowledge (mergeMarks).
func Supersedes(existing, incoming *Timer) bool {
	switch {
	case existing == nil:
		return true
	case incoming.Version != existing.Version:
		return incoming.Version > existing.Version
	case existing.State == Moved:
		return incoming.State == Tombstone
	case existing.State != Live:
		return false
	case incoming.State != Live:
		return true
	default:
		return incoming.Seq > existing.Seq
	}
}

// applied is the outcome of offering a record to a replica.
type applied struct {
	// ok is false only when the node could not take the timer (full).
	ok bool
	// newer is the definition held when the record was of an older
	// version: a writing proxy retries above it, a popping replica that
	// missed a delete or update adopts it (read repair).
	newer *Timer
	// collision is set when the node holds another timer under the ID.
	collision bool
	// took is set when the record replaced what the node held;
	// buriedLive when it was a tombstone that replaced a copy of a
	// definition: live, or the tombstone of one that finished or was
	// deleted (it spans from its start, holding that definition's
	// timing). Such a node is one of that definition's replicas, which
	// their pop notices reach (see write's buried).
	took, buriedLive bool
	// refusal, with ok false, is the answer to a record the node may not
	// hold: its callback policy forbids the callback, or it is full.
	refusal *Response
	// dropped, with took, are the replicas of the live record the taken
	// one replaced that the taken one's placement leaves out (see
	// droppedReplicas).
	dropped []string
}

// collides reports whether incoming and existing, two records under one
// ID, belong to different timers: two nodes issued the same ID (their
// instance numbers clashed), or a client created a timer with a PUT to an
// ID a node later issued. Such records must never replace each other.
//
//   - Records of one version are one client write: if they fingerprint
//     different definitions, the write was two creates.
//   - A record whose version is its ID is a create (or the create's final
//     or withdrawn tombstone). Every later write of that timer has a higher
//     version, so a record held below it belongs to another timer.
func collides(existing, incoming *Timer) bool {
	switch {
	case existing == nil:
		return false
	case existing.Version == incoming.Version:
		return existing.def != 0 && incoming.def != 0 && existing.def != incoming.def
	default:
		return incoming.Version == incoming.ID && existing.Version < incoming.Version
	}
}

// apply offers t (built from a client write or a replication message) to
// this replica: merge decides, apply carries the decision out on the store
// and the counters.
func (n *Node) apply(t *Timer) applied {
	now := n.nowMs()
	n.ids.observe(t.Version, now)
	n.placeNow(t)
	if t.State == Live && slices.Contains(t.Placement().Replicas, n.self) {
		// A record this replica would hold and pop: its own callback
		// policy decides, whichever path brought it (allow.go).
		if refusal := n.refuseRecord(t); refusal != nil {
			return applied{refusal: refusal}
		}
	}
	existing := n.store.Get(t.ID)
	env := n.mergeEnv(now)
	r := merge(&env, existing, *t)
	if n.logsTimers() {
		n.logTimer("apply", t, "verdict", verdictName(r.verdict), "held_changed", r.heldChanged)
	}
	n.hits(&r.probeHits)
	if r.heldChanged {
		n.update(existing, &r.held, r.reschedule)
	}
	switch r.verdict {
	case collided:
		n.stats.IDCollisions++
		return applied{collision: true}
	case kept:
		return applied{ok: true}
	case older:
		return applied{ok: true, newer: existing}
	case full:
		if a, refused := n.refuseFull(existing, &r.in); refused {
			return a
		}
		return applied{ok: r.in.State != Live}
	}
	if a, refused := n.refuseFull(existing, &r.in); refused {
		return a // past the byte budget (budget.go)
	}
	*t = r.in
	buriedLive := t.State == Tombstone && existing != nil &&
		(existing.State == Live || existing.State == Tombstone && existing.lastDue() > existing.Start)
	dropped := droppedReplicas(existing, t, n.self)
	n.release(existing)
	n.holdNext(t)
	n.repairNeeded()
	if r.carried {
		// Pops made here of an earlier try of this write: the notices
		// sent of them went to that try's replicas, which need not be
		// this record's. Every pop made is told to every replica of
		// the record it counts for, or a replica that never heard of
		// it pops it again at its rank (scenarios/README.md N54,
		// TestReplicaThatCarriesPopsIntoARetryTellsTheRetrysReplicas).
		n.hit(probeCarriedTold)
		n.notifyPopped(t)
	}
	return applied{ok: true, took: true, buriedLive: buriedLive, dropped: dropped}
}

// droppedReplicas returns the replicas of existing, a live record that
// t replaces, that t's placement leaves out, this node aside. Both are
// placed by this node's view, so they differ only when the two writes
// gave the timer different replication factors: a write that learnt its
// factor while another write changed it (an update without a factor read
// the timer ended, and took the default, while a concurrent update made
// it live again with a larger factor). The replicas left out hold the
// replaced definition live, and no writer knows them: they are told of
// t, or they pop the replaced definition until a repair round reaches
// them (TestReplacedRecordReachesTheReplicasItsFactorDrops).
func droppedReplicas(existing, t *Timer, self string) []string {
	if existing == nil || existing.State != Live || existing.Placement() == nil || t.Placement() == nil {
		return nil
	}
	var out []string
	for _, r := range existing.Placement().Replicas {
		if r != self && !slices.Contains(t.Placement().Replicas, r) {
			out = append(out, r)
		}
	}
	return out
}

// mergeEnv is what merge may know of this node, now.
func (n *Node) mergeEnv(now int64) mergeEnv {
	return mergeEnv{
		self: n.self, now: now,
		full:               n.store.Len() >= n.cfg.Limits.MaxTimers,
		retryWindow:        n.retryWindow().Milliseconds(),
		replicationTimeout: n.cfg.ReplicationTimeout,
		maxClockSkew:       n.cfg.MaxClockSkew.Milliseconds(),
	}
}

// update gives held, a record in the store, what a merge decided for it,
// moving it to its new due time when reschedule is set.
func (n *Node) update(held, to *Timer, reschedule bool) {
	if !reschedule {
		held.assign(to)
		n.changedInPlace(held)
		return
	}
	n.release(held)
	held.assign(to)
	n.holdNext(held)
}

// retryWindow bounds how much later a proxy's retry of a write starts
// than its first try: one replication round per try.
func (n *Node) retryWindow() time.Duration {
	return n.cfg.ReplicationTimeout * (maxWriteRetries + 1)
}

// earliestStart gives held, a record in the store, the earlier start of
// its definition that a replica answered (see the function of that name).
func (n *Node) earliestStart(held, answered *Timer) {
	if earliestStart(held, answered) {
		n.hit(probeEarliestStart)
		n.reschedule(held)
	}
}

// aheadOfClock reports whether a record another node sent, of version,
// was versioned by a clock more than twice MaxClockLead ahead of this
// one's (see idGen.ahead): a replica takes no such record, by whatever
// path it comes (a replication, a resync page, the newer record a peer
// answers a notice or a forward with). Taken from an answer, it replaced
// an acknowledged update made after it, for as long as the clock that
// versioned it had run ahead (TestRecordTooFarAheadIsNotTakenFromAnAnswer).
func (n *Node) aheadOfClock(version uint64) bool {
	if n.ids.ahead(version, n.nowMs()) {
		n.hit(probeReplicaAhead)
		return true
	}
	return false
}

// replicaPut applies a replication message from another node, from,
// sent at sent on its clock, or places a timer forwarded from another
// site on this site's replicas. A replica that sends a live record holds
// it: the node it sent it to may leave a pop to it (Timer.heard).
func (n *Node) replicaPut(id uint64, spec wire.Timer, r *wire.Replication, from string, sent int64, reply func(Response)) {
	n.stats.ReplicationsReceived++
	if n.aheadOfClock(r.Version) {
		reply(badRequest(fmt.Sprintf("timing.version %d is dated %d ms after this node's clock, more than twice MaxClockLead ahead",
			r.Version, IDTime(r.Version)-n.nowMs())))
		return
	}
	if n.nowMs()-sent > n.cfg.MaxClockSkew.Milliseconds() && n.store.Get(id) == nil {
		// A node without a copy takes one from a message older than
		// its clock's agreement with the sender's explains: late, or
		// replayed (4.13). Its start is rebuilt from the arrival all
		// the same (startOf), late by the message's age until a
		// replica that kept the true start hands it on
		// (scenarios/README.md C53).
		n.hit(probeCopyFromAgedMessage)
	}
	if len(r.Replicas) == 0 {
		n.hit(probeReplicaFromSite)
		rf := max(spec.ReplicationFactor, 1)
		r.Replicas = n.ring.Replicas(id, rf)
		n.placeFromSite(id, spec, r, reply)
		return
	}
	t := n.fromReplication(id, spec, r)
	offeredLive := t.State == Live // apply may end it: a definition that never fires
	a := n.apply(t)
	if a.collision || a.newer != nil && collides(t, a.newer) {
		// The sender's record is another timer's: refused as a
		// collision, or as older than the create this node holds, which
		// it is below (the sender, meeting that create in the answer,
		// refuses it as a collision). Repair neither asks the sender for
		// it again nor pushes it this node's while neither changes
		// (repaircollision.go).
		n.noteRefusedRecord(from, t)
	}
	if !a.ok || a.newer != nil || a.collision {
		reply(n.notApplied(a))
		return
	}
	if a.took && r.ViewID != n.ring.ViewID() {
		// The sender placed the record under another view: a node not
		// yet reloaded for a scale, or one reloaded before this one. The
		// replicas of this node's view it did not write to would not
		// hear of the record until a repair round; pass it on now.
		n.hit(probeForwardOtherView)
		n.forward(t, r.Replicas)
	}
	if len(a.dropped) > 0 {
		// The replicas of the definition this record replaced that its
		// factor leaves out (droppedReplicas): they keep it as moved
		// away, which ends their live copy.
		n.hit(probeTellDropped)
		now := n.nowMs()
		for _, peer := range a.dropped {
			n.replicate(peer, t, nil, now, nil)
		}
	}
	resp := text(200, "OK")
	held := n.store.Get(id)
	if t.State == Live || held != nil && held.State == Tombstone && t.State == Tombstone {
		n.markHeard(t, from) // the sender holds what it sent
	}
	switch {
	case held != nil && held.Version == t.Version && held.State == Live && slices.Contains(held.Placement().Replicas, n.self):
		resp.Header[HeaderHeld] = "live"
	case a.buriedLive:
		resp.Header[HeaderHeld] = heldBuried
	case held != nil && held.Version == t.Version && held.State == Tombstone && offeredLive:
		// The definition has ended here (its last pop made, or none
		// to make): a sender still holding it live, a copy a scale
		// left it to hand off, learns that every pop it has left was
		// made (TestHandOffEndsOnAReplicaThatHoldsTheDefinitionEnded),
		// and a write's proxy that the replica holds the write
		// (vouches).
		resp.Header[HeaderHeld] = heldEnded
	}
	if held != nil && held.Version == t.Version && held.def == t.def && held.Start < n.startOf(r) {
		// The sender's start of the same definition is later than ours:
		// tell it (startAnswered takes the earlier start). Not of a
		// client delete's tombstone (no definition; its start is the
		// buried one's), which twins sharing an instance number may give
		// an update's very version
		// (TestEarlierStartIsAnsweredOnlyForTheSameDefinition).
		resp.Header[HeaderStartDelta] = strconv.FormatInt(held.Start-n.nowMs(), 10)
		n.hit(probeReplicaStartDelta)
		if n.startOf(r)-held.Start > startPushGap.Milliseconds() && held.State == Live && slices.Contains(held.Placement().Replicas, from) {
			n.pushStart(held, from)
		}
	}
	if held != nil && held.Version == t.Version && held.State == Live && r.Missed != 0 {
		// The sender missed pops: tell it which of them are made here.
		missed, _ := held.popMarks()
		resp.Header[HeaderPopped] = strconv.FormatUint(uint64(held.Seq), 10) + " " + strconv.FormatUint(uint64(missed), 10)
		n.hit(probeReplicaPopped)
	}
	reply(resp)
}

// startPushGap is how much later than this node's a replica's start of
// the same definition may be before the node pushes it its own
// (pushStart): well above the few milliseconds a start rebuilt from
// start-time-delta gains in transit, well below the rank skew the gap
// eats into.
const startPushGap = ReplicaSkew / 4

// pushStart sends held, live here, to peer, a replica of it whose start
// of the same definition is later than held's by more than startPushGap,
// again under bulkRetry until peer answers, while held is still the
// record here. The answer to peer's message carries the earlier start
// too (HeaderStartDelta), but a lost answer left the gap standing: a
// start rebuilt late by a replication that waited seconds (N3) stays
// late on that replica, and when it is the primary, its pops come as
// much nearer the backups' as the gap, and two replicas pop one pop
// (scenarios/README.md N53). The peer takes the earlier start
// (earliestStart), so one exchange that arrives ends the gap.
func (n *Node) pushStart(held *Timer, peer string) {
	id, version := held.ID, held.Version
	key := startPush{id: id, peer: peer}
	if n.startPushes[key] {
		return // a burst of the peer's pops: one push answers them all
	}
	if n.startPushes == nil {
		n.startPushes = map[startPush]bool{}
	}
	n.startPushes[key] = true
	n.hit(probeReplicaPushStart)
	wanted := func() bool {
		h := n.store.Get(id)
		return h != nil && h.Version == version && h.State == Live
	}
	n.sendRetried(peer, bulkRetry, func(finish func(tryOutcome, bool)) {
		if !wanted() {
			finish(tryDropped, true)
			return
		}
		n.replicate(peer, n.store.Get(id), nil, n.nowMs(), func(_ bool, resp Response) {
			if resp.Status == 0 {
				finish(tryFailed, false)
				return
			}
			finish(tryDone, true)
		})
	}, wanted, func(tryOutcome) { delete(n.startPushes, key) })
}

// startPush names a push of an earlier start: the timer and the peer.
type startPush struct {
	id   uint64
	peer string
}

// forward passes t, a record this node took from a sender on another
// view, to the replicas of its own view the sender did not write to.
func (n *Node) forward(t *Timer, written []string) {
	now := n.nowMs()
	for _, peer := range t.Placement().Replicas {
		if peer != n.self && !slices.Contains(written, peer) {
			n.replicate(peer, t, nil, now, nil)
		}
	}
}

// fromReplication builds the record a replication body describes.
func (n *Node) fromReplication(id uint64, spec wire.Timer, r *wire.Replication) *Timer {
	return n.received(id, spec, r, n.startOf(r), n.placement(r.Replicas, r.Sites), r.ViewID)
}

// received builds the record a replication body describes, with the
// start and placement the receiving path gives it: a replica's own, a
// site relay's placement on its own site (placeFromSite), or another
// site's answer placed here (siteAnswered). A tombstone carries its
// fingerprint apart, as it has no callback to fingerprint; a live
// record's missed pops are owed here until apply merges them with what
// this replica knows (mergeMarks).
func (n *Node) received(id uint64, spec wire.Timer, r *wire.Replication, start int64, p *Placement, view uint64) *Timer {
	t := newTimer(id, r.Version, spec, start, r.Seq, p, view, n.shared)
	t.setFirstTry(r.FirstTry)
	if deletes(spec) {
		t.def = r.Definition
		// The other sites the sender knows may lack the tombstone
		// (tellSitesLacking); never this node's own.
		t.setSitesLacking(markOf(p.Sites, r.SitesLacking, n.cfg.LocalSite))
		if t.def != 0 {
			// A definition's end by the life of a copy that missed
			// pops (expire): it owes none, fromFuture judges it.
			t.setPopMarks(r.Missed, 0)
		}
	} else {
		t.setPopMarks(r.Missed, r.Missed)
	}
	// The replicas the sender knows may lack the record (a live
	// definition, or a delete's tombstone: tellLacking); this node,
	// which has it now, is not one of them.
	t.setLacking(markOf(p.Replicas, r.Lacking, n.self))
	return t
}

// notApplied is the response a replica gives for a record it did not
// apply: 409 with the newer definition it holds (its version in a header,
// the record as the body), 409 marked as a collision when it holds another
// timer under the ID, or 503 when full.
func (n *Node) notApplied(a applied) Response {
	if a.collision {
		r := text(409, "another timer is held under this ID")
		r.Header[HeaderCollision] = "1"
		r.Header[wire.HeaderReason] = "another timer is held under this ID"
		return r
	}
	if a.refusal != nil {
		return *a.refusal
	}
	if a.newer == nil {
		return unavailable("node is full")
	}
	return Response{
		Status: 409,
		Header: Header{
			HeaderContentType: "application/json",
			HeaderVersion:     strconv.FormatUint(a.newer.Version, 10),
		},
		Body: EncodeReplication(a.newer, n.nowMs()),
	}
}
