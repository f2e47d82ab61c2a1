package node

import (
	"fmt"
	"slices"
	"time"
)

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
	// self is the node's address.
	self string
	// now is the node's clock, in ms.
	now int64
	// full is set when the node holds as many records as its limit.
	full bool
	// retryWindow bounds, in ms, how much later a proxy's retry of a
	// write starts than its first try (see carry).
	retryWindow int64
	// replicationTimeout is the node's, which bounds with the ranks how
	// long after a due time any replica of a record may still pop it and
	// tell the others (maxSkewOf). A value, not a function of the
	// record: a record passed to a function value escapes to the heap.
	replicationTimeout time.Duration
	// maxClockSkew is the node's MaxClockSkew in ms: how far a record's
	// progress may be dated after now (see fromFuture).
	maxClockSkew int64
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
	ids [16]probeID
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
	// carried is set when the record taken holds pops its sender did
	// not send: this replica made them of an earlier try of the same
	// client write, or of a definition it remembers (keepProgress). The
	// other replicas of the record taken were never told of them under
	// its placement (a first try may have had another factor, and so
	// other replicas), so they are owed a pop notice.
	carried bool
}

// merge decides what a replica holding held (nil: nothing) does with in,
// a record of the same timer ID. The rules, in order:
//
//  0. A record never brings progress from the future: the pops it says
//     were made must be due by this node's clock, give or take
//     MaxClockSkew, and a tombstone that ended a life with missed pops
//     (expire) must be past every replica's turn (fromFuture).
//  1. A live record placed on other nodes (both records are placed under
//     the node's own view: placeNow) is kept as Moved, a tombstone of its
//     definition that never pops but learns the pops records tell of
//     (learnMoved), unless the node holds that definition live: its copy
//     is one to hand off (handOff), which only its replicas' word ends,
//     and it learns the record's progress.
//  2. A notice of a forgotten timer whose every pop is past at every rank
//     is kept as a tombstone.
//  3. A record of another timer under the same ID collides.
//  4. A client delete's tombstone takes the timing of what it buries.
//  5. Records of one version converge on the earliest start and on what
//     each knows of missed pops.
//  6. The higher version wins; within one version a tombstone wins, then
//     the higher sequence number (Supersedes). A Moved copy replaced by
//     the same definition placed back on this node is the one exception
//     (movedBack).
//  7. A record that does not win teaches the held one: a tombstone
//     outlives a stale definition still popping somewhere, and the pops
//     of an older version are remembered for a retry of it.
//  8. A record that wins keeps the end of what it buried, the pops of
//     a retried write (keepProgress), which its other replicas are then
//     told of (carried), and, over an older version, the replicas that
//     may lack it (inheritLacking).
func merge(env *mergeEnv, held *Timer, in Timer) mergeResult {
	r := mergeRules(env, held, in)
	r.check(held)
	return r
}

// check asserts what every merge keeps, whatever its rules: a replica's
// version never goes back, nor within one version the sequence number of
// a live record (a tombstone of the version wins whatever its sequence
// number, rule 6), and a tombstone (other than a Moved copy placed back) never comes back
// live under its own version. Like the store's, these assertions stay on
// in production: a replica that broke one would go on popping what it
// should not, and must stop instead (mergeBug).
func (r *mergeResult) check(held *Timer) {
	if held == nil {
		return
	}
	switch r.verdict {
	case took:
		switch {
		case r.in.Version < held.Version:
			mergeBug("timer %x: took version %d over %d", held.ID, r.in.Version, held.Version)
		case r.in.Version > held.Version:
		case r.in.State == Live && r.in.Seq < held.Seq:
			mergeBug("timer %x version %d: took sequence %d over %d", held.ID, held.Version, r.in.Seq, held.Seq)
		case held.State == Tombstone && r.in.State == Live:
			mergeBug("timer %x version %d: a tombstone came back live", held.ID, held.Version)
		}
	default:
		if r.heldChanged && (r.held.Version != held.Version || r.held.Seq < held.Seq) {
			mergeBug("timer %x: kept version %d sequence %d as version %d sequence %d",
				held.ID, held.Version, held.Seq, r.held.Version, r.held.Seq)
		}
	}
}

