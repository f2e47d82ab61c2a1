package checker

import (
	"slices"
	"testing"
	"time"
)

// scaled builds G6's base history: an hour-long timer (rf 2) created on
// four members, a scale-up to five from 5 s to 8 s, and a snapshot at 8 s
// in which exactly the timer's replicas among the five hold it live. It
// returns the history, the replicas after the scale and a member that is
// a replica neither before nor after.
func scaled(t *testing.T) (h *History, after []string, other string) {
	t.Helper()
	before := []string{"n1", "n2", "n3", "n4"}
	grown := append(slices.Clone(before), "n5")
	after = Replicas(grown, placedTimer, 2)
	old := Replicas(before, placedTimer, 2)
	for _, m := range grown {
		if !slices.Contains(after, m) && !slices.Contains(old, m) {
			other = m
		}
	}
	if other == "" {
		t.Fatalf("no member outside %v and %v", old, after)
	}
	h = &History{
		Members: before,
		Ops:     []Op{write(1, Create, placedTimer, "a", 3600*sec, 3600*sec, 0, 10*ms, OK)},
		Scales:  []Scale{{Kind: ScaleUp, Start: 5 * sec, End: 8 * sec, Before: before, After: grown}},
		Held:    []Held{{At: 8 * sec, Live: map[string][]uint64{}}},
		End:     20 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
	}
	h.Ops[0].Node = old[0]
	for _, r := range after {
		h.Held[0].Live[r] = []uint64{placedTimer}
	}
	return h, after, other
}

// TestPlacementConvergesAfterAScale shows G6 on a snapshot after a scale:
// the timer held by exactly its replicas under the new membership passes
// and is counted as judged; a copy left on another node, or a replica
// without one, is a G6 violation, also with a fault on a node that holds
// no replica of the timer before or after.
func TestPlacementConvergesAfterAScale(t *testing.T) {
	h, _, _ := scaled(t)
	vs, cov := DefaultOptions().Judge(h)
	requireNone(t, vs)
	if cov.Placements != 1 {
		t.Errorf("placements judged: got %d, want 1", cov.Placements)
	}
	for _, fault := range []bool{false, true} {
		h, _, other := scaled(t)
		if fault {
			h.Faults = []Fault{{At: 6 * sec, Kind: Crash, Nodes: []string{other}}, {At: 7 * sec, Kind: Restart, Nodes: []string{other}}}
		}
		h.Held[0].Live[other] = []uint64{placedTimer}
		requireHas(t, Check(h), "G6", "stale copy", other)
		h, after, other := scaled(t)
		if fault {
			h.Faults = []Fault{{At: 6 * sec, Kind: Pause, Nodes: []string{other}}, {At: 7 * sec, Kind: Resume, Nodes: []string{other}}}
		}
		delete(h.Held[0].Live, after[1])
		requireHas(t, Check(h), "G6", "holds no copy", after[1])
	}
}

// TestPlacementOfADeletedTimer shows that a deleted timer must be held
// live nowhere after a scale.
func TestPlacementOfADeletedTimer(t *testing.T) {
	h, after, _ := scaled(t)
	h.Ops = append(h.Ops, del(2, placedTimer, 2*sec, 2010*ms, OK))
	requireHas(t, Check(h), "G6", "stale copy", after[0])
	h.Held[0].Live = map[string][]uint64{}
	requireNone(t, Check(h))
}

