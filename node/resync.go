package node

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// Active rebalancing (the original resynchronization design; docs/design.md
// 4.8). After the membership changes, each node asks every member, itself
// included, for the timers it will hold under the new cluster view
// (GET /timers), takes those it may, passes them on to the replicas ranked
// after it, sends the rebalancing tombstone to old replicas no longer
// involved, and tells the leaving nodes which timers it dealt with
// (DELETE /timers/references), so that they drop their copies.

// Resync API limits.
const (
	// DefaultResyncPage is how many timers a GET /timers page holds when
	// the request has no Range (api.md: batches of 100).
	DefaultResyncPage = 100
	// MaxResyncPage bounds the Range a requester may ask for.
	MaxResyncPage = 1000
	// maxResyncPageBytes bounds the timers of one page by their bytes as
	// well: a page ends once its body has passed this, at the end of
	// the millisecond, so that a page of large timers stays well within
	// the body a driver reads of an answer (wire.MaxBodyBytes), as a
	// page of the largest Range of typical timers (about 400 bytes
	// each) does.
	maxResyncPageBytes = wire.MaxBodyBytes / 2
	// ResyncPageTimeout bounds one GET /timers round trip.
	ResyncPageTimeout = 5 * time.Second
	// maxResyncSends bounds the attempts of one replication, tombstone or
	// references message a resync sends.
	maxResyncSends = 3
)

// pageRetry is how often a page is asked for before the peer is given up
// on for this resync: the peer may be down, cut off, or not yet reloaded
// to the same membership (it answers 400 or 404 until it is). The waits
// double from 1 s up to 30 s, about two minutes in all, each drawn with
// jitter, so that the members of a cluster a reload reached at once do
// not all ask a slow peer again at the same moment.
var pageRetry = retryPolicy{attempts: 8, base: time.Second, max: 30 * time.Second}

// ResyncStatus is the progress of the node's latest resync, for operators
// (a leaving node may be stopped once every staying node's resync has
// completed) and for the simulator.
type ResyncStatus struct {
	// Running is set while a resync is under way.
	Running bool
	// Runs counts the resyncs started; Completed those that reached every
	// peer, Incomplete those that gave up on at least one.
	Runs, Completed, Incomplete uint64
	// ViewID is the cluster view the latest resync rebalanced to.
	ViewID uint64
	// Peers is how many members the latest resync asks (itself
	// included), PeersDone how many have answered every page, and Failed
	// the ones it gave up on.
	Peers, PeersDone int
	Failed           []string
	// Received counts the timers the latest resync was offered; Taken
	// those it took (each old replica offers a timer, and each offer is
	// taken: their old replica lists may differ), Replicated and
	// Tombstoned the messages it sent on, SendFailures those that failed
	// every attempt.
	Received, Taken, Replicated, Tombstoned, SendFailures uint64
	// Refused counts the timers this node was offered as one of their
	// replicas and refused at a limit (design.md 4.17). Their old
	// replicas keep them, and a leaving one must not be stopped: the
	// resync is incomplete, and Failed names this node.
	Refused uint64
	// Started and Finished are when the latest resync started and ended
	// (Finished is zero while it runs).
	Started, Finished time.Time
}

// resyncRun is one resync under way.
type resyncRun struct {
	// handedOff is set once the run's hand-off is under way (finishResync).
	handedOff  bool
	gen        uint64
	view       uint64
	repopulate bool
	pending    int // peers not finished
	status     *ResyncStatus
	// passed holds, by timer ID, the version of each record the run
	// passed on to the replicas ranked after this node and whose sends
	// did not fail: another page offering the same record sends it no
	// more (takePage). It lasts as long as the run.
	passed map[uint64]uint64
}

// resyncPagesAhead bounds the pages of one peer a resync holds taken
// whose messages are still unanswered: the next page is asked for as
// soon as one is taken, not once its messages are answered, so that a
// join's pages stream from every peer while the replications, the
// barrier and the words to the leaving nodes of the pages before are
// under way (docs/design.md 5). A page's own barrier still waits for its
// own messages (referDealt); the bound keeps what is in flight for one
// peer to a few pages' worth.
const resyncPagesAhead = 4

