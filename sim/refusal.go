package sim

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/checker"
	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// ageRefusal judges a node's 403 to an internal request that its own
// clock dates outside the age window (node's admit: sent more than
// MaxMessageAge + MaxClockSkew ago, or more than MaxClockSkew ahead).
//
// Clocks apart by more than MaxClockSkew act as a cut link between the
// two nodes (docs/design.md 4.13): a justified refusal is recorded as a
// lost request about the timer it named, so the checker weighs exactly
// what it would have done (a write or notice the receiver missed) and
// nothing else. Justified means by the simulator's own clocks: the two
// were apart by more than MaxClockSkew, or the request really was older
// than MaxMessageAge. A node that refuses a fresh request between
// agreeing clocks breaks the protocol: that is an API violation, never
// an excuse, and nothing of it enters the history.
//
// apparent and outside are outsideAgeWindow's verdict, and skew m's
// clock offset, when the request arrived, the instant the node dated it: an answer the node's service
// time delays comes on a clock that has moved on, and a request dated
// just past MaxClockSkew ahead on arrival is within it a few milliseconds
// later (scenarios/c26-age-refusal-judged-on-arrival.scenario).
func (w *world) ageRefusal(m *machine, from string, sent, apparent, skew time.Duration, outside bool, req node.Request, resp node.Response) {
	if resp.Status != 403 {
		return
	}
	if !outside {
		return // within the window, or not stamped: refused for another reason
	}
	sender := w.machineAt(from)
	if sender == nil {
		return
	}
	cfg := node.DefaultConfig()
	apart := skew - sender.clock.Skew()
	// The sender's clock may have moved since it sent: it had one of the
	// offsets it has had, and the extremes are the ones that explain the
	// most (the clocks furthest apart, the longest transit).
	lo, hi := sender.clock.SkewRange()
	justified := false
	for _, off := range []time.Duration{lo, hi} {
		apartThen := skew - off
		transit := apparent - apartThen // the request's age on true time
		justified = justified || apartThen.Abs() > cfg.MaxClockSkew-refusalSlack || transit > cfg.MaxMessageAge-refusalSlack
	}
	if justified {
		// The simulator's own clocks explain the refusal: a lost
		// message the checker may weigh. An unjustified one excuses
		// nothing; it is the node's fault.
		detail := fmt.Sprintf("%s %v ago, clocks %v apart", checker.RefusedDatedDetail, apparent, apart)
		w.hist.Faults = append(w.hist.Faults, checker.Fault{At: w.loop.Now(), Age: w.loop.Now() - sent, Kind: checker.Lost,
			Nodes: []string{from}, Peers: []string{m.addr}, Timer: timerOfURL(req.URL), Detail: detail})
		return
	}
	msg := fmt.Sprintf("%s refused %s %s from %s as out of its age window (dated %v ago), but the clocks were within %v of each other and it was fresh",
		m.addr, req.Method, req.URL, from, apparent, cfg.MaxClockSkew)
	w.apiErrs = append(w.apiErrs, checker.Violation{Guarantee: "API", At: w.loop.Now(), Timer: timerOfURL(req.URL), Message: msg})
	w.tr.note("API violation: %s", msg)
}

// outsideAgeWindow reports whether the node on m dates req, an internal
// request, outside its age window by its own clock now (node's admit:
// sent more than MaxMessageAge + MaxClockSkew ago, or more than
// MaxClockSkew ahead), with the age it sees. A request with no stamp is
// not an internal one: false.
func outsideAgeWindow(m *machine, req node.Request) (time.Duration, bool) {
	sent, err := strconv.ParseInt(req.Header.Get(node.HeaderSent), 10, 64)
	if err != nil {
		return 0, false
	}
	cfg := &nodeDefaults
	apparent := time.Duration(m.clock.Now().UnixMilli()-sent) * time.Millisecond
	return apparent, apparent > cfg.MaxMessageAge+cfg.MaxClockSkew || -apparent > cfg.MaxClockSkew
}

