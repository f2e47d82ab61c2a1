package checker

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// maxSeqScan caps how many candidate sequence numbers the seq-versus-time
// check looks at for one pop.
const maxSeqScan = 64

// checkPops runs G1, G3, the per-pop half of G4 and the lateness half of
// G7 on every delivered pop, and gives every pop due by the end of the
// history its G4 verdict (and, once delivered, its G3 verdict).
func (x *index) checkPops() []Violation {
	var vs []Violation
	for _, i := range x.orphans {
		p := x.h.Pops[i]
		vs = append(vs, Violation{Guarantee: "G4", At: p.At, Message: fmt.Sprintf(
			"pop from %s with seq %d carries opaque %q that no create or update sent: got a pop of no definition, want none",
			p.Node, p.Seq, p.Opaque)})
	}
	for _, d := range x.defs {
		if d.op.Outcome == Failed {
			continue // every pop of a rejected write is a G5 violation
		}
		for _, seq := range sortedSeqs(d) {
			vs = append(vs, x.checkSeq(d, seq)...)
		}
		for k := 1; k <= d.op.Spec.Pops(); k++ {
			if lo, _ := d.due(k); lo > x.end {
				break
			}
			if len(d.bySeq[k]) == 0 {
				// Never delivered: no duplicate to judge, but the
				// allowance the check would have made is its verdict.
				x.record(d, k, colG4, x.dupAllowance(d, k))
			}
		}
	}
	return vs
}

// checkSeq checks every delivery of pop seq of d.
func (x *index) checkSeq(d *def, seq int) []Violation {
	idx := d.bySeq[seq]
	if n := d.op.Spec.Pops(); seq < 1 || seq > n {
		var vs []Violation
		for _, i := range idx {
			p := x.h.Pops[i]
			vs = append(vs, x.violation("G4", p.At, d, fmt.Sprintf(
				"pop from %s carries seq %d: got seq %d, want 1..%d (interval %v, repeat-for %v)",
				p.Node, seq, seq, n, d.op.Spec.Interval, d.op.Spec.RepeatFor)))
		}
		return vs
	}
	var vs []Violation
	for n, i := range idx {
		late, v, bad := x.checkDelivery(d, seq, x.h.Pops[i], n == 0)
		if n == 0 && bad && (v.Guarantee == "G3" || v.Guarantee == "G7") && x.overtaken(d, seq, x.h.Pops[i]) {
			late, v, bad = excused(ExOvertook), Violation{}, false
		}
		if n == 0 {
			x.record(d, seq, colG3, late)
		}
		if bad {
			if v.Guarantee == "G4" {
				x.record(d, seq, colG4, violatedVerdict)
			}
			vs = append(vs, v)
		}
		if v, bad := x.checkSiteTurn(d, seq, x.h.Pops[i]); bad {
			x.record(d, seq, colG4, violatedVerdict)
			vs = append(vs, v)
		}
	}
	// A replica's second attempt names its own excuse, ahead of the
	// fault that allows a duplicate around the pop.
	retry, retryV, retryBad := x.checkRetries(d, seq)
	x.record(d, seq, colG4, retry)
	dup, v, bad := x.checkDuplicates(d, seq)
	x.record(d, seq, colG4, dup)
	if bad {
		vs = append(vs, v)
	}
	if retryBad {
		vs = append(vs, retryV)
	}
	x.recordBroken(d, seq, vs...)
	return vs
}

