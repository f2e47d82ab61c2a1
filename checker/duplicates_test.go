package checker

import (
	"cmp"
	"fmt"
	"slices"
	"testing"
	"time"
)

func TestRefusedCallbackRetriedIsNoDuplicate(t *testing.T) {
	// A callback the endpoint refused is popped again by the next replica
	// 2s later (docs/design.md 4.7): no G4, though later pops need not come.
	h := healthy()
	h.Ops[0].Spec.RepeatFor = 2 * sec
	h.Pops = h.Pops[:2]
	h.Pops[1].Answered = 500
	h.Faults = []Fault{{At: 1500 * ms, Kind: FailCallback}, {At: 2100 * ms, Kind: CallbackOK}}
	h.LivenessFrom = 2100 * ms
	h.Pops = append(h.Pops, pop(4020*ms, "n2", "a", 2))
	requireNone(t, Check(h))
}

// TestCutDuringAnUnansweredCreateExcusesItsCatchUp is a case the sweep
// found: a create whose answer was lost (the client never learned its
// ID) was cut off from its primary and first backup while it ran, so
// only the last backup held it and popped 1 at its rank; its notice
// brought the timer to the other two at once, with pop 2 overdue on
// both, and each popped it (G4). The cut touched the write, as it
// touches any write of a known timer; the same cut on a member that took
// no part is no excuse.
func TestCutDuringAnUnansweredCreateExcusesItsCatchUp(t *testing.T) {
	members := []string{"n1", "n2", "n3", "n4", "n5"}
	r := Replicas(members, placedTimer, 3)
	var idle []string
	for _, m := range members {
		if !slices.Contains(r, m) {
			idle = append(idle, m)
		}
	}
	proxy, other := idle[0], idle[1]
	for _, cut := range []string{proxy, other} {
		h := &History{
			Members:      members,
			Ops:          []Op{write(1, Create, 0, "a", 2*sec, 4*sec, 0, 500*ms, Unknown)},
			Faults:       []Fault{{At: 0, Kind: Partition, Nodes: []string{cut}, Peers: r[:2]}, {At: 200 * ms, Kind: Heal}},
			End:          10 * sec,
			MaxClockSkew: ms,
			MaxNetDelay:  5 * ms,
		}
		h.Ops[0].Node, h.Ops[0].Spec.ReplicationFactor = proxy, 3
		h.Pops = []Pop{pop(6020*ms, r[2], "a", 1), pop(6022*ms, r[0], "a", 2), pop(6024*ms, r[1], "a", 2)}
		for i := range h.Pops {
			h.Pops[i].Timer = placedTimer
		}
		if vs := Check(h); cut == proxy {
			requireNone(t, vs)
		} else {
			requireHas(t, vs, "G4")
		}
	}
}

// TestCrashWhileAPopIsOnTheWireLetsTheReplicaForget: a replica that sent
// pop 3 and crashed before the callback reached the endpoint comes back
// from its last saved progress and makes pop 3 again; the crash came
// after the attempt was sent, so it is the crash that lets it forget.
// The same second attempt with the crash only after it is a violation.
func TestCrashWhileAPopIsOnTheWireLetsTheReplicaForget(t *testing.T) {
	for _, crashAt := range []time.Duration{3*sec + 2*ms, 4*sec + 500*ms} {
		h := healthy()
		first := h.Pops[2] // pop 3, delivered at 3 s plus a few ms
		h.Pops = append(h.Pops[:3], pop(first.At+900*ms, "n1", "a", 3))
		h.Pops = append(h.Pops, pops("n1", "a", 4, 5, 0)...)
		h.Faults = []Fault{{At: first.At - 2*ms, Kind: Crash, Nodes: []string{"n1"}}, {At: first.At + 800*ms, Kind: Restart, Nodes: []string{"n1"}}}
		if crashAt > first.At+900*ms {
			h.Faults = []Fault{{At: crashAt, Kind: Crash, Nodes: []string{"n1"}}, {At: crashAt + 100*ms, Kind: Restart, Nodes: []string{"n1"}}}
		}
		vs := Check(h)
		if crashAt > first.At+900*ms {
			requireHas(t, vs, "G4")
		} else {
			requireNone(t, vs)
		}
	}
}

