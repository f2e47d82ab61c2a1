package checker

import (
	"fmt"
	"iter"
	"math"
	"net/url"
	"slices"
	"sort"
	"time"
)

// def is one definition: a create or update attempt and the pops that carry
// its opaque.
type def struct {
	op Op
	// lo and hi bound the start time: the op's invoke and its return (the
	// end of history when the outcome is unknown).
	lo, hi time.Duration
	// rf is the write's replication factor; when the history leaves it
	// to the node to choose between several (see writtenRF), rf is the
	// largest of them, the worst rank, and rfMin the smallest, the fewest
	// copies. rfUnknown is then set, and the write is judged as unplaced.
	rf, rfMin int
	rfUnknown bool
	// factors is the range of replication factors the write may have
	// taken, as written: rf and rfMin count a placed write's replicas at
	// every site (the factor's copies at each), factors the factor alone.
	factors factors
	// quorum is how many replicas acknowledge a write: a majority of the
	// replicas in the write's own site from three up, else one (node's
	// writeQuorum, docs/design.md 4.11), of the fewest the factor may be.
	// Other sites are not waited for.
	quorum int
	// key partitions the porcupine history: the timer, or the op itself
	// for a create whose timer the client never learned.
	key string
	// host is the callback URI's host, as faults name it.
	host string
	// bySeq holds the indices of the pops per sequence number, by time.
	bySeq map[int][]int
	// lossFrom is the earliest time a fault may have removed every copy.
	lossFrom time.Duration
	// cutoff is the earliest a later op on the timer may have replaced
	// it, and replacedBy what excuses d's pops from then on: the write
	// ran with or after d (superseded), or it returned before d began
	// and only the order of their versions lets it win (mayReorder,
	// earlierAhead).
	cutoff     time.Duration
	replacedBy Excuse
	// held is how long the write's replication may have been held up on
	// its way to a replica, and late the replicas it held (see heldFor).
	held time.Duration
	late map[string]bool
	// reheld is, for a replica of late that a message after the write
	// held (a waited hand-off, resync or notice to a replica without a
	// copy, a refill), when the last such message was sent and how long
	// it held the copy (see heldAt).
	reheld map[string]lateCopy
	// heldBy is the excuse the longest hold stands for (see heldFor).
	heldBy Excuse
	// waited caches waitedRecords.
	waited *[]waitedMsg
	// timer is the timer's ID: the op's, or for a create whose answer was
	// lost the one its pops name (0: unknown).
	timer uint64
	// placed is true when the replicas are known (the history names the
	// members and the timer is known); replicas are then the reference
	// placement, primary first. nodes are the replicas and every node
	// that took a write of the timer (all members when not placed).
	placed bool
	shared bool // see sharedID
	// replicas are, with scales, every node that may hold d over its
	// life (scaling.go): home is the placement in force at the write
	// (nil when a scale moved it then), epochs the placements since, and
	// moves the scales that moved it, as faults that touch it.
	replicas []string
	home     []string
	epochs   []epoch
	moves    []span
	relays   []string // each site's address node, when there are several
	nodes    map[string]bool
	holders  map[string]bool // startHolders' cache
	// own and common are the faults that touch d, each by start: the
	// spans method yields them merged (see attribute).
	own    []*span
	common *commonList
	// links files the waits of own by kind and link (onLink).
	links map[link][]*span
	// missed and failures cache missedWrite and copyFailures, once spans
	// are known.
	missed   map[string]bool
	failures *copyFailures
}

// link is a kind of wait on the link from one node to another.
type link struct {
	kind     FaultKind
	from, to string
}

// onLink is d's spans of the waits of kind (Overload or Queued) on the
// link from "from" to "to" (their first node and peer), in the order of
// d.spans(). The checks that look for the wait behind one message (a
// send's wait for its sender, a refusal's in its receiver's queue) ask
// it once per message: scanning every span each time made them
// quadratic in a run's message faults (a run whose every message between
// two nodes was refused for its age took minutes).
func (d *def) onLink(kind FaultKind, from, to string) iter.Seq[*span] {
	if kind != Overload && kind != Queued {
		panic(fmt.Sprintf("checker: onLink files waits only, asked for %q", kind))
	}
	if d.links == nil {
		d.links = fileWaits(d.own)
	}
	k := link{kind, from, to}
	var common []*span
	if d.common != nil {
		if d.common.links == nil {
			d.common.links = fileWaits(d.common.spans)
		}
		common = d.common.links[k]
	}
	return mergeSpans(d.links[k], common)
}

