package checker

import (
	"bytes"
	"fmt"
	"iter"
	"maps"
	"slices"
	"sort"
	"time"
)

// Per-timer attribution (docs/design.md section 3): a fault touches a
// definition only when it hits the timer's own replicas, the nodes that
// took its writes, their links, its callback endpoint, or a message about
// the timer. A fault elsewhere in the cluster excuses nothing.

// attribute resolves d's timer, replicas and hosts, and keeps the spans
// of the faults that touch it.
func (x *index) attribute(d *def) {
	d.timer = d.op.Timer
	if d.timer == 0 {
		// A create whose answer was lost: its pops name the timer.
		for _, seq := range sortedSeqs(d) {
			for _, i := range d.bySeq[seq] {
				if t := x.h.Pops[i].Timer; t != 0 && d.timer == 0 {
					d.timer = t
				}
			}
		}
	}
	d.nodes = map[string]bool{d.op.Node: true}
	if d.timer != 0 {
		for _, op := range x.byTimer[d.timer] {
			d.nodes[op.Node] = true
		}
	}
	switch {
	case len(x.h.Members) == 0:
		// No membership recorded: every fault may touch every timer.
		d.placed = false
	case d.timer == 0 || d.rfUnknown:
		// A create whose timer nobody learned, or a write whose
		// replication factor the history does not say: any member may
		// hold it.
		d.placed = false
		for _, m := range x.h.Members {
			d.nodes[m] = true
		}
		if d.timer != 0 && len(x.h.Sites) <= 1 {
			d.moves = x.movesOfFactors(d)
		}
	case len(x.h.Scales) > 0 && len(x.h.Sites) <= 1:
		d.placed = true
		x.placeEpochs(d)
		for _, r := range d.replicas {
			d.nodes[r] = true
		}
	default:
		d.placed = true
		var home int
		d.replicas, home = x.placement(d)
		d.rf = len(d.replicas) // the placement caps it at the members
		d.rfMin = d.rf
		d.quorum = ackQuorum(home)
		d.home = d.replicas
		for _, r := range d.replicas {
			d.nodes[r] = true
		}
		if len(x.h.Sites) > 1 {
			// A write reaches another site through the node its
			// address names, and so does every pop notice: that node
			// is on the timer's path like a replica.
			for _, site := range x.h.Sites {
				d.nodes[site[0]] = true
				d.relays = append(d.relays, site[0])
			}
		}
	}
	sets := replicaSets{d: d}
	for _, i := range x.tl.others {
		s := &x.tl.spans[i]
		switch {
		case !d.placed || x.affects(s.fault, d, sets.in(s.from, s.to)):
			d.own = append(d.own, s)
		case x.affects(s.fault, d, d.nodes):
			d.own = append(d.own, x.tl.writeOnly(i))
		}
	}
	d.common = x.commonSpans(d, &sets)
	d.own = appendSpans(d.own, d.moves)
	d.own = appendSpans(d.own, x.clockSpread(d))
	d.own = appendSpans(d.own, x.tl.byTimer[d.timer])
	if d.shared = x.sharedID(d); d.shared {
		// Excuse shared-id: another create was acknowledged under this
		// timer's ID, so the two timers' replicas refuse each other's
		// records and the survivor pops at whatever rank holds it.
		d.own = append(d.own, &span{from: 0, to: never, end: x.end, fault: Fault{Kind: sharedIDFault, Detail: "the twins may have issued this ID twice"}})
	}
	sort.SliceStable(d.own, func(i, j int) bool { return d.own[i].from < d.own[j].from })
}

// spans yields the faults that touch d, by start, and among those that
// start together in the order attribute found them: the timeline's, in
// its order, then d's own (its scales' moves, clock spreads, the message
// faults that name its timer, a shared ID). They come from two lists,
// each in that order, merged: d.own, held by d alone, and d.common, the
// timeline's message faults that touch d, a list each definition the
// same message faults touch holds in common (see commonSpans).
func (d *def) spans() iter.Seq[*span] {
	var common []*span
	if d.common != nil {
		common = d.common.spans
	}
	return mergeSpans(d.own, common)
}

// mergeSpans yields own and common (each by start, common the
// timeline's alone) merged as def.spans lists them.
func mergeSpans(own, common []*span) iter.Seq[*span] {
	return func(yield func(*span) bool) {
		for len(own) > 0 && len(common) > 0 {
			next := own[0]
			if s := common[0]; s.from < next.from || s.from == next.from && (next.seq == 0 || s.seq < next.seq) {
				next, common = s, common[1:]
			} else {
				own = own[1:]
			}
			if !yield(next) {
				return
			}
		}
		for _, rest := range [2][]*span{own, common} {
			for _, s := range rest {
				if !yield(s) {
					return
				}
			}
		}
	}
}

