package node

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/chronos-timer/chronos/wire"
)

// The serving side of the resync API (docs/design.md 4.8): the pages a
// node answers to GET /timers, which offer a requester the timers it will
// hold under the cluster view it names, and the references a leaving
// node takes at DELETE /timers/references. resync.go is the requesting
// side.

// Query parameters and headers of the resync API.
const (
	paramNodeForReplicas = "node-for-replicas"
	paramClusterViewID   = "cluster-view-id"
	paramTimeFrom        = "time-from"
	// paramCurrentView asks for the timers already placed under the
	// requested view as well: a node that restarted without its store
	// repopulates with it. It is this implementation's extension of
	// api.md; the original had no way to refill a restarted node.
	paramCurrentView = "include-current-view"
	// HeaderNextTimeFrom, on a 206 answer to GET /timers, is the time-from
	// (microseconds) of the next page. api.md leaves the requester to
	// work it out from the timers, which start-time-deltas do not allow.
	HeaderNextTimeFrom = "X-Chronos-Next-Time-From"
)

// reference is one entry of a DELETE /timers/references body. Version,
// this implementation's extension (absent from the original's bodies),
// is the version of the record the requester holds: a leaving node keeps
// a newer one, which its hand-off brings the new replicas instead.
type reference struct {
	ID           string `json:"ID"`
	ReplicaIndex int    `json:"ReplicaIndex"`
	Version      uint64 `json:"Version,omitempty,string"`
}

type referencesBody struct {
	IDs []reference `json:"IDs"`
}

// resyncQuery is a parsed GET /timers request.
type resyncQuery struct {
	requester string
	view      uint64
	fromMs    int64
	limit     int
	current   bool
}

// parseResyncQuery reads a GET /timers request target and its Range
// header, or returns the reason it is a bad request.
func parseResyncQuery(target, rangeHeader string) (resyncQuery, error) {
	q := resyncQuery{limit: DefaultResyncPage}
	_, rawQuery, _ := strings.Cut(target, "?")
	vals, err := url.ParseQuery(rawQuery)
	if err != nil {
		return q, badf("the query does not parse: %v", err)
	}
	if q.requester = vals.Get(paramNodeForReplicas); q.requester == "" {
		return q, badf("%s is missing", paramNodeForReplicas)
	}
	view := vals.Get(paramClusterViewID)
	if view == "" {
		return q, badf("%s is missing", paramClusterViewID)
	}
	if q.view, err = strconv.ParseUint(view, 10, 64); err != nil {
		return q, badf("%s %q is not an unsigned decimal", paramClusterViewID, view)
	}
	if from := vals.Get(paramTimeFrom); from != "" {
		us, err := strconv.ParseInt(from, 10, 64)
		if err != nil || us < 0 {
			return q, badf("%s %q is not a time in microseconds since the epoch", paramTimeFrom, from)
		}
		q.fromMs = (us + 999) / 1000
	}
	if c := vals.Get(paramCurrentView); c != "" {
		if q.current, err = strconv.ParseBool(c); err != nil {
			return q, badf("%s %q is not true or false", paramCurrentView, c)
		}
	}
	if r := strings.TrimSpace(rangeHeader); r != "" {
		n, err := strconv.Atoi(r)
		if err != nil || n < 1 {
			return q, badf("Range %q is not a positive number of timers", r)
		}
		q.limit = min(n, MaxResyncPage)
	}
	return q, nil
}

// resyncGet serves GET /timers: a page of the timers held here that the
// requester will hold a replica of under the requested view, in due order
// from time-from. Timers already placed under that view are passed over
// (their writer placed them), unless the requester asks for them too
// (paramCurrentView) or the record marks it as may lack the timer (its
// answer said it kept the record as moved away: not reloaded yet). A page holds Range timers, or fewer whose body
// passed maxResyncPageBytes, and then the rest of the timers due in the
// same millisecond, so that the next page's time-from moves strictly on:
// paging can never repeat a page forever.
func (n *Node) resyncGet(req Request, reply func(Response)) {
	if n.refuseInternal(req, reply) {
		return
	}
	reply(n.resyncPage(req))
}