// peerSync is one peer's paging in a resync.
type peerSync struct {
	run      *resyncRun
	addr     string
	fromUs   int64
	attempts int
	// open counts the pages taken whose messages and barrier are not
	// done yet (pageSync); waiting is set when the next page is due but
	// open is at resyncPagesAhead, ended once the peer's last page was
	// answered (or the peer given up on: ok says which), which ends its
	// paging when open reaches 0.
	open    int
	waiting bool
	ended   bool
	ok      bool
	next    func()
	// pages and received count the pages this peer answered and the
	// timers they offered, for the log line that ends its paging.
	pages, received int
}

// pageSync is one page of a peer's that takePage took, until its
// messages are answered and its barrier done.
type pageSync struct {
	p *peerSync
	// sends counts the messages of the page still unanswered; taking is
	// set while takePage (or the barrier) sends them, and after is what
	// follows once they are answered.
	sends  int
	taking bool
	after  func()
	// drops are the rebalancing tombstones of the page, sent once what
	// the page made this node take is durable (referDealt).
	drops []drop
}

// ResyncStatus returns the progress of the latest resync.
func (n *Node) ResyncStatus() ResyncStatus {
	s := n.resyncStatus
	s.Failed = slices.Clone(s.Failed)
	return s
}

// Resync starts the active rebalancing to the current membership, ending
// any resync still running. With repopulate, it also asks for the timers
// already placed under the current view: a node that restarted without
// its store gets back what it holds. A node outside the ring (leaving)
// has nothing to ask for. A resync always ends: every peer's pages move
// strictly on, and a peer that does not answer is asked a bounded number
// of times. A resync that ends one still repopulating repopulates too: a
// node that restarts and is then reloaded must still get its timers back.
func (n *Node) Resync(repopulate bool) {
	if n.resyncStatus.Running && n.resyncRepopulate {
		n.hit(probeResyncKeepsRepop)
		repopulate = true
	}
	n.resyncRepopulate = repopulate
	n.resyncGen++
	run := &resyncRun{gen: n.resyncGen, view: n.ring.ViewID(), repopulate: repopulate, status: &n.resyncStatus}
	runs, completed, incomplete := n.resyncStatus.Runs+1, n.resyncStatus.Completed, n.resyncStatus.Incomplete
	n.resyncStatus = ResyncStatus{Running: true, Runs: runs, Completed: completed, Incomplete: incomplete,
		ViewID: run.view, Started: n.clock.Now()}
	if _, member := n.ring.index[n.self]; !member {
		n.hit(probeResyncLeaving)
		n.log.Info("resync: this node is leaving; nothing to fetch")
		n.finishResync(run)
		return
	}
	m := n.cfg.Cluster
	peers := append(append(append([]string{}, m.Nodes...), m.Joining...), m.Leaving...)
	n.resyncStatus.Peers = len(peers)
	run.pending = len(peers)
	n.log.Info("resync started", "view", run.view, "peers", len(peers), "repopulate", repopulate)
	for _, addr := range peers {
		p := &peerSync{run: run, addr: addr}
		p.next = func() { n.fetchPage(p) }
		if addr == n.self {
			// The node's own pages are served in place, each after the
			// first on a fresh turn of the clock so that paging never
			// recurses.
			p.next = func() { n.clock.AfterFunc(0, func() { n.fetchPage(p) }) }
		}
		n.fetchPage(p)
	}
}

// current reports whether run is the resync under way.
func (n *Node) current(run *resyncRun) bool { return run.gen == n.resyncGen && run.status.Running }

