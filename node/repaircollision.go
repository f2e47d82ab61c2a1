package node

import (
	"slices"
	"time"
)

// Collision refusals in repair. Two timers can hold one ID: twins of a
// shared instance number issue it twice (docs/design.md 4.2), and a
// create versioned by a clock stepped minutes ahead meets, on a replica
// that missed it, the same timer's later update versioned below it by a
// clock that could not order after it (scenarios/README.md U28). A
// replica refuses the other timer's record with a 409 marked
// X-Chronos-Collision (collides), and nothing either side can send
// changes that while neither record changes. Repair found the records
// differing every round and sent the refused record again, every round,
// for hours (U27: seed 4, 330 refused pushes; seed 280244, 627): load on
// a cluster that already refuses the clash, and a message storm.
//
// So repair remembers a collision refusal, per peer and timer ID: the
// record this node held and, when known, the one the peer held
// (collisionNote). A node notes one when a peer answers a push of its
// record with a collision (the push of a round, of a tombstone marked as
// lacked, of a record a peer asked for), and when it refuses a peer's
// record as one itself (replicaPut: that peer's record is what it
// wanted, or would want, from that peer). collides is not symmetric (a
// create meeting a record below it), so one side of a collision may see
// only an older record: a node also notes a peer's record it refuses as
// older than a create it holds that the record is below, and a collision
// it meets in the record a peer answered its push with
// (repairPushAnswered; scenarios/README.md N66: the create's
// holder asked for the other record every round and its holder pushed
// it every round). While the note stands a round
// neither pushes that peer the record nor asks the peer for its own
// (collisionStands), and does not run again for it. The note ends when
// either side's record changes: this node's (another version, state or
// pop: the summary a round compares), the peer's (the entry the peer
// lists for the ID in a round differs from the one noted), or when it
// has stood collisionNoteLife, which bounds how long a change this node
// cannot see (the peer's record gone from where the round would list
// it) goes unrepaired: one refused push every collisionNoteLife, against
// one every round. A change of membership ends them all (repairSoon).

// collisionNoteLife is how long a collision refusal keeps repair from
// sending the refused record again with nothing changed: many repair
// intervals (the loop it ends sent one every interval), short beside the
// life of a timer that keeps colliding.
const collisionNoteLife = 15 * time.Minute

// collisionKey names a collision refusal: the peer and the timer ID.
type collisionKey struct {
	peer string
	id   uint64
}

// collisionNote is what a node keeps of a collision refusal between it
// and a peer: its own record's summary, the peer's when known, and when
// it was noted (this node's clock, Unix ms).
type collisionNote struct {
	mine, theirs repairSummary
	theirsKnown  bool
	at           int64
}

// summaryOf is t's summary as a round compares it.
func summaryOf(t *Timer) repairSummary {
	return repairSummary{version: t.Version, live: t.State == Live, seq: t.Seq}
}

// noteCollision notes that peer and this node refused each other's
// record of timer id as a collision while this node held mine and the
// peer theirs (nil: not known).
func (n *Node) noteCollision(peer string, id uint64, mine repairSummary, theirs *repairSummary) {
	if n.collisions == nil {
		n.collisions = map[collisionKey]collisionNote{}
	}
	note := collisionNote{mine: mine, at: n.nowMs()}
	if theirs != nil {
		note.theirs, note.theirsKnown = *theirs, true
	}
	n.hit(probeRepairCollisionNoted)
	n.collisions[collisionKey{peer, id}] = note
}

// noteRefusedRecord notes a collision refusal of rec, peer's record,
// which this node refused as one, or as older than the create it holds
// that rec is below: the same collision, seen from the create's side
// (collides is not symmetric, and the peer refuses the create). Only of
// a repair peer: another site's node is no peer a round compares with.
func (n *Node) noteRefusedRecord(peer string, rec *Timer) {
	if held := n.store.Get(rec.ID); held != nil && slices.Contains(n.repairPeers(), peer) {
		n.noteCollision(peer, rec.ID, summaryOf(held), &repairSummary{version: rec.Version, live: rec.State == Live, seq: rec.Seq})
	}
}

// noteRefusedPush notes a collision refusal when resp, peer's answer to
// a push of held (a record this node holds, as pushed), is one; theirs
// is the peer's record of it as its round listed it, nil when not known.
func (n *Node) noteRefusedPush(peer string, held *Timer, theirs *repairSummary, resp Response) {
	if resp.Status == 409 && resp.Header.Get(HeaderCollision) != "" {
		n.noteCollision(peer, held.ID, summaryOf(held), theirs)
	}
}

// collisionStands reports whether a collision refusal noted with peer
// still stands for t, a record this node holds: neither side's record
// changed since, nor has the note outlived collisionNoteLife. theirs is
// the peer's record as its round lists it, nil when the round does not
// list it. A note that no longer stands is dropped.
func (n *Node) collisionStands(peer string, t *Timer, theirs *repairSummary) bool {
	if len(n.collisions) == 0 {
		return false
	}
	k := collisionKey{peer, t.ID}
	note, ok := n.collisions[k]
	if !ok {
		return false
	}
	switch {
	case summaryOf(t) != note.mine, n.nowMs()-note.at >= collisionNoteLife.Milliseconds(),
		theirs != nil && note.theirsKnown && *theirs != note.theirs:
		delete(n.collisions, k)
		return false
	case theirs != nil && !note.theirsKnown:
		// A refusal this node's push met: the peer's record is the one
		// its round lists now.
		note.theirs, note.theirsKnown = *theirs, true
		n.collisions[k] = note
	}
	n.hit(probeRepairCollisionSkipped)
	n.stats.RepairCollisionsSkipped++
	return true
}

// forgetOldCollisions, at every repair interval (a quiet one too),
// drops every note that has stood collisionNoteLife, as a round would on
// meeting it: a note whose record is gone (the timer ended, or was
// deleted and its tombstone dropped) is never met again, so without this
// the notes would grow with every collision the node ever saw between
// changes of membership. Deleting in map order is deterministic: no
// note's fate depends on another's.
func (n *Node) forgetOldCollisions() {
	now := n.nowMs()
	for k, note := range n.collisions {
		if now-note.at >= collisionNoteLife.Milliseconds() {
			delete(n.collisions, k)
		}
	}
}
