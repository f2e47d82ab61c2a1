package checker

import (
	"strings"
	"testing"
	"time"
)

// reorderedUpdates is the shape of a case the sweep found (N4): update
// "b" through a replica cut off by a partition is acknowledged, then
// update "c", invoked 500ms after "b" returned, through a node whose
// clock runs behind; after the heal only "b" pops.
func reorderedUpdates(rf int) *History {
	h := healthy()
	h.Ops = []Op{
		write(1, Create, 1, "a", 10*sec, 60*sec, 0, 10*ms, OK),
		write(2, Update, 1, "b", 10*sec, 60*sec, 2*sec, 2500*ms, OK),
		write(3, Update, 1, "c", 10*sec, 60*sec, 3*sec, 3500*ms, OK),
	}
	for i := range h.Ops {
		h.Ops[i].Spec.ReplicationFactor = rf
	}
	h.Faults = []Fault{{At: 1 * sec, Kind: Partition, Nodes: []string{"n3"}, Peers: []string{"n1", "n2"}},
		{At: 5 * sec, Kind: Heal}}
	h.MaxClockSkew = 2 * sec
	h.LivenessFrom = 6 * sec
	h.End = 40 * sec
	h.Pops = []Pop{pop(12*sec, "n3", "b", 1), pop(22*sec, "n3", "b", 2), pop(32*sec, "n3", "b", 3)}
	return h
}

func TestClockReorderedUpdatesAreExcusedOnlyBelowAMajority(t *testing.T) {
	// With one or two replicas a write needs one acknowledgement, so two
	// writes cut by a split may be ordered by clock, not real time.
	requireNone(t, Check(reorderedUpdates(2)))
	// From three replicas up acknowledged writes share a replica: the
	// later write must win: "c" is owed its pops, and n3, whose first pop
	// of "b" after the heal met "c" at the others, must stop popping "b".
	vs := Check(reorderedUpdates(3))
	requireHas(t, vs, "G7", "never delivered", `"c"`)
	requireHas(t, vs, "G5", "should have repaired that replica")
}

// TestCrashOfOneHolderLeavesTheDeleteToTheOthers is the stricter rule of
// C4 (scenarios/README.md), the default once a restarted replica
// repopulates: a partition keeps a DELETE from one of three replicas,
// which pops on after the heal; another replica crashes and restarts
// without the tombstone, but the third kept it and answers the stale
// replica's notice, so a pop a round trip after the first is a
// violation. Only when every replica that took the delete crashed may
// the stale replica pop on.
func TestCrashOfOneHolderLeavesTheDeleteToTheOthers(t *testing.T) {
	members := []string{"n1", "n2", "n3"}
	r := Replicas(members, placedTimer, 3)
	build := func(crashed ...string) *History {
		h := &History{Members: members, End: 20 * sec, LivenessFrom: 14 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms}
		h.Ops = []Op{write(1, Create, placedTimer, "a", sec, 12*sec, 0, 10*ms, OK), del(2, placedTimer, 2500*ms, 2510*ms, OK)}
		h.Ops[0].Node, h.Ops[1].Node = r[0], r[0]
		for i := range h.Ops {
			h.Ops[i].Spec.ReplicationFactor = 3
		}
		h.Faults = []Fault{{At: 2 * sec, Kind: Partition, Nodes: []string{r[2]}, Peers: []string{r[0], r[1]}}, {At: 4 * sec, Kind: Heal}}
		for _, n := range crashed {
			h.Faults = append(h.Faults, Fault{At: 4500 * ms, Kind: Crash, Nodes: []string{n}}, Fault{At: 4600 * ms, Kind: Restart, Nodes: []string{n}})
		}
		h.Pops = append(pops(r[0], "a", 1, 2, 0), pops(r[2], "a", 3, 12, 4*sec)...)
		for i := range h.Pops {
			h.Pops[i].Timer = placedTimer
		}
		return h
	}
	requireHas(t, Check(build(r[1])), "G5", "should have repaired that replica")
	for _, v := range Check(build(r[0], r[1])) {
		if v.Guarantee == "G5" {
			t.Fatalf("got %s, want no G5 once every holder of the delete crashed", dump([]Violation{v}))
		}
	}
}

