package node

import "fmt"

// A node bounds what it holds by count (Limits.MaxTimers) and by bytes
// (Limits.MaxHeldBytes), so that no client, and no peer, can make it
// hold more than its memory allows: past either, a write is refused with
// 503 and Retry-After, counted and logged (noteShed), and the node goes
// on serving. The limits are per node, not per client: one client can
// still fill a node's budget for all (docs/operations.md, "Security").

// recordBytes is what t counts against Limits.MaxHeldBytes: its callback
// URI and opaque data, and RecordOverheadBytes; 0 for no record.
func recordBytes(t *Timer) int64 {
	if t == nil {
		return 0
	}
	n := int64(RecordOverheadBytes + len(t.cb))
	if t.host() != nil {
		n += int64(len(*t.host()))
	}
	return n
}

// overBudget says why t, offered to replace existing (nil: none), would
// take the node past a limit, or "". A record that grows nothing (a
// tombstone, or a smaller definition replacing a larger one) is never
// refused for its bytes.
func (n *Node) overBudget(existing, t *Timer) string {
	if existing == nil && n.store.Len() >= n.cfg.Limits.MaxTimers {
		return fmt.Sprintf("node holds %d timers, its limit", n.store.Len())
	}
	if grow := recordBytes(t) - recordBytes(existing); grow > 0 && t.State == Live && n.heldBytes+grow > n.cfg.Limits.MaxHeldBytes {
		return fmt.Sprintf("node holds %d bytes of timers, and this one would take it past its budget of %d", n.heldBytes, n.cfg.Limits.MaxHeldBytes)
	}
	return ""
}

// refuseFull answers 503 when t cannot be held for a limit, counting and
// logging it. A delete's tombstone (no definition) of a timer the node
// holds nothing of is refused too: it is the only record of the delete,
// and an answer of 200 acknowledges it held nowhere. A full site took a
// delete of a timer it had missed that way, every replica dropping the
// tombstone and answering 200, so nothing told the other site, whose
// replica popped the deleted timer on (fresh seed 9310660,
// scenarios/README.md N69). A tombstone that replaces a held record is
// never refused (overBudget), so deletes still empty a full node. A copy
// moved away from this node (a live record its view places on others,
// kept as Moved) is refused too: its sender places the timer here, and
// the copy keeps what it tells, the pops made and the version, for the
// day a view places the timer here and a stale record brings it back
// (learnMoved). A full replica dropped one quietly and answered 200; a
// scale placed the timer on it, a stale resync page brought it, and it
// popped again the five pops the dropped notice had told of (fresh seed
// 9728020, scenarios/README.md N80). A finished definition's tombstone
// of a timer the node holds nothing of is dropped quietly (ok, not
// stored): every holder of the definition ends it by itself.
func (n *Node) refuseFull(existing, t *Timer) (applied, bool) {
	reason := n.overBudget(existing, t)
	switch {
	case reason == "":
		return applied{}, false
	case t.State == Tombstone && existing == nil && !t.isDeleteTombstone():
		return applied{ok: true}, true
	}
	counter := &n.stats.ShedBytes
	if existing == nil && n.store.Len() >= n.cfg.Limits.MaxTimers {
		counter = &n.stats.ShedTimers
	}
	n.noteShed(counter, reason)
	n.lackingRoom()
	resp := unavailable(reason)
	return applied{refusal: &resp}, true
}

// isDeleteTombstone reports whether t is a client delete's tombstone:
// one without a definition (a delete does not know the one it buries;
// merge's rule 4 gives it that definition's timing, never its
// definition).
func (t *Timer) isDeleteTombstone() bool { return t.State == Tombstone && t.def == 0 }
