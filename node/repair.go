package node

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// Repair: replicas that converge from any state. A resync moves timers
// when the membership changes, and every write, pop notice and 409 answer
// moves a record on; each of those messages can be lost, and then nothing
// sends it again. Repair is the backstop: every RepairInterval, and soon
// after every reload, each node compares what it holds with every peer of
// its view and sends the difference through the same conflict rule as
// every other message (merge), so a lost page, a lost reference, a missed
// delete or update, or a crashed requester is repaired without an operator.
//
// One round with a peer P, asked by node N:
//
//  1. N sends P, for each of repairBuckets ranges of timer IDs, a digest
//     of the live records N holds that both N and P are replicas of
//     (sum of mix(ID, version)).
//  2. P answers with the buckets whose digest differs from its own, and
//     its records (live and tombstones) of both in those buckets: ID,
//     version, state and sequence number.
//  3. N pushes P every record it holds newer (a higher version, a
//     tombstone of the same version, or the same version popped further)
//     as a replication, and asks P for those P holds newer (want); P
//     pushes them back the same way. Merge decides, as for any message.
//     A record P refused as a collision (another timer under its ID)
//     is neither pushed nor asked for again while neither side's record
//     changes (repaircollision.go).
//
// A node also hands off the live records it holds but is not a replica of
// under its view (a leaving node's, an old replica's that a resync never
// reached): it pushes each to its replicas, and once every replica has
// answered that it holds that version live (X-Chronos-Held), or something
// newer, it keeps the record as moved away and stops popping it. Until then it pops it after every
// replica (skew), so a timer is never left without a holder.
//
// A round is only run between nodes that share a cluster view; a peer
// that answers with another view is asked again later (repairRetry).
//
// A round compares the records old enough to have settled, not the ones
// the replication path may still be carrying: the digests, the list and
// the compare leave out every record whose version is dated within
// repairYoung before the asker's clock (repairAges), a range the asker
// sends with its digests so that both sides leave out the same records.
// Under a steady stream of writes every bucket held a record in flight,
// so every round found every bucket differing and paged through every
// record, a walk of both stores a page (docs/design.md 5); now a round
// lists the records of the buckets whose settled records differ. A node
// that leaves a record out as young runs another round (repairNeeded),
// and the first round with each peer after the node starts or its
// membership changes leaves nothing out (repairOwedFull): a node that
// restarted empty lacks the records written just before as much as any.

// Repair limits.
const (
	// DefaultRepairInterval is how often a node compares its records
	// with each peer when nothing else asks it to.
	DefaultRepairInterval = 30 * time.Second
	// repairAfterReload is how soon after a membership change a round
	// starts, before jitter.
	repairAfterReload = time.Second
	// repairBuckets is how many ranges of IDs a digest covers.
	repairBuckets = 64
	// MaxRepairEntries bounds the records one answer lists; the rest
	// come in the next page (Config.RepairPage may set it lower). Each
	// page costs the answering node a walk of its store, so a page is
	// as long as keeps its body within half of wire.MaxBodyBytes
	// (TestRepairPageFitsItsBody), as a resync page is.
	MaxRepairEntries = 5000
	// repairTimeout bounds one round trip.
	repairTimeout = 5 * time.Second
	// repairYoungWindows is how many of a write's retry windows
	// (Node.retryWindow: its replication and every retry of it) a
	// record's version must be dated before the asker's clock for a
	// round to compare it (repairAges).
	repairYoungWindows = 2
)

// repairRetry asks a peer again that did not answer or has another view.
var repairRetry = retryPolicy{attempts: 6, base: time.Second, max: 30 * time.Second}

// repairDigestBody is a message of a round: digests (with After, a page
// after the first), or the records the sender wants (Want).
type repairDigestBody struct {
	View    string   `json:"view"`
	From    string   `json:"from"`
	Digests []string `json:"digests,omitempty"`
	// After, when set, asks for the records of IDs above it only: the
	// next page of a long answer.
	After string   `json:"after,omitempty"`
	Want  []string `json:"want,omitempty"`
	// YoungFrom and YoungTo, when set, are the versions the round leaves
	// out, from YoungFrom up to but not including YoungTo: the records
	// the replication path may still be carrying (repairAges).
	YoungFrom string `json:"young-from,omitempty"`
	YoungTo   string `json:"young-to,omitempty"`
	// Room, on a round's digests, is the asker's room (room): a peer
	// that holds records to hand off to it learns from it how many it
	// can take.
	Room *room `json:"room,omitempty"`
}

// repairAges is the range of versions a round leaves out of its
// digests, its list and its compare, [from, to): the records written
// within repairYoung before the asker's clock. The zero range leaves
// nothing out (a full round). Both sides of a round leave out the same
// records, as the asker sends the range and a record's version is the
// same wherever it is held. A version dated after to (a clock ahead of
// the asker's) is compared: a round never leaves out a record for
// longer than repairYoung by the asker's clock.
type repairAges struct{ from, to uint64 }

// young reports whether a round under a leaves out a record of version v.
func (a repairAges) young(v uint64) bool { return v >= a.from && v < a.to }

// repairDigests are a round's digests, taken once on its first page,
// and the versions they leave out.
type repairDigests struct {
	sums [repairBuckets]uint64
	ages repairAges
	// list are the IDs, in order, of the records this node holds that the
	// round compares in the buckets the peer found differing
	// (listBuckets), taken on the round's first answer.
	list        []uint64
	listBuckets []int
}

// versionDatedAt is the lowest version dated at Unix millisecond ms.
func versionDatedAt(ms int64) uint64 {
	return uint64(min(max(ms-idEpochMs, 0), maxIDMs)) << (instanceBits + seqBits)
}

// repairYoung is how long after its version's date a record is left out
// of a round: a few of a write's retry windows, in which the replication
// path still carries it to its replicas.
func (n *Node) repairYoung() time.Duration { return repairYoungWindows * n.retryWindow() }

// repairAgesFor is the range a round with peer leaves out, starting now:
// nothing on the first round with the peer since the node started or its
// membership changed (repairOwedFull).
func (n *Node) repairAgesFor(peer string) repairAges {
	if n.repairOwedFull[peer] {
		return repairAges{}
	}
	now := n.nowMs()
	return repairAges{from: versionDatedAt(now - n.repairYoung().Milliseconds()), to: versionDatedAt(now + 1)}
}

// repairSoon starts a full round with every peer soon: after a start or
// a change of membership.
//
// The rounds this node was serving end with the change: their lists were
// taken under the view before (what a peer is placed to hold is another
// set now), and a peer that left would never ask for their last page.
func (n *Node) repairSoon() {
	n.repairServing = nil
	n.collisions = nil // placed under another view, the records compare anew
	n.repairOwedFull = map[string]bool{}
	for _, peer := range n.repairPeers() {
		n.repairOwedFull[peer] = true
	}
	n.repairNeeded()
	n.scheduleRepair(repairAfterReload)
}

