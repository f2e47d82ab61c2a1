package node

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/chronos-timer/chronos/wire"

	"github.com/twmb/murmur3"
)

// write is one client write waiting for its replicas' acknowledgements
// (docs/design.md 4.11): it answers once every target has answered, 2xx if at
// least quorum replicas applied it.
type write struct {
	// rec is the record written. It lives as long as the write that
	// waits for its answers, which hold it, so the two are one
	// allocation; a replica holds a copy of its own (apply).
	rec     Timer
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
	// unavailable is the first reason a replica gave for a 503 (at its
	// limit, refuseFull, or shedding load): it was reached, and could
	// not take the write.
	unavailable string
	// elsewhere counts the peers that took a live write with a 200 but
	// do not hold it as its replicas (vouches): they count for nothing.
	elsewhere int
	// A delete is acknowledged only where it can refute what it
	// deletes: buried is set once a node answered that its tombstone
	// replaced a copy of a definition (applied.buriedLive: such a node
	// is one of that definition's
	// replicas, which its other replicas' pop notices reach, and its
	// tombstone lives until the definition's last pop), and unanswered
	// counts the targets that gave no answer. A delete whose tombstones
	// all buried nothing stands only if every target answered: those
	// tombstones live only tombstoneMin, and a replica that held the
	// timer and missed the delete would pop it to its end once they had
	// expired, its notices meeting nothing.
	deletes, buried bool
	unanswered      int
	// vouched and lacking mark, by position in rec's replicas, the
	// other replicas that hold a live write and those that may not
	// (unanswered, or answered without taking it): the first are told
	// of the second (tellLacking).
	vouched, lacking uint32
	n                *Node
	// again, if its node is set, writes again after a newer version or
	// a collision.
	again writeAgain
}

// writeAgain is what a write needs to be written again (rewrite). It is
// part of the write it belongs to, not a closure of its own: a client
// write allocates nothing for a retry it almost never makes.
type writeAgain struct {
	n        *Node
	t        *Timer
	spec     wire.Timer
	oldBloom uint64
	targets  []string
	tries    int
	// factorLeft: the client gave no factor, and the write's was learnt
	// from what the node held or read before it went out (factorThen).
	factorLeft bool
}

// writeQuorum is how many of a timer's n replicas must apply a client write
// before it is acknowledged. From three replicas up it is a majority, so any
// two acknowledged writes share a replica, and the later one is ordered after
// the earlier whatever the clocks say: that replica answers 409 with the newer
// version and the proxy writes again above it (without a majority, a generated
// plan lost an acknowledged update across a one-way partition to a write whose
// version came from a faster clock; scenarios/README.md N4). With one or two
// replicas a single one suffices, as docs/design.md 4.11 rules: a majority of
// two is both, and a timer service whose default timers cannot be written
// while either replica is down is worse than one that orders writes across a
// net-split by clock.
func writeQuorum(n int) int {
	if n >= 3 {
		return n/2 + 1
	}
	return 1
}

// errIDSpaceEnded is the reason a node whose clock has run past the end of
// the ID space (in 2159) gives for refusing writes.
const errIDSpaceEnded = "this node's clock is past the end of the timer ID space"

// errClockBehind is the reason a write through a node whose clock was
// stepped back past the IDs it issued is refused with.
const errClockBehind = "this node's clock is behind the IDs it has issued by more than MaxClockLead (it was stepped back): retry through another node"

// nextID issues an ID or version for a write at now, or false and the
// answer that refuses the write. A node issues none dated more than
// MaxClockLead past its own clock: its peers refuse a version more than
// twice the lead ahead of theirs (idGen.ahead) and observe one only up
// to the lead (idGen.observe), so a version from a clock stepped back
// could neither be replicated nor ever be superseded.
func (n *Node) nextID(now int64) (uint64, bool, Response) {
	if n.ids.behind(now) {
		n.hit(probeClockBehindIDs)
		return 0, false, unavailable(errClockBehind)
	}
	id, ok := n.ids.next(now)
	n.persist.meta = true // the last ID issued (persist.go)
	if !ok {
		return 0, false, unavailable(errIDSpaceEnded)
	}
	return id, true, Response{}
}

