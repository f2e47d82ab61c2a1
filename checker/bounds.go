package checker

import (
	"slices"
	"strings"
	"time"
)

// slack is what every lateness bound adds: the fault-free allowance, the
// network hops and the clock skew of a node that runs behind.
func (x *index) slack() time.Duration {
	return x.healthyLate() + x.h.MaxClockSkew
}

// healthyLate is how late a pop with no fault around it and no clock
// moved may arrive: the fault-free allowance and the network hops.
func (x *index) healthyLate() time.Duration {
	return x.o.FaultFreeLate + time.Duration(x.o.NetHops)*x.h.MaxNetDelay
}

// rankBound is G3's bound with replica failures, for the worst rank:
// the last replica of the last site (ranks).
func (x *index) rankBound(d *def) time.Duration {
	return x.o.ReplicaSkew*time.Duration(x.ranks(d)-1) + x.slack()
}

// ranks is how many ranks d's pops may take: its factor's replicas, at
// every site when there are several, as a remote site's replicas pop
// after every replica of the site before (docs/design.md 4.10; the rank
// order is placement's). A placed definition's factor counts them
// already (d.rf is its placement's length); one whose factor the history
// leaves to the node counted one site's, so a pop a remote site made
// once every replica of the write's site had lost its copy (crashed
// without storage) was held to the first site's ranks (fresh seed
// 9314195: pop 1 made 4 s after its due time, rf 2 at each of two
// sites, judged against one rank).
func (x *index) ranks(d *def) int {
	if d.placed || len(x.h.Sites) <= 1 {
		return d.rf
	}
	n := 0
	for _, site := range x.h.Sites {
		n += min(d.rf, len(site))
	}
	return n
}

// window is the stretch around pop k in which a fault "touches" it: from
// the previous pop's earliest due time (or the write, for pop 1) less the
// worst rank delay, to the latest bound. A fault around the previous pop
// still counts: a replica that missed the popped notice is only set right
// by the next pop's notice, so until then the timer runs on a backup's
// schedule.
func (x *index) window(d *def, k int) (a, b time.Duration) {
	lo, hi := d.due(k)
	r := x.rankBound(d)
	return lo - d.op.Spec.Interval - r, hi + r
}

// lateBound is how late after its latest due time pop k may first arrive,
// and false when no bound applies (all replicas may have been down, or
// failed its callback). A copy dropped before the pop's window (a missed
// write or a crash, not revived since) stays dropped however long ago its
// fault ended: then a replica that holds one pops it, at its rank, or,
// with none left, whoever a notice revives, whenever (pop 6 of seed
// 5912). A failed callback weighs in its own pop only (failedPop).
func (x *index) lateBound(d *def, k int) (time.Duration, bool) {
	return x.lateBoundOf(d, k, true)
}

// lateBoundOf is lateBound, weighing the failed callbacks of pop k only
// when failed is true. Memoised: it is asked once per delivery of the pop
// and again by the G2 and coverage checks, and each time weighs every
// fault of d; nothing it reads changes once the index is built.
func (x *index) lateBoundOf(d *def, k int, failed bool) (time.Duration, bool) {
	key := lateKey{d, k, failed}
	if b, ok := x.lateBounds[key]; ok {
		return b.bound, b.ok
	}
	bound, ok := x.lateBoundOnce(d, k, failed)
	if x.lateBounds == nil {
		x.lateBounds = map[lateKey]lateMemo{}
	}
	x.lateBounds[key] = lateMemo{bound, ok}
	return bound, ok
}

// lateKey and lateMemo are lateBoundOf's memo.
type (
	lateKey struct {
		d      *def
		k      int
		failed bool
	}
	lateMemo struct {
		bound time.Duration
		ok    bool
	}
)

// lateBoundOnce computes lateBoundOf.
func (x *index) lateBoundOnce(d *def, k int, failed bool) (time.Duration, bool) {
	a, b := x.window(d, k)
	var out, strict map[string]bool
	if x.popTouched(d, k, b) {
		out, strict = x.withoutCopy(d, k, a, b, failed)
	} else {
		out, strict = x.dropped(d, a, a)
		if failed {
			f := x.failedPop(d, k)
			addAll(out, f)
			addAll(strict, f)
		}
	}
	if hand, _ := x.handOff(d, k); hand > 0 {
		// The holders a move takes the timer off pop after every new
		// replica, one rank past the window: down in that turn, they
		// were unable too (a holder that crashed just before its turn
		// and popped at its restart).
		for n := range x.downNodes(d, b, b+hand) {
			if x.leftBy(d, n, a, b) {
				out[n], strict[n] = true, true
			}
		}
	}
	for n := range x.downInHeldTurn(d, k, b) {
		out[n], strict[n] = true, true
	}
	if len(out) > 0 && x.allLost(d, strict, a, b) {
		return 0, false
	}
	if live, ok := x.liveBound(d, k, a, b, out); ok {
		return live + x.slack(), true
	}
	if hand, _ := x.handOff(d, k); hand > 0 {
		return x.rankBound(d) + hand + d.held, true
	}
	if len(out) == 0 && !d.shared {
		return x.slack() + d.held, true
	}
	return x.rankBound(d) + d.held, true
}

// downInHeldTurn is the replicas of d down in the turn a hold gave them
// past the window's end b: a replica that got the write late pops that
// much later (heldAt, which the bound adds), so a crash before that turn
// costs its pop as one inside the window does. The window stopped at b,
// and a replica that crashed after it, before the turn its hold made,
// was held to popping by the bound (fresh seed 9200846, U39: a relay
// paused while a forward reached it passed the timer on 3.1 s late, and
// its site's replica crashed at its held turn with every other node).
func (x *index) downInHeldTurn(d *def, k int, b time.Duration) map[string]bool {
	var out map[string]bool
	for _, r := range d.replicas {
		h := x.heldAt(d, r, k)
		if h == 0 || !x.downNodes(d, b, b+h)[r] {
			continue
		}
		if out == nil {
			out = map[string]bool{}
		}
		out[r] = true
	}
	return out
}