// due returns the window pop k falls due in.
func (d *def) due(k int) (lo, hi time.Duration) {
	step := time.Duration(k) * d.op.Spec.Interval
	return d.lo + step, d.hi + step
}

// index is a history prepared for the checks.
type index struct {
	h        *History
	o        Options
	end      time.Duration
	tl       timeline
	defs     []*def
	byOpaque map[string]*def
	byTimer  map[uint64][]Op
	// extra is what newIndex's rounds add to the factors of the updates
	// without one that may have found no copy or a copy a delete missed
	// (by Seq): the factor such an update took, which a later update
	// without one finds (factorBefore).
	extra map[int]factors
	// endpoints is the callback hosts, told apart from nodes in faults.
	endpoints map[string]bool
	// orphans are pops whose opaque no create or update sent.
	orphans []int
	// keyOf is each write's porcupine partition key and taint when a
	// fault first hit a write of that partition (see epochs).
	keyOf map[int]string
	taint map[string]time.Duration
	// tlSpans points at tl's spans (allSpans).
	tlSpans []*span
	// messages files tl's message faults for commonSpans, and
	// attributedCommon counts the faults in the lists it made.
	messages         *messageFiling
	attributedCommon int
	// disks is each node's disk history (diskFaults).
	disks map[string]*nodeDisk
	// defsByTimer is the definitions by timer (defsOf).
	defsByTimer map[uint64][]*def
	// factorsBefore memoises factorBefore, by op and seq.
	factorsBefore map[[2]int]factors
	// lateBounds memoises lateBoundOf.
	lateBounds map[lateKey]lateMemo
	// unjudged, when set, says why the history is too large to judge
	// (Options.MaxAttributed): the index then holds no definitions, and the
	// checks report only that, as a CHECK violation.
	unjudged string
	// verdicts and writeVerdicts are what the checks concluded, per pop
	// and guarantee and per write (by Seq); coverage tallies them.
	verdicts      map[popKey]*popVerdicts
	writeVerdicts map[int]verdict
	// told files History.Told (toldFiled).
	told *toldIndex
}

// newIndex attributes every pop to its definition. Where an update
// without a factor may have found its timer's every copy lost
// (mayFindNoTimer), the index is built again with the default among that
// update's factors, and where it may have found a live copy a delete
// missed (mayFindMissedDelete), with that copy's factor: a factor changes
// the update's placement, and all that is judged from it. Each round only
// adds factors, so the rounds end.
func newIndex(h *History, o Options) *index {
	extra := map[int]factors{}
	for {
		x := buildIndex(h, o, extra)
		if x.unjudged != "" {
			return x
		}
		more := false
		add := func(seq int, f factors) {
			if e, ok := extra[seq]; !ok {
				extra[seq], more = f, true
			} else if g := e.or(f); g != e {
				extra[seq], more = g, true
			}
		}
		for _, d := range x.defs {
			if x.mayFindNoTimer(d) {
				add(d.op.Seq, one(x.o.DefaultReplicationFactor))
			}
			if f, ok := x.mayFindMissedDelete(d); ok {
				add(d.op.Seq, f)
			}
		}
		if !more {
			return x
		}
	}
}

// mayFindMissedDelete reports the factors d, an update without a factor,
// may have found its timer with when the write before it was a delete
// that a fault may have kept from a replica (writeHit): that replica
// still holds the deleted definition live, and an update through it, or
// one that reads its copy, keeps that definition's factor, as a node
// cannot tell a timer it missed the delete of from a live one (docs/
// design.md 4.5). The delete's own factor otherwise is the default
// (factorLeft).
func (x *index) mayFindMissedDelete(d *def) (factors, bool) {
	if d.op.Kind != Update || d.op.Spec.ReplicationFactor > 0 {
		return factors{}, false
	}
	ops := x.byTimer[d.op.Timer]
	for i := len(ops) - 1; i >= 0; i-- {
		w := ops[i]
		switch {
		case w.Seq >= d.op.Seq || w.Outcome == Failed:
		case w.Kind == Delete && w.Outcome == OK && w.Return <= d.op.Invoke:
			if _, hit := x.writeHit(w); hit {
				return x.factorBefore(d.op, w.Seq), true
			}
			return factors{}, false
		default:
			return factors{}, false
		}
	}
	return factors{}, false
}