// errBelowNewer is the reason a write whose every try met a newer
// version, but which some replica took, is refused with.
const errBelowNewer = "a replica holds a newer version of the timer than this node can issue (its clock may be behind, or the newer write's clock ahead): the write may still take effect until that version reaches the replicas that took it; retry later or on another node"

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
	case resp.Status == 503 && w.unavailable == "":
		w.unavailable = reasonOf(resp)
	}
	if w.pending > 0 {
		return
	}
	if w.newer == 0 && !w.collided {
		w.n.tellLacking(w)
	}
	switch {
	case (w.newer != 0 || w.collided) && w.again.n != nil:
		a := w.again
		a.n.rewrite(a, w)
	case w.newer != 0 && w.applied > 0:
		// Its last try still met a newer version: a replica holds a
		// version this write is ordered below, and it buries the write
		// on the replicas that took it wherever it reaches them (repair,
		// resync, a notice). The write is not acknowledged, whatever its
		// quorum: acknowledged below that version, an update through a
		// node whose clock could not pass a version dated minutes ahead
		// by a stepped clock was buried once the receiver's clock came
		// within twice the lead of it (scenarios/README.md N50).
		w.n.hit(probeWriteBelowNewer)
		w.reply(unavailable(errBelowNewer))
	case w.applied >= w.quorum && (!w.deletes || w.buried || w.unanswered == 0):
		w.reply(w.ok)
	case w.applied >= w.quorum:
		w.reply(unavailable(fmt.Sprintf("the delete reached %d replicas, none of which held the timer, and %d nodes that may hold it did not answer: it may still take effect", w.applied, w.unanswered)))
	case w.collided:
		w.reply(unavailable("another timer holds this timer's ID and version: do two nodes issue IDs with one instance number?"))
	case w.newer != 0:
		w.reply(unavailable("the timer's replicas hold a newer version than this node can issue: its clock may be behind; retry on another node"))
	case w.refused != "":
		w.reply(unavailable("a replica refused the write: " + w.refused))
	case w.elsewhere > 0:
		w.reply(unavailable(fmt.Sprintf("only %d of the %d replicas needed hold the write, and %d more took it but place the timer elsewhere (a scale is under way): it may still take effect", w.applied, w.quorum, w.elsewhere)))
	case w.applied > 0:
		w.reply(unavailable(fmt.Sprintf("only %d of the %d replicas needed applied the write: it may still take effect", w.applied, w.quorum)))
	case w.unavailable != "":
		w.reply(unavailable("no replica could take the write: " + w.unavailable))
	default:
		w.reply(unavailable("no replica of the timer could be reached"))
	}
}

// reasonOf is the reason an error response gives.
func reasonOf(r Response) string {
	if reason := r.Header.Get(wire.HeaderReason); reason != "" {
		return reason
	}
	return string(r.Body[:min(len(r.Body), 200)])
}

// create serves a client POST /timers.
func (n *Node) create(body []byte, reply func(Response)) {
	if resp, busy := n.shed(len(body)); busy {
		reply(resp)
		return
	}
	spec, repl, err := wire.Parse(body)
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
	id, ok, refused := n.nextID(now)
	if !ok {
		reply(refused)
		return
	}
	if spec.ReplicationFactor == 0 {
		spec.ReplicationFactor = wire.DefaultReplicationFactor
	}
	n.write(id, id, spec, 0, now, n.startMs(), reply, 0, 0, false)
}

// put serves PUT /timers/<id>: a client update (or create with a chosen
// ID), or, when the body carries replicas, a replication message.
func (n *Node) put(wid string, req Request, reply func(Response)) {
	id, bloom, err := wire.ParseWireID(wid)
	if err != nil {
		reply(badRequest(errBadWireID))
		return
	}
	spec, repl, err := wire.Parse(req.Body)
	if err != nil {
		reply(errorResponse(err))
		return
	}
	if repl != nil {
		if n.refuseInternal(req, reply) {
			return
		}
		from, _, _ := senderInstance(req)
		sent, _ := parseMillis(HeaderSent, req.Header.Get(HeaderSent)) // admit read it
		n.replicaPut(id, spec, repl, from, sent, reply)
		return
	}
	if resp, refused := n.refuseCallback(spec); refused {
		reply(resp)
		return
	}
	if resp, busy := n.shed(len(req.Body)); busy {
		reply(resp)
		return
	}
	// Only a live timer has a factor an update keeps; one deleted or
	// finished is created again by a PUT, with the factor it gives or
	// the default (api.md), whatever its tombstone says. A tombstone
	// held here says the timer ended only as far as this node heard: a
	// later write this node missed may have made it live again on its
	// other replicas, with its factor, so it is one copy among theirs
	// (learnRF). A Moved record says neither: the timer moved to other
	// replicas, live or not, so this node knows no more of it than one
	// that holds nothing.
	held := n.store.Get(id)
	if held != nil && held.State == Moved {
		held = nil
	}
	live := held != nil && held.State == Live
	if live && spec.ReplicationFactor != 0 && held.RF != 0 && spec.ReplicationFactor != int(held.RF) {
		n.hit(probeWriteRFChange)
		reply(badRequest("reliability.replication-factor cannot be changed from " + strconv.Itoa(int(held.RF))))
		return
	}
	left := spec.ReplicationFactor == 0
	n.factorThen(id, bloom, wid, spec, reply, func(spec wire.Timer) {
		n.clientWrite(id, bloom, spec, reply, left)
	})
}

// factorThen calls then with spec, its replication factor learnt if the
// client gave none: a live copy held here keeps its own (inferRF);
// otherwise only the timer's replicas know whether it is live, and with
// which factor, and learnRF reads them.
func (n *Node) factorThen(id, bloom uint64, wid string, spec wire.Timer, reply func(Response), then func(wire.Timer)) {
	if spec.ReplicationFactor != 0 {
		then(spec)
		return
	}
	if held := n.store.Get(id); held == nil || held.State != Live {
		n.hit(probeLearnRF)
		n.hitIf(bloom == 0, probeBareIDUpdate)
		n.learnRF(id, bloom, wid, spec, reply, then)
		return
	}
	n.hit(probeUpdateInferredRF)
	spec.ReplicationFactor = n.inferRF(id, bloom)
	then(spec)
}

