package checker

import (
	"fmt"
	"sort"
	"time"

	"github.com/anishathalye/porcupine"
)

// Check runs G1-G7 on h with DefaultOptions; G6 judges the snapshots of
// what the nodes held (History.Held) after each scale (converge.go).
// Violations come sorted by At, then Guarantee.
func Check(h *History) []Violation {
	return DefaultOptions().Check(h)
}

// Check runs G1-G5 and G7 on h (docs/design.md section 3), attributing
// each fault only to the timers whose replicas, writing nodes, links,
// endpoint or messages it hit (attribution.go):
//
//   - G1: every pop arrives no earlier than invoke + k x interval, less
//     what the clocks of the timer's nodes gained meanwhile.
//   - G2: every due pop of an OK definition not replaced before its bound
//     is accepted (2xx) by the endpoint, unless as many replicas as hold
//     it were down, cut off or without a copy (see lateBound).
//   - G3: the first delivery of each pop is within its bound: with no
//     fault around, due + FaultFreeLate + NetHops x MaxNetDelay + skew;
//     with faults, the rank of the first live replica x ReplicaSkew plus
//     the replication hold it may carry, plus the same slack.
//   - G4: sequence numbers lie in 1..Pops() and fit the delivery time; no
//     duplicate with no fault around the pop; a replica attempts each pop
//     once; no pop of an unknown opaque.
//   - G5: no pop of a rejected write or of a definition replaced by an OK
//     DELETE or PUT no fault kept from a replica; the per-timer porcupine
//     model is linearizable, and a search out of steps is reported.
//   - G7: after the liveness phase began every pending pop is delivered
//     within the replica-failure bound.
func (o Options) Check(h *History) []Violation {
	vs, _ := o.Judge(h)
	return vs
}

// Judge is Check that also reports the judged coverage: how many due
// pops and writes were held strictly to each guarantee, and what excused
// the others: the tally of the verdicts the checks gave (verdict.go). A
// timer whose porcupine search ran out of steps is a violation of kind
// "CHECK": it was not judged, which is never a pass.
func (o Options) Judge(h *History) ([]Violation, Coverage) {
	o.mustValidate()
	if h == nil {
		return nil, newCoverage()
	}
	return newIndex(h, o).judgeWithCoverage()
}

// judgeWithCoverage is Judge on an index built already: JudgeReal judges
// R1-R3 on the same index instead of building it twice.
func (x *index) judgeWithCoverage() ([]Violation, Coverage) {
	vs, _, placed := x.judge()
	if x.unjudged != "" {
		return vs, newCoverage()
	}
	cov := x.coverage()
	cov.Placements = placed.judged
	cov.Versions = placed.versions
	if x.told != nil {
		cov.Told = len(x.told.judged)
	}
	cov.Resynced = placed.resynced
	for e, n := range placed.excused {
		cov.Excused[e] += n
	}
	return vs, cov
}

// judge runs every check on x once, leaving their verdicts in x for
// coverage to tally, and returns the violations, sorted, what the
// porcupine check found, and the placements G6 judged.
func (x *index) judge() ([]Violation, LinearizabilityInfo, placedCount) {
	if x.unjudged != "" {
		return []Violation{{Guarantee: "CHECK", At: x.end, Message: x.unjudged}},
			x.o.linearizable(x), placedCount{}
	}
	var vs []Violation
	vs = append(vs, x.checkPops()...)
	vs = append(vs, x.checkMissing()...)
	vs = append(vs, x.checkSticky()...)
	vs = append(vs, x.checkClashRefused()...)
	vs = append(vs, x.checkRestartWord()...)
	vs = append(vs, x.checkRestartReplaced()...)
	lin := x.o.linearizable(x)
	vs = append(vs, linViolations(lin, x.end)...)
	placements, placed := x.checkPlacements()
	vs = append(vs, placements...)
	resynced, took := x.checkResynced()
	vs = append(vs, resynced...)
	placed.resynced = took.judged
	for e, n := range took.excused {
		placed.excused[e] += n
	}
	versions, held := x.checkVersions()
	vs = append(vs, versions...)
	placed.versions = held.judged
	for e, n := range held.excused {
		placed.excused[e] += n
	}
	sortViolations(vs)
	return vs, lin, placed
}

// linViolations is what the porcupine check reports: its G5 violations,
// and a CHECK violation when a timer's search ran out of steps, since an unjudged
// history is never a pass.
func linViolations(lin LinearizabilityInfo, end time.Duration) []Violation {
	vs := lin.Violations
	if lin.Result == porcupine.Unknown {
		vs = append(vs, Violation{Guarantee: "CHECK", At: end, Message: lin.Note})
	}
	return vs
}

// CheckPlacement is G6: held maps each node to the timers it holds, want
// maps each live timer to its rendezvous replicas under the current
// cluster. It reports every missing replica and every copy held by a node
// that is not among the timer's replicas (a stale copy, or a timer that is
// no longer live at all).
func CheckPlacement(held map[string][]uint64, want map[uint64][]string) []Violation {
	holds := map[string]map[uint64]bool{}
	for node, ts := range held {
		holds[node] = map[uint64]bool{}
		for _, t := range ts {
			holds[node][t] = true
		}
	}
	var vs []Violation
	for t, replicas := range want {
		isReplica := map[string]bool{}
		for _, n := range replicas {
			isReplica[n] = true
			if !holds[n][t] {
				vs = append(vs, Violation{Guarantee: "G6", Timer: t, Message: fmt.Sprintf(
					"replica %s of timer %016x holds no copy: got missing, want held (replicas %v)", n, t, replicas)})
			}
		}
		for n, ts := range holds {
			if ts[t] && !isReplica[n] {
				vs = append(vs, Violation{Guarantee: "G6", Timer: t, Message: fmt.Sprintf(
					"node %s holds a stale copy of timer %016x: got held, want none (replicas %v)", n, t, replicas)})
			}
		}
	}
	for n, ts := range holds {
		for t := range ts {
			if _, live := want[t]; !live {
				vs = append(vs, Violation{Guarantee: "G6", Timer: t, Message: fmt.Sprintf(
					"node %s holds timer %016x that is not live: got held, want none", n, t)})
			}
		}
	}
	sortViolations(vs)
	return vs
}

// sortViolations orders by time, guarantee, timer and message, so the
// output never depends on map order.
func sortViolations(vs []Violation) {
	sort.SliceStable(vs, func(i, j int) bool {
		a, b := vs[i], vs[j]
		if a.At != b.At {
			return a.At < b.At
		}
		if a.Guarantee != b.Guarantee {
			return a.Guarantee < b.Guarantee
		}
		if a.Timer != b.Timer {
			return a.Timer < b.Timer
		}
		return a.Message < b.Message
	})
}
