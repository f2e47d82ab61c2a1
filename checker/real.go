package checker

import (
	"fmt"
	"slices"
	"sort"
	"time"
)

// The real-run mode judges a history recorded from real processes on a
// real (virtual) network, as the nemesis suite records it
// (docs/nemesis.md). Such a run knows less than the simulator: when each
// fault began and healed and what the clients and the callback sink saw,
// but not which message the network lost or held, and nothing of what
// the nodes did inside. So it runs G1-G7 on the history as Judge does,
// with every fault a window, and adds what a client of a real network is
// promised after the faults heal (docs/operations.md):
//
//	R1 no resurrection  a definition replaced by an acknowledged DELETE
//	                    or PUT pops again after the faults that hit that
//	                    write healed only in the one repairing pop per
//	                    replica, on that replica's schedule, and within
//	                    the notice's round trip after it (or in a pop
//	                    made during the fault that the network delivered
//	                    late: heldDelivery); after a write no fault hit,
//	                    not even a pop due before it may come later than
//	                    its rank bound after the write returned
//	R2 duplicates stop  a duplicate after a heal comes within HealWithin
//	                    of the heal plus the timer's rank bound
//	R3 writes land      every copy of a write takes effect within
//	                    LandWithin of the end of its last attempt, or never
//
// Besides the violations it classifies every write, due pop and delivery
// into findings (RealFinding), which the nemesis tabulates per round, so
// that what the guarantees allow but a client notices is counted, not
// hidden.

// Attempt is one HTTP request a client sent for an operation: a client
// that retries sends several, to one node or several, and each may take
// effect whether or not its answer came back.
type Attempt struct {
	// Op is the Seq of the operation it belongs to.
	Op   int
	Node string
	// Invoke and Return are when it was sent and when it ended (answered
	// or given up).
	Invoke, Return time.Duration
	// Status is the HTTP status, 0 when no answer came.
	Status int
}

// RealHistory is what a run of real processes records: the history
// (fault windows only, no message faults, no snapshots) and the attempts
// behind each operation.
type RealHistory struct {
	History
	Attempts []Attempt
}

// RealBounds are the bounds of R1-R3.
type RealBounds struct {
	// HealWithin is how long after a heal the faults' after-effects may
	// still make duplicates (R2) and the repairing pop of a stale
	// replica may still be under way (R1), before the timer's rank bound
	// is added.
	HealWithin time.Duration
	// LandWithin is how long after the end of its last attempt a write,
	// or a copy of it on its way to a replica, may still take effect
	// (R3): a message held longer must be refused, not applied.
	LandWithin time.Duration
}

// DefaultRealBounds are the bounds docs/nemesis.md states: a heal
// settles within FaultSettle, and a write lands within 10 s or never.
func DefaultRealBounds() RealBounds {
	return RealBounds{HealWithin: FaultSettle, LandWithin: 10 * time.Second}
}

// Validate names the first bound out of range.
func (b RealBounds) Validate() error {
	switch {
	case b.HealWithin < 0:
		return fmt.Errorf("checker: HealWithin %v is negative", b.HealWithin)
	case b.LandWithin < 0:
		return fmt.Errorf("checker: LandWithin %v is negative", b.LandWithin)
	}
	return nil
}

// FindingKind classifies one event of a real run for its per-round
// table.
type FindingKind string

// Finding kinds, one per column of the table.
const (
	// FAcked: a write answered 2xx (At: its invoke).
	FAcked FindingKind = "acked"
	// FUnknown: a write whose outcome the client could not learn (no
	// answer, 503): it may or may not take effect.
	FUnknown FindingKind = "unknown"
	// FDue: a pop of an acknowledged definition that fell due and was
	// not replaced before its deadline (At: its earliest due time).
	FDue FindingKind = "due"
	// FLost: a due pop never accepted by the sink.
	FLost FindingKind = "lost"
	// FEarly: a delivery before its earliest due time (At: the delivery).
	FEarly FindingKind = "early"
	// FLate: a due pop first delivered beyond its worst replica's rank
	// (due + 2 s per rank + slack); a client notices it, and G3 judges
	// whether a fault excuses it.
	FLate FindingKind = "late"
	// FDupFault, FDupHeal, FDupHealthy: a copy of a pop the sink had
	// accepted, delivered while a fault touching the timer lasted, after
	// it healed, or with no fault around it (a G4 violation).
	FDupFault   FindingKind = "dup-in-fault"
	FDupHeal    FindingKind = "dup-after-heal"
	FDupHealthy FindingKind = "dup-healthy"
	// FDupRetried: a copy a retried write explains (see retried): each
	// attempt that reached a replica started the schedule over there.
	FDupRetried FindingKind = "dup-retried"
	// FResurrection: a pop of a definition an acknowledged DELETE or PUT
	// had replaced, delivered when no fault touched the timer, beyond
	// the one repairing pop per replica (R1, or G5 when no fault hit the
	// write at all).
	FResurrection FindingKind = "resurrection"
	// FStale: a pop of a replaced definition that R1 allows: made while
	// a fault kept the write from its replica (or delivered late by the
	// network after it, see heldDelivery), or the one repairing pop of
	// a replica after the heal. A client still sees it.
	FStale FindingKind = "stale"
	// FLateLanding: a write whose copy took effect more than LandWithin
	// after the end of its last attempt (R3; At: the write's invoke).
	FLateLanding FindingKind = "late-landing"
)