// learnRF serves an update that gives no replication factor through a
// node that holds no live copy of the timer. Neither the default nor the
// count of the nodes the ID's bloom names is sound: the timer may have a
// larger factor (its other replicas would go on popping the old
// definition), or have been deleted (a PUT then creates it again, with
// the default). So the node first reads the copies of the nodes the ID
// names and of the replicas of the default, or of the larger factor of
// a tombstone it holds (the ring ranks every node per ID, so they head
// the replica list of every larger factor too), its own among them. The
// update keeps the factor of the newest copy if it is
// live; if every node answered and a tombstone is the newest, or none
// holds any copy, it is a create, with the default; if a node that may
// hold it live did not answer, the factor is unknown and the client is
// told to retry. A tombstone newest among some answers is no proof: a
// node cut off from an rf 3 update of a finished timer held its
// tombstone, took the default, acknowledged the update on its own copy
// (one of two is a quorum) and lost it in a crash, while the other two
// replicas held the timer live with factor 3
// (TestUpdateThroughAStaleTombstoneLearnsTheFactor).
func (n *Node) learnRF(id, bloom uint64, wid string, spec wire.Timer, reply func(Response), then func(wire.Timer)) {
	nodes := n.named(bloom)
	rf := wire.DefaultReplicationFactor
	if held := n.store.Get(id); held != nil && held.State != Moved && int(held.RF) > rf {
		rf = int(held.RF) // a tombstone's factor: its replicas may hold it live again
	}
	for _, r := range n.ring.Replicas(id, rf) {
		if !slices.Contains(nodes, r) {
			nodes = append(nodes, r)
		}
	}
	// During a scale the timer may be live only on a replica of the view
	// before (its hand-off not answered yet), which the write reaches
	// (alsoHolders): the read asks it too. Left out, the read found
	// nothing live, took the default, and an update of a timer of factor
	// 1 was placed on two replicas (scenarios/README.md N55,
	// TestUpdateWithoutAFactorLearnsItFromTheViewBefore).
	if more := n.appendPastReplicas(nodes, id, rf); len(more) > len(nodes) {
		n.hit(probeLearnRFPastViews)
		nodes = more
	}
	n.askFollowingMoves(id, wid, nodes, func(copies []replicaCopy) {
		newest, _ := newestCopy(copies)
		everyone := !slices.ContainsFunc(copies, func(c replicaCopy) bool { return c.state == wire.StateUnreachable })
		switch {
		case newest != nil && newest.State == Live:
			n.hit(probeLearnRFCopy)
			spec.ReplicationFactor = newest.replicationFactor()
		case everyone:
			// Deleted or finished (a tombstone is the newest copy), or
			// held nowhere: the PUT creates the timer, with the default.
			n.hitIf(newest != nil, probeRecreateDefaultRF)
			n.hitIf(newest == nil, probeLearnRFDefault)
			spec.ReplicationFactor = wire.DefaultReplicationFactor
		default:
			// A node that may hold the timer live did not answer.
			n.hit(probeLearnRFUnknown)
			reply(unavailable("not every node that may hold the timer answered, so its replication factor is unknown: retry, or give reliability.replication-factor"))
			return
		}
		then(spec)
	})
}

// remove serves a client DELETE /timers/<id>: a tombstone written to the
// timer's replicas, old and new.
func (n *Node) remove(wid string, reply func(Response)) {
	if resp, clash := n.clashing(); clash {
		n.hit(probeClashRefused)
		reply(resp)
		return
	}
	id, bloom, err := wire.ParseWireID(wid)
	if err != nil {
		reply(badRequest(errBadWireID))
		return
	}
	// The tombstone reaches the default's replicas too (alsoHolders),
	// but only the timer's own replicas count for its answer: a node
	// outside them that takes the tombstone was never going to pop.
	rf := n.inferRF(id, bloom)
	if n.store.Get(id) == nil && !n.accountsFor(bloom) {
		// No copy here, and a bare chosen ID (its bloom filter names
		// no member) or one whose bloom names a replica that has left
		// the cluster: the timer's replication factor is unknown, and
		// the default or the count of the nodes named could miss
		// replicas, which would go on popping. The tombstone goes to
		// every member, up to MaxReplicationFactor.
		n.hit(probeDeleteEveryMember)
		n.hitIf(bloom == 0, probeBareIDDelete)
		rf = wire.MaxReplicationFactor
	}
	spec := wire.Timer{ReplicationFactor: rf} // no URI: a deletion
	n.clientWrite(id, bloom, spec, reply, false)
}

// clientWrite issues a version for an update or delete of id that orders
// after the timer's creation and everything this node has seen;
// factorLeft says the client gave no factor (writeAgain).
func (n *Node) clientWrite(id, bloom uint64, spec wire.Timer, reply func(Response), factorLeft bool) {
	now := n.nowMs()
	n.ids.observeID(id, now)
	version, ok, refused := n.nextID(now)
	if !ok {
		reply(refused)
		return
	}
	n.write(id, version, spec, bloom, now, n.startMs(), reply, 0, 0, factorLeft)
}

// inferRF returns the replication factor of a timer a client did not give
// one for: the held copy's, else the number of nodes its ID's bloom
// filter names.
func (n *Node) inferRF(id, bloom uint64) int {
	if t := n.store.Get(id); t != nil && t.RF > 0 {
		n.hit(probeInferRFHeld)
		return int(t.RF)
	}
	if c := len(n.named(bloom)); c > 0 {
		n.hit(probeInferRFBloom)
		return min(c, wire.MaxReplicationFactor)
	}
	return wire.DefaultReplicationFactor
}