// TestRestartFromDiskRepeatsAPopAtALaterPopsTime proves a pop the one
// replica of an rf 1 timer repeats after a restart from disk, whose progress had not reached the
// disk (full from 2.5 s until its crash at 3.5 s), is judged as a repeat
// (forgot), though it comes at once at the restart, at pop 4's time, a
// seq its time does not fit; from a node that did not crash it is G4.
func TestRestartFromDiskRepeatsAPopAtALaterPopsTime(t *testing.T) {
	for _, crashed := range []bool{true, false} {
		h := healthy()
		h.Storage, h.Ops[0].Spec.ReplicationFactor = true, 1
		h.Faults = []Fault{{At: 2500 * ms, Kind: DiskFull, Nodes: []string{"n1"}}}
		if crashed {
			h.Faults = append(h.Faults, Fault{At: 3500 * ms, Kind: Crash, Nodes: []string{"n1"}},
				Fault{At: 3500 * ms, Kind: DiskOK, Nodes: []string{"n1"}}, Fault{At: 4 * sec, Kind: Restart, Nodes: []string{"n1"}})
		}
		h.Pops = slices.Insert(h.Pops, 3, pop(4*sec+ms, "n1", "a", 2))
		vs, cov := DefaultOptions().Judge(h)
		if !crashed {
			requireHas(t, requireOnly(t, vs, "G4"), "G4", "pop 2 delivered twice")
			continue
		}
		requireNone(t, vs)
		if cov.Excused[ExForgot] == 0 {
			t.Errorf("forgot excused nothing: %v", cov.Excused)
		}
	}
}

// TestReplicaThatLeftAndJoinedAgainForgot proves a replica that attempted
// a pop (its callback failed), was stopped by a scale-down and came back
// by a later scale-up as a new node may attempt that pop again: a record
// it is given marks the pop missed, and it holds nothing of what it did
// before it left (docs/design.md 4.7). A scale-down that completes only
// after the second attempt excuses nothing: G4.
func TestReplicaThatLeftAndJoinedAgainForgot(t *testing.T) {
	for _, left := range []bool{true, false} {
		h := healthy()
		first := h.Pops[2] // pop 3
		h.Pops[2].Answered = 500
		again := first.At + 900*ms
		h.Pops = append(h.Pops[:3], pop(again, "n1", "a", 3))
		h.Pops = append(h.Pops, pops("n1", "a", 4, 5, 0)...)
		down := first.At + 100*ms
		if !left {
			down = again + 100*ms
		}
		h.Scales = []Scale{
			{Kind: ScaleDown, Start: down - 50*ms, End: down, Before: []string{"n1", "n2"}, After: []string{"n2"}},
			{Kind: ScaleUp, Start: down + 50*ms, End: down + 200*ms, Before: []string{"n2"}, After: []string{"n2", "n1"}},
		}
		vs, cov := DefaultOptions().Judge(h)
		if !left {
			requireHas(t, requireOnly(t, vs, "G4"), "G4", "pop 3 delivered twice by n1")
			continue
		}
		requireNone(t, vs)
		if cov.Excused[ExForgot] == 0 {
			t.Errorf("forgot excused nothing: %v", cov.Excused)
		}
	}
}

// TestStartSpreadLastsWhileItsNoticesAreKept proves a start a waited
// replication set apart excuses the duplicates of later pops too while
// no notice handed the late replica the true start: the backup takes the
// write, its replication to the primary waits 1.95 s, so the primary
// pops each pop as the backup's rank comes; the notices of pop 1 both
// ways are lost, so pop 2 meets the backup's rank again. The same pops
// with the notices through (the primary took the backup's start, and
// should have popped 2 s before the backup) are a duplicate with no
// fault around it (G4).
func TestStartSpreadLastsWhileItsNoticesAreKept(t *testing.T) {
	for _, lost := range []bool{true, false} {
		h, p, b, _ := placed(t)
		h.Ops[0].Node, h.Ops[0].Return = b, 1960*ms
		h.Ops[0].Spec.Interval, h.Ops[0].Spec.RepeatFor = 10*sec, 60*sec
		h.End = 70 * sec
		h.Faults = []Fault{{At: 5 * ms, Kind: Overload, Nodes: []string{b}, Peers: []string{p},
			Detail: "waited=1.95s record", Timer: placedTimer}}
		if lost {
			h.Faults = append(h.Faults,
				Fault{At: 11952 * ms, Kind: Lost, Nodes: []string{p}, Peers: []string{b}, Timer: placedTimer},
				Fault{At: 12022 * ms, Kind: Lost, Nodes: []string{b}, Peers: []string{p}, Timer: placedTimer})
		}
		h.Pops = h.Pops[:6]
		for k := range h.Pops {
			h.Pops[k].At = time.Duration(k+1)*10*sec + 1950*ms
		}
		for k := 1; k <= 2; k++ {
			dup := pop(time.Duration(k)*10*sec+2020*ms, b, "a", k)
			dup.Timer = placedTimer
			h.Pops = append(h.Pops, dup)
		}
		vs, cov := DefaultOptions().Judge(h)
		if !lost {
			requireHas(t, requireOnly(t, vs, "G4"), "G4", "pop 2 delivered 2 times with no fault around it")
			continue
		}
		requireNone(t, vs)
		if cov.Excused[ExFault+"/"+Excuse(startSpreadFault)] == 0 {
			t.Errorf("start-spread excused nothing: %v", cov.Excused)
		}
	}
}

