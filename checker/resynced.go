package checker

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// G6 at each resync's end (docs/design.md 4.8, the resync): a node's
// resync asks every member, itself included, for the timers placed on it
// under the new view, takes each one offered, and completes only once
// every peer answered every page, every message it sent was answered and
// it refused no record. So when a resync to a scale's view completes, its
// node holds live every timer it replicates under the new membership that
// some member held live as it answered: every timer acknowledged before
// the scale began, no later write of it since, and no fault on it since
// that may have kept it from every member the node asked.
//
// G6 at a scale's completion judges the placement once every node has
// finished; a page that left a timer out there is mended by the old
// holders' hand-off (at their own resync's end and every repair round)
// before the operator looks, and the pop due in between is made late by
// the old holder, which the scale's window excuses (mutations/README.md,
// "G6 and the placement mutations"). This rule judges each node at its
// own moment, which the simulator records as the node's log says it
// (History.Resyncs, sim/resynced.go).
//
// Its domain: a node of the scale's new membership (a leaving node
// replicates nothing), and a timer whose every write returned, with its
// settle time, before the scale started, the last one OK and not a
// delete, whose replicas under the new membership, for the fewest copies
// its factor may have, include that node. A write in the scale itself
// may land on a member after that member's page went past it, and the
// resync owes it nothing (repair and hand-off bring it). Within the
// domain, a timer is judged unless an excuse covers it at that moment,
// each named and counted: G6's own that do not depend on faults
// (placementWith): a write whose outcome is unknown, two writes at once,
// its last pop due around the finish (a tombstone by then: in-motion),
// crashes that may have taken every copy (copies-lost, disk-lost); and
// of the faults from the scale's start less FaultSettle to the finish,
// only those that may keep a timer from a node whose every page was
// answered (resyncFault): a crash, restart or disk fault of the node
// itself, a clock fault on the timer's nodes, a lasting refusal of a
// version ahead by the node (fault-window/<kind>), and an ID two timers
// may share (shared-id: the twins of a misconfigured plan issued it
// twice, and a node refuses one of the two records as a collision). A cut, pause or clog
// between the node and a holder, a crash of one holder or a lost page
// excuses nothing here: the resync retries a page until it is answered
// or gives the peer up (then it is incomplete and not recorded), and
// every other member that held the timer offered it. A write kept from
// the node itself before the scale excuses it (fault-window/write) until
// a repair round after it (writeKeptFrom): the node was a replica the
// write missed, which repair mends, and an old holder hands its copy
// off to the replicas the change added only.

// checkResynced judges, at each resync's completion, the timers its node
// replicates (History.Resyncs).
func (x *index) checkResynced() ([]Violation, placedCount) {
	var vs []Violation
	cov := placedCount{excused: map[Excuse]int{}}
	for _, r := range x.h.Resyncs {
		if r.Scale < 0 || r.Scale >= len(x.h.Scales) {
			continue
		}
		s := x.h.Scales[r.Scale]
		if !slices.Contains(s.After, r.Node) {
			continue
		}
		holds := map[uint64]bool{}
		for _, t := range r.Live {
			holds[t] = true
		}
		for _, id := range x.timersAt(r.At) {
			if !x.resyncOwes(id, r, s) {
				continue
			}
			if x.writeKeptFrom(id, r) {
				cov.excused[ExFault+"/write"]++
				continue
			}
			replicas, _, excuse, judged := x.placementWith(id, r.At, s, func(id uint64, a, b time.Duration) (Fault, bool) {
				return x.resyncFault(id, r.Node, a, b)
			})
			switch {
			case excuse != "":
				cov.excused[excuse]++
				continue
			case !judged:
				continue
			}
			cov.judged++
			if !holds[id] {
				vs = append(vs, Violation{Guarantee: "G6", At: r.At, Timer: id, Message: fmt.Sprintf(
					"at %v, %s's resync for the %s that started at %v completed without timer %016x, acknowledged before the scale, which it replicates under the new membership: got missing, want held live (replicas %v)",
					r.At, r.Node, s.Kind, s.Start, id, replicas)})
			}
		}
	}
	return vs, cov
}