// mayFindNoTimer reports whether d, an update without a factor, may have
// found no copy of its timer to take the factor from: every copy of the
// definition written last before it may have been lost to a crash by the
// time it was invoked (lossFrom). The node then creates the timer again,
// with the default factor (docs/design.md 4.5), as after a delete
// (TestUpdateAfterEveryCopyWasLostMayTakeTheDefault). With several sites
// the node reads the copies of its own site only (the nodes the ID names
// and the ring ranks, docs/api.md), so the loss of every copy at the
// site of the node that took d is enough, whatever the other sites hold
// (siteLossFrom; scenarios/README.md U34). The factor is judged as
// written (d.factors): a placed write's rf counts its replicas at every
// site, and rf 1 at two sites is no default of 2.
func (x *index) mayFindNoTimer(d *def) bool {
	dflt := x.o.DefaultReplicationFactor
	if d.op.Kind != Update || d.op.Spec.ReplicationFactor > 0 || d.factors.lo <= dflt && dflt <= d.factors.hi {
		return false
	}
	ops := x.byTimer[d.op.Timer]
	for i := len(ops) - 1; i >= 0; i-- {
		w := ops[i]
		switch {
		case w.Seq >= d.op.Seq || w.Outcome == Failed:
		case w.Kind == Delete:
			return false // its factor is the default already
		default:
			e := x.byOpaque[w.Spec.Opaque]
			return e != nil && (e.lossFrom <= d.op.Invoke || x.siteLossFrom(e, x.siteOf(d.op.Node)) <= d.op.Invoke)
		}
	}
	return false
}

// buildIndex is newIndex's one round: extra gives the updates, by Seq,
// that may have found no timer (and so may have taken the default
// factor) or a copy a delete missed, the factors that adds.
func buildIndex(h *History, o Options, extra map[int]factors) *index {
	x := &index{h: h, o: o, end: historyEnd(h), byOpaque: map[string]*def{}, byTimer: map[uint64][]Op{}, extra: extra, endpoints: map[string]bool{},
		verdicts: map[popKey]*popVerdicts{}, writeVerdicts: map[int]verdict{}}
	x.tl = buildTimeline(h, x.end, o.FaultSettle)
	ops := append([]Op(nil), h.Ops...)
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Seq < ops[j].Seq })
	for _, op := range ops {
		if op.Timer != 0 {
			x.byTimer[op.Timer] = append(x.byTimer[op.Timer], op)
		}
	}
	// Every write of a timer is indexed before any definition is made:
	// a write's factor may depend on writes that ran at the same time,
	// later in the history's order too (writtenRF).
	for _, op := range ops {
		if op.Kind == Delete {
			continue
		}
		if _, dup := x.byOpaque[op.Spec.Opaque]; dup {
			continue // the first attempt with an opaque owns it
		}
		d := x.newDef(op, extra[op.Seq])
		x.endpoints[d.host] = true
		x.defs = append(x.defs, d)
		x.byOpaque[op.Spec.Opaque] = d
	}
	for i, p := range h.Pops {
		d, ok := x.byOpaque[p.Opaque]
		if !ok {
			x.orphans = append(x.orphans, i)
			continue
		}
		d.bySeq[p.Seq] = append(d.bySeq[p.Seq], i)
	}
	attributed := 0
	for _, d := range x.defs {
		for _, idx := range d.bySeq {
			sort.SliceStable(idx, func(i, j int) bool { return h.Pops[idx[i]].At < h.Pops[idx[j]].At })
		}
		x.attribute(d)
		// A list of message faults several definitions hold in common
		// counts once (commonSpans), as it is stored once.
		if attributed += len(d.own); attributed+x.attributedCommon > o.MaxAttributed {
			attributed += x.attributedCommon
			x.unjudged = fmt.Sprintf("not judged: the faults attributed to the first %d of %d definitions already number %d, past the checker's bound of %d (Options.MaxAttributed); %d faults recorded",
				slices.Index(x.defs, d)+1, len(x.defs), attributed, o.MaxAttributed, len(h.Faults))
			x.defs, x.byOpaque, x.orphans = nil, map[string]*def{}, nil
			return x
		}
	}
	x.epochs()
	for _, d := range x.defs {
		d.cutoff, d.replacedBy = x.cutoff(d)
		d.lossFrom = x.lossFrom(d)
		d.held, d.late, d.reheld, d.heldBy = x.heldFor(d)
	}
	return x
}

