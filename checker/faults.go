package checker

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// never is a time after every history.
const never = time.Duration(1<<63 - 1)

// endKind maps a fault to the event that ends it. Faults without an entry
// (clock jumps and drift, scale events, unknown kinds) stay active until the
// liveness phase, as nothing in the timeline says when their effect is over.
var endKind = map[FaultKind]FaultKind{
	Crash:        Restart,
	Pause:        Resume,
	Partition:    Heal,
	Clog:         Heal,
	SlowCallback: CallbackOK,
	FailCallback: CallbackOK,
	DiskFull:     DiskOK,
	DiskLie:      DiskOK,
}

// isMessageFault reports the kinds that hit one message: they end when the
// message's effect has settled, with no end event.
func isMessageFault(k FaultKind) bool {
	return k == Lost || k == Duplicated || k == Reordered || k == Overload || k == Queued || k == Late
}

// isEndEvent reports kinds that end a fault or mark a phase; they are no
// fault themselves.
func isEndEvent(k FaultKind) bool {
	switch k {
	case Restart, Resume, Heal, CallbackOK, LivenessPhase, DiskOK:
		return true
	}
	return false
}

// span is one fault's active interval, settle time included in to; end
// is when its end event came (or the horizon), for drawing.
type span struct {
	from, to, end time.Duration
	fault         Fault
	// writeOnly marks, in a definition's spans, a fault that hit only
	// nodes that took a write of the timer and hold no replica: it
	// touches the timer only while such a write runs.
	writeOnly bool
	// wait, waitRecord and waitOK are waitOf(fault) for a message fault
	// that waited (Overload, Queued), parsed once (see waited).
	wait               time.Duration
	waitRecord, waitOK bool
	// seq is, for a span of timeline.spans (and its writeOnly twin),
	// its index there plus one; 0 for any other span. A definition's
	// spans that start together come in that order (def.spans).
	seq int
	// crashed marks a pause its node never resumed from: it crashed
	// while paused, and the crash took every message that waited for
	// the resume (see down).
	crashed bool
}

// timeline answers "was a fault active in [a, b]" questions.
type timeline struct {
	// spans are every fault but the message faults that name a timer,
	// which byTimer files by the timer they hit.
	spans   []span
	byTimer map[uint64][]span
	// messages and others are the indices in spans of the message
	// faults and of the rest, in order (see messageFiling).
	messages, others []int
	// writeOnlys are the writeOnly twins of spans, by index, made as
	// a definition first needs one (see writeOnly).
	writeOnlys []*span
	// pauses are the pause spans of each node, by start (for leftAfter,
	// asked once per waited send).
	pauses map[string][]span
	// crashes are the crash times of each node, in order (for
	// crashedWaiting, asked once per waited callback).
	crashes map[string][]time.Duration
	// slows are the slow-callback spans (for slowAt, asked once per
	// pop judged).
	slows    []span
	liveFrom time.Duration
	// clocks holds each node's clock changes, for lag.
	clocks map[string][]clockChange
}

// clockChange is a jump or a new drift rate of one node's clock.
type clockChange struct {
	at       time.Duration
	jump     time.Duration // how far a jump moved the clock (signed)
	back     time.Duration // how far a jump moved the clock back
	ppm      int64         // the drift from here on, when drift is set
	setsRate bool
}

// livenessFrom is History.LivenessFrom, or the first liveness-phase event
// when the simulator left the field at zero.
func livenessFrom(h *History) time.Duration {
	if h.LivenessFrom > 0 {
		return h.LivenessFrom
	}
	for _, f := range h.Faults {
		if f.Kind == LivenessPhase {
			return f.At
		}
	}
	return 0
}

