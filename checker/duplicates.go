package checker

import (
	"fmt"
	"slices"
	"time"
)

// checkRetries reports a replica that delivered one pop twice (G4): a
// replica makes one attempt per pop and leaves a failed one to the next
// replica (docs/design.md 4.7), whatever the faults. It is excused only
// where the node may have forgotten the timer: a crash between the two
// attempts, a scale-down that stopped it between them (it joined again
// later as a new node, holding nothing of what it did), or a second attempt after the timer's last pop was due plus
// the tombstone's life, on the node's clock and less what the clocks that
// held its start gained (a replica that was paused meanwhile, or a stale
// message replayed, may bring the finished timer back with its stale
// copy). The first attempt was made as early as its callback's delivery
// less the waits on its path (madeFrom).
//
// Its verdict is strict unless a replica did attempt the pop twice and
// was excused: ExForgot, or ExSharedID for a pop under a withdrawn ID.
func (x *index) checkRetries(d *def, seq int) (verdict, Violation, bool) {
	v := strictly
	last := map[string]Pop{}
	for _, i := range d.bySeq[seq] {
		p := x.h.Pops[i]
		q, seen := last[p.Node]
		forgot := x.forgot(d, p, q.At, x.madeFrom(d, q))
		// A pop under an ID that collided is of the first write of a
		// create the proxy wrote again under a new ID (see sharedID).
		withdrawn := d.shared && p.Timer != q.Timer
		switch {
		case seen && withdrawn:
			v = v.or(excused(ExSharedID))
		case seen && forgot:
			v = v.or(excused(ExForgot))
		case seen:
			return violatedVerdict, x.violation("G4", p.At, d, fmt.Sprintf(
				"pop %d delivered twice by %s (at %v, answered %d, and at %v): got 2 attempts by one replica, want at most 1",
				seq, p.Node, q.At, q.Answered, p.At)), true
		}
		last[p.Node] = p
	}
	told, viol, bad := x.checkTold(d, seq)
	return v.or(told), viol, bad
}

// forgot reports whether the replica that delivered p may have forgotten
// by then what it knew at since (its clock read from there) of a pop of
// d, its own attempt or a record's word, made or handed to it from made:
// it crashed or a scale-down stopped it in between, or the timer's
// tombstone had expired on its clock. A clock that moved ahead ends the
// tombstone early in true time, also one that stepped ahead before since
// and back later (latestLocal). The replica measures the tombstone's
// life from its own start, which every clock that held the schedule on
// its way moved early by what it gained (forward, the replica's own
// clock included), so the tombstone may end that much before the
// definition's last due time plus its life.
func (x *index) forgot(d *def, p Pop, since, made time.Duration) bool {
	lastDue, _ := d.due(d.op.Spec.Pops())
	gain := max(x.tl.gain(p.Node, since, p.At), x.forward(d, d.lo, p.At))
	local := max(p.At+gain, x.tl.latestLocal(p.Node, since, p.At))
	return local >= lastDue+x.o.TombstoneLife || x.crashedWithin(p.Node, made, p.At) || x.leftIn(p.Node, made, p.At)
}

// madeFrom is the earliest time the replica may have made the attempt
// its callback p delivered: p.At less the waits recorded on its path
// (sendWait: for its overloaded sender, in its endpoint's inbound queue)
// and the healthy delay, which covers the transit and the waits too short
// to be recorded at either end. A callback of a burst of missed pops
// waits in its endpoint's queue for the ones before it, so the endpoint
// may take it well past one network delay after it left: a crash in
// that time came after the attempt was made (scenarios/README.md C35).
// A paused process sends nothing: a callback that arrives within that
// time after its replica resumed may have been made just before the
// pause began, and left only at the resume (fresh seed 9564772,
// scenarios/README.md C74: a replica resumed, made a pop it had missed,
// took a notice saying a later pop was made, and paused again at the
// same instant; its callback left 8 s later, at its next resume).
func (x *index) madeFrom(d *def, p Pop) time.Duration {
	wait, _ := x.sendWait(d, p)
	made := p.At - wait - x.healthyLate()
	pauses := x.tl.pauses[p.Node]
	for i := len(pauses) - 1; i >= 0; i-- {
		if s := pauses[i]; !s.crashed && s.from < made && s.end >= made && s.end <= p.At {
			made = s.from - x.healthyLate()
		}
	}
	return made
}

// crashedBetween reports whether node crashed in [a, b]: a the delivery of
// a message it sent up to one network delay earlier, so a crash in that
// delay came after the message was sent.
func (x *index) crashedBetween(node string, a, b time.Duration) bool {
	return x.crashedWithin(node, a-x.h.MaxNetDelay, b)
}

