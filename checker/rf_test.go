package checker

import (
	"testing"
	"time"
)

// TestUpdateWithoutFactorKeepsTheTimersFactor proves the checker takes an
// update's replication factor from the history, never from the node's
// default: an update without one keeps the factor its timer's earlier
// writes gave (a PUT cannot change it), so an rf 3 timer's update is
// judged with three replicas and a write quorum of two, where the default
// of 2 would have placed it on two and let one replica's answer stand for
// the write (the may-reorder excuse). A create without one gets the API's
// default.
func TestUpdateWithoutFactorKeepsTheTimersFactor(t *testing.T) {
	h, primary, _, _ := placed(t)
	create := write(1, Create, placedTimer, "a", sec, 10*sec, 0, 10*ms, OK)
	create.Spec.ReplicationFactor = 3
	bare := write(2, Create, placedTimer+1, "c", sec, 10*sec, 0, 10*ms, OK)
	bare.Spec.ReplicationFactor = 0
	up := write(3, Update, placedTimer, "b", sec, 10*sec, 5*sec, 5*sec+10*ms, OK)
	up.Spec.ReplicationFactor = 0
	h.Ops = []Op{create, bare, up}
	for i := range h.Ops {
		h.Ops[i].Node = primary
	}
	h.Pops = nil
	x := newIndex(h, DefaultOptions())
	for _, c := range []struct {
		opaque       string
		rf, quorum   int
		wantReplicas int
	}{{"a", 3, 2, 3}, {"b", 3, 2, 3}, {"c", DefaultReplicationFactor, 1, DefaultReplicationFactor}} {
		d := x.byOpaque[c.opaque]
		if d.rf != c.rf || d.quorum != c.quorum || d.rfUnknown || len(d.replicas) != c.wantReplicas {
			t.Errorf("write %q: rf %d quorum %d unknown %v replicas %v, want rf %d quorum %d, %d replicas",
				c.opaque, d.rf, d.quorum, d.rfUnknown, d.replicas, c.rf, c.quorum, c.wantReplicas)
		}
	}
}

// TestUpdateOfUnknownFactorIsUnplaced proves an update without a factor of
// a timer whose factor the history never gave (its create is not in the
// history) is judged as placed nowhere known: a fault on any member may
// touch it (excused by the worst rank), rather than by a guessed factor.
func TestUpdateOfUnknownFactorIsUnplaced(t *testing.T) {
	h, primary, _, other := placed(t)
	up := write(2, Update, placedTimer, "b", sec, 10*sec, 0, 10*ms, OK)
	up.Node, up.Spec.ReplicationFactor = primary, 0
	h.Ops = []Op{up}
	h.Pops = nil
	for _, p := range pops(primary, "b", 1, 10, 0) {
		p.Timer = placedTimer
		h.Pops = append(h.Pops, p)
	}
	h.Pops[2].At += 3 * sec
	h.Faults = []Fault{{At: 2500 * ms, Kind: Crash, Nodes: []string{other}}}
	x := newIndex(h, DefaultOptions())
	d := x.byOpaque["b"]
	if !d.rfUnknown || d.placed || d.rf != len(h.Members) {
		t.Fatalf("update of unknown factor: rfUnknown %v placed %v rf %d, want true false %d", d.rfUnknown, d.placed, d.rf, len(h.Members))
	}
	vs, _ := DefaultOptions().Judge(h)
	requireNone(t, vs)
}