// TestStartSpreadAddsTheClocksMovedSince proves a replication wait and
// a clock's movement, each within the margin a backup's rank skew leaves
// (1.86 s here) but past it together, set the replicas' starts apart
// (scenarios/README.md C41): the backup takes the write, its
// replication to the primary waits 1.8 s, so the primary starts 1.8 s
// late; then the backup's clock steps 150 ms ahead, so it pops 150 ms
// earlier in true time, and its turn for pop 1 comes 50 ms after the
// primary's: both deliver it, excused by start-spread; so with the
// primary's clock stepped 150 ms back instead (it pops later still).
// Bounded: the same step on a member of no role moves no replica's
// schedule, a step of 50 ms leaves the sum (1.85 s) within the margin,
// and the backup's clock stepped back draws the schedules apart; each is
// a duplicate with no fault around it (G4).
func TestStartSpreadAddsTheClocksMovedSince(t *testing.T) {
	for _, c := range []struct {
		name     string
		on, step string
		late     time.Duration // the primary's pops past due
		excused  bool
	}{
		{"backup ahead 150ms", "backup", "+150ms", 1800 * ms, true},
		{"primary back 150ms", "primary", "-150ms", 1950 * ms, true},
		{"other ahead 150ms", "other", "+150ms", 1800 * ms, false},
		{"backup ahead 50ms", "backup", "+50ms", 1800 * ms, false},
		{"backup back 150ms", "backup", "-150ms", 1800 * ms, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, p, b, o := placed(t)
			h.Ops[0].Node, h.Ops[0].Return = b, 1810*ms
			h.Ops[0].Spec.Interval, h.Ops[0].Spec.RepeatFor = 10*sec, 60*sec
			h.End = 70 * sec
			stepped := map[string]string{"backup": b, "primary": p, "other": o}[c.on]
			h.Faults = []Fault{
				{At: 5 * ms, Kind: Overload, Nodes: []string{b}, Peers: []string{p},
					Detail: "waited=1.8s record", Timer: placedTimer},
				{At: 5 * sec, Kind: ClockJump, Nodes: []string{stepped}, Detail: c.step}}
			h.Pops = h.Pops[:6]
			for k := range h.Pops {
				h.Pops[k].At = time.Duration(k+1)*10*sec + c.late
			}
			dup := pop(c.late+10*sec+70*ms, b, "a", 1)
			dup.Timer = placedTimer
			h.Pops = append(h.Pops, dup)
			requireDuplicateExcusedBy(t, h, 1, c.excused, startSpreadFault)
		})
	}
}

// TestTombstoneEndedEarlyByAStartHoldersClock proves a replica whose
// tombstone ended early because a start it took came from a holder
// whose clock had stepped ahead may make a pop again (forgot): the
// backup's clock steps 3 s ahead after the create, the primary takes
// the start the backup hands on (the earliest start wins), 3 s early in
// true time, and its tombstone, measured from it, ends 3 s before the
// last due time plus its life; a replica paused meanwhile brings the
// finished timer back, and the primary pops pop 10 again 2 s before
// that. Stepped on a node that never held the start, or 4 s before the
// life's end, the second attempt is G4 (scenarios/README.md C31).
func TestTombstoneEndedEarlyByAStartHoldersClock(t *testing.T) {
	for _, c := range []struct {
		name    string
		holder  bool
		early   time.Duration
		violate bool
	}{
		{"a holder's step", true, 2 * sec, false},
		{"past the holder's step", true, 4 * sec, true},
		{"a step on a node without the start", false, 2 * sec, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, p, b, other := placed(t)
			stepped := other
			if c.holder {
				stepped = b
			}
			h.Faults = []Fault{{At: 500 * ms, Kind: ClockJump, Nodes: []string{stepped}, Detail: "+3s"}}
			again := pop(10*sec+TombstoneLife-c.early, p, "a", 10)
			again.Timer = placedTimer
			h.Pops = append(h.Pops, again)
			vs, cov := DefaultOptions().Judge(h)
			if c.violate {
				requireHas(t, requireOnly(t, vs, "G4"), "G4", "pop 10 delivered twice by "+p)
				return
			}
			requireNone(t, vs)
			if cov.Excused[ExForgot] == 0 {
				t.Errorf("forgot excused nothing: %v", cov.Excused)
			}
		})
	}
}