// fetchPage asks p's peer for its next page.
func (n *Node) fetchPage(p *peerSync) {
	if !n.current(p.run) {
		return
	}
	target := fmt.Sprintf("/timers?%s=%s&%s=%d", paramNodeForReplicas, url.QueryEscape(n.self), paramClusterViewID, p.run.view)
	if p.fromUs > 0 {
		target += fmt.Sprintf("&%s=%d", paramTimeFrom, p.fromUs)
	}
	if p.run.repopulate {
		target += "&" + paramCurrentView + "=true"
	}
	req := Request{Method: "GET", URL: target, Header: Header{HeaderRange: strconv.Itoa(cmp.Or(n.cfg.ResyncPage, DefaultResyncPage))}, MaxWait: ReplicaSkew}
	if p.addr == n.self {
		n.pageAnswered(p, n.resyncPage(req), nil)
		return
	}
	req.URL = "http://" + p.addr + target
	n.sign(&req)
	n.send(req, ResyncPageTimeout, func(resp Response, err error) { n.pageAnswered(p, resp, err) })
}

// pageAnswered takes a page p's peer answered, or asks again later.
func (n *Node) pageAnswered(p *peerSync, resp Response, err error) {
	if !n.current(p.run) {
		n.hit(probeResyncSuperseded)
		return
	}
	var entries []wire.PageEntry
	if err == nil && (resp.Status == 200 || resp.Status == 206) {
		entries, err = wire.ParsePage(resp.Body)
	}
	next := int64(0)
	if err == nil && resp.Status == 206 {
		v, perr := strconv.ParseInt(resp.Header.Get(HeaderNextTimeFrom), 10, 64)
		if perr != nil || v <= p.fromUs {
			err = fmt.Errorf("206 without a later %s", HeaderNextTimeFrom)
		}
		next = v
	}
	if err == nil && resp.Status != 200 && resp.Status != 206 {
		err = fmt.Errorf("status %d: %s", resp.Status, reasonOf(resp))
	}
	if err != nil {
		n.retryPage(p, err)
		return
	}
	p.attempts = 0
	p.pages++
	p.received += len(entries)
	if resp.Status == 206 {
		p.fromUs, p.waiting = next, true
	} else {
		p.ended, p.ok = true, true
	}
	pg := &pageSync{p: p}
	p.open++
	dealt := n.takePage(pg, entries)
	pg.after = func() { n.referDealt(pg, dealt, func() { n.pageSettled(p) }) }
	if pg.sends == 0 {
		n.pageDone(pg)
	}
	n.fetchAhead(p)
}

// fetchAhead asks p's peer for its next page when one is due and fewer
// than resyncPagesAhead of its pages are open.
func (n *Node) fetchAhead(p *peerSync) {
	if p.waiting && p.open < resyncPagesAhead && n.current(p.run) {
		n.hitIf(p.open > 0, probeResyncPageAhead)
		p.waiting = false
		p.next()
	}
}

// pageSettled counts one of p's pages done: its messages answered and its
// barrier passed. The last one of a peer whose paging ended ends it.
func (n *Node) pageSettled(p *peerSync) {
	p.open--
	if p.ended && p.open == 0 {
		n.peerDone(p, p.ok)
		return
	}
	n.fetchAhead(p)
}

// sendDone counts one of pg's messages answered; the last one moves pg
// on. A message may be answered before takePage returns (a driver that
// fails a send at once): the page then moves on from pageAnswered.
func (n *Node) sendDone(pg *pageSync) {
	pg.sends--
	if pg.sends == 0 && !pg.taking {
		n.pageDone(pg)
	}
}

// pageDone moves pg on once it is taken and its messages answered.
func (n *Node) pageDone(pg *pageSync) {
	after := pg.after
	pg.after = nil
	if after != nil && n.current(pg.p.run) {
		after()
	}
}

// retryPage asks p's peer again after a growing wait, or gives up on it.
func (n *Node) retryPage(p *peerSync, err error) {
	p.attempts++
	n.hit(probeResyncPageRetry)
	wait, ok := pageRetry.again(p.attempts, &n.rand)
	if !ok {
		n.hit(probeResyncGiveUp)
		n.log.Warn("resync: giving up on a peer", "peer", p.addr, "attempts", p.attempts,
			"pages", p.pages, "timers", p.received, "err", err)
		// Its pages taken still end first: the run ends once every
		// message of its pages is answered, as it did when the peer
		// answered every page.
		p.ended, p.ok = true, false
		if p.open == 0 {
			n.peerDone(p, false)
		}
		return
	}
	n.log.Info("resync: page failed; asking again", "peer", p.addr, "in", wait, "err", err)
	n.clock.AfterFunc(wait, func() { n.fetchPage(p) })
}