// TestUpdateAfterTheTimerEndedHasUnknownFactor proves that an update
// without a factor of a timer whose last pop may be past (a one-shot
// create) is judged with an unknown factor: a PUT to a finished timer is a
// create to the client, and a node may give it the factor of the finished
// record it holds or the default.
func TestUpdateAfterTheTimerEndedHasUnknownFactor(t *testing.T) {
	for _, c := range []struct {
		name                string
		interval, repeatFor time.Duration
		update              time.Duration
		unknown             bool
	}{
		{"one-shot", 0, 0, 5 * sec, true},
		// One pop, due at 15 s: repeat-for reaches past it, to 26 s,
		// but no pop is due there, so the timer ends at its first.
		{"last pop before repeat-for ends", 15 * sec, 26 * sec, 15*sec + 500*ms, true},
		{"last pop still ahead", 15 * sec, 30 * sec, 15*sec + 500*ms, false},
	} {
		h, primary, _, _ := placed(t)
		create := write(1, Create, placedTimer, "a", c.interval, c.repeatFor, 0, 10*ms, OK)
		create.Spec.ReplicationFactor = 1
		up := write(2, Update, placedTimer, "b", sec, 10*sec, c.update, c.update+10*ms, OK)
		up.Spec.ReplicationFactor = 0
		h.Ops = []Op{create, up}
		for i := range h.Ops {
			h.Ops[i].Node = primary
		}
		h.Pops = nil
		if d := newIndex(h, DefaultOptions()).byOpaque["b"]; d.rfUnknown != c.unknown {
			t.Errorf("%s: update's factor %d..%d unknown %v, want unknown %v", c.name, d.rfMin, d.rf, d.rfUnknown, c.unknown)
		}
	}
}

// TestUpdateOfEndedTimerJudgesBothFactors proves the checker judges an
// update without a factor, of a timer whose last pop may be past, with
// both factors the node may have chosen (the finished timer's, 3, if its
// record was still live; the default, 2, if not) rather than every member:
// pop 3 refused by the callback at two replicas is lost by all replicas
// under the default (all-replicas-failed), and refused at one it is not,
// since every factor leaves a replica able to pop it.
func TestUpdateOfEndedTimerJudgesBothFactors(t *testing.T) {
	history := func(refusedBy int) *History {
		h, _, _, _ := placed(t)
		r := Replicas(h.Members, placedTimer, 3)
		create := write(1, Create, placedTimer, "a", 0, 0, 0, 10*ms, OK)
		create.Spec.ReplicationFactor = 3
		up := write(2, Update, placedTimer, "b", sec, 5*sec, 5*sec, 5*sec+10*ms, OK)
		up.Spec.ReplicationFactor = 0
		h.Ops = []Op{create, up}
		for i := range h.Ops {
			h.Ops[i].Node = r[0]
		}
		h.Pops = []Pop{pop(20*ms, r[0], "a", 1)}
		h.Pops[0].Timer = placedTimer
		for _, p := range pops(r[0], "b", 1, 5, 5*sec) {
			p.Timer = placedTimer
			if p.Seq == 3 {
				for rank := range refusedBy {
					q := p
					q.Node, q.At, q.Answered = r[rank], p.At+time.Duration(rank)*2*sec, 500
					h.Pops = append(h.Pops, q)
				}
				continue
			}
			h.Pops = append(h.Pops, p)
		}
		return h
	}
	x := newIndex(history(2), DefaultOptions())
	if d := x.byOpaque["b"]; !d.rfUnknown || d.rfMin != DefaultReplicationFactor || d.rf != 3 {
		t.Fatalf("update of an ended timer: unknown %v, factors %d..%d; want unknown, %d..3", d.rfUnknown, d.rfMin, d.rf, DefaultReplicationFactor)
	}
	vs, cov := DefaultOptions().Judge(history(2))
	requireNone(t, vs)
	if cov.Excused[ExAllFailed] == 0 {
		t.Errorf("excuses %v, want %s", cov.Excused, ExAllFailed)
	}
	vs, _ = DefaultOptions().Judge(history(1))
	requireHas(t, vs, "G2", "pop 3")
}

