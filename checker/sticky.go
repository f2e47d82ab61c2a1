package checker

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// checkSticky is the direct half of G5: no pop of a rejected write, no pop
// of a definition due after a DELETE or PUT that replaced it returned OK.
// When a fault hit that DELETE or PUT, a replica cut off from it may pop
// the old definition, but only until it is repaired (see unrepaired).
func (x *index) checkSticky() []Violation {
	var vs []Violation
	for _, d := range x.defs {
		if d.op.Outcome != Failed {
			continue
		}
		for _, seq := range sortedSeqs(d) {
			for _, i := range d.bySeq[seq] {
				p := x.h.Pops[i]
				vs = append(vs, x.violation("G5", p.At, d, fmt.Sprintf(
					"pop %d from %s of a write answered %d: got a pop of a rejected definition, want none",
					seq, p.Node, d.op.Status)))
			}
		}
	}
	defsOf := map[uint64][]*def{}
	for _, d := range x.defs {
		if d.op.Timer != 0 && d.op.Outcome != Failed {
			defsOf[d.op.Timer] = append(defsOf[d.op.Timer], d)
		}
	}
	timers := make([]uint64, 0, len(x.byTimer))
	for t := range x.byTimer {
		timers = append(timers, t)
	}
	sort.Slice(timers, func(i, j int) bool { return timers[i] < timers[j] })
	for _, t := range timers {
		ops := x.byTimer[t]
		for i, s := range ops {
			if s.Kind == Create || s.Outcome != OK {
				continue
			}
			for _, d := range defsOf[t] {
				if d.op.Seq == s.Seq || effReturn(d.op) >= s.Invoke {
					continue
				}
				var bad []Violation
				hit := x.replacedHit(ops[:i+1], d)
				switch {
				case hit && x.mayOrderBelow(s, d):
					// d's record may rightly win over s.
					x.recordWrite(s, excused(ExMayReorder))
					continue
				case x.clockAhead(d, s):
					x.recordWrite(s, excused(ExClockAhead))
					continue
				case hit:
					bad = x.unrepaired(s, d)
				default:
					bad = x.stale(s, d)
				}
				if len(bad) > 0 {
					x.recordWrite(s, violatedVerdict)
				}
				vs = append(vs, bad...)
			}
		}
	}
	return vs
}

// replacedHit reports whether a fault may have kept one of the writes in
// ws that replaced d (those after it, up to the one judged) from a
// replica of d or of its own definition. A replica the fault kept a
// delete from still holds d when a later write, which may not go to it
// at all (a factor the node chose anew, a bare ID naming no replica),
// returns: that replica pops d until it is repaired, whichever write
// replaced d last.
func (x *index) replacedHit(ws []Op, d *def) bool {
	for _, w := range ws {
		if w.Seq == d.op.Seq || w.Kind == Create || w.Outcome == Failed || effReturn(d.op) >= w.Invoke {
			continue
		}
		if _, hit := x.writeHit(w); hit {
			return true
		}
		if _, hit, _ := x.defWriteHit(w, d); hit {
			return true
		}
	}
	return false
}

// stale reports the pops of d due after s, which replaced d, returned OK.
// It reports the first such pop and how many followed.
func (x *index) stale(s Op, d *def) []Violation {
	return x.staleViolation(s, d, x.stalePops(s, d), "")
}