// newDef makes op's definition; extra, when set, adds to its factors
// (see newIndex).
func (x *index) newDef(op Op, extra factors) *def {
	d := &def{op: op, lo: op.Invoke, hi: op.Return, host: hostOf(op.Spec.URI), bySeq: map[int][]int{}}
	if op.Outcome == Unknown || d.hi < d.lo {
		d.hi = x.end
	}
	f := x.writtenRF(op)
	if extra != (factors{}) {
		f = f.or(extra)
	}
	d.rfMin, d.rf, d.rfUnknown = f.lo, f.hi, f.lo != f.hi
	d.factors = f
	d.quorum = ackQuorum(d.rfMin)
	d.key = timerKey(op.Timer)
	if op.Timer == 0 {
		d.key = fmt.Sprintf("op %d", op.Seq)
	}
	return d
}

// factors is the range of replication factors a write may have taken.
type factors struct{ lo, hi int }

func one(rf int) factors { return factors{rf, rf} }

func (f factors) or(g factors) factors { return factors{min(f.lo, g.lo), max(f.hi, g.hi)} }

// writtenRF is the replication factor a write took, as the history says
// it, never as a node would infer it: the one it gave, or, for a write
// that gave none, the factors the node may have chosen. A create without
// one gets the API's default (api.md). An update keeps the factor of its
// timer while it is live, which a PUT cannot change, and creates it again
// with the default once it is deleted or finished (docs/design.md 4.5).
// So where a delete may have landed first, or the timer's last pop may be
// past, either may be: the node's to choose, and the checker judges both.
// With no earlier write in the history, any factor up to every member.
func (x *index) writtenRF(op Op) factors {
	if op.Spec.ReplicationFactor > 0 {
		return one(op.Spec.ReplicationFactor)
	}
	dflt := one(x.o.DefaultReplicationFactor)
	if op.Kind == Create {
		return dflt
	}
	f := x.factorBefore(op, op.Seq)
	if g, raced := x.racedRF(op, op, math.MaxInt); raced {
		f = f.or(g)
	}
	return f
}

// racedRF is what the writes running at the same time as u, an update
// without a factor, add to the factors it may take, judged for op (u
// itself, or a later update that finds the factor u left, which counts
// only the writes listed before seq); raced is false when no write ran
// beside u. A write running at the same time may land
// before the update reads the factor or after. Before: a delete makes the
// update a create again, with the default; an update leaves its own
// factor, or the default once its definition ends, which a one-shot does
// at once. After: the factor the update finds is the one from before
// that write.
func (x *index) racedRF(op, u Op, seq int) (f factors, raced bool) {
	dflt := one(x.o.DefaultReplicationFactor)
	for _, w := range x.byTimer[u.Timer] {
		if w.Seq == u.Seq || w.Seq >= seq || w.Outcome == Failed || !overlaps(w, u, x.end) {
			continue
		}
		if !raced {
			f, raced = dflt, true
		}
		if w.Kind != Delete && w.Spec.ReplicationFactor > 0 {
			f = f.or(one(w.Spec.ReplicationFactor))
		}
		if w.Seq < u.Seq {
			f = f.or(x.factorBefore(op, w.Seq))
		}
	}
	return f, raced
}

