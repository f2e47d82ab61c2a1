package node

import "slices"

// The conflict rule of a replica, as one pure function. Every path that
// brings a record to a replica (a client write through any proxy, a
// replica's replication or pop notice, a tombstone, a resync page, a
// repair, another site's answer) ends in merge: what the replica holds and
// what arrived go in, what it holds afterwards and how to answer come out.
// merge reads nothing of the node but mergeEnv and changes nothing but
// its result, so its properties (merge_test.go) hold whatever the path.

// mergeEnv is what merge may know of the node it runs on: nothing it can
// change.
type mergeEnv struct {
	// self is the node's address; view the cluster view it places new
	// records under, and views the ones it has been in (see movedBack).
	self  string
	view  uint64
	views []uint64
	// now is the node's clock, in ms.
	now int64
	// full is set when the node holds as many records as its limit.
	full bool
	// retryWindow bounds, in ms, how much later a proxy's retry of a
	// write starts than its first try (see carry).
	retryWindow int64
	// maxSkew bounds, in ms, how long after a due time any replica of a
	// record may still pop it and tell the others (Node.maxSkew).
	maxSkew func(*Timer) int64
}

// verdict is what became of a record offered to a replica.
type verdict uint8

const (
	// took: the incoming record is held now.
	took verdict = iota
	// kept: the held record stays (it may have learnt from the incoming
	// one); the incoming one changed nothing more.
	kept
	// older: the incoming record is of an older version than the one
	// held, which the sender is told of.
	older
	// collided: the two records belong to different timers under one ID
	// (see collides); neither replaces the other.
	collided
	// full: nothing was held and the node is at its limit.
	full
)

// probeHits collects the coverage probes a pure function passes, for the
// node to count (probe.go): merge has no node to count them on.
type probeHits struct {
	ids [12]probeID
	n   int
}

// hit notes a pass through probe p.
func (h *probeHits) hit(p probeID) {
	if h.n == len(h.ids) {
		panic("node: more probes passed in one merge than probeHits holds")
	}
	h.ids[h.n] = p
	h.n++
}

// mergeResult is merge's answer.
type mergeResult struct {
	probeHits
	verdict verdict
	// in is the record to hold when verdict is took: the incoming one,
	// as the replica's rules transform it.
	in Timer
	// held is the held record as the merge leaves it, when heldChanged;
	// reschedule is set when its due time must be computed again.
	held        Timer
	heldChanged bool
	reschedule  bool
}

