package checker

import (
	"testing"
	"time"
)

func TestHealthyHistoryHasNoViolation(t *testing.T) {
	// A timer created, popped on time, updated, popped with the new
	// definition, then deleted and silent produces no violation.
	h := healthy()
	h.Ops = append(h.Ops,
		write(2, Update, 1, "b", sec, 3*sec, 5500*ms, 5510*ms, OK),
		del(3, 1, 8600*ms, 8610*ms, OK))
	h.Pops = append(h.Pops, pops("n2", "b", 1, 3, 5500*ms)...)
	h.End = 12 * sec
	requireNone(t, Check(h))
	if ok, info := Linearizable(h); !ok {
		t.Fatalf("got not linearizable (%v), want linearizable", info.Violations)
	}
}

func TestEarlyPopIsG1(t *testing.T) {
	// A pop delivered half a second before its due time is reported as G1.
	h := healthy()
	h.Pops[2].At = 2500 * ms
	requireHas(t, requireOnly(t, Check(h), "G1"), "G1", "pop 3", "early")
}

func TestEarlyPopWithinClockGainIsAllowed(t *testing.T) {
	// A pop early by less than a forward jump of the clock of one of the
	// timer's nodes is no violation; the same jump on a node that holds no
	// replica excuses nothing, and neither does a general skew: start
	// times travel as deltas, so only a clock's gain can make a pop early.
	h := healthy()
	replicas, other := placeHealthy(h)
	h.MaxClockSkew = 50 * ms
	h.Pops[2].At = 3*sec - 40*ms
	requireHas(t, requireOnly(t, Check(h), "G1"), "G1", "pop 3", "early")
	jumped := *h
	jumped.Faults = []Fault{{At: 2 * sec, Kind: ClockJump, Nodes: []string{replicas[0]}, Detail: "+50ms"}}
	requireNone(t, Check(&jumped))
	jumped.Faults[0].Nodes = []string{other}
	requireHas(t, requireOnly(t, Check(&jumped), "G1"), "G1", "pop 3", "early")
}

func TestDroppedPopIsG2(t *testing.T) {
	// A due pop that never arrives, with no fault anywhere, is reported as
	// G2 and dated by its bound.
	h := without(healthy(), func(p Pop) bool { return p.Seq == 3 })
	v := requireHas(t, requireOnly(t, Check(h), "G2"), "G2", "pop 3", "never delivered")
	if v.At < 3*sec || v.At > 4*sec {
		t.Fatalf("got At %v, want within (3s, 4s)", v.At)
	}
}

func TestPopNotYetDueAtEndIsNotLost(t *testing.T) {
	// A pop whose bound lies after the end of history is not required.
	h := without(healthy(), func(p Pop) bool { return p.Seq == 5 })
	h.End = 5050 * ms
	requireNone(t, Check(h))
}

func TestLatePopIsG3(t *testing.T) {
	// A pop delivered 500ms late with no fault around is reported as G3.
	h := healthy()
	h.Pops[2].At = 3500 * ms
	requireHas(t, requireOnly(t, Check(h), "G3"), "G3", "pop 3", "late")
}

func TestLatePopWithinRankBoundDuringCrashIsAllowed(t *testing.T) {
	// With the primary crashed, the backup's pop 2s late is within G3's
	// replica-failure bound; 3s late is not.
	h := healthy()
	h.Faults = []Fault{{At: 1500 * ms, Kind: Crash, Nodes: []string{"n1"}}, {At: 3500 * ms, Kind: Restart, Nodes: []string{"n1"}}}
	h.Pops[1] = pop(4*sec+20*ms, "n2", "a", 2)
	requireNone(t, Check(h))
	h.Pops[1].At = 5100 * ms
	requireHas(t, Check(h), "G3", "pop 2", "late")
}

func TestLatePopWithAllReplicasDownIsExcused(t *testing.T) {
	// When as many nodes as the replication factor were down, no G3 bound
	// applies: the only replica left may pop when it comes back.
	h := healthy()
	h.Faults = []Fault{
		{At: 1500 * ms, Kind: Pause, Nodes: []string{"n1"}}, {At: 1500 * ms, Kind: Pause, Nodes: []string{"n2"}},
		{At: 6 * sec, Kind: Resume, Nodes: []string{"n1", "n2"}}}
	h.Pops[1].At = 6 * sec
	h.Pops = h.Pops[:2]
	requireNone(t, Check(h))
}