// RealFinding is one classified event.
type RealFinding struct {
	Kind  FindingKind
	At    time.Duration
	Timer uint64
	// Violation names the guarantee it breaks ("" when allowed).
	Violation string
}

// RealVerdict is the real-run mode's judgement of a history.
type RealVerdict struct {
	// Violations are G1-G7 and CHECK as Judge finds them, then R1-R3,
	// sorted by time.
	Violations []Violation
	Coverage   Coverage
	Findings   []RealFinding
	// HeldDeliveries counts the deliveries R1-R3 allowed as held by a
	// fault between their node and the endpoint (heldDelivery), and
	// Retried the G4 violations of Judge a retried write explains
	// (retried): the real-run mode's two allowances.
	HeldDeliveries, Retried int
}

// JudgeReal judges a history of real processes: Judge's guarantees and
// R1-R3 with bounds b.
func (o Options) JudgeReal(h *RealHistory, b RealBounds) RealVerdict {
	o.mustValidate()
	if err := b.Validate(); err != nil {
		panic(err)
	}
	x := newIndex(&h.History, o)
	vs, cov := x.judgeWithCoverage()
	if x.unjudged != "" {
		return RealVerdict{Violations: vs, Coverage: cov}
	}
	r := &realJudge{x: x, b: b, attempts: map[int][]Attempt{}, staleSeen: map[Pop]int{}, resurrected: map[Pop]bool{}}
	for _, a := range h.Attempts {
		r.attempts[a.Op] = append(r.attempts[a.Op], a)
	}
	vs = r.retried(vs)
	r.writes()
	for _, d := range x.defs {
		r.duePops(d)
		r.deliveries(d)
		r.landing(d)
	}
	r.resurrections()
	vs = append(vs, r.vs...)
	sortViolations(vs)
	sort.SliceStable(r.out, func(i, j int) bool { return r.out[i].At < r.out[j].At })
	return RealVerdict{Violations: vs, Coverage: cov, Findings: r.out, HeldDeliveries: r.held, Retried: r.retriedG4}
}

// realJudge gathers the findings and violations of R1-R3.
type realJudge struct {
	x        *index
	b        RealBounds
	attempts map[int][]Attempt
	out      []RealFinding
	vs       []Violation
	// staleSeen holds the stale pops counted already, with the index of
	// their finding: a pop replaced by two writes is one finding.
	staleSeen   map[Pop]int
	resurrected map[Pop]bool // the pops an R1 violation reported
	held        int
	retriedG4   int
}

// applied counts the attempts of write op that may have taken effect:
// every one but those refused with a 4xx.
func (r *realJudge) applied(op Op) int {
	n := 0
	for _, a := range r.attempts[op.Seq] {
		if a.Status < 400 || a.Status >= 500 {
			n++
		}
	}
	return n
}

// retriedPop reports whether a retried write explains the deliveries of
// pop k of d: the Go client sends a write again after a 503 or no
// answer, and each attempt that reached a replica starts the
// definition's schedule over there (docs/operations.md: "its schedule
// starts over from the retry"), so pop k may come once per attempt, and
// from one replica as often. More deliveries than attempts are not
// explained.
func (r *realJudge) retriedPop(d *def, k int) bool {
	n := r.applied(d.op)
	if n < 2 || len(d.bySeq[k]) > n {
		return false
	}
	return true
}

