package node

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chronos-timer/chronos/wire"
)

// collidingReplicas is a repairing cluster of two nodes holding two
// timers under one ID, as a create versioned by a clock stepped ahead
// and the same timer's later update versioned below it leave them
// (scenarios/README.md U28), or twins of a shared instance number: the
// create (its version its ID, dated 90 s ahead) on one replica, on the
// other a record of the ID at a version below it, each refusing the
// other's as a collision. It returns the cluster, the ID, the node
// holding the create and the node holding the other record.
func collidingReplicas(t *testing.T) (c *cluster, id uint64, creator, other string) {
	t.Helper()
	two := three[:2]
	c = newRepairingCluster(t, two...)
	g := newIDGen(1, 0)
	id, _ = g.next(epoch.UnixMilli() + 90_000)
	replicas := NewRing(two).Replicas(id, 2)
	creator, other = replicas[0], replicas[1]
	start := epoch.UnixMilli()
	c.place(creator, *withCallback(withParts(&Timer{ID: id, Version: id, Start: start, interval: sec(time.Hour), repeatFor: sec(10 * time.Hour), RF: 2}, &Placement{Replicas: replicas}, nil), cb, "created"))
	c.place(other, *withCallback(withParts(&Timer{ID: id, Version: versionDatedAt(start) | 7, Start: start, interval: sec(time.Hour), repeatFor: sec(10 * time.Hour), RF: 2}, &Placement{Replicas: replicas}, nil), cb, "updated"))
	if r := c.offer(other, c.mustTimer(creator, id)); r.Status != 409 || r.Header.Get(HeaderCollision) == "" {
		t.Fatalf("the create offered to the other replica: got %d %v, want a 409 marked as a collision", r.Status, r.Header)
	}
	return c, id, creator, other
}

// mustTimer is the record node addr holds of id.
func (c *cluster) mustTimer(addr string, id uint64) Timer {
	c.t.Helper()
	t, ok := c.nodes[addr].Timer(id)
	if !ok {
		c.t.Fatalf("%s holds no record of %016x", addr, id)
	}
	return t
}

// collisionsRefused is how many records the cluster's nodes refused as
// collisions.
func (c *cluster) collisionsRefused() (n uint64) {
	for _, node := range c.nodes {
		n += node.Stats().IDCollisions
	}
	return n
}

// TestRepairDoesNotSendARecordItsPeerRefusedAsACollision: two replicas
// holding two timers under one ID refuse each other's record as a
// collision. Repair remembers the refusal, and neither pushes the peer
// its record nor asks the peer for the peer's again while neither
// changes: over 20 rounds the two refuse each other's record a few
// times, not every round (scenarios/README.md U27: hundreds of refused
// pushes a run). Both timers stay as they were. Once one side's record
// changes, repair compares them again and carries the change.
func TestRepairDoesNotSendARecordItsPeerRefusedAsACollision(t *testing.T) {
	c, id, creator, other := collidingReplicas(t)
	before := c.collisionsRefused()
	c.advance(20*DefaultRepairInterval, 200)
	refused := c.collisionsRefused() - before
	if refused > 4 {
		t.Errorf("20 repair rounds: %d records refused as collisions, want at most 4 (a refusal each way is remembered)", refused)
	}
	var skipped uint64
	for _, n := range c.nodes {
		skipped += n.Stats().RepairCollisionsSkipped
	}
	if skipped == 0 {
		t.Errorf("no record counted as not sent again for its collision")
	}
	if got := c.mustTimer(creator, id); got.Opaque() != "created" {
		t.Errorf("the creator holds %q, want its own timer", got.Opaque())
	}
	if got := c.mustTimer(other, id); got.Opaque() != "updated" {
		t.Errorf("the other replica holds %q, want its own timer", got.Opaque())
	}
	// The other replica's record changes: a version above the create's.
	held := c.mustTimer(other, id)
	newer := *withCallback(withParts(&Timer{ID: id, Version: id + 1, Start: held.Start, interval: sec(time.Hour), repeatFor: sec(10 * time.Hour), RF: 2}, held.Placement(), nil), cb, "newer")
	c.lose = func(host string, req Request) bool { return req.Method == "PUT" } // its own replication lost
	c.place(other, newer)
	c.lose = nil
	c.advance(2*DefaultRepairInterval, 200)
	if got := c.mustTimer(creator, id); got.Opaque() != "newer" || got.Version != id+1 {
		t.Errorf("after the other replica's record changed, the creator holds %q version %d, want the newer record", got.Opaque(), got.Version)
	}
}

