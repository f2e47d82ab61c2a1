package checker

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// copies is how many replicas surely hold d: rf, less those a fault may
// have kept the write from (down, cut off from the node that took it, or
// at either end of a lost message about the timer while it ran), but never
// fewer than acknowledge a write: a majority from three replicas up, else
// one (node's writeQuorum, docs/design.md 4.11).
func (x *index) copies(d *def) int {
	if !d.placed {
		if x.touched(d, d.lo, min(d.hi, x.end)) {
			return d.quorum
		}
		return d.rfMin
	}
	missed := x.missedWrite(d)
	n := 0
	if d.home == nil {
		return d.quorum // written while a scale moved it
	}
	for _, r := range d.home {
		if !missed[r] {
			n++
		}
	}
	return max(n, d.quorum)
}

// allLost reports whether every copy of d may be among the replicas in
// unable (down, cut off, failed the pop's callback, or without the copy a
// crash took; not counting a missed write). The write surely reached the
// replicas no fault kept it from, and an acknowledged one reached at least
// a quorum of them (see copies), so every copy may be gone only when
// unable holds all of the first and as many replicas as the quorum. A
// replica that may have missed the write counts as a holder only where it
// is unable too: a write acknowledged by a majority of three cannot have
// missed the two replicas still able to pop. A shared ID (see sharedID)
// voids the count. The replicas are those of the placement in force in
// [a, b]; while a scale moves the timer, either placement may hold it,
// so one node unable may be all of its holders.
func (x *index) allLost(d *def, unable map[string]bool, a, b time.Duration) bool {
	switch {
	case d.shared:
		// The other timer under the ID is held, and this one refused,
		// where it landed first: one replica may be all that holds it.
		return len(unable) > 0
	case !d.placed && x.factorHolders(d) != nil && len(x.h.Scales) == 0:
		// A write whose factor the history leaves to the node holds
		// the replicas of one of its factors, a prefix of one ranking:
		// every copy may be gone only if so for some factor.
		for rf := max(d.rfMin, 1); rf <= d.rf; rf++ {
			ranked := Replicas(x.h.Members, d.timer, rf)
			if x.allLostOf(d, ranked, unable, max(ackQuorum(rf), len(ranked)-countIn(ranked, x.missedWrite(d)))) {
				return true
			}
		}
		return false
	case !d.placed:
		return len(unable) >= x.copies(d)
	}
	ranked := d.rankedIn(a, b)
	if ranked == nil {
		return len(unable) > 0
	}
	return x.allLostOf(d, ranked, unable, x.copies(d))
}

// allLostOf is allLost for the replicas ranked, of which copies surely
// hold the write.
func (x *index) allLostOf(d *def, ranked []string, unable map[string]bool, copies int) bool {
	missed := x.missedWrite(d)
	n := 0
	for _, r := range ranked {
		switch {
		case unable[r]:
			n++
		case !missed[r]:
			return false // surely holds a copy, and can pop
		}
	}
	return n >= min(copies, len(ranked))
}

// countIn is how many of nodes set holds.
func countIn(nodes []string, set map[string]bool) int {
	n := 0
	for _, r := range nodes {
		if set[r] {
			n++
		}
	}
	return n
}

// missedWrite is the replicas a fault may have kept d's write from:
// crashed, cut off from the node that took it, or the receiver of a lost request
// about the timer while it ran. Each holds no copy until a notice of a
// later pop reaches it (see dropped).
// The map is shared: callers must not change it.
func (x *index) missedWrite(d *def) map[string]bool {
	if d.missed != nil {
		return d.missed
	}
	missed := x.down(d, d.lo, min(d.hi, x.end), false)
	addAll(missed, x.diskFaulty(d, d.lo, min(d.hi, x.end)))
	for s := range d.spans() {
		if s.to >= d.lo && lostRequest(s.fault) && !ownRefusal(s.fault) && x.sentAt(d, s) <= min(d.hi, x.end) {
			addAll(missed, s.fault.Peers)
		}
	}
	x.missedAtSites(d, d.op.Node, min(d.hi, x.end), false, missed)
	// A node that refused its own copy missed the write, and only it:
	// a relay placed the forward on its site all the same. Another
	// site's relay takes it up to SiteLag after the answer.
	lag := time.Duration(0)
	if len(x.h.Sites) > 1 {
		lag = x.o.SiteLag
	}
	for s := range d.spans() {
		if ownRefusal(s.fault) && x.sentAt(d, s) <= min(d.hi, x.end)+lag && s.to >= d.lo {
			addAll(missed, s.fault.Peers)
		}
	}
	d.missed = missed
	return missed
}