// mergeBug panics on a broken merge invariant, with the values that broke
// it.
func mergeBug(format string, args ...any) {
	panic(fmt.Sprintf("node: merge: "+format, args...))
}

// mergeRules is merge's rules, before check.
func mergeRules(env *mergeEnv, held *Timer, in Timer) mergeResult {
	r := mergeResult{verdict: took, in: in}
	t := &r.in
	var h *Timer
	if held != nil {
		r.held = *held
		h = &r.held
	}
	if r.fromFuture(env, t) { // rule 0
		return r
	}
	r.arrive(env, h, t) // rules 1, 2 and 4
	if collides(h, t) {
		r.hit(probeApplyCollision)
		r.verdict = collided
		return r
	}
	if h != nil && h.Version == t.Version {
		r.converge(env, h, t) // rule 5
	}
	if !Supersedes(h, t) && !movedBack(h, t, &r.probeHits) {
		r.teach(env, h, t) // rule 7
		return r
	}
	if h == nil && env.full {
		r.hit(probeApplyFull)
		r.verdict = full
		return r
	}
	if h != nil { // rule 8
		t.bury(h.lastDue())
		seq := t.Seq
		keepProgress(env.retryWindow, h, t, &r.probeHits)
		r.carried = t.Seq > seq
		if h.Version < t.Version && inheritLacking(h, t) {
			r.hit(probeLackingInherited)
		}
	}
	return r
}

// inheritLacking marks on t, a newer version taking over h, the replicas
// h marks as may lack it (TimerExtra.Lacking), by address, where t's
// placement names them too, and reports whether it marked any. A replica
// that may lack one version lacks every later one it has not answered a
// message of: it holds an older record still, or none. Marked, the newer
// version's tombstone stays while it may (lackingTombstone), and repair
// rounds push it there (repairLacking). Dropped, a replica down through
// a run of updates came back from its disk with the first definition
// after every tombstone of the later ones had expired (the last update
// went through a node that was none of its replicas, and was not live
// when it took over the marked copy), and brought it back live to the
// other replica (fresh seed 5815261, scenarios/README.md N81). A copy
// moved away marks nothing: this node is no replica of it.
func inheritLacking(h, t *Timer) bool {
	if h.State == Moved || t.State == Moved || h.lacking() == 0 {
		return false
	}
	from, to := h.Placement().Replicas, t.Placement().Replicas
	m := t.lacking()
	for i, peer := range from {
		if i >= 32 || h.lacking()&(1<<i) == 0 {
			continue
		}
		if j := slices.Index(to, peer); j >= 0 && j < 32 {
			m |= 1 << j
		}
	}
	if m == t.lacking() {
		return false
	}
	t.setLacking(m)
	return true
}

// arrive is what the offered record t is on this replica, holding h: a
// tombstone when it tells of a timer forgotten here whose every pop is
// past (rule 2, wherever it is placed), kept as moved away when it is
// placed on others (rule 1), and a client delete's tombstone with the
// timing of what it buries (rule 4).
func (r *mergeResult) arrive(env *mergeEnv, h, t *Timer) {
	if h == nil && t.State == Live && t.Seq > 0 && t.lastDue()+maxSkewOf(t, env.replicationTimeout).Milliseconds() < env.now {
		r.hit(probeApplyStaleNotice)
		// A pop notice of a timer every pop of which, at every rank, is
		// past: this replica forgot it after its last pop (its tombstone
		// expired) or never held it, and a paused or cut-off replica
		// tells of an old pop. Taking it would pop again, late, what was
		// popped; the sender pops what it has left itself. Keep it as a
		// tombstone, so that further stale notices meet one. Placed on
		// other nodes too: kept as moved away it owed the pops the
		// notice marked missed, and a scale that placed it back here
		// made them, late and again (fresh seed 9615765,
		// scenarios/README.md N76).
		t.entomb()
	}
	if t.State == Live && !slices.Contains(t.Placement().Replicas, env.self) &&
		(h == nil || h.State != Live || h.Version != t.Version) {
		r.hit(probeApplyMovedAway)
		t.entombAs(Moved)
	}
	if t.State != Live && h != nil && t.def == 0 && t.interval == 0 {
		r.hit(probeApplyDeleteTiming)
		// A client delete does not know the definition it buries; the
		// tombstone's life is measured from it (see dueOf). A pop notice
		// of a one-shot timer (interval 0) is a tombstone too, but it
		// carries its own definition, which must stay as it is.
		t.Start, t.interval, t.repeatFor = h.Start, h.interval, h.repeatFor
	}
}