// peerDone ends p's paging; the last peer ends the run.
func (n *Node) peerDone(p *peerSync, ok bool) {
	if ok {
		n.resyncStatus.PeersDone++
		n.log.Info("resync: peer done", "peer", p.addr, "pages", p.pages, "timers", p.received,
			"pending", p.run.pending-1)
	} else {
		n.resyncStatus.Failed = append(n.resyncStatus.Failed, p.addr)
	}
	if p.run.pending--; p.run.pending == 0 {
		n.finishResync(p.run)
	}
}

func (n *Node) finishResync(run *resyncRun) {
	// A resync ends with this node's records where they belong: the
	// live copies a reload left it that it no longer replicates are
	// handed to their replicas first (handOff), so that an operator who
	// waits for every resync to complete finds no old copy popping.
	if !run.handedOff {
		run.handedOff = true
		n.handOff(func(all bool) {
			if !all {
				n.resyncStatus.SendFailures++
				n.resyncStatus.Failed = append(n.resyncStatus.Failed, n.self)
			}
			if n.current(run) {
				n.finishResync(run)
			}
		})
		return
	}
	s := &n.resyncStatus
	s.Running = false
	s.Finished = n.clock.Now()
	state, level := "completed", slog.LevelInfo
	if s.Refused > 0 && !slices.Contains(s.Failed, n.self) {
		// As a failed hand-off does, the node names itself: what kept
		// the resync from its end is here (a limit), not at a peer.
		s.Failed = append(s.Failed, n.self)
	}
	if len(s.Failed) == 0 {
		s.Completed++
	} else {
		s.Incomplete++
		state, level = "incomplete", slog.LevelWarn
	}
	n.log.Log(context.Background(), level, "resync finished", "state", state, "view", run.view,
		"peers", s.Peers, "peers_done", s.PeersDone, "failed_peers", s.Failed,
		"received", s.Received, "taken", s.Taken, "replicated", s.Replicated,
		"tombstoned", s.Tombstoned, "send_failures", s.SendFailures, "refused", s.Refused, "took", s.Finished.Sub(s.Started))
}