// handOff is the one rank more pop k of d may take while a scale moves
// the timer (a move, see epochsOf, meets the pop's window), and the
// scale's kind: a new replica pops it only once its resync or a hand-off
// brought it the copy, and the node that held it before keeps its copy
// live until every new replica holds it, popping after all of them, one
// ReplicaSkew past the last rank (node/repair.go handOff,
// docs/design.md 4.8). 0 when no move meets the window.
func (x *index) handOff(d *def, k int) (time.Duration, FaultKind) {
	a, b := x.window(d, k)
	for _, s := range d.moves {
		if s.from <= b && s.to >= a {
			return x.o.ReplicaSkew, s.fault.Kind
		}
	}
	return 0, ""
}

// leftBy reports whether node n held d before a scale whose move meets
// [a, b] and is no replica of it after: a holder the move takes the
// timer off, which keeps its copy live and pops after every new replica
// (see handOff).
func (x *index) leftBy(d *def, n string, a, b time.Duration) bool {
	for _, s := range x.h.Scales {
		end := x.end
		if s.End != 0 {
			end = s.End + x.o.FaultSettle
		}
		if s.Start > b || end < a {
			continue
		}
		if slices.Contains(Replicas(s.Before, d.timer, d.rf), n) && !slices.Contains(Replicas(s.After, d.timer, d.rf), n) {
			return true
		}
	}
	return false
}

// heldFor is how long a write's replication may have been held up: from
// the write to the end of a pause or clog that was active during it, and
// the replicas it held (unplaced: every node). A replica applies
// start-time-delta when it processes the message (api.md), so one that
// received the write late pops late by as much; replicas converge on the
// earliest start they hold when a notice passes between them, but until
// then each keeps its own. The delta carries no transit time, so no node
// can do better without trusting other nodes' wall clocks.
//
// It returns too, for the replicas a message after the write held, when
// that message was sent and its hold (see lateCopy), and the excuse the
// longest hold stands for: ExHeldInbound when a message's wait in its
// receiver's inbound queue made it.
func (x *index) heldFor(d *def) (time.Duration, map[string]bool, map[string]lateCopy, Excuse) {
	var held time.Duration
	by := ExHeld
	late := map[string]bool{}
	since := map[string]lateCopy{}
	ret := min(d.hi, x.end)
	for s := range d.spans() {
		if w, record, ok := s.overloadWait(); ok {
			if h := overloadHeld(s, x.leftAfter(s.fault, w), record, d.lo, ret); h > 0 {
				if h > held {
					held, by = h, ExHeld
				}
				addAll(late, s.fault.Peers)
			}
			continue
		}
		if q, record, ok := s.queuedWait(); ok {
			if h := x.queuedHeld(d, s, q, record, ret); h > 0 {
				if h > held {
					held, by = h, ExHeldInbound
				}
				addAll(late, s.fault.Peers)
			}
			continue
		}
		if s.fault.Kind != Pause && s.fault.Kind != Clog || s.from > ret || s.end < d.lo {
			continue
		}
		if s.end-d.lo > held {
			held, by = s.end-d.lo, ExHeld
		}
		switch {
		case s.fault.Kind == Pause && slices.Contains(s.fault.Nodes, d.op.Node):
			addAll(late, d.replicas) // the node that took the write stood still
		case s.fault.Kind == Pause:
			addAll(late, s.fault.Nodes)
		case slices.Contains(s.fault.Nodes, d.op.Node):
			addAll(late, s.fault.Peers)
		}
	}
	if h := x.heldAtSites(d, ret, late); h > held {
		held, by = h, ExHeld
	}
	if h, inbound := x.heldByRelay(d, ret, late); h > held {
		held, by = h, ExHeld
		if inbound {
			by = ExHeldInbound
		}
	}
	if h, inbound := x.heldByWait(d, held, by == ExHeldInbound, late, since); h > held {
		held, by = h, ExHeld
		if inbound {
			by = ExHeldInbound
		}
	}
	if held > 0 && d.placed {
		// A replica that lost its copy at any time (missed write, crash)
		// may have it back from a late replica's notice, start and all.
		all, _ := x.dropped(d, d.lo, x.end)
		for n := range all {
			late[n] = true
		}
	}
	if h := x.heldRefill(d, late, since); h > held {
		held, by = h, ExHeld
	}
	if h := x.heldByScale(d, late, since); h > held {
		held, by = h, ExHeld
	}
	return held, late, since, by
}

// heldByScale is heldFor's part for a copy a scale brings: a node the
// scale places d on, which the placement before it did not, holds no
// copy until the scale's resync or an old replica's hand-off brings one,
// and it rebuilds the start when it processes that message
// (start-time-delta), so a pause of that node, or a clog into it, while
// the scale ran held the copy and makes its start late by as much: the
// hold of heldByWait's waited hand-off, by a fault of the receiver
// (TestHandOffThatWaitedStartsTheNewReplicaLate,
// TestHandOffHeldByItsReceiversPauseStartsItLate; scenarios/README.md
// C32). A replica that kept its copy through the scale, or took it in
// time, keeps the true start and answers the held one's notices with it,
// which ends the hold after its first pop (heldAt); the old replicas the
// scale takes d off send the new ones no notice of it once the scale is
// done. It adds the held replicas to late, records in since when each
// copy may have been sent and its hold, and returns the longest hold.
func (x *index) heldByScale(d *def, late map[string]bool, since map[string]lateCopy) time.Duration {
	if !d.placed {
		return 0
	}
	var held time.Duration
	for _, sc := range x.h.Scales {
		end := x.end
		if sc.End != 0 {
			end = sc.End + x.o.FaultSettle
		}
		if d.lo > end {
			continue
		}
		from := max(sc.Start, d.lo)
		copies := map[string]lateCopy{}
		for _, n := range sc.places(d.timer, d.rf) {
			for s := range d.spans() {
				if holdsInto(s.fault, n) && s.end > from && s.from <= end {
					at := max(s.from, from)
					copies[n] = copies[n].add(at, s.end-at)
				}
			}
		}
		for n, c := range copies {
			late[n] = true
			since[n] = since[n].add(c.since, c.hold)
			held = max(held, c.hold)
		}
	}
	return held
}

