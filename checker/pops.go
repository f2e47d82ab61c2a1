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
// G7 on every delivered pop.
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
	}
	return vs
}

func sortedSeqs(d *def) []int {
	seqs := make([]int, 0, len(d.bySeq))
	for s := range d.bySeq {
		seqs = append(seqs, s)
	}
	sort.Ints(seqs)
	return seqs
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
		if v, bad := x.checkDelivery(d, seq, x.h.Pops[i], n == 0); bad {
			vs = append(vs, v)
		}
	}
	if v, bad := x.checkDuplicates(d, seq); bad {
		vs = append(vs, v)
	}
	if v, bad := x.checkRetries(d, seq); bad {
		vs = append(vs, v)
	}
	return vs
}

// checkRetries reports a replica that delivered one pop twice (G4): a
// replica makes one attempt per pop and leaves a failed one to the next
// replica (docs/design.md 4.7), whatever the faults. It is excused only
// where the node may have forgotten the timer: a crash between the two
// attempts, or a second attempt after the timer's last pop was due plus
// the tombstone's life, on the node's clock (a replica that was paused
// meanwhile may bring the finished timer back with its stale copy).
func (x *index) checkRetries(d *def, seq int) (Violation, bool) {
	last := map[string]Pop{}
	lastDue, _ := d.due(d.op.Spec.Pops())
	for _, i := range d.bySeq[seq] {
		p := x.h.Pops[i]
		q, seen := last[p.Node]
		// A clock that moved ahead ends the tombstone early in true time.
		gain := x.tl.gain(p.Node, q.At, p.At)
		forgot := p.At+gain >= lastDue+x.o.TombstoneLife || x.crashedBetween(p.Node, q.At, p.At)
		// A pop under an ID that collided is of the first write of a
		// create the proxy wrote again under a new ID (see sharedID).
		withdrawn := d.shared && p.Timer != q.Timer
		if seen && !forgot && !withdrawn {
			return x.violation("G4", p.At, d, fmt.Sprintf(
				"pop %d delivered twice by %s (at %v, answered %d, and at %v): got 2 attempts by one replica, want at most 1",
				seq, p.Node, q.At, q.Answered, p.At)), true
		}
		last[p.Node] = p
	}
	return Violation{}, false
}

// crashedBetween reports whether node crashed in [a, b].
func (x *index) crashedBetween(node string, a, b time.Duration) bool {
	for _, f := range x.h.Faults {
		if f.Kind == Crash && f.At >= a && f.At <= b && slices.Contains(f.Nodes, node) {
			return true
		}
	}
	return false
}