// write sends a new definition of id to its replicas under today's
// cluster, and to the nodes the old bloom filter names so that old
// replicas drop their copy (passive rebalancing), and to the other nodes
// that may hold an older copy (alsoHolders). The definition starts at
// start: now, for a client write's first try.
func (n *Node) write(id, version uint64, spec wire.Timer, oldBloom uint64, now, start int64, reply func(Response), tries int, firstTry uint64, factorLeft bool) {
	var buf [wire.MaxReplicationFactor]string
	w := &write{n: n, reply: reply, deletes: deletes(spec)}
	w.rec = makeTimer(id, version, spec, start, 0, n.placement(n.ring.AppendReplicas(buf[:0], id, spec.ReplicationFactor), n.sites()),
		n.ring.ViewID(), n.shared)
	t := &w.rec
	replicas := t.Placement().Replicas // interned: never changed
	targets := replicas
	for _, old := range n.named(oldBloom) {
		if !slices.Contains(targets, old) {
			n.hit(probeWriteOldReplicas)
			targets = append(slices.Clip(targets), old)
		}
	}
	targets = n.alsoHolders(t, targets)
	w.pending, w.quorum = len(targets), writeQuorum(len(replicas))
	w.ok = Response{Status: 200, Header: Header{}}
	if !deletes(spec) {
		var loc [len("/timers/") + 32]byte
		w.ok.Header[wire.HeaderLocation] = string(wire.AppendWireID(append(loc[:0], "/timers/"...), id, n.ring.Bloom(replicas)))
	}
	t.setFirstTry(firstTry)
	if tries < maxWriteRetries {
		w.again = writeAgain{n: n, t: t, spec: spec, oldBloom: oldBloom, targets: targets, tries: tries, factorLeft: factorLeft}
	}
	if n.logsTimers() {
		n.logTimer(writeStep(t), t, "replicas", replicas, "targets", targets)
	}
	// Until another site answers a message of the definition, it may
	// not hold it (TimerExtra.SitesLacking): a forward in flight, or one
	// this node lost by restarting before its answer, has reached
	// nobody. The mark goes with the record this node applies below,
	// and on disk with it. A delete's tombstone carries it too: it is
	// kept while another site may lack it (lackingTombstone), whose
	// replica may hold the deleted definition and pop it once it is
	// back, its notices coming here.
	t.setSitesLacking(n.remoteSitesOf(t.Placement()))
	n.forwardToSites(t)
	// This node's own copy takes the write first: the pops it carries
	// over (keepProgress) are told to the other replicas as a pop
	// notice tells them (apply). Its answer counts below, in its place
	// among the targets.
	selfApplied, selfAnswer := false, Response{}
	if slices.Contains(targets, n.self) {
		local := *t
		a := n.apply(&local)
		if selfApplied = a.ok && a.newer == nil && !a.collision; selfApplied {
			w.buried = w.buried || a.buriedLive
		} else {
			selfAnswer = n.notApplied(a)
		}
	}
	var body []byte // encoded once, for the first peer
	for _, peer := range targets {
		// Only the timer's replicas count towards the quorum: an old
		// replica's or a leaving node's copy goes by hand-off, and a
		// default's replica outside them holds at most a copy a PUT
		// made again, which the write buries but which pops nothing
		// the client asked for.
		counts := slices.Contains(replicas, peer)
		if peer == n.self {
			w.done(counts && selfApplied, selfAnswer)
			continue
		}
		if body == nil {
			body = EncodeReplication(t, now)
		}
		n.replicate(peer, t, body, now, func(ok bool, resp Response) {
			w.buried = w.buried || ok && resp.Header.Get(HeaderHeld) == heldBuried
			if resp.Status == 0 {
				w.unanswered++
			}
			if ok && !vouches(t, resp) {
				n.hit(probeWriteNotHeld)
				w.elsewhere++
				ok = false
			}
			if i := slices.Index(replicas, peer); i >= 0 && i < 32 {
				switch {
				case ok:
					w.vouched |= 1 << i
				case resp.Status != 409: // a 409 holds a newer record, or another timer's
					w.lacking |= 1 << i
				}
			}
			w.done(counts && ok, resp)
		})
	}
}

// heldBuried is HeaderHeld's value on a 200 to a tombstone from a node
// whose tombstone replaced a live copy of the timer (applied.buriedLive).
const heldBuried = "buried"

// heldEnded is HeaderHeld's value on a 200 to a live record from a node
// that holds the tombstone of the same version: the definition ended
// (its last pop made), which a hand-off counts as the replica holding
// something newer (handOff).
const heldEnded = "ended"

// vouches reports whether a peer's 200 to a write's replication says the
// peer now answers for the record, so that it counts towards the write's
// quorum: a tombstone any 200 answers for (there is nothing to pop, and a
// node that holds nothing pops nothing), a live definition only the 200
// of a peer that holds it live as one of its replicas, or holds its
// tombstone (HeaderHeld): a definition that never fires (api.md: a
// repeat-for below the interval) ends as it is taken, and a write of
// one, which buries what it replaces, was answered 503 "a scale is under
// way" by a proxy that was none of its replicas. A peer whose own view
// places the timer elsewhere (a scale under way) holds at most a moved
// marker and passes the record on, and a full one refuses it: neither
// will pop it, and a write counted on such answers was acknowledged
// while no replica held it.
func vouches(t *Timer, resp Response) bool {
	return t.State != Live || resp.Header.Get(HeaderHeld) == "live" || resp.Header.Get(HeaderHeld) == heldEnded
}