// commonList is a list of the timeline's message faults that touch a
// definition, by start, which every definition they touch alike holds
// (see commonSpans); links files its waits as def.links does.
type commonList struct {
	spans []*span
	links map[link][]*span
}

// fileWaits files the waits among spans by kind and link, in order.
func fileWaits(spans []*span) map[link][]*span {
	links := map[link][]*span{}
	for _, s := range spans {
		if f := s.fault; (f.Kind == Overload || f.Kind == Queued) && len(f.Nodes) > 0 && len(f.Peers) > 0 {
			k := link{f.Kind, f.Nodes[0], f.Peers[0]}
			links[k] = append(links[k], s)
		}
	}
	return links
}

// messageFiling files the timeline's message faults (none names a timer:
// those are filed by it, timeline.byTimer) by what decides whether one
// touches a definition (affects): its kind, its nodes and peers, and the
// stretches between the scales' epoch bounds (epochsOf: a scale's start,
// and FaultSettle after its end) its start and end fall in, as a
// definition's placement changes only there (its epochs begin at such
// bounds, so epochAt is the same anywhere in one stretch). A run whose
// nodes refuse or wait many messages naming no timer holds tens of
// thousands of them (scenarios/README.md U36: 50,500 waits), and testing
// each against each definition, then copying those that touch it into
// the definition's own list, made attribution a product of the two
// (91.5 million attributions, two minutes, gigabytes of memory).
type messageFiling struct {
	// class is the class of each message fault, by its index in
	// timeline.messages; first, a message fault of each class.
	class []int
	first []int
	// lists are the lists of message faults that touch a definition,
	// keyed by which classes touch it and how (see commonSpans): every
	// definition the same classes touch holds the same list.
	lists map[string]*commonList
}

// fileMessages builds x's messageFiling.
func (x *index) fileMessages() *messageFiling {
	var cuts []time.Duration
	for _, s := range x.h.Scales {
		cuts = append(cuts, s.Start)
		if s.End != 0 {
			cuts = append(cuts, s.End+x.o.FaultSettle)
		}
	}
	slices.Sort(cuts)
	stretch := func(t time.Duration) int {
		n, _ := slices.BinarySearch(cuts, t+1) // the bounds at or before t
		return n
	}
	mf := &messageFiling{class: make([]int, len(x.tl.messages)), lists: map[string]*commonList{}}
	classes := map[string]int{}
	for j, i := range x.tl.messages {
		s := &x.tl.spans[i]
		key := fmt.Sprintf("%s|%q|%q|%d|%d", s.fault.Kind, s.fault.Nodes, s.fault.Peers, stretch(s.from), stretch(s.to))
		c, ok := classes[key]
		if !ok {
			c = len(mf.first)
			classes[key] = c
			mf.first = append(mf.first, i)
		}
		mf.class[j] = c
	}
	return mf
}

// commonSpans is the list of the timeline's message faults that touch d
// (as attribute weighs the timeline's other faults, and so as the
// product of every such fault and d would find them), by start: each
// class of them (messageFiling) is weighed once, on its first fault,
// and the list is made once for every definition the same classes touch
// alike. A definition's list counts towards Options.MaxAttributed when
// it is first made (index.attributedCommon).
func (x *index) commonSpans(d *def, sets *replicaSets) *commonList {
	if x.messages == nil {
		x.messages = x.fileMessages()
	}
	mf := x.messages
	const (
		untouched = '0'
		touches   = '1'
		writeOnly = '2'
	)
	how := make([]byte, len(mf.first))
	for c, i := range mf.first {
		s := &x.tl.spans[i]
		switch {
		case !d.placed || x.affects(s.fault, d, sets.in(s.from, s.to)):
			how[c] = touches
		case x.affects(s.fault, d, d.nodes):
			how[c] = writeOnly
		default:
			how[c] = untouched
		}
	}
	if list, ok := mf.lists[string(how)]; ok {
		return list
	}
	if !bytes.ContainsAny(how, string([]byte{touches, writeOnly})) {
		mf.lists[string(how)] = nil
		return nil
	}
	var list []*span
	for j, i := range x.tl.messages {
		switch how[mf.class[j]] {
		case touches:
			list = append(list, &x.tl.spans[i])
		case writeOnly:
			list = append(list, x.tl.writeOnly(i))
		}
	}
	sort.SliceStable(list, func(i, j int) bool { return list[i].from < list[j].from })
	mf.lists[string(how)] = &commonList{spans: list}
	x.attributedCommon += len(list)
	return mf.lists[string(how)]
}