// ownRefusal reports a node's refusal of its own copy of a record it was
// placing (a site's relay at its limit, sim/refusal.go ownRefusal),
// recorded as a lost request from the node to itself: the node missed
// the write, the rest of its site did not.
func ownRefusal(f Fault) bool {
	return f.Kind == Lost && len(f.Nodes) == 1 && len(f.Peers) == 1 && f.Nodes[0] == f.Peers[0]
}

// missedAtSites adds to missed what a write that node took and answered at
// b may have missed at the other sites. Excuse site-lag: a node forwards a
// write to another site without waiting for it, and that site's relay
// places it on its own replicas after the client has its answer, so a
// fault up to SiteLag after b, on another site's node or a message to it,
// may keep the write from it (scenarios/README.md S2: the relay's
// replication to its site's other replica was lost 1 ms after the answer).
// The write reaches another site only through the node its address names:
// when that node missed it, so did the whole site.
// It reports whether the lag added a node.
func (x *index) missedAtSites(d *def, node string, b time.Duration, paused bool, missed map[string]bool) bool {
	if len(x.h.Sites) <= 1 || !d.placed {
		return false
	}
	lagged := false
	late := x.down(d, b, b+x.o.SiteLag, paused)
	for s := range d.spans() {
		if s.to >= b && lostRequest(s.fault) && !ownRefusal(s.fault) && x.sentAt(d, s) <= b+x.o.SiteLag {
			addAll(late, s.fault.Peers)
		}
	}
	for _, site := range x.h.Sites {
		if slices.Contains(site, node) {
			continue
		}
		for _, n := range site {
			if late[n] && !missed[n] {
				missed[n] = true
				lagged = true
			}
		}
		if missed[site[0]] {
			for _, r := range d.replicas {
				if slices.Contains(site, r) {
					missed[r] = true
				}
			}
		}
	}
	return lagged
}

// queuedPastLag reports whether span s is a message from node carrying
// the record of its write, answered at b, to another site's node, that
// waited in its receiver's inbound queue (a Queued fault, recorded as it
// arrived) until past b+SiteLag: the site took the write later than the
// lag allows, so a write it replaced may pop there meanwhile, as if the
// message had been lost until then (scenarios/README.md C18: a relay
// whose queue held an update's forward 1.8 s popped the replaced
// definition meanwhile). It bounds no lateness: a copy the message
// brings is held by its wait (heldFor), not lost.
func (x *index) queuedPastLag(s *span, node string, b time.Duration) bool {
	q, record, ok := s.queuedWait()
	return ok && record && s.fault.Nodes[0] == node && !x.sameSite(node, s.fault.Peers[0]) &&
		s.from <= b+x.o.SiteLag && s.from+q > b+x.o.SiteLag
}

// inboundKept reports the receiver of span s when s is a message from
// the node of write op, answered at b, carrying the record of op, that
// arrived while op ran or in the transit after (by b+MaxNetDelay) and
// waited in its receiver's inbound queue for its overloaded CPU (a Queued
// fault, recorded as it arrived) until past op's stick limit, or until
// its receiver crashed, which took it from the queue unprocessed: no fault
// was active while op ran, yet that replica did not hold op until past
// the limit, or at all, and may pop what op replaced meanwhile
// (scenarios/README.md C43: a delete's replication sat 2 s in an
// overloaded replica's queue while the delete returned on the other two
// replicas' answers; the replica popped the deleted definition before it
// processed the delete, or crashed first, restarted from disk with the
// deleted definition and popped it). A replication processed within the
// limit kept nothing a stale pop could show. Another site takes the write
// up to SiteLag later anyway: its waits are queuedPastLag's.
func (x *index) inboundKept(d *def, s *span, op Op, b time.Duration) (string, bool) {
	q, record, ok := s.queuedWait()
	if !ok || !record || s.fault.Nodes[0] != op.Node || s.from > b+x.h.MaxNetDelay {
		return "", false
	}
	r := s.fault.Peers[0]
	if !x.sameSite(op.Node, r) {
		return "", false
	}
	return r, s.from+q > x.stickLimit(op) || x.nodeCrashedIn(d, r, s.from, s.from+q)
}