// TestPlacementExcusesAreNeededAndBounded shows each allowance G6 makes
// (a fault on the timer's nodes during the scale, a write running when
// the snapshot is taken, crashes that took every copy) excuses a missing
// replica, and that the same history with the fault or write moved to a
// node holding no replica, or to another timer, is a violation.
func TestPlacementExcusesAreNeededAndBounded(t *testing.T) {
	cases := []struct {
		excuse Excuse
		build  func(h *History, after []string, other string, related bool)
	}{
		{ExFault + "/crash", func(h *History, after []string, other string, rel bool) {
			// The replica crashed during the resync and came back.
			n := pick(rel, after[1], other)
			h.Faults = []Fault{{At: 6 * sec, Kind: Crash, Nodes: []string{n}}, {At: 7 * sec, Kind: Restart, Nodes: []string{n}}}
		}},
		{ExInMotion, func(h *History, after []string, other string, rel bool) {
			// An update of the timer returned just before the snapshot.
			u := write(2, Update, pickTimer(rel), "b", 3600*sec, 3600*sec, 7*sec, 7500*ms, OK)
			h.Ops = append(h.Ops, u)
		}},
		{ExCopiesLost, func(h *History, after []string, other string, rel bool) {
			// Both replicas of the timer crashed before the scale, so
			// nothing was left to move.
			old := Replicas(h.Members, placedTimer, 2)
			h.Faults = []Fault{{At: sec, Kind: Crash, Nodes: []string{pick(rel, old[0], other)}},
				{At: sec, Kind: Crash, Nodes: []string{pick(rel, old[1], other)}},
				{At: 2 * sec, Kind: Restart, Nodes: []string{pick(rel, old[0], other)}},
				{At: 2 * sec, Kind: Restart, Nodes: []string{pick(rel, old[1], other)}}}
		}},
	}
	for _, c := range cases {
		t.Run(string(c.excuse), func(t *testing.T) {
			h, after, other := scaled(t)
			c.build(h, after, other, true)
			delete(h.Held[0].Live, after[1])
			vs, cov := DefaultOptions().Judge(h)
			for _, v := range vs {
				if v.Guarantee == "G6" {
					t.Fatalf("got %s, want G6 excused by %s", dump(vs), c.excuse)
				}
			}
			if cov.Excused[c.excuse] == 0 {
				t.Errorf("excuse %s covered nothing: got %v", c.excuse, cov.Excused)
			}
			h, after, other = scaled(t)
			c.build(h, after, other, false)
			delete(h.Held[0].Live, after[1])
			requireHas(t, Check(h), "G6", "holds no copy")
		})
	}
}

// TestScaleMovesPlacementForAttribution shows that attribution follows
// the membership: a crash of the node that is the timer's primary only
// after the scale excuses the backup's pops at its rank after it, and a
// crash of a member that is a replica neither before nor after excuses
// nothing.
func TestScaleMovesPlacementForAttribution(t *testing.T) {
	before := []string{"n1", "n2", "n3", "n4"}
	grown := append(slices.Clone(before), "n5")
	var id uint64
	for id = placedTimer; Replicas(grown, id, 2)[0] != "n5"; id++ {
	}
	after := Replicas(grown, id, 2)
	build := func(crashed string) *History {
		h := &History{
			Members: before,
			Ops:     []Op{write(1, Create, id, "a", 10*sec, 50*sec, 0, 10*ms, OK)},
			Scales:  []Scale{{Kind: ScaleUp, Start: 5 * sec, End: 8 * sec, Before: before, After: grown}},
			Faults:  []Fault{{At: 25 * sec, Kind: Crash, Nodes: []string{crashed}}},
			End:     60 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
		}
		h.Ops[0].Node = Replicas(before, id, 2)[0]
		for k := 1; k <= 5; k++ {
			p := pop(time.Duration(k)*10*sec+20*ms, after[0], "a", k)
			if k >= 3 {
				p.Node, p.At = after[1], p.At+2*sec
			}
			p.Timer = id
			h.Pops = append(h.Pops, p)
		}
		return h
	}
	requireNone(t, Check(build("n5")))
	requireHas(t, Check(build(otherThan(before, Replicas(before, id, 2), after))), "G3")
}

// otherThan is the first member in none of the lists.
func otherThan(members []string, lists ...[]string) string {
	for _, m := range members {
		in := false
		for _, l := range lists {
			in = in || slices.Contains(l, m)
		}
		if !in {
			return m
		}
	}
	return ""
}

