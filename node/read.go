package node

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// A read of one timer (GET /timers/<id>) is an addition to the original
// API: any node asks every node that may hold the timer for its copy and
// answers with the most advanced definition, its progress, and what each
// replica holds. The nodes asked are the members the ID's bloom filter
// names, the timer's replicas under today's view, and the replicas this
// node's own copy lists: after a scale, a timer may sit on either.
//
// A replica answers the internal read (the same path with readQuery,
// signed like every internal request) with its record as a replication
// body, the form every other message between nodes has, or 404 when it
// holds nothing. The read changes nothing anywhere: a stale copy it finds
// is reported, not repaired.

// readQuery marks the internal read of one replica's copy.
const readQuery = "replica=true"

// headerMoved marks an internal read's answer whose record is Moved,
// which the replication body cannot tell from a tombstone.
const headerMoved = "X-Chronos-Moved"

// replicaCopy is what one node answered to a read.
type replicaCopy struct {
	node  string
	state wire.ReplicaState
	t     *Timer // nil unless live or tombstone
}

// get serves GET /timers/<id>: the client read, or a peer's internal read
// of this node's copy.
func (n *Node) get(wid string, req Request, reply func(Response)) {
	id, bloom, err := wire.ParseWireID(wid)
	if err != nil {
		reply(badRequest(errBadWireID))
		return
	}
	_, query, _ := strings.Cut(req.URL, "?")
	switch query {
	case readQuery:
		if n.refuseInternal(req, reply) {
			return
		}
		n.readLocal(id, reply)
	case "":
		n.readAll(id, bloom, wid, reply)
	default:
		reply(badRequest("GET /timers/<id> takes no query parameters"))
	}
}

// readLocal answers a peer's read with this node's record of id.
func (n *Node) readLocal(id uint64, reply func(Response)) {
	t := n.store.Get(id)
	if t == nil {
		reply(text(404, "no record of the timer"))
		return
	}
	resp := Response{
		Status: 200,
		Header: Header{HeaderContentType: "application/json"},
		Body:   EncodeReplication(t, n.nowMs()),
	}
	if t.State == Moved {
		resp.Header[headerMoved] = "true"
	}
	reply(resp)
}

// readAll asks every node that may hold id and answers the client once
// all have answered or timed out.
func (n *Node) readAll(id, bloom uint64, wid string, reply func(Response)) {
	held := n.store.Get(id)
	nodes := n.named(bloom)
	rf := n.inferRF(id, bloom)
	for _, r := range n.ring.Replicas(id, rf) {
		if !slices.Contains(nodes, r) {
			nodes = append(nodes, r)
		}
	}
	if held != nil {
		for _, r := range held.Placement().Replicas {
			if !slices.Contains(nodes, r) {
				nodes = append(nodes, r)
			}
		}
	}
	n.askFollowingMoves(id, wid, nodes, func(copies []replicaCopy) {
		reply(n.readAnswer(wid, copies))
	})
}

// askFollowingMoves asks nodes for their records of id, as askCopies
// does, then once more the nodes a moved copy among the answers names as
// the timer's replicas, if it left any out: a moved copy says only that
// the timer lives elsewhere, and where. A node whose view is older than
// the copy's (not yet reloaded for a scale) names only the replicas of
// its own view, and a moved copy is all they hold: its read found nothing
// live, and an update without a factor took the default
// (scenarios/README.md U24, TestUpdateWithoutAFactorFollowsAMovedCopy).
// It follows one step only: the nodes named answer with what they hold,
// and a copy moved again since is as far as the read reaches.
func (n *Node) askFollowingMoves(id uint64, wid string, nodes []string, done func([]replicaCopy)) {
	n.askCopies(id, wid, nodes, func(copies []replicaCopy) {
		var more []string
		for _, c := range copies {
			if c.state != wire.StateMoved {
				continue
			}
			for _, r := range c.t.Placement().Replicas {
				if !slices.Contains(nodes, r) && !slices.Contains(more, r) {
					more = append(more, r)
				}
			}
		}
		if len(more) == 0 {
			done(copies)
			return
		}
		n.hit(probeReadFollowsMoved)
		n.askCopies(id, wid, more, func(further []replicaCopy) {
			done(append(copies, further...))
		})
	})
}

