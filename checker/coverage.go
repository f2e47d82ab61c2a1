package checker

import (
	"fmt"
	"sort"
	"strings"
)

// Excuse names one allowance the checker makes: a reason a due pop or a
// write is not held strictly to a guarantee. Every excuse is counted per
// run (Coverage.Excused), so that a checker which excuses most of a run
// shows it.
type Excuse string

// The checker's excuses. Each comment is the reason the allowance is
// correct; self-tests show each is needed (a history it rightly excuses)
// and bounded (the same history with the fault moved elsewhere fails).
const (
	// ExFault: a fault touched the timer's replicas, the nodes that took
	// its writes, their links, its callback endpoint or a message about it
	// around the pop (FaultSettle included), named by its kind
	// ("fault-window/crash"). The pop may be delivered twice (G4). G2 and
	// G3 are still judged, at the rank of the first live replica: they
	// count as excused by it only when the placement is unknown.
	ExFault Excuse = "fault-window"
	// ExUnknownWrite: the write's answer was lost (timeout, 5xx), so it may
	// have taken effect or not; its pops are not owed (G2) and its effect
	// on later pops is checked only by the porcupine model.
	ExUnknownWrite Excuse = "unknown-outcome"
	// ExSuperseded: a later write on the timer may have replaced the
	// definition before the pop's deadline, so the pop is not owed.
	ExSuperseded Excuse = "superseded"
	// ExCopiesLost: a fault may have removed every copy before the pop
	// fell due (as many replicas as hold it crashed).
	ExCopiesLost Excuse = "copies-lost"
	// ExDiskLost: in a history with storage, where a crash takes no
	// copy, disk faults did: a disk that lied or was full before the
	// crash, or was found corrupt and wiped at the restart (diskLost).
	ExDiskLost Excuse = "disk-lost"
	// ExHeld: a pause or clog held the write's replication, the copy
	// brought back to a replica that had lost it, or the copy a scale
	// brought to a replica it placed the timer on, and a replica applies
	// the start-time-delta when the message arrives, so every replica
	// that got it late pops late by as much (heldFor, heldRefill,
	// heldByScale).
	ExHeld Excuse = "held-replication"
	// ExHeldInbound: the write's replication waited in its receiver's
	// inbound queue for the receiver's overloaded CPU (a Queued fault),
	// so that receiver's copy starts late by no more than the message's
	// time from the write's answer to its processing, and its pops are
	// late by as much until a notice hands it the true start (heldFor,
	// queuedHeld, heldAt).
	ExHeldInbound Excuse = "held-inbound"
	// ExOvertook: the pop's first delivery came past its bound, from a
	// replica that popped at its own rank, ahead of another replica's
	// delivery of the same pop that waited for its sender's CPU or in its
	// endpoint's queue and arrived within its bound widened by that wait
	// (sendWait): the pop was made in time and the wait is the load
	// model's; the earlier delivery only overtook it (overtaken).
	ExOvertook Excuse = "overtook-waited"
	// ExWorstRank: with a fault around, G3 allows the worst replica rank,
	// as the history does not say which replica was live.
	ExWorstRank Excuse = "worst-rank"
	// ExAllDown: as many replicas as hold the timer were down or cut off
	// around the pop, so no lateness bound applies (G3).
	ExAllDown Excuse = "all-replicas-down"
	// ExAllFailed: every replica able to make the pop tried it once and
	// its callback failed (refused, or answered after the timeout): one
	// attempt per replica per pop, so nobody owes it again (design.md
	// 4.7). It covers that pop only; the next is owed as ever.
	ExAllFailed Excuse = "all-replicas-failed"
	// ExLinTaint: a fault touched a write of the timer, so the porcupine
	// model leaves out its later pops (a stale replica cut off from the
	// write may rightly pop the old definition until repaired).
	ExLinTaint Excuse = "lin-taint"
	// ExMayReorder: two writes of one timer from proxies with spread
	// clocks, both touched by faults, with rf <= 2: versions may order the
	// later write below the earlier one (scenarios/README.md N4).
	ExMayReorder Excuse = "may-reorder"
	// ExClockAhead: a write's version ordered below an earlier write's
	// because the earlier write's proxy had a clock stepped or drifted
	// further ahead than the gap between them, with rf <= 2: the
	// earlier definition rightly wins (clockAhead), beyond what G5 can
	// promise with clocks past their tolerance. The later write does not
	// stick against it (G5), and its pops are not owed (G2, G3, G7;
	// counted, like superseded, as not due: earlierAhead).
	ExClockAhead Excuse = "clock-ahead"
	// ExSharedID: two acknowledged creates share the timer's ID (two nodes
	// configured with one instance number; scenarios/README.md I2).
	ExSharedID Excuse = "shared-id"
	// ExSiteLag: a fault up to SiteLag after a write returned, on another
	// site's node or a message to it, may have kept the write from that
	// site: a node forwards a write to the other sites without waiting,
	// and each site's relay places it after the client has its answer.
	// Such a site may pop the old definition until a notice repairs it.
	ExSiteLag Excuse = "site-lag"
	// ExInboundKept: a write's replication waited in its receiver's
	// inbound queue for its overloaded CPU past the write's stick limit,
	// or until the receiver crashed, which took it unprocessed: that
	// replica did not hold the write until then, or at all, as if a fault
	// had kept it from the replica while the write ran, and may pop the
	// old definition until it is repaired (inboundKept).
	ExInboundKept Excuse = "inbound-kept"
	// ExForgot: a replica attempted a pop twice (G4) after it may have
	// forgotten the first attempt: it crashed between the two (a
	// restarted node holds nothing of what it did), a scale-down stopped
	// it between the two (it came back by a later scale-up as a new
	// node), or the timer's
	// tombstone had expired on its clock by the second (a replica paused
	// meanwhile may bring the finished timer back with its stale copy).
	ExForgot Excuse = "forgot"
	// ExPastEnd: the pop's bound (with the worst clock lag) ends after
	// the history does, so that a delivery still owed cannot be told
	// from a lost one (G2).
	ExPastEnd Excuse = "past-end"
	// ExInMotion: when G6 looked at where a timer is held, a write of it
	// was running or had just returned, or its last pop was due (the
	// replicas turn their copies to tombstones one after the other): its
	// copies were changing hands.
	ExInMotion Excuse = "in-motion"
)