// takePage applies the rules of the original resynchronization design to
// each timer of a page:
//
//   - this node takes the timer (the original took it only when the
//     node moved down the replica list or stayed; a page of this
//     implementation lists where its server places the timer now, so the
//     requester always stays at its rank: see rebalance);
//   - it replicates the timer to the new replicas ranked after it whose
//     old rank was not below its new one (not involved counts as high);
//   - it sends the rebalancing tombstone (the record under the new view,
//     which a node outside its replicas keeps as a tombstone) to old
//     replicas ranked at or after its new rank that are no longer involved,
//     leaving nodes excepted;
//   - it tells the leaving nodes which timers it dealt with, and at which
//     rank (referDealt, once the page's messages are answered).
//
// It returns the timers it dealt with.
func (n *Node) takePage(pg *pageSync, entries []wire.PageEntry) []*dealtTimer {
	p := pg.p
	pg.taking = true
	defer func() { pg.taking = false }()
	s := p.run.status
	var dealt []*dealtTimer
	for _, e := range entries {
		s.Received++
		t, old, ok := n.resyncRecord(e)
		if !ok {
			continue
		}
		d := &dealtTimer{reference: reference{ID: wire.FormatID(t.ID)}}
		offered, offeredLive := t.Version, t.State == Live
		var sent, again bool
		var sentVersion uint64
		rank, took, passed := n.rebalance(t, old, func(peer string, held *Timer, replicate bool) {
			if !replicate && peer == p.addr && offeredLive && held.Version == offered {
				// The page's server holds this definition live under
				// this view: the record would arrive there as the same
				// definition placed elsewhere, which it keeps live
				// (merge's rule 1: no tombstone), and its own hand-off
				// ends that copy once the added replicas hold it
				// (handOff). A page of a newer record than the one
				// served still sends it (spreadNewer).
				return
			}
			if !replicate {
				// A rebalancing tombstone waits for the page's
				// barrier (referDealt).
				s.Tombstoned++
				pg.drops = append(pg.drops, drop{peer: peer, id: held.ID})
				return
			}
			if v, ok := p.run.passed[held.ID]; ok && v == held.Version {
				// An earlier page of this run passed this record on
				// to the same replicas (a take's are every replica
				// ranked after this node under the run's view), and
				// its sends did not fail: each page of an old replica
				// offers it, and each sent it again. The earlier
				// page's reference tells the leaving nodes, withheld
				// if a send fails; this page's does not (again).
				again = true
				n.hit(probeResyncPassedOnce)
				return
			}
			s.Replicated++
			sent, sentVersion = true, held.Version
			id, v := held.ID, held.Version
			n.resyncSend(pg, peer, held, func() {
				d.missed = true
				if p.run.passed[id] == v {
					delete(p.run.passed, id) // a later page sends it again
				}
			})
		})
		if sent && !d.missed {
			if p.run.passed == nil {
				p.run.passed = map[uint64]uint64{}
			}
			p.run.passed[t.ID] = sentVersion
		}
		if n.logsTimers() {
			n.logTimer("resync", t, "from", p.addr, "rank", rank, "took", took, "passed_newer", passed)
		}
		if took {
			s.Taken++
		}
		if (took || passed) && !again {
			d.ReplicaIndex = rank
			if held := n.store.Get(t.ID); held != nil {
				d.Version = held.Version
			}
			dealt = append(dealt, d)
		}
	}
	return dealt
}

// drop is a rebalancing tombstone a page owes: the old replica peer of
// timer id, no longer involved, is sent this node's record of it.
type drop struct {
	peer string
	id   uint64
}

// dealtTimer is a timer a resync page made this node take, or pass its
// newer record of on: its reference for the leaving nodes, and whether
// a new replica it was passed on to may lack it (the replication failed
// every attempt, or the replica still kept it as moved away).
type dealtTimer struct {
	reference
	missed bool
}

// referDealt tells the leaving nodes which of a page's timers this node
// dealt with and every new replica ranked after it now holds, and sends
// the old replicas no longer involved their rebalancing tombstones, then
// runs then. A leaving node drops its copy on the primary's reference;
// told while a new backup may lack the timer (its replication failed
// every attempt, or it still kept the record as moved away: not reloaded
// yet, scenarios/README.md N52), it would leave the primary's copy the
// only one, and a crash of the primary would lose the timer for good:
// restarted, it repopulates from its peers, and none holds it (a scale
// the simulator found; probe resync/reference-withheld). Kept, the
// leaving node's copy is offered again to the primary's start-up resync,
// and to the resync the operator runs again for the failed send, and its
// own hand-off ends it once the new replicas hold it.
//
// For the same reason neither word leaves before what the page made this
// node take is durable: a node that keeps its records on disk takes a
// resynced record lazily (persistLazily), and, crashed within that
// second, it restarted without the timer its reference had just made the
// leaving node drop (TestResyncTellsOthersToDropOnlyWhatIsDurable). A
// sync that fails withholds both: the old copies stay, and pop.
func (n *Node) referDealt(pg *pageSync, dealt []*dealtTimer, then func()) {
	p := pg.p
	var refs []reference
	for _, d := range dealt {
		n.hitIf(d.missed, probeResyncWithheld)
		if !d.missed {
			refs = append(refs, d.reference)
		}
	}
	pg.after = then
	body, drops := referencesJSON(refs), pg.drops
	pg.drops = nil
	if body == nil && len(drops) == 0 {
		if pg.sends == 0 {
			n.pageDone(pg)
		}
		return
	}
	pg.sends++ // the barrier
	n.whenDurable(func(err error) {
		if err == nil && n.current(p.run) {
			pg.taking = true
			for _, d := range drops {
				if held := n.store.Get(d.id); held != nil {
					n.resyncSend(pg, d.peer, held, func() {})
				}
			}
			for _, l := range n.cfg.Cluster.Leaving {
				if l != n.self && body != nil {
					n.sendReferences(pg, l, body)
				}
			}
			pg.taking = false
		}
		n.sendDone(pg)
	})
}