// crashedWithin reports whether node crashed in [a, b]: the first of its
// crash times (in order, buildTimeline) from a on is no later than b. It
// is asked once per pop a replica delivered; a scan of every fault made
// the check quadratic in a run's faults (a long run with 735,000 spent
// half its time here).
func (x *index) crashedWithin(node string, a, b time.Duration) bool {
	cs := x.tl.crashes[node]
	i, _ := slices.BinarySearch(cs, a)
	return i < len(cs) && cs[i] <= b
}

// leftIn reports whether a scale-down that took node out of the
// cluster completed in [a, b], a as in crashedWithin: the operator stops
// a leaving node once the scale is done (docs/design.md 4.8), and a node
// that joins again later starts as a new one, with no record of the
// attempts it made before it left, so it owes the pops a record it is
// given marks missed: one attempt per replica per pop (docs/design.md
// 4.7) holds for one run of a node, as across a crash.
func (x *index) leftIn(node string, a, b time.Duration) bool {
	for _, s := range x.h.Scales {
		if s.End > 0 && s.End >= a && s.End <= b &&
			slices.Contains(s.Before, node) && !slices.Contains(s.After, node) {
			return true
		}
	}
	return false
}

// checkDuplicates reports a pop delivered again after the endpoint
// accepted it, with no fault around its due time or its deliveries (G4).
// Its verdict is the allowance it makes (dupAllowance), or violated.
func (x *index) checkDuplicates(d *def, seq int) (verdict, Violation, bool) {
	allowed := x.dupAllowance(d, seq)
	idx := d.bySeq[seq]
	ok := -1 // the first delivery the endpoint accepted
	for n, i := range idx {
		if accepted(x.h.Pops[i]) {
			ok = n
			break
		}
	}
	if len(idx) > 1 && allowed != strictly {
		if p, from, ok := x.handOffEarly(d, seq); ok {
			return violatedVerdict, x.violation("G4", p.At, d, fmt.Sprintf(
				"pop %d delivered %d times, once by %s at %v, a holder the scale left out of the timer's replicas (its copy pops after every replica's turn, due from %v): got a pop before every replica's turn beside another's, want the copy's pops at its hand-off rank",
				seq, len(idx), p.Node, p.At, from)), true
		}
	}
	next := ok + 1 // the delivery after the accepted one that is judged
	told, word := time.Duration(0), false
	if ok >= 0 && ok < len(idx)-1 && allowed != strictly {
		if told, word = x.tookAsMade(x.h.Pops[idx[ok]]); word {
			// The node that delivered the accepted pop took it as made
			// once the endpoint answered, and told the other replicas
			// so: an endpoint that failed or answered slowly at other
			// times made no replica pop it after that word reached it
			// (mutations popped-answer-ignored, trim-keeps-owed). A
			// slow answer within the timeout delays the word, so a
			// replica may pop it before: that is the slow endpoint's.
			if _, still := x.mayDuplicate(d, seq, func(f Fault) bool { return isCallbackFault(f.Kind) }); !still {
				n, after := x.afterWord(d, idx[ok+1:], x.h.Pops[idx[ok]].Node, told)
				if after {
					allowed, next = strictly, ok+1+n
				}
				word = after
			}
		}
	}
	if ok < 0 || ok == len(idx)-1 || allowed != strictly {
		// No delivery after an accepted one (retries after a refused
		// callback are the redundancy path), or one a fault excuses.
		return allowed, Violation{}, false
	}
	p0, p1 := x.h.Pops[idx[ok]], x.h.Pops[idx[next]]
	if word {
		return violatedVerdict, x.violation("G4", p1.At, d, fmt.Sprintf(
			"pop %d delivered %d times with no fault around it but the callback endpoint's (accepted from %s at %v, whose node had the answer and told the other replicas by %v; again from %s at %v, made after that): got %d deliveries, want 1",
			seq, len(idx), p0.Node, p0.At, told, p1.Node, p1.At, len(idx))), true
	}
	return violatedVerdict, x.violation("G4", p1.At, d, fmt.Sprintf(
		"pop %d delivered %d times with no fault around it (accepted from %s at %v, again from %s at %v): got %d deliveries, want 1",
		seq, len(idx), p0.Node, p0.At, p1.Node, p1.At, len(idx))), true
}

// tookAsMade reports whether the node that delivered p surely took its
// pop as made, and by when the other replicas had its word: the endpoint
// accepted p and its answer, slow or not, reached the node within the
// callback timeout with both hops at their longest, and the node's
// notice then took one hop more (docs/design.md 4.7: the other replicas
// hear of a pop once its callback succeeded). An endpoint slower than
// the timeout, or whose delay the history does not give, may have made
// the node take it for a failure.
func (x *index) tookAsMade(p Pop) (time.Duration, bool) {
	if !accepted(p) {
		return 0, false
	}
	delay, ok := x.tl.slowDelay(p.URI, p.At)
	if !ok || delay+2*x.h.MaxNetDelay >= x.o.CallbackTimeout {
		return 0, false
	}
	return p.At + delay + 2*x.h.MaxNetDelay, true
}