// buildTimeline pairs each fault with the event that ends it.
func buildTimeline(h *History, end, settle time.Duration) timeline {
	fs := append([]Fault(nil), h.Faults...)
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].At < fs[j].At })
	tl := timeline{liveFrom: livenessFrom(h), clocks: clockChanges(fs), byTimer: map[uint64][]span{}}
	for i, f := range fs {
		if isEndEvent(f.Kind) {
			continue
		}
		if f.Kind == Reordered || f.Kind == Duplicated {
			// A message held back or delivered twice arrives within
			// MaxNetDelay, which every bound already allows, and the
			// nodes apply replication idempotently: the checker holds
			// the timer strictly.
			continue
		}
		if f.Kind == ScaleUp || f.Kind == ScaleDown {
			// History.Scales says when a scale ran and which timers it
			// moved (scaling.go).
			continue
		}
		if isMessageFault(f.Kind) {
			// The message is settled once it arrived or was given up:
			// a reordered one within its hold, any within the settle
			// time that covers the retry or notice that mends it. A
			// request refused on arrival was in flight since its send
			// (its Age before): the receiver missed it from then.
			sp := span{from: f.At - f.Age, to: f.At + settle, end: f.At, fault: f}
			if f.Kind == Overload || f.Kind == Queued {
				sp.wait, sp.waitRecord, sp.waitOK = waitOf(f)
			}
			if lastingRefusal(f) {
				// A refusal that lasts: every copy sent until then
				// was refused as this one was (Fault.Until).
				sp.to, sp.end = f.Until+settle, f.Until
			}
			if w, _, ok := sp.queuedWait(); ok {
				// Its receiver processed it only after its wait.
				sp.to, sp.end = f.At+w+settle, f.At+w
			}
			if f.Timer != 0 {
				tl.byTimer[f.Timer] = append(tl.byTimer[f.Timer], sp)
			} else {
				tl.spans = append(tl.spans, sp)
			}
			continue
		}
		to := tl.horizon(f.At, end)
		crashed := false
		if k, ok := endKind[f.Kind]; ok {
			for _, g := range fs[i+1:] {
				if g.Kind == k && sameTarget(f, g) {
					to = g.At
					break
				}
				if f.Kind == Pause && g.Kind == Crash && sameTarget(f, g) {
					// The crash ends the pause (sim/faults.go): no
					// resume follows it.
					to, crashed = g.At, true
					break
				}
			}
		}
		sp := span{from: f.At, to: to + settle, end: to, fault: f, crashed: crashed}
		tl.spans = append(tl.spans, sp)
		if f.Kind == Crash {
			if tl.crashes == nil {
				tl.crashes = map[string][]time.Duration{}
			}
			for _, n := range f.Nodes {
				tl.crashes[n] = append(tl.crashes[n], f.At)
			}
		}
		if f.Kind == SlowCallback {
			tl.slows = append(tl.slows, sp)
		}
		if f.Kind == Pause {
			if tl.pauses == nil {
				tl.pauses = map[string][]span{}
			}
			for _, n := range f.Nodes {
				tl.pauses[n] = append(tl.pauses[n], sp)
			}
		}
	}
	for i := range tl.spans {
		tl.spans[i].seq = i + 1
		if isMessageFault(tl.spans[i].fault.Kind) {
			tl.messages = append(tl.messages, i)
		} else {
			tl.others = append(tl.others, i)
		}
	}
	return tl
}

// writeOnly is spans[i] marked writeOnly, one copy shared by every
// definition it touches so.
func (tl *timeline) writeOnly(i int) *span {
	if tl.writeOnlys == nil {
		tl.writeOnlys = make([]*span, len(tl.spans))
	}
	if tl.writeOnlys[i] == nil {
		s := tl.spans[i]
		s.writeOnly = true
		tl.writeOnlys[i] = &s
	}
	return tl.writeOnlys[i]
}

// horizon is when a fault with no end event stops counting.
func (tl timeline) horizon(at, end time.Duration) time.Duration {
	if tl.liveFrom > at {
		return tl.liveFrom
	}
	return end
}