// appendSpans appends a pointer to each of spans to to. The spans are
// shared, never changed: a definition's list of the faults that touch it
// costs a pointer a fault, however large the fault (and a run may
// record tens of thousands of message faults that touch every timer).
func appendSpans(to []*span, spans []span) []*span {
	for i := range spans {
		to = append(to, &spans[i])
	}
	return to
}

// replicaSets is replicaSetIn for the spans of one definition,
// memoised by the epochs a span runs through: without scales that is one
// set for every span of the run.
type replicaSets struct {
	d    *def
	sets map[[2]int]map[string]bool
}

func (r *replicaSets) in(a, b time.Duration) map[string]bool {
	key := [2]int{r.d.epochAt(a), r.d.epochAt(b)}
	if set, ok := r.sets[key]; ok {
		return set
	}
	if r.sets == nil {
		r.sets = map[[2]int]map[string]bool{}
	}
	set := r.d.replicaSetIn(a, b)
	r.sets[key] = set
	return set
}

// placement is d's replicas, in rank order: with one site, the timer's
// replicas among the members; with several, those of the site of the node
// that took the write, then those of each other site in turn (a remote
// replica pops a whole site's ranks later, as the node's skew does).
// It also returns how many of them are in that first site.
func (x *index) placement(d *def) ([]string, int) {
	if len(x.h.Sites) <= 1 {
		out := Replicas(x.h.Members, d.timer, d.rf)
		return out, len(out)
	}
	home := x.homeSite(d)
	out := Replicas(x.h.Sites[home], d.timer, d.rf)
	n := len(out)
	for i, site := range x.h.Sites {
		if i != home {
			out = append(out, Replicas(site, d.timer, d.rf)...)
		}
	}
	return out, n
}

// homeSite is the index in History.Sites of the site of the node that
// took d's write (the first, when it is at none).
func (x *index) homeSite(d *def) int {
	return max(0, x.siteOf(d.op.Node))
}

// siteOf is the index in History.Sites of node n's site, -1 for none.
func (x *index) siteOf(n string) int {
	return slices.IndexFunc(x.h.Sites, func(site []string) bool { return slices.Contains(site, n) })
}

// replicaSetIn is the nodes that may hold d somewhere in [a, b] (its
// replicas, of the placement before and after a scale that moves it), and
// the nodes that relay its messages to other sites, as a set.
func (d *def) replicaSetIn(a, b time.Duration) map[string]bool {
	set := make(map[string]bool, len(d.replicas)+len(d.relays))
	for _, r := range slices.Concat(d.nodesIn(a, b), d.relays) {
		set[r] = true
	}
	return set
}

// affects reports whether fault f (not a message fault about a known
// timer: those are filed by timer) touches definition d through the given
// nodes of it (its replicas, or all its nodes).
func (x *index) affects(f Fault, d *def, nodes map[string]bool) bool {
	switch f.Kind {
	case ClockJump, ClockDrift:
		return false // see clockSpread
	case Crash, Pause, DiskFull, DiskLie, DiskCorrupt, DiskWiped:
		return meets(f.Nodes, nodes)
	case Partition, Clog:
		// A cut link between two of the timer's hosts (its nodes and its
		// callback endpoint), whichever way the cut runs.
		hosts := func(xs []string) bool { return meets(xs, nodes) || slices.Contains(xs, d.host) }
		return hosts(f.Nodes) && hosts(f.Peers)
	case SlowCallback, FailCallback:
		return slices.Contains(f.Nodes, d.op.Spec.URI)
	case Lost, Duplicated, Reordered, Overload, Queued, Late:
		// A message about no known timer, on a link between its nodes.
		return f.Timer == 0 && meets(f.Nodes, nodes) && meets(f.Peers, nodes)
	}
	return true // kinds the checker does not know
}

// sharedIDFault marks a timer whose ID two timers may share: a
// misconfiguration (two members with one instance number) that the
// node's collision defence cannot always undo when the refusal is lost
// (scenarios/README.md I2).
const sharedIDFault FaultKind = "shared-id"

// copiesLostFault marks a pop that fell due after every copy of its timer
// may have been lost (see lossFrom): it comes, if at all, from copies that
// notices revive, on several replicas at once, each catching up on what is
// overdue (scenarios/README.md R1).
const copiesLostFault FaultKind = "copies-lost"