// repairEntry is one record a peer lists in answer to a digest.
type repairEntry struct {
	ID      string            `json:"id"`
	Version string            `json:"version"`
	State   wire.ReplicaState `json:"state"` // live or tombstone, in a read's words
	Seq     uint32            `json:"seq"`
}

// repairAnswer lists, in ID order, the records of the buckets whose
// digests differ, from the page's After on; Through, when set, is the
// last ID of a page that stopped at MaxRepairEntries.
type repairAnswer struct {
	Buckets []int         `json:"buckets"`
	Entries []repairEntry `json:"entries"`
	Through string        `json:"through,omitempty"`
	// Room is what the answering node can still take of records it
	// holds none of (room); the asker pushes it no more of them. An
	// answer without it (a node before it was added) takes any.
	Room *room `json:"room,omitempty"`
}

// room is what a node can take of records it holds none of: their
// number, and the bytes they count against Limits.MaxHeldBytes
// (recordBytes), before it refuses them with 503 (budget.go). A record
// that replaces one held needs no room for its number.
//
// Repair sends a node only what it can take. A node at a limit lacks
// the records it refused, its peers hold them, and each round of either
// side found the difference again: the peers pushed them, the node asked
// for them, and it refused every one, every round, for as long as it
// stayed full (scenarios/README.md U20: hours of 503s, all to all). So a
// repair answer says the room its node has, the asker pushes it at most
// that many records it lacks (earliest due first), and a node asks for
// at most its own room of records it lacks; the ones left are not a
// difference repair can mend, and do not make the round run again
// (repairNeeded). The node runs a round once it has room again
// (roomFreed), and takes them then. Rounds that several peers run at
// once with one node may each push it its room: at most as many times
// its room as it has peers, refused once each.
type room struct {
	Timers int64 `json:"timers"`
	Bytes  int64 `json:"bytes"`
}

// takes reports whether r has room for a record of b bytes it holds
// none of, and if so takes it from r.
func (r *room) takes(b int64) bool {
	if r.Timers <= 0 || r.Bytes < b {
		return false
	}
	r.Timers--
	r.Bytes -= b
	return true
}

// roomAccount is this node's one account of a peer's room: what it may
// still push the peer of records the peer may hold none of (left), and
// what it drew for pushes the peer has not answered yet (out). Every
// sender of such records to the peer draws on it: a round's pushes of
// the records the peer lacks (repairAnswered) and hand-offs (handOff).
// A repair message of the peer says its room as it was when sent, which
// need not count the pushes still out (a round's digests are answered
// before its hand-off's pushes arrive), so the account takes that room
// less those (heardRoom). Drawn each from its own copy of the peer's
// room, a round's pushes and its hand-off together sent a full peer
// twice its room, and each next round's hand-off its room again, all of
// it refused (TestRepairAndHandOffDrawOnOneAccountOfAPeersRoom).
type roomAccount struct {
	left, out room
}

// heardRoom notes the room peer said it has in a repair message (nil:
// a node that does not say) in this node's account of it, less what
// this node's pushes not answered yet drew (roomAccount). A peer a
// hand-off held records back from for want of room that has room again
// gets them at the next round.
func (n *Node) heardRoom(peer string, r *room) {
	if r == nil {
		return
	}
	a := n.peerRoom[peer]
	if a == nil {
		if n.peerRoom == nil {
			n.peerRoom = map[string]*roomAccount{}
		}
		a = &roomAccount{}
		n.peerRoom[peer] = a
	}
	a.left = room{Timers: max(r.Timers-a.out.Timers, 0), Bytes: max(r.Bytes-a.out.Bytes, 0)}
	if r.Timers > 0 && n.handOffHeld[peer] {
		n.hit(probeHandOffRoomAgain)
		delete(n.handOffHeld, peer)
		n.repairNeeded()
	}
}

// drawRoom reports whether this node may push peer t, a live record the
// peer may hold none of: its account of the peer's room takes it, or the
// peer has said none. answered, when not nil, is to be called once the
// push is answered, however: the peer's messages sent after count it. A
// record held back while pushes are out makes the next round look again:
// the peer's last message may have counted those already.
func (n *Node) drawRoom(peer string, t *Timer) (answered func(), ok bool) {
	a := n.peerRoom[peer]
	if a == nil {
		return nil, true
	}
	b := recordBytes(t)
	if !a.left.takes(b) {
		if a.out.Timers > 0 {
			n.repairNeeded()
		}
		return nil, false
	}
	a.out.Timers++
	a.out.Bytes += b
	return func() {
		a.out.Timers--
		a.out.Bytes -= b
	}, true
}

// handOffRoom reports whether a hand-off may push placed to peer, drawn
// on the account of the peer's room (drawRoom, whose answered it
// returns). A record the peer holds already takes no room there, but
// this node cannot tell, so it counts every one: a full replica is
// pushed nothing, and gets the records once it says it has room, as many
// as that. The one record it can tell of, a copy the peer answered that
// it holds, is pushed without asking (handOff, heardHolding).
func (n *Node) handOffRoom(peer string, placed *Timer) (answered func(), ok bool) {
	if placed.State != Live && !placed.isDeleteTombstone() {
		return nil, true // a finished definition's tombstone needs no room (refuseFull)
	}
	if answered, ok = n.drawRoom(peer, placed); !ok {
		if n.handOffHeld == nil {
			n.handOffHeld = map[string]bool{}
		}
		n.handOffHeld[peer] = true
	}
	return answered, ok
}

// roomToSay is the room a repair message of this node says it has. A
// node that says it has none runs a round once it has more (roomFreed),
// which says so to the peers that hold records back from it.
func (n *Node) roomToSay() *room {
	r := n.room()
	if r.Timers == 0 {
		n.lackingRoom()
	}
	return &r
}

// room is what this node can take now of records it holds none of.
func (n *Node) room() room {
	return room{Timers: max(int64(n.cfg.Limits.MaxTimers-n.store.Len()), 0),
		Bytes: max(n.cfg.Limits.MaxHeldBytes-n.heldBytes, 0)}
}

// repairServed is what a node keeps of a peer's round it answers, from
// its first page to its last: the buckets that differ and the IDs, in
// order, of the records it lists from them. key is the round's digests
// and young range, as the peer sent them.
type repairServed struct {
	key     string
	buckets []int
	ids     []uint64
}

// repairSummary is a held record as a round compares it.
type repairSummary struct {
	version uint64
	live    bool
	seq     uint32
}