// retriedBy reports whether a retried write explains each replica's
// attempts at pop k of d: one per attempt of the write, from each
// replica. It is retriedPop for a replica's own attempts (checkRetries),
// whatever the other replicas delivered: their copies are duplicates,
// judged apart (checkDuplicates, under retriedPop). Counting every
// replica's deliveries against the attempts, a create the nemesis's
// mute held at its proxy, popped by two replicas at the heal and written
// again through another node, left the replica that popped its retry
// held to one attempt (CI on 0eea30c, nemesis seed 1, round 8).
func (r *realJudge) retriedBy(d *def, k int) bool {
	n := r.applied(d.op)
	if n < 2 {
		return false
	}
	per := map[string]int{}
	for _, i := range d.bySeq[k] {
		node := r.x.h.Pops[i].Node
		if per[node]++; per[node] > n {
			return false
		}
	}
	return true
}

// retried drops the G4 violations of Judge that a retried write explains
// (retriedPop), and counts them: Judge holds each operation to one
// start, and a replica to one attempt per pop.
func (r *realJudge) retried(vs []Violation) []Violation {
	drop := map[Violation]bool{}
	for _, d := range r.x.defs {
		for _, k := range sortedSeqs(d) {
			if !r.retriedBy(d, k) {
				continue
			}
			if _, v, bad := r.x.checkRetries(d, k); bad {
				drop[v] = true
			}
			if !r.retriedPop(d, k) {
				continue
			}
			if _, v, bad := r.x.checkDuplicates(d, k); bad {
				drop[v] = true
			}
		}
	}
	out := vs[:0]
	for _, v := range vs {
		if drop[v] {
			r.retriedG4++
			continue
		}
		out = append(out, v)
	}
	return out
}

func (r *realJudge) find(k FindingKind, at time.Duration, timer uint64, violation string) {
	r.out = append(r.out, RealFinding{Kind: k, At: at, Timer: timer, Violation: violation})
}

// findStale records a stale pop once, however many writes replaced its
// definition: as a resurrection if any of them makes it one.
func (r *realJudge) findStale(k FindingKind, p Pop, timer uint64, violation string) {
	i, seen := r.staleSeen[p]
	if !seen {
		r.staleSeen[p] = len(r.out)
		r.find(k, p.At, timer, violation)
	} else if k == FResurrection && r.out[i].Kind != FResurrection {
		r.out[i] = RealFinding{Kind: k, At: p.At, Timer: timer, Violation: violation}
	}
}

func (r *realJudge) writes() {
	for _, op := range r.x.h.Ops {
		switch op.Outcome {
		case OK:
			r.find(FAcked, op.Invoke, op.Timer, "")
		case Unknown:
			r.find(FUnknown, op.Invoke, op.Timer, "")
		}
	}
}

// duePops finds the due pops of an acknowledged definition, and which of
// them were lost or late.
func (r *realJudge) duePops(d *def) {
	x := r.x
	if d.op.Outcome != OK {
		return
	}
	rank := x.rankBound(d)
	for k := 1; k <= d.op.Spec.Pops(); k++ {
		lo, hi := d.due(k)
		if hi+rank > x.end || d.cutoff <= hi+rank {
			break // not due within the run, or maybe replaced before its deadline
		}
		r.find(FDue, lo, d.timer, "")
		first, accepted := never, false
		for _, i := range d.bySeq[k] {
			p := x.h.Pops[i]
			first = min(first, p.At)
			accepted = accepted || !x.failed(p)
		}
		if !accepted {
			r.find(FLost, lo, d.timer, "")
		} else if first > hi+rank {
			r.find(FLate, lo, d.timer, "")
		}
	}
}

// deliveries finds the early deliveries and the duplicates of d, and
// holds the duplicates after a heal to R2.
func (r *realJudge) deliveries(d *def) {
	x := r.x
	for _, k := range sortedSeqs(d) {
		lo, hi := d.due(max(k, 1))
		seen := false
		for _, i := range d.bySeq[k] {
			p := x.h.Pops[i]
			if p.At < lo {
				r.find(FEarly, p.At, d.timer, "G1")
			}
			if !seen {
				seen = !x.failed(p)
				continue
			}
			r.duplicate(d, k, hi, p)
		}
	}
}