// TestDeletedTimerNeverComesBackWhateverTheTombstoneAge is the stricter
// G5 (docs/operations.md's promise): a partition keeps a DELETE from
// the backup until long after the tombstone's least life (TombstoneLife,
// 10 s; the primary crashed before the delete, so its record is all
// there is), and the backup pops on through the partition, then once
// after the heal, which repairs it. A further pop, as a replica makes
// that a late or replayed message brought the old definition back to,
// is a violation whatever the tombstone's age.
func TestDeletedTimerNeverComesBackWhateverTheTombstoneAge(t *testing.T) {
	build := func(again bool) *History {
		h, p, b, _ := placed(t)
		h.Ops[0].Spec.Interval, h.Ops[0].Spec.RepeatFor = 10*sec, 120*sec
		h.End = 130 * sec
		h.Ops = append(h.Ops, del(2, placedTimer, 15*sec, 15*sec+10*ms, OK))
		h.Ops[1].Node = p
		h.Faults = []Fault{{At: 5 * sec, Kind: Crash, Nodes: []string{p}}, {At: 6 * sec, Kind: Restart, Nodes: []string{p}},
			{At: 14 * sec, Kind: Partition, Nodes: []string{b}, Peers: []string{p}}, {At: 40 * sec, Kind: Heal}}
		h.Pops = []Pop{pop(12*sec+20*ms, b, "a", 1)}
		last := 4
		if again {
			last = 5
		}
		for k := 2; k <= last; k++ {
			h.Pops = append(h.Pops, pop(time.Duration(k)*10*sec+2*sec+20*ms, b, "a", k))
		}
		for i := range h.Pops {
			h.Pops[i].Timer = placedTimer
		}
		return h
	}
	requireNone(t, Check(build(false)))
	requireHas(t, Check(build(true)), "G5", "should have repaired that replica")
}

// TestSiteWhoseRelayMissedTheUpdateOwesNoRepair is the shape of fresh
// seed 181514 (scenarios/README.md C40): an rf 1 timer on two sites,
// updated through its replica at the home site while the other site's
// relay is down, so the forward, the only way that site hears of the
// update (docs/design.md 4.10), finds nobody; the home replica crashes
// a second later without storage and takes the update with it, then
// takes the old definition back from the other site's notice and pops it
// on. No node holds the update, so nothing can repair it: the other
// site's replica, up all along, never took the update, whose pop is
// lost with its only holder (copies-lost). With the crash moved to the
// home site's relay, or to a node of no role, or ended before the
// update, the other site took the update and the home replica's first
// pop after its restart repairs it; the next is a violation.
func TestSiteWhoseRelayMissedTheUpdateOwesNoRepair(t *testing.T) {
	sites, home, away := twoSitesRelayNoReplica()
	if home == sites[0][0] {
		sites[0][0], sites[0][1] = sites[0][1], sites[0][0] // nor at the home site
	}
	build := func(down string, from, to time.Duration) *History {
		h := &History{
			Members: []string{"n1", "n2", "n3", "n4"}, Sites: sites,
			Ops: []Op{
				write(1, Create, placedTimer, "a", 10*sec, 120*sec, 0, 10*ms, OK),
				write(2, Update, placedTimer, "b", 30*sec, 30*sec, 25*sec, 25*sec+10*ms, OK),
			},
			End: 70 * sec, LivenessFrom: 69 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
			Faults: []Fault{
				{At: from, Kind: Crash, Nodes: []string{down}}, {At: to, Kind: Restart, Nodes: []string{down}},
				{At: 26 * sec, Kind: Crash, Nodes: []string{home}}, {At: 27 * sec, Kind: Restart, Nodes: []string{home}},
			},
		}
		for i := range h.Ops {
			h.Ops[i].Node, h.Ops[i].Spec.ReplicationFactor = home, 1
		}
		h.Pops = []Pop{pop(10*sec+20*ms, home, "a", 1), pop(20*sec+20*ms, home, "a", 2), pop(32*sec+20*ms, away, "a", 3)}
		for k := 4; k <= 6; k++ {
			h.Pops = append(h.Pops, pop(time.Duration(k)*10*sec+20*ms, home, "a", k))
		}
		for i := range h.Pops {
			h.Pops[i].Timer = placedTimer
		}
		return h
	}
	vs, cov := DefaultOptions().Judge(build(relay(sites), 20*sec, 35*sec))
	requireNone(t, vs)
	if cov.Excused[ExCopiesLost] == 0 {
		t.Errorf("copies-lost covered nothing: got %v, want the update's pop lost with its only holder", cov.Excused)
	}
	// The same crash of the home site's relay hits the update too, but
	// the other site took it: its replica's pop of the old definition is
	// stale (it holds the update), and the home replica's first pop
	// after the restart repairs it.
	requireHas(t, Check(build(sites[0][0], 20*sec, 35*sec)), "G5", "took it and kept it")
	requireHas(t, Check(build("n9", 20*sec, 35*sec)), "G5")
	requireHas(t, Check(build(relay(sites), 5*sec, 15*sec)), "G5")
}