// TestPlacementOfAFactorLeftToTheNode shows G6 on a timer whose last
// write gave no factor after its earlier definition ended (the node
// chooses the finished timer's factor, 3, or the default, 2): held by the
// first two or the first three of the three-replica list it passes, held
// by any other set it is a violation.
func TestPlacementOfAFactorLeftToTheNode(t *testing.T) {
	history := func(holders ...string) *History {
		h, _, _ := scaled(t)
		h.Ops[0].Spec.Interval, h.Ops[0].Spec.RepeatFor, h.Ops[0].Spec.ReplicationFactor = 0, 0, 3
		h.Pops = []Pop{{At: 20 * ms, Node: h.Ops[0].Node, URI: "http://client/cb", Opaque: "a", Seq: 1, Answered: 200, Timer: placedTimer}}
		up := write(2, Update, placedTimer, "b", 3600*sec, 3600*sec, 2*sec, 2010*ms, OK)
		up.Node, up.Spec.ReplicationFactor = h.Ops[0].Node, 0
		h.Ops = append(h.Ops, up)
		h.Held[0].Live = map[string][]uint64{}
		for _, n := range holders {
			h.Held[0].Live[n] = []uint64{placedTimer}
		}
		return h
	}
	three := Replicas(history().Scales[0].After, placedTimer, 3)
	for _, n := range []int{2, 3} {
		vs, cov := DefaultOptions().Judge(history(three[:n]...))
		requireNone(t, vs)
		if cov.Placements != 1 {
			t.Errorf("held by %v: placements judged %d, want 1", three[:n], cov.Placements)
		}
	}
	requireHas(t, Check(history(three[0], three[2])), "G6", "holds no copy", three[1])
	requireHas(t, Check(history(three[0])), "G6", "holds no copy", three[1])
}

// TestPopMovedByAScaleMayTakeOneRankMore: while a scale moves a timer,
// its new replica pops it once the resync brought it the copy, and the
// node that held it keeps its copy live until then and pops it after
// every new replica, one ReplicaSkew past the last rank: a pop due in the
// move is excused (fault-window/scale-up) that much later than the rank
// bound, and no later; a pop due after the move is held to the bound.
func TestPopMovedByAScaleMayTakeOneRankMore(t *testing.T) {
	// Pops every 6 s, four of them: pop 1 falls in the move (5 s to
	// 8 s, and FaultSettle after), pop 4 well after it. Each pop is on
	// time from the new primary but pop k, which comes late.
	history := func(k int, late time.Duration) *History {
		h, after, _ := scaled(t)
		if slices.Equal(after, Replicas(h.Scales[0].Before, placedTimer, 2)) {
			t.Fatalf("the scale does not move the timer")
		}
		h.Ops[0].Spec.Interval, h.Ops[0].Spec.RepeatFor = 6*sec, 24*sec
		h.Pops = movedPops(nil, after[0], "a", 0, k, late)
		h.Held = nil
		h.End = 40 * sec
		return h
	}
	requireMoveTakesOneRank(t, history)
}

// movedPops appends to pops the four pops of definition opaque due every
// 6 s from start, made by node 20 ms after each is due, but pop k, made
// late after it is due.
func movedPops(pops []Pop, node, opaque string, start time.Duration, k int, late time.Duration) []Pop {
	for seq := 1; seq <= 4; seq++ {
		at := start + time.Duration(seq)*6*sec + 20*ms
		if seq == k {
			at = start + time.Duration(seq)*6*sec + late
		}
		pops = append(pops, Pop{At: at, Node: node, URI: "http://client/cb", Opaque: opaque, Seq: seq, Answered: 200, Timer: placedTimer})
	}
	return pops
}

// requireMoveTakesOneRank holds the histories history(k, late) makes to
// a scale's move: pop 1, due in it, excused (fault-window/scale-up) up to
// one ReplicaSkew past the worst rank and late beyond; pop 4, due after
// it, held to the bound.
func requireMoveTakesOneRank(t *testing.T, history func(k int, late time.Duration) *History) {
	t.Helper()
	skew := DefaultOptions().ReplicaSkew
	vs, cov := DefaultOptions().Judge(history(1, 2*skew-200*ms))
	requireNone(t, vs)
	if cov.Excused[ExFault+"/"+Excuse(ScaleUp)] == 0 {
		t.Errorf("excuses %v, want %s/%s", cov.Excused, ExFault, ScaleUp)
	}
	requireHas(t, Check(history(1, 2*skew+500*ms)), "G3", "late")
	requireHas(t, Check(history(4, 2*skew-200*ms)), "G3", "late")
}