// rebalance applies the resync rules to one timer: t, its record placed
// under the node's current view, whose replicas were old. It takes t,
// then calls send for each new replica ranked after it whose old rank
// was not lower (replicate) and each old replica at or after its rank no
// longer involved, leaving nodes excepted (the rebalancing tombstone).
// It returns the node's rank, whether it took t, and whether it passed
// on instead its newer record of t's timer (spreadNewer), at that rank.
//
// The original took a timer only when the node moved down the replica
// list or stayed: its pages listed the replicas of the old view, and a
// node moving up was brought the timer by the one now below it. A page
// of this implementation lists, as old replicas, where its server places
// the timer now (resyncPage, oldReplicas; design.md 4.8), under the view
// the requester asked for, which is the requester's own (a page of
// another view is refused, an entry of another view dropped): the
// requester's rank in that list is its rank here, and it always stays.
// Pages of the original never reach it (a cluster of mixed versions is
// not supported: api.md, Versions), so the rule for a node moving up has
// nothing to decide and is not kept. An entry that does not place the
// requester at all (one resyncPage never serves) is left alone.
func (n *Node) rebalance(t *Timer, old []string, send func(peer string, held *Timer, replicate bool)) (rank int, took, passed bool) {
	rank = slices.Index(t.Placement().Replicas, n.self)
	if rank < 0 {
		return rank, false, false
	}
	held := n.takeResynced(t)
	if held == nil {
		rank, passed = n.spreadNewer(t, old, send)
		n.hitIf(passed, probeResyncSpreadNewer)
		return rank, false, passed
	}
	n.spread(held, rank, old, send)
	return rank, true, false
}

// spreadNewer passes on, as spread would have passed t, the newer record
// of t's timer this node holds under its current view when a page
// offered the older t. The page's source still holds t: an old replica
// no longer involved that missed the newer write (cut off while it was
// made, and while this node's earlier resync sent it the rebalancing
// tombstone) would otherwise pop the replaced definition for ever, since
// no later write or pop reaches it
// (TestResyncAgainRepairsAnOldReplicaThatMissedAnUpdate). A leaving
// node, which spread passes over, is told by the reference to the timer
// instead (TestLeavingNodeDropsACopyAnUpdateReplaced: the new primary's
// reference of its first take reached the leaving node before it
// reloaded, while the timer was still its own, and it popped the
// replaced definition until it was stopped). It returns the node's rank
// in the newer record's replicas and whether it passed it on.
func (n *Node) spreadNewer(t *Timer, old []string, send func(peer string, held *Timer, replicate bool)) (int, bool) {
	newer := n.store.Get(t.ID)
	if newer == nil || newer.Version <= t.Version || newer.ViewID() != n.ring.ViewID() {
		return -1, false
	}
	rank := slices.Index(newer.Placement().Replicas, n.self)
	if rank < 0 {
		return rank, false // a factor that leaves this node out
	}
	n.spread(newer, rank, old, send)
	return rank, true
}

// spread passes on held, a timer this node took at rank whose replicas
// were old: send is called for each new replica ranked after it whose old
// rank was not lower (replicate) and each old replica at or after its
// rank no longer involved, leaving nodes excepted (the rebalancing
// tombstone).
func (n *Node) spread(held *Timer, rank int, old []string, send func(peer string, held *Timer, replicate bool)) {
	replicas := held.Placement().Replicas
	if rank < 0 || rank >= len(replicas) || replicas[rank] != n.self {
		return // the record held is of another factor than the one offered
	}
	for _, r := range replicas[rank+1:] {
		if oldRank(old, r) >= rank {
			n.hit(probeResyncReplicate)
			send(r, held, true)
		}
	}
	for i, r := range old {
		if i >= rank && r != n.self && !slices.Contains(replicas, r) && !slices.Contains(n.cfg.Cluster.Leaving, r) {
			n.hit(probeResyncTombstone)
			send(r, held, false)
		}
	}
}

