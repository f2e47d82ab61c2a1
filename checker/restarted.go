package checker

import (
	"fmt"
	"slices"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// G4 at a restart from disk (docs/design.md 5.2, scenarios/README.md
// N78): a node that restarts on its records read back holds, of each
// timer whose turn at a pop came while it was down, the progress of
// before its crash; the notices of the pops the other replicas made
// meanwhile never reached it. It waits one backup skew for their word
// (the start-up resync's pages, their notices) before it pops such a
// pop, so it does not make again a pop another replica made and can
// tell it of.
//
// The rule judges only where nothing but the node's own crash could
// keep that word from it: a pop the restarted node delivered within the
// skew after its restart (less a margin for the network and the clocks),
// of a sequence number another node delivered, answered 2xx, more than
// every rank's turn before the restart, of a definition live well past
// the restart that no later write replaced by then, when no fault but
// the node's own crash and disk faults touched the definition from that
// delivery to the restarted node's, and no scale ran. Such a pop is one
// the node made before it could hear, a duplicate nothing excuses.
func (x *index) checkRestartWord() []Violation {
	return x.judgeRestarts(x.restartWord)
}

// judgeRestarts runs judge on every definition for every restart from
// disk (a restart that found its disk wiped holds nothing of before), in
// a history with storage, and returns the violations it found.
func (x *index) judgeRestarts(judge func(d *def, n string, r time.Duration) (Violation, bool)) []Violation {
	if !x.h.Storage {
		return nil
	}
	var vs []Violation
	for _, f := range x.h.Faults {
		if f.Kind != Restart || len(f.Nodes) == 0 || x.wipedAt(f.Nodes[0], f.At) {
			continue
		}
		for _, d := range x.defs {
			if v, bad := judge(d, f.Nodes[0], f.At); bad {
				vs = append(vs, v)
			}
		}
	}
	return vs
}

// restartMargin is what the rule leaves of the backup skew after a
// restart: a pop the node waited for sends in the skew's last instants,
// on a clock that may run apart from true time.
const restartMargin = 500 * time.Millisecond

// restartWord judges d's pops by node n restarted from disk at r.
func (x *index) restartWord(d *def, n string, r time.Duration) (Violation, bool) {
	end := d.op.Invoke + wire.Timer{Interval: d.op.Spec.Interval, RepeatFor: d.op.Spec.RepeatFor}.Stated().RepeatFor
	if end < r+time.Minute || d.cutoff < r+x.o.ReplicaSkew {
		return Violation{}, false
	}
	before := r - x.o.ReplicaSkew*time.Duration(x.ranks(d)) - time.Second
	for _, seq := range sortedSeqs(d) {
		var made *Pop
		for _, i := range d.bySeq[seq] {
			p := &x.h.Pops[i]
			switch {
			case p.Node != n && p.At < before && p.Answered >= 200 && p.Answered <= 299:
				if made == nil {
					made = p
				}
			case made != nil && p.Node == n && p.At >= r && p.At < r+x.o.ReplicaSkew-restartMargin:
				if x.restartFaulted(d, n, made.At, p.At) {
					return Violation{}, false
				}
				return x.violation("G4", p.At, d, fmt.Sprintf(
					"pop %d delivered by %s at %v, %v after its restart from disk at %v, though %s delivered it at %v: got a pop before the word of the other replicas could come, want none (a restarted replica waits %v for it)",
					seq, n, p.At, p.At-r, r, made.Node, made.At, x.o.ReplicaSkew)), true
			}
		}
	}
	return Violation{}, false
}

// G5 at a restart from disk (scenarios/README.md N81): a node that
// restarts on its records read back holds the definitions it held at its
// crash, and a write that replaced one while it was down (an update, a
// delete) never reached it. The nodes that took that write keep its
// tombstone for the node (its replication to the node went unanswered:
// Lacking, docs/design.md 4.15) and push it to the node as soon as its
// start-up resync asks (node's markRepopulating), within the backup skew
// the node waits before it pops what fell due while it was down. So the
// node never pops the replaced definition.
//
// The rule judges only where nothing but the node's own crash could keep
// that word from it: a pop of definition d the restarted node delivered
// after its restart, when the one later write of d's timer returned OK a
// backup skew before the restart and within MaxLackingHold (1 h) of it
// and placed the timer on the node, no fault but the node's own crash
// touched d or that write's definition from the write to the pop, and
// no scale ran. The
// checker's rule that a repair round mends a replica a write missed
// (repairRoundDue) allows the pop up to a round after the restart; a
// restart from disk has a quicker promise, and this is it.
func (x *index) checkRestartReplaced() []Violation {
	return x.judgeRestarts(x.restartReplaced)
}

// maxLackingHold is the node's MaxLackingHold: how long past its life a
// tombstone is kept for a replica that may lack it.
const maxLackingHold = time.Hour

// restartReplaced judges d's pops by node n restarted from disk at r.
func (x *index) restartReplaced(d *def, n string, r time.Duration) (Violation, bool) {
	if d.shared {
		return Violation{}, false
	}
	// The one write after d, before the pop, that may have changed the
	// timer: one that returned OK a backup skew before the restart, and
	// placed the timer on n (a delete, or an update whose factor places
	// it there), so that its holders keep it for n. A later write placed
	// elsewhere takes the mark with it (node's inheritLacking keeps only
	// the replicas the newer placement names), and n's first pop of d is
	// then the one that repairs it, as G5 allows
	// (TestDeleteKeptFromAReplicaAllowsItsRepairAfterALaterWrite).
	var w *Op
	later := 0
	for i, op := range x.byTimer[d.timer] {
		if op.Invoke <= d.op.Invoke || op.Outcome == Failed {
			continue
		}
		later++
		if w == nil {
			w = &x.byTimer[d.timer][i]
		}
	}
	if w == nil || later != 1 || w.Outcome != OK || w.Return >= r-x.o.ReplicaSkew || w.Return <= r-maxLackingHold ||
		w.Kind != Delete && (w.Spec.ReplicationFactor == 0 || !slices.Contains(Replicas(x.h.Members, d.timer, w.Spec.ReplicationFactor), n)) {
		return Violation{}, false
	}
	for _, p := range x.h.Pops {
		if p.Node != n || p.At < r || p.Opaque != d.op.Spec.Opaque {
			continue
		}
		if x.crashOnlyBut(d, n, w.Invoke, p.At) {
			return Violation{}, false
		}
		if nd := x.byOpaque[w.Spec.Opaque]; w.Kind != Delete && nd != nil && x.crashOnlyBut(nd, n, w.Invoke, p.At) {
			return Violation{}, false
		}
		return x.violation("G5", p.At, d, fmt.Sprintf(
			"pop %d of the replaced definition delivered by %s at %v, %v after its restart from disk at %v, though op %d (%s) returned OK at %v, while it was down: got a pop of the old definition, want none (the nodes that took the write push its tombstone to a restarted replica as it asks for its first pages)",
			p.Seq, n, p.At, p.At-r, r, w.Seq, w.Kind, w.Return)), true
	}
	return Violation{}, false
}

// crashOnlyBut reports whether something but n's own crash touched d
// from a to b, or a scale ran then. A disk fault of n counts: a write n
// took and its disk lost leaves no holder marking n as may lack it.
func (x *index) crashOnlyBut(d *def, n string, a, b time.Duration) bool {
	if x.scaleDuring(a, b) {
		return true
	}
	return x.touchedBut(d, a, b, func(s *span) bool {
		return s.fault.Kind == Crash && slices.Equal(s.fault.Nodes, []string{n})
	})
}

// restartFaulted reports whether something but n's own crash and disk
// faults touched d from a to b, or a scale ran then: the word of the
// pops made may not have reached n, or its holder lost it.
func (x *index) restartFaulted(d *def, n string, a, b time.Duration) bool {
	if x.scaleDuring(a, b) {
		return true
	}
	return x.touchedBut(d, a, b, func(s *span) bool {
		switch s.fault.Kind {
		case Crash, DiskFull, DiskLie, DiskCorrupt:
			return slices.Equal(s.fault.Nodes, []string{n})
		}
		return false
	})
}

// scaleDuring reports whether a scale ran in [a, b], settle time
// included: one that never completed runs to the end of the history.
func (x *index) scaleDuring(a, b time.Duration) bool {
	for _, s := range x.h.Scales {
		end := x.end
		if s.End != 0 {
			end = s.End + x.o.FaultSettle
		}
		if s.Start <= b && end >= a {
			return true
		}
	}
	return false
}

// wipedAt reports whether node n's restart at r found its disk wiped
// (DiskWiped): it holds nothing of before.
func (x *index) wipedAt(n string, r time.Duration) bool {
	for _, f := range x.h.Faults {
		if f.Kind == DiskWiped && f.At == r && slices.Contains(f.Nodes, n) {
			return true
		}
	}
	return false
}
