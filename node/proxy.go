package node

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/twmb/murmur3"
)

// write is one client write waiting for its replicas' acknowledgements
// (docs/design.md 4.11): it answers once every target has answered, 2xx if at
// least quorum replicas applied it.
type write struct {
	reply   func(Response)
	ok      Response
	pending int
	applied int
	quorum  int
	// newer is the highest version a replica held above this write's;
	// collided is set when a replica holds another timer under its ID.
	newer    uint64
	collided bool
	// refused is the first outright refusal (a 4xx other than 409) a
	// replica gave. The proxy validated the body itself, so it is a
	// disagreement between nodes (a cluster key or clock), not the
	// client's fault.
	refused string
	// again, if set, writes again after a newer version or a collision.
	again func(w *write)
}

// writeQuorum is how many of a timer's n replicas must apply a client
// write before it is acknowledged. From three replicas up it is a
// majority, so any two acknowledged writes share a replica, and the later
// one is ordered after the earlier whatever the clocks say: that replica
// answers 409 with the newer version and the proxy writes again above it
// (without a majority, seed 1596 lost an acknowledged update across a
// one-way partition to a write whose version came from a faster clock;
// scenarios/README.md N4). With one or two replicas a single one suffices,
// as docs/design.md 4.11 rules: a majority of two is both, and a timer service
// whose default timers cannot be written while either replica is down is
// worse than one that orders writes across a net-split by clock.
func writeQuorum(n int) int {
	if n >= 3 {
		return n/2 + 1
	}
	return 1
}

// errIDSpaceEnded is the reason a node whose clock has run past the end of
// the ID space (in 2159) gives for refusing writes.
const errIDSpaceEnded = "this node's clock is past the end of the timer ID space"

// maxWriteRetries bounds how often a client write is retried above a
// newer version a replica reported.
const maxWriteRetries = 3

func (w *write) done(applied bool, resp Response) {
	w.pending--
	switch {
	case applied:
		w.applied++
	case resp.Status == 409 && resp.Header.Get(HeaderCollision) != "":
		w.collided = true
	case resp.Status == 409:
		v, err := strconv.ParseUint(resp.Header.Get(HeaderVersion), 10, 64)
		if err == nil {
			w.newer = max(w.newer, v)
		}
	case resp.Status/100 == 4 && w.refused == "":
		w.refused = fmt.Sprintf("%d %s", resp.Status, reasonOf(resp))
	}
	if w.pending > 0 {
		return
	}
	switch {
	case (w.newer != 0 || w.collided) && w.again != nil:
		w.again(w)
	case w.applied >= w.quorum:
		w.reply(w.ok)
	case w.collided:
		w.reply(unavailable("another timer holds this timer's ID and version: do two nodes issue IDs with one instance number?"))
	case w.newer != 0:
		w.reply(unavailable("the timer's replicas hold a newer version than this node can issue: its clock may be behind; retry on another node"))
	case w.refused != "":
		w.reply(unavailable("a replica refused the write: " + w.refused))
	case w.applied > 0:
		w.reply(unavailable(fmt.Sprintf("only %d of the %d replicas needed applied the write: it may still take effect", w.applied, w.quorum)))
	default:
		w.reply(unavailable("no replica of the timer could be reached"))
	}
}

// reasonOf is the reason an error response gives.
func reasonOf(r Response) string {
	if reason := r.Header.Get(HeaderReason); reason != "" {
		return reason
	}
	return string(r.Body[:min(len(r.Body), 200)])
}

// create serves a client POST /timers.
func (n *Node) create(body []byte, reply func(Response)) {
	if resp, busy := n.overloaded(); busy {
		reply(resp)
		return
	}
	spec, repl, err := ParseBody(body)
	if err != nil {
		reply(errorResponse(err))
		return
	}
	if repl != nil {
		reply(badRequest("reliability.replicas is only for replication between nodes"))
		return
	}
	if resp, refused := n.refuseCallback(spec); refused {
		reply(resp)
		return
	}
	now := n.nowMs()
	id, ok := n.ids.next(now)
	if !ok {
		reply(unavailable(errIDSpaceEnded))
		return
	}
	if spec.RF == 0 {
		spec.RF = DefaultReplicationFactor
	}
	n.write(id, id, spec, 0, now, reply, 0)
}