// TestCrashWhileAPopWaitsAtItsEndpointLetsTheReplicaForget proves the
// crash that lets a replica forget a pop may come after the pop was made
// by more than one network delay before its endpoint took it: a callback
// of a burst of missed pops (a restart from disk makes them at once)
// waits in its endpoint's queue for the ones before it, briefly, unrecorded
// (within the healthy delay, seed 2400889), or long, recorded (a Queued
// fault). The replica crashes while the callback waits, comes back from its
// last saved progress and makes the pop again: forgot. The same crash
// earlier than the pop could have been made (its delivery less the waits
// and the healthy delay), with the replica back before it made the first
// attempt, leaves two attempts in one run: G4.
func TestCrashWhileAPopWaitsAtItsEndpointLetsTheReplicaForget(t *testing.T) {
	for _, c := range []struct {
		name     string
		at       time.Duration // the first delivery of pop 3
		queued   time.Duration // its recorded wait in the endpoint's queue, 0 for none
		crash    time.Duration
		violated bool
	}{
		{"unrecorded wait, crash while it waited", 3060 * ms, 0, 3025 * ms, false},
		{"recorded wait, crash while it waited", 3611 * ms, 600 * ms, 3300 * ms, false},
		{"unrecorded wait, crash before the pop was made", 3060 * ms, 0, 2900 * ms, true},
		{"recorded wait, crash before the pop was made", 3611 * ms, 600 * ms, 2850 * ms, true},
		{"crash after the second attempt", 3060 * ms, 0, 3900 * ms, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, p, _, _ := placed(t)
			h.Pops[2].At = c.at
			again := pop(3800*ms, p, "a", 3)
			again.Timer = placedTimer
			h.Pops = slices.Insert(h.Pops, 3, again)
			h.Faults = []Fault{{At: c.crash, Kind: Crash, Nodes: []string{p}}, {At: c.crash + 50*ms, Kind: Restart, Nodes: []string{p}}}
			if c.queued > 0 {
				h.Faults = append(h.Faults, Fault{At: c.at - c.queued - ms, Kind: Queued, Nodes: []string{p}, Peers: []string{"client"},
					Detail: "waited=" + c.queued.String(), Timer: placedTimer})
				slices.SortFunc(h.Faults, func(a, b Fault) int { return cmp.Compare(a.At, b.At) })
			}
			requireRepeat(t, h, c.violated, "pop 3 delivered twice by")
		})
	}
}

// TestTombstoneEndsEarlyByTheClocksItsStartCameThrough proves a replica's
// tombstone may end before the definition's last due time plus its life
// by what the clocks that held its schedule gained (seed 2500304): the
// replica measures the tombstone from its own start, and a start taken
// from a replica whose clock had stepped 4 s ahead is 4 s early. A stale
// message replayed after that brings the definition back, and the
// replica makes its last pop again: forgot. With no clock ahead, a jump
// back, or a repeat before the early end, the tombstone was still there:
// G4.
func TestTombstoneEndsEarlyByTheClocksItsStartCameThrough(t *testing.T) {
	for _, c := range []struct {
		name     string
		jump     string // the backup's clock step at 500 ms, "" for none
		again    time.Duration
		violated bool
	}{
		{"backup's clock ahead, repeat after the early end", "+4s", 17 * sec, false},
		{"no clock ahead", "", 17 * sec, true},
		{"backup's clock back", "-4s", 17 * sec, true},
		{"backup's clock ahead, repeat before the early end", "+4s", 15500 * ms, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, p, b, o := placed(t)
			if c.jump != "" {
				h.Faults = append(h.Faults, Fault{At: 500 * ms, Kind: ClockJump, Nodes: []string{b}, Detail: c.jump})
			}
			h.Faults = append(h.Faults, Fault{At: c.again - 2*ms, Kind: Late, Nodes: []string{o}, Peers: []string{p},
				Detail: "replayed=11s", Timer: placedTimer})
			again := pop(c.again, p, "a", 10)
			again.Timer = placedTimer
			h.Pops = append(h.Pops, again)
			requireRepeat(t, h, c.violated, "pop 10 delivered twice by")
		})
	}
}