// sentAt is when the message of span s was sent: a lost request is
// recorded when it leaves its sender, after any wait for the sender's
// overloaded CPU (an Overload fault on its link, see sendWaitOf), and a
// request its receiver refused (at its limit, by age) when the receiver
// processed it, its Age before that, so one sent while the write ran may
// be lost or refused long after (TestRequestLostAfterItsSendWaitWasSentInTheWrite:
// the forward to the other site waited 1.17 s, then was lost;
// TestRequestRefusedAfterItsInboundWaitWasSentInTheWrite: a full backup
// refused the replication it processed 0.94 s late, after the client's answer; and
// another site's relay, paused, refused by its age a forward it had been
// sent 10 s before). A refusal with no Age is dated by the wait in its
// receiver's inbound queue (a Queued fault on the link whose wait ended
// then), if any.
func (x *index) sentAt(d *def, s *span) time.Duration {
	f := s.fault
	if f.Kind != Lost || len(f.Nodes) == 0 || len(f.Peers) == 0 {
		return s.from
	}
	t := s.from // At less its Age (see buildTimeline)
	if f.Age == 0 {
		for o := range d.onLink(Queued, f.Nodes[0], f.Peers[0]) {
			q, record, ok := o.queuedWait()
			if ok && record && o.fault.Nodes[0] == f.Nodes[0] && o.fault.Peers[0] == f.Peers[0] && o.from+q <= t && t <= o.from+q+x.h.MaxNetDelay {
				t = o.from // when it arrived
				break
			}
		}
	}
	return t - x.sendWaitOf(d, f.Nodes[0], f.Peers[0], true, t)
}

// lostRequest reports a lost message that was a request, or a request
// its overloaded sender shed: its receiver (Peers) never saw it. A lost
// answer takes no copy away.
func lostRequest(f Fault) bool {
	return f.Kind == Lost && !strings.Contains(f.Detail, ReplyDetail) || shed(f)
}

// shed reports an Overload fault whose message its overloaded sender
// shed, never sent (a shed callback's Detail also names its pop).
func shed(f Fault) bool {
	return f.Kind == Overload && (f.Detail == ShedDetail || strings.HasPrefix(f.Detail, ShedDetail+" "))
}

// ackQuorum is how many of rf replicas hold an acknowledged write.
func ackQuorum(rf int) int {
	if rf >= 3 {
		return rf/2 + 1
	}
	return 1
}

// withoutCopy is the nodes that may have been unable to make pop k of d,
// somewhere in its window [a, b]: those a fault took down or cut off,
// those whose copy a missed write or a crash took and no notice brought
// back (see dropped), and those whose callback of pop k failed (see
// failedPop, weighed when failed is true). all counts the replicas that
// may have missed the write too, strict does not (see allLost).
func (x *index) withoutCopy(d *def, k int, a, b time.Duration, failed bool) (all, strict map[string]bool) {
	all, strict = x.dropped(d, a, b)
	// What both sets add is weighed once.
	both := x.downNodes(d, a, b)
	for s := range d.spans() {
		// A lost request about the timer may have left its receiver
		// without its copy until a later write or notice repairs it.
		if s.from <= b && s.to >= a && lostRequest(s.fault) {
			addAll(both, s.fault.Peers)
		}
	}
	if failed {
		addAll(both, x.failedPop(d, k))
	}
	for _, out := range []map[string]bool{all, strict} {
		for n := range both {
			out[n] = true
		}
		if d.placed {
			// Only the timer's replicas hold copies: a node cut off or
			// down elsewhere in the cluster takes none away.
			for n := range out {
				if !slices.Contains(d.replicas, n) {
					delete(out, n)
				}
			}
		}
	}
	return all, strict
}

// failedPop is the replicas whose callback of pop k of d failed (refused,
// or answered after the timeout). Each tried it once and left it to the
// next replica; the failure costs that pop on that replica and no other
// (docs/design.md 4.7), so it weighs in pop k's judgement only.
func (x *index) failedPop(d *def, k int) []string {
	var out []string
	for _, i := range d.bySeq[k] {
		if p := x.h.Pops[i]; x.failed(p) {
			out = append(out, p.Node)
		}
	}
	out = append(out, x.cutFromEndpoint(d, k)...)
	out = append(out, x.waitedCallbacksLost(d, k)...)
	return append(out, x.lostCallbacks(d, k)...)
}