// put serves PUT /timers/<id>: a client update (or create with a chosen
// ID), or, when the body carries replicas, a replication message.
func (n *Node) put(wire string, req Request, reply func(Response)) {
	id, bloom, err := ParseWireID(wire)
	if err != nil {
		reply(badRequest(errBadWireID))
		return
	}
	spec, repl, err := ParseBody(req.Body)
	if err != nil {
		reply(errorResponse(err))
		return
	}
	if repl != nil {
		if !n.authentic(req) {
			n.stats.Forbidden++
			reply(forbidden(errForbidden))
			return
		}
		n.replicaPut(id, spec, repl, reply)
		return
	}
	if resp, refused := n.refuseCallback(spec); refused {
		reply(resp)
		return
	}
	if resp, busy := n.overloaded(); busy {
		reply(resp)
		return
	}
	if held := n.store.Get(id); held != nil && spec.RF != 0 && held.RF != 0 && spec.RF != int(held.RF) {
		reply(badRequest("reliability.replication-factor cannot be changed from " + strconv.Itoa(int(held.RF))))
		return
	}
	if spec.RF == 0 {
		spec.RF = n.inferRF(id, bloom)
	}
	n.clientWrite(id, bloom, spec, reply)
}

// remove serves a client DELETE /timers/<id>: a tombstone written to the
// timer's replicas, old and new.
func (n *Node) remove(wire string, reply func(Response)) {
	id, bloom, err := ParseWireID(wire)
	if err != nil {
		reply(badRequest(errBadWireID))
		return
	}
	spec := Spec{Tombstone: true, RF: n.inferRF(id, bloom)}
	n.clientWrite(id, bloom, spec, reply)
}

// clientWrite issues a version for an update or delete of id that orders
// after the timer's creation and everything this node has seen.
func (n *Node) clientWrite(id, bloom uint64, spec Spec, reply func(Response)) {
	now := n.nowMs()
	n.ids.observeID(id, now)
	version, ok := n.ids.next(now)
	if !ok {
		reply(unavailable(errIDSpaceEnded))
		return
	}
	n.write(id, version, spec, bloom, now, reply, 0)
}

// inferRF returns the replication factor of a timer a client did not give
// one for: the held copy's, else the number of members its ID's bloom
// filter names.
func (n *Node) inferRF(id, bloom uint64) int {
	if t := n.store.Get(id); t != nil && t.RF > 0 {
		return int(t.RF)
	}
	if c := len(n.ring.Matching(bloom)); c > 0 {
		return min(c, MaxReplicationFactor)
	}
	return DefaultReplicationFactor
}

// write sends a new definition of id to its replicas under today's
// cluster, and to the nodes the old bloom filter names so that old
// replicas drop their copy (passive rebalancing).
func (n *Node) write(id, version uint64, spec Spec, oldBloom uint64, now int64, reply func(Response), tries int) {
	replicas := n.ring.Replicas(id, spec.RF)
	t := newTimer(id, version, spec, n.startMs(), 0, n.placement(replicas, n.sites()), n.ring.ViewID())
	targets := replicas
	for _, old := range n.ring.Matching(oldBloom) {
		if !slices.Contains(targets, old) {
			targets = append(slices.Clip(targets), old)
		}
	}
	w := &write{reply: reply, pending: len(targets), quorum: writeQuorum(len(replicas)), ok: Response{Status: 200, Header: Header{}}}
	if !spec.Tombstone {
		w.ok.Header[HeaderLocation] = "/timers/" + FormatWireID(id, n.ring.Bloom(replicas))
	}
	if tries < maxWriteRetries {
		w.again = func(w *write) { n.rewrite(t, spec, oldBloom, targets, w, reply, tries) }
	}
	n.forwardToSites(t, now)
	body := EncodeReplication(t, now)
	for _, peer := range targets {
		counts := spec.Tombstone || slices.Contains(replicas, peer)
		if peer == n.self {
			local := *t
			a := n.apply(&local)
			w.done(counts && a.ok && a.newer == nil && !a.collision, n.notApplied(a))
			continue
		}
		n.replicate(peer, t, body, now, func(ok bool, resp Response) { w.done(counts && ok, resp) })
	}
}