// keptAway reports whether a peer's answer to a replication of t, a live
// record, says it took the message but holds no live copy of it, nor its
// end: its own view places the timer elsewhere (a scale it has not
// reloaded for yet), so it kept the record as moved away. The peer may
// lack the definition until it answers again (replicate), and a push
// that a scale's hand-off or resync counts on is sent again after its
// reload (pushUntilHeld).
func keptAway(t *Timer, ok bool, resp Response) bool {
	return ok && t.State == Live && !vouches(t, resp)
}

// named returns the nodes a wire ID's bloom filter names: the members
// (Ring.Matching), and the leaving nodes. New placements no longer go to
// a leaving node, but it holds and pops its copies until the scale
// completes, and until a staying node's resync has fetched a timer from
// it, it may be the only node that holds it. A write must reach it, or
// it pops the definition the write replaced
// (TestWritesDuringAScaleDownReachTheLeavingNode: an update through a
// node whose ring no longer had the leaving replica in it reached only
// the new primary, whose resync could not reach the leaving node yet).
// It counts in the replication factor a delete infers, too
// (TestDeleteByAnIDNamingALeavingReplicaReachesTheNewBackup: a delete of
// a timer of rf 2 whose backup was leaving inferred rf 1, and the new
// backup, never told, popped the deleted timer).
func (n *Node) named(bloom uint64) []string {
	out := n.ring.Matching(bloom)
	for _, l := range n.cfg.Cluster.Leaving {
		if b := BloomBits(l); bloom&b == b {
			n.hit(probeNamedLeaving)
			out = append(out, l)
		}
	}
	return out
}

// accountsFor reports whether the nodes bloom names (named) set every
// bit it has, so that their count is the replication factor of the timer
// the bloom was built for. A bit none of them sets is a replica that has
// left the cluster since: a scale-down moved the timer to a node the
// bloom does not name
// (TestDeleteByAnIDNamingALeavingReplicaReachesTheNewBackup: a delete by
// such an ID inferred rf 1 and missed the new backup, which popped the
// deleted timer). A bloom with no bit names no one and accounts for
// nothing.
func (n *Node) accountsFor(bloom uint64) bool {
	var set uint64
	for _, a := range n.named(bloom) {
		set |= BloomBits(a)
	}
	n.hitIf(bloom != 0 && set != bloom, probeAccountsForDeparted)
	return bloom != 0 && set == bloom
}

// alsoHolders returns targets, the nodes a write of t goes to, with the
// other nodes of this node's ring that may hold an older copy of t's
// timer: an update or delete goes to the replicas of the factor of the
// copy this node holds, if larger, and to the default factor's too,
// since a PUT without a factor that this node has not heard of may have
// created the timer again there (learnRF), and a copy left there would go
// on popping the definition t replaces. Replica lists of every factor
// are prefixes of one ranking, so only a factor below the default adds
// nodes. A copy this node holds itself outside all of them takes t at
// once (replaceOwnCopy). A client write and another site's forward
// (placeFromSite) share the rule.
func (n *Node) alsoHolders(t *Timer, targets []string) []string {
	if t.Version != t.ID { // not a create: the ID is the create's version
		for _, r := range n.ring.Replicas(t.ID, wire.DefaultReplicationFactor) {
			if !slices.Contains(targets, r) {
				n.hit(probeWriteDefaults)
				targets = append(slices.Clip(targets), r)
			}
		}
		// A factor the timer had before, larger than this write's (a
		// finished or deleted timer created again with the default),
		// left copies on the replicas beyond this write's: a
		// concurrent update may have made one live again.
		rf := max(t.replicationFactor(), wire.DefaultReplicationFactor)
		if held := n.store.Get(t.ID); held != nil && held.RF > 0 {
			rf = max(rf, int(held.RF))
			for _, r := range n.ring.Replicas(t.ID, int(held.RF)) {
				if !slices.Contains(targets, r) {
					n.hit(probeWriteHeldFactor)
					targets = append(slices.Clip(targets), r)
				}
			}
		}
		// The replicas of the same factors under a view before this
		// node's (pastRings): an old replica keeps its copy live, popping
		// after every replica's turn, until the new replicas answer its
		// hand-off, and a write placed under the new view reaches it only
		// if the ID's bloom names it. An update by a bare ID reached the
		// new replica alone while the old replica's hand-off was held (a
		// clog into the new replica), and the old replica popped the
		// definition the acknowledged update had replaced
		// (scenarios/README.md N49, TestWriteReachesTheReplicasOfTheViewBefore).
		// Like the bloom's old replicas, they take the write as moved
		// away, which ends their copy, and never count toward the quorum.
		// A node that has left the membership (a scale-down's last step
		// given) is stopped: a write waiting on it would wait for its
		// timeout until the next change of view.
		if more := n.appendPastReplicas(targets, t.ID, rf); len(more) > len(targets) {
			n.hit(probeWritePastViews)
			targets = more
		}
	}
	if !slices.Contains(targets, n.self) {
		n.replaceOwnCopy(t)
	}
	return targets
}