// requireRepeat judges h, whose replica attempted a pop twice: the G4
// violation want when violated, else no violation and the repeat excused
// as forgot.
func requireRepeat(t *testing.T, h *History, violated bool, want string) {
	t.Helper()
	vs, cov := DefaultOptions().Judge(h)
	if violated {
		requireHas(t, requireOnly(t, vs, "G4"), "G4", want)
		return
	}
	requireNone(t, vs)
	if cov.Excused[ExForgot] == 0 {
		t.Errorf("forgot excused nothing: %v", cov.Excused)
	}
}

// TestClockMovedSinceTheStartWasTakenMayDuplicate proves a replica whose
// clock moved past the margin a backup's rank skew leaves (1.89 s here)
// since the write may pop at an earlier rank's turn although the offsets
// at every instant stay within it (scenarios/README.md C45, seed
// 4901412): the backup's clock steps 1 s back, it takes the primary's
// start from the notice of pop 1 (the earlier start wins, rebuilt on its
// clock as it stands), and its clock steps 2 s ahead; its start is then
// 2 s early in true time, its offset only 1 s, and it pops pop 2 at the
// primary's turn: excused as clock-moved; so with the primary's clock
// stepped 1 s ahead and 2 s back (its schedule late). Bounded: the same
// steps on a member of no role, a second step of 800 ms (1.8 s moved in
// all), the second step after the duplicate, both replicas' clocks
// stepped 900 ms back (each late by it, neither drawn to the other), or
// the backup's stepped 1 s ahead and back (the step back only undoes the
// gain: 1 s moved, not 2 s), are G4.
func TestClockMovedSinceTheStartWasTakenMayDuplicate(t *testing.T) {
	type step struct {
		on, jump string
		at       time.Duration
	}
	for _, c := range []struct {
		name    string
		steps   []step
		excused bool
	}{
		{"backup back 1s then ahead 2s", []step{{"backup", "-1s", 5 * sec}, {"backup", "+2s", 15 * sec}}, true},
		{"primary ahead 1s then back 2s", []step{{"primary", "+1s", 5 * sec}, {"primary", "-2s", 15 * sec}}, true},
		{"other back 1s then ahead 2s", []step{{"other", "-1s", 5 * sec}, {"other", "+2s", 15 * sec}}, false},
		{"backup back 1s then ahead 800ms", []step{{"backup", "-1s", 5 * sec}, {"backup", "+800ms", 15 * sec}}, false},
		{"backup ahead 2s after the duplicate", []step{{"backup", "-1s", 5 * sec}, {"backup", "+2s", 25 * sec}}, false},
		{"both back 900ms", []step{{"backup", "-900ms", 5 * sec}, {"primary", "-900ms", 15 * sec}}, false},
		{"backup ahead 1s then back 1s", []step{{"backup", "+1s", 5 * sec}, {"backup", "-1s", 15 * sec}}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, p, b, o := placed(t)
			h.Ops[0].Spec.Interval, h.Ops[0].Spec.RepeatFor = 10*sec, 40*sec
			h.End = 50 * sec
			h.Faults = nil
			for _, s := range c.steps {
				on := map[string]string{"backup": b, "primary": p, "other": o}[s.on]
				h.Faults = append(h.Faults, Fault{At: s.at, Kind: ClockJump, Nodes: []string{on}, Detail: s.jump})
			}
			h.Pops = h.Pops[:4]
			for k := range h.Pops {
				h.Pops[k].At = time.Duration(k+1)*10*sec + 20*ms
			}
			dup := pop(20*sec+30*ms, b, "a", 2)
			dup.Timer = placedTimer
			h.Pops = slices.Insert(h.Pops, 2, dup)
			requireDuplicateExcusedBy(t, h, 2, c.excused, clockMovedFault)
		})
	}
}