// TestPopOfAFactorLeftToTheNodeMovedByAScale: the same move for a timer
// whose factor the history leaves to the node (an rf 1 one-shot, ended,
// then updated without a factor: 1 or the default 2). Placed by neither
// factor, its pops still take the hand-off's rank when the scale moves it
// under one: a pop due in the move is excused (fault-window/scale-up) one
// ReplicaSkew past the worst rank, and no later; a pop due after the move
// is held to the bound.
func TestPopOfAFactorLeftToTheNodeMovedByAScale(t *testing.T) {
	history := func(k int, late time.Duration) *History {
		h, after, _ := scaled(t)
		first := Replicas(h.Members, placedTimer, 1)
		h.Ops[0].Spec.Interval, h.Ops[0].Spec.RepeatFor, h.Ops[0].Spec.ReplicationFactor = 0, 0, 1
		h.Ops[0].Node = first[0]
		h.Pops = []Pop{{At: 20 * ms, Node: first[0], URI: "http://client/cb", Opaque: "a", Seq: 1, Answered: 200, Timer: placedTimer}}
		up := write(2, Update, placedTimer, "b", 6*sec, 24*sec, sec, sec+10*ms, OK)
		up.Node, up.Spec.ReplicationFactor = first[0], 0
		h.Ops = append(h.Ops, up)
		h.Pops = movedPops(h.Pops, after[0], "b", sec, k, late)
		h.Held = nil
		h.End = 40 * sec
		return h
	}
	if d := newIndex(history(1, 0), DefaultOptions()).byOpaque["b"]; !d.rfUnknown || d.placed {
		t.Fatalf("the update: factor unknown %v, placed %v; want unknown and unplaced", d.rfUnknown, d.placed)
	}
	requireMoveTakesOneRank(t, history)
}

// TestHolderDownInItsHandOffTurnPopsAtItsRestart: a scale moves an rf 1
// timer off the member it removes, and the hand-off that would bring the
// new replica its copy is lost, so the old holder keeps the pop for its
// own turn, one ReplicaSkew past the last rank; it crashes in that turn
// and pops at its restart, late by the outage, as no holder was able to
// pop before (the shape of fresh seeds of the scale mix, where the old
// holder crashed 0.6 s and 0.4 s before its turn). A crash after its
// turn, when it could have popped, of a member that holds no copy, or of
// the new replica, whose turn was over, excuses nothing.
func TestHolderDownInItsHandOffTurnPopsAtItsRestart(t *testing.T) {
	members := []string{"n1", "n2", "n3", "n4"}
	old, shrunk, neu := scaleDownMove(members)
	var bystander string
	for _, m := range shrunk {
		if m != neu {
			bystander = m
		}
	}
	skew := DefaultOptions().ReplicaSkew
	for _, c := range []struct {
		name    string
		down    string
		crashAt time.Duration
		want    string
	}{
		{"holder down in its turn", old, 10*sec + skew/2, ""},
		{"holder down after its turn", old, 10*sec + skew + 500*ms, "G3"},
		{"a member of no role down", bystander, 10*sec + skew/2, "G3"},
		{"the new replica down in the holder's turn", neu, 10*sec + skew/2, "G3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &History{
				Members: members,
				Ops:     []Op{write(1, Create, placedTimer, "a", 10*sec, 10*sec, 0, 10*ms, OK)},
				Scales:  []Scale{{Kind: ScaleDown, Start: 5 * sec, End: 8 * sec, Before: members, After: shrunk}},
				Faults: []Fault{
					{At: 6 * sec, Kind: Partition, Nodes: []string{old}, Peers: []string{neu}},
					{At: 9 * sec, Kind: Heal},
					{At: c.crashAt, Kind: Crash, Nodes: []string{c.down}},
					{At: 15 * sec, Kind: Restart, Nodes: []string{c.down}},
				},
				Pops: []Pop{{At: 15*sec + 5*ms, Node: old, URI: "http://client/cb", Opaque: "a", Seq: 1, Answered: 200, Timer: placedTimer}},
				End:  30 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
			}
			h.Ops[0].Node, h.Ops[0].Spec.ReplicationFactor = old, 1
			vs, cov := DefaultOptions().Judge(h)
			requireWant(t, vs, c.want, "late")
			if c.want == "" && cov.Excused[ExAllDown] == 0 {
				t.Errorf("excuses %v, want %s", cov.Excused, ExAllDown)
			}
		})
	}
}

