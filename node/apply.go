package node

import (
	"fmt"
	"slices"
	"strconv"
	"time"
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
//     final pop, or the record dropped by rebalancing) and is itself final.
//
// Records of one definition at one Seq may still differ in which pops
// they know were missed; apply merges that knowledge (mergeMarks).
func Supersedes(existing, incoming *Timer) bool {
	switch {
	case existing == nil:
		return true
	case incoming.Version != existing.Version:
		return incoming.Version > existing.Version
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
	// refusal, with ok false, is the answer to a record the node may not
	// hold: its callback policy forbids the callback, or it is full.
	refusal *Response
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

// apply stores t (built from a client write or a replication message) if
// it supersedes what the node holds.
func (n *Node) apply(t *Timer) applied {
	n.ids.observe(t.Version, n.nowMs())
	existing := n.store.Get(t.ID)
	if t.State == Live && !slices.Contains(t.Placement.Replicas, n.self) {
		// Rebalancing: this node is no longer a replica. Keep a
		// tombstone of the definition so that stale copies of it cannot
		// bring the timer back here. A resync's tombstone of the live
		// definition held under an older view keeps that record as
		// information for the new replicas still to fetch it (see
		// TimerExtra.Info).
		if existing != nil && existing.State == Live && existing.Version == t.Version && existing.ViewID != n.ring.ViewID() {
			info := *existing
			info.prev, info.next, info.slot = nil, nil, 0
			t.setInfo(&info)
		}
		t.entombAs(Moved)
	}
	if existing == nil && t.State == Live && t.Seq > 0 && t.lastDue()+n.maxSkew(t).Milliseconds() < n.nowMs() {
		// A pop notice of a timer every pop of which, at every rank, is
		// past: this replica forgot it after its last pop (its tombstone
		// expired) or never held it, and a paused or cut-off replica
		// tells of an old pop. Taking it would pop again, late, what was
		// popped; the sender pops what it has left itself. Keep it as a
		// tombstone, so that further stale notices meet one.
		t.entomb()
	}
	if resp, refused := n.refuseRecord(t); refused {
		return applied{refusal: &resp}
	}
	if collides(existing, t) {
		n.stats.IDCollisions++
		return applied{collision: true}
	}
	if t.State != Live && existing != nil && t.def == 0 && t.Interval == 0 {
		// A client delete does not know the definition it buries; the
		// tombstone's life is measured from it (see dueOf). A pop notice
		// of a one-shot timer (interval 0) is a tombstone too, but it
		// carries its own definition, which must stay as it is.
		t.Start, t.Interval, t.RepeatFor = existing.Start, existing.Interval, existing.RepeatFor
	}
	if existing != nil && existing.Version == t.Version {
		n.currentPlacement(existing, t)
	}
	if existing != nil && existing.Version == t.Version && existing.Start != t.Start {
		n.earliestStart(existing, t)
	}
	if existing != nil && existing.Version == t.Version && existing.State == Live && t.State == Live {
		n.mergeMarks(existing, t)
	}
	back := n.movedBack(existing, t)
	if !Supersedes(existing, t) && !back {
		if existing.State != Live && t.State == Live {
			n.outlive(existing, t)
		}
		if existing.Version > t.Version {
			// The sender is behind: a client write from a node whose
			// clock lags, or a replica that missed a later write. If it
			// tells of pops of the older definition, remember them for
			// a retry of that definition (see keepProgress).
			if t.Seq > 0 && t.def != 0 {
				told := Progress{Def: t.def, Seq: t.Seq, Start: t.Start, Interval: t.Interval, RepeatFor: t.RepeatFor}
				switch {
				case t.def != existing.def:
					existing.replaced(told)
				case existing.State == Live && n.carry(told, existing):
					// The sender popped the first try of the write
					// this replica holds the retry of.
					n.reschedule(existing)
				}
			}
			return applied{ok: true, newer: existing}
		}
		return applied{ok: true}
	}
	if a, full := n.refuseFull(existing, t); full {
		return a
	}
	if existing != nil {
		t.bury(existing.lastDue())
		n.keepProgress(existing, t)
	}
	n.release(existing)
	n.holdNext(t)
	return applied{ok: true}
}

// movedBack reports whether t, a live record placed on this node under its
// current view, replaces existing, the tombstone left when the same
// definition moved off this node under another view: a scale moved the
// timer away and a later one moves it back (seed 185). It takes the pops
// existing knows were made. A record of any other view stays a tombstone
// here: it is a stale copy from a replica not yet rebalanced.
//
// A record placed on this node under a view it has never been in comes
// from a scale it has not reloaded for yet: the nodes that reloaded push
// the timer to it, and no resync offers it again once it is placed under
// the new view (seed 1019: a node the scale made a replica again refused
// every push before its reload, and held no copy after it). A view it has
// been in, other than the current one, is an old one: that record is
// stale.
func (n *Node) movedBack(existing, t *Timer) bool {
	switch {
	case existing == nil || existing.State != Moved || t.State != Live || existing.Version != t.Version:
		return false
	case existing.ViewID == t.ViewID || !slices.Contains(t.Placement.Replicas, n.self):
		return false
	case t.ViewID != n.ring.ViewID() && slices.Contains(n.views, t.ViewID):
		return false
	}
	if existing.Seq > t.Seq {
		missed, owed := t.popMarks()
		t.setPopMarks(shiftMarks(missed, t.Seq, existing.Seq), shiftMarks(owed, t.Seq, existing.Seq))
		t.Seq = existing.Seq
	}
	return true
}

// currentPlacement gives both records of one definition the placement of
// the node's current cluster view when one of them has it: a pop notice
// from a replica that has not been rebalanced yet must not move the
// record back to its old replicas, and a resync's record of the same
// progress moves the held one to its new replicas (its rank, and so its
// skew, may change).
func (n *Node) currentPlacement(existing, t *Timer) {
	view := n.ring.ViewID()
	switch {
	case existing.ViewID == view && t.ViewID != view && t.State == Live && (existing.State != Moved || slices.Contains(n.views, t.ViewID)):
		// Not for a record that may move the timer back here under a
		// view this node has yet to reload for (movedBack).
		t.Placement, t.ViewID = existing.Placement, existing.ViewID
	case t.ViewID == view && existing.ViewID != view && existing.State == Live && t.State == Live:
		existing.Placement, existing.ViewID = t.Placement, t.ViewID
		n.reschedule(existing)
	}
}

// keepProgress carries the pops already made over to a newer version of
// the same definition that a proxy wrote again within moments: a client
// write retried above a concurrent write's version (rewrite) is one client
// write, and must not pop again what this replica popped of its first
// version, whether the replica still holds that version or the concurrent
// write has replaced it meanwhile (Extra.Replaced). A later PUT of the
// same definition has a start of its own, further off, and starts over.
// Otherwise it notes existing's progress in t, for such a retry to come.
// A pop whose callback failed here counts as made: one attempt per
// replica per pop, the next replica's turn is the redundancy.
func (n *Node) keepProgress(existing, t *Timer) {
	prior := Progress{Def: existing.def, Seq: existing.Seq, Start: existing.Start,
		Interval: existing.Interval, RepeatFor: existing.RepeatFor}
	if prior.Def != t.def && existing.Extra != nil {
		prior = existing.Extra.Replaced
	}
	if t.State != Live || t.def == 0 || prior.Def != t.def {
		switch {
		case existing.Seq > 0 && existing.def != 0 && existing.def != t.def:
			t.replaced(Progress{Def: existing.def, Seq: existing.Seq, Start: existing.Start,
				Interval: existing.Interval, RepeatFor: existing.RepeatFor})
		case existing.Extra != nil && existing.Extra.Replaced.Def != 0 && existing.Extra.Replaced.Def != t.def:
			// existing made no pop of its own to remember, but still
			// remembers the pops of the definition it replaced: pass
			// them on, or a tombstone replacing a tombstone forgets
			// them, and a retry of that definition pops again (seed
			// 1331: a one-shot update, popped, then two deletes).
			t.replaced(existing.Extra.Replaced)
		}
		return
	}
	n.carry(prior, t)
}

// carry gives t, a write of definition prior.Def, the pops of prior when
// t is a retry of the same client write that is behind it. It reports
// whether t changed. A retry starts at most retryWindow after the first
// try; starts also differ by a millisecond or two either way when they
// were rebuilt from deltas on nodes whose clocks differ, so the window is
// taken both ways: the same definition written twice so close together
// is one write to the client too.
func (n *Node) carry(prior Progress, t *Timer) bool {
	switch {
	case prior.Def != t.def || prior.Seq <= t.Seq || prior.Interval != t.Interval || prior.RepeatFor != t.RepeatFor:
		return false
	}
	if d := t.Start - prior.Start; d < -n.retryWindow().Milliseconds() || d > n.retryWindow().Milliseconds() {
		return false
	}
	missed, owed := t.popMarks()
	t.setPopMarks(shiftMarks(missed, t.Seq, prior.Seq), shiftMarks(owed, t.Seq, prior.Seq))
	t.Start, t.Seq = prior.Start, prior.Seq
	return true
}

// retryWindow bounds how much later a proxy's retry of a write starts
// than its first try: one replication round per try.
func (n *Node) retryWindow() time.Duration {
	return n.cfg.ReplicationTimeout * (maxWriteRetries + 1)
}

// outlive keeps tombstone alive until the last pop of stale, a definition
// it buries that some replica still holds and pops, has passed: every
// notice of it then meets the tombstone and is repaired by the 409 answer.
// Without this a tombstone that buried nothing known here (a delete that
// reached a replica that had missed the create) lives only TombstoneMin,
// and a later stale notice would bring the timer back.
func (n *Node) outlive(tombstone, stale *Timer) {
	if end := stale.lastDue(); end > tombstone.lastDue() {
		tombstone.bury(end)
		n.reschedule(tombstone)
	}
}

// earliestStart gives both records of one definition the earlier of their
// start times. Every replica rebuilds the start from start-time-delta when
// a message is processed, so a message that was held up (a paused node, a
// clogged link) makes it late by the delay, never early; without this the
// lateness would spread through pop notices and stay for good.
func (n *Node) earliestStart(existing, incoming *Timer) {
	if incoming.Start < existing.Start && existing.State == Live {
		existing.Start = incoming.Start
		n.reschedule(existing)
	}
	incoming.Start = min(incoming.Start, existing.Start)
}

// replicaPut applies a replication message from another node, or places a
// timer forwarded from another site on this site's replicas.
func (n *Node) replicaPut(id uint64, spec Spec, r *Replication, reply func(Response)) {
	n.stats.ReplicationsReceived++
	if now := n.nowMs(); n.ids.ahead(r.Version, now) {
		reply(badRequest(fmt.Sprintf("timing.version %d is dated %d ms after this node's clock, more than twice MaxClockLead ahead",
			r.Version, IDTime(r.Version)-now)))
		return
	}
	if len(r.Replicas) == 0 {
		rf := max(spec.RF, 1)
		r.Replicas = n.ring.Replicas(id, rf)
		n.placeFromSite(id, spec, r, reply)
		return
	}
	t := n.fromReplication(id, spec, r)
	var spread func()
	if r.ViewID != n.ring.ViewID() && n.scaling() {
		t, spread = n.lateRebalance(id, spec, r, t)
	}
	// A record of another view placed on this node, which apply may
	// leave as moved away (see below).
	otherView := t.ViewID != n.ring.ViewID() && t.State == Live && slices.Contains(t.Placement.Replicas, n.self)
	if a := n.apply(t); !a.ok || a.newer != nil || a.collision {
		reply(n.notApplied(a))
		return
	}
	if otherView {
		if held := n.store.Get(id); held != nil && held.State == Moved && held.Version == t.Version {
			// Placed on this node under a view it does not take the
			// definition back under (movedBack): most likely a scale
			// back to a view it was in, which it has not reloaded for
			// yet. The 409 of the same version tells a resync that
			// sent it to send it again later (resyncSend).
			reply(n.notApplied(applied{ok: true, newer: held}))
			return
		}
	}
	if spread != nil {
		spread()
	}
	resp := text(200, "OK")
	held := n.store.Get(id)
	if held != nil && held.Version == t.Version && held.def == t.def && held.Start < n.startMs()+r.StartTimeDelta {
		// The sender's start of the same definition is later than
		// ours: tell it (startAnswered takes the earlier start). Not of
		// a client delete's tombstone (no definition; its start is the
		// buried one's), which twins sharing an instance number may
		// give an update's very version (seeds 3792, 3966).
		resp.Header[HeaderStartDelta] = strconv.FormatInt(held.Start-n.nowMs(), 10)
	}
	if held != nil && held.Version == t.Version && held.State == Live && r.Missed != 0 {
		// The sender missed pops: tell it which of them are made here.
		missed, _ := held.popMarks()
		resp.Header[HeaderPopped] = strconv.FormatUint(uint64(held.Seq), 10) + " " + strconv.FormatUint(uint64(missed), 10)
	}
	reply(resp)
}

// fromReplication builds the record a replication body describes.
func (n *Node) fromReplication(id uint64, spec Spec, r *Replication) *Timer {
	return n.received(id, spec, r, n.startMs()+r.StartTimeDelta, n.placement(r.Replicas, r.Sites), r.ViewID)
}

// received builds the record a replication body describes, with the
// start and placement the receiving path gives it: a replica's own, a
// site relay's placement on its own site (placeFromSite), or another
// site's answer placed here (siteAnswered). A tombstone carries its
// fingerprint apart, as it has no callback to fingerprint; a live
// record's missed pops are owed here until apply merges them with what
// this replica knows (mergeMarks).
func (n *Node) received(id uint64, spec Spec, r *Replication, start int64, p *Placement, view uint64) *Timer {
	t := newTimer(id, r.Version, spec, start, r.Seq, p, view, n.hosts)
	if spec.Tombstone {
		t.def = r.Definition
	} else {
		t.setPopMarks(r.Missed, r.Missed)
	}
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
		r.Header[HeaderReason] = "another timer is held under this ID"
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

// mergeMarks merges what two live records of one definition know of the
// pops missed (see TimerExtra.Missed), on the record that will be held.
// A pop either knows was made was made. Of the pops the incoming record
// is ahead by, those it says were missed are owed here: this replica has
// not attempted them. When incoming replaces existing, it takes the
// merged marks; otherwise existing keeps them, less the pops incoming
// knows were made.
func (n *Node) mergeMarks(existing, incoming *Timer) {
	exMissed, exOwed := existing.popMarks()
	inMissed, _ := incoming.popMarks()
	if incoming.Seq > existing.Seq {
		below := ^uint32(0)
		if d := incoming.Seq - existing.Seq; d < MissedWindow {
			below = 1<<d - 1 // the pops above existing.Seq
		}
		exMissed = shiftMarks(exMissed, existing.Seq, incoming.Seq)
		exOwed = shiftMarks(exOwed, existing.Seq, incoming.Seq)
		incoming.setPopMarks(inMissed&(below|exMissed), inMissed&(below|exOwed))
		return
	}
	// Incoming tells of no pop above existing.Seq: pops above its own
	// Seq it knows nothing of.
	keep := shiftMarks(inMissed, incoming.Seq, existing.Seq)
	if d := existing.Seq - incoming.Seq; d < MissedWindow {
		keep |= 1<<d - 1
	} else {
		keep = ^uint32(0)
	}
	if exMissed&keep != exMissed || exOwed&keep != exOwed {
		existing.setPopMarks(exMissed&keep, exOwed&keep)
		n.reschedule(existing)
	}
}
