package checker

import (
	"fmt"
	"slices"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// Told is a record of a definition that had popped, handed to node Node
// by node From in an internal message (a pop notice, a repair push, a
// hand-off), as the simulator delivered it: the message, never the
// receiver's answer. Seq is how far the sender's record had popped and
// Missed the pops up to Seq it knew were not made (bit i: pop Seq-i,
// docs/design.md 4.7); so the receiver was told that every other pop of
// that window was made. A notice is sent once a pop's callback succeeded,
// and a pop counts as missed until then, so the word is true when it is
// sent, however late it arrives.
type Told struct {
	// At is when the receiver was handed the message (after any wait in
	// its inbound queue), Sent when its sender sent it; for an answer to
	// a record Node sent (X-Chronos-Popped, 4.7), At is when Node took
	// the answer, and Sent is -1.
	At, Sent   time.Duration
	From, Node string
	// Timer is the timer the message named, Opaque the definition's
	// body: the definition whose pops it tells of.
	Timer  uint64
	Opaque string
	Seq    int
	Missed uint32
	// Held is whether the receiver held any record of the timer (live,
	// a tombstone, a copy moved away) when it was handed the message;
	// false for an answer (Sent -1).
	Held bool
	// StartDelta is the record's start as its sender wrote it, relative
	// to when it built the message (start-time-delta): the receiver
	// rebuilds the start as its own time less it, so the start it takes
	// is no earlier than At + StartDelta. 0 for an answer.
	StartDelta time.Duration
	// RF is the replication factor the record carried (0: none), by
	// which its receiver places it, and counts the ranks whose turns
	// its pops wait for.
	RF int
}

// toldWindow is how many pops up to Seq a record's marks cover (the
// node's MissedWindow): of a pop further below, the record says nothing.
const toldWindow = 32

// saysMade reports whether the record t tells its receiver that pop k
// was made.
func (t Told) saysMade(k int) bool {
	return k <= t.Seq && t.Seq-k < toldWindow && t.Missed&(1<<(t.Seq-k)) == 0
}

// toldIndex files History.Told by receiver and timer, and the requests
// recorded as refused by sender, receiver, timer and sending time.
type toldIndex struct {
	by      map[toldKey][]int
	refused map[refusedKey]bool
	// late holds the Late faults by link and timer (see toldAge).
	late map[refusedKey][]Fault
	// judged counts the deliveries of duplicated pops, excused by a fault
	// around the pop, that checkTold held to a record their replica had
	// been handed (Coverage.Told).
	judged map[int]bool
}

type toldKey struct {
	node  string
	timer uint64
}

type refusedKey struct {
	from, to string
	timer    uint64
	sent     time.Duration
}

func (x *index) toldFiled() *toldIndex {
	if x.told != nil {
		return x.told
	}
	ti := &toldIndex{by: map[toldKey][]int{}, refused: map[refusedKey]bool{}, judged: map[int]bool{}, late: map[refusedKey][]Fault{}}
	for i, t := range x.h.Told {
		k := toldKey{t.Node, t.Timer}
		ti.by[k] = append(ti.by[k], i)
	}
	for _, f := range x.h.Faults {
		if f.Kind == Lost && f.Timer != 0 && len(f.Nodes) > 0 && len(f.Peers) > 0 {
			ti.refused[refusedKey{f.Nodes[0], f.Peers[0], f.Timer, f.At - f.Age}] = true
		}
		if _, record, ok := lateAge(f); ok && record {
			k := refusedKey{f.Nodes[0], f.Peers[0], f.Timer, 0}
			ti.late[k] = append(ti.late[k], f)
		}
	}
	x.told = ti
	return ti
}

// toldBefore returns the records of d's definition handed to node
// before made, not refused, that say pop k was made when it was surely
// due on them (wordDue), and whether node was handed any record of d
// before made.
func (x *index) toldBefore(d *def, node string, k int, made time.Duration) (words []Told, any bool) {
	ti := x.toldFiled()
	for _, i := range ti.by[toldKey{node, d.timer}] {
		r := x.h.Told[i]
		if r.At >= made {
			break
		}
		// A record its receiver refused tells it nothing: refused from
		// its sender, or, a site's relay placing another site's record
		// (which applies it to itself and answers for its whole site),
		// its own copy refused at its limit, recorded as a request from
		// the node to itself (fresh seed 9546006, scenarios/README.md
		// C70).
		if r.Opaque != d.op.Spec.Opaque || ti.refused[refusedKey{r.From, r.Node, r.Timer, r.Sent}] || ti.refused[refusedKey{r.Node, r.Node, r.Timer, r.Sent}] {
			continue
		}
		any = true
		if r.saysMade(k) && x.wordDue(d, r, k) {
			words = append(words, r)
		}
	}
	return words, any
}

// checkTold reports a replica that made pop k of d after it was handed a
// record of the definition saying the pop was made (G4): a record's word
// that a pop was made stands (docs/design.md 4.7: a pop either record
// knows was made was made, node/merge.go mergeMarks), so the replica
// skips the pop whatever the faults around it. A fault excuses the
// duplicate only where it may have taken the word from the replica: a
// crash since (a restarted node holds nothing of what it was told), a
// scale-down that stopped it since, or the timer's tombstone expired on
// its clock (ExForgot, as for its own attempt, see checkRetries). A
// replica whose view placed the timer elsewhere when the record came
// kept it as moved away, and a moved copy learns the pops a record tells
// of (node/merge.go learnMoved): the word holds it too. A
// pop under an ID two timers may share is ExSharedID's. The attempt was made
// as early as madeFrom; a record handed to it after that may have met
// the pop on its way. The record is the one the network handed the node
// (History.Told); one its receiver refused is recorded as lost (a
// refusal by age is never handed over) and tells nothing; one of
// another definition (the receiver held a newer one) tells nothing of
// this one's pops.
func (x *index) checkTold(d *def, k int) (verdict, Violation, bool) {
	idx := d.bySeq[k]
	if len(idx) < 2 || len(x.h.Told) == 0 {
		return strictly, Violation{}, false
	}
	first := x.h.Pops[idx[0]].Node
	if !slices.ContainsFunc(idx, func(j int) bool { return x.h.Pops[j].Node != first }) {
		return strictly, Violation{}, false // one replica's attempts: checkRetries'
	}
	v := strictly
	var excusedByFault *bool
	for _, i := range idx {
		q := x.h.Pops[i]
		made := x.madeFrom(d, q)
		if r, ok := x.staleNoticeTaken(d, q, made); ok && !d.shared {
			x.told.judged[i] = true
			return violatedVerdict, x.violation("G4", q.At, d, fmt.Sprintf(
				"pop %d delivered by %s at %v, made from %v, after %s's notice (pop %d, missed %#x) reached it at %v holding no copy of the timer, when every pop of the definition was past at every rank: got an attempt, want none: a notice of a forgotten timer is kept as a tombstone (%d deliveries)",
				k, q.Node, q.At, made, r.From, r.Seq, r.Missed, r.At, len(idx))), true
		}
		words, any := x.toldBefore(d, q.Node, k, made)
		if !any {
			continue
		}
		if excusedByFault == nil {
			b := x.dupAllowance(d, k) != strictly
			excusedByFault = &b
		}
		if *excusedByFault {
			x.told.judged[i] = true
		}
		// Each word is one the replica may have lost; one it surely
		// kept is enough.
		for _, t := range words {
			switch {
			case d.shared:
				v = v.or(excused(ExSharedID))
			case x.forgot(d, q, t.At, t.At):
				v = v.or(excused(ExForgot))
			default:
				what := "record"
				if t.Sent < 0 {
					what = "answer to its record"
				}
				return violatedVerdict, x.violation("G4", q.At, d, fmt.Sprintf(
					"pop %d delivered by %s at %v, made from %v, after %s's %s (pop %d, missed %#x) told it at %v that the pop was made: got an attempt after the word, want none (%d deliveries)",
					k, q.Node, q.At, made, t.From, what, t.Seq, t.Missed, t.At, len(idx))), true
			}
		}
	}
	return v, Violation{}, false
}

// staleNoticeTaken returns a record of d, with pops made, that its
// receiver, the node of q, was handed holding no record of the timer,
// when every pop of d was surely past at every rank on its clock
// (pastEveryRank), and from which it may have made q (made, the earliest
// q was made, is no later than the notice): node/merge.go rule 2 keeps
// such a notice as a tombstone, since taking it pops again, late, what
// was popped. Holding nothing when the notice came, the replica had no
// record q could have been made of before it (a record ends as a
// tombstone that outlives a callback's healthy delay), and a crash
// since would have emptied it again; so q was made of the notice.
// Without this the rule went unchecked: the pops it kept were late and
// came around the fault that made the notice stale, which excused them
// as duplicates (the mutation stale-notice-taken).
func (x *index) staleNoticeTaken(d *def, q Pop, made time.Duration) (Told, bool) {
	ti := x.toldFiled()
	for _, i := range ti.by[toldKey{q.Node, d.timer}] {
		r := x.h.Told[i]
		if r.At > q.At {
			break
		}
		if r.Sent < 0 || r.Held || r.Seq == 0 || r.At < made || r.Opaque != d.op.Spec.Opaque ||
			ti.refused[refusedKey{r.From, r.Node, r.Timer, r.Sent}] || ti.refused[refusedKey{r.Node, r.Node, r.Timer, r.Sent}] {
			continue
		}
		if x.crashedWithin(q.Node, r.At, q.At) || !x.pastEveryRank(d, r) {
			continue
		}
		return r, true
	}
	return Told{}, false
}

// pastEveryRank reports whether every pop of d was past at every rank,
// on the clock of the receiver of record t, when t was handed to it, on
// the start t hands it: the node's rule 2 (node/merge.go arrive) dates
// the definition's end by the start it rebuilds from the record, its own
// time less the record's start delta, plus the repeat-for (node's
// Timer.lastDue, which may run past the last pop), and every rank's turn
// by maxSkewOf (each rank's skew at every site, a callback's timeout and
// an answer's). All of that is the record's and the bounds', not a model
// of how late the sender's start may be: modelled, the rule failed fresh
// seeds wherever a start came later than the holds the checker knows of
// (scenarios/README.md C75: a start passed on from a replica that lost
// its copy, a record that waited to leave its overloaded sender, a start
// 6 s later than any hold in fresh seed 9600687).
func (x *index) pastEveryRank(d *def, t Told) bool {
	if t.Sent < 0 {
		return false
	}
	end := wire.Timer{Interval: d.op.Spec.Interval, RepeatFor: d.op.Spec.RepeatFor}.Stated().RepeatFor
	// The receiver places the record by the factor it carries, at every
	// site (fresh seed 9603597: an update the history gives no factor
	// was placed on four replicas, the checker's ranks counted two).
	ranks := max(x.ranks(d), t.RF*max(len(x.h.Sites), 1))
	bound := x.o.ReplicaSkew*time.Duration(ranks) + x.o.CallbackTimeout + x.o.ReplicationTimeout
	return t.StartDelta+end+bound < -time.Millisecond
}

// wordDue reports whether the receiver of record t surely took its word
// that pop k was made: a record brings no progress from the future
// (node/merge.go rule 0, docs/design.md 4.13). Its receiver takes the
// pops due, by its clock, on the start the record hands it (its arrival
// plus the record's start delta) and no further: a sender whose clock
// ran ahead pops early, and its word of a pop not yet due elsewhere is
// not taken (fresh seed 320469: a pop made 150 s early, told by a repair
// push 35 s later). That start is late, in true time, by no more than
// the message's age (its transit and waits, and for a late or replayed
// one the age its Late fault records), the holds the write and the
// messages that brought copies back gave it (d.held, d.reheld), and what
// the clocks that held it lost since the write (their lag): pop k is
// surely due on it when its latest due time plus all that has passed
// by the record's arrival. An answer to a node's own record is merged
// with the record the node holds, never from the future (learnPopped):
// its word stands.
func (x *index) wordDue(d *def, t Told, k int) bool {
	if t.Sent < 0 {
		return true
	}
	return x.dueOnRecord(d, t, k) <= t.At
}

// dueOnRecord is the latest time pop k of d may be due on the start
// record t hands its receiver (see wordDue).
func (x *index) dueOnRecord(d *def, t Told, k int) time.Duration {
	_, hi := d.due(k)
	hold := d.held
	for _, c := range d.reheld {
		hold = max(hold, c.hold)
	}
	// The record's start delta was taken when its sender built it,
	// before any wait for its overloaded CPU (fresh seed 9581345: a
	// notice that waited 2 s to leave carried a start 2 s older than
	// its sending time says); it left within a healthy delay of the
	// wait's end (9600687: 8 ms after it).
	late := hold + t.At - t.Sent + x.sendWaitWithin(d, t.From, t.Node, true, t.Sent, x.healthyLate())
	for _, f := range x.told.late[refusedKey{t.From, t.Node, t.Timer, 0}] {
		if age, _, _ := lateAge(f); f.At >= t.Sent && f.At <= t.At {
			late += age
		}
	}
	for n := range x.tl.clocks {
		if !d.placed || x.startHolders(d)[n] {
			late += x.tl.lag(n, t.At) - x.tl.lag(n, d.lo)
		}
	}
	return hi + late
}