// factorBefore is the factor op finds its timer with, from the timer's
// writes before seq: what the last of them to take effect left. That is
// the latest one that decides a factor, or any earlier write that ran at
// the same time as it (a write refused, Failed, is none of them):
// concurrent writes take effect in either order
// (an update's retry under a newer version lands after a delete it
// raced, TestRacedWriteMayLeaveTheFactor). Memoised: each concurrent
// write opens another branch.
func (x *index) factorBefore(op Op, seq int) factors {
	key := [2]int{op.Seq, seq}
	if f, ok := x.factorsBefore[key]; ok {
		return f
	}
	f := factors{1, max(len(x.h.Members), 1)}
	var skipped factors // what the races of the updates passed over add
	anySkipped := false
	ops := x.byTimer[op.Timer]
	for i := len(ops) - 1; i >= 0 && op.Timer != 0; i-- {
		w := ops[i]
		if w.Seq >= seq || w.Outcome == Failed {
			// A write a node refused (4xx) left no factor: a PUT
			// that asked to change it was refused for that very
			// reason (TestRefusedWriteLeavesNoFactor).
			continue
		}
		left, decided := x.factorLeft(op, w)
		if !decided {
			// An update without a factor leaves the one it took:
			// the earlier writes' and, where another write ran
			// beside it, what that race lets it take (racedRF,
			// TestUpdateAfterARacedUpdateMayFindItsFactor), or,
			// where it may have found no copy (or one a delete
			// missed), what that adds (newIndex's rounds: fresh
			// seed 9211761, TestUpdateAfterEveryCopyWasLostMayTakeTheDefault).
			g, raced := x.racedRF(op, w, seq)
			if e, ok := x.extra[w.Seq]; ok {
				if raced {
					g = g.or(e)
				} else {
					g, raced = e, true
				}
			}
			if raced {
				if anySkipped {
					g = g.or(skipped)
				}
				skipped, anySkipped = g, true
			}
			continue
		}
		for _, v := range ops[:i] {
			if v.Outcome != Failed && overlaps(v, w, x.end) {
				if g, ok := x.factorLeft(op, v); ok {
					left = left.or(g)
				} else {
					left = left.or(x.factorBefore(op, v.Seq))
				}
			}
		}
		f = left
		break
	}
	if anySkipped {
		f = f.or(skipped)
	}
	if x.factorsBefore == nil {
		x.factorsBefore = map[[2]int]factors{}
	}
	x.factorsBefore[key] = f
	return f
}

// factorLeft is the factor op finds its timer with when w is the last of
// its writes to take effect before op. decided is false for an update
// that gave none to a timer still live: it keeps the factor it found,
// which the writes before it decide.
func (x *index) factorLeft(op, w Op) (f factors, decided bool) {
	dflt := one(x.o.DefaultReplicationFactor)
	switch {
	case w.Kind == Delete && w.Outcome == OK && w.Return <= op.Invoke:
		return dflt, true
	case w.Kind == Delete:
		// Still running, or its outcome unknown: it may have
		// taken effect or not.
		return dflt.or(x.factorBefore(op, w.Seq)), true
	case x.mayHaveEnded(w, op.Invoke):
		return dflt.or(x.writtenRF(w)), true
	case w.Spec.ReplicationFactor > 0:
		return one(w.Spec.ReplicationFactor), true
	case w.Kind == Create:
		return dflt, true
	}
	return factors{}, false
}

// overlaps reports whether two writes ran at the same time: each was
// invoked before the other returned (a write with no answer runs to end).
func overlaps(a, b Op, end time.Duration) bool {
	ret := func(o Op) time.Duration {
		if o.Outcome != OK || o.Return < o.Invoke {
			return end
		}
		return o.Return
	}
	return a.Invoke <= ret(b) && b.Invoke <= ret(a)
}

// mayHaveEnded reports whether write w's definition may have made its
// last pop by t: a PUT to a timer that has ended is a create to the
// client, and whether a node takes its factor from the finished record it
// may still hold or gives it the default is not the history's to say.
func (x *index) mayHaveEnded(w Op, t time.Duration) bool {
	// The last pop is due at the earliest start plus its offset, and a
	// replica whose clock runs ahead may make it that much sooner. A
	// definition that never pops (repeat-for below its interval) has
	// ended as soon as it is written.
	last := w.Invoke + time.Duration(w.Spec.Pops())*w.Spec.Interval
	return last-x.h.MaxClockSkew <= t
}

// historyEnd is History.End, or the last recorded time if that is later.
func historyEnd(h *History) time.Duration {
	end := h.End
	for _, op := range h.Ops {
		end = max(end, op.Invoke, op.Return)
	}
	for _, p := range h.Pops {
		end = max(end, p.At)
	}
	for _, f := range h.Faults {
		end = max(end, f.At)
	}
	return end
}

// effReturn is when an op's effect is known to be settled one way or the
// other: its return, or never for an unknown outcome.
func effReturn(op Op) time.Duration {
	if op.Outcome == Unknown {
		return never
	}
	return op.Return
}