// TestDeleteReachesEveryDefinitionsReplicas proves a delete is judged
// against the replicas of every definition of its timer it must reach,
// not only its timer's first: an rf 1 timer, finished and updated without
// a factor (the default's two replicas may hold the update), is deleted
// through its primary while a partition cuts the primary off from the
// backup. The fault kept the delete from a replica of the update, so the
// backup may pop the deleted definition in its one repairing pop, and
// only in it.
func TestDeleteReachesEveryDefinitionsReplicas(t *testing.T) {
	history := func(lastPop int) *History {
		h, primary, backup, _ := placed(t)
		create := write(1, Create, placedTimer, "a", 0, 0, 0, 10*ms, OK)
		create.Spec.ReplicationFactor = 1
		up := write(2, Update, placedTimer, "b", 10*sec, 30*sec, 5*sec, 5*sec+10*ms, OK)
		up.Spec.ReplicationFactor = 0
		h.Ops = []Op{create, up, del(3, placedTimer, 20*sec, 20*sec+500*ms, OK)}
		for i := range h.Ops {
			h.Ops[i].Node = primary
		}
		var others []string
		for _, m := range h.Members {
			if m != primary {
				others = append(others, m)
			}
		}
		h.Faults = []Fault{{At: 19 * sec, Kind: Partition, Nodes: []string{primary}, Peers: others}, {At: 21 * sec, Kind: Heal}}
		h.Pops = []Pop{pop(20*ms, primary, "a", 1), pop(15*sec+20*ms, primary, "b", 1)}
		for k := 2; k <= lastPop; k++ {
			h.Pops = append(h.Pops, pop(time.Duration(5+10*k)*sec+2*sec+20*ms, backup, "b", k))
		}
		for i := range h.Pops {
			h.Pops[i].Timer = placedTimer
		}
		h.End = 60 * sec
		return h
	}
	vs, _ := DefaultOptions().Judge(history(2))
	requireNone(t, vs)
	vs, _ = DefaultOptions().Judge(history(3))
	requireHas(t, vs, "G5", "pop 3")
}

// TestDeleteKeptFromAReplicaAllowsItsRepairAfterALaterWrite: a crash
// keeps a delete from the third replica of an rf 3 timer, and a PUT
// with factor 2 then creates the timer again on the first two only, so
// it never goes to the third. Back from the crash with the deleted
// definition on its disk, the third pops it once, and that pop's notice
// repairs it: allowed, though the later PUT met no fault, since the
// delete it follows did. A second pop, after the repair, is a violation.
func TestDeleteKeptFromAReplicaAllowsItsRepairAfterALaterWrite(t *testing.T) {
	history := func(stalePops int) *History {
		h, primary, _, _ := placed(t)
		r := Replicas(h.Members, placedTimer, 3)
		h.Storage = true
		h.Ops = []Op{write(1, Create, placedTimer, "a", 10*sec, 100*sec, 0, 10*ms, OK),
			del(2, placedTimer, 12*sec, 12*sec+10*ms, OK),
			write(3, Update, placedTimer, "c", 10*sec, 100*sec, 13*sec, 13*sec+10*ms, OK)}
		h.Ops[0].Spec.ReplicationFactor = 3
		for i := range h.Ops {
			h.Ops[i].Node = primary
		}
		h.Faults = []Fault{{At: 11 * sec, Kind: Crash, Nodes: []string{r[2]}}, {At: 25 * sec, Kind: Restart, Nodes: []string{r[2]}}}
		h.Pops = []Pop{pop(10*sec+20*ms, r[0], "a", 1)}
		for k := 1; k <= 4; k++ {
			h.Pops = append(h.Pops, pop(13*sec+time.Duration(k)*10*sec+20*ms, r[0], "c", k))
		}
		for k := 3; k < 3+stalePops; k++ {
			h.Pops = append(h.Pops, pop(time.Duration(k)*10*sec+4*sec+20*ms, r[2], "a", k))
		}
		for i := range h.Pops {
			h.Pops[i].Timer = placedTimer
		}
		h.End = 60 * sec
		return h
	}
	vs, _ := DefaultOptions().Judge(history(1))
	requireNone(t, vs)
	vs, _ = DefaultOptions().Judge(history(2))
	requireHas(t, vs, "G5", "pop 4")
}