// resyncPage answers a GET /timers already authenticated, or the node's
// own, which never crosses the network.
func (n *Node) resyncPage(req Request) Response {
	q, err := parseResyncQuery(req.URL, req.Header.Get(HeaderRange))
	if err != nil {
		return errorResponse(err)
	}
	if _, member := n.ring.index[q.requester]; !member {
		n.hit(probeResyncNotMember)
		return notFound(fmt.Sprintf("%s %q is not a member of this node's cluster", paramNodeForReplicas, q.requester))
	}
	if q.view != n.ring.ViewID() {
		n.hit(probeResyncOtherView)
		return badRequest(fmt.Sprintf("%s %d is not this node's view of the cluster, %d: reload both to the same membership",
			paramClusterViewID, q.view, n.ring.ViewID()))
	}
	now := n.nowMs()
	if q.current && q.fromMs == 0 && q.requester != n.self {
		n.markRepopulating(q.requester, now)
	}
	// Room for a full page of typical records (about 400 bytes each), so
	// that the body is not copied as it grows.
	body := append(make([]byte, 0, 64+q.limit*512), `{"timers":[`...)
	count, more, last := 0, false, int64(0)
	n.store.AscendFrom(q.fromMs, func(held *Timer) bool {
		if (count >= q.limit || len(body) >= maxResyncPageBytes) && held.due > last {
			n.hit(probeResyncPageFull)
			more = true
			return false
		}
		t := held
		if t.State != Live || n.popsPast(t, now) {
			return true
		}
		// Every record held is placed under this node's view (place.go),
		// which is the requested one.
		i := slices.Index(t.Placement().Replicas, q.requester)
		if i < 0 {
			return true
		}
		if !q.current && (t.ViewID() == q.view || n.placedAlike(t)) {
			// Its writer placed it on the requester already, unless
			// the requester's answer said it holds no live copy
			// (replicate): it was not reloaded for this view yet and
			// kept the record as moved away, which only this page
			// (or a repair round, later) brings back.
			if i >= 32 || t.lacking()&(1<<i) == 0 {
				n.hitIf(t.ViewID() != q.view, probeResyncPlacedAlike)
				return true
			}
			n.hit(probeResyncOffersLacking)
		}
		moved := *t
		moved.setViewID(q.view)
		if count > 0 {
			body = append(body, ',')
		}
		body = appendEntry(body, t.ID, n.oldReplicas(t), &moved, now)
		count++
		last = held.due
		return true
	})
	body = append(body, "]}"...)
	resp := Response{Status: 200, Header: Header{HeaderContentType: "application/json"}, Body: body}
	if more {
		resp.Status = 206
		resp.Header[HeaderContentRange] = strconv.Itoa(count)
		resp.Header[HeaderNextTimeFrom] = strconv.FormatInt((last+1)*1000, 10)
	}
	n.stats.ResyncPagesServed++
	return resp
}

// markRepopulating marks peer as may lack (TimerExtra.Lacking) every
// live record held that names it a replica and has pops to come: it asks
// for the timers placed under the current view too (paramCurrentView),
// which a node does at start-up, so it may hold none of them: restarted
// without its store, or with one that missed what was written while it
// was down. Until it answers a message of a definition, a replica before
// it does not leave that timer's pops to it (handOnAfter): under load
// every replica before a restarted one shed its pop for the next, and the
// pop was left to a node that held nothing (scenarios/README.md N31). It
// marks on the first page only: a later one asks from where the
// requester has got to, and the marks stand until answers clear them.
//
// The tombstones this node keeps for peer (lackedBy: a delete or an
// update it may have missed, while it was down) are pushed to it at once
// (repairLacking), not at the next repair round: a node restarted from
// its disk holds the definitions they replaced, and waits one backup
// skew for word before it pops what fell due while it was down
// (waitForWord). A replica down through a run of updates waited, heard
// nothing in its pages (which carry live records), and popped the first
// definition's six pops, two minutes late, 13 s before the round that
// pushed it the last update's tombstone (fresh seed 5815261,
// scenarios/README.md N81).
func (n *Node) markRepopulating(peer string, now int64) {
	var held, buried []*Timer
	n.store.AscendFrom(0, func(t *Timer) bool {
		switch {
		case t.State == Live && slices.Contains(t.Placement().Replicas, peer) && !n.popsPast(t, now):
			held = append(held, t)
		case lackedBy(t, peer):
			buried = append(buried, t)
		}
		return true
	})
	n.hitIf(len(held) > 0, probeLackingRepopulating)
	for _, t := range held {
		n.markLacking(t, peer, true)
	}
	if len(buried) > 0 {
		n.hit(probeRepopulatingToldTombstones)
		n.repairLacking(peer, buried)
	}
}