// TestRepairDoesNotPushAMarkedTombstoneItsPeerRefusedAsACollision: two
// replicas hold the tombstones of two timers of one ID and version (the
// twins of a shared instance number created them, and each popped its
// own for the last time), each marked as lacked by the other (its final
// notice was lost), which a round pushes whatever the digests say
// (repairLacking). The peer refuses each as a collision; the refusal is
// remembered, and the push is not repeated every round (scenarios
// README.md U27, seed 4: a push refused every round for hours).
func TestRepairDoesNotPushAMarkedTombstoneItsPeerRefusedAsACollision(t *testing.T) {
	two := three[:2]
	c := newRepairingCluster(t, two...)
	g := newIDGen(1, 0)
	id, _ := g.next(epoch.UnixMilli())
	replicas := NewRing(two).Replicas(id, 2)
	for _, a := range replicas {
		c.place(a, *withParts(&Timer{ID: id, Version: id, Start: epoch.UnixMilli(), State: Tombstone, RF: 2,
			def: definitionHash(time.Hour, 0, cb, a)}, &Placement{Replicas: replicas}, nil))
		c.nodes[a].store.Get(id).setLacking(3) // both; a node's own bit is never read
	}
	before := c.collisionsRefused()
	c.advance(20*DefaultRepairInterval, 200)
	if refused := c.collisionsRefused() - before; refused > 4 {
		t.Errorf("20 repair rounds: %d marked tombstones refused as collisions, want at most 4 (a refusal each way is remembered)", refused)
	}
	for _, a := range replicas {
		if !lackedBy(c.nodes[a].store.Get(id), c.peerOf(a)) {
			t.Errorf("%s no longer marks its peer as lacking its tombstone: a collision answers nothing about it", a)
		}
	}
}

// TestCollisionNotesOfGoneRecordsAreForgotten: a note whose record is
// gone is never met by a round again; the round forgets it once it has
// stood collisionNoteLife, so notes do not grow with every collision a
// node ever saw between changes of membership.
func TestCollisionNotesOfGoneRecordsAreForgotten(t *testing.T) {
	c, _, creator, other := collidingReplicas(t)
	n := c.nodes[creator]
	for id := uint64(1); id <= 100; id++ { // records this node does not hold
		n.noteCollision(other, id, repairSummary{version: id, live: true}, nil)
	}
	if len(n.collisions) < 100 {
		t.Fatalf("%d notes, want the 100 noted", len(n.collisions))
	}
	c.advance(collisionNoteLife+2*DefaultRepairInterval, 200)
	for k := range n.collisions {
		if k.id <= 100 {
			t.Fatalf("the note of gone timer %d with %s outlived collisionNoteLife", k.id, k.peer)
		}
	}
}