// repairBucket is the bucket of id.
func repairBucket(id uint64) int { return int(mix64(id) % repairBuckets) }

// repairHash is what one live record adds to its bucket's digest.
func repairHash(id, version uint64) uint64 { return mix64(id ^ mix64(version)) }

// repairPeers are the members a round is run with: every other node of
// the membership, leaving ones included.
func (n *Node) repairPeers() []string {
	var peers []string
	for _, a := range n.cfg.Cluster.withSelf(n.self).All() {
		if a != n.self {
			peers = append(peers, a)
		}
	}
	return peers
}

// scheduleRepair arms the next round after about d.
func (n *Node) scheduleRepair(d time.Duration) {
	if n.cfg.RepairInterval <= 0 {
		return
	}
	if n.repairAlarm != nil {
		n.repairAlarm.Stop()
	}
	n.repairGen++
	gen := n.repairGen
	n.repairAlarm = n.clock.AfterFunc(n.rand.jitter(d), func() {
		if gen != n.repairGen {
			return
		}
		n.repairAlarm = nil
		n.forgetOldCollisions()
		if n.roomFreed() {
			n.repairNeeded()
		}
		if n.repairOwed() {
			n.repairRound()
		} else {
			n.hit(probeRepairQuiet)
		}
		n.scheduleRepair(n.cfg.RepairInterval)
	})
}

// lackingRoom notes that this node lacks a record for want of room: it
// refused one at a limit, or a round left one out of its asks.
func (n *Node) lackingRoom() {
	r := n.room()
	n.lackedRoomAt = &r
}

// roomFreed reports whether the node has more room than when it last
// lacked a record for want of it: records ended, or shrank. Then a round
// asks its peers for what it lacks, within its room (a full node's peers
// push it nothing it holds none of, and would never send it those).
func (n *Node) roomFreed() bool {
	then := n.lackedRoomAt
	if then == nil {
		return false
	}
	if r := n.room(); r.Timers == 0 || r.Timers <= then.Timers && r.Bytes <= then.Bytes {
		return false
	}
	n.hit(probeRepairRoomFreed)
	n.lackedRoomAt = nil
	return true
}

// repairNeeded notes that the replicas may differ: a record changed
// here, or a message between nodes failed. A node whose records and
// messages are all as they were skips its periodic round: what the
// replicas hold can only have changed through a change or a failure one
// of them saw (a node that restarts empty runs a round at boot).
//
// The note is owed to every peer until a round with that peer begins
// after it (repairOwedBy). A round takes its digests when it begins and
// may run long, retrying a peer cut off; one begun before a note does
// not cover it, and a round with the other peers meanwhile does not
// either. A single flag cleared by any round lost exactly that: a record
// a round with a cut-off peer left out as young was never compared with
// it once the cut healed (fresh seed 8497762, scenarios/README.md U37).
func (n *Node) repairNeeded() { n.repairMarks++ }

// repairOwedBy reports whether peer is owed a round: a note was made
// since its last round began.
func (n *Node) repairOwedBy(peer string) bool { return n.repairAsked[peer] != n.repairMarks }

// repairOwed reports whether a peer is owed a round.
func (n *Node) repairOwed() bool {
	for _, peer := range n.repairPeers() {
		if n.repairOwedBy(peer) {
			return true
		}
	}
	return false
}

// repairRound starts a round with every peer that is owed one and has
// none under way; a peer whose round is still under way stays owed, and
// the next interval starts its round once that one has ended.
func (n *Node) repairRound() {
	n.stats.RepairRounds++
	n.repairRoom = n.room()
	view := n.ring.ViewID()
	peers := n.repairPeers()
	for peer := range n.repairAsked {
		if !slices.Contains(peers, peer) {
			delete(n.repairAsked, peer) // left the view: owed nothing
		}
	}
	for _, peer := range peers {
		if !n.repairBusy[peer] && n.repairOwedBy(peer) {
			n.repairAsked[peer] = n.repairMarks
			n.repairBusy[peer] = true
			n.repairWith(peer, view, 0, nil, nil, 1)
		}
	}
	n.handOff(nil)
}

// heldFor calls fn for every record this node holds whose replicas under
// its view include peer: whether this node is one of them too (else it
// is a record to hand off). The order is the store's (Store.Each), not
// pop order: a caller that sends what it visits orders it first.
func (n *Node) heldFor(peer string, fn func(t *Timer, mine bool)) {
	n.repairWalks++
	n.store.Each(func(t *Timer) {
		if placedOn(t, peer) {
			fn(t, placedOn(t, n.self))
		}
	})
}

// placedOn reports whether t, a record this node holds, is placed on
// addr under the node's view and not moved away from this node.
func placedOn(t *Timer, addr string) bool {
	return t.State != Moved && slices.Contains(t.Placement().Replicas, addr)
}

// repairWith asks peer for one page of a round under view: the records
// of IDs above after (0: from the first). digests are the round's, nil
// on its first page: they are taken once a round, not once a page, as
// each costs a walk of the whole store, and a round that starts with
// every bucket differing (a node joined, empty) has a page for every
// MaxRepairEntries records. A record that changed since they were taken
// has set repairNeeded, so the next round compares it again; so has one
// they leave out as young (repairAges). marked are
// the records of the round that mark peer as may lack them, taken with
// the digests and pushed on the peer's first answer to the round
// (repairLacking); nil once pushed.
func (n *Node) repairWith(peer string, view, after uint64, digests *repairDigests, marked []*Timer, attempt int) {
	if digests == nil {
		digests = &repairDigests{ages: n.repairAgesFor(peer)}
		left := false
		n.heldFor(peer, func(t *Timer, mine bool) {
			switch {
			case mine && lackedBy(t, peer):
				marked = append(marked, t)
			case mine && digests.ages.young(t.Version):
				left = true
			case mine && t.State == Live:
				digests.sums[repairBucket(t.ID)] += repairHash(t.ID, t.Version)
			}
		})
		if left {
			n.hit(probeRepairYoung)
			n.repairNeeded()
		}
	}
	body := repairDigestBody{View: strconv.FormatUint(view, 10), From: n.self, Digests: make([]string, repairBuckets), Room: n.roomToSay()}
	for i, d := range digests.sums {
		body.Digests[i] = wire.FormatID(d) // 16 hex digits, as %016x
	}
	if after > 0 {
		body.After = wire.FormatID(after)
	}
	if digests.ages != (repairAges{}) {
		body.YoungFrom, body.YoungTo = wire.FormatID(digests.ages.from), wire.FormatID(digests.ages.to)
	}
	n.send(n.repairRequest(peer, body), repairTimeout, func(resp Response, err error) {
		if view != n.ring.ViewID() {
			delete(n.repairBusy, peer)
			return // a reload has started a round of its own
		}
		if err == nil && len(marked) > 0 {
			// The peer answers: it may take what it may lack.
			n.repairLacking(peer, marked)
			marked = nil
		}
		var ans repairAnswer
		if err == nil && resp.Status == 200 {
			err = json.Unmarshal(resp.Body, &ans)
		} else if err == nil {
			err = fmt.Errorf("status %d: %s", resp.Status, reasonOf(resp))
		}
		if err != nil {
			n.hitIf(resp.Status == 409, probeRepairOtherView)
			wait, ok := repairRetry.again(attempt, &n.rand)
			if !ok {
				n.hit(probeRepairGiveUp)
				delete(n.repairBusy, peer)
				n.repairNeeded()
				return
			}
			n.hit(probeRepairRetry)
			n.clock.AfterFunc(wait, func() {
				if view != n.ring.ViewID() {
					delete(n.repairBusy, peer)
					return
				}
				n.repairWith(peer, view, after, digests, marked, attempt+1)
			})
			return
		}
		through, ok := n.repairAnswered(peer, after, digests, ans)
		if ok && through > after {
			n.hit(probeRepairPage)
			n.repairWith(peer, view, through, digests, nil, 1)
			return
		}
		delete(n.repairBusy, peer)
		if digests.ages == (repairAges{}) {
			delete(n.repairOwedFull, peer) // compared in full
		}
	})
}