// cutAt reports whether a cut among d's fault spans (a partition or a
// clog) stood between node n and d's callback endpoint at t.
func (x *index) cutAt(d *def, n string, t time.Duration) bool {
	for sp := range d.spans() {
		if sp.fault.Kind != Partition && sp.fault.Kind != Clog || sp.from > t || sp.end < t {
			continue
		}
		for _, side := range [2][2][]string{{sp.fault.Nodes, sp.fault.Peers}, {sp.fault.Peers, sp.fault.Nodes}} {
			if slices.Contains(side[1], d.host) && slices.Contains(side[0], n) {
				return true
			}
		}
	}
	return false
}

// waitedCallbacksLost is the nodes whose callback of pop k of d waited
// for its overloaded sender and never reached the endpoint, whenever
// that was: each made the pop and failed it, once (docs/design.md 4.7),
// and a restart from disk reads the attempt back (4.16). The callback
// names its pop, so the attempt counts where a clock ahead made it, long
// before the pop's window. It was lost one of two ways:
//
//   - the sender's crash took it before it left (crashedWaiting;
//     scenarios/README.md C34: a clock 3m36s ahead made six pops of each
//     timer at once, and a crash took the callbacks of the last two
//     still queued);
//   - it left (leftAfter) into a cut between the node and the endpoint
//     (cutAt). cutFromEndpoint looks for cuts around the pop's window
//     only; a callback that waited longer for its sender than that
//     window reached met a cut that began after it (fresh seed 9732728,
//     C80: a burst of one-shot timers of factor 1, each made on time,
//     waited up to 1.1 s to leave and was blocked by a cut from the
//     endpoint that began 0.7 s after the burst; 43 pops were judged
//     owed, G2).
func (x *index) waitedCallbacksLost(d *def, k int) []string {
	var out []string
	for sp := range d.spans() {
		f := sp.fault
		w, record, ok := sp.overloadWait()
		if !ok || record || len(f.Peers) == 0 || f.Peers[0] != d.host || d.placed && !slices.Contains(d.replicas, f.Nodes[0]) {
			continue
		}
		if seq, ok := callbackSeq(f.Detail); !ok || seq != k {
			continue
		}
		if x.crashedWaiting(f, w) || x.cutAt(d, f.Nodes[0], f.At+x.leftAfter(f, w)) {
			out = append(out, f.Nodes[0])
		}
	}
	return out
}

// lostCallbacks is the nodes whose callback request of pop k of d was
// lost on its way to the endpoint, or shed by its overloaded sender:
// each tried the pop once and failed it, with no pop in the history to
// show for it (the endpoint never saw the request), as a node cut off
// from the endpoint does.
//
// A shed callback is such an attempt only from a holder that had a later
// one to leave the pop to (node/pop.go handOnAfter): the last replica of
// the placement, at the only site, has nobody after it, so its pop waits
// for its CPU however long, and a callback it shed is a pop given up,
// never an attempt (lastHolder; the mutation `last-replica-hands-on`).
func (x *index) lostCallbacks(d *def, k int) []string {
	var out []string
	for sp := range d.spans() {
		if seq, ok := lostCallback(sp.fault, d.host); ok && seq == k && (!d.placed || slices.Contains(d.replicas, sp.fault.Nodes[0])) {
			if shed(sp.fault) && x.lastHolder(d, sp.fault.Nodes[0]) {
				continue
			}
			out = append(out, sp.fault.Nodes[0])
		}
	}
	return out
}

// lastHolder reports whether node n is the last replica of d's one
// placement: no scale in the history moves it and there is one site, so
// every node places d as the checker does, and a smaller factor than the
// largest d may have (an update without one) places n nowhere, which
// leaves it last too (an old holder handing a copy off pops after every
// replica). Twins sharing the ID may hold other records of it: none is
// last then.
func (x *index) lastHolder(d *def, n string) bool {
	return d.placed && !d.shared && len(x.h.Scales) == 0 && len(x.h.Sites) <= 1 &&
		len(d.replicas) > 0 && d.replicas[len(d.replicas)-1] == n
}