// TestUpdateRacingAnotherWriteMayFindEither: an update without a factor
// that runs at the same time as another update of its timer may read the
// factor before that write lands or after, and a one-shot it races may
// have ended by then: its factor is the timer's or the default, not the
// timer's for certain.
func TestUpdateRacingAnotherWriteMayFindEither(t *testing.T) {
	h, primary, _, _ := placed(t)
	create := write(1, Create, placedTimer, "a", 5*sec, 10*sec, 0, 10*ms, OK)
	create.Spec.ReplicationFactor = 1
	up := write(2, Update, placedTimer, "b", 30*sec, 60*sec, 3*sec, 3*sec+70*ms, OK)
	up.Spec.ReplicationFactor = 0
	shot := write(3, Update, placedTimer, "c", 0, 0, 3*sec, 3*sec+10*ms, OK)
	shot.Spec.ReplicationFactor = 1
	h.Ops = []Op{create, up, shot}
	for i := range h.Ops {
		h.Ops[i].Node = primary
	}
	h.Pops = nil
	d := newIndex(h, DefaultOptions()).byOpaque["b"]
	if !d.rfUnknown || d.rfMin != 1 || d.rf != DefaultReplicationFactor {
		t.Errorf("update racing a one-shot: factors %d..%d unknown %v, want 1..%d unknown", d.rfMin, d.rf, d.rfUnknown, DefaultReplicationFactor)
	}
}

// TestRacedWriteMayLeaveTheFactor proves an update without a factor is
// judged with the factor of any write that may have taken effect last
// before it, not only the latest to return: two writes that ran at the
// same time take effect in either order. An update with factor 4 races a
// delete; whichever the history lists last, the timer may be live with 4
// (the update's retry under a newer version landed after the delete) or
// deleted (the default), so a later update without a factor may hold
// either. With the raced update failed, only the delete's default is
// left.
func TestRacedWriteMayLeaveTheFactor(t *testing.T) {
	for _, c := range []struct {
		name         string
		deleteFirst  bool
		raced        Outcome
		unknown      bool
		rfMin, rfMax int
	}{
		{"delete listed last", false, OK, true, DefaultReplicationFactor, 4},
		{"update listed last", true, OK, true, DefaultReplicationFactor, 4},
		{"raced update failed", false, Failed, false, DefaultReplicationFactor, DefaultReplicationFactor},
	} {
		h, _, _, _ := placed(t)
		create := write(1, Create, placedTimer, "a", sec, 30*sec, 0, 10*ms, OK)
		create.Spec.ReplicationFactor = 3
		raced := write(2, Update, placedTimer, "b", 3*sec, 6*sec, 5*sec, 5*sec+50*ms, c.raced)
		raced.Spec.ReplicationFactor = 4
		gone := del(3, placedTimer, 5*sec, 5*sec+27*ms, OK)
		if c.deleteFirst {
			raced.Seq, gone.Seq = 3, 2
		}
		up := write(4, Update, placedTimer, "c", 30*sec, 2*time.Minute, 5*sec+100*ms, 5*sec+110*ms, OK)
		up.Spec.ReplicationFactor = 0
		h.Ops = []Op{create, raced, gone, up}
		h.Pops = nil
		d := newIndex(h, DefaultOptions()).byOpaque["c"]
		if d.rfUnknown != c.unknown || d.rfMin != c.rfMin || d.rf != c.rfMax {
			t.Errorf("%s: update's factor %d..%d unknown %v, want %d..%d unknown %v",
				c.name, d.rfMin, d.rf, d.rfUnknown, c.rfMin, c.rfMax, c.unknown)
		}
	}
}