// referencesJSON is the DELETE /timers/references body of refs, or nil
// when there are none.
func referencesJSON(refs []reference) []byte {
	if len(refs) == 0 {
		return nil
	}
	body, err := json.Marshal(&referencesBody{IDs: refs})
	if err != nil {
		panic("node: encoding resync references: " + err.Error())
	}
	return body
}

// oldRank is r's rank in the old replica list, or past its end when r was
// not involved.
func oldRank(old []string, r string) int {
	if i := slices.Index(old, r); i >= 0 {
		return i
	}
	return wire.MaxReplicationFactor
}

// resyncRecord builds the record a page entry offers, placed under this
// node's view, with the entry's old replica list; ok is false for an
// entry that does not parse or belongs to another view.
func (n *Node) resyncRecord(e wire.PageEntry) (t *Timer, old []string, ok bool) {
	id, err := wire.ParseID(e.TimerID)
	if err != nil {
		n.log.Warn("resync: entry with a bad timer ID", "id", e.TimerID)
		return nil, nil, false
	}
	// As the API showed the ID: with the bloom filter of the replicas
	// the entry says held it.
	wid := wire.FormatWireID(id, n.ring.Bloom(e.OldReplicas))
	if len(e.Timer) == 0 {
		n.log.Warn("resync: entry without a timer", "timer", wid)
		return nil, nil, false
	}
	spec, r, err := wire.ParseValid(e.Timer)
	if err != nil || r == nil {
		n.log.Warn("resync: entry with a bad timer body", "timer", wid, "err", err)
		return nil, nil, false
	}
	if r.ViewID != n.ring.ViewID() || deletes(spec) || n.aheadOfClock(r.Version) {
		return nil, nil, false
	}
	rf := spec.ReplicationFactor
	if rf == 0 {
		rf = len(r.Replicas)
	}
	replicas := n.ring.Replicas(id, rf)
	t = n.received(id, spec, r, n.startOf(r), n.placement(replicas, r.Sites), r.ViewID)
	return t, e.OldReplicas, true
}

// takeResynced applies t, a record a resync page offered, and returns the
// record then held if it is t's definition, live: the one to pass on.
func (n *Node) takeResynced(t *Timer) *Timer {
	if a := n.apply(t); !a.ok || a.newer != nil || a.collision {
		if a.refusal != nil && a.refusal.Status == 503 {
			n.hit(probeResyncRefused)
			n.resyncStatus.Refused++
		}
		return nil
	}
	return n.heldLive(t)
}

// heldLive returns the record held for t's timer if it is t's definition,
// live, or nil.
func (n *Node) heldLive(t *Timer) *Timer {
	held := n.store.Get(t.ID)
	if held == nil || held.Version != t.Version || held.State != Live {
		return nil
	}
	return held
}

// resyncSend sends held (its state when the send leaves) to peer for p's
// page (pushUntilHeld), while p's resync is the one under way; failed
// runs if it was not taken (counted in SendFailures): every attempt got
// no answer, or the peer still kept it as moved away when the waits for
// its reload ran out. A leaving node's copy is then kept: the page's
// reference withholds it (referDealt), since the peer may lack the
// definition (scenarios/README.md N52). A send whose resync was
// superseded while it waited (for room, or to be sent again) is not
// sent, and one given up on unsent (bulkGiveUp) fails as one that got no
// answer.
func (n *Node) resyncSend(pg *pageSync, peer string, held *Timer, failed func()) {
	p := pg.p
	pg.sends++
	wanted := func() bool { return n.current(p.run) }
	again := func() bool { return n.hitIf(wanted(), probeResyncSendAgain) }
	n.pushUntilHeld(peer, held, wanted, again, func(out tryOutcome, _ bool, _ Response) {
		if out == tryFailed && n.current(p.run) {
			n.hit(probeResyncSendFailed)
			p.run.status.SendFailures++
			failed()
		}
		n.sendDone(pg)
	})
}