// Phase splits a run at the liveness phase.
type Phase int

// Phases.
const (
	Safety Phase = iota
	Liveness
)

// Coverage is how much of a run the checker held strictly to each
// guarantee, and what excused the rest.
type Coverage struct {
	// Due counts the due pops per phase: pops of an acknowledged or
	// unknown write whose deadline passed before the end of the history.
	Due [2]int
	// Strict counts, per guarantee ("G2", "G3", "G4") and phase, the due
	// pops held to it with no excuse.
	Strict map[string]*[2]int
	// Writes counts the writes (not refused) and StrictWrites those held
	// to G5 with no excuse: part of the porcupine history before any
	// taint, and for an OK update or delete, checked by the stickiness
	// rule.
	Writes, StrictWrites int
	// Placements counts the (timer, snapshot) pairs G6 held strictly:
	// where the nodes held the timer live once a scale completed
	// (History.Held); the excused ones are counted in Excused.
	Placements int
	// Versions counts the (node, timer) live holdings G6 held strictly
	// by version at the end of the run (checkVersions).
	Versions int
	// Told counts the deliveries of duplicated pops, excused by a fault
	// around the pop, whose replica had been handed a record of the
	// definition before it made them: held to that record's word that
	// the pop was made (checkTold), which the fault does not excuse.
	Told int
	// Resynced counts the (resync, timer) pairs G6 held strictly at a
	// resync's completion: the node held live the timer it replicates
	// (checkResynced).
	Resynced int
	// Excused counts, per excuse, the (due pop or write, guarantee) pairs
	// it covered.
	Excused map[Excuse]int
}

func newCoverage() Coverage {
	return Coverage{Strict: map[string]*[2]int{"G2": {}, "G3": {}, "G4": {}}, Excused: map[Excuse]int{}}
}

// Add sums o into c.
func (c *Coverage) Add(o Coverage) {
	if c.Strict == nil {
		*c = newCoverage()
	}
	for p := range c.Due {
		c.Due[p] += o.Due[p]
	}
	for g, n := range o.Strict {
		if c.Strict[g] == nil {
			c.Strict[g] = &[2]int{}
		}
		for p := range n {
			c.Strict[g][p] += n[p]
		}
	}
	c.Writes += o.Writes
	c.StrictWrites += o.StrictWrites
	c.Placements += o.Placements
	c.Versions += o.Versions
	c.Told += o.Told
	c.Resynced += o.Resynced
	for e, n := range o.Excused {
		c.Excused[e] += n
	}
}

// Share returns the share of due pops of phase p held strictly to g.
func (c Coverage) Share(g string, p Phase) float64 {
	if c.Due[p] == 0 || c.Strict[g] == nil {
		return 1
	}
	return float64(c.Strict[g][p]) / float64(c.Due[p])
}

// WriteShare returns the share of writes held strictly to G5.
func (c Coverage) WriteShare() float64 {
	if c.Writes == 0 {
		return 1
	}
	return float64(c.StrictWrites) / float64(c.Writes)
}