// sharedID reports whether another timer may share d's ID, from the
// plan's twins alone (see mayShareID), never from a node's collision
// answer; or whether d's pops name another ID the twins may have
// issued twice: the proxy that met a collision writes the create again
// under a new ID and withdraws the first, but a replica may pop the
// first before the withdrawal reaches it.
func (x *index) sharedID(d *def) bool {
	if d.timer != 0 && x.mayShareID(d.timer) {
		return true
	}
	for _, seq := range sortedSeqs(d) {
		for _, i := range d.bySeq[seq] {
			if t := x.h.Pops[i].Timer; t != 0 && t != d.timer && x.mayShareID(t) {
				return true
			}
		}
	}
	return false
}

func meets(xs []string, set map[string]bool) bool {
	for _, s := range xs {
		if set[s] {
			return true
		}
	}
	return false
}

// clockSpreadFault marks a stretch in which the clocks of a timer's nodes
// had moved apart from true time by more than spreadMargin in all.
const clockSpreadFault FaultKind = "clock-spread"

// clockSpread returns the stretches in which the clocks of d's nodes had
// moved (by jumps and drift) more than the margin a backup's skew leaves,
// summed over the nodes: only then can one replica pop before another's
// notice arrives, or so late that the next one pops too. A clock that
// moved less touches no timer: a pop it makes early is judged by G1 with
// the clock's gain, and one it makes late by G3 with the clock's lag.
// Without a membership, every clock change touches every timer.
func (x *index) clockSpread(d *def) []span {
	var out []span
	margin := x.spreadMargin()
	var open *span
	for _, t := range x.tl.clockTimes() {
		var sum time.Duration
		for n := range x.tl.clocks {
			if !d.placed || d.nodes[n] {
				sum += x.tl.offset(n, t).Abs()
			}
		}
		switch {
		case sum > margin && open == nil:
			open = &span{from: t, fault: Fault{At: t, Kind: clockSpreadFault, Detail: "clocks moved " + sum.String()}}
		case sum <= margin && open != nil:
			open.end, open.to = t, t+x.o.FaultSettle
			out = append(out, *open)
			open = nil
		}
	}
	if open != nil {
		open.end, open.to = x.tl.horizon(open.from, x.end), x.tl.horizon(open.from, x.end)+x.o.FaultSettle
		out = append(out, *open)
	}
	return out
}

// startSpreadFault marks a write whose replication to a replica waited,
// for its sender, in its receiver's queue or both, longer than the margin
// a backup's rank skew leaves (spreadMargin), less how far the clocks of
// the timer's nodes moved since they took their starts (clocksMoved): see
// startSpread.
const startSpreadFault FaultKind = "start-spread"

// startSpread is the wait that set d's replicas' starts apart, for pop k
// (scenarios/README.md C8): a replica rebuilds the start
// when it processes the write's replication, so one whose message waited
// w starts w later than the proxy that took the write, however early the
// client had its answer; past spreadMargin (with what the clocks of the
// timer's nodes moved since they took their starts, clocksMoved, which
// adds to the wait) its pop meets the next rank's
// (a duplicate, G4) until a notice brings it the earliest start. So it
// touches the pops due before the timer's first successful delivery, and
// later ones only while the late replica was not set right (see
// spreadLasts), and only with such a wait on a record message of the
// write (sent while it ran: see waitedRecord).
func (x *index) startSpread(d *def, k int) (Fault, bool) {
	lo, _ := d.due(k)
	oks := x.copyFailures(d).oks
	afterFirst := len(oks) > 0 && lo > oks[0].At
	ret := min(d.hi, x.end)
	var ms []waitedMsg
	spread := map[string]bool{}
	for _, m := range x.waitedRecords(d) {
		if !d.nodes[m.to] && d.placed || m.sent < d.lo || m.sent > ret || m.w+m.q+x.clocksMoved(d, m, lo) <= x.spreadMargin() {
			continue
		}
		ms, spread[m.to] = append(ms, m), true
	}
	for _, m := range ms {
		if afterFirst && !x.spreadLasts(d, m.to, spread, lo) {
			continue
		}
		detail := "the write's replication waited " + (m.w + m.q).String()
		if moved := x.clocksMoved(d, m, lo); moved > 0 {
			detail += " and the clocks of its nodes moved " + moved.String() + " since"
		}
		return Fault{At: m.at, Kind: startSpreadFault, Nodes: []string{m.from}, Peers: []string{m.to},
			Detail: detail, Timer: d.timer}, true
	}
	return Fault{}, false
}

