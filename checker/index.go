package checker

import (
	"fmt"
	"maps"
	"net/url"
	"slices"
	"sort"
	"strings"
	"time"
)

// def is one definition: a create or update attempt and the pops that carry
// its opaque.
type def struct {
	op Op
	// lo and hi bound the start time: the op's invoke and its return (the
	// end of history when the outcome is unknown).
	lo, hi time.Duration
	rf     int
	// quorum is how many replicas acknowledge a write: a majority of the
	// replicas in the write's own site from three up, else one (node's
	// writeQuorum, docs/design.md 4.11). Other sites are not waited for.
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
	// cutoff is the earliest a later op on the timer may have replaced it.
	cutoff time.Duration
	// held is how long the write's replication may have been held up on
	// its way to a replica, and late the replicas it held (see heldFor).
	held time.Duration
	late map[string]bool
	// timer is the timer's ID: the op's, or for a create whose answer was
	// lost the one its pops name (0: unknown).
	timer uint64
	// placed is true when the replicas are known (the history names the
	// members and the timer is known); replicas are then the reference
	// placement, primary first. nodes are the replicas and every node
	// that took a write of the timer (all members when not placed).
	placed   bool
	shared   bool // see sharedID
	replicas []string
	relays   []string // each site's address node, when there are several
	nodes    map[string]bool
	// spans are the faults that touch d, by start (see attribute).
	spans []span
	// missed and failures cache missedWrite and copyFailures, once spans
	// are known.
	missed   map[string]bool
	failures *copyFailures
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
	// endpoints is the callback hosts, told apart from nodes in faults.
	endpoints map[string]bool
	// orphans are pops whose opaque no create or update sent.
	orphans []int
	// keyOf is each write's porcupine partition key and taint when a
	// fault first hit a write of that partition (see epochs).
	keyOf map[int]string
	taint map[string]time.Duration
}

// newIndex attributes every pop to its definition.
func newIndex(h *History, o Options) *index {
	x := &index{h: h, o: o, end: historyEnd(h), byOpaque: map[string]*def{}, byTimer: map[uint64][]Op{}, endpoints: map[string]bool{}}
	x.tl = buildTimeline(h, x.end, o.FaultSettle)
	ops := append([]Op(nil), h.Ops...)
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Seq < ops[j].Seq })
	for _, op := range ops {
		if op.Timer != 0 {
			x.byTimer[op.Timer] = append(x.byTimer[op.Timer], op)
		}
		if op.Kind == Delete {
			continue
		}
		if _, dup := x.byOpaque[op.Spec.Opaque]; dup {
			continue // the first attempt with an opaque owns it
		}
		d := x.newDef(op)
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
	for _, d := range x.defs {
		for _, idx := range d.bySeq {
			sort.SliceStable(idx, func(i, j int) bool { return h.Pops[idx[i]].At < h.Pops[idx[j]].At })
		}
		x.attribute(d)
	}
	x.epochs()
	for _, d := range x.defs {
		d.cutoff = x.cutoff(d)
		d.lossFrom = x.lossFrom(d)
		d.held, d.late = x.heldFor(d)
	}
	return x
}