// lackedBy reports whether t, a record this node holds, is a tombstone
// that marks peer, one of its replicas, as may lack it
// (markTombstoneLacking).
func lackedBy(t *Timer, peer string) bool {
	if t.State != Tombstone || t.lacking() == 0 {
		return false
	}
	i := slices.Index(t.Placement().Replicas, peer)
	return i >= 0 && i < 32 && t.lacking()&(1<<i) != 0
}

// repairLacking pushes peer the tombstones this node holds that mark it
// as may lack them (markTombstoneLacking: the delete's replication did
// not reach it), whatever the digests say: the peer may hold the deleted
// timer live under a smaller factor, its record placed on no node that
// took the delete, and then no digest of either side lists it. Its answer
// (a 200, or a 409: it holds something newer) clears the mark; nothing
// else does.
//
// A long partition under a delete-heavy load marks many tombstones, and
// pushing them all each round was a message storm at a peer that answers
// nothing. So a round pushes them only once the peer has answered the
// round's digests (repairWith: a peer that is down gets its digests,
// asked again under repairRetry, and no push), at most a page of them
// (Config.RepairPage) a round, taking up in ID order after the last one
// the round before pushed (repairMarkedNext) and around, so that every
// one is pushed within as many rounds as there are pages of them. Each
// goes through the peer's window of bulk sends (flow.go), again under
// bulkRetry while it gets no answer and the mark stands (as a hand-off's
// push), so a slow peer takes them at its pace and a peer that stops
// answering drops the rest of them (bulkGiveUp) until a later round.
// marked are the round's, taken with its digests: each is pushed as the
// node holds it now, if it still marks peer.
func (n *Node) repairLacking(peer string, marked []*Timer) {
	page := cmp.Or(n.cfg.RepairPage, MaxRepairEntries)
	slices.SortFunc(marked, func(a, b *Timer) int { return cmp.Compare(a.ID, b.ID) })
	if len(marked) > page {
		n.hit(probeRepairLackingCap)
		next := n.repairMarkedNext[peer]
		i, _ := slices.BinarySearchFunc(marked, next, func(t *Timer, id uint64) int { return cmp.Compare(t.ID, id) })
		marked = slices.Concat(marked[i:], marked[:i])[:page]
		if n.repairMarkedNext == nil {
			n.repairMarkedNext = map[string]uint64{}
		}
		n.repairMarkedNext[peer] = marked[page-1].ID + 1
		n.repairNeeded() // the rest wait for the next round
	} else {
		delete(n.repairMarkedNext, peer)
	}
	for _, t := range marked {
		if n.collisionStands(peer, t, nil) {
			continue // the peer refused it as a collision; the mark stays
		}
		// A delete's tombstone takes room at a peer that holds nothing
		// of the timer (refuseFull): a full peer is pushed none, and
		// gets it once it says it has room, as a hand-off's records.
		var answered func()
		if t.isDeleteTombstone() {
			var ok bool
			if answered, ok = n.drawRoom(peer, t); !ok {
				n.hit(probeRepairHeldForRoom)
				n.stats.RepairHeldForRoom++
				continue
			}
		}
		id, version := t.ID, t.Version
		// held is the tombstone as the node holds it now, while it
		// still marks peer.
		held := func() *Timer {
			h := n.store.Get(id)
			if h == nil || h.Version != version || !lackedBy(h, peer) {
				return nil
			}
			return h
		}
		n.sendRetried(peer, bulkRetry, func(finish func(tryOutcome, bool)) {
			h := held()
			if h == nil {
				finish(tryDropped, false)
				return
			}
			n.hit(probeRepairLacking)
			n.stats.RepairPushes++
			placed := n.placedNow(h)
			n.replicate(peer, placed, nil, n.nowMs(), func(ok bool, resp Response) {
				if !ok && resp.Status == 409 && resp.Header.Get(HeaderCollision) == "" {
					n.markLacking(h, peer, false)
				}
				n.noteRefusedPush(peer, placed, nil, resp)
				if resp.Status == 0 {
					finish(tryFailed, false)
					return
				}
				finish(tryDone, true)
			})
		}, func() bool { return held() != nil }, func(out tryOutcome) {
			if answered != nil {
				answered()
			}
			if out == tryFailed {
				n.repairNeeded()
			}
		})
	}
}

// repairRequest is the signed POST /timers/repair of body to peer.
func (n *Node) repairRequest(peer string, body repairDigestBody) Request {
	b, err := json.Marshal(&body)
	if err != nil {
		panic("node: encoding a repair message: " + err.Error())
	}
	req := Request{Method: "POST", URL: "http://" + peer + repairPath,
		Header: Header{HeaderContentType: "application/json"}, Body: b, MaxWait: ReplicaSkew}
	n.sign(&req)
	return req
}

// repairPath is the internal route of repair.
const repairPath = "/timers/repair"