// clocksMoved is how much further apart the clocks of d's nodes moved
// the late replica's schedule from another's, between the moments they
// took the start that waited message m set apart and the pop due at lo:
// the receiver m.to rebuilt its start when it processed m (its send and
// inbound waits past the send), every other node when the write ran. A
// node holds its start on its own clock, so a clock that gained g since
// makes its pops g earlier in true time: another node q's turn comes
// g(q) - g(m.to) nearer to the late replica's than m's wait alone puts
// it, the most over q. Each of the two may be within spreadMargin alone
// while their sum is not (scenarios/README.md C41); offsets at one
// instant (clockSpread) do not show it, since a clock set right after
// its node took the start keeps the shift. A movement that draws the
// schedules together counts nothing.
func (x *index) clocksMoved(d *def, m waitedMsg, lo time.Duration) time.Duration {
	gain := func(n string, took time.Duration) time.Duration {
		if took >= lo {
			return 0
		}
		return x.tl.offset(n, lo) - x.tl.offset(n, took)
	}
	late := gain(m.to, m.sent+m.w+m.q)
	var most time.Duration
	for n := range x.tl.clocks {
		if n == m.to || d.placed && !d.nodes[n] {
			continue
		}
		most = max(most, gain(n, m.sent)-late)
	}
	// A node of d whose clock never moved gained nothing.
	return max(most, -late)
}

// clockMovedFault marks a pop due after the clocks that may have held its
// timer's start moved, since the write, further than the margin a
// backup's rank skew leaves: see clocksMovedSinceWrite.
const clockMovedFault FaultKind = "clock-moved"

// clocksMovedSinceWrite reports whether the clocks of the nodes that may
// have held d's start (startHolders) moved, between d's write and upTo,
// further than spreadMargin: what they gained (jumps ahead and fast
// drift, every holder's, as forward counts for G1) plus the most one of
// them lost (jumps back and slow drift) beyond its own gain. A node holds
// its start on its own clock and hands it on as a delta, so a replica's
// schedule is early in true time by what the clocks that held its start
// gained while they held it, and late by what its own clock lost since
// it took it less what it gained meanwhile (a replica takes only an
// earlier start than its own, so a late one is handed on only to a
// replica without a copy; and what the late node gained while it held
// the start is in the early one's chain and its own lateness, once); a
// later rank's turn early by the one and an earlier rank's late by the
// other meet once the two pass the margin, and the later replica pops
// before the earlier one's notice arrives (a duplicate, G4 only). The
// offsets at one instant (clockSpread) do not show it: a clock stepped
// back when its node took an earlier start from a notice, and ahead
// since, holds that start early by the whole step ahead while its offset,
// summed with the others', stays within the margin (scenarios/README.md
// C45: -1 s, then +2 s).
func (x *index) clocksMovedSinceWrite(d *def, upTo time.Duration) (Fault, bool) {
	if len(x.tl.clocks) == 0 {
		return Fault{}, false
	}
	var gained, late time.Duration
	for n := range x.tl.clocks {
		if d.placed && !x.startHolders(d)[n] {
			continue
		}
		g := x.tl.gain(n, d.lo, upTo)
		gained += g
		late = max(late, x.tl.lag(n, upTo)-x.tl.lag(n, d.lo)-g)
	}
	moved := gained + late
	if moved <= x.spreadMargin() {
		return Fault{}, false
	}
	return Fault{At: d.lo, Kind: clockMovedFault, Timer: d.timer,
		Detail: "the clocks that may have held its start moved " + moved.String() + " since the write"}, true
}

// spreadLasts reports whether replica r, whose copy of d started late
// (one of spread, the replicas a waited replication set apart), may
// still hold that start when a pop falls due at lo: no successful pop
// made a healthy delay before lo set it right. The node takes the
// earliest start a record of the definition brings (docs/design.md
// 4.15), so r is set right by the notice of a pop from a replica the
// write reached in time, unless a cut or loss kept that notice from r
// (noticeKept) or it waited, so that r rebuilt its start late by the wait
// (noticeWaited); or by the answer to r's own notice from such a
// replica that kept its copy, unless the notice or the answer was lost
// (replyLost). When every replica of the placement was set apart, none
// holds the true start to hand on, and the pops after the first
// delivery are judged as before it was known: not excused by the spread
// (TestStartSpreadLastsWhileItsNoticesAreKept).
func (x *index) spreadLasts(d *def, r string, spread map[string]bool, lo time.Duration) bool {
	ranked := d.rankedIn(d.lo, lo)
	if !d.placed || d.shared || !slices.ContainsFunc(ranked, func(q string) bool { return !spread[q] }) {
		return false
	}
	for _, p := range x.copyFailures(d).oks {
		if p.At+x.healthyLate() >= lo {
			break
		}
		if p.Node != r && !spread[p.Node] && !x.noticeKept(d, p.Node, r, p.At) && !x.noticeWaited(d, p.Node, r, p.At) {
			return false
		}
		if p.Node != r {
			continue
		}
		for _, q := range ranked {
			if q != r && !spread[q] && x.keptCopy(d, q, p.At) && !x.noticeKept(d, r, q, p.At) && !x.replyLost(d, q, r, p.At) {
				return false
			}
		}
	}
	return true
}