// requireDuplicateExcusedBy judges h and wants pop seq's duplicate
// excused by a fault of the given kind, or, unless excused, the G4 of a
// duplicate with no fault around it and nothing else.
func requireDuplicateExcusedBy(t *testing.T, h *History, seq int, excused bool, kind FaultKind) {
	t.Helper()
	vs, cov := DefaultOptions().Judge(h)
	if !excused {
		requireHas(t, requireOnly(t, vs, "G4"), "G4", fmt.Sprintf("pop %d delivered 2 times with no fault around it", seq))
		return
	}
	requireNone(t, vs)
	if cov.Excused[ExFault+"/"+Excuse(kind)] == 0 {
		t.Errorf("%s excused nothing: %v", kind, cov.Excused)
	}
}

// TestHandOffHolderPopsAfterEveryReplica proves the scale's fault window
// excuses no duplicate that a holder the scale left out made before its
// hand-off rank (handOffEarly): an rf 2 timer the scale-up of n4 at 5 s
// moves from [n1 n2] to [n1 n4], every 10 s from 10 s. n2, reloaded at
// 5.5 s, keeps its copy until n4 holds it, popping after both replicas'
// turns (due + 4 s). Pop 1 delivered by n1 at its due time and by n2
// within the move: at n2's hand-off rank the window excuses it; at the
// primary's time it is G4 (mutations/escaped non-replica-pops-first). A
// pop n2 may have decided before it reloaded (its old rank, 2 s; also one
// delivered after a reload that came once the pop was due) is excused,
// as is one made while another scale began.
func TestHandOffHolderPopsAfterEveryReplica(t *testing.T) {
	const id = 0x0b061cf0001d7004
	three, four := []string{"n1", "n2", "n3"}, []string{"n1", "n2", "n3", "n4"}
	for _, c := range []struct {
		name     string
		at       time.Duration // n2's delivery of pop 1
		reloaded time.Duration
		again    bool // another scale begins at 9 s
		want     string
	}{
		{"at its hand-off rank", 14*sec + 20*ms, 5500 * ms, false, ""},
		{"at the primary's time", 10*sec + 30*ms, 5500 * ms, false, "G4"},
		{"at the first backup's time", 12*sec + 20*ms, 5500 * ms, false, "G4"},
		{"at its old rank before it reloaded", 12*sec + 20*ms, 13 * sec, false, ""},
		// Decided at the old rank, then held for a callback worker past
		// the reload (fresh seed 8467979).
		{"decided before it reloaded, delivered after", 12*sec + 20*ms, 11 * sec, false, ""},
		{"while another scale began", 10*sec + 30*ms, 5500 * ms, true, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &History{
				Members: three,
				Ops:     []Op{write(1, Create, id, "a", 10*sec, 30*sec, 0, 10*ms, OK)},
				Scales: []Scale{{Kind: ScaleUp, Start: 5 * sec, End: 16 * sec, Before: three, After: four,
					Reloaded: map[string]time.Duration{"n1": 5 * sec, "n2": c.reloaded, "n3": 5 * sec}}},
				Faults: []Fault{{At: 5 * sec, Kind: ScaleUp, Nodes: []string{"n4"}}},
				End:    60 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
			}
			if c.again {
				h.Scales = append(h.Scales, Scale{Kind: ScaleDown, Start: 9 * sec, Before: four, After: three})
			}
			for k := 1; k <= 3; k++ {
				h.Pops = append(h.Pops, pop(time.Duration(k)*10*sec+20*ms, "n1", "a", k))
			}
			h.Pops = append(h.Pops, pop(c.at, "n2", "a", 1))
			slices.SortFunc(h.Pops, func(a, b Pop) int { return int(a.At - b.At) })
			for i := range h.Pops {
				h.Pops[i].Timer = id
			}
			vs := Check(h)
			if c.want == "" {
				requireNone(t, vs)
				return
			}
			requireHas(t, vs, c.want, "hand-off rank")
		})
	}
}