// fromFuture applies rule 0 to t, the record offered: it reports whether
// t is not taken at all, and otherwise limits t's sequence number to the
// pops due here by now plus MaxClockSkew.
//
// A record's start travels as a delta from the moment it is sent, so
// however far apart two clocks are, the pops a replica made are due, on
// the receiver's clock, no later than when the record arrives. Only a
// sender whose clock stepped back after it popped (it ran ahead, popped
// early, and was set right) can offer pops that are not due yet: it
// made them by a clock outside what the cluster tolerates. Taken, its
// progress would end pops that are still to come on every replica: a
// finished definition's tombstone buries the live copies whose pops are
// not yet due, a live record's sequence number passes over them
// (TestProgressFromTheFutureIsNotTaken). A live record is taken with the
// progress that can be true; a tombstone of a definition (finished, or
// dropped as moved) is not taken. A client delete's tombstone (no
// definition) ends the timer whatever its sequence number, and is not
// judged.
func (r *mergeResult) fromFuture(env *mergeEnv, t *Timer) bool {
	if missed, _ := t.popMarks(); t.State == Tombstone && t.def != 0 && missed != 0 &&
		t.lastDue()+maxSkewOf(t, env.replicationTimeout).Milliseconds() > env.now+env.maxClockSkew {
		// A definition's end by the life of a copy that missed pops
		// (expire): that life ends once every replica's turn at the
		// last pop is past, on its holder's clock. Sooner on this
		// clock, the holder's clock ran ahead of what the cluster
		// tolerates, and the pops it missed may still be this
		// replica's to make (TestExpiredTombstoneFromTheFutureIsNotTaken).
		r.hit(probeApplyExpiredEarly)
		r.verdict = kept
		return true
	}
	if t.def == 0 || t.Seq == 0 || t.dueAt(t.Seq) <= env.now+env.maxClockSkew {
		return false
	}
	r.hit(probeApplyFromFuture)
	if t.State != Live {
		r.verdict = kept
		return true
	}
	seq := uint32(0)
	if horizon := env.now + env.maxClockSkew; t.interval > 0 && horizon >= t.Start {
		seq = uint32(min(int64(t.Seq), (horizon-t.Start)/t.Interval().Milliseconds()))
	}
	missed, owed := t.popMarks()
	if d := t.Seq - seq; d < MissedWindow {
		missed, owed = missed>>d, owed>>d
	} else {
		missed, owed = 0, 0
	}
	t.Seq = seq
	t.setPopMarks(missed, owed)
	return false
}

// change notes that merge changed h, the held record, and whether its due
// time must be computed again; holding it may then end it (settle).
func (r *mergeResult) change(h *Timer, resched bool) {
	r.heldChanged = true
	if resched {
		r.reschedule = true
		settle(h)
	}
}