// merge decides what a replica holding held (nil: nothing) does with in,
// a record of the same timer ID. The rules, in order:
//
//  1. A live record placed on other nodes is kept as Moved (a tombstone
//     of its definition), with the live record held under an older view
//     as its informational copy (TimerExtra.Info).
//  2. A notice of a forgotten timer whose every pop is past at every rank
//     is kept as a tombstone.
//  3. A record of another timer under the same ID collides.
//  4. A client delete's tombstone takes the timing of what it buries.
//  5. Records of one version converge: on the current view's placement,
//     the earliest start, and what each knows of missed pops.
//  6. The higher version wins; within one version a tombstone wins, then
//     the higher sequence number (Supersedes). A Moved copy replaced by
//     the same definition placed back on this node is the one exception
//     (movedBack).
//  7. A record that does not win teaches the held one: a tombstone
//     outlives a stale definition still popping somewhere, and the pops
//     of an older version are remembered for a retry of it.
//  8. A record that wins keeps the end of what it buried and the pops of
//     a retried write (keepProgress).
func merge(env *mergeEnv, held *Timer, in Timer) mergeResult {
	r := mergeResult{verdict: took, in: in}
	t := &r.in
	var h *Timer
	if held != nil {
		r.held = *held
		h = &r.held
	}
	if t.State == Live && !slices.Contains(t.Placement.Replicas, env.self) {
		r.hit(probeApplyMovedAway)
		if h != nil && h.State == Live && h.Version == t.Version && h.ViewID != env.view {
			r.hit(probeApplyInfoKept)
			info := *h
			info.prev, info.next, info.slot = nil, nil, 0
			t.setInfo(&info)
		}
		t.entombAs(Moved)
	}
	if h == nil && t.State == Live && t.Seq > 0 && t.lastDue()+env.maxSkew(t) < env.now {
		r.hit(probeApplyStaleNotice)
		// A pop notice of a timer every pop of which, at every rank, is
		// past: this replica forgot it after its last pop (its tombstone
		// expired) or never held it, and a paused or cut-off replica
		// tells of an old pop. Taking it would pop again, late, what was
		// popped; the sender pops what it has left itself. Keep it as a
		// tombstone, so that further stale notices meet one.
		t.entomb()
	}
	if collides(h, t) {
		r.hit(probeApplyCollision)
		r.verdict = collided
		return r
	}
	if t.State != Live && h != nil && t.def == 0 && t.Interval == 0 {
		r.hit(probeApplyDeleteTiming)
		// A client delete does not know the definition it buries; the
		// tombstone's life is measured from it (see dueOf). A pop notice
		// of a one-shot timer (interval 0) is a tombstone too, but it
		// carries its own definition, which must stay as it is.
		t.Start, t.Interval, t.RepeatFor = h.Start, h.Interval, h.RepeatFor
	}
	change := func(resched bool) {
		r.heldChanged = true
		if resched {
			r.reschedule = true
			settle(h)
		}
	}
	if h != nil && h.Version == t.Version && currentPlacement(env, h, t, &r.probeHits) {
		change(true)
	}
	if h != nil && h.Version == t.Version && h.Start != t.Start && earliestStart(h, t) {
		r.hit(probeEarliestStart)
		change(true)
	}
	if h != nil && h.Version == t.Version && h.State == Live && t.State == Live && mergeMarks(h, t, &r.probeHits) {
		change(true)
	}
	back := movedBack(env, h, t, &r.probeHits)
	if !Supersedes(h, t) && !back {
		r.verdict = kept
		if h.State != Live && t.State == Live && outlive(h, t) {
			r.hit(probeApplyOutlive)
			change(true)
		}
		if h.Version > t.Version {
			r.hit(probeApplyOlderVersion)
			r.verdict = older
			// The sender is behind: a client write from a node whose
			// clock lags, or a replica that missed a later write. If it
			// tells of pops of the older definition, remember them for
			// a retry of that definition (see keepProgress).
			if t.Seq > 0 && t.def != 0 {
				told := t.progress()
				switch {
				case t.def != h.def:
					r.hit(probeApplyOlderReplaced)
					h.replaced(told)
					change(false)
				case h.State == Live && carry(env.retryWindow, told, h, &r.probeHits):
					r.hit(probeApplyOlderCarried)
					// The sender popped the first try of the write
					// this replica holds the retry of.
					change(true)
				}
			}
		}
		return r
	}
	if h == nil && env.full {
		r.hit(probeApplyFull)
		// A tombstone with nothing to bury is not worth refusing.
		r.verdict = full
		return r
	}
	if h != nil {
		t.bury(h.lastDue())
		keepProgress(env.retryWindow, h, t, &r.probeHits)
	}
	return r
}

// settle is what holding a record does to it: a live record with nothing
// left to pop and no missed pop to tell of becomes a tombstone (see
// Node.holdNext).
func settle(t *Timer) {
	if _, ok := t.NextPopAt(); !ok && t.State == Live {
		if missed, _ := t.popMarks(); missed == 0 {
			t.entomb()
		}
	}
}

// progress is how far t's definition popped.
func (t *Timer) progress() Progress {
	return Progress{Def: t.def, Seq: t.Seq, Start: t.Start, Interval: t.Interval, RepeatFor: t.RepeatFor}
}