// TestCallbackFaultExcusesNoPopAfterOneItsNodeTookAsMade proves a
// callback endpoint's fault excuses a pop delivered again after an
// accepted delivery only when that delivery's node may have taken it
// for a failure (checkDuplicates): rf 3, every 10 s. The primary's
// callback of pop 1 is refused (fail-callback from 9.5 s to 10.5 s), the
// first backup's is accepted at its rank, and the second backup pops it
// again at its own: the first backup knew it made the pop and told the
// others (mutations/escaped popped-answer-ignored), so that is G4. With
// the endpoint answering the first backup slowly (past the service's
// timeout), that backup took its pop for a failure, and the second
// backup's is the redundancy path.
func TestCallbackFaultExcusesNoPopAfterOneItsNodeTookAsMade(t *testing.T) {
	const cb = "http://client/cb"
	for _, slow := range []bool{false, true} {
		h := &History{
			Members: []string{"n1", "n2", "n3"},
			Ops:     []Op{write(1, Create, placedTimer, "a", 10*sec, 30*sec, 0, 10*ms, OK)},
			Faults: []Fault{{At: 9500 * ms, Kind: FailCallback, Nodes: []string{cb}},
				{At: 10500 * ms, Kind: CallbackOK, Nodes: []string{cb}}},
			End: 60 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
		}
		h.Ops[0].Spec.ReplicationFactor = 3
		if slow {
			h.Faults = append(h.Faults, Fault{At: 11500 * ms, Kind: SlowCallback, Nodes: []string{cb}},
				Fault{At: 12500 * ms, Kind: CallbackOK, Nodes: []string{cb}})
		}
		r := Replicas(h.Members, placedTimer, 3)
		first := pop(10*sec+20*ms, r[0], "a", 1)
		first.Answered = 500
		h.Pops = []Pop{first, pop(12*sec+20*ms, r[1], "a", 1), pop(14*sec+20*ms, r[2], "a", 1),
			pop(20*sec+20*ms, r[0], "a", 2), pop(30*sec+20*ms, r[0], "a", 3)}
		for i := range h.Pops {
			h.Pops[i].Timer = placedTimer
		}
		vs := Check(h)
		if slow {
			requireNone(t, vs)
		} else {
			requireHas(t, vs, "G4", "pop 1")
		}
	}
}

// TestSlowAnswerWithinTheTimeoutExcusesADuplicateOnlyUntilTheWord proves
// a slow callback endpoint excuses a pop delivered again after an
// accepted one, whose endpoint answered within the callback timeout,
// only while that node's word that it made the pop may not have reached
// the replica that popped again (tookAsMade, afterWord): rf 3, every
// 10 s, the endpoint slow from 9.5 s to 15 s. The primary's pop 1 is
// accepted at 10.02 s and answered 1.2 s later, so its notice reached the
// others by 11.23 s, and the first backup popping it at its rank (12.02
// s) popped a pop it had been told was made (the mutations
// trim-keeps-owed and popped-answer-ignored): G4. Delivered at 11.2 s,
// the backup made it before the word could reach it; with the endpoint
// answering 2.5 s late, past the timeout, the primary took its pop for a
// failure and the backup's is the redundancy path; and an endpoint
// whose delay the history does not say excuses it as before.
func TestSlowAnswerWithinTheTimeoutExcusesADuplicateOnlyUntilTheWord(t *testing.T) {
	const cb = "http://client/cb"
	for _, c := range []struct {
		name  string
		delay string
		again time.Duration
		dup   bool
	}{
		{"after the word", "delay=1.2s", 12020 * ms, true},
		{"before the word", "delay=1.2s", 11200 * ms, false},
		{"past the timeout", "delay=2.5s", 12020 * ms, false},
		{"delay unknown", "", 12020 * ms, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &History{
				Members: []string{"n1", "n2", "n3"},
				Ops:     []Op{write(1, Create, placedTimer, "a", 10*sec, 30*sec, 0, 10*ms, OK)},
				Faults: []Fault{{At: 9500 * ms, Kind: SlowCallback, Nodes: []string{cb}, Detail: c.delay},
					{At: 15 * sec, Kind: CallbackOK, Nodes: []string{cb}}},
				End: 60 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
			}
			h.Ops[0].Spec.ReplicationFactor = 3
			r := Replicas(h.Members, placedTimer, 3)
			h.Pops = []Pop{pop(10*sec+20*ms, r[0], "a", 1), pop(c.again, r[1], "a", 1),
				pop(20*sec+20*ms, r[0], "a", 2), pop(30*sec+20*ms, r[0], "a", 3)}
			for i := range h.Pops {
				h.Pops[i].Timer = placedTimer
			}
			vs := Check(h)
			if c.dup {
				requireHas(t, vs, "G4", "pop 1")
			} else {
				requireNone(t, vs)
			}
		})
	}
}