func TestDuplicateWithoutFaultIsG4(t *testing.T) {
	// The same pop delivered twice by two nodes with no fault is G4.
	h := healthy()
	h.Pops = append(h.Pops, pop(2*sec+30*ms, "n2", "a", 2))
	requireHas(t, requireOnly(t, Check(h), "G4"), "G4", "pop 2 delivered 2 times")
}

func TestDuplicateWithDifferentSeqIsG4(t *testing.T) {
	// A copy of pop 2 that carries seq 1 (its time fits only seq 2) is G4.
	h := healthy()
	h.Pops = append(h.Pops, pop(2*sec+40*ms, "n2", "a", 1))
	requireHas(t, requireOnly(t, Check(h), "G4"), "G4", "carries seq 1", "fits only seq [2]")
}

func TestSeqBeyondDefinitionIsG4(t *testing.T) {
	// A sixth pop of a timer that asked for five is G4, as is seq 0.
	h := healthy()
	h.Pops = append(h.Pops, pop(6*sec+20*ms, "n1", "a", 6), pop(7*sec, "n1", "a", 0))
	vs := requireOnly(t, Check(h), "G4")
	requireHas(t, vs, "G4", "got seq 6, want 1..5")
	requireHas(t, vs, "G4", "got seq 0, want 1..5")
}

func TestPopOfUnknownOpaqueIsG4(t *testing.T) {
	// A pop carrying an opaque no client sent is G4.
	h := healthy()
	h.Pops = append(h.Pops, pop(2*sec, "n1", "zzz", 1))
	requireHas(t, requireOnly(t, Check(h), "G4"), "G4", "no create or update sent")
}

func TestRepeatForBelowIntervalNeverPops(t *testing.T) {
	// repeat-for below interval asks for no pop: none is required, and one
	// that arrives is G4.
	h := &History{Ops: []Op{write(1, Create, 1, "a", 2*sec, sec, 0, 10*ms, OK)}, End: 10 * sec}
	requireNone(t, Check(h))
	h.Pops = []Pop{pop(2*sec+20*ms, "n1", "a", 1)}
	requireHas(t, Check(h), "G4", "want 1..0")
}

func TestIntervalZeroPopsOnceAtOnce(t *testing.T) {
	// An interval-0 timer pops once right away; missing it is G2.
	h := &History{Ops: []Op{write(1, Create, 1, "a", 0, 0, sec, sec+10*ms, OK)}, End: 10 * sec,
		Pops: []Pop{pop(sec+30*ms, "n1", "a", 1)}}
	requireNone(t, Check(h))
	h.Pops = nil
	requireHas(t, Check(h), "G2", "pop 1")
}

func TestDeleteThatDoesNotStickIsG5(t *testing.T) {
	// Pops that keep coming after a DELETE returned OK are G5, found both
	// by the direct check and by the porcupine model.
	h := healthy()
	h.Ops = append(h.Ops, del(2, 1, 2500*ms, 2510*ms, OK))
	vs := requireOnly(t, Check(h), "G5")
	requireHas(t, vs, "G5", "timer deleted by op 2", "3 such pops")
	requireHas(t, vs, "G5", "porcupine", "not linearizable")
	if ok, _ := Linearizable(h); ok {
		t.Fatalf("got linearizable, want not")
	}
}

func TestUpdateWhoseOldOpaqueKeepsPoppingIsG5(t *testing.T) {
	// After a PUT returned OK, pops of the old opaque are G5 (direct and
	// porcupine), while pops of the new one are fine.
	h := healthy()
	h.Ops = append(h.Ops, write(2, Update, 1, "b", sec, 3*sec, 2500*ms, 2510*ms, OK))
	h.Pops = append(h.Pops, pops("n1", "b", 1, 3, 2500*ms)...)
	vs := requireOnly(t, Check(h), "G5")
	requireHas(t, vs, "G5", `updated to opaque "b"`)
	requireHas(t, vs, "G5", "porcupine")
}