// placedAlike reports whether t, a live record held, was placed by its
// writer under the view before this node's latest change of view on the
// replicas it has now, this node among them. Its writer then placed it on
// every replica a page would offer it to, at the rank it has now: taking
// it would change nothing but what repair settles between replicas
// without any change of view, so a page passes it over and a scale costs
// the timers whose placement it changed only (docs/design.md 5).
func (n *Node) placedAlike(t *Timer) bool {
	if n.prevRing == nil || t.ViewID() != n.prevRing.ViewID() || !slices.Contains(t.Placement().Replicas, n.self) {
		return false
	}
	var buf [wire.MaxReplicationFactor]string
	return slices.Equal(n.prevRing.AppendReplicas(buf[:0], t.ID, t.replicationFactor()), t.Placement().Replicas)
}

// oldReplicas is the replica list a page gives for t: where this node
// places it now (placement is derived from the current view, place.go),
// and this node itself when it holds t live without being a replica (its
// copy, to be handed off, is an old replica's).
func (n *Node) oldReplicas(t *Timer) []string {
	if t.State == Live && !slices.Contains(t.Placement().Replicas, n.self) {
		return append(slices.Clip(t.Placement().Replicas), n.self)
	}
	return t.Placement().Replicas
}

// appendEntry appends one page entry (see wire.PageEntry) to b: timer id, its
// old replicas, and t's replication body as of now.
func appendEntry(b []byte, id uint64, old []string, t *Timer, now int64) []byte {
	b = wire.AppendPageEntryHead(b, id, old)
	b = AppendReplication(b, t, now)
	return append(b, '}')
}

// popsPast reports whether every pop of t's definition is past at every
// rank: a replica that took it now could only make them again, late.
func (n *Node) popsPast(t *Timer, now int64) bool {
	return t.Start+(t.RepeatFor()+n.maxSkew(t)).Milliseconds() < now
}

// replicationFactor is the number of replicas t is placed on: the one its
// client asked for, or for a record from a sender that gave none, the
// length of its replica list.
func (t *Timer) replicationFactor() int {
	if t.RF > 0 {
		return int(t.RF)
	}
	return max(len(t.Placement().Replicas), 1)
}

// parseReferences reads a DELETE /timers/references body.
func parseReferences(body []byte) ([]reference, []uint64, error) {
	var b referencesBody
	if err := wire.CheckJSON(body); err != nil && err != wire.ErrNotJSON {
		return nil, nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&b); err != nil {
		return nil, nil, badf("the body is not a references object: %v", err)
	}
	if dec.More() {
		return nil, nil, badf("the body holds more than one JSON value")
	}
	if b.IDs == nil {
		return nil, nil, badf("IDs is missing")
	}
	ids := make([]uint64, len(b.IDs))
	for i, r := range b.IDs {
		id, err := wire.ParseID(r.ID)
		if err != nil {
			return nil, nil, badf("IDs[%d].ID %q is not a timer ID", i, r.ID)
		}
		if r.ReplicaIndex < 0 || r.ReplicaIndex >= wire.MaxReplicationFactor {
			return nil, nil, badf("IDs[%d].ReplicaIndex %d is not in 0..%d", i, r.ReplicaIndex, wire.MaxReplicationFactor-1)
		}
		ids[i] = id
	}
	return b.IDs, ids, nil
}

// references serves DELETE /timers/references: the requester has taken
// the listed timers at the given replica index, and so have the replicas
// ranked after it. An old copy held here (a leaving node's, or the
// informational copy of a rebalancing tombstone) is dropped once the
// primary's reference arrives: every new replica then knows the timer. A
// reference to an index above 0 changes nothing on its own.
func (n *Node) references(req Request, reply func(Response)) {
	if n.refuseInternal(req, reply) {
		return
	}
	refs, ids, err := parseReferences(req.Body)
	if err != nil {
		reply(errorResponse(err))
		return
	}
	for i, r := range refs {
		n.stats.ResyncReferences++
		t := n.store.Get(ids[i])
		if t == nil || r.ReplicaIndex != 0 {
			continue
		}
		if r.Version != 0 && t.Version > r.Version {
			// The new primary took an older version than this node
			// holds (the newer write missed it): dropped, the newer
			// version would be nowhere
			// (TestLeavingNodeKeepsAVersionNewerThanTheReference).
			n.hit(probeReferenceOlder)
			continue
		}
		if t.State == Live && !slices.Contains(t.Placement().Replicas, n.self) {
			n.hit(probeReferenceMoved)
			n.logTimer("resync drop", t, "reason", "the new primary took it")
			n.release(t)
			t.entombAs(Moved)
			n.holdNext(t)
		}
	}
	reply(text(202, "Accepted"))
}