// stalePops lists, in arrival order, the pops of d due after s returned
// (after the node that made each took s: see siteTook).
func (x *index) stalePops(s Op, d *def) []Pop {
	limit := x.stickLimit(s)
	var out []Pop
	for _, seq := range sortedSeqs(d) {
		lo, _ := d.due(max(seq, 1))
		if lo <= limit {
			continue
		}
		for _, i := range d.bySeq[seq] {
			p := x.h.Pops[i]
			if took, ok := x.siteTook(s, d, p.Node); ok && lo <= took {
				x.recordWrite(s, excused(ExSiteLag))
				continue
			}
			out = append(out, p)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

func (x *index) stickLimit(s Op) time.Duration {
	return s.Return + x.o.StickAllowance + x.h.MaxClockSkew +
		time.Duration(x.o.NetHops)*x.h.MaxNetDelay
}

// siteTook is the stick limit of write s at node, a node of another site
// than s's, when a message carrying the record of the timer, which arrived
// at node or at its site's relay while s ran or up to SiteLag after it
// returned (s's forward, or the relay's replication of it to its site),
// waited in its receiver's inbound queue for its overloaded CPU (a Queued
// fault, recorded as it arrived) until past s's stick limit: that site
// places a write after the client has its answer (docs/design.md 4.10),
// so node took s only once the wait ended, and a pop of the definition s
// replaced due before then is no violation (scenarios/README.md U35: the
// relay's replication of an update waited 867 ms in the other site's
// replica, which popped the old definition at its due time meanwhile, 0.48
// s after the answer). The limit is the end of the longest such wait, plus
// the stick limit's own slack; ok is false when no wait passed the limit.
// A pop due after it is stale: the wait ended, and the replica held s.
func (x *index) siteTook(s Op, d *def, node string) (took time.Duration, ok bool) {
	if x.sameSite(s.Node, node) {
		return 0, false
	}
	limit := x.stickLimit(s)
	relay := ""
	if site := x.siteOf(node); site >= 0 {
		relay = x.h.Sites[site][0]
	}
	took = limit
	for sp := range d.spans() {
		q, record, isWait := sp.queuedWait()
		if !isWait || !record || sp.from < s.Invoke || sp.from > s.Return+x.o.SiteLag {
			continue
		}
		if to := sp.fault.Peers[0]; to == node || to == relay {
			took = max(took, sp.from+q+limit-s.Return)
		}
	}
	return took, took > limit
}

// unrepaired is G5 for a write s that a fault hit: a replica the fault
// cut off from s may go on popping d, the definition s replaced, but only
// until it is repaired. Each pop sends a notice to the other replicas,
// and one that took s answers it with the newer record (a tombstone lives
// at least one interval, node.TombstoneMin at least), which the popping
// replica adopts. So once a replica delivered a pop of d that surely
// repaired it (see repairs), a later pop of d from it, beyond the notice's
// round trip, is a violation. Without this bound a replica that ignores
// the answer would pop a deleted timer for ever under the fault excuse.
func (x *index) unrepaired(s Op, d *def) []Violation {
	repairedAt := map[string]time.Duration{}
	repairedBy := map[string]Pop{} // the pop that repaired each replica
	var bad []Pop
	note := ""
	for _, p := range x.stalePops(s, d) {
		if x.tookAndKept(s, d, p.Node, p.At) {
			// A fault kept s from another replica, not from this one.
			if len(bad) == 0 {
				note = fmt.Sprintf(" (a fault hit the write, but %s took it and kept it)", p.Node)
			}
			bad = append(bad, p)
			continue
		}
		if at, ok := repairedAt[p.Node]; ok && x.h.Storage && x.nodeCrashedIn(d, p.Node, at, p.At) {
			// The repair reached the disk lazily: the replica may
			// have come back from the crash with the old definition.
			delete(repairedAt, p.Node)
		}
		if at, ok := repairedAt[p.Node]; ok {
			if p.At > at+x.repairWindow() {
				if len(bad) == 0 {
					by := repairedBy[p.Node]
					note = fmt.Sprintf(" (a fault hit the write, but the pop %s delivered at %v should have repaired that replica)", by.Node, by.At)
					if by.Node != p.Node {
						note = fmt.Sprintf(" (a fault hit the write, but the pop %s delivered at %v should have repaired it, and %s by its spread)", by.Node, by.At, p.Node)
					}
				}
				bad = append(bad, p)
			}
			continue
		}
		if heal, ok := x.repairRoundDue(s, d, p); ok {
			if len(bad) == 0 {
				note = fmt.Sprintf(" (a fault hit the write, but every fault on the timer had healed by %v, and a repair round should have repaired %s by %v)", heal, p.Node, heal+x.repairRoundBound())
			}
			bad = append(bad, p)
			continue
		}
		if x.repairs(s, d, p) {
			repairedAt[p.Node], repairedBy[p.Node] = p.At, p
			for _, r := range x.spreadTo(d, p) {
				if _, ok := repairedAt[r]; !ok {
					repairedAt[r], repairedBy[r] = p.At+x.h.MaxNetDelay, p
				}
			}
		}
	}
	return x.staleViolation(s, d, bad, note)
}

// spreadTo is the other replicas that the repairing pop p of d (see
// repairs) surely repaired too: its notice went to every replica of d,
// and the replica that took the newer record from the answer sends it
// on to each of them (node/pop.go spreadRepair), one network delay
// after the answer, so a replica that still held d when the notice came
// holds the newer record by then. Only for a placement the history
// knows, of one factor, that no scale moved meanwhile, and with no fault
// on d's nodes, links or messages until that spread has landed.
func (x *index) spreadTo(d *def, p Pop) []string {
	if !d.placed || d.rfUnknown {
		return nil
	}
	b := p.At + x.repairWindow() + x.h.MaxNetDelay
	for sp := range d.spans() {
		if sp.from > b {
			break
		}
		if sp.end >= p.At {
			return nil
		}
	}
	var out []string
	for _, r := range d.rankedIn(d.lo, b) {
		if r != p.Node && x.sameSite(r, p.Node) { // a notice's replicas are its site's
			out = append(out, r)
		}
	}
	return out
}

// repairRoundBound is how long after the faults on a timer healed a
// replica a write missed may still hold the definition it replaced: the
// next repair round of a replica that took the write (RepairRound at the
// latest, plus a round of its own still waiting out an attempt's
// timeout when the heal came), the round's messages and push
// (RepopulateBound), and a pop that fired just before the push landed
// (repairWindow).
func (x *index) repairRoundBound() time.Duration {
	return RepairRound + RepairTimeout + x.o.RepopulateBound + x.repairWindow()
}

// repairRoundDue reports whether stale pop p of d, which write s hit by a
// fault replaced, comes after a repair round surely brought s's record to
// its replica: every fault on d's nodes, links and messages (spans, their
// settle time included) had ended, with s's return, by heal, none began
// until p, p came more than repairRoundBound after heal, and a replica
// at p's site other than p's surely took s and kept it (keptBy): it is
// dirty (it changed when it took s, and a round that failed to reach a
// peer marks it again), so its next round compares its records with p's
// node and pushes s's.
func (x *index) repairRoundDue(s Op, d *def, p Pop) (heal time.Duration, due bool) {
	heal = effReturn(s) + x.o.FaultSettle
	for sp := range d.spans() {
		if sp.from > p.At {
			break
		}
		heal = max(heal, sp.to)
	}
	if p.At-x.repairRoundBound() <= heal || heal >= x.end { // heal may be never
		return heal, false
	}
	if !d.placed && len(x.h.Sites) > 1 {
		return heal, false // which replicas took s, at which site, is unknown
	}
	return heal, x.keptBy(s, d, p.Node, p.At, true)
}

// mayOrderBelow reports whether write s, hit by a fault, may carry a
// version below d's: with one acknowledgement per write, two writes cut by
// a split are ordered by their proxies' clocks (see mayReorder), and
// then d's record rightly repairs the replicas that took s.
func (x *index) mayOrderBelow(s Op, d *def) bool {
	return d.quorum == 1 && s.Invoke-effReturn(d.op) < 2*x.h.MaxClockSkew
}

// clockAhead reports whether d's version may order above write s's by
// the clock faults alone: d's proxy may have dated d later (genLatest)
// than the clock of s's proxy showed when s began, boot offsets left out
// (they are within the tolerance the other rules allow for). With one
// acknowledgement per write (d.quorum 1) no replica need have held both,
// so last-writer-wins orders them by those dates and rightly keeps d: a
// clock moved further than the gap between two writes is beyond what G5
// can promise (docs/design.md 4.2). From three replicas up a replica that
// holds d answers s's proxy with it, and s is written above it or
// refused, unless too few of d's holders took s's request for every
// quorum of s to meet one (answeredAbove).
func (x *index) clockAhead(d *def, s Op) bool {
	if d.op.Node == "" || s.Node == "" || x.genLatest(d) <= s.Invoke+x.tl.offset(s.Node, s.Invoke) {
		return false
	}
	return d.quorum == 1 || !x.answeredAbove(d, s)
}

// genLatest is the latest date d's proxy may have given d's version: its
// clock's latest reading while d ran, or up to ClockLead past that when
// the clock of a node that holds or wrote d's timer (startHolders) had
// read later before d returned. A node's version generator is a hybrid
// logical clock (node/id.go): it moves past the versions and IDs it is
// sent, as far as the lead ahead of its own clock, so a clock stepped
// ahead drags the versions of the nodes it exchanges records with, a lead
// at most (fresh seed 9516144, scenarios/README.md C67: a replica's clock
// 2m22s ahead for 8 s, and a create through another replica half a
// minute later dated 53 s ahead). Nodes that share none of the timer's
// records are left out: their versions reach its proxy only through a
// third node's records, which this does not follow.
func (x *index) genLatest(d *def) time.Duration {
	ret := min(effReturn(d.op), x.end)
	own := x.tl.latestLocal(d.op.Node, d.op.Invoke, ret)
	seen := own
	for n := range x.startHolders(d) {
		seen = max(seen, x.tl.latestLocal(n, 0, ret))
	}
	return max(own, min(seen, own+ClockLead))
}

// answeredAbove reports whether every quorum of write s's acknowledgements
// includes a replica of d that surely held d's record when s ran (it took
// d's write, and no crash since took its copy) and surely took s's
// request: that replica answers s's proxy with d, newer by its version,
// and s is written above it or refused. With rf replicas and a quorum of
// q, that takes rf-q+1 of them: an update through a node whose version
// generator ran behind, while one holder of d was cut off and the other
// had lost it to a disk found corrupt, was acknowledged by two replicas
// holding nothing, below d's version, and the cut-off holder's record of
// d won at the heal (scenarios/README.md C67).
func (x *index) answeredAbove(d *def, s Op) bool {
	replicas := d.rankedIn(d.op.Invoke, s.Invoke)
	if len(replicas) == 0 {
		return false
	}
	missedD := x.writeMissed(d.op, d)
	missedS := x.writeMissed(s, d)
	if missedD[d.op.Node] || missedS[s.Node] {
		return false
	}
	held := 0
	for _, r := range replicas {
		if !missedD[r] && !missedS[r] && !x.lostCopyIn(d, r, d.op.Invoke, s.Invoke) {
			held++
		}
	}
	return held >= len(replicas)-ackQuorum(len(replicas))+1
}

// lostCopyIn reports whether a crash of node n of d in [a, b] may have
// taken its copy: every crash without storage, one with storage only
// where a disk fault lost it (crashLoses).
func (x *index) lostCopyIn(d *def, n string, a, b time.Duration) bool {
	for sp := range d.spans() {
		if sp.fault.Kind == Crash && sp.from >= a && sp.from <= b && slices.Contains(sp.fault.Nodes, n) && x.crashLoses(sp) {
			return true
		}
	}
	return false
}

// repairWindow bounds a healthy pop notice's round trip after the pop
// reached the endpoint: the callback's answer, the notice and its answer,
// with a replica rank's worth of room for queues.
func (x *index) repairWindow() time.Duration {
	return x.o.ReplicaSkew + time.Duration(2*x.o.NetHops)*x.h.MaxNetDelay
}

// repairs reports whether pop p of d, which write s replaced, surely
// brought its replica s's record: the endpoint accepted it in time (a
// failed pop sends no notice), no fault touched d's nodes, links or
// messages while the notice ran, and a replica that took s kept its
// record (keptBy). However old s's record is: docs/operations.md
// promises that a deleted or replaced definition never comes back, so a
// replica that took s keeps what it needs to refuse d (a tombstone that
// outlives every message still in flight about d), and an expired
// tombstone excuses nothing.
//
// A notice goes to the replicas of the popping node's record of d, so
// it meets a keeper only where that record has a replica besides the
// popper (noticeLeaves).
func (x *index) repairs(s Op, d *def, p Pop) bool {
	if x.failed(p) || !x.noticeLeaves(d, p) {
		return false
	}
	b := p.At + x.repairWindow()
	for sp := range d.spans() {
		if sp.from > b {
			break
		}
		if sp.end >= p.At {
			return false
		}
	}
	return x.keptBy(s, d, p.Node, b, false)
}

// noticeLeaves reports whether the notice of pop p of d surely went to
// a node besides its popper: the replicas of the popper's record of d.
// Of a placed write those are d's (keptBy looks among them); of a write
// whose factor the history leaves to the node, as many as its fewest
// factor (rfMin), and the replicas ranked above the popper, which holds
// a record that places it (ranked over the members when no scale moves
// them). A factor of one that the popper holds at rank 0 places it
// alone, and its notice goes nowhere (fresh seed 9565325,
// scenarios/README.md C73: an update without a factor of a timer
// created with one stayed on its one replica, which popped it after a
// delete placed on every member had missed that replica).
func (x *index) noticeLeaves(d *def, p Pop) bool {
	if d.placed || d.rfMin > 1 {
		return true
	}
	if len(x.h.Members) == 0 || len(x.h.Scales) > 0 || d.timer == 0 {
		return false
	}
	return slices.Index(Replicas(x.h.Members, d.timer, len(x.h.Members)), p.Node) > 0
}

// keptBy reports whether some replica other than the popping one surely
// took write s and still held its record at b: it was up and reachable
// while s ran, and did not crash since. A replica that crashed restarts
// empty, and its start-up resync fetches only live timers, not the
// tombstone of a delete; but the notice of a stale pop reaches every
// replica, and one that kept s's record answers it (the stricter rule of
// scenarios/README.md C4, now that a restarted replica repopulates).
//
// With local, the keeper must be at the popping replica's site: a repair
// round runs between the nodes of one site's view, and another site
// hears of a write only from its forward and mends a replica that
// missed it by that replica's notices (docs/design.md 4.10; fresh seed
// 7101298, an update whose forward another site's relay refused as
// dated ahead by its proxy's stepped clock). Without, a keeper at
// another site must be its relay (d.relays), which the notice reaches
// and which answers with what it holds itself (fresh seed 9620465,
// scenarios/README.md C77: the notice went only to the other site's
// relay, which held no copy, while the update's holder there was
// another node).
func (x *index) keptBy(s Op, d *def, popper string, b time.Duration, local bool) bool {
	if !d.placed {
		return !x.crashedIn(d, s.Invoke, b) // which replicas took s is unknown
	}
	ret := min(effReturn(s), x.end)
	missed := x.down(d, s.Invoke, ret, false)
	for sp := range d.spans() {
		if sp.from <= ret && sp.to >= s.Invoke && lostRequest(sp.fault) {
			addAll(missed, sp.fault.Peers)
		}
	}
	// A replica at another site takes s only from its relay, by the
	// forward s's node sends once it has answered (docs/design.md 4.10):
	// when the relay missed that (down, cut off, the forward lost, up to
	// SiteLag past the answer), that site's replicas missed s too, as
	// writeHit judges them (missedAtSites), and need not hold it. The
	// update of fresh seed 181514 reached its home replica alone, which
	// crashed without storage before the other site's relay was back:
	// nobody held it, yet the other site's replica counted as its keeper
	// (TestSiteWhoseRelayMissedTheUpdateOwesNoRepair).
	x.missedAtSites(d, s.Node, ret, false, missed)
	replicas := d.rankedIn(s.Invoke, b)
	for _, r := range replicas {
		if r == popper || missed[r] || x.nodeCrashedIn(d, r, s.Invoke, b) || !x.sameSite(r, popper) && (local || !slices.Contains(d.relays, r)) {
			continue
		}
		return true
	}
	return false
}

// tookAndKept reports whether node, a replica of d that write s replaced,
// surely took s and still held its record at b: no fault may have kept s
// from it while s ran (down, paused, cut off, a request about the timer
// lost on its way to it, its disk faulty, the replication held in its
// inbound queue, another site's lag), and it did not crash since. Such a
// replica holds a newer version than d's, which no record of d replaces
// (last writer wins), so its pop of d is stale however the fault left the
// others: it owes no repair, and has no repairing pop of its own. Without
// this a replica that took an update and went back to the definition it
// replaced (a merge or a repair taking the older record) popped it for
// as long as every other replica had missed the write.
func (x *index) tookAndKept(s Op, d *def, node string, b time.Duration) bool {
	if !d.placed || !slices.Contains(d.rankedIn(s.Invoke, b), node) || x.nodeCrashedIn(d, node, s.Invoke, b) {
		return false
	}
	missed := x.writeMissed(s, d)
	return !missed[s.Node] && !missed[node]
}

// writeMissed is the nodes of d that a fault may have kept write s from
// while it ran: down, paused, cut off, a request about the timer lost on
// its way to them, their disk faulty, the replication held in their
// inbound queue past the write's stick limit, another site's lag.
func (x *index) writeMissed(s Op, d *def) map[string]bool {
	ret := min(effReturn(s), x.end)
	missed := x.downNodes(d, s.Invoke, ret)
	addAll(missed, x.diskFaulty(d, s.Invoke, ret))
	for sp := range d.spans() {
		if sp.from <= ret && sp.to >= s.Invoke && lostRequest(sp.fault) {
			missed[sp.fault.Peers[0]] = true
		}
		if r, ok := x.inboundKept(d, sp, s, ret); ok {
			missed[r] = true
		}
		if x.queuedPastLag(sp, s.Node, ret) {
			missed[sp.fault.Peers[0]] = true
		}
	}
	x.missedAtSites(d, s.Node, ret, true, missed)
	return missed
}

// nodeCrashedIn reports whether node n of d crashed in [a, b].
func (x *index) nodeCrashedIn(d *def, n string, a, b time.Duration) bool {
	for sp := range d.spans() {
		if sp.fault.Kind == Crash && sp.from >= a && sp.from <= b && slices.Contains(sp.fault.Nodes, n) {
			return true
		}
	}
	return false
}

// crashedIn reports whether one of d's nodes crashed in [a, b], forgetting
// what it held.
func (x *index) crashedIn(d *def, a, b time.Duration) bool {
	for sp := range d.spans() {
		if sp.fault.Kind == Crash && sp.from >= a && sp.from <= b {
			return true
		}
	}
	return false
}

// staleViolation reports the first of the stale pops bad and how many
// there were; note says why they count as stale.
func (x *index) staleViolation(s Op, d *def, bad []Pop, note string) []Violation {
	if len(bad) == 0 {
		return nil
	}
	p := bad[0]
	limit := x.stickLimit(s)
	if took, ok := x.siteTook(s, d, p.Node); ok {
		limit = took
	}
	what := "deleted"
	if s.Kind == Update {
		what = fmt.Sprintf("updated to opaque %q", s.Spec.Opaque)
	}
	return []Violation{x.violation("G5", p.At, d, fmt.Sprintf(
		"timer %s by op %d returning OK at %v, yet pop %d from %s (due from %v) carries the old definition, %d such pops%s: got a pop of the old definition, want none due after %v",
		what, s.Seq, s.Return, p.Seq, p.Node, x.dueFrom(d, p.Seq), len(bad), note, limit))}
}

func (x *index) dueFrom(d *def, seq int) time.Duration {
	lo, _ := d.due(max(seq, 1))
	return lo
}