// writeKeptFrom reports whether a fault kept the last write of timer id
// before r's scale from r's node, less than a repair round (after the
// write and its faults settled) before r completed. A replica that
// missed a write before a scale misses it as replicas miss each other
// without one: an old holder hands its copy off to the replicas the
// change added only (node/repair.go handOffTargets), and repair, not the
// resync, brings it to the others. Fresh seed 9540836 (scenarios/
// README.md C69): a create's replication to its primary was lost, the
// other replica handed the timer off to the node a scale-up added and
// kept its own copy as moved away, and the primary's resync, whose page
// from the new node came before the hand-off, completed without it. A
// fault on the node after the write, until that round, delays the round
// as the write's own faults do.
func (x *index) writeKeptFrom(id uint64, r Resynced) bool {
	var last *Op
	for i, op := range x.byTimer[id] {
		if op.Invoke > r.At {
			break
		}
		if op.Outcome == OK {
			last = &x.byTimer[id][i]
		}
	}
	if last == nil || last.Kind == Delete {
		return false
	}
	d := x.byOpaque[last.Spec.Opaque]
	if d == nil || !x.writeMissed(*last, d)[r.Node] {
		return false
	}
	// The faults of the write delay the round that mends it, and so does
	// each later fault on the node that begins before that round: it may
	// keep the node from every holder (fresh seed 9646229, scenarios/
	// README.md C78: partitions cut the node from the one holder for 35
	// of the 40 s between the write and the scale). A span may last for
	// ever (never: a scale-down's), so the round is added on the other
	// side: settled+RepairRound overflowed to a time before every
	// resync, and the write that missed the node excused nothing (fresh
	// seed 9822089, scenarios/README.md C81).
	settled := effReturn(*last) + x.o.FaultSettle
	for sp := range d.spans() {
		if sp.from-RepairRound > settled {
			break
		}
		if sp.from <= effReturn(*last) || slices.Contains(sp.fault.Nodes, r.Node) || slices.Contains(sp.fault.Peers, r.Node) {
			settled = max(settled, sp.to)
		}
	}
	return r.At-RepairRound <= settled
}

// resyncOwes reports whether timer id is in the domain of r's resync:
// every write of it invoked by r's end returned, with its settle time,
// before scale s started, the last one that changed it was an OK create
// or update, and r's node is among its replicas under s.After for the
// fewest copies its factor may have.
func (x *index) resyncOwes(id uint64, r Resynced, s Scale) bool {
	var last *Op
	for i, op := range x.byTimer[id] {
		if op.Invoke > r.At {
			break
		}
		if op.Outcome != OK {
			continue // a failed write changed nothing; G6 excuses an unknown one
		}
		if effReturn(op)+x.o.FaultSettle >= s.Start {
			return false
		}
		last = &x.byTimer[id][i]
	}
	if last == nil || last.Kind == Delete {
		return false
	}
	d := x.byOpaque[last.Spec.Opaque]
	if d == nil {
		return false
	}
	replicas := Replicas(s.After, id, d.rf)
	return slices.Contains(replicas[:min(d.rfMin, len(replicas))], r.Node)
}

// resyncFault is the first fault in [a, b] that may have kept timer id
// from node n's completed resync though a member held it: one on n
// itself that takes or spoils what it holds (a crash, a restart, a disk
// fault), a clock fault on the timer's nodes (a version dated ahead of
// n's clock is refused, 4.2), a refusal of a version ahead that lasts
// (Fault.Until) on a message to n, a request about the timer that n
// refused as dated outside its age window (its clock apart from the
// sender's past the skew it allows, 4.13: it refuses every peer's record
// alike, its hand-offs and pass-ons included; fresh seed 9539326,
// scenarios/README.md C68) or at its limit of timers or bytes (it holds
// no new record until it has room; fresh seed 9592514, C76), or an ID
// two timers may share (a
// node refuses the other's record as a collision, 4.2). Faults elsewhere (a cut, a pause or a
// clog between n and a holder, a lost page) only delay the pages, and a
// resync that completed had every page answered.
func (x *index) resyncFault(id uint64, n string, a, b time.Duration) (Fault, bool) {
	for _, d := range x.defs {
		if d.timer != id {
			continue
		}
		for s := range d.spans() {
			f := s.fault
			to := s.to
			if lastingRefusal(f) {
				to += RepairRound
			}
			if s.from > b || to < a {
				continue
			}
			switch f.Kind {
			case ClockJump, ClockDrift, sharedIDFault:
				return f, true
			case Crash, Restart, DiskWiped, DiskCorrupt, DiskFull, DiskLie:
				if slices.Contains(f.Nodes, n) {
					return f, true
				}
			case Lost:
				if slices.Contains(f.Peers, n) && (lastingRefusal(f) || f.Timer == id && (strings.HasPrefix(f.Detail, RefusedDatedDetail) || strings.HasPrefix(f.Detail, RefusedAtLimitDetail))) {
					return f, true
				}
			}
		}
	}
	return Fault{}, false
}