// rewrite writes t again after its replicas did not take it. A create
// whose ID another timer holds (two nodes issued the ID, or a client chose
// it) withdraws the copies it left and starts again under a fresh ID, so a
// collision never overwrites a timer; any other write goes again above the
// newer version a replica reported.
func (n *Node) rewrite(t *Timer, spec Spec, oldBloom uint64, targets []string, w *write, reply func(Response), tries int) {
	now := n.nowMs()
	create := t.Version == t.ID
	if create {
		n.stats.IDCollisions++
		n.log.Warn("timer ID already held by another timer; creating under a fresh ID",
			"timer", FormatWireID(t.ID, 0), "instance", n.instance)
		n.withdraw(t, targets, now)
		// The other node shares this one's instance number and, having
		// met the collision in the same millisecond, would issue the same
		// fresh ID: a stride of the sequence that differs between nodes
		// breaks the lockstep.
		n.ids.skip(uint64(murmur3.SeedStringSum32(0, n.self)&0xff) + 1)
	} else {
		n.ids.observe(max(w.newer, t.Version), now)
	}
	version, ok := n.ids.next(now)
	if !ok {
		reply(unavailable(errIDSpaceEnded))
		return
	}
	id := t.ID
	if create {
		id = version
	}
	n.write(id, version, spec, oldBloom, now, reply, tries+1)
}

// withdraw sends targets the tombstone of a create that collided. It
// buries only the same definition (see collides): where the other timer
// is held, it is refused. A copy it fails to reach would pop under the old
// ID for good, so each peer is sent it again until it answers, up to
// maxWithdrawAttempts times.
func (n *Node) withdraw(t *Timer, targets []string, now int64) {
	tomb := *t
	tomb.Tombstone = true
	for _, peer := range targets {
		if peer == n.self {
			local := tomb
			n.apply(&local)
			continue
		}
		n.withdrawFrom(peer, &tomb, 1)
	}
}

// maxWithdrawAttempts bounds how often a withdrawal is sent to one peer.
const maxWithdrawAttempts = 5

func (n *Node) withdrawFrom(peer string, tomb *Timer, attempt int) {
	n.replicate(peer, tomb, nil, n.nowMs(), func(ok bool, resp Response) {
		if !ok && resp.Status != 409 && attempt < maxWithdrawAttempts {
			n.withdrawFrom(peer, tomb, attempt+1)
		}
	})
}

// notApplied is the response a replica gives for a record it did not
// apply: 409 with the newer definition it holds (its version in a header,
// the record as the body), 409 marked as a collision when it holds another
// timer under the ID, or 503 when full.
func (n *Node) notApplied(a applied) Response {
	if a.collision {
		r := text(409, "another timer is held under this ID")
		r.Header[HeaderCollision] = "1"
		r.Header[HeaderReason] = "another timer is held under this ID"
		return r
	}
	if a.newer == nil {
		return unavailable("node is full")
	}
	return Response{
		Status: 409,
		Header: Header{
			HeaderContentType: "application/json",
			HeaderVersion:     strconv.FormatUint(a.newer.Version, 10),
		},
		Body: EncodeReplication(live(a.newer), n.nowMs()),
	}
}

// live is t as other replicas should take it: a dormant copy (a callback
// failed here) is the definition itself, for the sender to pop, including
// the pop that failed here: its Seq counts that pop, which was not made,
// and a replica that took it would skip it (seed 7038 with sites: a
// site's relay passed its dormant record on, and the pop was lost).
func live(t *Timer) *Timer {
	if !t.Dormant {
		return t
	}
	c := *t
	c.Tombstone, c.Dormant = false, false
	c.Seq = max(c.Seq, 1) - 1
	return &c
}

// replicaPut applies a replication message from another node, or places a
// timer forwarded from another site on this site's replicas.
func (n *Node) replicaPut(id uint64, spec Spec, r *Replication, reply func(Response)) {
	n.stats.ReplicationsReceived++
	if now := n.nowMs(); n.ids.ahead(r.Version, now) {
		reply(badRequest(fmt.Sprintf("timing.version %d is dated %d ms after this node's clock, more than twice MaxClockLead ahead",
			r.Version, IDTime(r.Version)-now)))
		return
	}
	if len(r.Replicas) == 0 {
		rf := max(spec.RF, 1)
		r.Replicas = n.ring.Replicas(id, rf)
		n.placeFromSite(id, spec, r, reply)
		return
	}
	t := n.fromReplication(id, spec, r)
	if a := n.apply(t); !a.ok || a.newer != nil || a.collision {
		reply(n.notApplied(a))
		return
	}
	resp := text(200, "OK")
	if held := n.store.Get(id); held != nil && held.Version == t.Version && held.Start < n.startMs()+r.StartTimeDelta {
		// The sender's start is later than ours: tell it (learnStart).
		resp.Header[HeaderStartDelta] = strconv.FormatInt(held.Start-n.nowMs(), 10)
	}
	reply(resp)
}