// TestCallbackFaultsExcuseNoPlacement shows that a slow or failing
// callback endpoint of the timer during the scale excuses no missing
// replica: it changes whether a pop is delivered, never which nodes hold
// the timer, so G6 judges the placement as without it.
func TestCallbackFaultsExcuseNoPlacement(t *testing.T) {
	for _, kind := range []FaultKind{SlowCallback, FailCallback} {
		t.Run(string(kind), func(t *testing.T) {
			h, after, _ := scaled(t)
			cb := h.Ops[0].Spec.URI
			h.Faults = []Fault{{At: 6 * sec, Kind: kind, Nodes: []string{cb}, Detail: "delay=3s"},
				{At: 7 * sec, Kind: CallbackOK, Nodes: []string{cb}}}
			requireNone(t, Check(h))
			delete(h.Held[0].Live, after[1])
			requireHas(t, Check(h), "G6", "holds no copy", after[1])
		})
	}
}

// TestWriteFaultExcusesPlacementOnlyNearTheScale shows the bounds of G6's
// fault-window/write: an update of the timer whose replication to a
// replica was lost excuses a replica without a copy at the snapshot
// until a repair round must have mended it (RepairRound after the update
// and the lost message settled), counted to the placement's window
// (FaultSettle before the scale's start); an update a millisecond
// earlier excuses nothing. Without the lost message the update excuses
// nothing either, so the excuse is what passes the first history.
func TestWriteFaultExcusesPlacementOnlyNearTheScale(t *testing.T) {
	build := func(ret time.Duration, lost bool) *History {
		h, after, _ := scaled(t)
		h.Scales[0].Start, h.Scales[0].End = 80*sec, 83*sec
		h.Held[0].At, h.End = 83*sec, 100*sec
		old := Replicas(h.Members, placedTimer, 2)
		u := write(2, Update, placedTimer, "b", 3600*sec, 3600*sec, ret-10*ms, ret, OK)
		u.Node = old[0]
		h.Ops = append(h.Ops, u)
		if lost {
			h.Faults = []Fault{{At: ret - 9*ms, Kind: Lost, Nodes: []string{old[0]}, Peers: []string{old[1]}, Timer: placedTimer}}
		}
		delete(h.Held[0].Live, after[1])
		return h
	}
	settle := DefaultOptions().FaultSettle
	first := 80*sec - 2*settle - RepairRound // the earliest return the window counts
	requireNone(t, Check(build(first, true)))
	requireHas(t, Check(build(first, false)), "G6", "holds no copy")
	requireHas(t, Check(build(first-ms, true)), "G6", "holds no copy")
}