func TestPopInFlightDuringUpdateIsAllowed(t *testing.T) {
	// A pop of the old definition due just before the update returned
	// and delivered just after it is no violation.
	h := healthy()
	h.Pops = h.Pops[:3] // pops 1..3 of "a"
	h.Ops = append(h.Ops, write(2, Update, 1, "b", sec, sec, 3005*ms, 3010*ms, OK))
	h.Pops = append(h.Pops, pop(4010*ms+20*ms, "n1", "b", 1))
	requireNone(t, Check(h))
}

func TestPopOfRejectedWriteIsG5(t *testing.T) {
	// A write answered 400 changed nothing: a pop carrying its opaque is G5.
	h := healthy()
	h.Ops = append(h.Ops, write(2, Update, 1, "bad", sec, sec, 2500*ms, 2510*ms, Failed))
	h.Pops = append(h.Pops, pop(3520*ms, "n1", "bad", 1))
	requireHas(t, Check(h), "G5", "rejected")
}

func TestUnknownOutcomesAreHealthy(t *testing.T) {
	// Writes with unknown outcome that did or did not apply produce no
	// violation: an applied create pops, an unapplied one stays silent,
	// an applied update takes over, an unapplied delete changes nothing.
	h := &History{End: 20 * sec, MaxNetDelay: 5 * ms, MaxClockSkew: ms}
	h.Ops = []Op{
		write(1, Create, 0, "applied", sec, 2*sec, 0, 3*sec, Unknown),
		write(2, Create, 0, "lost", sec, 2*sec, 0, 3*sec, Unknown),
		write(3, Create, 7, "t7", sec, 10*sec, 0, 10*ms, OK),
		write(4, Update, 7, "t7b", sec, 10*sec, 2500*ms, 5*sec, Unknown),
		del(5, 7, 9*sec, 12*sec, Unknown),
	}
	h.Pops = append(pops("n1", "applied", 1, 2, 0), pops("n2", "t7", 1, 2, 0)...)
	h.Pops = append(h.Pops, pops("n2", "t7b", 1, 10, 2600*ms)...)
	requireNone(t, Check(h))
}

func TestDuplicatesDuringPartitionAreHealthy(t *testing.T) {
	// Two sides of a net-split popping the same seq is no violation.
	h := healthy()
	h.Faults = []Fault{{At: 1500 * ms, Kind: Partition, Nodes: []string{"n1"}, Peers: []string{"n2", "n3"}},
		{At: 3500 * ms, Kind: Heal}}
	h.LivenessFrom = 3500 * ms
	h.Pops = append(h.Pops, pop(2*sec+2020*ms, "n2", "a", 2), pop(3*sec+2020*ms, "n2", "a", 3))
	requireNone(t, Check(h))
}

func TestPendingTimerNeverPoppingAfterLivenessIsG7(t *testing.T) {
	// After the liveness phase began, a live timer whose pops stop is G7
	// (not G2), dated by the replica-failure bound.
	h := healthy()
	h.Ops[0].Spec.RepeatFor = 10 * sec
	h.End = 20 * sec
	h.Faults = []Fault{{At: 1500 * ms, Kind: Pause, Nodes: []string{"n3"}}, {At: 2500 * ms, Kind: Resume, Nodes: []string{"n3"}}}
	h.LivenessFrom = 3 * sec
	h.Pops = h.Pops[:2]
	vs := requireOnly(t, Check(h), "G7")
	requireHas(t, vs, "G7", "pop 3", "never delivered")
}

func TestLivenessExcusesOnlyThePopEveryReplicaFailed(t *testing.T) {
	// A callback fault over every replica's attempt at pop 2 excuses pop
	// 2; the pops after it are owed, after the liveness phase too (a
	// failure costs that pop, never the timer: docs/design.md 4.7). One
	// replica's failure is no excuse at all: the next pops at its rank.
	h := healthy()
	h.Ops[0].Spec.RepeatFor = 10 * sec
	h.End = 20 * sec
	h.Faults = []Fault{{At: 1500 * ms, Kind: FailCallback}, {At: 4500 * ms, Kind: CallbackOK}}
	h.LivenessFrom = 5 * sec
	h.Pops = pops("n1", "a", 1, 10, 0)
	h.Pops[1].Answered = 500
	requireHas(t, Check(h), "G2", "pop 2", "never delivered")
	again := pop(4*sec+20*ms, "n2", "a", 2)
	again.Answered = 503
	h.Pops = append(h.Pops, again)
	requireNone(t, Check(h))
	// Had the replicas given up on the timer after the failures, pops 3
	// and on would be missing.
	h.Pops = []Pop{h.Pops[0], h.Pops[1], again}
	requireHas(t, Check(h), "G7", "pop 6", "never delivered")
}