// checkDelivery checks one delivery: early (G1), carrying a seq its time
// does not fit (G4, judged only where no fault widens the windows so that
// they overlap, and not of a node that crashed since the pop fell due: a
// restart from disk repeats the pops whose progress had not reached it,
// at once and so at a later pop's time, docs/design.md 4.16; a repeat is
// judged as one, see checkRetries), or, for the first delivery, late (G3,
// or G7 after the liveness phase began). It returns the delivery's
// lateness verdict (G3's, for the first delivery) beside any violation.
func (x *index) checkDelivery(d *def, seq int, p Pop, first bool) (verdict, Violation, bool) {
	lo, hi := d.due(seq)
	bound, ok, touched, liveness, late := x.lateAllowance(d, seq, p)
	if gain := x.forward(d, d.lo, p.At); p.At < lo-gain {
		return late, x.violation("G1", p.At, d, fmt.Sprintf(
			"pop %d from %s arrived early: got %v, want at or after %v (invoke %v + %d x %v - clock gain %v of the timer's nodes)",
			seq, p.Node, p.At, lo-gain, d.lo, seq, d.op.Spec.Interval, gain)), true
	}
	if !ok || p.At <= hi+bound+x.lag(d, p.At) {
		return late, Violation{}, false
	}
	if (touched || x.replacedByHitWrite(d)) && d.cutoff <= hi+bound {
		// With a fault around the pop or the write that replaced it,
		// superseded before its deadline: the backup that would have
		// popped it in time may already hold the new definition, and a
		// replica the write missed pops at its own rank (whether the
		// late pop may happen at all is G5's business).
		return excused(d.superseded()), Violation{}, false
	}
	if fits := x.impliedSeqs(d, p.At, seq); len(fits) > 0 && !touched && !x.crashedBetween(p.Node, lo, p.At) && !x.atHeldRank(d, seq, p) {
		return violatedVerdict, x.violation("G4", p.At, d, fmt.Sprintf(
			"pop from %s at %v carries seq %d, but its time fits only seq %v: got seq %d, want one of %v (a duplicate or mislabelled pop)",
			p.Node, p.At, seq, fits, seq, fits)), true
	}
	if !first {
		return late, Violation{}, false // a late copy is a duplicate, G4's business
	}
	g := "G3"
	if liveness {
		g = "G7"
	}
	lag := x.lag(d, p.At)
	return violatedVerdict, x.violation(g, p.At, d, fmt.Sprintf(
		"pop %d from %s arrived late: got %v, want by %v (due by %v + bound %v + clock lag of the timer's nodes %v)",
		seq, p.Node, p.At, hi+bound+lag, hi, bound, lag)), true
}

// atHeldRank reports whether p, a delivery of pop seq of d, came within
// its node's hold (heldAt) past the worst rank's bound: a replica that
// got the write late pops every pop that much later, at whatever rank
// the others' faults leave it, so its seq fits its time whatever other
// seqs fit it too. The mislabelled-pop test counted no hold: a backup
// whose start a pause had made 6 s late, and cut off from the primary's
// notices, made its pops at its rank after the primary's, each 8 s past
// its due time, and was judged to carry the wrong seq (fresh seed
// 9322003).
func (x *index) atHeldRank(d *def, seq int, p Pop) bool {
	h := x.heldAt(d, p.Node, seq)
	if h == 0 {
		return false
	}
	_, hi := d.due(seq)
	return p.At <= hi+x.rankBound(d)+h+x.lag(d, p.At)
}

// overtaken reports whether first, the first delivery of pop seq of d,
// reported late, arrived no later than another delivery of the pop that
// waited on its path (sendWait: for its sender's CPU, in its endpoint's
// queue) and met its own bound, widened by that wait: its replica made
// the pop in time, and the load model held it, so the pop was delivered
// by a deadline the history allows, whoever's delivery came first
// (scenarios/README.md C16: a backup popping at its rank overtook the
// primary's callback queued behind its backlog).
func (x *index) overtaken(d *def, seq int, first Pop) bool {
	_, hi := d.due(seq)
	for _, i := range d.bySeq[seq] {
		q := x.h.Pops[i]
		if q.At < first.At || x.failed(q) {
			continue
		}
		if wait, _ := x.sendWait(d, q); wait == 0 {
			continue
		}
		bound, ok, _, _, _ := x.lateAllowance(d, seq, q)
		if ok && q.At <= hi+bound+x.lag(d, q.At) {
			return true
		}
	}
	return false
}