// TestUpdateAfterAMissedDeleteMayKeepTheFactor shows the factors G6 allows
// an update that gives none after a delete: the default, as the update
// creates the deleted timer again (api.md), or, when a lost message may
// have kept the delete from a replica, also the deleted definition's
// factor, which that replica's live copy gives the update (a node cannot
// tell a copy that missed a delete from a live timer). Held by the three
// replicas of factor 3 after a scale, the timer passes with the lost
// message and is a G6 violation without it.
func TestUpdateAfterAMissedDeleteMayKeepTheFactor(t *testing.T) {
	build := func(lost bool) *History {
		h, _, _ := scaled(t)
		h.Ops[0].Spec.ReplicationFactor = 3
		h.Scales[0].Start, h.Scales[0].End = 40*sec, 43*sec
		h.Held[0].At, h.End = 43*sec, 60*sec
		old := Replicas(h.Members, placedTimer, 3)
		d := del(2, placedTimer, 10*sec, 10*sec+10*ms, OK)
		d.Node = old[0]
		u := write(3, Update, placedTimer, "b", 3600*sec, 3600*sec, 20*sec, 20*sec+10*ms, OK)
		u.Node, u.Spec.ReplicationFactor = old[2], 0
		h.Ops = append(h.Ops, d, u)
		if lost {
			h.Faults = []Fault{{At: 10*sec + ms, Kind: Lost, Nodes: []string{old[0]}, Peers: []string{old[2]}, Timer: placedTimer}}
		}
		h.Held[0].Live = map[string][]uint64{}
		for _, n := range Replicas(h.Scales[0].After, placedTimer, 3) {
			h.Held[0].Live[n] = []uint64{placedTimer}
		}
		return h
	}
	requireNone(t, Check(build(true)))
	requireHas(t, Check(build(false)), "G6", "stale copy")
}

// TestEveryCopyLostBeforeAScaleThatWidensThePlacement proves the copies a
// crash takes are counted against the nodes that may hold the timer at
// the crash, not against the largest placement of the run (fresh seed
// 3702572): an rf 5 timer on a cluster of three is held by all three;
// all three crash (no storage) and come back empty, and a scale-up to
// five gives it five replicas. Nothing holds a copy to hand over, so G6
// after the scale excuses it (copies-lost); counting the three lost
// against the five of the later placement judged it and reported every
// replica missing. Bounded: with one of the three never crashed, a copy
// survives and the same snapshot is a violation.
func TestEveryCopyLostBeforeAScaleThatWidensThePlacement(t *testing.T) {
	three := []string{"n1", "n2", "n3"}
	five := []string{"n1", "n2", "n3", "n4", "n5"}
	for _, c := range []struct {
		name    string
		crashed []string
		want    bool // G6 violations
	}{
		{"all three crashed", three, false},
		{"one never crashed", three[:2], true},
	} {
		create := write(1, Create, placedTimer, "a", time.Hour, time.Hour, sec, sec+10*ms, OK)
		create.Spec.ReplicationFactor = 5
		h := &History{
			Members:      three,
			Ops:          []Op{create},
			End:          2 * time.Minute,
			MaxClockSkew: ms,
			MaxNetDelay:  5 * ms,
			Scales:       []Scale{{Kind: ScaleUp, Start: 40 * sec, End: 45 * sec, Before: three, After: five}},
		}
		for i, n := range c.crashed {
			at := 10*sec + time.Duration(i)*sec
			h.Faults = append(h.Faults,
				Fault{At: at, Kind: Crash, Nodes: []string{n}},
				Fault{At: at + 15*sec, Kind: Restart, Nodes: []string{n}})
		}
		held := map[string][]uint64{}
		for _, n := range three {
			if !slices.Contains(c.crashed, n) {
				held[n] = []uint64{placedTimer}
			}
		}
		h.Held = []Held{{At: time.Minute, Live: held}}
		g6 := 0
		vs := Check(h)
		for _, v := range vs {
			if v.Guarantee == "G6" {
				g6++
			}
		}
		if (g6 > 0) != c.want {
			t.Errorf("%s: %d G6 violations, want any %v: %v", c.name, g6, c.want, vs)
		}
	}
}

