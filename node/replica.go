package node

import (
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Supersedes reports whether incoming should replace existing, both being
// records of the same timer ID. This is the conflict rule every replica
// applies, whether the record comes from a client write, a replica's pop
// notice, a tombstone or (later) a resync:
//
//   - a later client write wins: Version orders definitions;
//   - within one definition, the record that has popped further wins: Seq
//     orders pops, so a stale or duplicated pop notice changes nothing;
//   - a tombstone of a definition beats that definition at any Seq (the
//     final pop, or the record dropped by rebalancing) and is itself final,
//     except a dormant one (a failed callback), which yields to its own
//     definition as far popped, and to its tombstone.
func Supersedes(existing, incoming *Timer) bool {
	switch {
	case existing == nil:
		return true
	case incoming.Version != existing.Version:
		return incoming.Version > existing.Version
	case existing.Tombstone:
		return existing.Dormant && (incoming.Tombstone || incoming.Seq >= existing.Seq)
	case incoming.Tombstone:
		return true
	default:
		return incoming.Seq > existing.Seq
	}
}

// applied is the outcome of offering a record to a replica.
type applied struct {
	// ok is false only when the node could not take the timer (full).
	ok bool
	// newer is the definition held when the record was of an older
	// version: a writing proxy retries above it, a popping replica that
	// missed a delete or update adopts it (read repair).
	newer *Timer
	// collision is set when the node holds another timer under the ID.
	collision bool
}

// collides reports whether incoming and existing, two records under one
// ID, belong to different timers: two nodes issued the same ID (their
// instance numbers clashed), or a client created a timer with a PUT to an
// ID a node later issued. Such records must never replace each other.
//
//   - Records of one version are one client write: if they fingerprint
//     different definitions, the write was two creates.
//   - A record whose version is its ID is a create (or the create's final
//     or withdrawn tombstone). Every later write of that timer has a higher
//     version, so a record held below it belongs to another timer.
func collides(existing, incoming *Timer) bool {
	switch {
	case existing == nil:
		return false
	case existing.Version == incoming.Version:
		return existing.def != 0 && incoming.def != 0 && existing.def != incoming.def
	default:
		return incoming.Version == incoming.ID && existing.Version < incoming.Version
	}
}

// apply stores t (built from a client write or a replication message) if
// it supersedes what the node holds.
func (n *Node) apply(t *Timer) applied {
	n.ids.observe(t.Version, n.nowMs())
	if !t.Tombstone && !slices.Contains(t.Placement.Replicas, n.self) {
		// Passive rebalancing: this node is no longer a replica. Keep a
		// tombstone of the definition so that stale copies of it cannot
		// bring the timer back here.
		t.Tombstone = true
	}
	existing := n.store.Get(t.ID)
	if existing == nil && !t.Tombstone && t.Seq > 0 && t.lastDue()+n.maxSkew(t).Milliseconds() < n.nowMs() {
		// A pop notice of a timer every pop of which, at every rank, is
		// past: this replica forgot it after its last pop (its tombstone
		// expired) or never held it, and a paused or cut-off replica
		// tells of an old pop. Taking it would pop again, late, what was
		// popped; the sender pops what it has left itself. Keep it as a
		// tombstone, so that further stale notices meet one.
		t.Tombstone = true
	}
	if collides(existing, t) {
		n.stats.IDCollisions++
		return applied{collision: true}
	}
	if t.Tombstone && existing != nil && t.def == 0 && t.Interval == 0 {
		// A client delete does not know the definition it buries; the
		// tombstone's life is measured from it (see dueOf). A pop notice
		// of a one-shot timer (interval 0) is a tombstone too, but it
		// carries its own definition, which must stay as it is.
		t.Start, t.Interval, t.RepeatFor = existing.Start, existing.Interval, existing.RepeatFor
	}
	if existing != nil && existing.Version == t.Version && existing.Start != t.Start {
		n.earliestStart(existing, t)
	}
	if !Supersedes(existing, t) {
		if existing.Tombstone && !t.Tombstone {
			n.outlive(existing, t)
		}
		if existing.Version > t.Version {
			// The sender is behind: a client write from a node whose
			// clock lags, or a replica that missed a later write. If it
			// tells of pops of the older definition, remember them for
			// a retry of that definition (see keepProgress).
			if t.Seq > 0 && t.def != 0 && !t.Dormant {
				told := Progress{Def: t.def, Seq: t.Seq, Start: t.Start, Interval: t.Interval, RepeatFor: t.RepeatFor}
				switch {
				case t.def != existing.def:
					existing.replaced(told)
				case !existing.Tombstone && n.carry(told, existing):
					// The sender popped the first try of the write
					// this replica holds the retry of.
					n.reschedule(existing)
				}
			}
			return applied{ok: true, newer: existing}
		}
		return applied{ok: true}
	}
	if existing == nil && n.store.Len() >= n.cfg.Limits.MaxTimers {
		// A tombstone with nothing to bury is not worth refusing.
		return applied{ok: t.Tombstone}
	}
	if existing != nil {
		t.bury(existing.lastDue())
		n.keepProgress(existing, t)
	}
	n.release(existing)
	n.hold(t, n.dueOf(t))
	return applied{ok: true}
}

// keepProgress carries the pops already made over to a newer version of
// the same definition that a proxy wrote again within moments: a client
// write retried above a concurrent write's version (rewrite) is one client
// write, and must not pop again what this replica popped of its first
// version, whether the replica still holds that version or the concurrent
// write has replaced it meanwhile (Extra.Replaced). A later PUT of the
// same definition has a start of its own, further off, and starts over.
// Otherwise it notes existing's progress in t, for such a retry to come.
// A pop whose callback failed here counts as made: one attempt per
// replica per pop, the next replica's turn is the redundancy.
func (n *Node) keepProgress(existing, t *Timer) {
	prior := Progress{Def: existing.def, Seq: existing.Seq, Start: existing.Start,
		Interval: existing.Interval, RepeatFor: existing.RepeatFor}
	if prior.Def != t.def && existing.Extra != nil {
		prior = existing.Extra.Replaced
	}
	if t.Tombstone || t.def == 0 || prior.Def != t.def {
		if existing.Seq > 0 && existing.def != 0 && existing.def != t.def {
			t.replaced(Progress{Def: existing.def, Seq: existing.Seq, Start: existing.Start,
				Interval: existing.Interval, RepeatFor: existing.RepeatFor})
		}
		return
	}
	n.carry(prior, t)
}

// carry gives t, a write of definition prior.Def, the pops of prior when
// t is a retry of the same client write that is behind it. It reports
// whether t changed. A retry starts at most retryWindow after the first
// try; starts also differ by a millisecond or two either way when they
// were rebuilt from deltas on nodes whose clocks differ, so the window is
// taken both ways: the same definition written twice so close together
// is one write to the client too.
func (n *Node) carry(prior Progress, t *Timer) bool {
	switch {
	case prior.Def != t.def || prior.Seq <= t.Seq || prior.Interval != t.Interval || prior.RepeatFor != t.RepeatFor:
		return false
	}
	if d := t.Start - prior.Start; d < -n.retryWindow().Milliseconds() || d > n.retryWindow().Milliseconds() {
		return false
	}
	t.Start, t.Seq = prior.Start, prior.Seq
	return true
}

// retryWindow bounds how much later a proxy's retry of a write starts
// than its first try: one replication round per try.
func (n *Node) retryWindow() time.Duration {
	return n.cfg.ReplicationTimeout * (maxWriteRetries + 1)
}

// outlive keeps tombstone alive until the last pop of stale, a definition
// it buries that some replica still holds and pops, has passed: every
// notice of it then meets the tombstone and is repaired by the 409 answer.
// Without this a tombstone that buried nothing known here (a delete that
// reached a replica that had missed the create) lives only TombstoneMin,
// and a later stale notice would bring the timer back.
func (n *Node) outlive(tombstone, stale *Timer) {
	if end := stale.lastDue(); end > tombstone.lastDue() {
		tombstone.bury(end)
		n.reschedule(tombstone)
	}
}

// earliestStart gives both records of one definition the earlier of their
// start times. Every replica rebuilds the start from start-time-delta when
// a message is processed, so a message that was held up (a paused node, a
// clogged link) makes it late by the delay, never early; without this the
// lateness would spread through pop notices and stay for good.
func (n *Node) earliestStart(existing, incoming *Timer) {
	if incoming.Start < existing.Start && (!existing.Tombstone || existing.Dormant) {
		existing.Start = incoming.Start
		n.reschedule(existing)
	}
	incoming.Start = min(incoming.Start, existing.Start)
}

// dueOf returns when this replica acts on t next: its next pop, skewed by
// its rank, or for a tombstone (or a timer with nothing left to pop) the
// end of its life.
func (n *Node) dueOf(t *Timer) int64 {
	if at, ok := t.NextPopAt(); ok {
		return at + n.skew(t).Milliseconds()
	}
	t.Tombstone = true
	return max(n.nowMs()+max(t.Interval, TombstoneMin.Milliseconds()), t.lastDue()+n.maxSkew(t).Milliseconds())
}

// maxSkew bounds how long after a due time any replica of t may still pop
// it and tell the others: the last rank of the last site, then a callback
// and a replication message. A tombstone lives at least one interval
// (api.md) and at least until the buried definition's last pop by any
// replica has passed: a replica that missed the delete (cut off by a
// net-split) then still finds the tombstone when it pops, and is repaired
// by the answer, instead of bringing the timer back on the others.
func (n *Node) maxSkew(t *Timer) time.Duration {
	ranks := len(t.Placement.Replicas) * max(len(t.Placement.Sites), 1)
	return ReplicaSkew*time.Duration(ranks) + CallbackTimeout + n.cfg.ReplicationTimeout
}

// skew is how much later than the due time this replica pops t: 2 s per
// rank among the local replicas, and remote sites after every local
// replica (docs/design.md 4.10).
func (n *Node) skew(t *Timer) time.Duration {
	rank := slices.Index(t.Placement.Replicas, n.self)
	switch {
	case rank < 0:
		rank = len(t.Placement.Replicas)
	case t.Extra != nil && t.Extra.Refused != 0:
		rank -= bits.OnesCount32(t.Extra.Refused & (1<<rank - 1))
	}
	site := max(slices.Index(t.Placement.Sites, n.cfg.LocalSite), 0)
	return ReplicaSkew * time.Duration(rank+site*len(t.Placement.Replicas))
}

// hold inserts t, due at due, and counts it.
func (n *Node) hold(t *Timer, due int64) {
	n.store.Put(t, due)
	n.count(t, 1)
	n.rearm(due)
}

// reschedule moves t, held, to when it is next due after a change. A
// change that leaves it nothing to pop turns it into a tombstone (see
// dueOf), so it is uncounted before and counted again after.
func (n *Node) reschedule(t *Timer) {
	if n.store.Get(t.ID) == t {
		n.release(t)
	}
	n.hold(t, n.dueOf(t))
}

// release removes t, if held, and uncounts it.
func (n *Node) release(t *Timer) {
	if t == nil {
		return
	}
	n.store.Remove(t.ID)
	n.count(t, -1)
}

func (n *Node) count(t *Timer, sign int) {
	if t.Tombstone {
		n.stats.Tombstones += sign
		return
	}
	n.stats.Timers += sign
	for _, tag := range t.Tags() {
		n.stats.Tags[tag.Type] += sign * tag.Count
		if n.stats.Tags[tag.Type] == 0 {
			delete(n.stats.Tags, tag.Type)
		}
	}
}

// rearm makes sure the alarm fires no later than due.
func (n *Node) rearm(due int64) {
	if n.popping || n.alarm != nil && n.alarmAt <= due {
		return
	}
	n.armAt(due)
}

func (n *Node) armAt(due int64) {
	if n.alarm != nil {
		n.alarm.Stop()
	}
	n.alarmGen++
	gen := n.alarmGen
	d := max(time.UnixMilli(due).Sub(n.clock.Now()), 0)
	n.alarm = n.clock.AfterFunc(d, func() { n.onAlarm(gen) })
	n.alarmAt = due
}

// onAlarm pops everything due. Alarms that were replaced are ignored: a
// stopped alarm may still fire.
func (n *Node) onAlarm(gen uint64) {
	if gen != n.alarmGen {
		return
	}
	n.alarm = nil
	now := n.nowMs()
	n.popping = true
	n.popBuf = n.store.PopDue(now, n.popBuf[:0])
	for i, t := range n.popBuf {
		n.popBuf[i] = nil
		n.count(t, -1)
		switch {
		case t.Tombstone:
		case t.calling:
			// The callback of the pop before has not answered yet. Its
			// answer decides this one: a success pops it at once, a
			// failure leaves it, and the ones after, to the next
			// replica. Popping it now would send a notice of it that
			// tells the other replicas the failed one was made too.
			n.hold(t, now+CallbackTimeout.Milliseconds())
		default:
			n.pop(t, now)
		}
	}
	n.popping = false
	if due, ok := n.store.NextDue(); ok {
		n.armAt(due)
	}
}

// pop sends t's next callback and moves t on to its following pop, or to
// a tombstone after the last one. The other replicas hear of it only when
// the callback succeeds; on failure this replica drops its copy so that
// the next replica pops (docs/design.md 4.7).
func (n *Node) pop(t *Timer, now int64) {
	if at, ok := t.NextPopAt(); ok {
		n.stats.PopLatenessMs += uint64(max(now-at-n.skew(t).Milliseconds(), 0))
	}
	t.Seq++
	t.calling = true
	popped := *t
	n.hold(t, n.dueOf(t))
	n.stats.Pops++
	req := Request{
		Method: "POST",
		URL:    popped.URI,
		Header: Header{
			HeaderSequenceNumber: strconv.FormatUint(uint64(popped.Seq), 10),
			HeaderTimerID:        FormatID(popped.ID),
		},
		Body: []byte(popped.Opaque),
	}
	n.send(req, CallbackTimeout, func(resp Response, err error) {
		// The record's Seq may have moved on meanwhile (a notice carried
		// over by carry), but while it is this version, the pop it
		// waits for is this one.
		if cur := n.store.Get(popped.ID); cur != nil && cur.calling && cur.Version == popped.Version {
			cur.calling = false
			defer n.reschedule(cur) // the next pop may have waited
		}
		if err != nil || resp.Status < 200 || resp.Status > 299 {
			n.callbackFailed(&popped, resp, err)
			return
		}
		n.notifyPopped(&popped)
	})
}

func (n *Node) callbackFailed(popped *Timer, resp Response, err error) {
	n.stats.CallbackFailures++
	n.log.Info("callback failed", "timer", popped.ID, "seq", popped.Seq, "status", resp.Status, "err", err)
	cur := n.store.Get(popped.ID)
	if cur != nil && cur.Version == popped.Version && cur.Seq == popped.Seq && !cur.Dormant {
		// Drop the copy but keep it dormant: without it a replica that
		// missed this definition (cut off from its write) would find
		// nothing newer here, and its stale pops would bring the old
		// definition back on every replica whose callback failed.
		n.release(cur)
		cur.Tombstone, cur.Dormant = true, true
		n.hold(cur, n.dueOf(cur))
	}
}

// notifyPopped tells the other replicas that pop Seq happened, so that they
// skip it; after the last pop it sends them the tombstone.
func (n *Node) notifyPopped(popped *Timer) {
	notice := *popped
	if _, more := notice.NextPopAt(); !more {
		notice.Tombstone = true
	}
	now := n.nowMs()
	for _, peer := range notice.Placement.Replicas {
		if peer != n.self {
			n.replicate(peer, &notice, nil, now, func(_ bool, resp Response) { n.noticeAnswered(peer, &notice, resp) })
		}
	}
	n.forwardToSites(&notice, now)
}

// noticeAnswered learns from a replica's answer to a pop notice: a newer
// definition it holds (this replica missed a delete or an update, say
// across a net-split, and would otherwise pop it until repeat-for ends),
// or an earlier start of the same one (see earliestStart).
func (n *Node) noticeAnswered(from string, notice *Timer, resp Response) {
	if resp.Status == 409 && resp.Header.Get(HeaderCollision) != "" {
		// The peer holds another timer under this ID: neither record may
		// replace the other (see collides).
		n.log.Warn("pop notice met another timer under the same ID", "timer", FormatWireID(notice.ID, 0), "peer", from)
		n.markRefusing(notice, from, true)
		return
	}
	if resp.Status == 409 {
		spec, repl, err := ParseBody(resp.Body)
		if err == nil && repl != nil && len(repl.Replicas) > 0 {
			before := n.store.Get(notice.ID)
			n.apply(n.fromReplication(notice.ID, spec, repl))
			if held := n.store.Get(notice.ID); held != nil && held != before {
				n.spreadRepair(held, notice, from)
			}
		}
		return
	}
	if resp.Status >= 200 && resp.Status <= 299 {
		n.markRefusing(notice, from, false)
	}
	delta, err := strconv.ParseInt(resp.Header.Get(HeaderStartDelta), 10, 64)
	held := n.store.Get(notice.ID)
	if err != nil || held == nil || held.Version != notice.Version {
		return
	}
	n.earliestStart(held, &Timer{Start: n.startMs() + delta})
}

// markRefusing notes whether replica from holds another timer under the
// notice's ID (it answered with a collision) or this one (it took the
// notice): a refusing replica will never pop this timer, so it no longer
// counts in this replica's rank.
func (n *Node) markRefusing(notice *Timer, from string, refusing bool) {
	held := n.store.Get(notice.ID)
	if held == nil || held.Version != notice.Version || held.Tombstone {
		return
	}
	i := slices.Index(held.Placement.Replicas, from)
	if i < 0 || i >= 32 || (held.Extra != nil && held.Extra.Refused&(1<<i) != 0) == refusing {
		return
	}
	if held.Extra == nil {
		held.Extra = &TimerExtra{}
	}
	held.Extra.Refused ^= 1 << i
	n.reschedule(held)
}

// spreadRepair passes a newer record learnt from a 409 answer to a pop
// notice on to the other replicas: they were sent the same stale notice
// (and may have taken it, a node that had lost or never held the timer),
// and would otherwise pop the old definition at their rank until their own
// notice is answered.
func (n *Node) spreadRepair(held, notice *Timer, from string) {
	now := n.nowMs()
	sent := map[string]bool{n.self: true, from: true}
	for _, peers := range [][]string{notice.Placement.Replicas, held.Placement.Replicas} {
		for _, peer := range peers {
			if !sent[peer] {
				sent[peer] = true
				n.replicate(peer, held, nil, now, nil)
			}
		}
	}
}

// replicate sends t to peer with the internal PUT; done, if not nil,
// receives whether the peer applied it. body, if not nil, is t encoded.
func (n *Node) replicate(peer string, t *Timer, body []byte, now int64, done func(ok bool, resp Response)) {
	n.stats.ReplicationsSent++
	if body == nil {
		body = EncodeReplication(t, now)
	}
	req := n.internalPut(peer, FormatWireID(t.ID, n.ring.Bloom(t.Placement.Replicas)), body)
	n.send(req, n.cfg.ReplicationTimeout, func(resp Response, err error) {
		if done != nil {
			done(err == nil && resp.Status/100 == 2, resp)
		}
	})
}

// placement interns a replica and site list.
func (n *Node) placement(replicas, sites []string) *Placement {
	key := strings.Join(replicas, ",") + "|" + strings.Join(sites, ",")
	if p, ok := n.placements[key]; ok {
		return p
	}
	p := &Placement{Replicas: slices.Clone(replicas), Sites: slices.Clone(sites)}
	n.placements[key] = p
	return p
}