// lateAllowance is the lateness bound of delivery p of pop k of d (ok
// false: no bound applies, as no replica was able to make it), whether a
// fault touched the pop, whether the pop is judged for liveness (G7), and
// the verdict the bound stands for: strict, or the excuse that widened
// it.
func (x *index) lateAllowance(d *def, k int, p Pop) (bound time.Duration, ok, touched, liveness bool, v verdict) {
	lo, _ := d.due(k)
	_, b := x.window(d, k)
	touched = x.popTouched(d, k, b)
	bound, ok = x.lateBound(d, k)
	liveness = x.tl.liveFrom > 0 && lo >= x.tl.liveFrom && touched
	if liveness {
		// G7: all replicas must be back, so the replica bound holds,
		// unless every replica failed this pop's callback or lost its
		// copy: a lost copy comes back only with the notice of a pop of
		// a replica that missed the write, whenever that falls.
		hand, _ := x.handOff(d, k)
		bound, ok = x.rankBound(d)+hand+d.held+x.o.LivenessGrace, !x.liveAllLost(d, k)
	}
	wait, queued := x.sendWait(d, p)
	bound += wait
	hand, scale := x.handOff(d, k)
	_, hi := d.due(k)
	switch {
	case !ok:
		v = excused(x.unable(d, k, liveness))
	case hand > 0 && p.At > hi+bound-hand+x.lag(d, p.At):
		// Later than the bound without the move: the move excused it.
		v = excused(ExFault + "/" + Excuse(scale))
	case liveness && d.held > 0 && p.At > hi+bound-d.held+x.lag(d, p.At):
		// Later than the bound without the hold, which G7 adds whatever
		// the placement: the hold excused it.
		v = excused(d.heldBy)
	case touched && d.shared:
		v = excused(ExSharedID)
	case touched && !d.placed:
		v = excused(ExWorstRank)
	case d.held > 0 && x.heldUsed(d, k):
		v = excused(d.heldBy)
	case queued > 0:
		v = excused(ExFault + "/" + Excuse(Queued))
	case wait > 0:
		v = excused(ExFault + "/" + Excuse(Overload))
	}
	return bound, ok, touched, liveness, v
}

// checkSiteTurn is the other sites' part of G4's rank order
// (docs/design.md 4.10): a replica at another site than the write's
// pops only once every replica of the write's site has had its turn, 2 s
// per rank, whatever the faults (a fault may make it pop later, never
// sooner), less only what the clocks of the timer's nodes gained
// meanwhile, as for G1. Were it to pop sooner, its notice could keep the
// local replicas from popping while they were healthy, and with a local
// replica down it would pop at the local backup's turn, a duplicate no
// fault excuses.
func (x *index) checkSiteTurn(d *def, seq int, p Pop) (Violation, bool) {
	local, ok := x.homeRanks(d)
	if !ok || slices.Contains(d.replicas[:local], p.Node) || !slices.Contains(d.replicas, p.Node) {
		return Violation{}, false
	}
	lo, _ := d.due(seq)
	gain := x.forward(d, d.lo, p.At)
	turn := lo + time.Duration(local)*x.o.ReplicaSkew - gain
	if p.At >= turn {
		return Violation{}, false
	}
	return x.violation("G4", p.At, d, fmt.Sprintf(
		"pop %d from %s, a replica at another site than the write's, came before the write's site had its turn: got %v, want at or after %v (due from %v + %d local ranks x %v - clock gain %v of the timer's nodes)",
		seq, p.Node, p.At, turn, lo, local, x.o.ReplicaSkew, gain)), true
}