// lostCallback reports the pop whose callback request to host fault f
// lost, if f is such a loss: a request, not its answer, or a callback
// its overloaded sender shed (it never left, and the node counts it a
// failed callback: docs/design.md 4.7).
func lostCallback(f Fault, host string) (seq int, ok bool) {
	if f.Kind != Lost && !shed(f) || len(f.Peers) == 0 || f.Peers[0] != host || len(f.Nodes) == 0 || strings.Contains(f.Detail, ReplyDetail) {
		return 0, false
	}
	return callbackSeq(f.Detail)
}

// callbackSeq reads the pop a message fault's Detail names as its
// callback's (CallbackDetail), if it names one.
func callbackSeq(detail string) (seq int, ok bool) {
	_, v, found := strings.Cut(detail, CallbackDetail)
	if !found {
		return 0, false
	}
	v, _, _ = strings.Cut(v, " ")
	seq, err := strconv.Atoi(v)
	return seq, err == nil
}

// cutFromEndpoint is the nodes that may have been cut off from d's
// callback endpoint when they tried pop k: they failed it too, with no
// pop in the history to show for it. A node tries at the due time on its
// own clock, which may run ahead (a generated plan had a node whose
// clock jumped ahead popped into a partition that healed before the true
// due time), and its rank may make it later. The cut counts to its real
// end: settle time aside, a cut healed before the attempt failed
// nothing.
func (x *index) cutFromEndpoint(d *def, k int) []string {
	lo, hi := d.due(k)
	from, to := lo-x.forward(d, d.lo, hi), hi+x.rankBound(d)
	var out []string
	for sp := range d.spans() {
		if sp.fault.Kind != Partition && sp.fault.Kind != Clog || sp.from > to || sp.end < from {
			continue
		}
		for _, side := range [2][2][]string{{sp.fault.Nodes, sp.fault.Peers}, {sp.fault.Peers, sp.fault.Nodes}} {
			if !slices.Contains(side[1], d.host) {
				continue
			}
			for _, n := range side[0] {
				if !x.endpoints[n] && (!d.placed || slices.Contains(d.replicas, n)) {
					out = append(out, n)
				}
			}
		}
	}
	return out
}

// dropped is the nodes whose copy of d a missed write or a crash took
// (a restarted node holds nothing), with no notice of a successful pop
// since that brought it back, as of [a, b]: all counts the replicas a
// fault may have kept the write from too, strict does not. A failed
// callback takes no copy away (see failedPop).
func (x *index) dropped(d *def, a, b time.Duration) (all, strict map[string]bool) {
	cf := x.copyFailures(d)
	latestAll, latest := map[string]copyFailure{}, map[string]copyFailure{}
	for _, f := range cf.other {
		if f.from > b {
			continue
		}
		for _, l := range []map[string]copyFailure{latestAll, latest} {
			if g, seen := l[f.node]; !seen || f.at > g.at {
				l[f.node] = f
			}
			if f.missed {
				break // latestAll only
			}
		}
	}
	all, strict = map[string]bool{}, map[string]bool{}
	for n, f := range latestAll {
		if !x.restored(d, cf, f, a) {
			all[n] = true
		}
	}
	for n, f := range latest {
		// The same failure as in all was weighed there.
		if latestAll[n] == f && all[n] || latestAll[n] != f && !x.restored(d, cf, f, a) {
			strict[n] = true
		}
	}
	return all, strict
}

// restored reports whether the copy failure f took was undone before a:
// a notice brought the copy back (see revived), or, after a crash, the
// restarted node's own repopulation did (see repopulatedBy).
func (x *index) restored(d *def, cf *copyFailures, f copyFailure, a time.Duration) bool {
	if x.revived(d, cf, f.node, f.at, a) {
		return true
	}
	if f.missed {
		return false
	}
	by, ok := x.repopulatedBy(d, f.node, f.at)
	return ok && by <= a
}

// revived reports whether a successful pop after at and before a revived
// node n's dropped copy with its notice: one that no cut or lost request
// kept away.
func (x *index) revived(d *def, cf *copyFailures, n string, at, a time.Duration) bool {
	for i := sort.Search(len(cf.oks), func(i int) bool { return cf.oks[i].At > at }); i < len(cf.oks) && cf.oks[i].At < a; i++ {
		if !x.noticeKept(d, cf.oks[i].Node, n, cf.oks[i].At) {
			return true
		}
	}
	return false
}