// TestUpdateAfterARacedUpdateMayFindItsFactor proves a later update
// without a factor inherits the whole range of factors an earlier one
// may have taken, where that one raced another write (seed 122243): an
// rf 1 timer ends; an update with factor 1 and an update without one run
// at once, and the one without read the factor before the other landed,
// found the timer finished and took the default, then won by version. A
// third update, without a factor, keeps what it finds: 1 or the default.
// Bounded: with the two updates one after the other, the one without a
// factor found the live rf 1 copy, and the third is judged with 1 alone.
func TestUpdateAfterARacedUpdateMayFindItsFactor(t *testing.T) {
	for _, c := range []struct {
		name         string
		at           time.Duration // when the update without a factor runs
		rfMin, rfMax int
	}{
		{"raced", 25 * sec, 1, DefaultReplicationFactor},
		{"one after the other", 27 * sec, 1, 1},
	} {
		h, _, _, _ := placed(t)
		create := write(1, Create, placedTimer, "a", 3*sec, 18*sec, 0, 10*ms, OK)
		create.Spec.ReplicationFactor = 1
		one := write(2, Update, placedTimer, "b", 3*sec, 18*sec, 25*sec, 25*sec+10*ms, OK)
		one.Spec.ReplicationFactor = 1
		bare := write(3, Update, placedTimer, "c", 15*sec, time.Minute, c.at, c.at+20*ms, OK)
		bare.Spec.ReplicationFactor = 0
		later := write(4, Update, placedTimer, "d", 15*sec, 75*sec, 31*sec, 31*sec+10*ms, OK)
		later.Spec.ReplicationFactor = 0
		h.Ops = []Op{create, one, bare, later}
		h.Pops = nil
		d := newIndex(h, DefaultOptions()).byOpaque["d"]
		if d.rfMin != c.rfMin || d.rf != c.rfMax || d.rfUnknown != (c.rfMin != c.rfMax) {
			t.Errorf("%s: later update's factor %d..%d unknown %v, want %d..%d",
				c.name, d.rfMin, d.rf, d.rfUnknown, c.rfMin, c.rfMax)
		}
	}
}

// TestUpdateAfterEveryCopyWasLostMayTakeTheDefault proves an update
// without a factor is judged with the default among its factors where a
// crash may have taken every copy of its timer before it was invoked: the
// node finds no copy to take the factor from and creates the timer again
// with the default. An rf 1 timer's only replica crashes (no disks) and
// restarts empty; an update made after the crash may hold the default's two
// replicas, and so may a later update without a factor, which keeps the
// factor of the copy it finds (fresh seed 9211761: the later update's
// node held the default's copy, a cut kept the other replica's notice
// from it, and its pop at its rank was judged as a duplicate of a timer
// of one replica). Bounded: the crash of a member holding no copy, or a
// crash after the updates, leaves the timer's factor alone.
func TestUpdateAfterEveryCopyWasLostMayTakeTheDefault(t *testing.T) {
	for _, c := range []struct {
		name    string
		onCopy  bool
		crashAt time.Duration
		unknown bool
	}{
		{"only copy crashed before", true, 5 * sec, true},
		{"other member crashed before", false, 5 * sec, false},
		{"only copy crashed after", true, 25 * sec, false},
	} {
		h, _, _, other := placed(t)
		only := Replicas(h.Members, placedTimer, 1)[0]
		create := write(1, Create, placedTimer, "a", 10*sec, time.Minute, 0, 10*ms, OK)
		create.Spec.ReplicationFactor = 1
		up := write(2, Update, placedTimer, "b", 20*sec, 2*time.Minute, 14*sec, 14*sec+10*ms, OK)
		up.Spec.ReplicationFactor = 0
		again := write(3, Update, placedTimer, "c", 30*sec, 2*time.Minute, 20*sec, 20*sec+10*ms, OK)
		again.Spec.ReplicationFactor = 0
		h.Ops = []Op{create, up, again}
		for i := range h.Ops {
			h.Ops[i].Node = other
		}
		h.Pops = nil
		crashed := pick(c.onCopy, only, other)
		h.Faults = []Fault{{At: c.crashAt, Kind: Crash, Nodes: []string{crashed}},
			{At: c.crashAt + 2*sec, Kind: Restart, Nodes: []string{crashed}}}
		x := newIndex(h, DefaultOptions())
		lo, hi := 1, 1
		if c.unknown {
			hi = DefaultReplicationFactor
		}
		for _, o := range []string{"b", "c"} {
			if d := x.byOpaque[o]; d.rfUnknown != c.unknown || d.rfMin != lo || d.rf != hi {
				t.Errorf("%s: update %s's factor %d..%d unknown %v, want %d..%d unknown %v",
					c.name, o, d.rfMin, d.rf, d.rfUnknown, lo, hi, c.unknown)
			}
		}
	}
}