// heldByWait is heldFor's part for a copy brought back by a message that
// waited (scenarios/README.md C8): a replica left without a copy (it
// missed the write or crashed since, or a scale placed d on it after the
// write) takes one from the next message that carries the record to it,
// a notice, a resync or a hand-off, and rebuilds the start when it
// processes it, so its start is late by the message's time from being
// built to being processed: its wait for its sender (an Overload fault),
// its wait in its receiver's queue (a Queued fault) and the transit (in
// the slack). It adds to late the replicas it held, and returns the
// longest hold and whether an inbound wait made it.
//
// A node that got its copy late passes its late start on (a relay to its
// site, a notice or resync it sends), so the holds add up along a path:
// the messages are taken in the order they were sent, and one from a
// node already held carries that node's hold besides its own waits,
// whether a waited message or the write's own faults held it (holdOf:
// scenarios/README.md C42, a hand-off that waited from the replica
// the write's replication reached late). It
// records in since when the last message that held each replica was
// sent, and that replica's hold.
//
// A scale's copy is such a message whether or not it waited: a node the
// scale places d on takes its copy from the replicas before the scale
// (their resync pages, their hand-offs), so it inherits the hold of a
// held one (writeHeld, and writeInbound, for one the write's own faults
// held), from the scale's start on. A timer moved off a replica and back, each move's
// copy from a held node, runs late for good by the first hold
// (scenarios/README.md C38: the hand-off back was not slowed, and the
// replica it reached was judged to hold the true start).
func (x *index) heldByWait(d *def, writeHeld time.Duration, writeInbound bool, late map[string]bool, since map[string]lateCopy) (time.Duration, bool) {
	if !d.placed {
		return 0, false
	}
	type msg struct {
		from, to string
		sent, w  time.Duration
		inbound  bool
		scale    *Scale // a scale's copies to the nodes it places d on
		// taken, for a late or replayed message, is when its receiver
		// took it (its receiver's copy is judged then, not when it was
		// sent); 0 for any other.
		taken time.Duration
	}
	var msgs []msg
	for _, m := range x.waitedRecords(d) {
		if m.sent >= d.lo {
			msgs = append(msgs, msg{from: m.from, to: m.to, sent: m.sent, w: m.w + m.q, inbound: m.q > 0})
		}
	}
	for s := range d.spans() {
		if age, record, ok := lateAge(s.fault); ok && record && s.from-age >= d.lo {
			msgs = append(msgs, msg{from: s.fault.Nodes[0], to: s.fault.Peers[0], sent: s.from - age, w: age, taken: s.from})
		}
	}
	for i := range x.h.Scales {
		if sc := &x.h.Scales[i]; sc.Start >= d.lo && sc.Start <= x.end {
			msgs = append(msgs, msg{sent: sc.Start, scale: sc})
		}
	}
	slices.SortStableFunc(msgs, func(a, b msg) int { return int(a.sent - b.sent) })
	cf := x.copyFailures(d)
	holds := map[string]time.Duration{}
	inbounds := map[string]bool{}
	var held time.Duration
	inbound := false
	hold := func(n string, h time.Duration, in bool, sent time.Duration) {
		if h > holds[n] {
			holds[n], inbounds[n] = h, in
		}
		if holds[n] > held {
			held, inbound = holds[n], inbounds[n]
		}
		late[n] = true
		since[n] = since[n].add(sent, holds[n])
	}
	// holdOf is node n's hold and whether an inbound wait made it: the
	// write's (writeInbound when its longest hold was a wait in a
	// receiver's queue) for a node the write's own faults held.
	holdOf := func(n string) (time.Duration, bool) {
		if holds[n] == 0 && late[n] {
			return writeHeld, writeInbound
		}
		return holds[n], inbounds[n]
	}
	for _, m := range msgs {
		if m.scale != nil {
			for _, n := range m.scale.places(d.timer, d.rf) {
				for _, b := range Replicas(m.scale.Before, d.timer, d.rf) {
					if h, in := holdOf(b); h > 0 {
						hold(n, h, in, m.sent)
					}
				}
			}
			continue
		}
		h, in := holdOf(m.from)
		h, in = h+m.w, in || m.inbound
		at := m.sent
		if m.taken != 0 {
			at = m.taken
		}
		lacks := x.lacksCopy(d, cf, m.to, at)
		if lacks {
			hold(m.to, h, in, at)
		}
		// Another site's relay that holds no copy of its own places
		// what it takes on its site's replicas at once, by a message
		// too quick to be recorded: a replica there without a copy
		// takes the start the relay took.
		if lacks || !slices.Contains(d.replicas, m.to) {
			for _, r := range x.relayedTo(d, m.to) {
				if x.lacksCopy(d, cf, r, at) {
					hold(r, h, in, at)
				}
			}
		}
	}
	return held, inbound
}