// afterWord returns the first of the deliveries idx of pop d by a node
// other than from that its node made after told, the time from's word
// that the pop was made had reached it: sent no earlier than its delivery
// less a network delay and the waits recorded on its path (sendWait).
func (x *index) afterWord(d *def, idx []int, from string, told time.Duration) (int, bool) {
	for n, i := range idx {
		q := x.h.Pops[i]
		wait, _ := x.sendWait(d, q)
		if q.Node != from && q.At-wait-x.h.MaxNetDelay > told {
			return n, true
		}
	}
	return 0, false
}

// dupAllowance is G4's verdict on pop k of d before its deliveries are
// looked at: excused by the fault that may have made it arrive more than
// once (see mayDuplicate), else strict.
func (x *index) dupAllowance(d *def, k int) verdict {
	if f, ok := x.mayDuplicate(d, k, nil); ok {
		return excused(excuseOf(f))
	}
	return strictly
}

// mayDuplicate names the fault that may have made pop k of d arrive more
// than once: one around the pop itself (see dupFault), or, when its first
// delivery came later than a healthy pop may, the fault that made it late
// (a late pop meets the next replica's turn). skip is popFault's.
func (x *index) mayDuplicate(d *def, k int, skip func(Fault) bool) (Fault, bool) {
	_, b := x.window(d, k)
	last, first := b, never
	for _, i := range d.bySeq[k] {
		last, first = max(last, x.h.Pops[i].At), min(first, x.h.Pops[i].At)
	}
	if f, ok := x.dupFault(d, k, last, skip); ok {
		return f, true
	}
	if lo, hi := d.due(k); first > hi+x.healthyLate() || d.op.Outcome == Unknown {
		// An unknown write's start is anywhere up to the end of the
		// history: whether the pop was late cannot be told.
		if f, ok := x.popFault(d, k, last, skip); ok {
			return f, true
		}
		if lo >= d.lossFrom {
			return Fault{Kind: x.lossFault(), Detail: "every copy may have been lost before the pop fell due"}, true
		}
	}
	return Fault{}, false
}

// handOffEarly reports a delivery of pop k of d made by a holder a scale
// left out of the timer's replicas before every replica's turn, and the
// earliest the holder may pop it. A member that took a scale's
// configuration by a reload and is no replica of the timer under it
// keeps its copy live until the new replicas hold it, popping after
// every one of them (docs/design.md 4.8, node/place.go placeAll): rank
// len(replicas), so that a scale moves no pop to two nodes at once. A
// scale's fault window excuses the duplicates a move makes (a node not
// yet reloaded still pops at its old rank beside the new one); this is
// the part of them it does not excuse: a pop delivered before its
// hand-off rank's due time, less the slack and what the clocks that held
// the start gained (forward), by a holder that had reloaded before the
// pop could fall due at any rank, so that it decided it under the new
// view. A reload after that may come after the decision: a pop waits to
// be sent for a callback worker, unrecorded, and delivered after the
// reload it was still made at the old rank (fresh seed 8467979: decided
// at 34.18 s, the reload at 34.79 s, delivered at 35.46 s under load).
// Judged only where the placement is certain: one site, a factor the
// history gives, and no other scale begun between the reload and the
// delivery.
func (x *index) handOffEarly(d *def, k int) (Pop, time.Duration, bool) {
	if !d.placed || d.rfUnknown || len(x.h.Sites) > 1 {
		return Pop{}, 0, false
	}
	lo, _ := d.due(k)
	for _, i := range d.bySeq[k] {
		p := x.h.Pops[i]
		early := x.slack() + x.forward(d, d.lo, p.At)
		sc, ok := x.reloadedFor(p.Node, lo-early, p.At)
		if !ok {
			continue
		}
		placed := Replicas(sc.After, d.timer, d.rf)
		if slices.Contains(placed, p.Node) {
			continue
		}
		from := lo + time.Duration(len(placed))*x.o.ReplicaSkew - early
		if p.At < from {
			return p, from, true
		}
	}
	return Pop{}, 0, false
}

// reloadedFor is the scale whose configuration node took by a reload
// before a, when no other scale began between that reload and b: the view
// the node held from a to b.
func (x *index) reloadedFor(node string, a, b time.Duration) (Scale, bool) {
	at := -1
	for i, s := range x.h.Scales {
		if r, ok := s.Reloaded[node]; ok && r < a && (at < 0 || r > x.h.Scales[at].Reloaded[node]) {
			at = i
		}
	}
	if at < 0 {
		return Scale{}, false
	}
	r := x.h.Scales[at].Reloaded[node]
	for i, s := range x.h.Scales {
		if i != at && s.Start > r && s.Start <= b {
			return Scale{}, false
		}
	}
	return x.h.Scales[at], true
}