// cutoff is the earliest moment another op on d's timer may have taken
// effect after d: any op not strictly before d (not failed) may be
// linearized after it, from the later of the two invocations on. It
// also names what excuses d's pops from then on (superseded): the op ran
// with or after d, or it returned before d began and only the order of
// their versions lets it win (mayReorder, earlierAhead).
func (x *index) cutoff(d *def) (time.Duration, Excuse) {
	c, why := never, Excuse("")
	if d.op.Timer == 0 {
		return c, why
	}
	for _, e := range x.byTimer[d.op.Timer] {
		if e.Seq == d.op.Seq || e.Outcome == Failed {
			continue
		}
		before := effReturn(e) < d.op.Invoke
		ex := ExSuperseded
		switch {
		case !before:
		case x.mayReorder(e, d):
			ex = ExMayReorder
		case x.earlierAhead(e, d):
			ex = ExClockAhead
		default:
			continue
		}
		if at := max(e.Invoke, d.op.Invoke); at < c || at == c && !before {
			c, why = at, ex
		}
	}
	return c, why
}

// superseded names what excuses a pop of d that a later write may have
// replaced before its bound: that write, or, when it returned before d
// began, the order of their versions.
func (d *def) superseded() Excuse {
	if d.replacedBy != "" {
		return d.replacedBy
	}
	return ExSuperseded
}

// earlierAhead reports whether e, a write that returned before d began,
// may still win over d because the clock of e's proxy was stepped or
// drifted ahead further than the gap between them (clockAhead, G5's
// judgement of the same two writes): last-writer-wins keeps e's
// definition, so d, whose version orders below it, may never pop (a
// clock stepped 2m17s ahead versioned an rf 1 create that an update 26 s
// later through the other site met as a finished tombstone, and the
// update's pops never came: scenarios/README.md C37). A delete has no
// definition of its own here; G5 does not weigh it either.
func (x *index) earlierAhead(e Op, d *def) bool {
	ed := x.byOpaque[e.Spec.Opaque]
	return e.Kind != Delete && ed != nil && ed.op.Seq == e.Seq && x.clockAhead(ed, d.op)
}

// mayReorder reports whether e, a write that returned before d began, may
// still win over d. Versions come from the proxies' clocks, and with one
// or two replicas a single replica acknowledges a write (node's
// writeQuorum), so when faults touched both writes (e reached only the
// replica cut off from d's proxy, and its 409 could not reach d's proxy)
// and the clocks' spread exceeds the gap between them, e's version may
// order above d's and e's definition win once the split heals
// (scenarios/README.md N4). From three replicas on, acknowledged writes
// share a majority and cannot be reordered.
func (x *index) mayReorder(e Op, d *def) bool {
	return d.quorum == 1 && d.op.Invoke-e.Return < 2*x.h.MaxClockSkew &&
		x.touched(d, e.Invoke, e.Return) && x.touched(d, d.lo, min(d.hi, x.end))
}

// violation builds a Violation about definition d.
func (x *index) violation(g string, at time.Duration, d *def, msg string) Violation {
	return Violation{Guarantee: g, At: at, Timer: d.op.Timer,
		Message: fmt.Sprintf("%s (op %d %s %q)", msg, d.op.Seq, d.op.Kind, d.op.Spec.Opaque)}
}

func sortedSeqs(d *def) []int {
	seqs := make([]int, 0, len(d.bySeq))
	for s := range d.bySeq {
		seqs = append(seqs, s)
	}
	sort.Ints(seqs)
	return seqs
}

// accepted reports whether the endpoint accepted the pop: a replica whose
// callback is refused leaves that pop to the next replica, which pops it
// again (docs/design.md 4.7), and that is no duplicate. A status of 0 (not recorded)
// counts as accepted, so that a simulator that leaves Answered unset does
// not silently switch the duplicate and lost-pop checks off.
func accepted(p Pop) bool { return p.Answered == 0 || p.Answered >= 200 && p.Answered <= 299 }

// failed reports whether the replica that delivered p took its callback
// for a failure, and left the pop to the next replica (docs/design.md
// 4.7): the endpoint
// refused it, or answered after the service's timeout during a
// slow-callback fault (the simulator's slow endpoints answer after more
// than the 2 s the service waits).
func (x *index) failed(p Pop) bool { return !accepted(p) || x.tl.slowAt(p.URI, p.At) }

// hostOf is the host of a callback URI ("http://host/path").
func hostOf(uri string) string {
	if u, err := url.Parse(uri); err == nil {
		return u.Host
	}
	return ""
}
