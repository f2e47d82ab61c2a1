package checker

import (
	"fmt"
	"slices"
	"time"
)

// checkMissing reports due pops never delivered: G2 for pops due in
// fault-free stretches, G7 for pops due after the liveness phase began.
// It gives every pop due by the end of the history its G2 verdict.
func (x *index) checkMissing() []Violation {
	var vs []Violation
	for _, d := range x.defs {
		if d.op.Outcome == Failed {
			continue // every pop of a rejected write is a G5 violation
		}
		for k := 1; k <= d.op.Spec.Pops(); k++ {
			lo, _ := d.due(k)
			if lo > x.end {
				break
			}
			v, bad := x.missing(d, k)
			if bad {
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

// missing judges pop k of d under G2 (G7 in the liveness phase), records
// the verdict, and returns the violation when the pop was owed and never
// accepted. G2 holds with faults around too, at the rank bound, as long
// as fewer replicas than hold the timer were down or cut off (see
// lateBound).
func (x *index) missing(d *def, k int) (Violation, bool) {
	lo, hi := d.due(k)
	g, bound, ok := "G2", time.Duration(0), true
	if x.tl.liveFrom > 0 && lo >= x.tl.liveFrom {
		g, bound, ok = "G7", x.rankBound(d)+x.o.LivenessGrace, !x.liveAllLost(d, k)
	} else {
		bound, ok = x.lateBound(d, k)
	}
	v := x.owed(d, k, bound, ok, g == "G7")
	if v == strictly && !x.delivered(d, k) {
		v = violatedVerdict
	}
	x.record(d, k, colG2, v)
	if !v.violated {
		return Violation{}, false
	}
	broke := x.violation(g, hi+bound, d, fmt.Sprintf(
		"pop %d (due %v..%v) never delivered: got no accepted delivery (%d refused) by %v (history end %v), want one by %v",
		k, lo, hi, len(d.bySeq[k]), x.end, x.end, hi+bound))
	x.recordBroken(d, k, broke)
	return broke, true
}

// owed names what, if anything, excuses pop k of d from arriving within
// bound (ok false: no replica was able to make it; see lateBound): strict
// when d returned OK, the bound (plus the worst clock lag) passed before
// the end of the history, nothing may have replaced d by then, and no
// fault may have removed every copy of d before the pop fell due.
func (x *index) owed(d *def, k int, bound time.Duration, ok, liveness bool) verdict {
	lo, hi := d.due(k)
	by := hi + bound + x.tl.maxLag(x.end) // a lagging clock may hold it
	switch {
	case by >= d.cutoff:
		return excused(d.superseded())
	case d.op.Outcome == Unknown:
		return excused(ExUnknownWrite)
	case !ok:
		return excused(x.unable(d, k, liveness))
	case lo >= d.lossFrom:
		return excused(x.lossExcuse())
	case by > x.end:
		return excused(ExPastEnd)
	}
	return strictly
}

// unable names why no replica was able to make pop k of d: the twins'
// shared ID, every copy lost, or every replica down, cut off or without
// its copy, or failed (see allUnable).
func (x *index) unable(d *def, k int, liveness bool) Excuse {
	lo, _ := d.due(k)
	switch {
	case d.shared && !liveness:
		return ExSharedID
	case lo >= d.lossFrom:
		return x.lossExcuse()
	}
	return x.allUnable(d, k)
}

// lossFrom is the earliest time a fault may have removed every copy of d
// for good: rf distinct replicas without their copies at once, each
// emptied by a crash (a restarted node holds nothing) and not
// repopulated since (see repopulatedBy), or, after a write a fault
// touched, as many as its quorum (with rf <= 2 one replica may be all
// it reached). A failed callback, or a replica cut off from the
// endpoint, removes no copy: it costs that pop on that replica only
// (docs/design.md 4.7), and is weighed in that pop's judgement (see
// failedPop and withoutCopy).
func (x *index) lossFrom(d *def) time.Duration {
	return x.lossFromAt(d, -1)
}

// siteLossFrom is the earliest time a fault may have removed every copy
// of d at the site of index site in History.Sites (never with one site, or
// a node at none): the copies an update without a factor through a node
// of that site reads (mayFindNoTimer).
func (x *index) siteLossFrom(d *def, site int) time.Duration {
	if len(x.h.Sites) <= 1 || site < 0 {
		return never
	}
	return x.lossFromAt(d, site)
}

// lossFromAt is lossFrom over the copies at the site of index site, or at
// every site for -1: a factor places that many copies at each site.
func (x *index) lossFromAt(d *def, site int) time.Duration {
	here := func(n string) bool { return site < 0 || x.siteOf(n) == site }
	// without holds, per crashed replica, until when it may be without
	// its copy: for good, unless its restart repopulated it.
	without := map[string]time.Duration{}
	partial := x.touched(d, d.lo, min(d.hi, x.end))
	// gone reports whether, at at, every copy of d may be gone: the
	// copies are on the nodes that may hold d then.
	gone := func(at time.Duration) bool {
		// Of a timer a scale moves, the copies at the crash are on the
		// nodes that may hold it then, however many replicas a later
		// membership gives it (d.rf is the largest placement's), less
		// the nodes that joined after the write and that no member may
		// have handed a copy yet (joinedEmpty).
		need, holders := d.rfMin, []string(nil)
		if site >= 0 {
			// At one site: a placed write's replicas there, or the
			// factor's copies, as many as the site has nodes.
			need = min(d.factors.lo, len(x.h.Sites[site]))
			if d.placed {
				holders = slices.DeleteFunc(slices.Clone(d.nodesIn(at, at)), func(n string) bool { return !here(n) })
				need = len(holders)
			}
		}
		if d.placed && len(d.epochs) > 0 {
			holders = slices.DeleteFunc(slices.Clone(d.nodesIn(at, at)), func(n string) bool { return x.joinedEmpty(d, n, at) })
			need = min(need, len(holders))
		}
		lost := 0
		for n, until := range without {
			if until > at && (holders == nil || slices.Contains(holders, n)) {
				lost++
			}
		}
		// An acknowledged write reached at least a quorum of the
		// replicas, all of them unless a fault touched it.
		return partial && lost >= d.quorum || lost >= need
	}
	// A scale's end, once its settle time is over, takes the nodes it
	// removed out of the holders: the simulator stops a leaving node at
	// the scale's end (sim/scale.go), and its copy, kept as moved away
	// once the new replicas held the timer, goes with it. When the new
	// replicas lost theirs meanwhile, that stop leaves no copy (fresh seed
	// 9553680, scenarios/README.md C72: both replicas of a scaled-down
	// timer crashed without storage while the scale ran, and the leaving
	// node, which had handed them the timer, was stopped at its end).
	var shrinks []time.Duration
	if d.placed {
		for i := 1; i < len(d.epochs); i++ {
			if e := d.epochs[i]; e.from > d.lo && len(e.nodes) < len(d.epochs[i-1].nodes) {
				shrinks = append(shrinks, e.from)
			}
		}
	}
	for s := range d.spans() { // by start
		if s.to < d.lo || s.fault.Kind != Crash || !x.crashLoses(s) {
			continue
		}
		for len(shrinks) > 0 && shrinks[0] <= s.from {
			if gone(shrinks[0]) {
				return shrinks[0]
			}
			shrinks = shrinks[1:]
		}
		at := max(s.from, d.lo)
		for _, n := range s.fault.Nodes {
			if !here(n) {
				continue
			}
			if !d.placed || slices.Contains(d.nodesIn(s.from, s.from), n) {
				without[n] = never
				if by, ok := x.repopulatedBy(d, n, s.end); ok {
					without[n] = by
				}
			}
		}
		if gone(at) || len(s.fault.Nodes) == 0 {
			return at
		}
	}
	for _, at := range shrinks {
		if gone(at) {
			return at
		}
	}
	return never
}

// liveAllLost reports whether, in the liveness phase, no replica was
// left able to make pop k of d: every replica failed its callback (a
// node whose clock runs ahead may try it just before the faults end),
// lost its copy to a crash or a missed write not repaired since, or was
// down at the pop by a crash or pause the plan made in the liveness
// phase itself (a restart in the middle of a scale's resync). The faults
// of the safety phase are over then, so nothing else excuses the pop.
func (x *index) liveAllLost(d *def, k int) bool {
	a, b := x.window(d, k)
	_, strict := x.dropped(d, a, b)
	addAll(strict, x.failedPop(d, k))
	for s := range d.spans() {
		if (s.fault.Kind == Crash || s.fault.Kind == Pause) && s.from >= x.tl.liveFrom && s.from <= b && s.to >= a {
			addAll(strict, s.fault.Nodes)
		}
	}
	return x.allLost(d, strict, a, b)
}