// spreadMargin is how far the clocks of a timer's nodes may move apart in
// all before a backup's rank skew no longer separates the replicas' pops:
// the skew less the lateness slack a healthy pop may use.
func (x *index) spreadMargin() time.Duration {
	return x.o.ReplicaSkew - x.o.FaultFreeLate - time.Duration(x.o.NetHops)*x.h.MaxNetDelay
}

// popTouched reports whether a fault touched pop k of d: one active
// around the pop (from its earliest due time less the worst rank delay to
// upTo, at least its rank bound), around the pop before it (or the write,
// for pop 1), whose popped notice sets the replicas right for this one, or
// around another write of the timer in between; or, at any time since the
// pop before, a fault whose effect outlasts it: a crash (the restarted
// node holds no copy until a notice brings one), a lost or delayed message
// about the timer (a replica left stale), a clock spread, a shared ID. A
// partition, pause or callback fault in a quiet gap between two pops moves
// no message of the timer.
func (x *index) popTouched(d *def, k int, upTo time.Duration) bool {
	_, ok := x.popFault(d, k, upTo, nil)
	return ok
}

// popFault is the first fault that touched pop k of d (see popTouched).
// skip, when not nil, leaves out the faults it reports (see
// checkDuplicates).
func (x *index) popFault(d *def, k int, upTo time.Duration, skip func(Fault) bool) (Fault, bool) {
	r := x.rankBound(d)
	pl, ph := d.lo, d.hi
	if k > 1 {
		pl, ph = d.due(k - 1)
	}
	lo, hi := d.due(k)
	upTo = max(upTo, hi+r)
	around := append([][2]time.Duration{{pl - r, ph + r}, {lo - r, upTo}}, x.writeWindows(d, pl-r, upTo)...)
	for s := range d.spans() {
		if s.from > upTo {
			break
		}
		if skip != nil && skip(s.fault) {
			continue
		}
		if _, record, ok := s.queuedWait(); ok && !record {
			// A callback that waited in its endpoint's queue makes
			// that delivery late by its wait (sendWait) and nothing
			// else: a duplicate after it is the pop path's (L2).
			continue
		}
		if s.writeOnly {
			for _, w := range around[2:] {
				if s.to >= w[0] && s.from <= w[1] {
					return s.fault, true
				}
			}
			continue
		}
		if lasting(s.fault.Kind) && s.to >= pl-r || s.fault.Kind == clockSpreadFault && s.to >= d.lo {
			return s.fault, true
		}
		for _, w := range around {
			if s.to >= w[0] && s.from <= w[1] {
				return s.fault, true
			}
		}
	}
	return Fault{}, false
}

// writeWindows lists when the writes of d's timer that ran within
// [from, upTo] ran. A create whose answer was lost is filed under no
// timer (the client never learned its ID), so its own write is added: a
// cut while it ran may have kept it from replicas that a notice later
// brings it to, all at once.
func (x *index) writeWindows(d *def, from, upTo time.Duration) [][2]time.Duration {
	ops := x.byTimer[d.timer]
	if d.op.Timer == 0 {
		ops = append([]Op{d.op}, ops...)
	}
	var out [][2]time.Duration
	for _, op := range ops {
		if ret := min(effReturn(op), x.end); ret >= from && op.Invoke <= upTo {
			out = append(out, [2]time.Duration{op.Invoke, ret})
		}
	}
	return out
}