// TestRefusedWriteLeavesNoFactor proves an update without a factor takes
// it from the writes that took effect, never from one a node refused: an
// rf 3 timer's update asking for rf 4 is refused (a PUT cannot change the
// factor, 400), and the next update without one keeps 3. Taking the
// refused write's 4 placed the timer on every member, and G6 reported the
// member that rightly held no copy as missing it. A refused write that
// ran at the same time as the update (TestRacedWriteMayLeaveTheFactor)
// leaves no factor either.
func TestRefusedWriteLeavesNoFactor(t *testing.T) {
	for _, c := range []struct {
		name  string
		asked Outcome
		rf    int
	}{
		{"refused", Failed, 3},
		{"taken", OK, 4},
	} {
		h, _, _, _ := placed(t)
		create := write(1, Create, placedTimer, "a", 30*sec, 2*time.Minute, 0, 10*ms, OK)
		create.Spec.ReplicationFactor = 3
		asked := write(2, Update, placedTimer, "b", 30*sec, 2*time.Minute, 5*sec, 5*sec+10*ms, c.asked)
		asked.Spec.ReplicationFactor = 4
		up := write(3, Update, placedTimer, "c", 30*sec, 2*time.Minute, 10*sec, 10*sec+10*ms, OK)
		up.Spec.ReplicationFactor = 0
		h.Ops = []Op{create, asked, up}
		h.Pops = nil
		d := newIndex(h, DefaultOptions()).byOpaque["c"]
		if d.rfUnknown || d.rfMin != c.rf || d.rf != c.rf {
			t.Errorf("%s: update's factor %d..%d unknown %v, want %d", c.name, d.rfMin, d.rf, d.rfUnknown, c.rf)
		}
	}
}

// TestUpdateOfUnknownFactorMissedByItsPrimaryPopsAtTheBackupsRank proves
// a write whose factor the history leaves to the node (judged unplaced)
// loses a copy as a placed one does (scenarios/README.md C48, fresh
// seed 5040550): an rf 1 timer ends, and an update without a factor
// through its backup may create it again at the default rf 2 (or keep
// rf 1); its replication to the primary is lost. Pop 1 is the backup's,
// at its rank, and its callback fails; the primary, given the record
// late, makes pop 2 past the primary's bound and within the backup's.
// The lost write falls before pop 2's window, so only the dropped copy
// (a missed write stays missed until a notice brings it back) lets the
// primary pop at the backup's rank; unplaced, no copy was counted
// dropped and pop 2 was judged against the primary's bound. Bounded: with
// the write delivered, or pop 2 past the backup's rank too, it is late.
func TestUpdateOfUnknownFactorMissedByItsPrimaryPopsAtTheBackupsRank(t *testing.T) {
	for _, c := range []struct {
		name string
		lost bool
		pop2 time.Duration
		want string
	}{
		{"replication lost, pop 2 within the backup's rank", true, 41500 * ms, ""},
		{"replication delivered", false, 41500 * ms, "G3"},
		{"replication lost, pop 2 past the backup's rank", true, 43 * sec, "G3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, p, b := endedThenUpdated(t, false)
			failed := pop(32*sec+20*ms, b, "b", 1)
			failed.Answered = 503
			h.Pops = []Pop{pop(1020*ms, p, "a", 1), pop(2020*ms, p, "a", 2), failed, pop(c.pop2, p, "b", 2),
				pop(50*sec+20*ms, p, "b", 3), pop(60*sec+20*ms, p, "b", 4)}
			for i := range h.Pops {
				h.Pops[i].Timer = placedTimer
			}
			h.Faults = nil
			if c.lost {
				h.Faults = []Fault{{At: 20*sec + 5*ms, Kind: Lost, Nodes: []string{b}, Peers: []string{p}, Timer: placedTimer}}
			}
			if d := newIndex(h, DefaultOptions()).byOpaque["b"]; !d.rfUnknown || d.placed {
				t.Fatalf("update's factor %d..%d unknown %v placed %v, want unknown and unplaced", d.rfMin, d.rf, d.rfUnknown, d.placed)
			}
			requireWant(t, Check(h), c.want, "pop 2", "late")
		})
	}
}