// converge brings two records of one version together (rule 5): on the
// earliest start, and on what each knows of missed pops.
func (r *mergeResult) converge(env *mergeEnv, h, t *Timer) {
	if h.Start != t.Start && earliestStart(h, t) {
		r.hit(probeEarliestStart)
		r.change(h, true)
	}
	if h.State == Live && t.State == Live && mergeMarks(h, t, &r.probeHits) {
		r.change(h, true)
	}
	if h.State == Moved && t.State == Moved && learnMoved(h, t) {
		r.hit(probeMovedLearns)
		r.change(h, false) // it pops nothing; kept on disk with the record
	}
	if h.State == Live && t.State == Live && mergeLacking(h, t) {
		r.hit(probeLackingLearnt)
		r.change(h, true) // kept on disk with the record
	}
	if h.State == Live && t.State == Live && h.sitesLacking()&^t.sitesLacking() != 0 {
		// Only this node knows which sites its forward missed: a
		// record of the definition taken over its copy keeps that.
		t.setSitesLacking(t.sitesLacking() | h.sitesLacking())
	}
	if h.State == Live && t.State == Tombstone && (h.lacking()&^t.lacking() != 0 || h.sitesLacking()&^t.sitesLacking() != 0) {
		// The definition's end (another holder's last pop) takes over
		// a copy that knew who may lack the definition: its tombstone
		// keeps that, and stays while one of them may
		// (lackingTombstone). Without it a replica that had marked a
		// replica as may lack the definition forgot it at the end
		// (TestUpdatesEndStaysWhileAReplicaOfTheRelaysSiteMayLackIt).
		r.hit(probeTombstoneKeepsLacking)
		t.setLacking(t.lacking() | h.lacking())
		t.setSitesLacking(t.sitesLacking() | h.sitesLacking())
	}
	// A mark this node cleared on the replica's own answer, or one of
	// itself, is not learnt again: it knows the replica holds the
	// tombstone. Learnt again from a holder that had not heard from it
	// yet, marks went round for ever, every holder pushing the
	// tombstone each round to replicas that held it and keeping it past
	// its life (scenarios/README.md N60).
	learnt := t.lacking() &^ h.lacking()
	if h.State == Tombstone && t.State == Tombstone && learnt&holdsTombstone(env.self, h) != 0 {
		r.hit(probeLackingTombKnown)
		learnt &^= holdsTombstone(env.self, h)
	}
	if h.State == Tombstone && t.State == Tombstone && (learnt != 0 || t.sitesLacking()&^h.sitesLacking() != 0) {
		// Another node told that a replica (the delete's proxy,
		// tellLacking) or a site (tellSitesLacking) may lack the
		// tombstone: it is kept here too, where their notices may
		// arrive (lackingTombstone), and repair rounds push it to those
		// replicas (repairLacking). A proxy that holds no copy has no
		// tombstone of its own to keep for them (scenarios/README.md
		// N57).
		if learnt != 0 {
			r.hit(probeLackingTombLearnt)
		}
		if t.sitesLacking()&^h.sitesLacking() != 0 {
			r.hit(probeTombstoneSiteLearnt)
		}
		m, sites := h.lacking()|learnt, h.sitesLacking()|t.sitesLacking()
		h.setLacking(m)
		t.setLacking(m)
		h.setSitesLacking(sites)
		t.setSitesLacking(sites)
		r.change(h, false) // kept on disk with the record
	}
	// What this node heard from the other holders stays with the
	// record it keeps of the definition, whichever that is, and so
	// does the write's first try (a sender that does not name it).
	h.heard |= t.heard
	t.heard = h.heard
	if t.firstTry() == t.Version {
		t.setFirstTry(h.firstTry())
	} else if h.firstTry() == h.Version {
		h.setFirstTry(t.firstTry())
		r.change(h, false) // kept on disk with the record
	}
}

// holdsTombstone is the mask of the replicas, by position in h's
// placement, that this node (self) knows hold h, a tombstone: itself, and
// those it heard take a message of its version (Timer.heard).
func holdsTombstone(self string, h *Timer) uint32 {
	known := h.heardReplicas()
	if i := slices.Index(h.Placement().Replicas, self); i >= 0 && i < 32 {
		known |= 1 << i
	}
	return known
}