// appendPastReplicas appends to dst the replicas of id at factor rf
// under the views before this node's (pastRings) that dst lacks and that
// are still members: where a timer placed under an earlier view may be
// live until its hand-off is answered. Writes reach them (alsoHolders),
// and a read for the timer's factor asks them (learnRF).
func (n *Node) appendPastReplicas(dst []string, id uint64, rf int) []string {
	var ringBuf [2]*Ring
	for _, past := range n.pastRings(ringBuf[:0]) {
		var buf [wire.MaxReplicationFactor]string
		for _, r := range past.AppendReplicas(buf[:0], id, rf) {
			if !slices.Contains(dst, r) && n.inMembership(r) {
				dst = append(slices.Clip(dst), r)
			}
		}
	}
	return dst
}

// replaceOwnCopy applies t, a write this node proxies but is no target
// of, to the copy of its timer it holds, if any, which then keeps it as
// moved away (apply). A leaving node, or an old replica, is no target of
// a write by an ID whose bloom filter does not name it (a Location given
// mid-scale names the new replicas only), and as proxy it would
// otherwise pop the definition its own write replaced until a resync's
// reference or tombstone reached it
// (TestLeavingNodeWritingAnUpdateStopsItsOldCopy: the leaving proxy
// popped the old definition 0.8 s after it acknowledged the update). It
// never counts toward the write's quorum.
func (n *Node) replaceOwnCopy(t *Timer) {
	if n.store.Get(t.ID) == nil {
		return
	}
	n.hit(probeReplaceOwnCopy)
	local := *t
	n.apply(&local)
}

// rewrite writes t again after its replicas did not take it. A create
// whose ID another timer holds (two nodes issued the ID, or a client chose
// it) withdraws the copies it left and starts again under a fresh ID, so a
// collision never overwrites a timer; any other write goes again above the
// newer version a replica reported. Either way it is the same client
// write: it names the first try's version (TimerExtra.FirstTry), by which
// replicas know the tries as one write (sameWrite), and keeps the first
// try's start, by which replicas of an earlier build still tell them: a
// retry dated by the proxy's clock anew, after that clock had stepped,
// was a write of its own to them, whose pops the replica that had popped
// the first try made again (TestRetryKeepsTheStartOfTheFirstTry).
func (n *Node) rewrite(a writeAgain, w *write) {
	t, reply := a.t, w.reply
	now := n.nowMs()
	if t.Version == t.ID {
		n.hit(probeRewriteCollision)
		n.stats.IDCollisions++
		n.log.Warn("timer ID already held by another timer; creating under a fresh ID",
			"timer", n.wireID(t), "instance", n.instance)
		n.withdraw(t, a.targets, now)
		// The other node shares this one's instance number and, having
		// met the collision in the same millisecond, would issue the same
		// fresh ID: a stride of the sequence that differs between nodes
		// breaks the lockstep.
		n.ids.skip(uint64(murmur3.SeedStringSum32(0, n.self)&0xff) + 1)
		n.writeAbove(a, a.spec, reply)
		return
	}
	n.hit(probeWriteRetryNewer)
	n.ids.observe(max(w.newer, t.Version), now)
	if !a.factorLeft || deletes(a.spec) {
		n.writeAbove(a, a.spec, reply)
		return
	}
	// The newer version is a write the factor was not learnt from: a
	// concurrent update that gave one, or made the timer live again. An
	// update without a factor keeps the newest copy's, so it is learnt
	// again, now that the node holds or can read that version; the one
	// learnt before, from a tombstone the newer write replaced, made
	// the timer rf 2 where it was rf 3, and its third replica held
	// nothing after a scale (TestRetryAboveANewerVersionLearnsTheFactorAgain).
	n.hit(probeRetryLearnsFactor)
	spec := a.spec
	spec.ReplicationFactor = 0
	wid := wire.FormatWireID(t.ID, a.oldBloom)
	n.factorThen(t.ID, a.oldBloom, wid, spec, reply, func(spec wire.Timer) { n.writeAbove(a, spec, reply) })
}

// writeAbove writes a's timer again as spec, under a version issued
// now, with the first try's start and version.
func (n *Node) writeAbove(a writeAgain, spec wire.Timer, reply func(Response)) {
	now := n.nowMs()
	version, ok, refused := n.nextID(now)
	if !ok {
		reply(refused)
		return
	}
	id, first := a.t.ID, a.t.firstTry()
	if a.t.Version == a.t.ID {
		id, first = version, 0 // a create under a fresh ID: another timer's ID and write
	}
	n.write(id, version, spec, a.oldBloom, now, a.t.Start, reply, a.tries+1, first, a.factorLeft)
}

// withdraw sends targets the tombstone of a create that collided. It
// buries only the same definition (see collides): where the other timer
// is held, it is refused. A copy it fails to reach would pop under the old
// ID for good, so each peer is sent it again until it answers, under
// withdrawRetry.
func (n *Node) withdraw(t *Timer, targets []string, now int64) {
	tomb := *t
	tomb.entomb()
	for _, peer := range targets {
		if peer == n.self {
			local := tomb
			n.apply(&local)
			continue
		}
		n.withdrawFrom(peer, &tomb, 1)
	}
}

// withdrawRetry is how often a withdrawal is sent to one peer that does
// not take it, and after what waits: five tries in all, the waits
// doubling from about half a second.
var withdrawRetry = retryPolicy{attempts: 5, base: 500 * time.Millisecond, max: 4 * time.Second}