// TestInboundQueueKeptTheDeleteFromAReplica is the shape of fresh seed
// 4854420 (scenarios/README.md C43, the inbound-kept excuse): a delete
// through one of three replicas returns on two answers while its
// replication to the third waits 2 s in that replica's inbound queue for
// its overloaded CPU. That replica pops the deleted definition before it
// processes the delete; or it crashes first, which takes the delete from
// the queue, restarts from disk with the deleted definition and pops it.
// Either way it did not hold the delete, and its first pop, whose notice
// meets the tombstone, is no violation; a second, once repaired, is.
// With the wait ended before the answer, or after it but within the
// stick limit (the replica took the delete in time, whether it crashed
// later or not), or the waiting message sent by
// another node than the delete's, or carrying no record, the pop is a
// violation.
func TestInboundQueueKeptTheDeleteFromAReplica(t *testing.T) {
	members := []string{"n1", "n2", "n3"}
	r := Replicas(members, placedTimer, 3)
	const record = true
	build := func(wait, crashAt time.Duration, sender string, rec bool, popAt ...time.Duration) *History {
		h := &History{Members: members, End: 20 * sec, LivenessFrom: 14 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms, Storage: true}
		h.Ops = []Op{write(1, Create, placedTimer, "a", sec, 12*sec, 0, 10*ms, OK), del(2, placedTimer, 2500*ms, 3000*ms, OK)}
		h.Ops[0].Node, h.Ops[1].Node = r[0], r[0]
		for i := range h.Ops {
			h.Ops[i].Spec.ReplicationFactor = 3
		}
		detail := OverloadWaited + wait.String()
		if rec {
			detail += OverloadRecord
		}
		h.Faults = []Fault{{At: 2505 * ms, Kind: Queued, Nodes: []string{sender}, Peers: []string{r[2]}, Detail: detail, Timer: placedTimer}}
		if crashAt > 0 {
			h.Faults = append(h.Faults, Fault{At: crashAt, Kind: Crash, Nodes: []string{r[2]}}, Fault{At: 6 * sec, Kind: Restart, Nodes: []string{r[2]}})
		}
		h.Pops = pops(r[0], "a", 1, 2, 0)
		for _, at := range popAt {
			h.Pops = append(h.Pops, pop(at+20*ms, r[2], "a", int(at/sec)))
		}
		for i := range h.Pops {
			h.Pops[i].Timer = placedTimer
		}
		return h
	}
	for _, h := range []*History{
		build(2*sec, 0, r[0], record, 4*sec),     // popped while the delete waited
		build(2*sec, 4*sec, r[0], record, 6*sec), // the crash took the delete
		// A wait that would have ended within the stick limit, but the
		// crash after the answer came first and took the delete.
		build(550*ms, 3020*ms, r[0], record, 6*sec),
	} {
		vs, cov := DefaultOptions().Judge(h)
		requireNone(t, vs)
		if cov.Excused[ExInboundKept] == 0 {
			t.Errorf("inbound-kept covered nothing: got %v", cov.Excused)
		}
	}
	requireHas(t, Check(build(2*sec, 4*sec, r[0], record, 6*sec, 10*sec)), "G5", "should have repaired that replica")
	requireHas(t, Check(build(300*ms, 0, r[0], record, 4*sec)), "G5", "want none")
	requireHas(t, Check(build(550*ms, 0, r[0], record, 4*sec)), "G5", "want none") // processed past the answer, within the limit
	requireHas(t, Check(build(300*ms, 4*sec, r[0], record, 6*sec)), "G5", "want none")
	requireHas(t, Check(build(2*sec, 4*sec, r[1], record, 6*sec)), "G5", "want none")
	requireHas(t, Check(build(2*sec, 4*sec, r[0], !record, 6*sec)), "G5", "want none")
}