// nodeDefaults is node.DefaultConfig(), made once for the checks asked
// of every request (outsideAgeWindow, stormServe): making it formats an
// address each time. Read only.
var nodeDefaults = node.DefaultConfig()

// refusalSlack is how far inside the window a refused request must have
// been for the refusal to be a violation.
const refusalSlack = 100 * time.Millisecond

// machineAt is the machine whose node serves at addr, or nil (a client).
func (w *world) machineAt(addr string) *machine {
	for _, m := range w.machines {
		if m.addr == addr {
			return m
		}
	}
	return nil
}

// fullRefusal judges a node's 503 to an internal request that offered it
// a record it holds no room for (node's overBudget: it holds
// Limits.MaxTimers records, or the record would take it past
// Limits.MaxHeldBytes). The copy is lost as surely as a lost request's,
// so it is recorded as one about the timer the request named, and the
// checker weighs the replica as one that missed it. The refusal must be
// justified by what the node holds, counted from its store, never taken
// from its answer: a node that refuses a copy below its limits loses
// redundancy for nothing, and that is an API violation, never an excuse.
//
// A node may answer a moment after it decided (after a disk sync, say),
// and may have dropped a record meanwhile: the refusal is justified by
// what it held when the request was delivered (delivered, see
// heldRecords) or when it answered.
func (w *world) fullRefusal(m *machine, nd *node.Node, delivered int, from string, sent time.Duration, req node.Request, resp node.Response) {
	reason := resp.Header.Get(wire.HeaderReason)
	if resp.Status != 503 || req.Header.Get(node.HeaderSent) == "" || !strings.HasPrefix(reason, "node holds ") {
		return
	}
	w.refusedAtLimit(m, nd, delivered, from, sent, req, timerOfURL(req.URL), checker.RefusedAtLimitDetail,
		fmt.Sprintf("%s refused %s %s from %s at its limit (%q)", m.addr, req.Method, req.URL, from, reason))
}

// ownRefusal judges a node's refusal, at its limit, of its own copy of a
// record an internal PUT brought it, when its answer, resp, is about
// more than that copy: a site's relay placing a record another site
// forwarded applies it to itself at once and answers once its site's
// other replicas have (node's placeFromSite), with an answer about them
// all, so fullRefusal never sees its own refusal. The node refused it if
// it shed a record while it handled this request (its apply is
// synchronous: shed, see shedCount). The copy is lost as fullRefusal's
// is, and is recorded as a lost request from the node to itself: the
// checker weighs the node as one that missed the write, and nothing
// about the site's other replicas. The refusal must be justified by
// what the node held, as fullRefusal's: otherwise it is an API
// violation. An answer that is the refusal itself is fullRefusal's.
func (w *world) ownRefusal(m *machine, nd *node.Node, delivered int, shed bool, sent time.Duration, req node.Request, resp node.Response) {
	timer := timerOfURL(req.URL)
	if !shed || req.Method != "PUT" || req.Header.Get(node.HeaderSent) == "" || timer == 0 ||
		resp.Status == 503 && strings.HasPrefix(resp.Header.Get(wire.HeaderReason), "node holds ") {
		return
	}
	w.refusedAtLimit(m, nd, delivered, m.addr, sent, req, timer, "refused its own copy at its limit",
		fmt.Sprintf("%s refused its own copy of %s %s at its limit", m.addr, req.Method, req.URL))
}