// repairAnswered compares a peer's page with what this node holds in the
// buckets that differ, between the page's bounds: it pushes what it holds
// newer and asks for what the peer holds newer. It returns the last ID of
// the page when another page follows.
//
// A record of the round's ages it holds (young) is left to the
// replication path and the next round, whatever the peer holds of it:
// the peer listed none of its own young records, and an old one it lists
// is older.
//
// The records the pages are compared with are listed once a round, on
// its first answer (repairDigests.list): a page costs what it lists, not
// a walk of the store; a record that reached the node since is compared
// when the peer lists it, and one that changed has set repairNeeded.
func (n *Node) repairAnswered(peer string, after uint64, d *repairDigests, ans repairAnswer) (through uint64, more bool) {
	if ans.Through != "" {
		var err error
		if through, err = wire.ParseID(ans.Through); err != nil {
			return 0, false
		}
		more = true
	}
	var lackedHere []string // live records of the peer this node holds none of
	n.heardRoom(peer, ans.Room)
	theirs := make(map[uint64]repairSummary, len(ans.Entries))
	for _, e := range ans.Entries {
		id, err := wire.ParseID(e.ID)
		v, verr := strconv.ParseUint(e.Version, 10, 64)
		if err != nil || verr != nil {
			continue
		}
		theirs[id] = repairSummary{version: v, live: e.State == wire.StateLive, seq: e.Seq}
	}
	if d.list == nil || !slices.Equal(d.listBuckets, ans.Buckets) {
		buckets := map[int]bool{}
		for _, b := range ans.Buckets {
			buckets[b] = true
		}
		d.list, d.listBuckets = []uint64{}, slices.Clone(ans.Buckets)
		n.heldFor(peer, func(t *Timer, mine bool) {
			if mine && buckets[repairBucket(t.ID)] && !d.ages.young(t.Version) {
				d.list = append(d.list, t.ID)
			}
		})
		slices.Sort(d.list)
	}
	lo, _ := slices.BinarySearch(d.list, after+1)
	hi := len(d.list)
	if more {
		hi, _ = slices.BinarySearch(d.list, through+1)
	}
	var push, lacked []*Timer // lacked: live records the peer holds none of
	var want []string
	// listedAs is the peer's record of each one pushed that it listed.
	var listedAs map[*Timer]repairSummary
	compare := func(t *Timer, other repairSummary, ok bool) {
		mineS := summaryOf(t)
		switch {
		case !ok && mineS.live:
			if !n.collisionStands(peer, t, nil) {
				lacked = append(lacked, t)
			}
		case !ok:
		case newerSummary(mineS, other):
			if n.collisionStands(peer, t, &other) {
				return
			}
			push = append(push, t)
			if listedAs == nil {
				listedAs = map[*Timer]repairSummary{}
			}
			listedAs[t] = other
		case newerSummary(other, mineS):
			if !n.collisionStands(peer, t, &other) {
				want = append(want, wire.FormatID(t.ID))
			}
		}
	}
	for _, id := range d.list[lo:max(lo, hi)] {
		t := n.store.Get(id)
		if !n.repairMine(t, peer) || d.ages.young(t.Version) {
			continue // changed since the list: left to the next round, or to the peer's entry below
		}
		other, ok := theirs[id]
		delete(theirs, id)
		compare(t, other, ok)
	}
	for id, other := range theirs {
		held := n.store.Get(id)
		switch {
		case n.repairMine(held, peer) && d.ages.young(held.Version):
		case n.repairMine(held, peer):
			compare(held, other, true) // reached this node since the list
		case other.live && held == nil:
			lackedHere = append(lackedHere, wire.FormatID(id))
		case other.live && held.State != Moved && !n.collisionStands(peer, held, &other):
			want = append(want, wire.FormatID(id))
		}
	}
	// Send a node only what it can take (room): the peer, the records it
	// holds none of within this node's account of its room (drawRoom);
	// this node, within its own room for the round.
	slices.SortFunc(lacked, byDueThenID)
	slices.Sort(lackedHere) // map order must not reach the network
	heldBack := 0
	var drawn map[*Timer]func()
	for _, t := range lacked {
		answered, ok := n.drawRoom(peer, t)
		if !ok {
			heldBack++
			continue
		}
		push = append(push, t)
		if answered != nil {
			if drawn == nil {
				drawn = map[*Timer]func(){}
			}
			drawn[t] = answered
		}
	}
	for _, id := range lackedHere {
		if !n.repairRoom.takes(0) {
			heldBack++
			n.lackingRoom()
			continue
		}
		want = append(want, id)
	}
	if heldBack > 0 {
		n.hit(probeRepairHeldForRoom)
		n.stats.RepairHeldForRoom += uint64(heldBack)
	}
	slices.Sort(want) // map order must not reach the network
	slices.SortFunc(push, byDueThenID)
	if len(push)+len(want) > 0 {
		n.repairNeeded() // check again next round that it took
	}
	now := n.nowMs()
	for _, t := range push {
		n.hit(probeRepairPush)
		n.stats.RepairPushes++
		placed, answered := n.placedNow(t), drawn[t]
		var theirs *repairSummary
		if other, ok := listedAs[t]; ok {
			theirs = &other
		}
		n.replicate(peer, placed, nil, now, func(_ bool, resp Response) {
			if answered != nil {
				answered()
			}
			n.noteRefusedPush(peer, placed, theirs, resp)
			n.repairPushAnswered(peer, t.ID, resp)
		})
	}
	if len(want) > 0 {
		n.hit(probeRepairWant)
		n.stats.RepairWants += uint64(len(want))
		body := repairDigestBody{View: strconv.FormatUint(n.ring.ViewID(), 10), From: n.self, Want: want}
		n.send(n.repairRequest(peer, body), repairTimeout, func(Response, error) {})
	}
	return through, more
}

// repairMine reports whether t, a record this node holds (or nil), is one
// a round with peer compares: held, not moved away, and placed on both.
func (n *Node) repairMine(t *Timer, peer string) bool {
	return t != nil && placedOn(t, peer) && placedOn(t, n.self)
}

// newerSummary reports whether a is ahead of b: a later version, a
// tombstone of the same version, or the same live version popped further.
func newerSummary(a, b repairSummary) bool {
	switch {
	case a.version != b.version:
		return a.version > b.version
	case a.live != b.live:
		return !a.live
	default:
		return a.live && a.seq > b.seq
	}
}

// placedNow is a copy of t, a held record, as a round sends it: placed
// (as every record held is) under the node's current view.
func (n *Node) placedNow(t *Timer) *Timer {
	c := *t
	c.prev, c.next, c.slot = nil, nil, 0
	c.setViewID(n.ring.ViewID())
	return &c
}

