package checker

import (
	"slices"
	"time"
)

// Start-up repopulation (docs/design.md 4.8): a node that restarts
// empty asks every peer for what it should hold, through a repair round
// about a second after it boots and its start-up resync, so a replica a
// crash emptied holds its timers again soon after its restart, as long
// as another replica kept them and the two can talk. The checker owes
// the node exactly that: from RepopulateBound after the restart, the
// restarted replica counts as a holder again (its pops are owed at its
// rank, and its copy counts against copies-lost), when
//
//   - the timer's placement has not moved since its write (no scale: a
//     scale's own resync is judged by G6);
//   - another replica of it at the restarted node's own site kept its
//     copy from the write through the bound (it never missed the write,
//     and no crash took its copy; with storage a crash takes none): each
//     site is a cluster of its own, and a node's resync and repair ask
//     only its own cluster's members, so a replica at another site
//     repopulates nothing;
//   - and no fault touched either of them or a message between them from
//     the restart to the bound (a crash, pause, cut, lost or waited
//     message, disk fault), nor a backward jump of the restarted node's
//     clock, which holds its repair alarm back.
//
// Anything less is not enough to owe the copy, and the replica counts as
// without one until a notice brings it back (see dropped).

// repopulatedBy is when replica n, restarted empty at t, surely holds d
// again, and false when nothing makes it sure (see above).
func (x *index) repopulatedBy(d *def, n string, t time.Duration) (time.Duration, bool) {
	by := t + x.o.RepopulateBound
	if !d.placed || d.shared || x.jumpedBack(n, t, by) {
		return 0, false
	}
	placement := d.rankedIn(d.lo, by)
	if !slices.Contains(placement, n) {
		return 0, false
	}
	for _, q := range placement {
		if q != n && x.sameSite(n, q) && x.keptCopy(d, q, by) && !x.faultBetween(d, n, q, t, by) {
			return by, true
		}
	}
	return 0, false
}

// sameSite reports whether nodes n and q are members of one site (always,
// with one site).
func (x *index) sameSite(n, q string) bool {
	return len(x.h.Sites) <= 1 || x.siteOf(n) >= 0 && x.siteOf(n) == x.siteOf(q)
}

// keptCopy reports whether replica q surely held d from its write to t:
// no fault may have kept the write from it, and no crash took its copy.
func (x *index) keptCopy(d *def, q string, t time.Duration) bool {
	if !d.placed || x.missedWrite(d)[q] {
		return false
	}
	for _, f := range x.copyFailures(d).other {
		if f.node == q && f.from <= t {
			return false
		}
	}
	return true
}

// faultBetween reports whether a fault of d's touched node n or q, or a
// link of either, in (a, b]. A fault that ended at a (the restart that
// ends n's crash) is over.
func (x *index) faultBetween(d *def, n, q string, a, b time.Duration) bool {
	for s := range d.spans() {
		if s.from > b || s.end <= a {
			continue
		}
		f := s.fault
		if slices.Contains(f.Nodes, n) || slices.Contains(f.Nodes, q) || slices.Contains(f.Peers, n) || slices.Contains(f.Peers, q) {
			return true
		}
	}
	return false
}

// jumpedBack reports whether node n's clock jumped back in [a, b]: its
// alarms, the repair round's among them, fire that much later.
func (x *index) jumpedBack(n string, a, b time.Duration) bool {
	for _, c := range x.tl.clocks[n] {
		if c.at >= a && c.at <= b && c.back > 0 {
			return true
		}
	}
	return false
}
