package checker

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// G6, placement converges: once a scale has completed (every staying
// node's resync finished and the final configuration given), every live
// timer is held live by exactly its replicas under the new membership
// (Replicas, the checker's own placement) and by no other node, and a
// deleted timer by none. The simulator gives what each node held live at
// that moment, and at the end of the run (History.Held).
//
// A timer is judged at a snapshot unless something else may rightly have
// left its copies elsewhere, each a named excuse: a write of it whose
// outcome is unknown (ExUnknownWrite), two writes at once (either may
// have been applied last: ExSuperseded), a write running or its last pop
// due around the snapshot (ExInMotion), crashes that may have taken every
// copy since its write (ExCopiesLost), a fault that touched it between
// the scale's start and the snapshot, or any time since its first write
// for a deleted timer, or one that kept a write of it from a replica
// (fault-window/<kind>; fault-window/write until a repair round, at
// most RepairRound after the write and the faults on it ended, has
// mended the replica it missed). A refusal that lasts, of a version
// dated ahead of its receiver's clock (Fault.Until), keeps the timer
// from its receiver until it ends, and excuses until a repair round
// after that (fault-window/lost). A finished timer is not live and not judged.
// Messages lost on their way without naming a timer (resync pages) are
// not faults of the placement: the resync retries them, and the operator
// runs it again until nothing failed. Nor are a callback endpoint's
// faults (slow, failing): they cost pops, never a copy.

// checkPlacements judges every snapshot of what the nodes held.
func (x *index) checkPlacements() ([]Violation, placedCount) {
	var vs []Violation
	var cov placedCount
	cov.excused = map[Excuse]int{}
	for _, held := range x.h.Held {
		s, ok := x.scaleBefore(held.At)
		if !ok {
			continue // no completed scale to converge from
		}
		holders := map[uint64]int{}
		for _, ts := range held.Live {
			for _, t := range ts {
				holders[t]++
			}
		}
		want := map[uint64][]string{}
		for _, t := range x.timersAt(held.At) {
			replicas, fewest, excuse, judged := x.placementOf(t, held.At, s)
			switch {
			case excuse != "":
				cov.excused[excuse]++
			case judged:
				cov.judged++
				// A factor the history leaves to the node (writtenRF)
				// is one of a range, and the replica lists of each
				// are prefixes of the largest's: the holders must be
				// the prefix as long as their count, within it.
				want[t] = replicas[:min(len(replicas), max(fewest, holders[t]))]
			}
		}
		live := map[string][]uint64{}
		for n, ts := range held.Live {
			for _, t := range ts {
				if _, judged := want[t]; judged {
					live[n] = append(live[n], t)
				}
			}
		}
		for _, v := range CheckPlacement(live, want) {
			v.At = held.At
			v.Message = fmt.Sprintf("at %v, after the %s that completed at %v: %s", held.At, s.Kind, s.End, v.Message)
			vs = append(vs, v)
		}
	}
	return vs, cov
}

// placedCount is G6's share of the coverage: timer placements judged strictly,
// and what excused the others.
type placedCount struct {
	judged  int
	excused map[Excuse]int
	// versions counts the live holdings the end of the run judged
	// strictly by version (checkVersions).
	versions int
	// resynced counts the (resync, timer) pairs judged strictly at a
	// resync's completion (checkResynced).
	resynced int
}

// scaleBefore is the last scale that started by t, if it completed by t.
func (x *index) scaleBefore(t time.Duration) (Scale, bool) {
	var last Scale
	found := false
	for _, s := range x.h.Scales {
		if s.Start <= t {
			last, found = s, true
		}
	}
	return last, found && last.End != 0 && last.End <= t
}

// timersAt lists, in order, the timers some write named by t.
func (x *index) timersAt(t time.Duration) []uint64 {
	var out []uint64
	for id, ops := range x.byTimer {
		if ops[0].Invoke <= t {
			out = append(out, id)
		}
	}
	slices.Sort(out)
	return out
}

// placementOf is where timer id must be held live at t, after scale s:
// its replicas among s.After, or nowhere once deleted; of a factor the
// history leaves to the node, the largest's, of which the first fewest
// hold it whichever the node chose. judged is false for
// a timer that is not live (finished, or never written OK); excuse names
// what keeps it from being judged.
func (x *index) placementOf(id uint64, t time.Duration, s Scale) (replicas []string, fewest int, excuse Excuse, judged bool) {
	return x.placementWith(id, t, s, x.placementFault)
}