// askCopies asks each of nodes for its record of id (this node answers
// for itself without a message) and calls done with every answer, in the
// order of nodes, once all have answered or timed out.
func (n *Node) askCopies(id uint64, wid string, nodes []string, done func([]replicaCopy)) {
	copies := make([]replicaCopy, len(nodes))
	pending := len(nodes)
	answered := func(i int, c replicaCopy) {
		copies[i] = c
		if pending--; pending == 0 {
			done(copies)
		}
	}
	for i, peer := range nodes {
		if peer == n.self {
			answered(i, localCopy(peer, n.store.Get(id)))
			continue
		}
		req := Request{
			Method:  "GET",
			URL:     "http://" + peer + "/timers/" + wid + "?" + readQuery,
			Header:  Header{},
			MaxWait: ReplicaSkew,
		}
		n.sign(&req)
		n.send(req, n.cfg.ReplicationTimeout, func(resp Response, err error) {
			answered(i, n.peerCopy(id, peer, resp, err))
		})
	}
}

// localCopy describes this node's own record.
func localCopy(self string, t *Timer) replicaCopy {
	switch {
	case t == nil:
		return replicaCopy{node: self, state: wire.StateAbsent}
	case t.State == Live:
		return replicaCopy{node: self, state: wire.StateLive, t: t}
	case t.State == Moved:
		return replicaCopy{node: self, state: wire.StateMoved, t: t}
	default:
		return replicaCopy{node: self, state: wire.StateTombstone, t: t}
	}
}

// peerCopy reads a peer's answer to the internal read.
func (n *Node) peerCopy(id uint64, peer string, resp Response, err error) replicaCopy {
	switch {
	case err == nil && resp.Status == 404:
		return replicaCopy{node: peer, state: wire.StateAbsent}
	case err != nil || resp.Status != 200:
		return replicaCopy{node: peer, state: wire.StateUnreachable}
	}
	spec, r, perr := wire.Parse(resp.Body)
	if perr != nil || r == nil {
		return replicaCopy{node: peer, state: wire.StateUnreachable}
	}
	// The record is rebuilt on this node's clock, as a replica would
	// take it; it is not kept.
	t := newTimer(id, r.Version, spec, n.startOf(r), r.Seq, &Placement{Replicas: r.Replicas, Sites: r.Sites}, r.ViewID, nil)
	switch {
	case resp.Header.Get(headerMoved) != "":
		return replicaCopy{node: peer, state: wire.StateMoved, t: t}
	case t.State == Live:
		return replicaCopy{node: peer, state: wire.StateLive, t: t}
	}
	return replicaCopy{node: peer, state: wire.StateTombstone, t: t}
}

// readAnswer is the client's answer: 200 with the most advanced live
// definition, 404 when the most advanced record is a tombstone or no node
// holds one, 503 when no node answered. A Moved record says the timer
// lives on other nodes, so it is listed but never chosen.
func (n *Node) readAnswer(wid string, copies []replicaCopy) Response {
	best, answered := newestCopy(copies)
	switch {
	case !answered:
		return unavailable("no node that may hold the timer answered")
	case best == nil || best.State != Live:
		r := text(404, "no such timer")
		r.Header[wire.HeaderReason] = "no such timer"
		return r
	}
	b := make([]byte, 0, 256+len(best.cb))
	b = append(b, `{"id":`...)
	b = wire.AppendString(b, wid)
	b = append(b, `,"timer":`...)
	b = append(b, wire.Encode(definition(best))...)
	b = appendProgress(b, best)
	b = append(b, `,"replicas":[`...)
	for i, c := range copies {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"node":`...)
		b = wire.AppendString(b, c.node)
		b = append(b, `,"state":"`...)
		b = append(b, c.state...)
		b = append(b, '"')
		if c.t != nil {
			b = append(b, `,"version":"`...)
			b = strconv.AppendUint(b, c.t.Version, 10)
			b = append(b, '"')
			if c.state == wire.StateLive {
				b = appendProgress(b, c.t)
			}
		}
		b = append(b, '}')
	}
	b = append(b, "]}"...)
	return Response{Status: 200, Header: Header{HeaderContentType: "application/json"}, Body: b}
}

// newestCopy returns the most advanced record among copies, Moved ones
// aside (the timer lives elsewhere), and whether any node answered.
func newestCopy(copies []replicaCopy) (newest *Timer, answered bool) {
	for _, c := range copies {
		answered = answered || c.state != wire.StateUnreachable
		if c.t != nil && c.state != wire.StateMoved && Supersedes(newest, c.t) {
			newest = c.t
		}
	}
	return newest, answered
}

// appendProgress appends a live record's sequence-number (pops made) and,
// when a pop remains, next-pop: that pop's due time before any replica's
// skew, in RFC 3339 UTC to the millisecond.
func appendProgress(b []byte, t *Timer) []byte {
	b = append(b, `,"sequence-number":`...)
	b = strconv.AppendUint(b, uint64(t.Seq), 10)
	if at, ok := t.NextPopAt(); ok {
		b = append(b, `,"next-pop":"`...)
		b = time.UnixMilli(at).UTC().AppendFormat(b, "2006-01-02T15:04:05.000Z")
		b = append(b, '"')
	}
	return b
}