// TestRepairRoundEndsAStaleReplicasPopsAfterTheHeal is G5's repair
// round (docs/design.md 3): a partition keeps a DELETE from the third of
// three replicas, which then pops the deleted definition once, its first
// due after the heal. Within RepairRound and the round's messages after
// the heal (settle time included) that is its one repairing pop; later,
// a repair round of a replica that took the delete should have brought
// it the tombstone, and the pop is a violation, unless a fault on the
// timer began again before it, or the replicas that took the delete all
// crashed since.
func TestRepairRoundEndsAStaleReplicasPopsAfterTheHeal(t *testing.T) {
	members := []string{"n1", "n2", "n3"}
	r := Replicas(members, placedTimer, 3)
	build := func(interval time.Duration, faults ...Fault) *History {
		h := &History{Members: members, End: 4 * interval, LivenessFrom: 12 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms}
		h.Ops = []Op{write(1, Create, placedTimer, "a", interval, 3*interval, 0, 10*ms, OK), del(2, placedTimer, 2500*ms, 2510*ms, OK)}
		h.Ops[0].Node, h.Ops[1].Node = r[0], r[0]
		for i := range h.Ops {
			h.Ops[i].Spec.ReplicationFactor = 3
		}
		h.Faults = append([]Fault{{At: 2 * sec, Kind: Partition, Nodes: []string{r[2]}, Peers: []string{r[0], r[1]}}, {At: 10 * sec, Kind: Heal}}, faults...)
		h.Pops = []Pop{{At: interval + 4*sec + 20*ms, Node: r[2], Timer: placedTimer, URI: "http://client/cb", Opaque: "a", Seq: 1, Answered: 200}}
		return h
	}
	// Healed at 10 s, settled at 15 s: a pop at 44 s is within the round.
	requireNone(t, Check(build(40*sec)))
	requireHas(t, Check(build(60*sec)), "G5", "a repair round should have repaired")
	// A cut of the stale replica again before the pop: the round may
	// not have reached it.
	requireNone(t, Check(build(60*sec, Fault{At: 50 * sec, Kind: Partition, Nodes: []string{r[2]}, Peers: []string{r[0], r[1]}}, Fault{At: 70 * sec, Kind: Heal})))
	// Every replica that took the delete crashed without storage since:
	// nobody holds the tombstone to push.
	requireNone(t, Check(build(60*sec, Fault{At: 20 * sec, Kind: Crash, Nodes: []string{r[0], r[1]}}, Fault{At: 21 * sec, Kind: Restart, Nodes: []string{r[0], r[1]}})))
}

// TestRepairingPopSpreadsToTheOtherStaleReplicas is G5's spread of a
// repair (docs/design.md 3, node/pop.go spreadRepair): a partition keeps
// an update from two of five replicas, the primary and the first
// backup. After the heal the primary pops the old definition once, its
// notice reaching every replica; the 409 that answers it brings the
// primary the update, which it sends on to the backup. The backup's pop
// of the next due, at its rank, is then a violation, unless a fault
// touched the timer while the spread ran, when it is the backup's own
// repairing pop.
func TestRepairingPopSpreadsToTheOtherStaleReplicas(t *testing.T) {
	members := []string{"n1", "n2", "n3", "n4", "n5"}
	r := Replicas(members, placedTimer, 5)
	build := func(faults ...Fault) *History {
		h := &History{Members: members, End: 40 * sec, LivenessFrom: 30 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms}
		h.Ops = []Op{write(1, Create, placedTimer, "a", sec, 60*sec, 0, 10*ms, OK), write(2, Update, placedTimer, "b", 100*sec, 200*sec, 2500*ms, 2510*ms, OK)}
		h.Ops[0].Node, h.Ops[1].Node = r[2], r[2]
		for i := range h.Ops {
			h.Ops[i].Spec.ReplicationFactor = 5
		}
		h.Faults = append([]Fault{{At: 2 * sec, Kind: Partition, Nodes: []string{r[0], r[1]}, Peers: []string{r[2], r[3], r[4]}}, {At: 10 * sec, Kind: Heal}}, faults...)
		h.Pops = append(pops(r[0], "a", 1, 11, 0), pop(14*sec+20*ms, r[1], "a", 12))
		for i := range h.Pops {
			h.Pops[i].Timer = placedTimer
		}
		return h
	}
	requireHas(t, Check(build()), "G5", "and "+r[1]+" by its spread")
	requireNone(t, Check(build(Fault{At: 11 * sec, Kind: Partition, Nodes: []string{r[1]}, Peers: []string{r[0], r[2], r[3], r[4]}}, Fault{At: 12 * sec, Kind: Heal})))
}