// handOff pushes every record this node holds but is not a replica of
// under its view (placeAll left it where it was when a reload placed the
// timer elsewhere) to the replicas the change of view added
// (handOffTargets). A live one stays live until every one of them holds
// its version live (or something newer); then the node keeps it as moved
// away. A tombstone goes too: the node may be the only one that holds a
// delete or the end of a timer its new replicas hold live (a delete that
// reached one of two replicas before the scale moved it), and repair
// compares only what both sides replicate, so nothing else would tell
// them (TestScaleHandsOffATombstoneToTheNewReplicas). The node keeps the
// tombstone for its life, as any other, and pushes it again after a
// failure, never once all the replicas hold it (tombsHanded). done, if
// not nil, is called once every push is answered: with whether every
// record was handed off.
//
// A repair round hands off again while an earlier hand-off (the resync's,
// or the round before's) may still be pushing the same copies through
// the peer's window (flow.go): pushed again, each waited there twice. A
// copy whose push under the same view is under way is not pushed again;
// this hand-off takes that push's outcome (handing,
// TestHandOffAgainWaitsForThePushUnderWay).
func (n *Node) handOff(done func(all bool)) {
	var out []*Timer
	var handed map[uint64]uint64
	n.store.Ascend(func(t *Timer) bool {
		switch {
		case t.State == Moved || slices.Contains(t.Placement().Replicas, n.self):
		case t.State == Tombstone && n.tombsHanded[t.ID] == t.Version:
			if handed == nil {
				handed = map[uint64]uint64{}
			}
			handed[t.ID] = t.Version // kept: still this tombstone
		default:
			out = append(out, t)
		}
		return true
	})
	n.tombsHanded = handed
	n.keepHeard(out)
	pendingAll, allOK := 1, true
	finish := func(ok bool) {
		allOK = allOK && ok
		if pendingAll--; pendingAll == 0 && done != nil {
			done(allOK)
		}
	}
	view := n.ring.ViewID()
	for _, t := range out {
		placed := n.placedNow(t)
		pendingAll++
		if n.joinHandOff(placed, finish) {
			continue
		}
		finish := n.startHandingOff(placed, finish)
		targets, skipped := n.handOffTargets(placed), []string(nil)
		holding := n.heardHolding(placed)
		if done == nil {
			// A repair round's. A resync's (done set) pushes every
			// target: its outcome is the resync's, complete only on
			// answers of its own.
			targets, skipped = n.handOffUnheard(placed, targets)
		}
		// A target skipped as heard is not heard again this round: the
		// copy ends only in a round every target answers (handOff).
		pending, all := len(targets), len(skipped) == 0
		n.hit(probeHandOff)
		n.hitIf(placed.State == Tombstone, probeHandOffTombstone)
		n.logTimer("hand off", placed, "replicas", targets)
		n.stats.RepairHandoffs++
		// one takes a target's outcome: whether it holds the record.
		one := func(held bool) {
			all = all && held
			if pending--; pending > 0 {
				return
			}
			if !all && n.copyOf(placed) != nil {
				if len(skipped) > 0 {
					// Every target may hold it now: the next round
					// confirms them all, though nothing failed.
					n.repairNeeded()
				}
				finish(false)
				return
			}
			if all {
				n.handedOff(placed, view)
			}
			finish(true)
		}
		for _, peer := range targets {
			if n.collisionStands(peer, placed, nil) {
				// The target refused this copy as another timer's
				// (repaircollision.go): nothing it would answer has
				// changed, so it is not sent again; the copy stays.
				one(false)
				continue
			}
			var answered func()
			ok := true
			if !slices.Contains(holding, peer) {
				answered, ok = n.handOffRoom(peer, placed)
			}
			if !ok {
				// Sent only what it can take (room): the copy stays
				// here, popped after every replica, until it has room.
				n.hit(probeHandOffHeldForRoom)
				n.stats.RepairHeldForRoom++
				one(false)
				continue
			}
			n.handOffPush(peer, placed, func(ok bool, resp Response) {
				if answered != nil {
					answered()
				}
				n.noteRefusedPush(peer, placed, nil, resp)
				// The replica holds it (live, for a live record), or
				// something newer: a later version (409), or the
				// tombstone of this one (the definition ended there
				// while this copy was waiting to be handed off). A 200
				// from a node that keeps a live record as moved away
				// (on another view) is no hand-off.
				held := ok && vouches(placed, resp) ||
					resp.Status == 409 && resp.Header.Get(HeaderCollision) == ""
				if held {
					n.heard(placed, peer)
				}
				one(held)
			})
		}
	}
	finish(true)
}

// heardCopy is a copy a hand-off pushed (its version, state and view)
// and the targets that answered that they hold it.
type heardCopy struct {
	version uint64
	state   State
	view    uint64
	peers   []string
}

// heardOf is what handHeard notes of placed's copy, or nil when it notes
// nothing of that copy (another version, state or view).
func (n *Node) heardOf(placed *Timer) *heardCopy {
	h := n.handHeard[placed.ID]
	if h == nil || h.version != placed.Version || h.state != placed.State || h.view != placed.ViewID() {
		return nil
	}
	return h
}

// heardHolding is the targets heard to hold placed's copy. Pushing it
// to one of them again (the round that confirms every target,
// handOffUnheard) takes none of its room: it holds the record already.
// Drawn on the room of a full target, that push was held back in every
// confirming round, and the round after pushed it alone as unheard, so
// the copy never ended and every other target was pushed it every other
// round (scenarios/README.md N77, seed 9617973). A target that lost the
// copy since answers the push as full, as any other.
func (n *Node) heardHolding(placed *Timer) []string {
	if h := n.heardOf(placed); h != nil {
		return slices.Clone(h.peers)
	}
	return nil
}

// heard notes that peer holds placed's copy, or something newer.
func (n *Node) heard(placed *Timer, peer string) {
	if n.copyOf(placed) == nil || placed.ViewID() != n.ring.ViewID() {
		return
	}
	h := n.heardOf(placed)
	if h == nil {
		h = &heardCopy{version: placed.Version, state: placed.State, view: placed.ViewID()}
		if n.handHeard == nil {
			n.handHeard = map[uint64]*heardCopy{}
		}
		n.handHeard[placed.ID] = h
	}
	if !slices.Contains(h.peers, peer) {
		h.peers = append(h.peers, peer)
	}
}

// keepHeard keeps of handHeard only the copies out, the records a
// hand-off is about to push, still hold under the current view: a copy
// replaced, ended or placed back here, or a change of view, forgets it.
func (n *Node) keepHeard(out []*Timer) {
	if len(n.handHeard) == 0 {
		return
	}
	kept := map[uint64]*heardCopy{}
	view := n.ring.ViewID()
	for _, t := range out {
		if h := n.handHeard[t.ID]; h != nil && h.version == t.Version && h.state == t.State && h.view == view {
			kept[t.ID] = h
		}
	}
	n.handHeard = kept
}

