package node

import (
	"slices"

	"github.com/chronos-timer/chronos/wire"
)

// Placement is derived, never merged. Whatever view a record arrives
// placed under, a node places it on the replicas its own view gives the
// timer (its ID and replication factor), and places everything it holds
// again when its view changes. So two records of one timer on one node
// always agree on where the timer lives, and no rule has to decide between
// a sender's view and the node's: a sender on another view is either not
// reloaded yet or reloaded before this node, and once their views agree,
// repair (repair.go) brings their records together.
//
// A record keeps ViewID, the view its writer (a client write's proxy, or
// a resync) placed it under: the resync API (GET /timers) offers the
// records not yet placed under the requested view.

// placeNow places t on the replicas of its timer under the node's view,
// keeping the sites it is replicated to.
func (n *Node) placeNow(t *Timer) {
	var sites []string
	if t.Placement() != nil {
		sites = t.Placement().Sites
	}
	n.replicaBuf = n.ring.AppendReplicas(n.replicaBuf[:0], t.ID, t.replicationFactor())
	if t.Placement() != nil && slices.Equal(t.Placement().Replicas, n.replicaBuf) {
		return // already where this view places it
	}
	before := t.Placement()
	t.setPlacementIn(n.shared.under(n.placement(n.replicaBuf, sites), t.ViewID()), n.shared)
	if before != nil {
		// Sites are not moved by a view: their marks stay as they are.
		replicas := remark(before.Replicas, t.Placement().Replicas, t.heardReplicas()) & (1<<heardReplicaBits - 1)
		t.heard = uint16(t.heardSites()<<heardReplicaBits | replicas)
	}
	if before != nil && t.Extra() != nil && (t.Extra().Lacking != 0 || t.Extra().Refused != 0) {
		// The marks of replicas are by position: they follow each
		// replica to its place in the new list, or go with it.
		n.hit(probePlacedMarks)
		e := *t.Extra()
		e.Lacking = remark(before.Replicas, t.Placement().Replicas, e.Lacking)
		e.Refused = remark(before.Replicas, t.Placement().Replicas, e.Refused)
		t.setExtra(e) // copied, never changed in place: snapshots share it
	}
}

// remark moves mask, marks by position in from, to the positions the
// same nodes have in to; a node to does not list loses its mark.
func remark(from, to []string, mask uint32) uint32 {
	var buf [wire.MaxReplicationFactor]string
	return markOf(to, appendMarked(buf[:0], from, mask), "")
}

// placeAll places every record held again after a change of view. A
// record's rank, and so its skew, may change; a live record this node is
// no longer a replica of stays live, popping after every replica's turn
// (skew), until its replicas hold it and repair moves it away (handOff).
func (n *Node) placeAll() {
	n.tombsHanded = nil // the change may have added other replicas
	var moved []*Timer
	n.store.Ascend(func(t *Timer) bool {
		before := t.Placement()
		n.placeNow(t)
		if t.Placement() != before {
			moved = append(moved, t)
		}
		return true
	})
	for _, t := range moved {
		if t.State == Live && !slices.Contains(t.Placement().Replicas, n.self) {
			n.hit(probePlacedAway)
		}
		n.reschedule(t)
	}
}