// TestUpdateKeptFromADroppedReplicaFreesTheDefinitionItReplaced is C66:
// an update lowers a timer's factor from 2 to 1, and its one replica, the
// primary, takes it. The replica the factor drops is told too; when a
// fault keeps that word from it, it still holds the definition the update
// replaced, pops it once before a repair can reach it (its notice is
// answered with the update), and hands it back to the primary if the
// primary's crash took the update's only copy: the fault hit the write,
// and its stale pops are judged by the repair bounds, not by the model.
// With the word delivered, the same crash leaves the primary nothing of
// the old definition to pop, and its pop is G5's.
func TestUpdateKeptFromADroppedReplicaFreesTheDefinitionItReplaced(t *testing.T) {
	for _, c := range []struct {
		name              string
		wordLost, crash   bool
		byDropped, wantG5 bool
	}{
		{"word lost, the primary's crash took the update", true, true, false, false},
		{"word lost, the dropped replica pops before its repair", true, false, true, false},
		{"word delivered, the primary's crash took the update", false, true, false, true},
	} {
		h, p, b, other := placed(t)
		h.End = 3 * time.Minute
		create := write(1, Create, placedTimer, "a", 10*sec, 10*time.Minute, 0, 10*ms, OK)
		up := write(2, Update, placedTimer, "b", 10*sec, 10*time.Minute, 20*sec, 20*sec+10*ms, OK)
		up.Spec.ReplicationFactor = 1
		create.Node, up.Node = other, other
		h.Ops = []Op{create, up}
		h.Faults = nil
		if c.wordLost {
			h.Faults = append(h.Faults, Fault{At: 20*sec + ms, Kind: Lost, Nodes: []string{other}, Peers: []string{b}, Timer: placedTimer})
		}
		if c.crash {
			h.Faults = append(h.Faults, Fault{At: 25 * sec, Kind: Crash, Nodes: []string{p}},
				Fault{At: 27 * sec, Kind: Restart, Nodes: []string{p}})
		}
		// The dropped replica's first stale pop comes soon after the
		// word was lost; the primary's, long after its crash.
		stale := pop(2*time.Minute+20*ms, p, "a", 12)
		if c.byDropped {
			stale = pop(40*sec+20*ms, b, "a", 4)
		}
		h.Pops = []Pop{pop(10*sec+20*ms, p, "a", 1), pop(20*sec+5*ms, p, "a", 2), stale}
		for i := range h.Pops {
			h.Pops[i].Timer = placedTimer
		}
		g5 := 0
		for _, v := range Check(h) {
			if v.Guarantee == "G5" {
				g5++
			}
		}
		if (g5 > 0) != c.wantG5 {
			t.Errorf("%s: %d G5 violations, want G5 %v:\n%s", c.name, g5, c.wantG5, dump(Check(h)))
		}
	}
}

// TestReplicaThatTookTheWriteHasNoStalePop: a partition keeps an update
// from the backup, and the primary takes it. The backup may pop the old
// definition until its first pop's notice repairs it, but the primary
// holds the newer version, which no record of the old definition
// replaces: its pop of the old definition is stale at once. A primary
// that crashed after the update (no storage) may have lost it and taken
// the old definition back from the backup, and owes no such promise.
func TestReplicaThatTookTheWriteHasNoStalePop(t *testing.T) {
	for _, c := range []struct {
		name             string
		byPrimary, crash bool
		want             bool
	}{
		{"the backup's repairing pop", false, false, false},
		{"the primary's pop", true, false, true},
		{"the primary's pop after its crash", true, true, false},
	} {
		h, p, b, _ := placed(t)
		h.End = time.Minute
		create := write(1, Create, placedTimer, "a", 10*sec, 10*time.Minute, 0, 10*ms, OK)
		up := write(2, Update, placedTimer, "b", 10*sec, 10*time.Minute, 15*sec, 15*sec+10*ms, OK)
		create.Node, up.Node = p, p
		h.Ops = []Op{create, up}
		h.Faults = []Fault{{At: 14 * sec, Kind: Partition, Nodes: []string{b}, Peers: []string{p}}, {At: 16 * sec, Kind: Heal}}
		if c.crash {
			h.Faults = append(h.Faults, Fault{At: 17 * sec, Kind: Crash, Nodes: []string{p}}, Fault{At: 18 * sec, Kind: Restart, Nodes: []string{p}})
		}
		h.Pops = []Pop{pop(10*sec+20*ms, p, "a", 1), pop(30*sec+20*ms, pick(c.byPrimary, p, b), "a", 3)}
		for i := range h.Pops {
			h.Pops[i].Timer = placedTimer
		}
		found := false
		for _, v := range Check(h) {
			if v.Guarantee == "G5" && strings.Contains(v.Message, "took it and kept it") {
				found = true
			}
		}
		if found != c.want {
			t.Errorf("%s: a G5 of a replica that took the write: %v, want %v:\n%s", c.name, found, c.want, dump(Check(h)))
		}
	}
}

