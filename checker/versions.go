package checker

import (
	"fmt"
	"maps"
	"slices"
)

// G6 by version: at the end of a run every node that holds a timer live
// holds a definition that may be the timer's last (History.Held's Defs,
// the opaque of each live record), never one a later write surely
// replaced, and never a timer an acknowledged delete surely removed. The
// placement half of G6 (converge.go) judges who holds a timer after a
// scale, not which definition: a replica that missed an update, and that
// repair never brought it, passed, and only G5 saw it if and when it
// popped.
//
// A write S surely replaced definition d when S returned OK and began
// after d's write returned, unless the order of their versions may still
// let d win (may-reorder: a fault hit a write after d and one replica
// acknowledges each; clock-ahead: d's proxy's clock ran ahead further
// than the gap), as G5 judges the same pair (checkSticky). A write whose
// outcome is unknown, or that ran at the same time as d, may be the last
// one applied: d then passes under that excuse (unknown-outcome,
// superseded), counted.
//
// A replica holding d after S is judged as G5 judges its stale pop at the
// end of the history (repairRoundDue): every fault on d's nodes, links
// and messages had ended, with S's return and their settle time, more
// than a repair round (repairRoundBound, about 41 s) before the end, and
// a replica of d at the holder's site other than itself surely took S
// and kept it, so its repair round compared with the holder and pushed
// S's record. Otherwise the holding is excused: in-motion (S returned
// too recently), fault-window/<kind> (the fault on d that ended last
// ended too recently), copies-lost (no replica surely kept S), or
// worst-rank (several sites and a placement the history leaves to the
// node: which replicas took S is unknown). The simulator lets a run go
// on for a minute after its liveness phase began (sim's genQuiet), so
// that a timer the faults touched is judged.

// versionCount is the version half of G6's coverage: live (node, timer)
// holdings judged strictly at the end of the run.
type versionCount struct {
	judged  int
	excused map[Excuse]int
}

// checkVersions judges the definitions the nodes held live at the end of
// the run (the last snapshot, at the history's end).
func (x *index) checkVersions() ([]Violation, versionCount) {
	cov := versionCount{excused: map[Excuse]int{}}
	var held *Held
	for i := range x.h.Held {
		if h := &x.h.Held[i]; h.Defs != nil && h.At >= x.h.End {
			held = h
		}
	}
	if held == nil || x.h.End == 0 {
		return nil, cov
	}
	var vs []Violation
	for _, n := range slices.Sorted(maps.Keys(held.Defs)) {
		defs := held.Defs[n]
		for _, t := range slices.Sorted(maps.Keys(defs)) {
			d := x.byOpaque[defs[t]]
			if d == nil || d.op.Timer != t || d.shared || d.op.Outcome == Failed {
				continue // a definition the history cannot tell apart, or refused (G5 judges its pops)
			}
			excuse, stale := x.heldVersion(d, n)
			switch {
			case stale != nil:
				vs = append(vs, x.violation("G6", held.At, d, fmt.Sprintf(
					"%s still holds the definition live at the end of the run, which the %s %q (op %d) at %v replaced: got the old definition held, want the newer one or none",
					n, stale.Kind, stale.Spec.Opaque, stale.Seq, stale.Invoke)))
			case excuse != "":
				cov.excused[excuse]++
			default:
				cov.judged++
			}
		}
	}
	return vs, cov
}

// heldVersion judges node n holding d live at the end of the run: the
// write that surely replaced it and repair should have brought n, or
// the excuse that allows n to hold it ("" when d may rightly be the
// timer's last definition with no excuse).
func (x *index) heldVersion(d *def, n string) (Excuse, *Op) {
	ops := x.byTimer[d.op.Timer]
	excuse := Excuse("")
	for i, s := range ops {
		if s.Seq == d.op.Seq || s.Outcome == Failed {
			continue
		}
		switch {
		case s.Outcome == Unknown:
			if s.Invoke > d.op.Invoke {
				excuse = ExUnknownWrite // it may have been applied last
			}
			continue
		case effReturn(d.op) >= s.Invoke:
			if s.Invoke > d.op.Invoke || effReturn(s) >= d.op.Invoke {
				excuse = ExSuperseded // the two ran at once
			}
			continue
		}
		hit := x.replacedHit(ops[:i+1], d)
		switch {
		case hit && x.mayOrderBelow(s, d):
			excuse = ExMayReorder
			continue
		case x.clockAhead(d, s):
			excuse = ExClockAhead
			continue
		}
		why, due := x.repairedByEnd(s, d, n)
		if due {
			return "", &ops[i]
		}
		excuse = why
	}
	return excuse, nil
}

// repairedByEnd reports whether a repair round surely brought node n,
// holding d, the record of write s, which replaced d, by the end of the
// run (repairRoundDue's reasoning at the history's end); why names what
// excuses n otherwise.
func (x *index) repairedByEnd(s Op, d *def, n string) (why Excuse, due bool) {
	heal, why := effReturn(s)+x.o.FaultSettle, ExInMotion
	for sp := range d.spans() {
		if sp.from > x.end {
			break
		}
		to := sp.to
		if lastingRefusal(sp.fault) {
			to += RepairRound // refused until then, mended by a round after
		}
		if to > heal {
			heal, why = to, excuseOf(sp.fault)
		}
	}
	switch {
	case x.end-x.repairRoundBound() <= heal: // heal may be never (a scale that never ended)
		return why, false
	case !d.placed && len(x.h.Sites) > 1:
		return ExWorstRank, false // which replicas took s, at which site, is unknown
	case !x.keptBy(s, d, n, x.end, true):
		return x.lossExcuse(), false // no replica surely kept s to push it
	}
	return "", true
}