// clientOwnRefusal is ownRefusal for a client's write (PUT or POST),
// which a proxy that is one of the timer's replicas applies to its own
// copy and answers on the quorum of the others: a write it acknowledged
// may have missed the proxy alone (fresh seed 8457961: a full primary
// refused its copy of an update its backup took, which made the pop at
// its rank). Its apply may come after Handle returned (an update without
// a factor reads a replica first), so the refusal is told by what the
// answer leaves: the node shed a request while it handled this one
// (its shed count moved from shedBefore, at delivery), and it holds no live copy of
// the timer the answer names (its Location) although the ID's replica
// bits name it, nor any record of it other than the one it held at
// delivery (had, the version; 0 for none). A copy it took may have ended
// by the answer, popped to its end or replaced: it holds its tombstone
// then, a record it did not hold before (fresh seed 9313381: a create due
// at once popped and finished before its backup's answer, 503 at its
// own limit, let the proxy answer). Recorded as ownRefusal's, and held to
// the same justification.
func (w *world) clientOwnRefusal(m *machine, nd *node.Node, delivered int, shedBefore, had uint64, sent time.Duration, req node.Request, resp node.Response) {
	// The cheap tests first: every answer of every node comes here, and
	// counting sheds copies the node's stats.
	if req.Method != "PUT" && req.Method != "POST" || resp.Status/100 != 2 || req.Header.Get(node.HeaderSent) != "" ||
		shedCount(nd) == shedBefore {
		return
	}
	loc := resp.Header.Get(wire.HeaderLocation)
	_, rest, _ := strings.Cut(loc, "/timers/")
	timer, bloom, err := wire.ParseWireID(rest)
	if own := node.BloomBits(m.addr); err != nil || bloom&own != own {
		return
	}
	if t, ok := nd.Timer(timer); ok && (t.State == node.Live || t.Version != had) {
		return
	}
	w.refusedAtLimit(m, nd, delivered, m.addr, sent, req, timer, "refused its own copy at its limit",
		fmt.Sprintf("%s refused its own copy of %s %s at its limit", m.addr, req.Method, req.URL))
}

// heldVersion is the version of the record node nd holds of the timer a
// client's PUT names, at its delivery (clientOwnRefusal); 0 for none, for
// a POST (its ID is new) and for any other request.
func heldVersion(nd *node.Node, req node.Request) uint64 {
	if nd == nil || req.Method != "PUT" || req.Header.Get(node.HeaderSent) != "" {
		return 0
	}
	if t, ok := nd.Timer(timerOfURL(req.URL)); ok {
		return t.Version
	}
	return 0
}

// refusedAtLimit records node m's refusal at its limit of the record req
// brought it from from (m itself for its own copy) as a lost request,
// and an API violation when what m held does not justify it: fewer
// records than its limit, and room for the record within its bytes.
func (w *world) refusedAtLimit(m *machine, nd *node.Node, delivered int, from string, sent time.Duration, req node.Request, timer uint64, what, refused string) {
	cfg := node.DefaultConfig()
	w.plan.Node.configure(&cfg)
	st := nd.Stats()
	held := max(delivered, w.heldRecords(nd))
	w.hist.Faults = append(w.hist.Faults, checker.Fault{At: w.loop.Now(), Age: w.loop.Now() - sent, Kind: checker.Lost,
		Nodes: []string{from}, Peers: []string{m.addr}, Timer: timer,
		Detail: fmt.Sprintf("%s: holds %d records, %d bytes", what, held, st.HeldBytes)})
	w.lackFrom(m, timer)
	// A record past the byte budget needs more room than the held bytes
	// leave: the request's body bounds the record's bytes from above.
	if held < cfg.Limits.MaxTimers && st.HeldBytes+int64(len(req.Body)+node.RecordOverheadBytes) <= cfg.Limits.MaxHeldBytes {
		msg := fmt.Sprintf("%s, but it holds %d of %d records and %d of %d bytes",
			refused, held, cfg.Limits.MaxTimers, st.HeldBytes, cfg.Limits.MaxHeldBytes)
		w.apiErrs = append(w.apiErrs, checker.Violation{Guarantee: "API", At: w.loop.Now(), Timer: timer, Message: msg})
		w.tr.note("API violation: %s", msg)
	}
}

// shedCount is how many requests node nd has refused at its limits on
// records (count or bytes); 0 for no node.
func shedCount(nd *node.Node) uint64 {
	if nd == nil {
		return 0
	}
	st := nd.Stats()
	return st.ShedTimers + st.ShedBytes
}