// copyFailure is a moment a replica of d lost its copy: at, once the
// failure began (from).
type copyFailure struct {
	node     string
	at, from time.Duration
	missed   bool // the replica may have missed the write
}

// copyFailures is what dropped weighs, listed once per definition.
type copyFailures struct {
	other []copyFailure // missed writes and crashes
	oks   []Pop         // successful pops, by time
}

// copyFailures lists every moment a replica of d may have lost its copy,
// and the successful pops whose notices bring copies back (see dropped).
func (x *index) copyFailures(d *def) *copyFailures {
	if d.failures != nil {
		return d.failures
	}
	cf := &copyFailures{}
	for _, idx := range d.bySeq {
		for _, i := range idx {
			if p := x.h.Pops[i]; !x.failed(p) {
				cf.oks = append(cf.oks, p)
			}
		}
	}
	// A write whose factor the history leaves to the node is judged
	// unplaced, yet its copies are lost as a placed one's are: a replica
	// of its widest placement that missed it or crashed since holds none
	// until a notice brings it back (scenarios/README.md C48).
	if d.placed {
		cf.other = x.lostCopies(d, d.replicas)
	} else if holders := x.factorHolders(d); holders != nil {
		cf.other = x.lostCopies(d, holders)
	}
	sort.SliceStable(cf.oks, func(i, j int) bool { return cf.oks[i].At < cf.oks[j].At })
	d.failures = cf
	return cf
}

// lostCopies is every moment one of nodes, which may hold d, lost its
// copy: a node that missed the write holds no copy, nor one that crashed
// since (it restarts empty), until a notice reaches it.
func (x *index) lostCopies(d *def, nodes []string) []copyFailure {
	var out []copyFailure
	for n := range x.missedWrite(d) {
		if slices.Contains(nodes, n) {
			out = append(out, copyFailure{node: n, at: min(d.hi, x.end), from: -never, missed: true})
		}
	}
	for sp := range d.spans() {
		if sp.fault.Kind == Crash && sp.end >= d.lo && x.crashLoses(sp) {
			for _, n := range sp.fault.Nodes {
				if slices.Contains(nodes, n) {
					out = append(out, copyFailure{node: n, at: sp.end, from: sp.from})
				}
			}
		}
	}
	return out
}

// noticeKept reports whether the popped notice node "from" sent at t may
// not have reached node "to": a cut between them around t, or a lost
// request about the timer from one to the other around t. A notice to a
// node of another site goes to that site's address node, which passes it
// on (docs/design.md 4.10): it may not have reached "to" when either hop
// was kept, the relay down or paused among them.
func (x *index) noticeKept(d *def, from, to string, t time.Duration) bool {
	if from == to {
		return false
	}
	if relay, ok := x.relayBetween(from, to); ok {
		return x.hopKept(d, from, relay, t) || x.hopKept(d, relay, to, t)
	}
	return x.hopKept(d, from, to, t)
}

// relayBetween is the address node of to's site, when a message from
// "from" reaches to through it: the two are at different sites and to
// is not that site's address node itself.
func (x *index) relayBetween(from, to string) (string, bool) {
	if len(x.h.Sites) <= 1 {
		return "", false
	}
	i, j := x.siteOf(from), x.siteOf(to)
	if i < 0 || j < 0 || i == j || len(x.h.Sites[j]) == 0 || x.h.Sites[j][0] == to {
		return "", false
	}
	return x.h.Sites[j][0], true
}

// hopKept is noticeKept for one hop, from one node to the next.
func (x *index) hopKept(d *def, from, to string, t time.Duration) bool {
	if from == to {
		return false
	}
	for s := range d.spans() {
		if s.from > t+x.o.FaultSettle || s.to < t {
			continue
		}
		f := s.fault
		switch {
		case (f.Kind == Partition || f.Kind == Clog) && (slices.Contains(f.Nodes, from) && slices.Contains(f.Peers, to) ||
			slices.Contains(f.Nodes, to) && slices.Contains(f.Peers, from)):
			return true
		case lostRequest(f) && f.Nodes[0] == from && f.Peers[0] == to:
			return true
		case f.Kind == Crash || f.Kind == Pause:
			if slices.Contains(f.Nodes, from) || slices.Contains(f.Nodes, to) {
				return true
			}
		}
	}
	return false
}