// TestVersionDraggedAheadBeatsALaterUpdateItsHoldersMissed is C67: one
// replica of an rf 3 timer had its clock stepped two minutes ahead, and
// the others' version generators, which observe its records, ran a
// minute ahead of their clocks, so the create through another replica is
// dated a minute late. An update 25 s later through the third replica is
// dated by its clock, below the create. Had a holder of the create taken
// the update's request, it would have answered with the create and the
// update been written above it; but the create's proxy lost its copy to a
// crash and the stepped replica was cut off, so the update was
// acknowledged by replicas holding nothing, and the create's record wins
// at the heal: the update's pops are not owed (clock-ahead). Without the
// crash, two holders of the create took the update, and its pops are
// owed; without the stepped clock, nothing dated the create ahead.
func TestVersionDraggedAheadBeatsALaterUpdateItsHoldersMissed(t *testing.T) {
	members := []string{"n1", "n2", "n3"}
	r := Replicas(members, placedTimer, 3)
	for _, c := range []struct {
		name           string
		stepped, crash bool
		wantG2         bool
	}{
		{"holders lost or cut off", true, true, false},
		{"a holder kept the create", true, false, true},
		{"no clock ahead", false, true, true},
	} {
		h := &History{Members: members, End: 3 * time.Minute, LivenessFrom: 2 * time.Minute, MaxClockSkew: ms, MaxNetDelay: 5 * ms}
		create := write(1, Create, placedTimer, "a", 3*sec, 15*sec, 20*sec, 20*sec+10*ms, OK)
		up := write(2, Update, placedTimer, "b", 5*sec, 20*sec, 45*sec, 45*sec+10*ms, OK)
		create.Node, up.Node = r[0], r[2]
		create.Spec.ReplicationFactor, up.Spec.ReplicationFactor = 3, 3
		h.Ops = []Op{create, up}
		if c.stepped {
			h.Faults = append(h.Faults, Fault{At: 5 * sec, Kind: ClockJump, Nodes: []string{r[1]}, Detail: "+2m0s"},
				Fault{At: 12 * sec, Kind: ClockJump, Nodes: []string{r[1]}, Detail: "-2m0s"})
		}
		h.Faults = append(h.Faults, Fault{At: 44 * sec, Kind: Partition, Nodes: []string{r[1]}, Peers: []string{r[0], r[2], "client"}},
			Fault{At: 50 * sec, Kind: Heal})
		if c.crash {
			h.Faults = append(h.Faults, Fault{At: 40 * sec, Kind: Crash, Nodes: []string{r[0]}}, Fault{At: 41 * sec, Kind: Restart, Nodes: []string{r[0]}})
		}
		for k := 1; k <= 5; k++ {
			h.Pops = append(h.Pops, pop(20*sec+time.Duration(3*k)*sec+20*ms, r[0], "a", k))
		}
		for i := range h.Pops {
			h.Pops[i].Timer = placedTimer
		}
		g2 := 0
		for _, v := range Check(h) {
			if v.Guarantee == "G2" || v.Guarantee == "G7" {
				g2++
			}
		}
		if (g2 > 0) != c.wantG2 {
			t.Errorf("%s: %d G2 or G7 violations of the update's pops, want some: %v:\n%s", c.name, g2, c.wantG2, dump(Check(h)))
		}
	}
}