// TestRefusalOfAVersionAheadExcusesPlacementWhileItLasts proves G6's
// reading of a refusal that lasts (scenarios/README.md C47, fresh seed
// 4984840): a replica refuses every copy of a version dated more than
// twice MaxClockLead after its clock until its clock reaches that date
// less twice the lead, which the simulator records as the lost request's
// Until. A replica without a copy at the snapshot is excused while the
// condition lasts and until a repair round after it ended, counted to the
// placement's window (FaultSettle before the scale's start), whether the
// refusal was of the write's own replication or of a later repair push;
// once the condition ended a repair round (and the settle time) before
// that window, it is a G6 violation, as it is when the refusal is
// recorded as a moment (no Until): the seed's history, where the last
// refusal before the scale was at 1m2.9s and the condition lasted past
// the snapshot at 1m37s.
func TestRefusalOfAVersionAheadExcusesPlacementWhileItLasts(t *testing.T) {
	settle := DefaultOptions().FaultSettle
	start := 80 * sec
	ended := start - 2*settle - RepairRound // the earliest end the window counts
	build := func(refusedAt, until time.Duration) *History {
		h, after, _ := scaled(t)
		h.Scales[0].Start, h.Scales[0].End = start, start+3*sec
		h.Held[0].At, h.End = start+3*sec, 200*sec
		old := Replicas(h.Members, placedTimer, 2)
		h.Faults = []Fault{{At: refusedAt, Age: 2 * ms, Kind: Lost, Nodes: []string{old[0]}, Peers: []string{after[1]},
			Timer: placedTimer, Detail: "refused: its version dated beyond the receiver's clock lead", Until: until}}
		delete(h.Held[0].Live, after[1])
		return h
	}
	for _, c := range []struct {
		name             string
		refusedAt, until time.Duration
		excuse           FaultKind // "": a G6 violation
	}{
		{"lasting past the snapshot", 63 * sec, 150 * sec, Lost},
		{"a moment, the seed's record", 63 * sec, 0, ""},
		{"ended a round before the window, refused at the write", 5 * ms, ended, "write"},
		{"ended a round and a millisecond before the window, refused at the write", 5 * ms, ended - ms, ""},
		{"ended a round before the window, a later push refused", 20 * sec, ended, Lost},
		{"ended a round and a millisecond before the window, a later push refused", 20 * sec, ended - ms, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			vs, cov := DefaultOptions().Judge(build(c.refusedAt, c.until))
			if c.excuse == "" {
				requireHas(t, vs, "G6", "holds no copy")
				return
			}
			requireNone(t, vs)
			if want := excuseOf(Fault{Kind: c.excuse}); cov.Excused[want] == 0 {
				t.Errorf("excuses %v, want %s", cov.Excused, want)
			}
		})
	}
}

// TestLeavingNodeStoppedWithTheLastCopy is the shape of fresh seed
// 9553680 (scenarios/README.md C72): a scale-down takes a timer's third
// replica away; while it runs, the two staying replicas crash without
// storage, after the leaving one handed them the timer. The simulator
// stops the leaving node at the scale's end, and its copy goes with it:
// no copy is left, and the scale-up that brings the node back finds
// none to place (copies lost, not G6). With one staying replica crashed,
// the other kept the timer and each replica after the scale-up must
// hold it.
func TestLeavingNodeStoppedWithTheLastCopy(t *testing.T) {
	members := []string{"n1", "n2", "n3"}
	leaver := members[2]
	staying := members[:2]
	build := func(crashed ...string) *History {
		h := &History{
			Members: members,
			Ops:     []Op{write(1, Create, placedTimer, "a", 3600*sec, 3600*sec, 0, 10*ms, OK)},
			Scales: []Scale{
				{Kind: ScaleDown, Start: 25 * sec, End: 48 * sec, Before: members, After: staying},
				{Kind: ScaleUp, Start: 58 * sec, End: 61 * sec, Before: staying, After: members},
			},
			Held: []Held{{At: 61 * sec, Live: map[string][]uint64{}}},
			End:  70 * sec, LivenessFrom: 50 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
		}
		h.Ops[0].Node, h.Ops[0].Spec.ReplicationFactor = leaver, 3
		for i, n := range crashed {
			at := time.Duration(34+3*i) * sec
			h.Faults = append(h.Faults, Fault{At: at, Kind: Crash, Nodes: []string{n}}, Fault{At: at + 7*sec, Kind: Restart, Nodes: []string{n}})
		}
		return h
	}
	vs, cov := DefaultOptions().Judge(build(staying...))
	requireNone(t, vs)
	if cov.Excused[ExCopiesLost] == 0 {
		t.Errorf("copies-lost covered nothing: got %v, want the placement after the scale-up", cov.Excused)
	}
	requireHas(t, Check(build(staying[0])), "G6", "holds no copy")
}