// duplicate classifies one copy of pop k of d, delivered after the sink
// had accepted the pop.
func (r *realJudge) duplicate(d *def, k int, hi time.Duration, p Pop) {
	x := r.x
	if during(d, p.At) || r.heldDelivery(d, k, p) {
		r.find(FDupFault, p.At, d.timer, "")
		return
	}
	if r.retriedPop(d, k) {
		r.find(FDupRetried, p.At, d.timer, "")
		return
	}
	_, dup := x.mayDuplicate(d, k, nil)
	if !dup {
		r.find(FDupHealthy, p.At, d.timer, "G4")
		return
	}
	heal := lastHeal(d, p.At)
	bound := max(heal+r.b.HealWithin, hi) + x.rankBound(d)
	if p.At <= bound {
		r.find(FDupHeal, p.At, d.timer, "")
		return
	}
	r.find(FDupHeal, p.At, d.timer, "R2")
	r.vs = append(r.vs, x.violation("R2", p.At, d, fmt.Sprintf(
		"pop %d delivered again from %s at %v, %v after the heal at %v: got a duplicate after %v, want none after the heal + %v + rank bound %v",
		k, p.Node, p.At, p.At-heal, heal, bound, r.b.HealWithin, x.rankBound(d))))
}

// during reports whether a fault touching d was active at t (from its
// start to its end event, settle time left out).
func during(d *def, t time.Duration) bool {
	for s := range d.spans() {
		if s.from <= t && t <= s.end {
			return true
		}
	}
	return false
}

// heldDelivery reports whether delivery p of pop k of d may have been
// sent while a fault held the way from its node to the endpoint: a cut
// or a degraded link between them, or the node paused or killed, while
// the pop was due (no pop is sent before its earliest due time). TCP
// retransmits what such a request had written once
// the way is open again, within about as long as it was held (the
// retransmission timer doubles), and the endpoint gets it even though
// the node gave up on it long before: the delivery is late, not the
// pop. Held until FaultSettle after that.
func (r *realJudge) heldDelivery(d *def, k int, p Pop) bool {
	if r.mayBeHeld(d, k, p) {
		r.held++
		return true
	}
	return false
}

// mayBeHeld is heldDelivery's test, uncounted.
func (r *realJudge) mayBeHeld(d *def, k int, p Pop) bool {
	lo, _ := d.due(max(k, 1))
	for s := range d.spans() {
		if s.from > p.At || lo > s.end || p.At > s.end+(s.end-s.from)+r.x.o.FaultSettle {
			continue
		}
		f := s.fault
		switch f.Kind {
		case Pause, Crash:
			if slices.Contains(f.Nodes, p.Node) {
				return true
			}
		case Partition, Clog:
			if slices.Contains(f.Nodes, p.Node) && slices.Contains(f.Peers, d.host) ||
				slices.Contains(f.Peers, p.Node) && slices.Contains(f.Nodes, d.host) {
				return true
			}
		}
	}
	return false
}

// lastHeal is when the last fault touching d that ended by t ended (0:
// none).
func lastHeal(d *def, t time.Duration) time.Duration {
	var h time.Duration
	for s := range d.spans() {
		if s.end <= t {
			h = max(h, s.end)
		}
	}
	return h
}

// landing holds the write behind d to R3: each delivery of pop k at t
// shows that the copy that made it took effect no earlier than
// t - k x interval - the rank bound, so a delivery later than the last
// attempt + LandWithin + k x interval + the rank bound shows a copy that
// landed beyond the bound.
func (r *realJudge) landing(d *def) {
	x := r.x
	if d.op.Outcome == Failed {
		return
	}
	landBy := d.op.Return
	for _, a := range r.attempts[d.op.Seq] {
		landBy = max(landBy, a.Return)
	}
	if d.op.Outcome == Unknown && landBy < d.op.Invoke {
		landBy = d.op.Invoke
	}
	landBy += r.b.LandWithin
	rank := x.rankBound(d)
	for _, k := range sortedSeqs(d) {
		step := time.Duration(max(k, 1)) * d.op.Spec.Interval
		for _, i := range d.bySeq[k] {
			p := x.h.Pops[i]
			if p.At-step-rank <= landBy || r.heldDelivery(d, k, p) {
				continue
			}
			r.find(FLateLanding, d.op.Invoke, d.timer, "R3")
			r.vs = append(r.vs, x.violation("R3", p.At, d, fmt.Sprintf(
				"pop %d from %s at %v is later than any copy that took effect by %v (the write's last attempt ended at %v, + %v) could make it, by %v, and no fault held its delivery: got a write landing late, want it within %v or never",
				k, p.Node, p.At, landBy, landBy-r.b.LandWithin, r.b.LandWithin, p.At-step-rank-landBy, r.b.LandWithin)))
			return // one finding per write
		}
	}
}