// movedBack reports whether t, a live record placed on this node under its
// current view, replaces existing, the tombstone left when the same
// definition moved off this node under another view: a scale moved the
// timer away and a later one moves it back. It takes the pops existing
// knows were made. A record of any other view stays a tombstone here: it
// is a stale copy from a replica not yet rebalanced.
//
// A record placed on this node under a view it has never been in comes
// from a scale it has not reloaded for yet: the nodes that reloaded push
// the timer to it, and no resync offers it again once it is placed under
// the new view (a node the scale made a replica again would otherwise
// refuse every push before its reload, and hold no copy after it). A view
// it has been in, other than the current one, is an old one: that record
// is stale.
func movedBack(env *mergeEnv, existing, t *Timer, probes *probeHits) bool {
	switch {
	case existing == nil || existing.State != Moved || t.State != Live || existing.Version != t.Version:
		return false
	case existing.ViewID == t.ViewID || !slices.Contains(t.Placement.Replicas, env.self):
		return false
	case t.ViewID != env.view && slices.Contains(env.views, t.ViewID):
		probes.hit(probeMovedBackStaleView)
		return false
	}
	probes.hit(probeMovedBack)
	missed, owed := t.popMarks()
	if existing.Seq > t.Seq {
		probes.hit(probeMovedBackSeq)
		missed, owed = shiftMarks(missed, t.Seq, existing.Seq), shiftMarks(owed, t.Seq, existing.Seq)
		t.Seq = existing.Seq
	}
	// One attempt per replica per pop: the moved copy owes nothing, so
	// the pops it had reached are not owed here, whatever the sender
	// says it missed (this replica may have made them itself).
	if owed&^above(existing.Seq, t.Seq) != 0 {
		probes.hit(probeMovedBackOwes)
	}
	t.setPopMarks(missed, owed&above(existing.Seq, t.Seq))
	return true
}

// above is the mask of a record's pop marks at seq (bit i is pop seq-i)
// that covers the pops above from.
func above(from, seq uint32) uint32 {
	if seq <= from {
		return 0
	}
	if d := seq - from; d < MissedWindow {
		return 1<<d - 1
	}
	return ^uint32(0)
}