// handOffUnheard splits targets, the replicas a hand-off pushes placed
// to, into those it pushes and those it skips: the ones that answered an
// earlier hand-off of this copy that they hold it, while another target
// may lack it. A hand-off keeps its copy until every target holds it
// (handedOff), so while one refuses (its clock apart, or full) or does
// not answer, each round hands the copy off again; pushing it again to
// the targets that hold it sent each of them the same record every round
// for as long as the other refused, every push answered 200
// (scenarios/README.md N63, seed 125438). Once every target has
// been heard, the next hand-off pushes them all again and ends the copy
// only if all of them answer that they hold it: a target heard rounds
// ago may have lost it since (restarted empty), and the copy is dropped
// only on answers of one round, as before.
func (n *Node) handOffUnheard(placed *Timer, targets []string) (push, skipped []string) {
	h := n.heardOf(placed)
	if h == nil {
		return targets, nil
	}
	for _, peer := range targets {
		if slices.Contains(h.peers, peer) {
			skipped = append(skipped, peer)
		} else {
			push = append(push, peer)
		}
	}
	if len(push) == 0 {
		// Every target heard: this round confirms them all.
		delete(n.handHeard, placed.ID)
		return targets, nil
	}
	n.hit(probeHandOffHeardSkipped)
	return push, skipped
}

// handingOff is a copy a hand-off is pushing: its version, state and
// view, and the hand-offs waiting for the push's outcome.
type handingOff struct {
	version uint64
	state   State
	view    uint64
	first   func(ok bool)
	more    []func(ok bool)
}

// joinHandOff makes finish wait for the push under way of placed's copy,
// if one is, and reports whether one is.
func (n *Node) joinHandOff(placed *Timer, finish func(ok bool)) bool {
	h := n.handing[placed.ID]
	if h == nil || h.version != placed.Version || h.state != placed.State || h.view != placed.ViewID() {
		return false
	}
	h.more = append(h.more, finish)
	return true
}

// startHandingOff notes the push of placed's copy under way, finish
// waiting for its outcome, and returns what ends it (handOffDone).
func (n *Node) startHandingOff(placed *Timer, finish func(ok bool)) func(ok bool) {
	h := &handingOff{version: placed.Version, state: placed.State, view: placed.ViewID(), first: finish}
	if n.handing == nil {
		n.handing = map[uint64]*handingOff{}
	}
	n.handing[placed.ID] = h
	return func(ok bool) { n.handOffDone(placed.ID, h, ok) }
}

// handOffDone ends the push h of timer id with its outcome, told to every
// hand-off waiting for it.
func (n *Node) handOffDone(id uint64, h *handingOff, ok bool) {
	if n.handing[id] == h {
		delete(n.handing, id)
	}
	h.first(ok)
	for _, w := range h.more {
		w(ok)
	}
}

// handOffPush pushes placed, a copy a hand-off ends, to peer
// (pushUntilHeld) while the copy is still held, then calls done with the
// last try's answer (none, when it was given up on unsent). A hand-off
// sends one message for each record it moves, and a slow receiver takes
// them at its own pace; a receiver not yet reloaded keeps the record as
// moved away, and is sent it again after its reload.
func (n *Node) handOffPush(peer string, placed *Timer, done func(ok bool, resp Response)) {
	wanted := func() bool { return n.copyOf(placed) != nil }
	again := func() bool { return n.hitIf(wanted(), probeHandOffAgain) }
	n.pushUntilHeld(peer, placed, wanted, again, func(_ tryOutcome, ok bool, resp Response) { done(ok, resp) })
}

// copyOf is the record this node holds of placed's timer when it is
// still the one a hand-off pushed (same state and version), or nil: a
// record replaced meanwhile leaves nothing of that copy to end.
func (n *Node) copyOf(placed *Timer) *Timer {
	held := n.store.Get(placed.ID)
	if held == nil || held.State != placed.State || held.Version != placed.Version {
		return nil
	}
	return held
}

// handedOff ends the copy a hand-off under view pushed once every
// replica it was pushed to holds it: a live copy is kept as moved away
// and pops no more; a tombstone is noted as handed off (tombsHanded),
// for that view only, and kept for its life.
func (n *Node) handedOff(placed *Timer, view uint64) {
	held := n.copyOf(placed)
	switch {
	case held == nil:
	case slices.Contains(held.Placement().Replicas, n.self):
		// Placed back here by a later change of view.
	case held.State == Tombstone:
		if view != n.ring.ViewID() {
			return // the later view's hand-off decides
		}
		if n.tombsHanded == nil {
			n.tombsHanded = map[uint64]uint64{}
		}
		n.tombsHanded[held.ID] = held.Version
	default:
		// Every replica holds it: this copy need not pop.
		n.hit(probeHandOffDone)
		n.release(held)
		held.entombAs(Moved)
		n.holdNext(held)
	}
}

// handOffTargets are the replicas a hand-off of t pushes it to: those
// of its placement the latest change of view added, the ones that did
// not hold the timer under the view before. The others were replicas
// before the change as well as after it: whatever they hold of the timer
// they held as its replicas, and what they miss of it is what replicas
// miss of each other without any change of view, which repair settles
// between them and the added ones. A copy the node drops once the added
// replicas hold it therefore leaves every version it held with as many
// holders as before; pushing it to the old replicas too crossed the
// network twice for every timer a join moved (docs/design.md 5). When
// the change added none (a factor above the members, say), or the node
// knows no view before this one (it started since), they are all of
// them.
func (n *Node) handOffTargets(t *Timer) []string {
	reps := t.Placement().Replicas
	if n.prevRing == nil {
		return reps
	}
	before := n.prevRing.Replicas(t.ID, t.replicationFactor())
	var added []string
	for _, r := range reps {
		if !slices.Contains(before, r) {
			added = append(added, r)
		}
	}
	if len(added) == 0 {
		return reps
	}
	return added
}