// resurrections holds every acknowledged DELETE or PUT to R1: the
// definitions it replaced may pop after it returned only while a fault
// touches the timer, and once no fault does, once per replica on the
// replica's schedule (the pop whose notice repairs it). A write no fault
// hit is G5's (checkSticky): its stale pops are counted here, not
// reported twice.
func (r *realJudge) resurrections() {
	x := r.x
	for _, t := range sortedTimers(x.byTimer) {
		for _, s := range x.byTimer[t] {
			if s.Kind == Create || s.Outcome != OK {
				continue
			}
			_, hit := x.writeHit(s)
			for _, d := range x.defs {
				if d.timer != t || d.op.Seq == s.Seq || d.op.Outcome == Failed || effReturn(d.op) >= s.Invoke {
					continue
				}
				if hit && x.mayOrderBelow(s, d) {
					continue
				}
				r.stale(s, d, hit)
			}
		}
	}
}

// stale judges the pops of d that s, which replaced d, makes stale:
// those due after s returned (G5's, stalePops), and those delivered
// later than any replica could make a pop due before it (lateStale).
func (r *realJudge) stale(s Op, d *def, hit bool) {
	x := r.x
	repaired := map[string]time.Duration{}
	var bad []Pop
	due := map[Pop]bool{}
	for _, p := range x.stalePops(s, d) {
		due[p] = true
	}
	for _, p := range r.stalePops(s, d) {
		switch {
		case !hit && due[p]:
			r.findStale(FResurrection, p, d.timer, "G5") // G5 reports it
		case !hit && r.heldDelivery(d, p.Seq, p):
			r.findStale(FStale, p, d.timer, "") // made before s, delivered late
		case !hit:
			bad = r.resurrection(bad, p, d)
		case during(d, p.At) || r.heldDelivery(d, p.Seq, p):
			r.findStale(FStale, p, d.timer, "") // a replica the fault keeps from s pops d as it did
		case r.repairing(d, p, repaired):
			r.findStale(FStale, p, d.timer, "")
		default:
			bad = r.resurrection(bad, p, d)
		}
	}
	if len(bad) == 0 {
		return
	}
	p := bad[0]
	what := "deleted"
	if s.Kind == Update {
		what = fmt.Sprintf("updated to opaque %q", s.Spec.Opaque)
	}
	r.vs = append(r.vs, x.violation("R1", p.At, d, fmt.Sprintf(
		"timer %s by op %d returning OK at %v, yet pop %d from %s at %v (due from %v, last heal %v) carries the old definition, %d such pops beyond the faults and one repairing pop per replica: got a resurrection, want none",
		what, s.Seq, s.Return, p.Seq, p.Node, p.At, x.dueFrom(d, p.Seq), lastHeal(d, p.At), len(bad))))
}

// resurrection counts p as a resurrection and adds it to bad, unless an
// earlier write's judgement reported it already: one pop made stale by
// two writes is one violation.
func (r *realJudge) resurrection(bad []Pop, p Pop, d *def) []Pop {
	r.findStale(FResurrection, p, d.timer, "R1")
	if r.resurrected[p] {
		return bad
	}
	r.resurrected[p] = true
	return append(bad, p)
}

// stalePops lists, in arrival order, the pops of d due after s returned
// (G5's stale pops) and those delivered after s returned plus d's rank
// bound: a pop due before s that a replica makes that late is no pop
// of d's schedule but of a copy that landed after s (a write applied
// late, with a version from the clock of its late arrival).
func (r *realJudge) stalePops(s Op, d *def) []Pop {
	x := r.x
	out := x.stalePops(s, d)
	late := s.Return + x.rankBound(d)
	for _, k := range sortedSeqs(d) {
		for _, i := range d.bySeq[k] {
			if p := x.h.Pops[i]; p.At > late && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].At < out[j].At })
	return out
}

// repairing reports whether stale pop p of d, delivered once no fault
// touched d, is its replica's one repairing pop (on the replica's
// schedule) or within that pop's notice round trip; repaired holds when
// each replica made its repairing pop.
func (r *realJudge) repairing(d *def, p Pop, repaired map[string]time.Duration) bool {
	x := r.x
	_, hi := d.due(max(p.Seq, 1))
	onSchedule := p.At <= max(hi, lastHeal(d, p.At)+r.b.HealWithin)+x.rankBound(d)
	at, done := repaired[p.Node]
	if !done && onSchedule {
		repaired[p.Node] = p.At // its notice meets s's record
		return true
	}
	return done && p.At <= at+x.repairWindow()
}

// sortedTimers lists the timers of byTimer in order.
func sortedTimers(byTimer map[uint64][]Op) []uint64 {
	ts := make([]uint64, 0, len(byTimer))
	for t := range byTimer {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return ts
}