// TestRelayThatCrashedWhilePausedMissedTheForward is the shape of fresh
// seed 9552609 (scenarios/README.md C71): the other site's relay, a
// replica there, is paused as an update's forward leaves, and crashes
// before it resumes. A paused node takes what waited for it at its
// resume; this one never resumed, so its site took none of the
// forward's tries: the relay, back from its crash, takes the old
// definition from the site's other replica and pops it until a notice
// meets the update. Its first pop, however long after the heal, is the
// repairing one (no repair round runs across sites), and a second is a
// violation. Resumed instead of crashed, the relay took the forward at
// its resume and passed it to the other replica, which kept it: a
// repair round within the site is due by then.
func TestRelayThatCrashedWhilePausedMissedTheForward(t *testing.T) {
	sites := [][]string{{"n1", "n2"}, {"n3", "n4"}}
	home, relayNode := "n1", sites[1][0]
	build := func(end FaultKind, pops ...time.Duration) *History {
		h := &History{
			Members: []string{"n1", "n2", "n3", "n4"}, Sites: sites,
			Ops: []Op{
				write(1, Create, placedTimer, "a", 100*sec, 400*sec, 0, 10*ms, OK),
				write(2, Update, placedTimer, "b", 1000*sec, 1000*sec, 25*sec, 25*sec+10*ms, OK),
			},
			End: 400 * sec, LivenessFrom: 60 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
			Faults: []Fault{
				{At: 24 * sec, Kind: Pause, Nodes: []string{relayNode}},
				{At: 35 * sec, Kind: end, Nodes: []string{relayNode}},
			},
		}
		if end == Crash {
			h.Faults = append(h.Faults, Fault{At: 45 * sec, Kind: Restart, Nodes: []string{relayNode}})
		}
		for i := range h.Ops {
			h.Ops[i].Node, h.Ops[i].Spec.ReplicationFactor = home, 2
		}
		for i, at := range pops {
			p := pop(at, relayNode, "a", i+1)
			p.Timer = placedTimer
			h.Pops = append(h.Pops, p)
		}
		return h
	}
	due := func(k int) time.Duration { return time.Duration(k)*100*sec + 8*sec + 20*ms } // after both ranks at home
	requireNone(t, Check(build(Crash, due(1))))
	requireHas(t, Check(build(Crash, due(1), due(2))), "G5")
	requireHas(t, Check(build(Resume, due(1))), "G5", "repair round")
}

// TestNoticeMeetsAnotherSiteThroughItsRelayAlone is the shape of fresh
// seed 9620465 (scenarios/README.md C77): site B's relay was down while
// an update went through the home replica at site A, so site B's replica
// kept the old definition. Its first stale pop's notice reaches site A
// through A's relay alone, which answers with what it holds itself.
// When A's relay is the home replica, which took the update, that pop
// repairs B's replica and a second stale pop is a violation; when A's
// relay holds no copy, nothing repaired it, and the second is not.
func TestNoticeMeetsAnotherSiteThroughItsRelayAlone(t *testing.T) {
	for _, relayKeeps := range []bool{true, false} {
		sites, home, away := twoSitesRelayNoReplica()
		if (sites[0][0] == home) != relayKeeps {
			sites[0][0], sites[0][1] = sites[0][1], sites[0][0]
		}
		h := &History{
			Members: []string{"n1", "n2", "n3", "n4"}, Sites: sites,
			Ops: []Op{
				write(1, Create, placedTimer, "a", 10*sec, 120*sec, 0, 10*ms, OK),
				write(2, Update, placedTimer, "b", 30*sec, 30*sec, 25*sec, 25*sec+10*ms, OK),
			},
			End: 80 * sec, LivenessFrom: 79 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
			Faults: []Fault{{At: 20 * sec, Kind: Crash, Nodes: []string{relay(sites)}}, {At: 35 * sec, Kind: Restart, Nodes: []string{relay(sites)}}},
		}
		for i := range h.Ops {
			h.Ops[i].Node, h.Ops[i].Spec.ReplicationFactor = home, 1
		}
		h.Pops = []Pop{pop(10*sec+20*ms, home, "a", 1), pop(20*sec+20*ms, home, "a", 2),
			pop(52*sec+20*ms, away, "a", 5), pop(55*sec+20*ms, home, "b", 1), pop(62*sec+20*ms, away, "a", 6)}
		for i := range h.Pops {
			h.Pops[i].Timer = placedTimer
		}
		if relayKeeps {
			requireHas(t, Check(h), "G5", "should have repaired")
		} else {
			requireNone(t, Check(h))
		}
	}
}