// homeRanks is how many of d's replicas are at the site of the node that
// took its write, which rank before every other site's, and false unless
// d is placed across several sites.
func (x *index) homeRanks(d *def) (int, bool) {
	if len(x.h.Sites) <= 1 || !d.placed || d.shared {
		return 0, false
	}
	home := x.h.Sites[x.homeSite(d)]
	n := 0
	for _, r := range d.replicas {
		if slices.Contains(home, r) {
			n++
		}
	}
	return n, true
}

// sendWait is how long the callback of pop p waited on its path, and
// how much of it in its endpoint's inbound queue: for its overloaded
// sender (an Overload fault on its node and endpoint whose wait, run on
// to its sender's resume if the sender stood still when it ran out (see
// leftAfter), ended within a network delay before the callback arrived,
// or a healthy delay before the endpoint took it), the pop left its
// replica that much after the replica made it; and in the
// endpoint's queue (a Queued fault on them that arrived at s.from and
// whose wait ended, the endpoint's service time before p.At, within a
// network delay), the endpoint took it that much after it arrived
// (scenarios/README.md C8). The two add up: the bound is their sum.
func (x *index) sendWait(d *def, p Pop) (wait, queued time.Duration) {
	arrived := p.At
	for s := range d.spans() {
		q, record, ok := s.queuedWait()
		if !ok || record || s.fault.Nodes[0] != p.Node || s.fault.Peers[0] != d.host {
			continue
		}
		if done := s.from + q; done <= p.At && p.At <= done+x.h.MaxNetDelay {
			arrived, queued = s.from, q
			break
		}
	}
	if queued > 0 {
		return queued + x.sendWaitOf(d, p.Node, d.host, false, arrived), queued
	}
	// With no Queued fault, the endpoint took the callback within a
	// healthy delay of its leaving: the transit and a wait in its
	// endpoint's queue too short to be recorded, which the fault-free
	// allowance covers (a burst released at once, by its sender's resume,
	// queues there: TestCallbackThatWaitedForAPausedSenderLeavesAtItsResume).
	return x.sendWaitWithin(d, p.Node, d.host, false, p.At, x.healthyLate()), 0
}

// lag is the largest clock lag of d's nodes at t: a replica whose clock
// fell behind pops that much late, and the next one may only step in at
// its rank, so the first pop may be late by the lag of any of them.
func (x *index) lag(d *def, t time.Duration) time.Duration {
	var m time.Duration
	for n := range x.tl.clocks {
		if !d.placed || d.nodes[n] {
			m = max(m, x.tl.lag(n, t))
		}
	}
	return m
}

// impliedSeqs lists the sequence numbers other than seq whose due window,
// with its lateness bound, contains at.
func (x *index) impliedSeqs(d *def, at time.Duration, seq int) []int {
	n := d.op.Spec.Pops()
	k := 1
	if iv := d.op.Spec.Interval; iv > 0 {
		k = min(n, int((at+x.h.MaxClockSkew-d.lo)/iv))
	}
	var fits []int
	for scanned := 0; k >= 1 && scanned < maxSeqScan; k, scanned = k-1, scanned+1 {
		lo, hi := d.due(k)
		if hi+x.rankBound(d) < at {
			break
		}
		if k == seq || at < lo-x.h.MaxClockSkew {
			continue
		}
		bound, ok := x.lateBound(d, k)
		if !ok || at <= hi+bound {
			fits = append(fits, k)
		}
	}
	sort.Ints(fits)
	return fits
}

// replacedByHitWrite reports whether a later write of d's timer was hit by
// a fault (see writeHit): a replica it missed still holds d, and pops it
// at that replica's rank, however late (scenarios/README.md S2: the other
// site missed an update and popped the old definition a site's ranks
// after its due times).
func (x *index) replacedByHitWrite(d *def) bool {
	for _, e := range x.byTimer[d.timer] {
		if e.Seq == d.op.Seq || e.Outcome == Failed || e.Invoke < d.op.Invoke {
			continue
		}
		if _, hit := x.writeHit(e); hit {
			return true
		}
	}
	return false
}