// aheadRefusal judges a node's 400 to a replication message whose version
// its clock dates more than twice MaxClockLead ahead (node's replicaPut):
// the version was issued by a clock that had stepped that far ahead of
// this one's. The copy is lost, recorded as a lost request about the
// timer, as fullRefusal records one. The refusal must be justified by the
// clocks alone: some node's clock was, at some moment of the run, more
// than twice MaxClockLead (less refusalSlack) ahead of this one's now.
//
// The refusal is a condition, not a moment: the node refuses every copy
// of that version, by whatever path it comes, until its clock reaches the
// version's date less twice the lead. The lost request says so
// (checker.Fault.Until): the true time the receiver's clock reaches that
// reading, from the version in the request, never from the node's
// answer; retimed as its clock moves since (retimeAhead).
func (w *world) aheadRefusal(m *machine, from string, sent time.Duration, req node.Request, resp node.Response) {
	if resp.Status != 400 || req.Header.Get(node.HeaderSent) == "" ||
		!strings.Contains(resp.Header.Get(wire.HeaderReason), "more than twice MaxClockLead ahead") {
		return
	}
	cfg := node.DefaultConfig()
	w.plan.Node.configure(&cfg)
	f := checker.Fault{At: w.loop.Now(), Age: w.loop.Now() - sent, Kind: checker.Lost,
		Nodes: []string{from}, Peers: []string{m.addr}, Timer: timerOfURL(req.URL),
		Detail: "refused: its version dated beyond the receiver's clock lead"}
	if _, r, err := wire.Parse(req.Body); err == nil && r != nil {
		h := aheadHold{fault: len(w.hist.Faults), m: m, target: takenFrom(r.Version, cfg.MaxClockLead)}
		f.Until = m.clock.trueAt(h.target)
		w.ahead = append(w.ahead, h)
	}
	w.hist.Faults = append(w.hist.Faults, f)
	ahead := time.Duration(0)
	for _, o := range w.machines {
		_, hi := o.clock.SkewRange()
		ahead = max(ahead, hi-m.clock.Skew())
	}
	if ahead <= 2*cfg.MaxClockLead-refusalSlack {
		msg := fmt.Sprintf("%s refused %s %s from %s as dated too far ahead, but no clock was ever more than %v ahead of its own",
			m.addr, req.Method, req.URL, from, ahead)
		w.apiErrs = append(w.apiErrs, checker.Violation{Guarantee: "API", At: w.loop.Now(), Timer: timerOfURL(req.URL), Message: msg})
		w.tr.note("API violation: %s", msg)
	}
}

// aheadHold is a refusal of a version dated ahead (aheadRefusal) that
// lasts until its receiver's clock reads target (since Epoch): fault
// indexes it in the history, whose Until is when that comes.
type aheadHold struct {
	fault  int
	m      *machine
	target time.Duration
}

// takenFrom is the clock reading, since Epoch, from which a node with the
// given lead takes a record of version (node's idGen.ahead: it refuses
// one dated more than twice the lead after its clock's millisecond).
func takenFrom(version uint64, lead time.Duration) time.Duration {
	return time.UnixMilli(node.IDTime(version) - 2*lead.Milliseconds()).Sub(Epoch)
}

// retimeAhead moves the end of every refusal of a version dated ahead
// that m's clock has not yet ended to when the clock, as it now runs,
// reaches the reading that ends it: a jump back or a slow drift makes the
// condition last longer, a jump ahead ends it sooner. Called on every
// change of a clock, so each Until is, by the end of the run, the first
// true time after its refusal at which its receiver's clock read enough.
func (w *world) retimeAhead(m *machine) {
	now := w.loop.Now()
	kept := w.ahead[:0]
	for _, h := range w.ahead {
		f := &w.hist.Faults[h.fault]
		if f.Until <= now {
			continue // ended: the node took, or could take, the version
		}
		if h.m == m {
			f.Until = m.clock.trueAt(h.target)
		}
		kept = append(kept, h)
	}
	w.ahead = kept
}

// heldRecords is how many records node nd holds (its timers and
// tombstones, what Limits.MaxTimers bounds), in a plan that sets that
// limit; 0 in any other, where no node fills.
func (w *world) heldRecords(nd *node.Node) int {
	if w.plan.Node.MaxTimers == 0 || nd == nil {
		return 0
	}
	st := nd.Stats()
	return st.Timers + st.Tombstones
}