// withdrawFrom sends peer tomb, the withdrawal of a create that
// collided, and again under withdrawRetry while peer neither takes it
// nor refuses it for holding the other timer (409).
func (n *Node) withdrawFrom(peer string, tomb *Timer, attempt int) {
	n.replicate(peer, tomb, nil, n.nowMs(), func(ok bool, resp Response) {
		if ok || resp.Status == 409 {
			return
		}
		if wait, again := withdrawRetry.again(attempt, &n.rand); again {
			n.clock.AfterFunc(wait, func() {
				n.hit(probeWithdrawAgain)
				n.withdrawFrom(peer, tomb, attempt+1)
			})
		}
	})
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
	var bad *wire.BadRequestError
	if errors.As(err, &bad) {
		return badRequest(bad.Reason)
	}
	return unavailable(err.Error())
}

// replicate sends t to peer with the internal PUT; done, if not nil,
// receives whether the peer applied it. body, if not nil, is t encoded.
func (n *Node) replicate(peer string, t *Timer, body []byte, now int64, done func(ok bool, resp Response)) {
	n.stats.ReplicationsSent++
	if body == nil {
		if view := n.ring.ViewID(); t.ViewID() != view {
			// Held records are placed under this node's view
			// (place.go); the message says so.
			c := *t
			c.setViewID(view)
			t = &c
		}
		body = EncodeReplication(t, now)
	}
	req := n.internalPut(peer, t.ID, n.ring.Bloom(t.Placement().Replicas), body)
	n.send(req, n.cfg.ReplicationTimeout, func(resp Response, err error) {
		ok := n.countReplication(resp, err)
		if n.logsTimers() {
			n.logTimer("replicated", t, "peer", peer, "status", resp.Status, "applied", ok)
		}
		n.startAnswered(t, resp)
		n.poppedAnswered(t, resp)
		switch {
		case keptAway(t, ok, resp):
			// The peer took the message but holds no live copy: its
			// view places the timer elsewhere (a scale it has not
			// reloaded for yet), so it kept the record as moved away.
			// It may lack the definition until it answers again, and a
			// resync page it asks for under this view offers it the
			// record even though this node placed it there
			// (resyncPage; scenarios/README.md N47).
			n.hit(probeLackingNotHeld)
			n.markLacking(t, peer, true)
		case ok:
			n.markLacking(t, peer, false)
			n.markHeard(t, peer)
		case resp.Status != 409:
			// Unanswered, or refused (dated outside the peer's window,
			// shed, full): the peer may hold an older definition
			// still, as one that never answered may (fresh seed
			// 9546075, scenarios/README.md N73). A 409 says what it
			// holds instead.
			n.tombstoneUnanswered(t, peer)
		}
		if done != nil {
			done(ok, resp)
		}
	})
}

// tellLacking passes on what a live write found once every target
// answered: the replicas that may lack it (write.lacking) are marked on
// this node's copy, if it is one, and the replicas that took it are sent
// the record again with those marked (reliability.lacking), so that none
// of them leaves a pop to a replica that may not hold the timer
// (handOnAfter). A proxy that is no replica has no pop to make: without
// the word, a replica that took its write shed each pop for the next
// one, which had never taken it (scenarios/README.md N29).
func (n *Node) tellLacking(w *write) {
	t := &w.rec
	if t.State == Tombstone && w.lacking != 0 {
		n.markTombstoneLacking(t, w.lacking)
	}
	if t.State != Live && t.State != Tombstone || w.lacking == 0 {
		return
	}
	replicas := t.Placement().Replicas
	for i, peer := range replicas {
		if t.State == Live && w.lacking&(1<<i) != 0 {
			n.markLacking(t, peer, true)
		}
	}
	if w.vouched == 0 {
		return
	}
	n.hitIf(t.State == Live, probeLackingTold)
	n.hitIf(t.State == Tombstone, probeLackingDeleteTold)
	told := *t
	told.setLacking(w.lacking)
	now := n.nowMs()
	for i, peer := range replicas {
		if w.vouched&(1<<i) != 0 {
			n.replicate(peer, &told, nil, now, nil)
		}
	}
}

// markTombstoneLacking marks, on the tombstone this node holds of a delete
// it wrote (t), the replicas the delete's replication did not reach
// (lacking, by position in t's placement). A repair round pushes the
// tombstone to each of them whatever the digests say (repairLacking), and
// it is kept past its life until their answer clears the mark
// (lackingTombstone): a replica that missed the delete may hold the timer
// live under a smaller factor than the delete's (a delete by a bare ID
// goes to every member), and then its record places the timer on no node
// that took the delete, so neither its pop notices nor a round's digests
// (each side's of the records it places on both) ever meet the tombstone
// (scenarios/README.md N43).
func (n *Node) markTombstoneLacking(t *Timer, lacking uint32) {
	held := n.store.Get(t.ID)
	if held == nil || held.Version != t.Version || held.State != Tombstone {
		return
	}
	m := held.lacking()
	for i, peer := range t.Placement().Replicas {
		if lacking&(1<<i) == 0 || peer == n.self {
			continue
		}
		if j := slices.Index(held.Placement().Replicas, peer); j >= 0 && j < 32 {
			m |= 1 << j
		}
	}
	if m == held.lacking() {
		return
	}
	n.hit(probeLackingDeleteMarked)
	held.setLacking(m)
	n.changedInPlace(held) // kept on disk with the record
}

