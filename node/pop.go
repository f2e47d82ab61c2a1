package node

import (
	"math/bits"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// dueOf returns when this replica acts on t next: its next pop, skewed by
// its rank, or for a tombstone (or a timer with nothing left to pop) the
// end of its life.
//
// A live record with nothing left to pop (it knows of missed pops,
// holdNext) ends by its own definition's last due, not by lastDue: the
// definition it buried (TimerExtra.Buried) is this node's alone, the
// replicas that never held it end the same live record at once, and
// repair compares live records. One replica held it live for the buried
// definition's life (hours) while the others ended it, dropped the
// tombstone, and asked for it again every round: a message storm
// (scenarios/README.md N67). Its tombstone (expire) still
// outlives the buried definition.
func (n *Node) dueOf(t *Timer) int64 {
	if at, ok := t.NextPopAt(); ok {
		return n.waitForWord(t, at+n.skew(t).Milliseconds())
	}
	return max(n.nowMs()+max(t.Interval(), n.tombstoneMin()).Milliseconds(), n.lifeEnd(t))
}

// lifeEnd is when t, a record with nothing left to pop, is past every
// replica's turn at its last pop: a tombstone's, at the last pop of any
// definition it buried too (lastDue); a live record's, at its own.
func (n *Node) lifeEnd(t *Timer) int64 {
	end := t.lastDue()
	if t.State == Live {
		end = t.Start + t.RepeatFor().Milliseconds()
	}
	return end + n.maxSkew(t).Milliseconds()
}

// maxSkew bounds how long after a due time any replica of t may still pop
// it and tell the others: the last rank of the last site, then a callback
// and a replication message. A tombstone lives at least one interval
// (api.md) and at least until the buried definition's last pop by any
// replica has passed: a replica that missed the delete (cut off by a
// net-split) then still finds the tombstone when it pops, and is repaired
// by the answer, instead of bringing the timer back on the others.
func (n *Node) maxSkew(t *Timer) time.Duration { return maxSkewOf(t, n.cfg.ReplicationTimeout) }

// maxSkewOf is maxSkew for a node whose replication timeout is given.
func maxSkewOf(t *Timer, replicationTimeout time.Duration) time.Duration {
	ranks := len(t.Placement().Replicas) * max(len(t.Placement().Sites), 1)
	return ReplicaSkew*time.Duration(ranks) + CallbackTimeout + replicationTimeout
}

// skew is how much later than the due time this replica pops t: 2 s per
// rank among the local replicas, and remote sites after every local
// replica (docs/design.md 4.10).
func (n *Node) skew(t *Timer) time.Duration {
	rank := slices.Index(t.Placement().Replicas, n.self)
	switch {
	case rank < 0:
		rank = len(t.Placement().Replicas)
	case t.Extra() != nil && t.Extra().Refused != 0:
		n.hit(probeSkewRefused)
		rank -= bits.OnesCount32(t.Extra().Refused & (1<<rank - 1))
	}
	site := max(slices.Index(t.Placement().Sites, n.cfg.LocalSite), 0)
	return ReplicaSkew * time.Duration(rank+site*len(t.Placement().Replicas))
}

// holdNext holds t until it is next due (dueOf). A record with nothing
// left to pop becomes a tombstone here, the one place where a finished
// timer turns into one, unless it knows of pops missed: it stays live,
// popping nothing, so that its notices and its answers to other replicas
// still tell of them (a tombstone would make the replicas that owe them
// drop them: TestAnotherSitesAnswerKeepsItsMissedPops), until a replica
// says they were made or its life ends (onAlarm).
func (n *Node) holdNext(t *Timer) {
	if _, ok := t.NextPopAt(); !ok && t.State == Live {
		if missed, _ := t.popMarks(); missed == 0 {
			t.entomb()
		}
	}
	n.hold(t, n.dueOf(t))
}

// hold inserts t, due at due, and counts it.
func (n *Node) hold(t *Timer, due int64) {
	n.store.Put(t, due)
	n.count(t, 1)
	n.rearm(due)
}

// reschedule moves t, held, to when it is next due after a change. A
// change that leaves it nothing to pop turns it into a tombstone (see
// holdNext), so it is uncounted before and counted again after.
func (n *Node) reschedule(t *Timer) {
	if n.store.Get(t.ID) == t {
		n.release(t)
	}
	n.holdNext(t)
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
	n.heldBytes += int64(sign) * recordBytes(t)
	if t.State != Live {
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
		switch _, more := t.nextPop(); {
		case t.State != Live:
			n.lackingTombstone(t, now)
		case more:
			n.pop(t)
		default:
			// A finished record that knew of missed pops: its life as
			// such is over, it goes on as a tombstone that says so.
			n.hit(probeAlarmMissedEnds)
			t.expire()
			n.holdNext(t)
		}
	}
	n.popping = false
	if due, ok := n.store.NextDue(); ok {
		n.armAt(due)
	}
}

// lackingTombstone holds t, a tombstone whose life is over, again while
// a replica of its timer may lack it (TimerExtra.Lacking), up to
// MaxLackingHold past its last due time: that replica may hold an older
// definition, and its notice of a pop, once it is reachable again, must
// meet the tombstone (or a repair round push it there, whose answer
// clears the mark). Dropped, the newer record was nowhere, and the
// stale replica's notice brought the replaced definition back on the
// replica that had taken the write
// (TestTombstoneOutlivesItsLifeWhileAReplicaMayLackIt). So for another
// site that may lack it (TimerExtra.SitesLacking: a delete's forward not
// answered, or answered 503 by a relay one of whose replicas did not
// answer): that site's replica's notices come to this site
// (TestDeleteTombstoneStaysWhileAnotherSiteMayLackIt).
func (n *Node) lackingTombstone(t *Timer, now int64) {
	if t.State != Tombstone || t.lacking() == 0 && t.sitesLacking() == 0 {
		return
	}
	end := t.lastDue() + n.maxSkew(t).Milliseconds() + MaxLackingHold.Milliseconds()
	if now >= end {
		return
	}
	n.hitIf(t.lacking() != 0, probeLackingTombstoneKept)
	n.hitIf(t.sitesLacking() != 0, probeTombstoneSiteKept)
	n.hold(t, min(now+n.lackingRecheck().Milliseconds(), end))
}

// lackingRecheck is how long a tombstone kept for a replica that may lack
// it waits before it is looked at again: a repair round's interval, in
// which one round with that replica pushes it there.
func (n *Node) lackingRecheck() time.Duration {
	if n.cfg.RepairInterval > 0 {
		return n.cfg.RepairInterval
	}
	return DefaultRepairInterval
}

// pop sends t's next callback (the lowest pop it owes, else pop Seq+1)
// and moves t on to its following pop, or to a tombstone after the last
// one. The pop counts as missed until its callback succeeds, so that the
// notices of later pops sent meanwhile do not tell of it as made; the
// other replicas hear of it once it succeeds. A failure costs that pop on
// this replica only: the next replica pops it at its own rank, told so by
// the notices of later pops, and this copy keeps its schedule, whether
// the callback is slow or has failed (docs/design.md 4.7).
func (n *Node) pop(t *Timer) {
	p, _ := t.nextPop()
	n.hitIf(p <= t.Seq, probePopOwed)
	due := time.UnixMilli(t.dueAt(p)).Add(n.skew(t))
	late := max(n.clock.Now().Sub(due), 0)
	n.stats.PopLatenessMs += uint64(late.Milliseconds())
	missed, owed := t.popMarks()
	if p > t.Seq {
		missed, owed = shiftMarks(missed, t.Seq, p), shiftMarks(owed, t.Seq, p)
		t.Seq = p
	}
	t.setPopMarks(missed|popBit(t.Seq, p), owed&^popBit(t.Seq, p))
	popped := *t
	if n.logsTimers() {
		n.logTimer("pop", &popped, "seq", p, "late", late)
	}
	n.holdNext(t)
	n.stats.Pops++
	req := Request{
		Method: "POST",
		URL:    popped.CallbackURI(),
		Header: Header{
			wire.HeaderSequenceNumber: strconv.FormatUint(uint64(p), 10),
			wire.HeaderTimerID:        wire.FormatID(popped.ID),
		},
		Body:    []byte(popped.Opaque()),
		MaxWait: n.handOnAfter(&popped),
		Late:    late,
	}
	n.send(req, CallbackTimeout, func(resp Response, err error) {
		if err != nil || resp.Status < 200 || resp.Status > 299 {
			n.hit(probeCallbackFailed)
			n.stats.CallbackFailures++
			n.log.Info("callback failed", "timer", n.wireID(&popped), "seq", p, "status", resp.Status, "err", err)
			return
		}
		// The record may have moved on meanwhile (notices, later pops),
		// but while it holds this pop, it is the one to tell from.
		if n.logsTimers() {
			n.logTimer("callback", &popped, "seq", p, "status", resp.Status)
		}
		cur := n.store.Get(popped.ID)
		if cur == nil || cur.State != Live || !holdsPop(cur, &popped, p) {
			cur = nil
		}
		n.popMade(cur, &popped, p)
	})
}

// handOnAfter is how long a pop of t may wait to be sent before it is
// better left to the next holder, which pops it ReplicaSkew after this
// one: a pop sent later would most likely be made twice. A pop is left
// only to a later holder this node knows holds the definition: a replica
// ranked after it at its site, or a site after its own, that answered
// this node a message of it (Timer.heard) and is not
// marked since as may lack it (TimerExtra.Lacking: a write or a
// repopulating request said it may not hold it; SitesLacking). Without
// such word, this holder pops last, 0: its pop waits. Leaving a pop
// unless it had heard that a later holder lacked the timer shed it for
// one that never took it when that word was lost or came after the
// pop's decision (scenarios/README.md N29, N34, N36, and
// TestPopLeftOnlyToAHolderHeardFrom). The last holder, at the last site,
// and a holder the placement leaves out (an old replica handing the timer
// off, docs/design.md 4.8, which skew ranks after every replica), have
// nobody to leave it to (TestHandOffHolderPopWaitsToBeSent).
func (n *Node) handOnAfter(t *Timer) time.Duration {
	rank := slices.Index(t.Placement().Replicas, n.self)
	site := max(slices.Index(t.Placement().Sites, n.cfg.LocalSite), 0)
	if (rank < 0 || rank == len(t.Placement().Replicas)-1) && site >= len(t.Placement().Sites)-1 {
		n.hit(probePopLastReplica)
		return 0
	}
	if len(t.Placement().Replicas) > 31 || len(t.Placement().Sites) > 31 {
		return ReplicaSkew
	}
	var replicas uint32
	if rank >= 0 {
		replicas = laterThan(rank, len(t.Placement().Replicas)) & t.heardReplicas() &^ t.lacking()
	}
	sites := laterThan(site, len(t.Placement().Sites)) & t.heardSites() &^ t.sitesLacking()
	if replicas == 0 && sites == 0 {
		n.hit(probePopLastHolder)
		return 0
	}
	return ReplicaSkew
}

// laterThan marks the positions after i in a list of count.
func laterThan(i, count int) uint32 {
	return (uint32(1)<<count - 1) &^ (uint32(1)<<(i+1) - 1)
}

// holdsPop reports whether cur, the record held now, holds pop p of
// popped, the record a pop was sent from: the same version, or another
// version of the same definition that has reached p, on the same start
// or naming the same first try (one write), as a retry of the write
// that took the first try's pops does (carry):
// its pop p is the same callback at the same due time. The retry kept
// the pop's mark as missed while its callback was in flight; left there
// once it succeeded, every later notice told of the pop as missed, and a
// replica that had not attempted it popped it again
// (TestPopMadeUnderTheFirstTryCountsForTheRetry).
func holdsPop(cur, popped *Timer, p uint32) bool {
	return cur.Version == popped.Version ||
		cur.def != 0 && cur.def == popped.def && p <= cur.Seq &&
			(cur.Start == popped.Start || cur.firstTry() == popped.firstTry())
}

// popMade records that pop p was made and tells the other replicas, from
// the held copy while it still pops this definition (it may know more
// than the snapshot taken at the pop), else from the snapshot: a copy
// that made its last pop is a tombstone already, but its notice must
// still tell of the pops it missed before.
func (n *Node) popMade(cur, popped *Timer, p uint32) {
	from := popped
	if cur != nil && cur.State == Live {
		from = cur
	}
	missed, owed := from.popMarks()
	from.setPopMarks(missed&^popBit(from.Seq, p), owed&^popBit(from.Seq, p))
	if from == cur {
		n.changedInPlace(cur)
		if _, more := cur.nextPop(); !more {
			n.reschedule(cur) // a finished record with nothing missed now ends
		}
	}
	n.notifyPopped(from)
}

// notifyPopped tells the other replicas how far t has popped, so that
// they skip the pops made and owe the ones missed; once nothing is left
// to pop or owe, it sends them the tombstone.
func (n *Node) notifyPopped(t *Timer) {
	notice := *t
	if missed, _ := notice.popMarks(); missed == 0 {
		if _, more := notice.NextPopAt(); !more {
			n.hit(probeNoticeTombstone)
			notice.entomb()
		}
	}
	if n.logsTimers() {
		n.logTimer("notice", &notice, "seq", notice.Seq, "replicas", notice.Placement().Replicas)
	}
	if n.hasListeners(&notice) {
		n.sendNotice(notice)
	}
}

// hasListeners reports whether a notice of t goes anywhere: to a replica
// other than this node, or to another site. A timer of one replica and
// one site (rf 1, the default) has none, and its pops send no notice.
func (n *Node) hasListeners(t *Timer) bool {
	for _, peer := range t.Placement().Replicas {
		if peer != n.self {
			return true
		}
	}
	for _, site := range n.cfg.RemoteSites {
		if slices.Contains(t.Placement().Sites, site.Name) {
			return true
		}
	}
	return false
}

// sendNotice sends notice to the other replicas and sites. It takes its
// own copy, which the answers' handlers share: notifyPopped's stays on
// the stack when nobody is told.
func (n *Node) sendNotice(notice Timer) {
	now := n.nowMs()
	spread := false // whether an answer has had the notice's recipients repaired
	for _, peer := range notice.Placement().Replicas {
		if peer != n.self {
			n.replicate(peer, &notice, nil, now, func(_ bool, resp Response) { n.noticeAnswered(peer, &notice, &spread, resp) })
		}
	}
	n.forwardToSites(&notice)
}

// noticeAnswered learns from a replica's answer to a pop notice: a newer
// definition it holds (this replica missed a delete or an update, say
// across a net-split, and would otherwise pop it until repeat-for ends),
// or which pops of the same one it made. An earlier start of the same
// one is taken from any answer (startAnswered).
//
// A notice answered with a newer record was stale, and the other
// replicas it reached may have taken it: the newer record this replica
// then holds is spread to them (spreadRepair), once a notice (spread),
// whether the answer brought it or this replica held it already. Spread
// only when an answer changed the record held, a replica that took the
// newer record from a repair push while its notice was out left another
// stale replica holding the old definition it had told it of, which
// popped it at its own turn (fresh seed 9452775, scenarios/README.md
// N71; TestStaleNoticeIsRepairedWhereverItWasTaken).
func (n *Node) noticeAnswered(from string, notice *Timer, spread *bool, resp Response) {
	if resp.Status == 409 && resp.Header.Get(HeaderCollision) != "" {
		n.hit(probeNoticeCollision)
		// The peer holds another timer under this ID: neither record may
		// replace the other (see collides).
		n.log.Warn("pop notice met another timer under the same ID", "timer", n.wireID(notice), "peer", from)
		n.markRefusing(notice, from, true)
		return
	}
	if resp.Status == 409 {
		if rec, ok := n.answeredRecord(notice.ID, resp); ok {
			n.hit(probeNoticeNewer)
			before := n.store.Get(notice.ID)
			n.apply(rec)
			if held := n.store.Get(notice.ID); held != nil && (held != before || !*spread && held.Version > notice.Version) {
				*spread = true
				n.hit(probeNoticeRepair)
				n.spreadRepair(held, notice, from)
			}
		}
		return
	}
	if resp.Status >= 200 && resp.Status <= 299 {
		n.markRefusing(notice, from, false)
	}
}

// poppedAnswered takes what a replica's answer to any record t of a
// definition that missed pops says of them (HeaderPopped, which apply
// answers to every such record, not to notices alone): a pop notice, a
// repair push, a pass-on or a hand-off alike. A pop the answering
// replica made is made, whichever message carried the word; a sender
// that heard it only in the answer to a repair push popped it again at
// its own turn (fresh seeds 9532021 and 9532062, scenarios/README.md
// N72).
func (n *Node) poppedAnswered(t *Timer, resp Response) {
	if popped := resp.Header.Get(HeaderPopped); popped != "" && resp.Status >= 200 && resp.Status <= 299 {
		n.learnPopped(t, popped)
	}
}

// learnPopped merges a replica's answer to a record that told of missed
// pops: how far its record of the definition popped, and which pops it
// knows were missed (HeaderPopped). Pops the answer knows were made are
// no longer missed here, and later notices stop telling of them.
//
// A copy kept as moved away learns the answer too (learnMoved), as it
// learns a record: its record was sent as the live definition it is (a
// repair push, a hand-off), and placed back it would owe a pop the
// answer said was made (fresh seed 9598630, scenarios/README.md N75).
func (n *Node) learnPopped(notice *Timer, popped string) {
	seq, missed, ok := parsePopped(popped)
	held := n.store.Get(notice.ID)
	if !ok || held == nil || held.Version != notice.Version || seq > held.Seq {
		return
	}
	told := &Timer{ID: held.ID, Version: held.Version, Seq: seq}
	if held.State == Moved {
		told.setPopMarks(missed, missed)
		if learnMoved(held, told) {
			n.hit(probeMovedLearns)
			n.changedInPlace(held) // kept on disk with the record
		}
		return
	}
	if held.State != Live {
		return
	}
	n.hit(probeNoticePopped)
	// An answer below what this replica holds now: it popped on while
	// the notice was out.
	n.hitIf(seq < held.Seq, probeNoticePoppedBehind)
	told.setPopMarks(missed, 0)
	var probes probeHits
	changed := mergeMarks(held, told, &probes)
	n.hits(&probes)
	if changed {
		n.reschedule(held)
	}
}

// parsePopped reads an X-Chronos-Popped value, "<seq> <missed>", both
// decimal 32-bit; ok is false for anything else.
func parsePopped(v string) (seq, missed uint32, ok bool) {
	seqText, missedText, found := strings.Cut(v, " ")
	s, err1 := strconv.ParseUint(seqText, 10, 32)
	m, err2 := strconv.ParseUint(missedText, 10, 32)
	if !found || err1 != nil || err2 != nil {
		return 0, 0, false
	}
	return uint32(s), uint32(m), true
}

// answeredRecord is the newer record of timer id a replica answered a
// notice or a forward with (a 409 whose body is a replication body);
// ok is false when the answer carries none.
func (n *Node) answeredRecord(id uint64, resp Response) (*Timer, bool) {
	spec, repl, err := wire.Parse(resp.Body)
	if err != nil || repl == nil || len(repl.Replicas) == 0 || n.aheadOfClock(repl.Version) {
		return nil, false
	}
	return n.fromReplication(id, spec, repl), true
}

// markRefusing notes whether replica from holds another timer under the
// notice's ID (it answered with a collision) or this one (it took the
// notice): a refusing replica will never pop this timer, so it no longer
// counts in this replica's rank.
func (n *Node) markRefusing(notice *Timer, from string, refusing bool) {
	held := n.markReplica(notice, from, refusing, false, func(e *TimerExtra) *uint32 { return &e.Refused })
	if held == nil {
		return
	}
	n.hitIf(!refusing, probeRefusingCleared)
	n.hitIf(refusing, probeRefusingMarked)
	n.reschedule(held)
}

// markReplica sets or clears (on) the mark of replica peer, in the mask
// of TimerExtra that field picks (Refused, Lacking: by position in
// Placement.Replicas), on the record this node holds live of t's
// definition, or, when tomb is set and the mark is cleared, on its
// tombstone (which keeps the marks it had as a live record: see
// lackingTombstone). It returns that record when the mark changed, else
// nil. Extra is copied, never changed in place: snapshots of a record (a
// pop in flight, a notice) share it.
func (n *Node) markReplica(t *Timer, peer string, on, tomb bool, field func(*TimerExtra) *uint32) *Timer {
	return n.markAt(t, func(p *Placement) int { return slices.Index(p.Replicas, peer) }, on, tomb, field)
}

// markAt is markReplica for the position index finds in the held
// record's placement (SitesLacking: a site's, in Placement.Sites).
func (n *Node) markAt(t *Timer, index func(*Placement) int, on, tomb bool, field func(*TimerExtra) *uint32) *Timer {
	held := n.store.Get(t.ID)
	if held == nil || held.Version != t.Version || held.State != Live && !(held.State == Tombstone && tomb && !on) {
		return nil
	}
	i := index(held.Placement())
	if i < 0 || i >= 32 {
		return nil
	}
	if (held.Extra() != nil && *field(held.Extra())&(1<<i) != 0) == on {
		return nil // the common case, on every answer: nothing to copy
	}
	var e TimerExtra
	if held.Extra() != nil {
		e = *held.Extra()
	}
	*field(&e) ^= 1 << i
	held.setExtra(e)
	return held
}

// spreadRepair passes a newer record learnt from a 409 answer to a pop
// notice on to the other replicas: they were sent the same stale notice
// (and may have taken it, a node that had lost or never held the timer),
// and would otherwise pop the old definition at their rank until their own
// notice is answered.
func (n *Node) spreadRepair(held, notice *Timer, from string) {
	now := n.nowMs()
	sent := map[string]bool{n.self: true, from: true}
	for _, peers := range [][]string{notice.Placement().Replicas, held.Placement().Replicas} {
		for _, peer := range peers {
			if !sent[peer] {
				sent[peer] = true
				n.replicate(peer, held, nil, now, nil)
			}
		}
	}
}