// pageNet is a node's network as the simulator watches it: the answers
// to its resync page requests, whose records it may refuse at its limit
// (see pageRefusals). nd is the node it was made for, once booted.
type pageNet struct {
	w     *world
	m     *machine
	nd    *node.Node
	inner node.Network
}

var _ node.Network = (*pageNet)(nil)

// Send sends req through the node's own network, and on the answer to a
// resync page request notes the records the node refused taking it.
func (n *pageNet) Send(req node.Request, timeout time.Duration, done func(node.Response, error)) {
	if req.Method != "GET" || !strings.Contains(req.URL, "node-for-replicas=") {
		n.inner.Send(req, timeout, n.w.noteAnswer(n.m.addr, req, done))
		return
	}
	sent := n.w.loop.Now()
	n.inner.Send(req, timeout, func(resp node.Response, err error) {
		nd := n.nd
		if err != nil || nd == nil || resp.Status != 200 && resp.Status != 206 {
			done(resp, err)
			return
		}
		held, refused := n.w.heldRecords(nd), nd.ResyncStatus().Refused
		ahead := n.w.aheadOfPage(n.m, nd, resp.Body)
		done(resp, err)
		if nd.ResyncStatus().Refused > refused {
			n.w.pageRefusals(n.m, nd, held, req, sent, resp.Body)
		}
		n.w.pageAheadRefusals(n.m, req, sent, ahead)
	})
}

// pageRefusals records the records of a resync page, body, that node nd
// on m refused at its limit as it took the page (node's takeResynced):
// each live record of its view the page offered and nd holds no copy of
// since, at that version or a newer one. A copy refused so is lost as
// fullRefusal's is, but no answer shows it (the node pulled the page),
// so without this record the checker would count the restarted replica
// as repopulated from its peer (scenarios/README.md C56: seeds 122634
// and 279937). It is recorded as a lost request from the page's server
// to nd about the timer, and judged as fullRefusal's: an API violation
// when what nd holds does not justify it.
func (w *world) pageRefusals(m *machine, nd *node.Node, held int, req node.Request, sent time.Duration, body []byte) {
	peer, _, _ := strings.Cut(strings.TrimPrefix(req.URL, "http://"), "/")
	for _, e := range pageOffers(nd, body) {
		id, r := e.id, e.r
		if t, ok := nd.Timer(id); ok && t.Version >= r.Version {
			continue
		}
		rec := node.Request{Method: "PUT", URL: "http://" + m.addr + "/timers/" + e.TimerID, Body: e.Timer}
		w.refusedAtLimit(m, nd, held, peer, sent, rec, id, checker.RefusedAtLimitDetail+" (a resync page)",
			fmt.Sprintf("%s refused timer %s of a resync page from %s at its limit", m.addr, e.TimerID, peer))
	}
}

// pageEntryAhead is a live record of a resync page whose version is
// dated more than twice the lead after its taker's clock: the taker
// refuses it (node's resyncRecord, aheadOfClock) until its clock reads
// target (since Epoch).
type pageEntryAhead struct {
	id     uint64
	target time.Duration
}

// aheadOfPage returns the records of a resync page, body, that the node
// nd on m refuses as dated ahead of its clock as it takes the page: by
// the simulator's clock of m, read as the node reads it then, never the
// node's word.
func (w *world) aheadOfPage(m *machine, nd *node.Node, body []byte) []pageEntryAhead {
	cfg := node.DefaultConfig()
	w.plan.Node.configure(&cfg)
	reading := m.clock.Now().Sub(Epoch)
	var out []pageEntryAhead
	for _, e := range pageOffers(nd, body) {
		// The node refuses a version dated more than twice the lead
		// after its clock's millisecond.
		if target := takenFrom(e.r.Version, cfg.MaxClockLead); reading.Truncate(time.Millisecond) < target {
			out = append(out, pageEntryAhead{id: e.id, target: target})
		}
	}
	return out
}

// pageOffer is a live record a resync page offers its taker to take.
type pageOffer struct {
	id uint64
	wire.PageEntry
	r *wire.Replication
}