// tombstoneUnanswered notes, on the tombstone this node holds of t's
// timer at t's version or a newer one, that replica peer may lack it: a
// replication of t to peer got no answer (lost, or peer down), and
// nothing this node knows says peer holds that tombstone. The tombstone
// is then kept past its life while the mark stands (lackingTombstone),
// and repair rounds push it to peer until its answer clears the mark
// (repairLacking). Whatever sent t (a write, a repair round's push, a
// notice, a hand-off), and whenever the tombstone replaced it: a
// replica's update that went unanswered while a delete buried it there
// left the other replica, which never took either, holding the older
// definition, and the tombstone, knowing nothing of it, lived only its
// own life; the repair round that would have pushed it there lost its
// push, the tombstone expired, and the next round brought the deleted
// definition back (scenarios/README.md N57,
// TestUnansweredReplicationKeepsTheTombstoneForItsPeer).
func (n *Node) tombstoneUnanswered(t *Timer, peer string) {
	held := n.store.Get(t.ID)
	if held == nil || held.State != Tombstone || held.Version < t.Version || peer == n.self {
		return
	}
	i := slices.Index(held.Placement().Replicas, peer)
	if i < 0 || i >= 32 || held.lacking()&(1<<i) != 0 {
		return
	}
	n.hit(probeTombstoneUnanswered)
	held.setLacking(held.lacking() | 1<<i)
	n.changedInPlace(held) // kept on disk with the record
}

// markLacking notes whether replica peer may lack t's definition, which
// this node holds live (TimerExtra.Lacking): a write's replication to it
// went unanswered (lacking), or it took a message of the definition,
// which clears the mark on the definition's tombstone too.
func (n *Node) markLacking(t *Timer, peer string, lacking bool) {
	held := n.markReplica(t, peer, lacking, true, func(e *TimerExtra) *uint32 { return &e.Lacking })
	if held == nil {
		return
	}
	n.hitIf(lacking, probeLackingMarked)
	n.hitIf(!lacking, probeLackingCleared)
	n.changedInPlace(held) // kept on disk with the record
}

// markHeard notes that replica peer took a message of t's definition,
// on the record this node holds of it, live or its tombstone
// (Timer.heard): a live record's pops wait for no replica heard from
// (handOnAfter), and a tombstone's marks of a replica heard from are not
// learnt again (holdsTombstone).
func (n *Node) markHeard(t *Timer, peer string) {
	held := n.store.Get(t.ID)
	if held == nil || held.Version != t.Version || held.State == Moved {
		return
	}
	if held.markHeardAt(slices.Index(held.Placement().Replicas, peer)) {
		n.hitIf(held.State == Live, probeHolderHeard)
	}
}

// startAnswered takes the earlier start of t's definition that a peer
// answered a replication with (see earliestStart), whatever the message:
// a pop notice, a write, or a resync's push or rebalancing tombstone.
// The peer may hold the definition from before this node got it late,
// and when it is an old replica the resync leaves behind, its answer is
// the last chance to hand the start on
// (TestScaleKeepsTheEarliestStartOfAnOldReplicaLeftBehind). The answer
// is of t's definition, so it is taken only while the held record is of
// that one: twins sharing an instance number may have given two timers
// one ID and version, and the held one may since have become the other
// (TestEarlierStartIsTakenOnlyForTheSameDefinition: an rf 1 timer took
// its twin's start and popped 233 ms early).
func (n *Node) startAnswered(t *Timer, resp Response) {
	delta, err := strconv.ParseInt(resp.Header.Get(HeaderStartDelta), 10, 64)
	if err != nil {
		return // most answers carry no start: no lookup for them
	}
	if held := n.store.Get(t.ID); held != nil && held.Version == t.Version && held.def == t.def {
		n.hit(probeStartAnswered)
		n.earliestStart(held, &Timer{Start: n.startMs() + delta})
	}
}

// countReplication counts the outcome of an internal PUT: no answer, or
// an answer other than 2xx. It reports whether the peer applied it.
func (n *Node) countReplication(resp Response, err error) bool {
	switch {
	case err != nil:
		n.stats.ReplicationsFailed++
	case resp.Status/100 != 2:
		n.stats.ReplicationsRefused++
	default:
		return true
	}
	n.repairNeeded()
	return false
}

// maxPlacements bounds the interned placements. A cluster of n nodes has
// at most n!/(n-rf)! ordered lists per rf, few in practice, but lists also
// arrive from peers (a resized cluster, another site): once the bound is
// reached the cache starts over, and the lists in use are interned again
// as they are met. Interning saves memory; it never decides anything.
const maxPlacements = 4096

// placement interns a replica and site list. The key is built on the
// stack, so that finding a list already interned, as every write and
// replication does, allocates nothing.
func (n *Node) placement(replicas, sites []string) *Placement {
	var buf [256]byte
	key := appendJoined(append(appendJoined(buf[:0], replicas), '|'), sites)
	if p, ok := n.placements[string(key)]; ok {
		return p
	}
	if len(n.placements) >= maxPlacements {
		clear(n.placements)
	}
	p := &Placement{Replicas: slices.Clone(replicas), Sites: slices.Clone(sites)}
	n.placements[string(key)] = p
	return p
}

// appendJoined appends list to b, its elements separated by commas, as
// strings.Join would join them.
func appendJoined(b []byte, list []string) []byte {
	for i, s := range list {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, s...)
	}
	return b
}