// dupFault is the first fault that may have made pop k of d be delivered
// twice: one active around the pop itself (from its earliest due time
// less the worst rank delay to upTo, its last delivery) or around a write
// of the timer then, or a clock spread or shared ID at any time. A fault
// around the pop before only duplicates that one; a replica that crashed
// before holds no copy, so it cannot pop this one twice. skip is
// popFault's.
func (x *index) dupFault(d *def, k int, upTo time.Duration, skip func(Fault) bool) (Fault, bool) {
	if f, ok := x.startSpread(d, k); ok {
		return f, true
	}
	r := x.rankBound(d)
	lo, hi := d.due(k)
	upTo = max(upTo, hi+r)
	if f, ok := x.clocksMovedSinceWrite(d, upTo); ok {
		return f, true
	}
	around := append([][2]time.Duration{{lo - r, upTo}}, x.writeWindows(d, lo-r, upTo)...)
	for s := range d.spans() {
		if s.from > upTo {
			break
		}
		if skip != nil && skip(s.fault) {
			continue
		}
		if k := s.fault.Kind; (k == clockSpreadFault || k == sharedIDFault) && s.to >= d.lo {
			// A schedule held while clocks were apart keeps the shift
			// once they are set right (starts travel as deltas).
			return s.fault, true
		}
		if _, record, ok := s.queuedWait(); ok && (!record || d.placed && !d.nodes[s.fault.Peers[0]]) {
			// A callback that waited at its endpoint was made once and
			// arrives late (a late first delivery is weighed below, see
			// mayDuplicate); a record that waited at a node of no role
			// told no replica late of a pop. Neither delivers a pop twice.
			continue
		}
		ws := around
		if s.writeOnly {
			ws = around[1:]
		}
		for _, w := range ws {
			if s.to >= w[0] && s.from <= w[1] {
				return s.fault, true
			}
		}
	}
	return Fault{}, false
}

// lasting reports the faults whose effect on a timer outlasts them.
func lasting(k FaultKind) bool {
	switch k {
	case Pause, Partition, Clog, SlowCallback, FailCallback:
		return false
	}
	return true
}

// touched reports whether a fault that touches d was active in [a, b].
func (x *index) touched(d *def, a, b time.Duration) bool { return x.touchedBut(d, a, b, nil) }

// touchedBut is touched, passing over the spans skip (if not nil)
// reports true for.
func (x *index) touchedBut(d *def, a, b time.Duration, skip func(*span) bool) bool {
	for s := range d.spans() {
		if s.from > b {
			break
		}
		if s.to >= a && (skip == nil || !skip(s)) {
			return true
		}
	}
	return false
}

// reachOf is the definitions whose copies write op must reach: the one it
// wrote, or for a delete every definition of its timer invoked before the
// delete returned. Any of those may be the live one where the delete
// lands, and the node sends its tombstone to the replicas of each (the
// held factor's and the default's, and the nodes the ID names), so a
// fault on any of their replicas may keep the delete from one.
func (x *index) reachOf(op Op) []*def {
	if d := x.byOpaque[op.Spec.Opaque]; op.Kind != Delete && d != nil && d.op.Seq == op.Seq {
		return []*def{d}
	}
	var out []*def
	for _, d := range x.defs {
		if op.Timer != 0 && d.timer == op.Timer && d.op.Invoke <= effReturn(op) {
			out = append(out, d)
		}
	}
	return out
}

// writeHit reports whether a fault may have kept write op from one of its
// timer's replicas, and from when: the node that took it or a replica was
// down, a cut separated them (or a replica from the callback endpoint)
// while it ran, or a request about the timer was lost on its way. A fault
// that moved no message of the write (a clock, a cut elsewhere) leaves
// every replica with it, and the write is held to G5.
func (x *index) writeHit(op Op) (time.Duration, bool) {
	at, hit, _ := x.writeHitBy(op)
	return at, hit
}

// writeHitBy is writeHit, also reporting the excuse that alone made the
// fault a hit: "" when the fault itself kept the write from a replica,
// ExSiteLag when only the site-lag excuse did (see missedAtSites),
// ExInboundKept when only a replication that its receiver's inbound
// queue kept past the write's stick limit did (see inboundKept). A delete is
// hit when a fault may have kept it from a replica of any definition it
// must reach (reachOf).
func (x *index) writeHitBy(op Op) (at time.Duration, hit bool, why Excuse) {
	ds := x.reachOf(op)
	if len(ds) == 0 {
		return x.spansHit(op, slices.Values(x.allSpans()))
	}
	at = never
	for _, d := range ds {
		a, h, w := x.defWriteHit(op, d)
		// Prefer a hit without an excuse of its own, then the earliest.
		if h && (!hit || (why != "" && w == "") || (w == "") == (why == "") && a < at) {
			at, hit, why = a, true, w
		}
	}
	return at, hit, why
}