// currentPlacement gives both records of one definition the placement of
// the node's current cluster view when one of them has it: a pop notice
// from a replica that has not been rebalanced yet must not move the
// record back to its old replicas, and a resync's record of the same
// progress moves the held one to its new replicas (its rank, and so its
// skew, may change). It reports whether existing changed.
func currentPlacement(env *mergeEnv, existing, t *Timer, probes *probeHits) bool {
	switch {
	case existing.ViewID == env.view && t.ViewID != env.view && t.State == Live && (existing.State != Moved || slices.Contains(env.views, t.ViewID)):
		// Not for a record that may move the timer back here under a
		// view this node has yet to reload for (movedBack).
		t.Placement, t.ViewID = existing.Placement, existing.ViewID
		probes.hit(probePlacementKeep)
	case t.ViewID == env.view && existing.ViewID != env.view && existing.State == Live && t.State == Live:
		existing.Placement, existing.ViewID = t.Placement, t.ViewID
		probes.hit(probePlacementMove)
		return true
	}
	return false
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
func keepProgress(window int64, existing, t *Timer, probes *probeHits) {
	prior := existing.progress()
	if prior.Def != t.def && existing.Extra != nil {
		prior = existing.Extra.Replaced
	}
	if t.State != Live || t.def == 0 || prior.Def != t.def {
		switch {
		case existing.Seq > 0 && existing.def != 0 && existing.def != t.def:
			probes.hit(probeKeepProgressReplace)
			t.replaced(existing.progress())
		case existing.Extra != nil && existing.Extra.Replaced.Def != 0 && existing.Extra.Replaced.Def != t.def:
			probes.hit(probeKeepProgressPass)
			// existing made no pop of its own to remember, but still
			// remembers the pops of the definition it replaced: pass
			// them on, or a tombstone replacing a tombstone forgets
			// them, and a retry of that definition pops again (a
			// one-shot update, popped, then two deletes).
			t.replaced(existing.Extra.Replaced)
		}
		return
	}
	carry(window, prior, t, probes)
}

// carry gives t, a write of definition prior.Def, the pops of prior when
// t is a retry of the same client write that is behind it. It reports
// whether t changed. A retry starts at most window ms after the first
// try; starts also differ by a millisecond or two either way when they
// were rebuilt from deltas on nodes whose clocks differ, so the window is
// taken both ways: the same definition written twice so close together
// is one write to the client too.
func carry(window int64, prior Progress, t *Timer, probes *probeHits) bool {
	switch {
	case prior.Def != t.def || prior.Seq <= t.Seq || prior.Interval != t.Interval || prior.RepeatFor != t.RepeatFor:
		return false
	}
	if d := t.Start - prior.Start; d < -window || d > window {
		return false
	}
	missed, owed := t.popMarks()
	t.setPopMarks(shiftMarks(missed, t.Seq, prior.Seq), shiftMarks(owed, t.Seq, prior.Seq))
	t.Start, t.Seq = prior.Start, prior.Seq
	probes.hit(probeKeepProgressCarry)
	return true
}

// outlive keeps tombstone alive until the last pop of stale, a definition
// it buries that some replica still holds and pops, has passed: every
// notice of it then meets the tombstone and is repaired by the 409 answer.
// Without this a tombstone that buried nothing known here (a delete that
// reached a replica that had missed the create) lives only TombstoneMin,
// and a later stale notice would bring the timer back. It reports whether
// tombstone changed.
func outlive(tombstone, stale *Timer) bool {
	if end := stale.lastDue(); end > tombstone.lastDue() {
		tombstone.bury(end)
		return true
	}
	return false
}

// earliestStart gives both records of one definition the earlier of their
// start times, and reports whether existing changed. Every replica
// rebuilds the start from start-time-delta when a message is processed,
// so a message that was held up (a paused node, a clogged link) makes it
// late by the delay, never early; without this the lateness would spread
// through pop notices and stay for good.
func earliestStart(existing, incoming *Timer) bool {
	changed := false
	if incoming.Start < existing.Start && existing.State == Live {
		existing.Start = incoming.Start
		changed = true
	}
	incoming.Start = min(incoming.Start, existing.Start)
	return changed
}

// mergeMarks merges what two live records of one definition know of the
// pops missed (see TimerExtra.Missed), on the record that will be held,
// and reports whether existing changed. A pop either knows was made was
// made. Of the pops the incoming record is ahead by, those it says were
// missed are owed here: this replica has not attempted them. When
// incoming replaces existing, it takes the merged marks; otherwise
// existing keeps them, less the pops incoming knows were made.
func mergeMarks(existing, incoming *Timer, probes *probeHits) bool {
	exMissed, exOwed := existing.popMarks()
	inMissed, _ := incoming.popMarks()
	if incoming.Seq > existing.Seq {
		probes.hit(probeMergeAhead)
		below := above(existing.Seq, incoming.Seq)
		exMissed = shiftMarks(exMissed, existing.Seq, incoming.Seq)
		exOwed = shiftMarks(exOwed, existing.Seq, incoming.Seq)
		incoming.setPopMarks(inMissed&(below|exMissed), inMissed&(below|exOwed))
		return false
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
		probes.hit(probeMergeTrim)
		existing.setPopMarks(exMissed&keep, exOwed&keep)
		return true
	}
	return false
}

// assign gives t every field of src but the store's bookkeeping, so that a
// held record takes what merge decided in place.
func (t *Timer) assign(src *Timer) {
	due, prev, next, slot := t.due, t.prev, t.next, t.slot
	*t = *src
	t.due, t.prev, t.next, t.slot = due, prev, next, slot
}