// sameTarget reports whether end event g ends fault f: an end event naming
// no node ends every fault of its kind, otherwise the node sets must meet.
func sameTarget(f, g Fault) bool {
	a := append(append([]string(nil), f.Nodes...), f.Peers...)
	b := append(append([]string(nil), g.Nodes...), g.Peers...)
	if len(a) == 0 || len(b) == 0 {
		return true
	}
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

// downNodes returns the nodes of d that may have been unable to pop it
// somewhere in [a, b]: crashed or paused, or cut off by a partition or
// clog from d's callback endpoint, or from a node that took a write of d
// while the cut lasted (the replication may not have reached them). A cut
// between two nodes that both still reach the endpoint, with no write
// across it, takes no copy away (it may cause a duplicate: G4's business).
// When they are as many as the copies of a timer, all its replicas may
// have been unable to pop, and no lateness bound can be asked of it.
func (x *index) downNodes(d *def, a, b time.Duration) map[string]bool {
	return x.down(d, a, b, true)
}

// down is downNodes, leaving out paused nodes when paused is false: a
// paused node gets every message sent to it once it resumes. One that
// crashed while paused never resumed, and lost every message that had
// waited for it, as if it had been down from the pause on (fresh seed
// 9552609: another site's relay, paused as an update's forward left and
// crashed 11 s later, took none of the forward's tries, and its site
// never heard of the update; scenarios/README.md C71).
func (x *index) down(d *def, a, b time.Duration, paused bool) map[string]bool {
	seen := map[string]bool{}
	for s := range d.spans() {
		if s.from > b || s.to < a {
			continue
		}
		switch s.fault.Kind {
		case Pause:
			if paused || s.crashed {
				addAll(seen, s.fault.Nodes)
			}
		case Crash:
			addAll(seen, s.fault.Nodes)
		case Overload:
			// The sender's backlog shed its pop of d, or held or shed
			// the notice that would have spared the next replica its
			// turn. A callback that waited was made, and arrives late
			// by its wait (sendWait), unless its sender crashed before
			// it left: the crash took it from the queue, never sent.
			// The last holder sheds no pop of d (it has nobody to
			// leave it to, node/pop.go handOnAfter): a callback of d
			// it shed is a pop given up, which leaves it no less able
			// (lostCallbacks, scenarios/README.md C52).
			if _, ok := lostCallback(s.fault, d.host); ok && shed(s.fault) && x.lastHolder(d, s.fault.Nodes[0]) {
				continue
			}
			if w, record, ok := s.overloadWait(); !ok || record || !slices.Contains(s.fault.Peers, d.host) || x.crashedWaiting(s.fault, w) {
				addAll(seen, s.fault.Nodes)
			}
		case Partition, Clog:
			if !d.placed {
				addAll(seen, s.fault.Nodes)
				addAll(seen, s.fault.Peers)
				continue
			}
			for _, side := range [2][2][]string{{s.fault.Nodes, s.fault.Peers}, {s.fault.Peers, s.fault.Nodes}} {
				if x.cutFromTimer(d, s, side[1]) {
					addAll(seen, side[0])
				}
			}
		}
	}
	return seen
}

// crashedWaiting reports whether the sender of Overload fault f, whose
// message waited w for its sender's CPU, crashed before the message left
// (see leftAfter): a crash drops the work its process had queued (netsim
// Crash), so the message was never sent, as a shed one. A pop whose
// callback died so was made and failed on that replica, once, as one
// whose callback the network lost (docs/design.md 4.7: a restart from
// disk reads the attempt back and does not make it again).
func (x *index) crashedWaiting(f Fault, w time.Duration) bool {
	if len(f.Nodes) == 0 {
		return false
	}
	left := f.At + x.leftAfter(f, w)
	for _, c := range x.tl.crashes[f.Nodes[0]] {
		if c >= f.At && c <= left {
			return true
		}
	}
	return false
}

// cutFromTimer reports whether the far side of cut s holds d's callback
// endpoint or a node that took a write of d while s lasted: its proxy, or
// the node through which the write reached another site (relays).
func (x *index) cutFromTimer(d *def, s *span, far []string) bool {
	if slices.Contains(far, d.host) {
		return true
	}
	for _, op := range x.byTimer[d.timer] {
		if op.Invoke <= s.to && min(effReturn(op), x.end) >= s.from &&
			(slices.Contains(far, op.Node) || slices.ContainsFunc(far, func(n string) bool { return x.relays(op.Node, n) })) {
			return true
		}
	}
	return d.timer == 0 || slices.Contains(far, d.op.Node) && d.lo <= s.to && min(d.hi, x.end) >= s.from
}

// slowAt reports whether a slow-callback fault on uri was active at t: the
// endpoint then answers after the service's callback timeout, which the
// popping replica takes for a failure.
func (tl timeline) slowAt(uri string, t time.Duration) bool {
	for _, s := range tl.slows {
		if s.from <= t && s.to >= t && slices.Contains(s.fault.Nodes, uri) {
			return true
		}
	}
	return false
}

// slowDelay is how long the endpoint of uri took to answer a callback it
// received at t: the delay of the slow-callback fault in force then (the
// endpoint takes its mode when the request arrives), 0 when none was;
// ok is false when that fault's delay cannot be read.
func (tl timeline) slowDelay(uri string, t time.Duration) (delay time.Duration, ok bool) {
	for _, s := range tl.slows {
		if s.from <= t && s.end >= t && slices.Contains(s.fault.Nodes, uri) {
			v, found := strings.CutPrefix(s.fault.Detail, "delay=")
			d, err := time.ParseDuration(v)
			if !found || err != nil {
				return 0, false
			}
			delay = max(delay, d)
		}
	}
	return delay, true
}

func addAll(set map[string]bool, xs []string) {
	for _, x := range xs {
		set[x] = true
	}
}

// clockChanges reads the clock faults: a clock-jump's Detail is its signed
// Go duration ("-3s", "+250ms"), a clock-drift's its rate ("-200ppm").
// Details that do not parse are ignored.
func clockChanges(fs []Fault) map[string][]clockChange {
	out := map[string][]clockChange{}
	for _, f := range fs {
		var c clockChange
		switch f.Kind {
		case ClockJump:
			d, err := time.ParseDuration(strings.TrimSpace(f.Detail))
			if err != nil {
				continue
			}
			c = clockChange{at: f.At, jump: d, back: max(-d, 0)}
		case ClockDrift:
			ppm, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(f.Detail), "ppm"), 10, 64)
			if err != nil {
				continue
			}
			c = clockChange{at: f.At, ppm: ppm, setsRate: true}
		default:
			continue
		}
		for _, n := range f.Nodes {
			out[n] = append(out[n], c)
		}
	}
	return out
}