// String prints the judged coverage and the excuses, largest first.
func (c Coverage) String() string {
	var b strings.Builder
	for p, name := range []string{"safety", "liveness"} {
		fmt.Fprintf(&b, "judged %s phase: %d due pops, G2 %.1f%%, G3 %.1f%%, G4 %.1f%%\n", name, c.Due[p],
			100*c.Share("G2", Phase(p)), 100*c.Share("G3", Phase(p)), 100*c.Share("G4", Phase(p)))
	}
	fmt.Fprintf(&b, "judged writes: %d, G5 %.1f%%\n", c.Writes, 100*c.WriteShare())
	if c.Placements > 0 {
		fmt.Fprintf(&b, "judged placements after scaling (G6): %d\n", c.Placements)
	}
	if c.Versions > 0 {
		fmt.Fprintf(&b, "judged definitions held at the end (G6): %d\n", c.Versions)
	}
	if c.Told > 0 {
		fmt.Fprintf(&b, "judged duplicates after a record's word (G4): %d\n", c.Told)
	}
	if c.Resynced > 0 {
		fmt.Fprintf(&b, "judged timers held at a resync's completion (G6): %d\n", c.Resynced)
	}
	ex := make([]Excuse, 0, len(c.Excused))
	for e := range c.Excused {
		ex = append(ex, e)
	}
	sort.Slice(ex, func(i, j int) bool {
		if c.Excused[ex[i]] != c.Excused[ex[j]] {
			return c.Excused[ex[i]] > c.Excused[ex[j]]
		}
		return ex[i] < ex[j]
	})
	b.WriteString("excused:")
	for _, e := range ex {
		fmt.Fprintf(&b, " %s=%d", e, c.Excused[e])
	}
	b.WriteString("\n")
	return b.String()
}

// coverage tallies the verdicts the checks gave (record, recordWrite):
// per due pop, G2, G3 and G4; per write, G5. A due pop is one of a write
// that did not fail whose window plus the healthy slack closed before the
// end of the history; a pop a later write may have replaced is not due
// (its superseding excuse is counted). A pop never delivered has no
// delivery whose lateness G3 could judge: its G3 verdict is its G2 one (a
// lost pop is the latest there is).
func (x *index) coverage() Coverage {
	c := newCoverage()
	for _, d := range x.defs {
		if d.op.Outcome == Failed {
			continue
		}
		for k := 1; k <= d.op.Spec.Pops(); k++ {
			lo, hi := d.due(k)
			if hi+x.slack() > x.end {
				break // not due within the history
			}
			p := Safety
			if x.tl.liveFrom > 0 && lo >= x.tl.liveFrom {
				p = Liveness
			}
			pv := x.verdicts[popKey{d, k}]
			if pv == nil || !pv.set[colG2] || !pv.set[colG4] {
				panic(fmt.Sprintf("checker: pop %d of op %d due by %v has no G2 or G4 verdict", k, d.op.Seq, hi))
			}
			if !pv.set[colG3] {
				pv.v[colG3] = pv.v[colG2]
			}
			if e := pv.v[colG2].excuse; !pv.v[colG2].violated && (e == ExSuperseded || e == ExMayReorder || e == ExClockAhead) {
				c.Excused[e]++ // not due: replaced before its deadline
				continue
			}
			c.Due[p]++
			for col, v := range pv.v {
				switch {
				case v.violated:
				case v.excuse != "":
					c.Excused[v.excuse]++
				default:
					c.Strict[columnName[col]][p]++
				}
			}
		}
	}
	for _, op := range x.h.Ops {
		if op.Outcome == Failed {
			continue
		}
		v, ok := x.writeVerdicts[op.Seq]
		if !ok {
			panic(fmt.Sprintf("checker: write %d has no G5 verdict", op.Seq))
		}
		c.Writes++
		switch {
		case v.violated:
		case v.excuse != "":
			c.Excused[v.excuse]++
		default:
			c.StrictWrites++
		}
	}
	return c
}

// excuseOf names the fault-window excuse of fault f.
func excuseOf(f Fault) Excuse {
	switch f.Kind {
	case sharedIDFault:
		return ExSharedID
	case copiesLostFault:
		return ExCopiesLost
	case diskLostFault:
		return ExDiskLost
	}
	return ExFault + "/" + Excuse(f.Kind)
}

// heldUsed reports whether some live replica may still carry the write's
// hold when pop k falls due (see heldAt).
func (x *index) heldUsed(d *def, k int) bool {
	if !d.placed {
		return true
	}
	for _, r := range d.replicas {
		if x.heldAt(d, r, k) > 0 {
			return true
		}
	}
	return false
}

// allUnable names why no replica was able to make pop k of d: down, cut
// off or without a copy (ExAllDown), or, where that alone would have left
// one able, its callback of the pop failed (ExAllFailed).
func (x *index) allUnable(d *def, k int) Excuse {
	if _, ok := x.lateBoundOf(d, k, false); ok {
		return ExAllFailed
	}
	return ExAllDown
}