// pageOffers returns the live records of a resync page, body, of the
// view of nd, its taker: the ones it is offered to take (node's
// resyncRecord), tombstones and other views' records left out.
func pageOffers(nd *node.Node, body []byte) []pageOffer {
	entries, err := wire.ParsePage(body)
	if err != nil {
		return nil
	}
	var out []pageOffer
	for _, e := range entries {
		id, err := wire.ParseID(e.TimerID)
		if err != nil {
			continue
		}
		spec, r, err := wire.ParseValid(e.Timer)
		if err != nil || r == nil || r.ViewID != nd.ViewID() || spec.URI == "" {
			continue
		}
		out = append(out, pageOffer{id: id, PageEntry: e, r: r})
	}
	return out
}

// pageAheadRefusals records each record of a resync page its taker on m
// refused as dated ahead of its clock (aheadOfPage) as aheadRefusal
// records a refused replication: a lost request from the page's server
// about the timer, lasting until the taker's clock reaches the version's
// date less twice the lead. The node pulled the page, so no answer shows
// the refusal: without this record, a staying node's resync that
// completed without a timer whose version a clock jumped ahead had dated
// minutes after its clock was judged as one that left it out (fresh
// seed 9838500, scenarios/README.md C83).
func (w *world) pageAheadRefusals(m *machine, req node.Request, sent time.Duration, ahead []pageEntryAhead) {
	peer, _, _ := strings.Cut(strings.TrimPrefix(req.URL, "http://"), "/")
	for _, a := range ahead {
		h := aheadHold{fault: len(w.hist.Faults), m: m, target: a.target}
		w.hist.Faults = append(w.hist.Faults, checker.Fault{At: w.loop.Now(), Age: w.loop.Now() - sent, Kind: checker.Lost,
			Nodes: []string{peer}, Peers: []string{m.addr}, Timer: a.id, Until: m.clock.trueAt(a.target),
			Detail: "refused: its version dated beyond the receiver's clock lead (a resync page)"})
		w.ahead = append(w.ahead, h)
	}
}

// lackingHold is a refusal at a limit (the fault at index fault) of a
// record of timer, by the node on m, that lasts until that node holds
// a record of the timer.
type lackingHold struct {
	fault int
	m     *machine
	timer uint64
}

// lackFrom makes the refusal just recorded last (checker.Fault.Until):
// a node at its limit refuses every copy of the timer, by whatever path
// it comes, for as long as it holds no room for it, and until then the
// timer has one replica fewer; the refused request alone lasted only
// its settle time, and a pop every other replica failed was owed by the
// one that refused it (fresh seed 9700420, scenarios/README.md C79: a
// replica of the second site, full from the create on, never held the
// timer, and G2 held it to the pop the others' failed callbacks left).
// Until is the run's end until watchLacking finds the node holding a
// record of the timer, checked once a second, rounded up.
func (w *world) lackFrom(m *machine, timer uint64) {
	if timer == 0 {
		return
	}
	i := len(w.hist.Faults) - 1
	w.hist.Faults[i].Until = max(w.plan.End, w.loop.Now()+time.Second)
	w.lacking = append(w.lacking, lackingHold{fault: i, m: m, timer: timer})
	if !w.lackingWatch {
		w.lackingWatch = true
		w.loop.At(w.loop.Now()+time.Second, w.watchLacking)
	}
}

// watchLacking ends each lasting refusal at a limit whose node now holds
// a record of the timer (live or a tombstone), and looks again in a
// second while any is left.
func (w *world) watchLacking() {
	now := w.loop.Now()
	kept := w.lacking[:0]
	for _, h := range w.lacking {
		if nd := h.m.node; nd != nil && !h.m.crashed {
			if t, ok := nd.Timer(h.timer); ok && (t.State == node.Live || t.State == node.Tombstone) {
				w.hist.Faults[h.fault].Until = now
				continue
			}
		}
		kept = append(kept, h)
	}
	w.lacking = kept
	w.lackingWatch = len(kept) > 0
	if w.lackingWatch {
		w.loop.At(now+time.Second, w.watchLacking)
	}
}