// relayedTo is the replicas of d that relay, when it is the address
// node of another site than the one of the node that took d's write,
// places d on: the others of its site. Nil for any other node.
func (x *index) relayedTo(d *def, relay string) []string {
	if len(x.h.Sites) <= 1 {
		return nil
	}
	var out []string
	for _, site := range x.h.Sites {
		if len(site) == 0 || site[0] != relay || slices.Contains(site, d.op.Node) {
			continue
		}
		for _, r := range d.replicas {
			if r != relay && slices.Contains(site, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// waitedRecords is every record message of d that waited, read once per
// definition (see waitedRecord), in the order of d's spans.
func (x *index) waitedRecords(d *def) []waitedMsg {
	if d.waited != nil {
		return *d.waited
	}
	var out []waitedMsg
	for s := range d.spans() {
		if to, sent, w, q, ok := x.waitedRecord(d, s); ok {
			out = append(out, waitedMsg{from: s.fault.Nodes[0], to: to, at: s.from, sent: sent, w: w, q: q})
		}
	}
	d.waited = &out
	return out
}

// waitedMsg is a record message of a definition that waited: from, to,
// when its fault was recorded (at), when it was sent, its waits.
type waitedMsg struct {
	from, to       string
	at, sent, w, q time.Duration
}

// waitedRecord reads the message of span s when it carried d's record to
// a node and waited: its receiver, when it was sent, and its waits for
// its sender and in its receiver's queue.
func (x *index) waitedRecord(d *def, s *span) (to string, sent, w, q time.Duration, ok bool) {
	if w, record, ok := s.overloadWait(); ok && record {
		return s.fault.Peers[0], s.from, x.leftAfter(s.fault, w), 0, true
	}
	if q, record, ok := s.queuedWait(); ok && record {
		w := x.sendWaitOf(d, s.fault.Nodes[0], s.fault.Peers[0], true, s.from)
		return s.fault.Peers[0], s.from - w - x.h.MaxNetDelay, w, q, true
	}
	return "", 0, 0, 0, false
}

// lacksCopy reports whether node n may hold no copy of d when a message
// sent at t reaches it: a scale that places d on n, which its placement
// before the scale did not, runs at t (its resync or a hand-off brings
// the copy); or n lost its copy (a missed write, a crash) before t and
// no notice of a pop made a healthy delay before t revived it.
func (x *index) lacksCopy(d *def, cf *copyFailures, n string, t time.Duration) bool {
	for _, sc := range x.h.Scales {
		end := x.end
		if sc.End != 0 {
			end = sc.End + x.o.FaultSettle
		}
		if sc.Start <= t && t <= end && slices.Contains(Replicas(sc.After, d.timer, d.rf), n) &&
			!slices.Contains(Replicas(sc.Before, d.timer, d.rf), n) {
			return true
		}
	}
	for _, f := range cf.other {
		if f.node == n && f.at <= t && !x.revived(d, cf, n, f.at, t-x.healthyLate()) {
			return true
		}
	}
	return false
}

// noticeWaited reports whether the notice node "from" sent at t of a pop
// of d waited on its way to "to" (an Overload or Queued fault of a record
// message between them, sent within a healthy delay after t): its
// receiver rebuilt the start it carries late by the wait, so it does not
// hand on the true start.
func (x *index) noticeWaited(d *def, from, to string, t time.Duration) bool {
	for _, m := range x.waitedRecords(d) {
		if m.from == from && m.to == to && m.sent >= t-x.h.MaxNetDelay && m.sent <= t+x.healthyLate() {
			return true
		}
	}
	return false
}

// heldAtSites is heldFor's part at the other sites, which get a write
// through their relay, after the client has its answer (see
// missedAtSites): a pause of one of their nodes, or a clog on the relay's
// links, up to SiteLag after ret holds the write on its way there, and a
// relay that got it late held it for its whole site. A fault of the site
// that began while such a hold lasted holds the write on. A partition
// between the write's node and the relay, or between the relay and its
// site's replicas, makes no copy late (the forward is lost, and sent
// again with the start as it is then), but keeps the write on its way
// until SiteRetry past its heal, the forward sent again until the relay
// answers: a pause of the relay that began then held the forward sent
// after the heal (fresh seed 9820413, scenarios/README.md C82: a one-way
// cut from the relay from 10 s to 37 s, its pause from 42 s to 49 s, and
// the forward sent again at 44.7 s processed at 49 s, 4.3 s late; its
// site's one replica then held the only copy, the write's node having
// lost its own to a corrupted disk, and every pop after ran late). It
// adds the replicas it held to late and returns the longest hold.
func (x *index) heldAtSites(d *def, ret time.Duration, late map[string]bool) time.Duration {
	if len(x.h.Sites) <= 1 || !d.placed {
		return 0
	}
	var held time.Duration
	for _, site := range x.h.Sites {
		if slices.Contains(site, d.op.Node) {
			continue
		}
		// A fault of the site that begins while another still holds
		// the write on its way there holds it on: a relay paused again
		// the instant it resumed has not passed the write on, and the
		// write's node sends the forward again until the relay answers
		// (scenarios/README.md C57, seed 125298). until is the end
		// of the holds so far.
		until, counted := ret+x.o.SiteLag, map[*span]bool{}
		for grown := true; grown; {
			grown = false
			for s := range d.spans() {
				if counted[s] || s.from > until || s.end < d.lo {
					continue
				}
				switch {
				case s.fault.Kind == Pause && slices.ContainsFunc(s.fault.Nodes, func(n string) bool { return slices.Contains(site, n) }):
					addAll(late, s.fault.Nodes)
				case s.fault.Kind == Clog && slices.Contains(s.fault.Nodes, site[0]):
					addAll(late, s.fault.Peers)
				case s.fault.Kind == Clog && slices.Contains(s.fault.Peers, site[0]):
					addAll(late, s.fault.Nodes)
				case s.fault.Kind == Partition && cutsForward(s.fault, d.op.Node, site):
					counted[s] = true
					if e := s.end + SiteRetry; e > until {
						until, grown = e, true
					}
					continue
				default:
					continue
				}
				counted[s] = true
				held = max(held, s.end-d.lo)
				if s.end > until {
					until, grown = s.end, true
				}
			}
		}
		if late[site[0]] {
			for _, r := range d.replicas {
				if slices.Contains(site, r) {
					late[r] = true
				}
			}
		}
	}
	return held
}

// cutsForward reports whether partition f stands between node, which
// forwards a write to site's relay (site[0]), and that relay, or between
// the relay and another node of its site, in either direction (a lost
// answer is resent as surely as a lost request).
func cutsForward(f Fault, node string, site []string) bool {
	relay := site[0]
	for _, side := range [2][2][]string{{f.Nodes, f.Peers}, {f.Peers, f.Nodes}} {
		if !slices.Contains(side[0], relay) {
			continue
		}
		if slices.Contains(side[1], node) || slices.ContainsFunc(side[1], func(n string) bool { return n != relay && slices.Contains(site, n) }) {
			return true
		}
	}
	return false
}

// heldByRelay is heldFor's part for the replicas at the other sites
// under load (scenarios/README.md C16): each other site's relay places
// the write on its site's replicas when it processes the write's forward,
// after the client has its answer, so that forward, sent on by the relay
// after ret, is still the write's message. A replica it reached rebuilds
// its start when it processes it, no later than the forward's waits for
// the relay's CPU and in the replica's queue past when the relay built it
// (see overloadHeld): its copy is late by that processing time past ret,
// the relay's own hold included. Only a relay's messages to its own
// site's replicas count, sent by when the relay processed the write (its
// own hold past ret, from the write's waited messages to it) plus
// SiteLag: a later one is a notice, not the forward. It adds the replicas
// it held to late and returns the longest hold and whether an inbound
// wait made it.
func (x *index) heldByRelay(d *def, ret time.Duration, late map[string]bool) (time.Duration, bool) {
	if len(x.h.Sites) <= 1 || !d.placed {
		return 0, false
	}
	var held time.Duration
	inbound := false
	for _, site := range x.h.Sites {
		if len(site) == 0 || slices.Contains(site, d.op.Node) {
			continue
		}
		relay := site[0]
		var relayHeld time.Duration
		for s := range d.spans() {
			if len(s.fault.Peers) == 0 || s.fault.Peers[0] != relay || s.fault.Nodes[0] == relay {
				continue
			}
			if w, record, ok := s.overloadWait(); ok {
				relayHeld = max(relayHeld, overloadHeld(s, x.leftAfter(s.fault, w), record, d.lo, ret))
			} else if q, record, ok := s.queuedWait(); ok {
				relayHeld = max(relayHeld, x.queuedHeld(d, s, q, record, ret))
			}
		}
		until := ret + relayHeld + x.o.SiteLag
		for _, m := range x.waitedRecords(d) {
			if m.from != relay || m.to == relay || !slices.Contains(site, m.to) ||
				!slices.Contains(d.replicas, m.to) || m.sent < d.lo || m.sent > until {
				continue
			}
			// Processed at its arrival plus its inbound wait (a Queued
			// fault's at), or left at sent plus its send wait (the
			// transit is in the slack).
			done := m.sent + m.w
			if m.q > 0 {
				done = m.at + m.q
			}
			if h := done - ret; h > 0 {
				late[m.to] = true
				if h > held {
					held, inbound = h, m.q > 0
				}
			}
		}
	}
	return held, inbound
}

// heldRefill is heldFor's part after the write: a replica left without a
// copy (it missed the write, or crashed since) gets one back from a
// notice, a scale's resync or its own boot's, and applies its
// start-time-delta when it processes the message, so a pause of that
// replica, or a clog into it, while it had none and such a message was
// on its way holds the copy and makes its start late by as much.
// Replicas converge on the earliest start when a message with it passes
// between them, so the hold lasts only until a message with the true
// start can reach the held replica: a notice of a replica that kept it,
// its own notice answered by one, or a scale's hand-off from one
// (heldAt). A replica that kept the true start and lives does not end
// the hold by itself: a cut may keep its every message from the held one
// (scenarios/README.md C46, fresh seed 4881053: a partition kept the
// backup's notices from the primary its pause had held). Once every
// replica that kept it has lost it since, the late start is all that is
// left (scenarios/README.md N3 and N8;
// TestCopyBroughtBackWhileItsReplicaStoodStillRunsLate: a scale's resync
// pushed the timer to a replica that had restarted empty and was paused,
// and the only replica with the true start crashed later). It adds to
// late the replicas it held, and those still or again without a copy
// once a held one was sent (a late replica's notice may bring it back,
// start and all), records in since when the latest held copy to each was
// sent and its hold (for those, when the earliest was, and the longest
// hold), and returns the longest hold.
func (x *index) heldRefill(d *def, late map[string]bool, since map[string]lateCopy) time.Duration {
	fails, holders := x.refillFailures(d)
	if len(fails) == 0 {
		return 0
	}
	cf := x.copyFailures(d)
	var held time.Duration
	first := never // the earliest a held copy was sent
	refilled := map[string]bool{}
	own := map[string]lateCopy{}
	for _, f := range fails {
		for s := range d.spans() {
			if s.end <= f.at || !holdsInto(s.fault, f.node) || x.revived(d, cf, f.node, f.at, s.from) {
				continue
			}
			if at, ok := x.refillSent(d, cf, f, max(s.from, f.at), s.end); ok {
				held, first = max(held, s.end-at), min(first, at)
				refilled[f.node] = true
				own[f.node] = own[f.node].add(at, s.end-at)
			}
		}
	}
	if held == 0 {
		return 0
	}
	for _, f := range fails {
		if f.at >= first || !x.revived(d, cf, f.node, f.at, first) {
			refilled[f.node] = true // without a copy once a held one was sent
		}
	}
	// A write whose factor the history leaves to the node has no
	// placement heldAt can judge its messages by (it is used for placed
	// writes only), so nothing would end the hold: there, a replica that
	// may keep the true start and lives still ends it, as before C46.
	// Stricter than the message rule (a cut may keep its notices), and
	// never looser.
	for _, r := range holders {
		if !refilled[r] && !x.crashedBetween(r, first, x.end) {
			return 0
		}
	}
	for n := range refilled {
		late[n] = true
		c, ok := own[n]
		if !ok {
			c = lateCopy{first, held}
		}
		since[n] = since[n].add(c.since, c.hold)
	}
	return held
}

// refillFailures is heldRefill's moments a replica of d was without a
// copy. For a placed d: the copy failures (missed writes, crashes:
// copyFailures), and a scale that places d on a node that held none
// before, from the scale's start (or the write's, if later): its resync
// or a hand-off brings the copy, which a pause of the node holds as it
// holds a refill (scenarios/README.md C33). For a write whose
// factor the history leaves to the node (rfUnknown), of one site: the
// same over the widest placement its factors may take, each membership's
// (a factor's replicas are a prefix of one ranking), which holds every
// replica of any of them; a node outside it holds no copy, and holders
// are its nodes. None for a timer nobody learned, or with several sites.
func (x *index) refillFailures(d *def) (fails []copyFailure, holders []string) {
	rfs := []int{d.rf}
	switch holders = x.factorHolders(d); {
	case d.placed:
		fails = slices.Clone(x.copyFailures(d).other)
	case holders != nil:
		rfs = nil
		for rf := max(d.rfMin, 1); rf <= d.rf; rf++ {
			rfs = append(rfs, rf)
		}
		fails = slices.Clone(x.copyFailures(d).other)
	default:
		return nil, nil
	}
	for _, sc := range x.h.Scales {
		if sc.End != 0 && sc.End < d.lo {
			continue
		}
		for _, rf := range rfs {
			for _, n := range sc.places(d.timer, rf) {
				at := max(sc.Start, d.lo)
				fails = append(fails, copyFailure{node: n, at: at, from: at, missed: true})
			}
		}
	}
	return fails, holders
}

// factorHolders is the nodes that may hold d when it is a write whose
// factor the history leaves to the node (rfUnknown), of one site: the
// widest placement its factors may take, each membership's (a factor's
// replicas are a prefix of one ranking), which holds every replica of
// any of them. Nil for any other d: placed, a timer nobody learned, no
// membership recorded, or several sites.
func (x *index) factorHolders(d *def) []string {
	if d.placed || d.timer == 0 || !d.rfUnknown || len(x.h.Members) == 0 || len(x.h.Sites) > 1 {
		return nil
	}
	holders := Replicas(x.h.Members, d.timer, d.rf)
	for _, sc := range x.h.Scales {
		holders = union(holders, Replicas(sc.After, d.timer, d.rf))
	}
	return holders
}

// refillSent is the earliest time in [a, b] a message that brings back
// the copy f took may have been sent to its node, and false when none
// may: the node's own boot resync (until FaultSettle after its restart),
// the notice of another replica's successful pop, or the resync of a scale
// that places d on the node (until FaultSettle after it completed).
func (x *index) refillSent(d *def, cf *copyFailures, f copyFailure, a, b time.Duration) (time.Duration, bool) {
	if !f.missed && a <= f.at+x.o.FaultSettle {
		return a, true
	}
	sent, ok := b, false
	for _, p := range cf.oks {
		if p.Node != f.node && p.At >= a && p.At <= sent {
			sent, ok = p.At, true
			break
		}
	}
	for _, sc := range x.h.Scales {
		end := x.end
		if sc.End != 0 {
			end = sc.End + x.o.FaultSettle
		}
		if sc.Start <= sent && end >= a && slices.Contains(Replicas(sc.After, d.timer, d.rf), f.node) {
			sent, ok = max(a, sc.Start), true
		}
	}
	return sent, ok
}

// holdsInto reports whether fault f holds the messages sent to node: it
// stands still, or a clog holds a link into it.
func holdsInto(f Fault, node string) bool {
	switch f.Kind {
	case Pause:
		return slices.Contains(f.Nodes, node)
	case Clog:
		return slices.Contains(f.Peers, node)
	}
	return false
}

// heldAt is the hold replica r may still carry when pop k falls due: the
// write's hold if r got the write late and no successful pop early
// enough for its notice (and answer) to arrive before pop k's earliest
// due time handed r the earlier start: neither the notice of a
// replica that got the write in time reaching r, nor r's own notice
// answered by a replica that kept the true start (a replica answers a
// notice of its definition with its earlier start, which the sender
// takes: node's startAnswered), nor a scale's hand-off from a replica
// that kept the true start, to r or to the replica whose notice reached
// r (handedStart). So a late replica pops late only until its first
// pop, unless every replica got the write late. A replica that kept the
// true start and lives ends nothing by itself: a cut may keep its every
// message from r (scenarios/README.md C46).
//
// A replica that a message after the write held (see reheld: a waited
// hand-off, resync or notice to a replica without a copy, a refill) took
// a late copy then: a pop made before that message was sent ends the
// write's hold of r, never that copy's, whose notice reached r before it
// held the copy or, for a replica a scale placed d on later, not at all
// (TestHandOffThatWaitedAfterTheOldReplicaPopped: the old replica's pops
// before the scale do not end the new one's hold). So r then carries the
// hold of that copy alone until a pop made since ends it.
func (x *index) heldAt(d *def, r string, k int) time.Duration {
	if d.held == 0 || !d.late[r] {
		return 0
	}
	lo, _ := d.due(k)
	c := d.reheld[r]
	held := d.held
	if at, ok := x.handedStart(d, r, lo-x.healthyLate()); ok {
		if at >= c.since {
			return 0
		}
		held = min(held, c.hold)
	}
	for _, idx := range d.bySeq {
		for _, i := range idx {
			p := x.h.Pops[i]
			if p.At+x.healthyLate() >= lo || x.failed(p) {
				continue
			}
			if x.holdsStart(d, p.Node, p.At) && !x.noticeKept(d, p.Node, r, p.At) && !x.noticeWaited(d, p.Node, r, p.At) ||
				p.Node == r && x.startAnswered(d, r, p.At) {
				if p.At >= c.since {
					return 0
				}
				held = min(held, c.hold)
			}
		}
	}
	return held
}

// holdsStart reports whether node n surely holds d's true start at t,
// as far as heldAt needs: no message after the write held its copy (the
// write reached it in time and it never lost it), or a scale's hand-off
// brought it the true start since (handedStart).
func (x *index) holdsStart(d *def, n string, t time.Duration) bool {
	if !d.late[n] {
		return true
	}
	_, ok := x.handedStart(d, n, t)
	return ok
}

// handedStart reports whether a scale's hand-off surely brought replica
// r d's true start by t, and by when: a staying member the scale takes d
// off hands its copy to the replicas the scale adds (node/repair.go
// handOff, handOffTargets) before the scale completes, and a replica
// converges on the earlier start of the two it holds (node/merge.go
// earliestStart). So a hand-off from a replica that kept the true start
// to the scale's end (keptStart) carries it to r, which holds it from
// then on, unless r lost its copy since, or a fault may have held or
// kept the hand-off on its way while the scale ran (a pause or crash of
// either, a cut or clog between them, a lost or waited record message
// from one to the other): then the hand-off may have brought r the start
// late, as any held copy (TestCopyAScalePlacedStoodStillRunsLate). The one
// other carrier heldAt counts, a pop's notice, needs no scale.
func (x *index) handedStart(d *def, r string, t time.Duration) (time.Duration, bool) {
	if !d.placed {
		return 0, false
	}
	for _, sc := range x.h.Scales {
		if sc.End == 0 || sc.End > t || sc.Start < d.lo {
			continue
		}
		before, after := Replicas(sc.Before, d.timer, d.rf), Replicas(sc.After, d.timer, d.rf)
		if slices.Contains(before, r) || !slices.Contains(after, r) || x.crashedWithin(r, sc.Start, t) {
			continue
		}
		for _, q := range before {
			if slices.Contains(after, q) || !slices.Contains(sc.After, q) || !x.keptStart(d, q, sc.End) {
				continue
			}
			if !x.handOffKept(d, q, r, sc.Start, sc.End) {
				return sc.End, true
			}
		}
	}
	return 0, false
}

// handOffKept reports whether a record message from q to r sent in
// [a, b] may have been held or kept on its way: a fault hopKept counts
// around some time in [a, b], or a waited record message between them.
func (x *index) handOffKept(d *def, q, r string, a, b time.Duration) bool {
	for s := range d.spans() {
		if s.from > b+x.o.FaultSettle || s.to < a {
			continue
		}
		if x.hopKept(d, q, r, max(a, s.from)) || x.hopKept(d, r, q, max(a, s.from)) {
			return true
		}
	}
	for _, m := range x.waitedRecords(d) {
		if (m.from == q && m.to == r || m.from == r && m.to == q) && m.sent >= a-x.h.MaxNetDelay && m.sent <= b {
			return true
		}
	}
	return false
}

// lateCopy is a late copy a message after the write brought a replica:
// when the message was sent, and how long it held the copy.
type lateCopy struct{ since, hold time.Duration }

// add is c with another such message: the later send, the longer hold.
func (c lateCopy) add(since, hold time.Duration) lateCopy {
	return lateCopy{max(c.since, since), max(c.hold, hold)}
}

// startAnswered reports whether the notice r sent of a pop at t surely
// came back with the true start: some other replica of the placement in
// force since the write kept it (see keptStart), and neither the notice
// nor its answer was kept from the other.
func (x *index) startAnswered(d *def, r string, t time.Duration) bool {
	for _, q := range d.rankedIn(d.lo, t) {
		if q != r && x.keptStart(d, q, t) && !x.noticeKept(d, r, q, t) && !x.replyLost(d, q, r, t) {
			return true
		}
	}
	return false
}

// keptStart reports whether replica q surely holds d's true start at t:
// no fault held the write on its way to q, and q kept its copy since
// (see keptCopy).
func (x *index) keptStart(d *def, q string, t time.Duration) bool {
	return !d.late[q] && x.keptCopy(d, q, t)
}

// replyLost reports whether an answer from "from" to "to" about d may
// have been lost around t, or come after "to" gave up: the request it
// answered waited in its receiver's queue about as long as the sender
// waits for an answer (ReplicationTimeout, less the two transits).
func (x *index) replyLost(d *def, from, to string, t time.Duration) bool {
	for s := range d.spans() {
		f := s.fault
		if s.from > t+x.o.FaultSettle || s.to < t {
			continue
		}
		if f.Kind == Lost && strings.Contains(f.Detail, ReplyDetail) && f.Nodes[0] == from && f.Peers[0] == to {
			return true
		}
		if q, _, ok := s.queuedWait(); ok && f.Nodes[0] == to && f.Peers[0] == from && q+2*x.h.MaxNetDelay >= x.o.ReplicationTimeout {
			return true
		}
	}
	return false
}

// liveBound is G3's bound with replicas out unable to pop: the earliest
// any live replica pops, its rank's skew plus the hold it may carry, and
// false when the placement is unknown or shared (then the worst rank
// with the write's hold is assumed).
func (x *index) liveBound(d *def, k int, a, b time.Duration, out map[string]bool) (time.Duration, bool) {
	ranked := d.rankedIn(a, b)
	if !d.placed || d.shared || ranked == nil {
		return 0, false
	}
	best, found := time.Duration(0), false
	for i, r := range ranked {
		if out[r] {
			continue
		}
		b := x.o.ReplicaSkew*time.Duration(i) + x.heldAt(d, r, k)
		if !found || b < best {
			best, found = b, true
		}
	}
	return best, found
}

// overloadWait is how long the message of an Overload fault waited for
// its sender, whether it carried the timer's record to a node, and false
// for any other fault or a shed message.
func (s *span) overloadWait() (w time.Duration, record, ok bool) {
	if s.fault.Kind != Overload {
		return 0, false, false
	}
	return s.waited()
}

// queuedWait is how long the message of a Queued fault waited in its
// receiver's inbound queue after it arrived (at f.At), whether it carried
// the timer's record to a node, and false for any other fault.
func (s *span) queuedWait() (w time.Duration, record, ok bool) {
	if s.fault.Kind != Queued {
		return 0, false, false
	}
	return s.waited()
}

// waited is waitOf(s.fault), parsed when the span was made (see
// buildTimeline): the checks ask it of a span many times over.
func (s *span) waited() (w time.Duration, record, ok bool) {
	return s.wait, s.waitRecord, s.waitOK
}

// lateAge is how long before f.At the request of a Late fault was sent
// (Detail "late=<age>" or "replayed=<age>"), whether it carried the
// timer's record to a node (OverloadRecord), and false for any other
// fault or a response.
func lateAge(f Fault) (age time.Duration, record, ok bool) {
	if f.Kind != Late || len(f.Nodes) == 0 || len(f.Peers) == 0 {
		return 0, false, false
	}
	_, v, found := strings.Cut(f.Detail, "=")
	if !found {
		return 0, false, false
	}
	v, record = strings.CutSuffix(v, OverloadRecord)
	age, err := time.ParseDuration(v)
	return age, record, err == nil
}

// waitOf parses the Detail of a message fault that waited.
func waitOf(f Fault) (w time.Duration, record, ok bool) {
	v, ok := strings.CutPrefix(f.Detail, OverloadWaited)
	if !ok {
		return 0, false, false
	}
	v, _, _ = strings.Cut(v, " "+CallbackDetail)
	v, record = strings.CutSuffix(v, OverloadRecord)
	w, err := time.ParseDuration(v)
	return w, record, err == nil
}

// overloadHeld is how far past ret, the write's return, the message of
// span s may have held its receiver's copy, when it carried the record
// of a write running in [lo, ret] and waited w for its overloaded sender
// (scenarios/README.md C8). The receiver rebuilds the start from
// start-time-delta when it processes the message, so its copy starts
// late by the message's time in transit; and the start a message carries
// is never later than when the message was built (s.from: every start is
// a node's "now" when it took the write, moved only later since), so the
// copy's start is at most s.from + w (plus the network's hops, in the
// slack) and runs past the client's answer by s.from + w - ret: never
// more than the wait, and nothing for the messages the write's answer
// waited for. A message that carried no record (a callback, a read), or
// was sent outside the write, holds nothing of it.
func overloadHeld(s *span, w time.Duration, record bool, lo, ret time.Duration) time.Duration {
	if !record || s.from < lo || s.from > ret {
		return 0
	}
	return max(0, s.from+w-ret)
}

// queuedHeld is how far past ret, the write's return, the message of
// span s may have held its receiver's copy, when it carried the record of
// a write running in [lo, ret], arrived at s.from and waited q in its
// receiver's inbound queue (scenarios/README.md C8). As for overloadHeld,
// the receiver's copy starts no later than when it processed the message
// (the start a message carries is never later than when it was built),
// s.from + q: the sum of the waits on the message's path, its sender's
// (before s.from) and its receiver's, and its transit. The message was
// the write's if it was sent while the write ran: it arrived after lo,
// and by ret plus its recorded send wait (sendWaitOf), a network delay
// and FaultFreeLate (a send wait too short to be recorded). A message
// that carried no record, or arrived outside that, holds nothing of it.
func (x *index) queuedHeld(d *def, s *span, q time.Duration, record bool, ret time.Duration) time.Duration {
	if !record || s.from < d.lo {
		return 0
	}
	sent := s.from - x.sendWaitOf(d, s.fault.Nodes[0], s.fault.Peers[0], true, s.from) - x.h.MaxNetDelay - x.o.FaultFreeLate
	if sent > ret {
		return 0
	}
	return max(0, s.from+q-ret)
}

// sendWaitOf is how long the message from "from" to "to" about d that
// arrived at t waited for its sender, from the Overload fault that
// recorded it (one whose wait ended within a network delay before t), 0
// when none did.
func (x *index) sendWaitOf(d *def, from, to string, record bool, t time.Duration) time.Duration {
	return x.sendWaitWithin(d, from, to, record, t, x.h.MaxNetDelay)
}

// sendWaitWithin is sendWaitOf for a message known to have arrived at t
// only to within "within" after it left (its receiver's unrecorded
// waits included).
func (x *index) sendWaitWithin(d *def, from, to string, record bool, t, within time.Duration) time.Duration {
	for s := range d.onLink(Overload, from, to) {
		w, rec, ok := s.overloadWait()
		if !ok || rec != record || s.fault.Nodes[0] != from || s.fault.Peers[0] != to {
			continue
		}
		w = x.leftAfter(s.fault, w)
		if left := s.from + w; left <= t && t <= left+within {
			return w
		}
	}
	return 0
}

// leftAfter is how long the message of Overload fault f, recorded as it
// was queued with a wait w for its sender's CPU, waited until it left:
// the recorded wait, unless its sender stood still (a pause) when the
// wait ran out; a paused process writes nothing, so the message left
// when it resumed (netsim runs the send as the sender's work). The wait
// is recorded as the message is queued, before the pause is known
// (TestCallbackThatWaitedForAPausedSenderLeavesAtItsResume).
func (x *index) leftAfter(f Fault, w time.Duration) time.Duration {
	left := f.At + w
	for _, s := range x.tl.pauses[f.Nodes[0]] {
		if s.from <= left && left < s.end {
			left = s.end
		}
	}
	return left - f.At
}

// places lists the nodes sc places timer (of factor rf) on that the
// membership before it did not: they hold no copy until the scale's
// resync or an old replica's hand-off brings one.
func (sc Scale) places(timer uint64, rf int) []string {
	before := Replicas(sc.Before, timer, rf)
	var added []string
	for _, n := range Replicas(sc.After, timer, rf) {
		if !slices.Contains(before, n) {
			added = append(added, n)
		}
	}
	return added
}