// heldAwayRetry is how long a push a peer kept as moved away waits to be
// sent again: as a page a peer refuses before its reload does
// (pageRetry), about two minutes in all.
var heldAwayRetry = pageRetry

// pushUntilHeld pushes t, a record a scale moves (a resync's replication,
// a hand-off's push), to peer through peer's window of bulk sends
// (flow.go): again under bulkRetry while it gets no answer, and again
// after heldAwayRetry's wait while the peer answers that it kept the
// record as moved away (keptAway: not reloaded for the scale yet; once
// reloaded it takes the same definition placed on it, merge's moved-back
// rule). The copy an old replica holds may be dropped only once every new
// replica holds the timer, and a 200 that vouches for nothing is no such
// word (scenarios/README.md N52). wanted reports whether the push is
// still wanted, asked before each try, and again before a retry after
// no answer. end gets the last try's outcome (tryFailed when the
// tries ran out, the answer then being one of no answer or still kept
// away; tryDropped when wanted stopped it) and answer.
func (n *Node) pushUntilHeld(peer string, t *Timer, wanted, again func() bool, end func(out tryOutcome, ok bool, resp Response)) {
	away := 0
	var push func()
	push = func() {
		var ok bool
		var resp Response
		n.sendRetried(peer, bulkRetry, func(finish func(tryOutcome, bool)) {
			if !wanted() {
				finish(tryDropped, true)
				return
			}
			n.replicate(peer, t, nil, n.nowMs(), func(rok bool, rresp Response) {
				ok, resp = rok, rresp
				switch {
				case !wanted():
					finish(tryDropped, resp.Status != 0)
				case resp.Status == 0:
					finish(tryFailed, false)
				default:
					finish(tryDone, true)
				}
			})
		}, again, func(out tryOutcome) {
			if out != tryDone || !keptAway(t, ok, resp) {
				end(out, ok, resp)
				return
			}
			away++
			wait, more := heldAwayRetry.again(away, &n.rand)
			if !more {
				end(tryFailed, ok, resp)
				return
			}
			n.clock.AfterFunc(wait, func() {
				if !wanted() {
					end(tryDropped, ok, resp)
					return
				}
				n.hit(probePushAgainHeldAway)
				push()
			})
		})
	}
	push()
}

// sendReferences sends a DELETE /timers/references body to a leaving
// node for p's page, through its window of bulk sends, again under
// bulkRetry while it fails.
func (n *Node) sendReferences(pg *pageSync, peer string, body []byte) {
	p := pg.p
	pg.sends++
	n.sendRetried(peer, bulkRetry, func(finish func(tryOutcome, bool)) {
		if !n.current(p.run) {
			finish(tryDropped, true)
			return
		}
		n.send(n.referencesRequest(peer, body), n.cfg.ReplicationTimeout, func(resp Response, err error) {
			switch {
			case err == nil && resp.Status == 202:
				finish(tryDone, true)
			case !n.current(p.run):
				finish(tryDropped, err == nil)
			default:
				finish(tryFailed, err == nil)
			}
		})
	}, func() bool { return n.hitIf(n.current(p.run), probeResyncRefsAgain) }, func(out tryOutcome) {
		if out == tryFailed && n.current(p.run) {
			p.run.status.SendFailures++
		}
		n.sendDone(pg)
	})
}

// referencesRequest is the signed DELETE /timers/references of body to
// peer.
func (n *Node) referencesRequest(peer string, body []byte) Request {
	req := Request{Method: "DELETE", URL: "http://" + peer + "/timers/references",
		Header: Header{HeaderContentType: "application/json"}, Body: body, MaxWait: ReplicaSkew}
	n.sign(&req)
	return req
}

func notFound(reason string) Response {
	r := text(404, reason)
	r.Header[wire.HeaderReason] = headerReason(reason)
	return r
}