// TestUnknownFactorLosesEveryCopyOnlyWithOneFactorsReplicas proves a
// write whose factor the history leaves to the node loses every copy
// only where the replicas of one of its factors (a prefix of one
// ranking) are all unable: an update without a factor of an ended rf 1
// timer holds its primary under either factor, so its backup's crash
// leaves the primary's copy, and a pop 3 s late is G3; counting any one
// unable node against the single copy rf 1 acknowledges voided the bound
// (scenarios/README.md C48). Bounded: the primary's crash may take the
// only copy (rf 1), and then the backup's pop is unbounded.
func TestUnknownFactorLosesEveryCopyOnlyWithOneFactorsReplicas(t *testing.T) {
	for _, c := range []struct {
		name    string
		primary bool // the primary crashed, else the backup
		want    string
	}{
		{"backup crashed", false, "G3"},
		{"primary crashed", true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, p, b := endedThenUpdated(t, true)
			crashed, popper := b, p
			if c.primary {
				crashed, popper = p, b
			}
			h.Pops = []Pop{pop(1020*ms, p, "a", 1), pop(2020*ms, p, "a", 2), pop(30*sec+20*ms, p, "b", 1),
				pop(40*sec+20*ms, p, "b", 2), pop(53*sec, popper, "b", 3), pop(60*sec+20*ms, popper, "b", 4)}
			for i := range h.Pops {
				h.Pops[i].Timer = placedTimer
			}
			h.Faults = []Fault{{At: 45 * sec, Kind: Crash, Nodes: []string{crashed}}}
			if d := newIndex(h, DefaultOptions()).byOpaque["b"]; !d.rfUnknown || d.placed {
				t.Fatalf("update's factor %d..%d unknown %v placed %v, want unknown and unplaced", d.rfMin, d.rf, d.rfUnknown, d.placed)
			}
			requireWant(t, Check(h), c.want, "pop 3", "late")
		})
	}
}

// endedThenUpdated is placed's history with an rf 1 timer "a" (interval
// 1 s, two pops, ended by 2 s) and, at 20 s, an update "b" without a
// factor (interval 10 s, repeat-for 40 s) through the primary, or else
// the backup, which may keep rf 1 or take the default: no pops of "b".
func endedThenUpdated(t *testing.T, viaPrimary bool) (h *History, primary, backup string) {
	t.Helper()
	h, p, b, _ := placed(t)
	create := write(1, Create, placedTimer, "a", sec, 2*sec, 0, 10*ms, OK)
	create.Spec.ReplicationFactor = 1
	create.Node = p
	up := write(2, Update, placedTimer, "b", 10*sec, 40*sec, 20*sec, 20*sec+10*ms, OK)
	up.Spec.ReplicationFactor = 0
	up.Node = pick(viaPrimary, p, b)
	h.Ops = []Op{create, up}
	h.End = 70 * sec
	return h, p, b
}