// startHolders is every node that may have held d's start and handed it
// on: d's own nodes (its replicas and the nodes that took its writes), and
// the nodes that hold an older copy of its timer, which a write replaces
// in place (the node's alsoHolders, docs/design.md 4.5): the replicas of
// the default factor and those of the timer's other definitions, at every
// site. Such a node answers a notice of d with its earlier start, or a
// stale one with d (read repair), and a site's relay answers a forward
// with its site's earliest, each rebuilt from what the holder's own clock
// measured since (a 409 at 14.6 s from a clock running fast handed a
// replica a start 36 ms early).
func (x *index) startHolders(d *def) map[string]bool {
	if d.holders != nil {
		return d.holders
	}
	d.holders = maps.Clone(d.nodes)
	if d.placed {
		for _, o := range x.defsOf(d.timer) {
			for n := range o.nodes {
				d.holders[n] = true
			}
		}
		sites := x.h.Sites
		if len(sites) <= 1 {
			sites = [][]string{x.h.Members}
		}
		for _, members := range sites {
			for _, n := range Replicas(members, d.timer, x.o.DefaultReplicationFactor) {
				d.holders[n] = true
			}
		}
	}
	return d.holders
}

// defsOf is the definitions of timer (none for 0, an unknown timer).
func (x *index) defsOf(timer uint64) []*def {
	if timer == 0 {
		return nil
	}
	if x.defsByTimer == nil {
		x.defsByTimer = map[uint64][]*def{}
		for _, o := range x.defs {
			if o.timer != 0 {
				x.defsByTimer[o.timer] = append(x.defsByTimer[o.timer], o)
			}
		}
	}
	return x.defsByTimer[timer]
}

// spansHit reports the first of spans that overlaps write op.
func (x *index) spansHit(op Op, spans iter.Seq[*span]) (at time.Duration, hit bool, why Excuse) {
	ret := min(effReturn(op), x.end)
	for s := range spans {
		if s.from <= ret && s.to >= op.Invoke {
			return max(s.from, op.Invoke), true, ""
		}
	}
	return never, false, ""
}

// allSpans is every span of the timeline, as spansHit takes them, listed
// once per index.
func (x *index) allSpans() []*span {
	if x.tlSpans == nil {
		x.tlSpans = appendSpans(make([]*span, 0, len(x.tl.spans)), x.tl.spans)
	}
	return x.tlSpans
}

// defWriteHit is writeHitBy for the copies of one definition d.
func (x *index) defWriteHit(op Op, d *def) (at time.Duration, hit bool, why Excuse) {
	ret := min(effReturn(op), x.end)
	if !d.placed {
		return x.spansHit(op, d.spans())
	}
	missed := x.downNodes(d, op.Invoke, ret)
	for s := range d.spans() {
		if s.from <= ret && s.to >= op.Invoke && lostRequest(s.fault) {
			missed[s.fault.Peers[0]] = true
		}
	}
	addAll(missed, x.diskFaulty(d, op.Invoke, ret))
	hitBy := func() bool { return missed[op.Node] || meets(d.replicas, missed) || meets(d.relays, missed) }
	if hitBy() {
		return op.Invoke, true, ""
	}
	for s := range d.spans() {
		if r, ok := x.inboundKept(d, s, op, ret); ok {
			missed[r] = true
		}
	}
	if hitBy() {
		return op.Invoke, true, ExInboundKept
	}
	lagged := x.missedAtSites(d, op.Node, ret, true, missed)
	for s := range d.spans() {
		if x.queuedPastLag(s, op.Node, ret) && !missed[s.fault.Peers[0]] {
			missed[s.fault.Peers[0]] = true
			lagged = true
		}
	}
	if lagged && hitBy() {
		return op.Invoke, true, ExSiteLag
	}
	return never, false, ""
}

// forward is how far the clocks of d's nodes moved ahead of true time in
// [a, b], beyond the rate of true time: forward jumps and fast drift. Start
// times travel between replicas as deltas (api.md's start-time-delta), so
// a clock's offset from true time cancels out, and a pop can be early only
// by what a clock that held the schedule gained while it held it. The
// clocks are those of every node that may have held d's start (see
// startHolders).
func (x *index) forward(d *def, a, b time.Duration) time.Duration {
	var sum time.Duration
	for n := range x.startHolders(d) {
		sum += x.tl.gain(n, a, b)
	}
	if !d.placed {
		for n := range x.tl.clocks {
			if !d.nodes[n] {
				sum += x.tl.gain(n, a, b)
			}
		}
	}
	return sum
}