func TestNoSkewBetweenReplicasIsCaught(t *testing.T) {
	// Replication bug: backups pop with no rank skew, so every pop arrives
	// twice at the same moment with no fault: G4.
	h := healthy()
	h.Pops = append(h.Pops, pops("n2", "a", 1, 5, 0)...)
	requireHas(t, requireOnly(t, Check(h), "G4"), "G4", "delivered 2 times")
}

func TestLostPoppedNoticeIsCaught(t *testing.T) {
	// Replication bug: the primary's popped notice never reaches the
	// backup, which pops again 2s later with no fault: G4.
	h := healthy()
	h.Pops = append(h.Pops, pop(3*sec+2020*ms, "n2", "a", 3))
	requireHas(t, requireOnly(t, Check(h), "G4"), "G4", "pop 3 delivered 2 times")
}

func TestUnreplicatedDeleteIsCaught(t *testing.T) {
	// Replication bug: a DELETE applied on the primary only; the backup
	// keeps popping after it returned OK: G5.
	h := healthy()
	h.Ops = append(h.Ops, del(2, 1, 2500*ms, 2510*ms, OK))
	h.Pops = append(h.Pops[:2], pops("n2", "a", 3, 5, 2*sec)...)
	// The backup's pops are also 2s late with no fault (G3, G4): only G5
	// must be among them.
	requireHas(t, Check(h), "G5", "timer deleted")
}

func TestDeleteDuringPartitionIsExcused(t *testing.T) {
	// A DELETE that a net-split cut may leave a replica popping; outside
	// the porcupine stretch, that is no violation.
	h := healthy()
	h.Ops = append(h.Ops, del(2, 1, 2500*ms, 2510*ms, OK))
	h.Faults = []Fault{{At: 2 * sec, Kind: Partition, Nodes: []string{"n2"}, Peers: []string{"n1"}}, {At: 4 * sec, Kind: Heal}}
	h.LivenessFrom = 4 * sec
	h.Pops = append(h.Pops[:2], pops("n2", "a", 3, 5, 2*sec)...)
	requireNone(t, Check(h))
}

func TestReplicaCutOffFromADeleteStopsOnceRepaired(t *testing.T) {
	// A net-split keeps a DELETE from the backup, which pops on after the
	// heal; its first pop's notice meets the tombstone and repairs it, so
	// a pop a notice's round trip after that one is a violation, unless a
	// fault kept the notice from the others.
	build := func(faults ...Fault) *History {
		h := healthy()
		h.Ops[0].Spec.RepeatFor = 12 * sec
		h.Ops = append(h.Ops, del(2, 1, 2500*ms, 2510*ms, OK))
		h.Faults = append([]Fault{{At: 2 * sec, Kind: Partition, Nodes: []string{"n2"}, Peers: []string{"n1"}}, {At: 4 * sec, Kind: Heal}}, faults...)
		h.LivenessFrom = 14 * sec
		h.End = 20 * sec
		h.Pops = append(h.Pops[:2], pops("n2", "a", 3, 12, 2*sec)...)
		return h
	}
	requireHas(t, Check(build()), "G5", "pop n2 delivered at 5.02s should have repaired")
	// Cut off again before its first pop until its last: none repaired it.
	requireNone(t, Check(build(Fault{At: 4500 * ms, Kind: Partition, Nodes: []string{"n2"}, Peers: []string{"n1"}},
		Fault{At: 13 * sec, Kind: Heal})))
	// The primary crashed after the delete and forgot its tombstone: the
	// backup's notices meet nothing.
	requireNone(t, Check(build(Fault{At: 4500 * ms, Kind: Crash, Nodes: []string{"n1"}},
		Fault{At: 4600 * ms, Kind: Restart, Nodes: []string{"n1"}})))
}