// fromReplication builds the record a replication body describes.
func (n *Node) fromReplication(id uint64, spec Spec, r *Replication) *Timer {
	t := newTimer(id, r.Version, spec, n.startMs()+r.StartTimeDelta, r.Seq, n.placement(r.Replicas, r.Sites), r.ViewID)
	if spec.Tombstone {
		// A tombstone carries no callback to fingerprint, only the sender's.
		t.def = r.Definition
	}
	return t
}

// newTimer builds the record of one definition of timer id.
func newTimer(id, version uint64, spec Spec, start int64, seq uint32, p *Placement, view uint64) *Timer {
	t := &Timer{
		ID: id, Version: version, Start: start,
		Interval: spec.Interval, RepeatFor: spec.RepeatFor,
		Seq: seq, Tombstone: spec.Tombstone, RF: uint8(spec.RF),
		URI: spec.URI, Opaque: spec.Opaque,
		Placement: p, ViewID: view,
	}
	if !spec.Tombstone {
		t.def = definitionHash(spec.Interval, spec.RepeatFor, spec.URI, spec.Opaque)
	}
	if len(spec.Tags) > 0 {
		t.Extra = &TimerExtra{Tags: spec.Tags}
	}
	return t
}

// placeFromSite writes a timer another site forwarded to this site's
// replicas, keeping its version, start and sequence.
func (n *Node) placeFromSite(id uint64, spec Spec, r *Replication, reply func(Response)) {
	now := n.nowMs()
	spec.RF = max(spec.RF, 1)
	t := newTimer(id, r.Version, spec, now+r.StartTimeDelta, r.Seq, n.placement(r.Replicas, r.Sites), n.ring.ViewID())
	if spec.Tombstone {
		t.def = r.Definition
	}
	// A replica holding a newer record answers 409 with it. The newest
	// goes back to the forwarding site (see siteAnswered), even when
	// another replica here took the stale record, and to the replicas here
	// (see repairSite): the sender, a replica that missed a delete or an
	// update and popped, and the replicas here that took its stale notice
	// are all repaired by it.
	var newer *Response
	var newest uint64
	var from string
	w := &write{reply: func(resp Response) {
		if newer != nil {
			resp = *newer
			n.repairSite(t, *newer, from)
		}
		reply(resp)
	}, pending: len(r.Replicas), quorum: 1, ok: text(200, "OK")}
	doneFrom := func(peer string) func(bool, Response) {
		return func(ok bool, resp Response) {
			if !ok && resp.Status == 409 && resp.Header.Get(HeaderCollision) == "" && len(resp.Body) > 0 {
				if v, err := strconv.ParseUint(resp.Header.Get(HeaderVersion), 10, 64); err == nil && v > newest {
					newer, newest, from = &resp, v, peer
				}
			}
			w.done(ok, resp)
		}
	}
	for _, peer := range r.Replicas {
		if peer == n.self {
			local := *t
			a := n.apply(&local)
			doneFrom(peer)(a.ok && !a.collision && a.newer == nil, n.notApplied(a))
			continue
		}
		n.replicate(peer, t, nil, now, doneFrom(peer))
	}
}

// repairSite passes the newer record a replica here (from) answered a
// forwarded record t with to this node and this site's other replicas of
// t, which may have taken t.
func (n *Node) repairSite(t *Timer, answer Response, from string) {
	spec, repl, err := ParseBody(answer.Body)
	if err != nil || repl == nil {
		return
	}
	rec := n.fromReplication(t.ID, spec, repl)
	if from != n.self && slices.Contains(t.Placement.Replicas, n.self) {
		local := *rec
		n.apply(&local)
	}
	n.spreadRepair(rec, t, from)
}

// forwardToSites sends t to every other site it is replicated to, for that
// site to place on its own replicas. Remote sites are not waited for: a
// client write is acknowledged by its local replicas.
func (n *Node) forwardToSites(t *Timer, now int64) {
	for _, site := range n.cfg.RemoteSites {
		if !slices.Contains(t.Placement.Sites, site.Name) {
			continue
		}
		fwd := *t
		fwd.Placement = &Placement{Sites: t.Placement.Sites}
		n.stats.ReplicationsSent++
		req := n.internalPut(site.Address, FormatWireID(t.ID, 0), EncodeReplication(&fwd, now))
		n.send(req, n.cfg.ReplicationTimeout, func(resp Response, err error) {
			if err == nil {
				n.siteAnswered(t.ID, resp)
			}
		})
	}
}