// lag is how far node's clock has moved back in all by t: backward jumps
// plus slow drift. A node whose clock fell behind pops that much late, so
// lateness bounds grant it; forward movement makes pops early instead,
// which History.MaxClockSkew covers.
func (tl timeline) lag(node string, t time.Duration) time.Duration {
	var lag, last time.Duration
	var ppm int64
	slow := func(until time.Duration) time.Duration {
		if ppm >= 0 || until <= last {
			return 0
		}
		return time.Duration(float64(until-last) * float64(-ppm) / 1e6)
	}
	for _, c := range tl.clocks[node] {
		if c.at > t {
			break
		}
		lag += slow(c.at) + c.back
		last = c.at
		if c.setsRate {
			ppm = c.ppm
		}
	}
	return lag + slow(t)
}

// clockTimes lists, in order, every time a clock changed, and the times
// drift moves a clock on by a step of a tenth of a second, up to the
// liveness phase (or the end), so that an offset growing by drift is seen.
func (tl timeline) clockTimes() []time.Duration {
	var ts []time.Duration
	for _, cs := range tl.clocks {
		for _, c := range cs {
			ts = append(ts, c.at)
		}
	}
	if len(ts) == 0 {
		return nil
	}
	slices.Sort(ts)
	horizon := tl.liveFrom
	if horizon == 0 {
		horizon = ts[len(ts)-1] + time.Hour
	}
	for t := ts[0]; t < horizon; t += clockStep {
		ts = append(ts, t)
	}
	slices.Sort(ts)
	return slices.Compact(ts)
}

// clockStep is how often clockTimes samples drifting clocks.
const clockStep = time.Second

// offset is how far node's clock had moved from true time by t, through
// jumps and drift (its boot offset, within MaxClockSkew, left out).
func (tl timeline) offset(node string, t time.Duration) time.Duration {
	var off, last time.Duration
	var ppm int64
	for _, c := range tl.clocks[node] {
		if c.at > t {
			break
		}
		off += time.Duration(float64(c.at-last)*float64(ppm)/1e6) + c.jump
		last = c.at
		if c.setsRate {
			ppm = c.ppm
		}
	}
	return off + time.Duration(float64(t-last)*float64(ppm)/1e6)
}

// gain is how far node's clock moved ahead of true time within [a, b]:
// its forward jumps there plus what fast drift added over the stretch.
func (tl timeline) gain(node string, a, b time.Duration) time.Duration {
	var gain time.Duration
	var ppm int64
	last := a
	fast := func(until time.Duration) time.Duration {
		if ppm <= 0 || until <= last {
			return 0
		}
		return time.Duration(float64(until-last) * float64(ppm) / 1e6)
	}
	for _, c := range tl.clocks[node] {
		if c.at > b {
			break
		}
		if c.at >= a {
			gain += fast(c.at) + max(c.jump, 0)
			last = c.at
		}
		if c.setsRate {
			ppm = c.ppm
		}
	}
	return gain + fast(b)
}

// latestLocal is the latest time node's clock showed within [a, b], less
// its boot offset: a clock stepped ahead before a and back within the
// stretch showed a later time than b does, and a tombstone it kept ended
// by that time. Between two changes a clock only moves forward, so the
// latest is at b or just before a change.
func (tl timeline) latestLocal(node string, a, b time.Duration) time.Duration {
	latest := max(a+tl.offset(node, a), b+tl.offset(node, b))
	for _, c := range tl.clocks[node] {
		if c.at > b {
			break
		}
		if c.at > a {
			latest = max(latest, c.at+tl.offset(node, c.at)-c.jump)
		}
	}
	return latest
}

// maxLag is the largest lag of any node by t.
func (tl timeline) maxLag(t time.Duration) time.Duration {
	var m time.Duration
	for n := range tl.clocks {
		m = max(m, tl.lag(n, t))
	}
	return m
}

// relays reports whether node n is the address of a site other than the
// one whose node proxy took a write: the write reached n's site through n.
func (x *index) relays(proxy, n string) bool {
	for _, site := range x.h.Sites {
		if len(site) > 0 && site[0] == n && !slices.Contains(site, proxy) {
			return true
		}
	}
	return false
}