func (x *index) newDef(op Op) *def {
	d := &def{op: op, lo: op.Invoke, hi: op.Return, rf: op.Spec.ReplicationFactor, host: hostOf(op.Spec.URI), bySeq: map[int][]int{}}
	if op.Outcome == Unknown || d.hi < d.lo {
		d.hi = x.end
	}
	if d.rf < 1 {
		d.rf = x.o.DefaultReplicationFactor
	}
	d.quorum = ackQuorum(d.rf)
	d.key = timerKey(op.Timer)
	if op.Timer == 0 {
		d.key = fmt.Sprintf("op %d", op.Seq)
	}
	return d
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
// linearized after it, from the later of the two invocations on.
func (x *index) cutoff(d *def) time.Duration {
	c := never
	if d.op.Timer == 0 {
		return c
	}
	for _, e := range x.byTimer[d.op.Timer] {
		if e.Seq == d.op.Seq || e.Outcome == Failed || effReturn(e) < d.op.Invoke && !x.mayReorder(e, d) {
			continue
		}
		c = min(c, max(e.Invoke, d.op.Invoke))
	}
	return c
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

// slack is what every lateness bound adds: the fault-free allowance, the
// network hops and the clock skew of a node that runs behind.
func (x *index) slack() time.Duration {
	return x.healthyLate() + x.h.MaxClockSkew
}

// healthyLate is how late a pop with no fault around it and no clock
// moved may arrive: the fault-free allowance and the network hops.
func (x *index) healthyLate() time.Duration {
	return x.o.FaultFreeLate + time.Duration(x.o.NetHops)*x.h.MaxNetDelay
}

// rankBound is G3's bound with replica failures, for the worst rank.
func (x *index) rankBound(d *def) time.Duration {
	return x.o.ReplicaSkew*time.Duration(d.rf-1) + x.slack()
}

// window is the stretch around pop k in which a fault "touches" it: from
// the previous pop's earliest due time (or the write, for pop 1) less the
// worst rank delay, to the latest bound. A fault around the previous pop
// still counts: a replica that dropped its copy on a failed callback, or
// missed the popped notice, is only set right by the next pop's notice,
// so until then the timer runs on a backup's schedule.
func (x *index) window(d *def, k int) (a, b time.Duration) {
	lo, hi := d.due(k)
	r := x.rankBound(d)
	return lo - d.op.Spec.Interval - r, hi + r
}

// lateBound is how late after its latest due time pop k may first arrive,
// and false when no bound applies (all replicas may have been down). A
// copy dropped before the pop's window (a failed callback, a missed
// write, not revived since) stays dropped however long ago its fault
// ended: then a replica that holds one pops it, at its rank, or, with
// none left, whoever a notice revives, whenever (pop 6 of seed 5912).
func (x *index) lateBound(d *def, k int) (time.Duration, bool) {
	a, b := x.window(d, k)
	var out, strict map[string]bool
	if x.popTouched(d, k, b) {
		out, strict = x.withoutCopy(d, a, b)
	} else {
		out, strict = x.dropped(d, a, a)
	}
	if len(out) > 0 && x.allLost(d, strict) {
		return 0, false
	}
	if live, ok := x.liveBound(d, k, out); ok {
		return live + x.slack(), true
	}
	if len(out) == 0 && !d.shared {
		return x.slack() + d.held, true
	}
	return x.rankBound(d) + d.held, true
}

// failed reports whether the replica that delivered p took its callback
// for a failure, and so dropped its copy (docs/design.md 4.7): the endpoint
// refused it, or answered after the service's timeout during a
// slow-callback fault (the simulator's slow endpoints answer after more
// than the 2 s the service waits).
func (x *index) failed(p Pop) bool { return !accepted(p) || x.tl.slowAt(p.URI, p.At) }

// withoutCopy is the nodes that may have been unable to pop d somewhere in
// [a, b]: those a fault took down or cut off, and those whose callback
// for d failed (refused, or answered after the timeout) by b with no
// successful pop of d between that failure and a, since a replica whose
// callback fails drops its copy until the next popped notice brings it
// back (docs/design.md 4.7). all counts the replicas that may have missed
// the write too, strict does not (see allLost).
func (x *index) withoutCopy(d *def, a, b time.Duration) (all, strict map[string]bool) {
	all, strict = x.dropped(d, a, b)
	for _, out := range []map[string]bool{all, strict} {
		for n := range x.downNodes(d, a, b) {
			out[n] = true
		}
		for _, s := range d.spans {
			// A lost request about the timer may have left its receiver
			// without its copy until a later write or notice repairs it.
			if lostRequest(s.fault) && s.from <= b && s.to >= a {
				addAll(out, s.fault.Peers)
			}
		}
		if d.placed {
			// Only the timer's replicas hold copies: a node cut off or
			// down elsewhere in the cluster takes none away.
			for n := range out {
				if !slices.Contains(d.replicas, n) {
					delete(out, n)
				}
			}
		}
	}
	return all, strict
}

// dropped is the failed-callback half of withoutCopy: all counts the
// replicas a fault may have kept the write from too, strict does not.
func (x *index) dropped(d *def, a, b time.Duration) (all, strict map[string]bool) {
	cf := x.copyFailures(d)
	// A replica's latest failure by b decides: a pop that revives it
	// revives every earlier one too.
	latest := map[string]time.Duration{}
	end := sort.Search(len(cf.pops), func(i int) bool { return cf.pops[i].at > b })
	for i := end - 1; i >= 0 && len(latest) < cf.popNodes; i-- {
		if _, seen := latest[cf.pops[i].node]; !seen {
			latest[cf.pops[i].node] = cf.pops[i].at
		}
	}
	latestAll := maps.Clone(latest)
	for _, f := range cf.other {
		if f.from > b {
			continue
		}
		for _, l := range []map[string]time.Duration{latestAll, latest} {
			if at, seen := l[f.node]; !seen || f.at > at {
				l[f.node] = f.at
			}
			if f.missed {
				break // latestAll only
			}
		}
	}
	all, strict = map[string]bool{}, map[string]bool{}
	for n, at := range latestAll {
		if !x.revived(d, cf, n, at, a) {
			all[n] = true
		}
	}
	for n, at := range latest {
		// The same failure as in all was weighed there.
		if latestAll[n] == at && all[n] || latestAll[n] != at && !x.revived(d, cf, n, at, a) {
			strict[n] = true
		}
	}
	return all, strict
}

// revived reports whether a successful pop after at and before a revived
// node n's dropped copy with its notice: one that no cut or lost request
// kept away.
func (x *index) revived(d *def, cf *copyFailures, n string, at, a time.Duration) bool {
	for i := sort.Search(len(cf.oks), func(i int) bool { return cf.oks[i].At > at }); i < len(cf.oks) && cf.oks[i].At < a; i++ {
		if !x.noticeKept(d, cf.oks[i].Node, n, cf.oks[i].At) {
			return true
		}
	}
	return false
}

// copyFailure is a moment a replica of d lost its copy: at, once the
// failure began (from).
type copyFailure struct {
	node     string
	at, from time.Duration
	missed   bool // the replica may have missed the write
}

// copyFailures is what dropped weighs, listed once per definition.
type copyFailures struct {
	pops     []copyFailure // failed callbacks, by time
	popNodes int           // distinct nodes in pops
	other    []copyFailure // missed writes, crashes, cuts from the endpoint
	oks      []Pop         // successful pops, by time
}

// copyFailures lists every moment a replica of d may have lost its copy,
// and the successful pops whose notices bring copies back (see dropped).
func (x *index) copyFailures(d *def) *copyFailures {
	if d.failures != nil {
		return d.failures
	}
	cf := &copyFailures{}
	nodes := map[string]bool{}
	for _, idx := range d.bySeq {
		for _, i := range idx {
			if p := x.h.Pops[i]; x.failed(p) {
				cf.pops = append(cf.pops, copyFailure{node: p.Node, at: p.At, from: p.At})
				nodes[p.Node] = true
			} else {
				cf.oks = append(cf.oks, p)
			}
		}
	}
	cf.popNodes = len(nodes)
	// A replica that missed the write holds no copy either, nor one that
	// crashed since (it restarts empty), until a notice reaches it.
	if d.placed {
		for n := range x.missedWrite(d) {
			if slices.Contains(d.replicas, n) {
				cf.other = append(cf.other, copyFailure{node: n, at: min(d.hi, x.end), from: -never, missed: true})
			}
		}
		for _, sp := range d.spans {
			if sp.fault.Kind == Crash && sp.end >= d.lo {
				for _, n := range sp.fault.Nodes {
					if slices.Contains(d.replicas, n) {
						cf.other = append(cf.other, copyFailure{node: n, at: sp.end, from: sp.from})
					}
				}
			}
		}
	}
	// A replica cut off from the endpoint when a pop fell due failed that
	// callback too, with no pop in the history to show for it.
	for _, sp := range d.spans {
		if sp.fault.Kind != Partition && sp.fault.Kind != Clog || sp.to < d.lo {
			continue
		}
		if _, due := x.firstDueIn(d, max(sp.from, d.lo), sp.to); !due {
			continue
		}
		var cut []string
		if slices.Contains(sp.fault.Peers, d.host) {
			cut = append(cut, sp.fault.Nodes...)
		}
		if slices.Contains(sp.fault.Nodes, d.host) {
			cut = append(cut, sp.fault.Peers...)
		}
		for _, n := range cut {
			if !x.endpoints[n] {
				cf.other = append(cf.other, copyFailure{node: n, at: sp.to, from: sp.from})
			}
		}
	}
	sort.SliceStable(cf.pops, func(i, j int) bool { return cf.pops[i].at < cf.pops[j].at })
	sort.SliceStable(cf.oks, func(i, j int) bool { return cf.oks[i].At < cf.oks[j].At })
	d.failures = cf
	return cf
}

// noticeKept reports whether the popped notice node "from" sent at t may
// not have reached node "to": a cut between them around t, or a lost
// request about the timer from one to the other around t.
func (x *index) noticeKept(d *def, from, to string, t time.Duration) bool {
	if from == to {
		return false
	}
	for _, s := range d.spans {
		if s.from > t+x.o.FaultSettle || s.to < t {
			continue
		}
		f := s.fault
		switch {
		case (f.Kind == Partition || f.Kind == Clog) && (slices.Contains(f.Nodes, from) && slices.Contains(f.Peers, to) ||
			slices.Contains(f.Nodes, to) && slices.Contains(f.Peers, from)):
			return true
		case lostRequest(f) && f.Nodes[0] == from && f.Peers[0] == to:
			return true
		case f.Kind == Crash || f.Kind == Pause:
			if slices.Contains(f.Nodes, from) || slices.Contains(f.Nodes, to) {
				return true
			}
		}
	}
	return false
}

// hostOf is the host of a callback URI ("http://host/path").
func hostOf(uri string) string {
	if u, err := url.Parse(uri); err == nil {
		return u.Host
	}
	return ""
}

// heldFor is how long a write's replication may have been held up: from
// the write to the end of a pause or clog that was active during it, and
// the replicas it held (unplaced: every node). A replica applies
// start-time-delta when it processes the message (api.md), so one that
// received the write late pops late by as much; replicas converge on the
// earliest start they hold when a notice passes between them, but until
// then each keeps its own. The delta carries no transit time, so no node
// can do better without trusting other nodes' wall clocks.
func (x *index) heldFor(d *def) (time.Duration, map[string]bool) {
	var held time.Duration
	late := map[string]bool{}
	ret := min(d.hi, x.end)
	for _, s := range d.spans {
		if s.fault.Kind != Pause && s.fault.Kind != Clog || s.from > ret || s.end < d.lo {
			continue
		}
		held = max(held, s.end-d.lo)
		switch {
		case s.fault.Kind == Pause && slices.Contains(s.fault.Nodes, d.op.Node):
			addAll(late, d.replicas) // the node that took the write stood still
		case s.fault.Kind == Pause:
			addAll(late, s.fault.Nodes)
		case slices.Contains(s.fault.Nodes, d.op.Node):
			addAll(late, s.fault.Peers)
		}
	}
	if h := x.heldAtSites(d, ret, late); h > held {
		held = h
	}
	if held > 0 && d.placed {
		// A replica that lost its copy at any time (missed write, crash,
		// failed callback) may have it back from a late replica's notice,
		// start and all.
		all, _ := x.dropped(d, d.lo, x.end)
		for n := range all {
			late[n] = true
		}
	}
	return held, late
}

// heldAtSites is heldFor's part at the other sites, which get a write
// through their relay, after the client has its answer (see
// missedAtSites): a pause of one of their nodes, or a clog on the relay's
// links, up to SiteLag after ret holds the write on its way there, and a
// relay that got it late held it for its whole site. It adds the replicas
// it held to late and returns the longest hold.
func (x *index) heldAtSites(d *def, ret time.Duration, late map[string]bool) time.Duration {
	if len(x.h.Sites) <= 1 || !d.placed {
		return 0
	}
	var held time.Duration
	for _, site := range x.h.Sites {
		if slices.Contains(site, d.op.Node) {
			continue
		}
		for _, s := range d.spans {
			if s.from > ret+x.o.SiteLag || s.end < d.lo {
				continue
			}
			switch {
			case s.fault.Kind == Pause && slices.ContainsFunc(s.fault.Nodes, func(n string) bool { return slices.Contains(site, n) }):
				addAll(late, s.fault.Nodes)
			case s.fault.Kind == Clog && slices.Contains(s.fault.Nodes, site[0]):
				addAll(late, s.fault.Peers)
			case s.fault.Kind == Clog && slices.Contains(s.fault.Peers, site[0]):
				addAll(late, s.fault.Nodes)
			default:
				continue
			}
			held = max(held, s.end-d.lo)
		}
		if late[site[0]] {
			for _, r := range d.replicas {
				if slices.Contains(site, r) {
					late[r] = true
				}
			}
		}
	}
	return held
}

// heldAt is the hold replica r may still carry when pop k falls due: the
// write's hold if r got the write late and no notice of a successful pop
// by a replica that got it in time has reached r since (which would have
// given it the earlier start).
func (x *index) heldAt(d *def, r string, k int) time.Duration {
	if d.held == 0 || !d.late[r] {
		return 0
	}
	a, _ := x.window(d, k)
	for _, idx := range d.bySeq {
		for _, i := range idx {
			p := x.h.Pops[i]
			if p.At < a && !d.late[p.Node] && !x.failed(p) && !x.noticeKept(d, p.Node, r, p.At) {
				return 0
			}
		}
	}
	return d.held
}

// liveBound is G3's bound with replicas out unable to pop: the earliest
// any live replica pops, its rank's skew plus the hold it may carry, and
// false when the placement is unknown or shared (then the worst rank
// with the write's hold is assumed).
func (x *index) liveBound(d *def, k int, out map[string]bool) (time.Duration, bool) {
	if !d.placed || d.shared {
		return 0, false
	}
	best, found := time.Duration(0), false
	for i, r := range d.replicas {
		if out[r] {
			continue
		}
		b := x.o.ReplicaSkew*time.Duration(i) + x.heldAt(d, r, k)
		if !found || b < best {
			best, found = b, true
		}
	}
	return best, found
}

// allLost reports whether every copy of d may be among the replicas in
// unable (down, cut off, or without the copy a failed callback or crash
// took; not counting a missed write). The write surely reached the
// replicas no fault kept it from, and an acknowledged one reached at least
// a quorum of them (see copies), so every copy may be gone only when
// unable holds all of the first and as many replicas as the quorum. A
// replica that may have missed the write counts as a holder only where it
// is unable too: a write acknowledged by a majority of three cannot have
// missed the two replicas still able to pop. A shared ID (see sharedID)
// voids the count.
func (x *index) allLost(d *def, unable map[string]bool) bool {
	switch {
	case d.shared:
		// The other timer under the ID is held, and this one refused,
		// where it landed first: one replica may be all that holds it.
		return len(unable) > 0
	case !d.placed:
		return len(unable) >= x.copies(d)
	}
	missed := x.missedWrite(d)
	n := 0
	for _, r := range d.replicas {
		switch {
		case unable[r]:
			n++
		case !missed[r]:
			return false // surely holds a copy, and can pop
		}
	}
	return n >= x.copies(d)
}

// copies is how many replicas surely hold d: rf, less those a fault may
// have kept the write from (down, cut off from the node that took it, or
// at either end of a lost message about the timer while it ran), but never
// fewer than acknowledge a write: a majority from three replicas up, else
// one (node's writeQuorum, docs/design.md 4.11).
func (x *index) copies(d *def) int {
	if !d.placed {
		if x.touched(d, d.lo, min(d.hi, x.end)) {
			return d.quorum
		}
		return d.rf
	}
	missed := x.missedWrite(d)
	n := 0
	for _, r := range d.replicas {
		if !missed[r] {
			n++
		}
	}
	return max(n, d.quorum)
}

// missedWrite is the replicas a fault may have kept d's write from:
// crashed, cut off from the node that took it, or the receiver of a lost request
// about the timer while it ran. Each holds no copy until a notice of a
// later pop reaches it (see dropped).
// The map is shared: callers must not change it.
func (x *index) missedWrite(d *def) map[string]bool {
	if d.missed != nil {
		return d.missed
	}
	missed := x.down(d, d.lo, min(d.hi, x.end), false)
	for _, s := range d.spans {
		if lostRequest(s.fault) && s.from <= min(d.hi, x.end) && s.to >= d.lo {
			addAll(missed, s.fault.Peers)
		}
	}
	x.missedAtSites(d, d.op.Node, min(d.hi, x.end), false, missed)
	d.missed = missed
	return missed
}

// missedAtSites adds to missed what a write that node took and answered at
// b may have missed at the other sites. Excuse site-lag: a node forwards a
// write to another site without waiting for it, and that site's relay
// places it on its own replicas after the client has its answer, so a
// fault up to SiteLag after b, on another site's node or a message to it,
// may keep the write from it (scenarios/README.md S2: the relay's
// replication to its site's other replica was lost 1 ms after the answer).
// The write reaches another site only through the node its address names:
// when that node missed it, so did the whole site.
// It reports whether the lag added a node.
func (x *index) missedAtSites(d *def, node string, b time.Duration, paused bool, missed map[string]bool) bool {
	if len(x.h.Sites) <= 1 || !d.placed {
		return false
	}
	lagged := false
	late := x.down(d, b, b+x.o.SiteLag, paused)
	for _, s := range d.spans {
		if lostRequest(s.fault) && s.from <= b+x.o.SiteLag && s.to >= b {
			addAll(late, s.fault.Peers)
		}
	}
	for _, site := range x.h.Sites {
		if slices.Contains(site, node) {
			continue
		}
		for _, n := range site {
			if late[n] && !missed[n] {
				missed[n] = true
				lagged = true
			}
		}
		if missed[site[0]] {
			for _, r := range d.replicas {
				if slices.Contains(site, r) {
					missed[r] = true
				}
			}
		}
	}
	return lagged
}

// lostRequest reports a lost message that was a request: its receiver
// (Peers) never saw it. A lost answer takes no copy away.
func lostRequest(f Fault) bool {
	return f.Kind == Lost && !strings.Contains(f.Detail, ReplyDetail)
}

// ackQuorum is how many of rf replicas hold an acknowledged write.
func ackQuorum(rf int) int {
	if rf >= 3 {
		return rf/2 + 1
	}
	return 1
}

// required reports whether pop k of d must arrive within bound: d
// returned OK, the bound (plus the worst clock lag) passed before the end
// of the history, nothing may have replaced d by then, and no fault may
// have removed every copy of d before the pop fell due.
func (x *index) required(d *def, k int, bound time.Duration) bool {
	lo, hi := d.due(k)
	by := hi + bound + x.tl.maxLag(x.end) // a lagging clock may hold it
	return d.op.Outcome == OK && by <= x.end && by < d.cutoff && lo < d.lossFrom
}

// lossFrom is the earliest time a fault may have removed every copy of d:
// rf distinct replicas crashed (or, after a write a fault touched, as many
// as its quorum: with rf <= 2 one replica may be all it reached), or as
// many replicas as hold a
// copy dropped theirs (see dropped: a failed callback, a cut from the
// endpoint over a due time, a missed write), with no successful pop since
// whose notice brings one back. Each such failure is weighed where it
// fell: a clock set right may pop a timer before its due time, into a
// callback fault that ended before that due time (seed 11801). One
// replica's failed callback is no loss while another holds a copy: that
// one pops at its rank.
func (x *index) lossFrom(d *def) time.Duration {
	l := never
	crashed := map[string]bool{}
	partial := x.touched(d, d.lo, min(d.hi, x.end))
	var failures []time.Duration
	for _, s := range d.spans {
		if s.to < d.lo {
			continue
		}
		switch s.fault.Kind {
		case Crash:
			for _, n := range s.fault.Nodes {
				if !d.placed || slices.Contains(d.replicas, n) {
					crashed[n] = true
				}
			}
			// An acknowledged write reached at least a quorum of the
			// replicas, all of them unless a fault touched it.
			if partial && len(crashed) >= d.quorum || len(crashed) >= d.rf || len(s.fault.Nodes) == 0 {
				l = min(l, max(s.from, d.lo))
			}
		case Partition, Clog, SlowCallback, FailCallback:
			if t, ok := x.firstDueIn(d, s.from, s.to); ok {
				failures = append(failures, t)
			}
		}
	}
	for _, idx := range d.bySeq {
		for _, i := range idx {
			if p := x.h.Pops[i]; x.failed(p) {
				failures = append(failures, p.At)
			}
		}
	}
	slices.Sort(failures)
	judged := map[int]bool{}
	for _, f := range failures {
		if f >= l {
			break
		}
		// The copies left are counted in the windows of the first pops
		// that may see the failure, each window once.
		k := 1
		if iv := d.op.Spec.Interval; iv > 0 && f-x.rankBound(d)-d.hi > 0 {
			k = max(1, int((f-x.rankBound(d)-d.hi+iv-1)/iv))
		}
		for j := k; j <= min(k+2, d.op.Spec.Pops()); j++ {
			if judged[j] {
				continue
			}
			judged[j] = true
			a, b := x.window(d, j)
			if _, strict := x.dropped(d, a, b); x.allLost(d, strict) {
				l = min(l, f)
				break
			}
		}
	}
	return l
}

// firstDueIn returns the earliest time in [a, b] at which some pop of d
// may be being delivered (from its earliest due time to its rank bound).
func (x *index) firstDueIn(d *def, a, b time.Duration) (time.Duration, bool) {
	r := x.rankBound(d)
	k := 1
	if iv := d.op.Spec.Interval; iv > 0 && a-r-d.hi > 0 {
		k = max(1, int((a-r-d.hi+iv-1)/iv))
	}
	if k > d.op.Spec.Pops() {
		return 0, false
	}
	lo, hi := d.due(k)
	if lo > b || hi+r < a {
		return 0, false
	}
	return max(a, lo), true
}