// checkDelivery checks one delivery: early (G1), carrying a seq its time
// does not fit (G4, judged only where no fault widens the windows so that
// they overlap), or, for the first delivery, late (G3, or G7 after the
// liveness phase began).
func (x *index) checkDelivery(d *def, seq int, p Pop, first bool) (Violation, bool) {
	lo, hi := d.due(seq)
	if gain := x.forward(d, d.lo, p.At); p.At < lo-gain {
		return x.violation("G1", p.At, d, fmt.Sprintf(
			"pop %d from %s arrived early: got %v, want at or after %v (invoke %v + %d x %v - clock gain %v of the timer's nodes)",
			seq, p.Node, p.At, lo-gain, d.lo, seq, d.op.Spec.Interval, gain)), true
	}
	a, b := x.window(d, seq)
	touched := x.popTouched(d, seq, b)
	bound, ok := x.lateBound(d, seq)
	liveness := x.tl.liveFrom > 0 && lo >= x.tl.liveFrom && touched
	if liveness {
		// G7: all replicas must be back, so the replica bound holds,
		// unless failed callbacks left no replica a live copy: a dormant
		// copy is revived only by the notice of a pop of a replica that
		// missed the write, whenever that falls (seed 9920).
		_, strict := x.dropped(d, a, b)
		bound, ok = x.rankBound(d)+d.held+x.o.LivenessGrace, !x.allLost(d, strict)
	}
	if !ok || p.At <= hi+bound+x.lag(d, p.At) || (touched || x.replacedByHitWrite(d)) && d.cutoff <= hi+bound {
		// In time, or, with a fault around the pop or the write that
		// replaced it, superseded before its deadline: the backup that
		// would have popped it in time may already hold the new
		// definition, and a replica the write missed pops at its own
		// rank (whether the late pop may happen at all is G5's
		// business).
		return Violation{}, false
	}
	if fits := x.impliedSeqs(d, p.At, seq); len(fits) > 0 && !touched {
		return x.violation("G4", p.At, d, fmt.Sprintf(
			"pop from %s at %v carries seq %d, but its time fits only seq %v: got seq %d, want one of %v (a duplicate or mislabelled pop)",
			p.Node, p.At, seq, fits, seq, fits)), true
	}
	if !first {
		return Violation{}, false // a late copy is a duplicate, G4's business
	}
	g := "G3"
	if liveness {
		g = "G7"
	}
	lag := x.lag(d, p.At)
	return x.violation(g, p.At, d, fmt.Sprintf(
		"pop %d from %s arrived late: got %v, want by %v (due by %v + bound %v + clock lag of the timer's nodes %v)",
		seq, p.Node, p.At, hi+bound+lag, hi, bound, lag)), true
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

// checkDuplicates reports a pop delivered again after the endpoint
// accepted it, with no fault around its due time or its deliveries (G4).
func (x *index) checkDuplicates(d *def, seq int) (Violation, bool) {
	idx := d.bySeq[seq]
	ok := -1 // the first delivery the endpoint accepted
	for n, i := range idx {
		if accepted(x.h.Pops[i]) {
			ok = n
			break
		}
	}
	if ok < 0 || ok == len(idx)-1 {
		return Violation{}, false // retries after a refused callback are the redundancy path
	}
	if _, dup := x.mayDuplicate(d, seq); dup {
		return Violation{}, false
	}
	p0, p1 := x.h.Pops[idx[ok]], x.h.Pops[idx[ok+1]]
	return x.violation("G4", p1.At, d, fmt.Sprintf(
		"pop %d delivered %d times with no fault around it (accepted from %s at %v, again from %s at %v): got %d deliveries, want 1",
		seq, len(idx), p0.Node, p0.At, p1.Node, p1.At, len(idx))), true
}

// mayDuplicate names the fault that may have made pop k of d arrive more
// than once: one around the pop itself (see dupFault), or, when its first
// delivery came later than a healthy pop may, the fault that made it late
// (a late pop meets the next replica's turn).
func (x *index) mayDuplicate(d *def, k int) (Fault, bool) {
	_, b := x.window(d, k)
	last, first := b, never
	for _, i := range d.bySeq[k] {
		last, first = max(last, x.h.Pops[i].At), min(first, x.h.Pops[i].At)
	}
	if f, ok := x.dupFault(d, k, last); ok {
		return f, true
	}
	if lo, hi := d.due(k); first > hi+x.healthyLate() || d.op.Outcome == Unknown {
		// An unknown write's start is anywhere up to the end of the
		// history: whether the pop was late cannot be told.
		if f, ok := x.popFault(d, k, last); ok {
			return f, true
		}
		if lo >= d.lossFrom {
			return Fault{Kind: copiesLostFault, Detail: "every copy may have been lost before the pop fell due"}, true
		}
	}
	return Fault{}, false
}

// accepted reports whether the endpoint accepted the pop: a replica whose
// callback is refused drops its copy and the next replica pops again
// (docs/design.md 4.7), which is no duplicate. A status of 0 (not recorded)
// counts as accepted, so that a simulator that leaves Answered unset does
// not silently switch the duplicate and lost-pop checks off.
func accepted(p Pop) bool { return p.Answered == 0 || p.Answered >= 200 && p.Answered <= 299 }

// checkMissing reports due pops never delivered: G2 for pops due in
// fault-free stretches, G7 for pops due after the liveness phase began.
func (x *index) checkMissing() []Violation {
	var vs []Violation
	for _, d := range x.defs {
		if d.op.Outcome != OK {
			continue
		}
		for k := 1; k <= d.op.Spec.Pops(); k++ {
			lo, _ := d.due(k)
			if lo > x.end {
				break
			}
			if x.delivered(d, k) {
				continue
			}
			if v, bad := x.missing(d, k); bad {
				vs = append(vs, v)
			}
		}
	}
	return vs
}

// delivered reports whether the endpoint accepted pop k of d at least once
// (G2 asks for an accepted delivery: a refused one is a failed pop).
func (x *index) delivered(d *def, k int) bool {
	for _, i := range d.bySeq[k] {
		if accepted(x.h.Pops[i]) {
			return true
		}
	}
	return false
}

// missing decides whether pop k of d, never accepted, is a violation. G2
// holds with faults around too, at the rank bound, as long as fewer
// replicas than hold the timer were down or cut off (see lateBound).
func (x *index) missing(d *def, k int) (Violation, bool) {
	lo, hi := d.due(k)
	g, bound, ok := "G2", x.slack(), true
	if x.tl.liveFrom > 0 && lo >= x.tl.liveFrom {
		g, bound = "G7", x.rankBound(d)+x.o.LivenessGrace
	} else {
		bound, ok = x.lateBound(d, k)
	}
	if !ok || !x.required(d, k, bound) {
		return Violation{}, false
	}
	return x.violation(g, hi+bound, d, fmt.Sprintf(
		"pop %d (due %v..%v) never delivered: got no accepted delivery (%d refused) by %v (history end %v), want one by %v",
		k, lo, hi, len(d.bySeq[k]), x.end, x.end, hi+bound)), true
}

// violation builds a Violation about definition d.
func (x *index) violation(g string, at time.Duration, d *def, msg string) Violation {
	return Violation{Guarantee: g, At: at, Timer: d.op.Timer,
		Message: fmt.Sprintf("%s (op %d %s %q)", msg, d.op.Seq, d.op.Kind, d.op.Spec.Opaque)}
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