// TestUpdateThroughASiteThatLostEveryCopyMayTakeTheDefault proves an
// update without a factor is judged with the default among its factors
// where a crash may have taken every copy at the site of the node that
// took it, though another site still holds one (scenarios/README.md
// U34): the node reads the copies of its own site only, finds none, and
// creates the timer again with the default. An rf 1 timer, one copy at
// each of two sites; the copy at the proxy's site crashes (no disks) and
// stays down. Bounded: a crash of the site's node holding no copy, or of
// the other site's copy, leaves a copy where the proxy reads, and the
// update keeps rf 1. With the factor judged from the placement (rf 1 at
// two sites counts two replicas, as many as the default) or the loss
// weighed at both sites, the first case was judged rf 1 only.
func TestUpdateThroughASiteThatLostEveryCopyMayTakeTheDefault(t *testing.T) {
	sites := [][]string{{"n1", "n2"}, {"n3", "n4"}}
	local := Replicas(sites[0], placedTimer, 1)[0]
	proxy := pick(local == "n1", "n2", "n1")
	away := Replicas(sites[1], placedTimer, 1)[0]
	for _, c := range []struct {
		name    string
		crashed string
		unknown bool
	}{
		{"the proxy's site's copy crashed", local, true},
		{"the proxy crashed, holding no copy", proxy, false},
		{"the other site's copy crashed", away, false},
	} {
		create := write(1, Create, placedTimer, "a", 10*sec, 20*sec, 0, 10*ms, OK)
		create.Spec.ReplicationFactor = 1
		up := write(2, Update, placedTimer, "b", 20*sec, 2*time.Minute, 14*sec, 14*sec+10*ms, OK)
		up.Spec.ReplicationFactor = 0
		create.Node, up.Node = proxy, proxy
		h := &History{
			Members: []string{"n1", "n2", "n3", "n4"}, Sites: sites,
			Ops: []Op{create, up}, End: 25 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
			Faults: []Fault{{At: 5 * sec, Kind: Crash, Nodes: []string{c.crashed}}},
		}
		if c.crashed == proxy {
			h.Faults = append(h.Faults, Fault{At: 6 * sec, Kind: Restart, Nodes: []string{proxy}})
		}
		d := newIndex(h, DefaultOptions()).byOpaque["b"]
		lo, hi := 1, 1
		if c.unknown {
			hi = DefaultReplicationFactor
		}
		if d.rfUnknown != c.unknown || d.factors.lo != lo || d.factors.hi != hi {
			t.Errorf("%s: update's factor %d..%d unknown %v, want %d..%d unknown %v",
				c.name, d.factors.lo, d.factors.hi, d.rfUnknown, lo, hi, c.unknown)
		}
	}
}

// TestNoticeOfAnUpdateLeftOnOneReplicaRepairsNothing is the shape of
// fresh seed 9565325 (scenarios/README.md C73): a timer created with
// factor 1 pops its one pop, and is updated without a factor: the node
// may take the ended record's factor 1 (or the default, which the
// history cannot tell), and placed so the update stays on the primary
// alone; a delete through another member
// is placed wider but misses the primary, cut off while it ran. The
// primary's pops of the update send their notices to no one (the record
// places the timer on the primary alone), so none of them repairs it: a
// second pop soon after the heal is no violation. Created with factor
// 2, the update may have no fewer than two replicas, the notice of the
// first pop meets the backup, which took the delete, and the second pop
// is a violation.
func TestNoticeOfAnUpdateLeftOnOneReplicaRepairsNothing(t *testing.T) {
	history := func(createRF int) *History {
		h, primary, backup, _ := placed(t)
		create := write(1, Create, placedTimer, "a", 0, 0, 0, 10*ms, OK)
		create.Spec.ReplicationFactor = createRF
		up := write(2, Update, placedTimer, "b", 10*sec, 600*sec, 5*sec, 5*sec+10*ms, OK)
		up.Spec.ReplicationFactor = 0
		gone := del(3, placedTimer, 20*sec, 20*sec+500*ms, OK)
		h.Ops = []Op{create, up, gone}
		h.Ops[0].Node, h.Ops[1].Node, h.Ops[2].Node = primary, primary, backup
		var others []string
		for _, m := range h.Members {
			if m != primary {
				others = append(others, m)
			}
		}
		h.Faults = []Fault{{At: 19 * sec, Kind: Partition, Nodes: []string{primary}, Peers: others}, {At: 21 * sec, Kind: Heal}}
		h.Pops = []Pop{pop(20*ms, primary, "a", 1), pop(15*sec+20*ms, primary, "b", 1), pop(25*sec+20*ms, primary, "b", 2), pop(35*sec+20*ms, primary, "b", 3)}
		for i := range h.Pops {
			h.Pops[i].Timer = placedTimer
		}
		h.End = 60 * sec
		return h
	}
	x := newIndex(history(1), DefaultOptions())
	if d := x.byOpaque["b"]; d.rfMin != 1 || !d.rfUnknown {
		t.Fatalf("update without a factor of an rf 1 timer: factors %d..%d, unknown %v; want 1.., unknown", d.rfMin, d.rf, d.rfUnknown)
	}
	requireNone(t, Check(history(1)))
	requireHas(t, Check(history(2)), "G5", "pop 3")
}