func TestCheckIsSortedByTimeThenGuarantee(t *testing.T) {
	// Check's output is ordered by At, then Guarantee.
	h := healthy()
	h.Pops[0].At = 500 * ms                                 // G1 at 0.5s
	h.Pops = append(h.Pops, pop(4*sec+30*ms, "n2", "a", 4)) // G4
	h.Pops = append(h.Pops, pop(2*sec, "n1", "zzz", 1))     // G4 at 2s
	vs := Check(h)
	for i := 1; i < len(vs); i++ {
		a, b := vs[i-1], vs[i]
		if a.At > b.At || a.At == b.At && a.Guarantee > b.Guarantee {
			t.Fatalf("got order:\n%s\nwant by At then Guarantee", dump(vs))
		}
	}
	if len(vs) != 3 {
		t.Fatalf("got %d violations:\n%s\nwant 3", len(vs), dump(vs))
	}
}

func TestTimelinePairsFaultsWithTheirEnds(t *testing.T) {
	// Each fault is active from its At to its matching end event, or to
	// the liveness phase when nothing ends it.
	h := &History{End: 100 * sec, LivenessFrom: 50 * sec, Faults: []Fault{
		{At: 1 * sec, Kind: Crash, Nodes: []string{"a"}},
		{At: 2 * sec, Kind: Crash, Nodes: []string{"b"}},
		{At: 3 * sec, Kind: Restart, Nodes: []string{"b"}},
		{At: 4 * sec, Kind: ClockJump, Nodes: []string{"c"}},
		{At: 5 * sec, Kind: Restart, Nodes: []string{"a"}},
	}}
	tl := buildTimeline(h, h.End, 0)
	want := []struct{ from, to time.Duration }{{sec, 5 * sec}, {2 * sec, 3 * sec}, {4 * sec, 50 * sec}}
	if len(tl.spans) != len(want) {
		t.Fatalf("got %d spans, want %d", len(tl.spans), len(want))
	}
	for i, w := range want {
		if got := tl.spans[i]; got.from != w.from || got.to != w.to {
			t.Fatalf("span %d: got [%v, %v], want [%v, %v]", i, got.from, got.to, w.from, w.to)
		}
	}
}

func TestWriteHeldUpByPauseAllowsThatMuchLateness(t *testing.T) {
	// A replica paused during the write applies start-time-delta when it
	// resumes, so every later pop may run late by the pause (heldFor):
	// pops 400ms late after a 500ms pause around the write pass, long
	// after the fault ended; 700ms late is still G3.
	h := healthy()
	h.End = 20 * sec
	h.Ops[0].Spec.RepeatFor = 15 * sec
	h.Pops = pops("n1", "a", 1, 15, 400*ms)
	h.Faults = []Fault{{At: 0, Kind: Pause, Nodes: []string{"n2"}}, {At: 500 * ms, Kind: Resume, Nodes: []string{"n2"}}}
	requireNone(t, Check(h))
	h.Pops[12].At += 300 * ms
	requireHas(t, requireOnly(t, Check(h), "G3"), "G3", "pop 13", "late")
}

func TestLatePopOfSupersededDefinitionIsNotJudgedLate(t *testing.T) {
	// The backup skipped pop 2 because an update superseded the timer
	// before the backup's turn; the paused primary delivered pop 2 of
	// the old definition when it resumed. That is no lateness (G3): the
	// update was invoked before pop 2's deadline.
	h := healthy()
	h.Faults = []Fault{{At: 1500 * ms, Kind: Pause, Nodes: []string{"n1"}}, {At: 4500 * ms, Kind: Resume, Nodes: []string{"n1"}}}
	h.Ops = append(h.Ops, write(2, Update, 1, "b", sec, sec, 2100*ms, 2600*ms, OK))
	h.Pops = append(h.Pops[:1], pop(4500*ms, "n1", "a", 2), pop(3600*ms, "n2", "b", 1))
	requireNone(t, Check(h))
	h.Ops = h.Ops[:1]
	h.Pops = h.Pops[:2]
	requireHas(t, Check(h), "G3", "pop 2", "late")
}