// placementWith is placementOf with the faults that excuse the timer in
// [a, b] given by faultOf (placementFault for the snapshots; a resync's
// own for checkResynced).
func (x *index) placementWith(id uint64, t time.Duration, s Scale, faultOf func(id uint64, a, b time.Duration) (Fault, bool)) (replicas []string, fewest int, excuse Excuse, judged bool) {
	var last *Op
	for i, op := range x.byTimer[id] {
		if op.Invoke > t {
			break
		}
		switch {
		case op.Outcome == Unknown:
			return nil, 0, ExUnknownWrite, false
		case op.Invoke <= t && effReturn(op)+x.o.FaultSettle >= t:
			return nil, 0, ExInMotion, false
		case op.Outcome == OK:
			last = &x.byTimer[id][i]
		}
	}
	if last == nil {
		return nil, 0, "", false
	}
	for _, op := range x.byTimer[id] {
		if op.Seq != last.Seq && op.Outcome != Failed && op.Invoke <= effReturn(*last) && last.Invoke <= effReturn(op) {
			// Two writes ran at once: either may have been applied last.
			return nil, 0, ExSuperseded, false
		}
	}
	from := s.Start - x.o.FaultSettle
	if last.Kind == Delete {
		from = x.byTimer[id][0].Invoke
	}
	var d *def
	if last.Kind != Delete {
		if d = x.byOpaque[last.Spec.Opaque]; d == nil {
			return nil, 0, "", false
		}
		if d.lossFrom <= t {
			return nil, 0, x.lossExcuse(), false // crashes may have taken every copy
		}
	}
	if f, ok := faultOf(id, from, t); ok {
		return nil, 0, excuseOf(f), false
	}
	if last.Kind == Delete {
		return nil, 0, "", true
	}
	lo, hi := d.due(d.op.Spec.Pops())
	switch {
	case t > hi+x.rankBound(d)+x.slack():
		return nil, 0, "", false // finished: no longer live
	case t >= lo-x.rankBound(d)-x.slack():
		return nil, 0, ExInMotion, false // its last pop turns it to tombstones
	}
	replicas = Replicas(s.After, id, d.rf)
	return replicas, min(d.rfMin, len(replicas)), "", true
}

// placementFault is the first fault that touched timer id in [a, b], or
// kept from a replica a write of it that no repair round can have mended
// by a: one of the faults attributed to its
// definitions (attribution.go), but for the scales that move it and
// messages lost without naming it.
func (x *index) placementFault(id uint64, a, b time.Duration) (Fault, bool) {
	var spans []*span
	for _, d := range x.defs {
		if d.timer == id {
			spans = slices.AppendSeq(spans, d.spans())
		}
	}
	sort.SliceStable(spans, func(i, j int) bool { return spans[i].from < spans[j].from })
	for _, op := range x.byTimer[id] {
		// A write a fault kept from a replica leaves it without the
		// write until a repair round mends it: one that comes after
		// the write and after the faults on it ended (their settle
		// time included), RepairRound at the latest. A write mended so
		// before the window excuses nothing there.
		at, hit := x.writeHit(op)
		if !hit || at > b {
			continue
		}
		until := effReturn(op) + x.o.FaultSettle
		for _, s := range spans {
			if s.from <= effReturn(op) && s.to >= op.Invoke {
				until = max(until, s.to)
			}
		}
		if a-RepairRound <= until { // until may be never: no overflow
			return Fault{At: at, Kind: "write"}, true
		}
	}
	for _, s := range spans {
		f := s.fault
		if f.Kind == ScaleUp || f.Kind == ScaleDown || isMessageFault(f.Kind) && f.Timer == 0 || isCallbackFault(f.Kind) {
			continue
		}
		to := s.to
		if lastingRefusal(f) {
			// Its receiver refused every copy until the condition
			// ended (Fault.Until), and takes the timer from the
			// first repair round after: RepairRound at the latest.
			to += RepairRound
		}
		if s.from <= b && to >= a {
			return f, true
		}
	}
	return Fault{}, false
}

// lastingRefusal reports a refusal that outlasts its message (Fault.Until): a
// replica refused a record of a version dated ahead of its clock, and
// refuses every copy of it until its clock reaches that date.
func lastingRefusal(f Fault) bool { return f.Kind == Lost && f.Until > f.At }

// isCallbackFault reports the faults of a callback endpoint: they change
// whether and when a pop is delivered, never which nodes hold the timer
// (a failed or slow callback costs that pop on that replica and the copy
// goes on, docs/design.md 4.7), so they excuse no placement.
func isCallbackFault(k FaultKind) bool {
	return k == SlowCallback || k == FailCallback
}