// mergeLacking gives both live records of one definition every replica
// either marks as may lack it (TimerExtra.Lacking), whichever is held
// afterwards, and reports whether existing changed. Both are placed under
// this node's view, so their marks are by the same positions. A mark
// this node cleared on the replica's own answer may come back from a
// sender that has not heard from it yet: a replica marked wrongly waits
// for its pop instead of shedding it, one marked by none sheds a pop that
// nobody makes (scenarios/README.md N29).
func mergeLacking(existing, incoming *Timer) bool {
	ex, in := existing.lacking(), incoming.lacking()
	incoming.setLacking(ex | in)
	if in&^ex == 0 {
		return false
	}
	existing.setLacking(ex | in)
	return true
}

// teach is what a record that does not win leaves on h, the held one
// (rule 7): a tombstone outlives a stale definition still popping
// somewhere, and the pops of an older version are remembered for a retry
// of it. The sender is told of the newer version when there is one.
func (r *mergeResult) teach(env *mergeEnv, h, t *Timer) {
	r.verdict = kept
	if h.State != Live && t.State == Live && outlive(h, t) {
		r.hit(probeApplyOutlive)
		r.change(h, true)
	}
	if h.Version <= t.Version {
		return
	}
	r.hit(probeApplyOlderVersion)
	r.verdict = older
	// The sender is behind: a client write from a node whose clock lags,
	// or a replica that missed a later write. If it tells of pops of the
	// older definition, remember them for a retry of that definition (see
	// keepProgress).
	if t.Seq == 0 || t.def == 0 {
		return
	}
	told := t.progress()
	switch {
	case t.def != h.def:
		r.hit(probeApplyOlderReplaced)
		h.replaced(told)
		r.change(h, false)
	case h.State == Live && carry(env.retryWindow, told, t.Version, h, &r.probeHits):
		r.hit(probeApplyOlderCarried)
		// The sender popped the first try of the write this replica
		// holds the retry of.
		r.change(h, true)
	}
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
	return Progress{Def: t.def, Seq: t.Seq, Start: t.Start, Interval: t.Interval(), RepeatFor: t.RepeatFor(), FirstTry: t.firstTry()}
}

// movedBack reports whether t, a live record of which this node is a
// replica (under its own view, as every record here is placed), replaces
// existing, the copy of the same definition it keeps as moved away: a
// scale moved the timer off this node and a later one moved it back. It
// takes what existing knows of the pops, as a live record would
// (mergeMarks): a pop either knows was made was made, and of the pops
// existing reached, this replica owes only those existing owes (one
// attempt per replica per pop: it may have made them itself, before the
// timer moved away, and a pop it attempted is never owed).
func movedBack(existing, t *Timer, probes *probeHits) bool {
	if existing == nil || existing.State != Moved || t.State != Live || existing.Version != t.Version {
		return false
	}
	probes.hit(probeMovedBack)
	missed, owedBefore := t.popMarks()
	_, exOwed := existing.popMarks()
	if existing.Seq > t.Seq {
		probes.hit(probeMovedBackSeq)
	}
	seq, owed := owedByBoth(existing.Seq, exOwed, t.Seq, owedBefore)
	missed = shiftMarks(missed, t.Seq, seq) | shiftMarks(exOwed, existing.Seq, seq)&above(t.Seq, seq)
	if shiftMarks(owedBefore, t.Seq, seq)&^owed != 0 {
		probes.hit(probeMovedBackOwes)
	}
	t.Seq = seq
	t.setPopMarks(missed, owed)
	return true
}