// siteAnswered learns from another site's answer to a forward: a 409 with
// a newer record (a delete or update this site missed, its forward lost)
// is placed on this site's replicas, as a 409 to a pop notice repairs the
// replicas of one site. Without it a site that missed a delete popped the
// timer until its repeat-for ended.
func (n *Node) siteAnswered(id uint64, resp Response) {
	if resp.Status != 409 || resp.Header.Get(HeaderCollision) != "" {
		return
	}
	spec, repl, err := ParseBody(resp.Body)
	if err != nil || repl == nil {
		return
	}
	// The newer record's replication factor places it: what this node
	// holds may be a tombstone of a delete whose factor was inferred.
	held := n.store.Get(id)
	rf := spec.RF
	if rf < 1 && held != nil {
		rf = int(held.RF)
	}
	rf = max(rf, 1)
	here := n.placement(n.ring.Replicas(id, rf), repl.Sites)
	t := newTimer(id, repl.Version, spec, n.startMs()+repl.StartTimeDelta, repl.Seq, here, n.ring.ViewID())
	if spec.Tombstone {
		t.def = repl.Definition
	}
	if !slices.Contains(here.Replicas, n.self) {
		n.spreadRepair(t, t, n.self)
		return
	}
	n.apply(t)
	if now := n.store.Get(id); now != nil && now != held {
		n.spreadRepair(now, now, n.self)
	}
}

// sites lists the sites a new timer is replicated to: this one first.
func (n *Node) sites() []string {
	if len(n.cfg.RemoteSites) == 0 {
		return nil
	}
	s := []string{n.cfg.LocalSite}
	for _, r := range n.cfg.RemoteSites {
		s = append(s, r.Name)
	}
	return s
}

func errorResponse(err error) Response {
	var bad *BadRequestError
	if errors.As(err, &bad) {
		return badRequest(bad.Reason)
	}
	return unavailable(err.Error())
}

// replicationBody is the JSON of the internal PUT (api.md). version is an
// extension: the client write that defined the timer, as a decimal string.
type replicationBody struct {
	Timing struct {
		Interval       int64  `json:"interval"`
		RepeatFor      int64  `json:"repeat-for"`
		StartTimeDelta int64  `json:"start-time-delta"`
		SequenceNumber uint32 `json:"sequence-number"`
		Version        string `json:"version"`
		Definition     uint32 `json:"definition,omitempty"`
	} `json:"timing"`
	Callback    map[string]*callbackHTTP `json:"callback"`
	Reliability struct {
		ClusterViewID     string   `json:"cluster-view-id"`
		Replicas          []string `json:"replicas"`
		Sites             []string `json:"sites,omitempty"`
		ReplicationFactor int      `json:"replication-factor,omitempty"`
	} `json:"reliability"`
	Statistics *struct {
		TagInfo []Tag `json:"tag-info"`
	} `json:"statistics,omitempty"`
}

type callbackHTTP struct {
	URI    string `json:"uri"`
	Opaque string `json:"opaque"`
}

// EncodeReplication returns the internal PUT body for t as of now (ms).
func EncodeReplication(t *Timer, now int64) []byte {
	var b replicationBody
	b.Timing.Interval = t.Interval / 1000
	b.Timing.RepeatFor = t.RepeatFor / 1000
	b.Timing.StartTimeDelta = t.Start - now
	b.Timing.SequenceNumber = t.Seq
	b.Timing.Version = strconv.FormatUint(t.Version, 10)
	b.Timing.Definition = t.def
	b.Callback = map[string]*callbackHTTP{}
	if !t.Tombstone {
		b.Callback["http"] = &callbackHTTP{URI: t.URI, Opaque: t.Opaque}
	}
	b.Reliability.ClusterViewID = strconv.FormatUint(t.ViewID, 10)
	b.Reliability.Replicas = t.Placement.Replicas
	if b.Reliability.Replicas == nil {
		b.Reliability.Replicas = []string{} // a forward to another site, not a client body
	}
	b.Reliability.Sites = t.Placement.Sites
	b.Reliability.ReplicationFactor = int(t.RF)
	if tags := t.Tags(); len(tags) > 0 {
		b.Statistics = &struct {
			TagInfo []Tag `json:"tag-info"`
		}{tags}
	}
	out, err := json.Marshal(&b)
	if err != nil {
		panic("node: encoding a replication body: " + err.Error())
	}
	return out
}