// TestHandOffDoesNotPushARecordItsTargetRefusedAsACollision: a scale
// places a timer on a node that holds another timer under its ID (twins
// of a shared instance number). The old replicas hand their copy off;
// the target refuses it as a collision, and the refusal is remembered:
// over 20 rounds the copy is pushed to it a few times, not every round
// (fresh seed 6220060: a tombstone's hand-off refused 156 times in a
// run). The old replicas keep their copies, and the target its own.
func TestHandOffDoesNotPushARecordItsTargetRefusedAsACollision(t *testing.T) {
	const nodeE = "10.0.0.5:7253"
	five := []string{nodeA, nodeB, nodeC, nodeD, nodeE}
	c := newRepairingCluster(t, nodeA, nodeB, nodeC)
	wid := createPlacedOnAdded(t, c, five)
	id := mustID(t, wid)
	held := c.mustTimer(NewRing([]string{nodeA, nodeB, nodeC}).Replicas(id, 2)[0], id)
	c.join(nodeD, Membership{Nodes: five})
	c.join(nodeE, Membership{Nodes: five})
	twin := *withCallback(withParts(&Timer{ID: id, Version: held.Version, Start: held.Start, interval: sec(time.Hour), repeatFor: sec(10 * time.Hour), RF: 2}, &Placement{Replicas: NewRing(five).Replicas(id, 2)}, nil), cb, "twin")
	c.place(nodeE, twin)
	for _, a := range []string{nodeA, nodeB, nodeC} {
		require.NoError(t, c.nodes[a].SetCluster(Membership{Nodes: five}))
	}
	toE := 0
	c.watch = func(s *sent, to string, _ int, _ bool) {
		if to == nodeE && s.from != nodeD && s.req.Method == "PUT" && strings.Contains(s.req.URL, wid[:16]) {
			toE++
		}
	}
	c.advance(20*DefaultRepairInterval, 200)
	c.watch = nil
	assert.LessOrEqual(t, toE, 4, "hand-offs of the copy to %s, which refuses it as a collision", nodeE)
	onE := c.mustTimer(nodeE, id)
	assert.Equal(t, "twin", onE.Opaque(), "%s keeps its own timer", nodeE)
	for _, a := range NewRing([]string{nodeA, nodeB, nodeC}).Replicas(id, 2) {
		got := c.mustTimer(a, id)
		assert.Equal(t, Live, got.State, "%s keeps its copy while a target lacks it", a)
	}
}

// TestRepairDoesNotRepeatACollisionOnlyOneSideRefuses: a create
// versioned by a clock stepped minutes ahead, at factor 1, held by its
// creator alone, and the same timer's update versioned below it, at
// factor 2, held by the creator's peer and placed on both (fresh seed
// 8464212, scenarios/README.md N66). The two judge the pair
// apart: the creator finds the update older than its create and answers
// it 409 with the create, unmarked; the peer, taking that answer, finds
// the create a collision with its update (collides) and keeps its own.
// Neither refusal was noted, so every round the creator asked for the
// update (its own record is placed on it alone, so a round cannot
// compare the two) and the peer pushed it (the creator lists nothing of
// the ID to it): a PUT and an ask in every round, for the life of the
// records. Whichever side sees the collision notes it.
func TestRepairDoesNotRepeatACollisionOnlyOneSideRefuses(t *testing.T) {
	two := three[:2]
	c := newRepairingCluster(t, two...)
	g := newIDGen(1, 0)
	id, _ := g.next(epoch.UnixMilli() + 90_000)
	both := NewRing(two).Replicas(id, 2)
	creator, other := both[0], both[1]
	start := epoch.UnixMilli()
	c.place(creator, *withCallback(withParts(&Timer{ID: id, Version: id, Start: start, interval: sec(time.Hour), repeatFor: sec(10 * time.Hour), RF: 1}, &Placement{Replicas: []string{creator}}, nil), cb, "created"))
	c.place(other, *withCallback(withParts(&Timer{ID: id, Version: versionDatedAt(start) | 7, Start: start, interval: sec(2 * time.Hour), repeatFor: sec(2 * time.Hour), RF: 2}, &Placement{Replicas: both}, nil), cb, "updated"))
	var pushes, asks int
	c.watch = func(s *sent, to string, status int, lost bool) {
		switch {
		case s.from == other && to == creator && s.req.Method == "PUT" && strings.Contains(s.req.URL, "/timers/"+wire.FormatID(id)):
			pushes++
		case s.from == creator && to == other && strings.HasSuffix(s.req.URL, "/timers/repair") && strings.Contains(string(s.req.Body), `"want"`):
			asks++
		}
	}
	c.advance(20*DefaultRepairInterval, 200)
	c.watch = nil
	if pushes > 4 || asks > 4 {
		t.Errorf("20 repair rounds: the update pushed to the creator %d times and asked for %d times, want at most 4 each (the collision is noted by the side that sees it)", pushes, asks)
	}
	if got := c.mustTimer(creator, id); got.Opaque() != "created" {
		t.Errorf("the creator holds %q, want its create", got.Opaque())
	}
	if got := c.mustTimer(other, id); got.Opaque() != "updated" {
		t.Errorf("the peer holds %q, want its update", got.Opaque())
	}
}