// repairServe answers POST /timers/repair.
func (n *Node) repairServe(req Request, reply func(Response)) {
	if n.refuseInternal(req, reply) {
		return
	}
	var body repairDigestBody
	if err := wire.CheckJSON(req.Body); err != nil && err != wire.ErrNotJSON {
		reply(errorResponse(err))
		return
	}
	if err := json.Unmarshal(req.Body, &body); err != nil {
		reply(badRequest("the body is not a repair message: " + err.Error()))
		return
	}
	view, err := strconv.ParseUint(body.View, 10, 64)
	if err != nil {
		reply(badRequest(fmt.Sprintf("view %q is not an unsigned decimal", body.View)))
		return
	}
	if !slices.Contains(n.repairPeers(), body.From) {
		reply(notFound(fmt.Sprintf("from %q is not a member of this node's cluster", body.From)))
		return
	}
	if view != n.ring.ViewID() {
		r := text(409, fmt.Sprintf("view %d is not this node's view of the cluster, %d", view, n.ring.ViewID()))
		r.Header[wire.HeaderReason] = headerReason(string(r.Body))
		reply(r)
		return
	}
	if len(body.Want) > 0 {
		n.repairGive(body.From, body.Want)
		reply(text(202, "Accepted"))
		return
	}
	n.heardRoom(body.From, body.Room)
	if len(body.Digests) != repairBuckets {
		reply(badRequest(fmt.Sprintf("digests has %d entries, want %d", len(body.Digests), repairBuckets)))
		return
	}
	var theirs [repairBuckets]uint64
	for i, d := range body.Digests {
		if theirs[i], err = strconv.ParseUint(d, 16, 64); err != nil {
			reply(badRequest(fmt.Sprintf("digests[%d] %q is not 16 hex digits", i, d)))
			return
		}
	}
	var after uint64
	if body.After != "" {
		if after, err = wire.ParseID(body.After); err != nil {
			reply(badRequest(fmt.Sprintf("after %q is not a timer ID", body.After)))
			return
		}
	}
	var ages repairAges
	if body.YoungFrom != "" || body.YoungTo != "" {
		from, ferr := wire.ParseID(body.YoungFrom)
		to, terr := wire.ParseID(body.YoungTo)
		if ferr != nil || terr != nil {
			reply(badRequest(fmt.Sprintf("young-from %q and young-to %q are not both versions of 16 hex digits", body.YoungFrom, body.YoungTo)))
			return
		}
		ages = repairAges{from: from, to: to}
	}
	// The first page of a round takes, in one walk of the store, the
	// digests and the records of the buckets that differ, in ID order,
	// and keeps them for the round's next pages (repairServed): a walk
	// costs about a microsecond a held record (the records are scattered
	// in memory), and a page of a round that has many costs what it
	// lists. The records the asker leaves out as young are left out here
	// too, from the digests and the list.
	key := strings.Join(body.Digests, "") + body.YoungFrom + body.YoungTo
	served := n.repairServing[body.From]
	if after == 0 || served == nil || served.key != key {
		var mine [repairBuckets]uint64
		var held [repairBuckets][]uint64
		left := false
		n.heldFor(body.From, func(t *Timer, me bool) {
			if !me {
				return
			}
			if ages.young(t.Version) {
				left = true
				return
			}
			b := repairBucket(t.ID)
			if t.State == Live {
				mine[b] += repairHash(t.ID, t.Version)
			}
			held[b] = append(held[b], t.ID)
		})
		if left {
			n.hit(probeRepairYoung)
			n.repairNeeded() // compare them once they have settled
		}
		served = &repairServed{key: key, buckets: []int{}}
		for i := range mine {
			if mine[i] != theirs[i] {
				served.buckets = append(served.buckets, i)
				served.ids = append(served.ids, held[i]...)
			}
		}
		slices.Sort(served.ids)
		if n.repairServing == nil {
			n.repairServing = map[string]*repairServed{}
		}
		n.repairServing[body.From] = served
	}
	ans := repairAnswer{Buckets: served.buckets, Entries: []repairEntry{}, Room: n.roomToSay()}
	page := cmp.Or(n.cfg.RepairPage, MaxRepairEntries)
	lo, _ := slices.BinarySearch(served.ids, after+1)
	hi := min(lo+page, len(served.ids))
	if hi < len(served.ids) {
		ans.Through = wire.FormatID(served.ids[hi-1])
	} else {
		delete(n.repairServing, body.From) // the round's last page
	}
	var listed []*Timer
	for _, id := range served.ids[lo:hi] {
		if t := n.store.Get(id); n.repairMine(t, body.From) && !ages.young(t.Version) {
			listed = append(listed, t)
		}
	}
	n.stats.RepairListed += uint64(len(listed))
	for _, t := range listed {
		state := wire.StateTombstone
		if t.State == Live {
			state = wire.StateLive
		}
		ans.Entries = append(ans.Entries, repairEntry{ID: wire.FormatID(t.ID),
			Version: strconv.FormatUint(t.Version, 10), State: state, Seq: t.Seq})
	}
	b, err := json.Marshal(&ans)
	if err != nil {
		panic("node: encoding a repair answer: " + err.Error())
	}
	reply(Response{Status: 200, Header: Header{HeaderContentType: "application/json"}, Body: b})
}

// repairGive pushes the records a peer asked for in a round.
func (n *Node) repairGive(peer string, want []string) {
	now := n.nowMs()
	for i, s := range want {
		if i == MaxRepairEntries {
			break
		}
		id, err := wire.ParseID(s)
		if err != nil {
			continue
		}
		if t := n.store.Get(id); t != nil && t.State != Moved {
			n.hit(probeRepairGive)
			n.logTimer("repair push", t, "peer", peer)
			n.stats.RepairPushes++
			placed := n.placedNow(t)
			n.replicate(peer, placed, nil, now, func(_ bool, resp Response) {
				n.noteRefusedPush(peer, placed, nil, resp)
				n.repairPushAnswered(peer, id, resp)
			})
		}
	}
}

// repairPushAnswered learns from a peer's answer to a repair push of
// timer id (repairAnswered's, repairGive's): a 409 that carries a newer
// record than the one pushed (not a collision: another timer's record
// teaches nothing) is taken here, through merge, as a pop notice's
// sender takes one (noticeAnswered). Without it a round pushed the same
// stale record every round for as long as its definition lasted: a
// replica an update's smaller factor leaves out, which missed the tell of
// it (droppedReplicas), still holds the replaced definition placed on
// itself and on the newer record's replicas, which neither list the newer
// record to it (placed elsewhere, it is no record the two compare) nor
// push it there, and answer each push with it (scenarios/README.md
// N61). Taken, the newer record is kept as moved away where it is
// placed elsewhere (merge, rule 1), so the stale copy stops popping and
// no round compares it again.
func (n *Node) repairPushAnswered(peer string, id uint64, resp Response) {
	if resp.Status != 409 || resp.Header.Get(HeaderCollision) != "" {
		return
	}
	rec, ok := n.answeredRecord(id, resp)
	if !ok {
		return
	}
	switch a := n.apply(rec); {
	case a.took:
		n.hit(probeRepairAnsweredNewer)
	case a.collision:
		// The peer's record is a create this node's is below: the peer
		// found the push older, this node finds the answer another
		// timer's. Noted, or the round pushes it again, and the peer,
		// which cannot compare the two, asks for it again, every round
		// (scenarios/README.md N66).
		n.noteRefusedRecord(peer, rec)
	}
}