// owedByBoth is what two records of one definition, at sequence numbers
// a and b, owing the pops owedA and owedB, leave this replica owing:
// a pop is owed only where every record that reached it owes it (a pop
// either knows was made, or that this replica attempted, is not owed),
// at the later of the two sequence numbers.
func owedByBoth(a, owedA, b, owedB uint32) (seq, owed uint32) {
	seq = max(a, b)
	owed = (shiftMarks(owedA, a, seq) | above(a, seq)) & (shiftMarks(owedB, b, seq) | above(b, seq))
	return seq, owed
}

// learnMoved gives held, a copy kept as moved away, what t, a record of
// the same definition kept as moved away here too, knows of the pops
// (mergeMarks: a pop either knows was made was made, and those t is
// ahead by and marks missed this replica has not attempted), and reports
// whether held changed. A moved copy that learnt nothing and was placed
// back took the pops it had reached, not those a record told it of
// meanwhile, and owed what the record that placed it back said was
// missed: it made again a pop another replica had made (seed 443: a
// notice of pop 11 reached the timer's new replica before it reloaded
// for the scale; the copy its resync took was behind it, and the
// replica made pop 11 again).
func learnMoved(held, t *Timer) bool {
	_, heldOwed := held.popMarks()
	_, tOwed := t.popMarks()
	seq, owed := owedByBoth(held.Seq, heldOwed, t.Seq, tOwed)
	if seq == held.Seq && owed == heldOwed {
		return false
	}
	held.Seq = seq
	held.setPopMarks(owed, owed) // a moved copy keeps only what it owes (entombAs)
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

// keepProgress carries the pops already made over to a newer version of
// the same definition that a proxy wrote again within moments: a client
// write retried above a concurrent write's version (rewrite) is one client
// write, and must not pop again what this replica popped of its first
// version, whether the replica still holds that version or the concurrent
// write has replaced it meanwhile (Extra.Replaced). A later PUT of the
// same definition has a start of its own, further off, and starts over.
// A pop whose callback failed here counts as made: one attempt per
// replica per pop, the next replica's turn is the redundancy. Whatever
// t is, it then remembers the progress of another definition that
// existing made or remembers (remember), for a retry of that one to come.
func keepProgress(window int64, existing, t *Timer, probes *probeHits) {
	prior, own, priorVersion := existing.progress(), true, existing.Version
	if p, ok := existing.remembered(window, t); ok && prior.Def != t.def {
		// A remembered definition's version is not kept: its tries are
		// told by their starts and the first try they name.
		prior, own, priorVersion = p, false, 0
	}
	if t.State == Live && t.def != 0 && prior.Def == t.def && existing.Version != t.Version &&
		sameWrite(window, prior, priorVersion, t, probes) &&
		!carryOwn(window, existing, own, prior, priorVersion, t, probes) {
		owedOnce(existing, own, prior.Seq, t, probes)
	}
	remember(existing, t, probes)
}

// remember gives t, the record that replaces existing, the progress of
// the definitions other than its own that existing made pops of or
// remembers, for a retry of one of them to come. A record that took the
// place of another without passing on what it remembered lost it for
// good: the first try of a one-shot popped, a concurrent write replaced
// it, that write's retry replaced the concurrent one, and the first
// write's retry then popped again (TestRetryAboveARetryDoesNotPopAgain);
// and a tombstone replacing a tombstone forgot the pops of a one-shot
// update, popped, then deleted twice.
func remember(existing, t *Timer, probes *probeHits) {
	var ps []Progress
	if existing.Seq > 0 && existing.def != 0 && existing.def != t.def {
		probes.hit(probeKeepProgressReplace)
		ps = append(ps, existing.progress())
	}
	if existing.Extra() != nil {
		passed := len(ps)
		for _, p := range existing.Extra().Replaced {
			if p.Def != t.def {
				ps = append(ps, p)
			}
		}
		if len(ps) > passed {
			probes.hit(probeKeepProgressPass)
		}
	}
	if len(ps) > 0 {
		t.replaced(ps...)
	}
}

// sameWrite reports whether t and prior, of version priorVersion (0:
// unknown), are one client write: one definition, and either a retry
// that names the other's first try (TimerExtra.FirstTry), or written
// again by a proxy within window ms (see carry). The name is the rule:
// starts are rebuilt by the clock of every node that passes a record on,
// the receiver's own included, and a retry above a newer version is
// dated by that version, not by its proxy's clock, so a replica whose
// clock was stepped between the tries held them with starts seconds
// apart and versions issued 2.2 s apart, and popped a pop of the first
// try again under the retry (TestRetryIsOneWriteWhateverTheClocks). For
// records that name no first try (a sender's build that did not send
// one), two things tell it, either enough: starts within window ms of
// each other, and versions one proxy issued within window ms of its own
// clock (oneProxysTries).
func sameWrite(window int64, prior Progress, priorVersion uint64, t *Timer, probes *probeHits) bool {
	if prior.Def != t.def || prior.Interval != t.Interval() || prior.RepeatFor != t.RepeatFor() {
		return false
	}
	d := t.Start - prior.Start
	byClock := d >= -window && d <= window || oneProxysTries(window, priorVersion, t.Version)
	if !byClock && prior.FirstTry != 0 && prior.FirstTry == t.firstTry() {
		probes.hit(probeSameWriteByName)
		return true
	}
	return byClock
}

// oneProxysTries reports whether versions a and b were issued by one
// node (the instance number in each) within window ms of each other on
// its clock, as the tries of one client write are (rewrite). A start is
// rebuilt on every node that passes the record on, each by its own clock,
// and a clock stepped between (a jump, or set right) moves every start
// its node holds by the step: two tries of one write that reached a
// replica by different roads can arrive with starts seconds apart, and
// the replica popped a pop of the first try again under the second
// (TestTriesWithStartsAStepApartAreOneWrite). A version travels as it was
// issued, dated by the one clock that issued both.
func oneProxysTries(window int64, a, b uint64) bool {
	if a == 0 || b == 0 || instanceOf(a) != instanceOf(b) {
		return false
	}
	d := idMs(a) - idMs(b)
	return d >= -window && d <= window
}

// carry gives t, a write of definition prior.Def, the pops of prior when
// t is a retry of the same client write that is behind it. It reports
// whether t changed. A retry starts at most window ms after the first
// try; starts also differ by a millisecond or two either way when they
// were rebuilt from deltas on nodes whose clocks differ, so the window is
// taken both ways: the same definition written twice so close together
// is one write to the client too.
func carry(window int64, prior Progress, priorVersion uint64, t *Timer, probes *probeHits) bool {
	if prior.Seq <= t.Seq || !sameWrite(window, prior, priorVersion, t, probes) {
		return false
	}
	missed, owed := t.popMarks()
	t.setPopMarks(shiftMarks(missed, t.Seq, prior.Seq), shiftMarks(owed, t.Seq, prior.Seq))
	t.Start, t.Seq = prior.Start, prior.Seq
	probes.hit(probeKeepProgressCarry)
	return true
}

// carryOwn is carry for a record t that replaces existing, the record
// this replica holds: the pops t carries over are of the same write as
// existing's (own) or as one it remembers, prior. t's marks are its
// sender's, who tells as missed (and so owed here) what it did not make;
// of the pops up to prior.Seq this replica attempted what existing does
// not owe. So t takes existing's marks, less the pops t knows were made
// (mergeMarks' rule for records of one version): a pop this replica sent
// and whose callback was still in flight, told of as missed by t's
// sender, was popped again here (scenarios/README.md N45,
// TestRetryBehindKeepsThisReplicasMarks), and a pop in flight above
// t.Seq lost its mark, so a later notice would tell of it as made even
// if its callback failed. Of a write existing only remembers no marks
// are kept: every pop up to prior.Seq counts as attempted here and made,
// as owedOnce counts it.
func carryOwn(window int64, existing *Timer, own bool, prior Progress, priorVersion uint64, t *Timer, probes *probeHits) bool {
	inMissed, inOwed := t.popMarks()
	inSeq := t.Seq
	if !carry(window, prior, priorVersion, t, probes) {
		return false
	}
	missed, owed := shiftMarks(inMissed, inSeq, t.Seq), uint32(0)
	if own {
		exMissed, exOwed := existing.popMarks()
		missed, owed = trimMarks(exMissed, exOwed, t.Seq, inMissed, inSeq)
		if owed != exOwed {
			// A pop owed here that the other record knows was made.
			probes.hit(probeOwedTrim)
		}
	}
	if shiftMarks(inOwed, inSeq, t.Seq) != owed || shiftMarks(inMissed, inSeq, t.Seq) != missed {
		probes.hit(probeKeepProgressBehind)
	}
	t.setPopMarks(missed, owed)
	return true
}

// owedOnce gives t, a try of the client write existing holds or
// remembers (own: existing is of that write itself) that is as far as
// or ahead of existing's pops up to seq, the marks of one write: of the
// pops up to seq, t owes here only those existing owes, and tells of as
// missed only those existing does not know were made. Records of one
// version merge their marks so (mergeMarks); a retry's record is of
// another version, and the notice of a later pop, which says this pop
// was missed by its sender, had this replica pop again what it had
// popped of the first try (TestRetryAheadOwesNoPopOfTheFirstTry; a try
// behind is carryOwn's). Of a
// write existing only remembers, no marks are kept: every pop up to seq
// counts as attempted here.
func owedOnce(existing *Timer, own bool, seq uint32, t *Timer, probes *probeHits) {
	missed, owed := t.popMarks()
	upTo := ^above(seq, t.Seq)
	exMissed, exOwed := ^uint32(0), uint32(0)
	if own {
		m, o := existing.popMarks()
		exMissed, exOwed = shiftMarks(m, existing.Seq, t.Seq), shiftMarks(o, existing.Seq, t.Seq)
	}
	keepMissed, keepOwed := missed&^(upTo&^exMissed), owed&^(upTo&^exOwed)
	if keepMissed != missed || keepOwed != owed {
		probes.hit(probeKeepProgressOwedOnce)
		t.setPopMarks(keepMissed, keepOwed)
	}
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
// through pop notices and stay for good. A moved-away copy learns it
// too: it is the definition's copy on a node not yet reloaded for a
// scale, the hand-off of the replica that took the write on time may
// reach it there, and the copy placed back takes its start (movedBack);
// left late, the replicas a scale moved the timer to popped late by a
// hold for the rest of its life (TestMovedCopyLearnsTheEarliestStart).
// A tombstone keeps its own start, by which its life is measured.
func earliestStart(existing, incoming *Timer) bool {
	changed := false
	if incoming.Start < existing.Start && existing.State != Tombstone {
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
	if missed, owed := trimMarks(exMissed, exOwed, existing.Seq, inMissed, incoming.Seq); missed != exMissed || owed != exOwed {
		probes.hit(probeMergeTrim)
		if owed != exOwed {
			// A pop owed here that the other record knows was made.
			probes.hit(probeOwedTrim)
		}
		existing.setPopMarks(missed, owed)
		return true
	}
	return false
}

// trimMarks is what a record's marks (missed, owed at seq) keep of a
// record of the same pops that is behind it, whose missed marks are
// inMissed at inSeq <= seq: a pop the other knows was made was made, and
// of the pops above inSeq the other knows nothing.
func trimMarks(missed, owed, seq, inMissed, inSeq uint32) (uint32, uint32) {
	keep := shiftMarks(inMissed, inSeq, seq) | above(inSeq, seq)
	return missed & keep, owed & keep
}

// assign gives t every field of src but the store's bookkeeping, so that a
// held record takes what merge decided in place.
func (t *Timer) assign(src *Timer) {
	due, prev, next, slot := t.due, t.prev, t.next, t.slot
	*t = *src
	t.due, t.prev, t.next, t.slot = due, prev, next, slot
}
