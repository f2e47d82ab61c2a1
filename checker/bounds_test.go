package checker

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestLatePopAfterLivenessIsG7(t *testing.T) {
	// Right after the liveness phase began, a pop later than the
	// replica-failure bound is G7.
	h := healthy()
	h.Faults = []Fault{{At: 1500 * ms, Kind: Crash, Nodes: []string{"n3"}}, {At: 2 * sec, Kind: Restart, Nodes: []string{"n3"}}}
	h.LivenessFrom = 2 * sec
	h.Pops[2].At = 6 * sec
	requireHas(t, Check(h), "G7", "pop 3", "late")
}

func TestBackwardClockJumpExcusesLatePops(t *testing.T) {
	// A replica whose clock jumped back 3s pops 3s late from then on, even
	// after the liveness phase; the same jump on a node that holds no
	// replica of the timer excuses nothing.
	h := healthy()
	replicas, other := placeHealthy(h)
	h.Ops[0].Spec.RepeatFor = 20 * sec
	h.End = 30 * sec
	h.Faults = []Fault{{At: 1500 * ms, Kind: ClockJump, Nodes: []string{replicas[0]}, Detail: "-3s"}}
	h.LivenessFrom = 2 * sec
	h.Pops = pops(replicas[0], "a", 1, 1, 0)
	for k := 2; k <= 20; k++ {
		h.Pops = append(h.Pops, pop(time.Duration(k)*sec+3*sec+20*ms, replicas[0], "a", k))
	}
	requireNone(t, Check(h))
	h.Faults[0].Nodes = []string{other}
	requireHas(t, Check(h), "G4", "carries seq")
}

func TestSlowDriftAccruesLag(t *testing.T) {
	// A clock running 1000ppm slow for 100s has fallen 100ms behind.
	tl := buildTimeline(&History{Faults: []Fault{
		{At: 0, Kind: ClockDrift, Nodes: []string{"a"}, Detail: "-1000ppm"},
		{At: 100 * sec, Kind: ClockDrift, Nodes: []string{"a"}, Detail: "0ppm"}}}, 200*sec, 0)
	if got := tl.lag("a", 150*sec); got != 100*ms {
		t.Fatalf("got lag %v, want 100ms", got)
	}
}

func TestPartialWriteThenPausedHolderIsExcused(t *testing.T) {
	// A write a fault touched may sit on one replica only; if that node is
	// then paused, its late pop on resume is no G3 even with rf 2.
	h := healthy()
	h.Faults = []Fault{{At: 0, Kind: Clog, Nodes: []string{"n1"}, Peers: []string{"n2"}},
		{At: 100 * ms, Kind: Heal}, {At: 1500 * ms, Kind: Pause, Nodes: []string{"n1"}},
		{At: 6 * sec, Kind: Resume, Nodes: []string{"n1"}}}
	h.LivenessFrom = 6 * sec
	h.Pops = []Pop{pop(6*sec, "n1", "a", 2)}
	requireNone(t, Check(h))
}

func TestLatePopAfterOtherReplicasFailedTheSamePopIsExcused(t *testing.T) {
	// Pop 2's callback fails from the primary and the first backup, each
	// of which leaves it to the next replica (docs/design.md 4.7); the
	// second backup is paused and pops it on resume, seconds late. Every
	// replica failed pop 2 or was down, so no lateness bound applies to
	// it. The primary keeps its copy: its pop 3 fails too, and the first
	// backup makes it at its rank.
	h := healthy()
	h.Ops[0].Spec.ReplicationFactor = 3
	refused := func(p Pop) Pop { p.Answered = 500; return p }
	h.Pops = []Pop{h.Pops[0], refused(pop(2020*ms, "n1", "a", 2)), refused(pop(3020*ms, "n1", "a", 3)),
		refused(pop(4020*ms, "n2", "a", 2)), pop(5020*ms, "n2", "a", 3), pop(8*sec, "n3", "a", 2)}
	h.Faults = []Fault{{At: 1900 * ms, Kind: FailCallback, Nodes: []string{"http://client/cb"}},
		{At: 4500 * ms, Kind: CallbackOK, Nodes: []string{"http://client/cb"}},
		{At: 1500 * ms, Kind: Pause, Nodes: []string{"n3"}}, {At: 8 * sec, Kind: Resume, Nodes: []string{"n3"}}}
	h.End = 9 * sec
	h.Ops[0].Spec.RepeatFor = 3 * sec
	requireNone(t, Check(h))
	// Without the failed callbacks of pop 2, the two other replicas could
	// have popped it in time: the paused one's late pop is G3.
	h.Pops = slices.Delete(h.Pops, 3, 4)
	h.Pops = slices.Delete(h.Pops, 1, 2)
	requireHas(t, Check(h), "G3", "pop 2 from n3 arrived late")
}

func TestFailedCallbackKeepsTheCopy(t *testing.T) {
	// n1's callback for pop 1 fails at 10s. That costs pop 1 on n1 and
	// nothing more (docs/design.md 4.7): n1 still holds the timer and owes
	// pops 2 and 3 on time, while n2 is paused from 11s to 35s. The
	// original dropped the copy on a failure, and the paused n2 made pops
	// 2 and 3 on resume: that is late now.
	h := healthy()
	h.Ops[0].Spec.Interval, h.Ops[0].Spec.RepeatFor = 10*sec, 30*sec
	refused := pop(10020*ms, "n1", "a", 1)
	refused.Answered = 500
	h.Pops = []Pop{refused, pop(35*sec, "n2", "a", 1), pop(35001*ms, "n2", "a", 2), pop(35002*ms, "n2", "a", 3)}
	h.Faults = []Fault{{At: 9 * sec, Kind: FailCallback, Nodes: []string{"http://client/cb"}},
		{At: 10500 * ms, Kind: CallbackOK, Nodes: []string{"http://client/cb"}},
		{At: 11 * sec, Kind: Pause, Nodes: []string{"n2"}}, {At: 35 * sec, Kind: Resume, Nodes: []string{"n2"}}}
	h.End = 40 * sec
	requireHas(t, Check(h), "G3", "pop 2 from n2 arrived late")
	// n1 makes pops 2 and 3 itself: only pop 1, which every replica able
	// to pop it failed or could not make in time, is late.
	h.Pops = []Pop{refused, pop(20020*ms, "n1", "a", 2), pop(30020*ms, "n1", "a", 3), pop(35*sec, "n2", "a", 1)}
	requireNone(t, Check(h))
}

func TestSlowCallbackCostsOnlyThatPop(t *testing.T) {
	// The shape of a case the sweep found: an rf 1 timer pops into a
	// slow endpoint, which answers 200 after the service's timeout; the
	// replica takes it for a failure. That costs pop 1 alone: the later
	// pops are owed.
	h := healthy()
	h.Ops[0].Spec.ReplicationFactor = 1
	h.Ops[0].Spec.RepeatFor = 10 * sec
	h.End = 20 * sec
	h.Faults = []Fault{{At: 500 * ms, Kind: SlowCallback, Nodes: []string{"http://client/cb"}, Detail: "delay=3s"},
		{At: 1500 * ms, Kind: CallbackOK, Nodes: []string{"http://client/cb"}}}
	h.LivenessFrom = 1500 * ms
	h.Pops = pops("n1", "a", 1, 10, 0)
	requireNone(t, Check(h))
	// The replica that gave up after the slow pop (as the original did)
	// loses every later pop: G7.
	h.Pops = h.Pops[:1]
	requireHas(t, Check(h), "G7", "pop 2", "never delivered")
}

func TestPopAfterEveryReplicaFailedOneIsOwedOnTime(t *testing.T) {
	// Both replicas were cut off from the endpoint when pop 2 fell due, so
	// both failed that callback: pop 2 is excused. They kept their copies,
	// so pop 3 is owed on time; the original dropped both copies and a
	// replica that missed the write popped it late.
	h := healthy()
	h.Ops[0].Spec.RepeatFor = 10 * sec
	h.End = 20 * sec
	h.Faults = []Fault{{At: 1500 * ms, Kind: Partition, Nodes: []string{"n1", "n2"}, Peers: []string{"client"}},
		{At: 2500 * ms, Kind: Heal}}
	h.LivenessFrom = 3 * sec
	h.Pops = append(h.Pops[:1], pop(9*sec, "n3", "a", 3))
	vs := Check(h)
	requireHas(t, vs, "G7", "pop 3", "late")
	for _, v := range vs {
		if strings.Contains(v.Message, "pop 2 ") {
			t.Fatalf("got %s, want pop 2 excused", v.Message)
		}
	}
}

// TestCopyBroughtBackWhileItsReplicaStoodStillRunsLate is a case the
// sweep found: the backup restarts empty after the write, and the copy
// its boot resync fetches is held by its pause (2 s to 5 s), so it
// applies the start 3 s late; the primary, the only replica with the
// true start, then crashes and takes the backup's. Every later pop runs
// 3 s late, long after the faults: the N3 limit (start-time-delta
// carries no transit time). The same pause on a member of no role, on
// the backup while it still held its copy, or on the emptied backup once
// its boot resync was over and nothing else was on its way to it (no
// pop, no scale), holds nothing, and the late pops are G3.
func TestCopyBroughtBackWhileItsReplicaStoodStillRunsLate(t *testing.T) {
	for _, c := range []struct {
		name, paused string
		crashBackup  bool
		pausedAt     time.Duration
		want         string
	}{
		{"emptied backup paused", "backup", true, 2 * sec, ""},
		{"member of no role paused", "other", true, 2 * sec, "G3"},
		{"backup paused with its copy", "backup", false, 2 * sec, "G3"},
		{"emptied backup paused with nothing on its way", "backup", true, 7 * sec, "G3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, p, b, o := placed(t)
			h.Ops[0].Spec.Interval, h.Ops[0].Spec.RepeatFor = 10*sec, 60*sec
			h.End = 70 * sec
			paused := map[string]string{"backup": b, "other": o}[c.paused]
			h.Faults = []Fault{{At: c.pausedAt, Kind: Pause, Nodes: []string{paused}}, {At: c.pausedAt + 3*sec, Kind: Resume, Nodes: []string{paused}},
				{At: 11 * sec, Kind: Crash, Nodes: []string{p}}, {At: 12 * sec, Kind: Restart, Nodes: []string{p}}}
			if c.crashBackup {
				h.Faults = append(h.Faults, Fault{At: 500 * ms, Kind: Crash, Nodes: []string{b}}, Fault{At: sec, Kind: Restart, Nodes: []string{b}})
			}
			h.Pops = nil
			for k := 1; k <= 6; k++ {
				late := pop(time.Duration(k)*10*sec+3*sec+20*ms, p, "a", k)
				late.Timer = placedTimer
				h.Pops = append(h.Pops, late)
			}
			requireWant(t, Check(h), c.want, "late")
		})
	}
}

// TestCopyBroughtBackLateIsRepairedByAReplicaThatKeptTheStart is the
// bound of the test above: with rf 3, the second backup that kept its
// copy (and the true start) never crashes, so the primary's boot resync
// and every notice hand the true start on, and the primary's late pops
// are G3.
func TestCopyBroughtBackLateIsRepairedByAReplicaThatKeptTheStart(t *testing.T) {
	h, _, _, _ := placed(t)
	r := Replicas(h.Members, placedTimer, 3)
	h.Ops[0].Spec.ReplicationFactor = 3
	h.Ops[0].Spec.Interval, h.Ops[0].Spec.RepeatFor = 10*sec, 60*sec
	h.Ops[0].Node = r[0]
	h.End = 70 * sec
	h.Faults = []Fault{{At: 500 * ms, Kind: Crash, Nodes: []string{r[1]}}, {At: sec, Kind: Restart, Nodes: []string{r[1]}},
		{At: 2 * sec, Kind: Pause, Nodes: []string{r[1]}}, {At: 5 * sec, Kind: Resume, Nodes: []string{r[1]}},
		{At: 11 * sec, Kind: Crash, Nodes: []string{r[0]}}, {At: 12 * sec, Kind: Restart, Nodes: []string{r[0]}}}
	h.Pops = nil
	for k := 1; k <= 6; k++ {
		late := pop(time.Duration(k)*10*sec+3*sec+20*ms, r[0], "a", k)
		late.Timer = placedTimer
		h.Pops = append(h.Pops, late)
	}
	requireHas(t, Check(h), "G3", "late")
	// The second backup crashes too, after the hold: the late start is
	// all that is left.
	h.Faults = append(h.Faults, Fault{At: 11 * sec, Kind: Crash, Nodes: []string{r[2]}}, Fault{At: 12 * sec, Kind: Restart, Nodes: []string{r[2]}})
	requireNone(t, Check(h))
}

// TestCrashInAHeldTurnCostsThatReplicasPop is U39: the other site's
// relay, paused while the write's forward reached it, passes the timer
// on 3 s late, so that site's replica (rf 1 a site) pops 3 s late, its
// start rebuilt then: its turn for pop 2 is 20 s + 3 s + the write's
// site's rank. With the write's site's replica down, a crash of the
// other site's replica after pop 2's window (which ends about 22.1 s)
// and before that turn costs the pop as one inside the window does: its
// pop at its restart from disk is not G3. A crash after its held turn
// leaves it held to the bound.
func TestCrashInAHeldTurnCostsThatReplicasPop(t *testing.T) {
	sites, home, away := twoSitesRelayNoReplica()
	for _, c := range []struct {
		name    string
		crashAt time.Duration
		want    string
	}{
		{"before its held turn", 24 * sec, ""},
		{"after its held turn", 25*sec + 500*ms, "G3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &History{
				Members: []string{"n1", "n2", "n3", "n4"}, Sites: sites, Storage: true,
				Ops: []Op{write(1, Create, placedTimer, "a", 10*sec, 20*sec, 0, 10*ms, OK)},
				End: 60 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
				Faults: []Fault{{At: 0, Kind: Pause, Nodes: []string{relay(sites)}}, {At: 3 * sec, Kind: Resume, Nodes: []string{relay(sites)}},
					{At: 8 * sec, Kind: Crash, Nodes: []string{home}},
					{At: c.crashAt, Kind: Crash, Nodes: []string{away}}, {At: 35 * sec, Kind: Restart, Nodes: []string{away}}},
			}
			h.Ops[0].Node, h.Ops[0].Spec.ReplicationFactor = home, 1
			p1, p2 := pop(15*sec+20*ms, away, "a", 1), pop(35*sec+20*ms, away, "a", 2)
			p1.Timer, p2.Timer = placedTimer, placedTimer
			h.Pops = []Pop{p1, p2}
			requireWant(t, Check(h), c.want, "pop 2")
		})
	}
}

// TestHeldReplicaCutFromNoticesCarriesItsSeq: both replicas got the
// write 6 s late (paused as it came through another node), so each pops
// every pop 6 s late. Cut from the primary's notices from 23.5 s on, the
// backup pops again each pop the primary made, at its rank, 8 s past due:
// the pops' own windows end before the cut, but each pop's seq fits its
// time with the hold, and the cut excuses the duplicates (fresh seed
// 9322003 had them judged as carrying the wrong seq).
func TestHeldReplicaCutFromNoticesCarriesItsSeq(t *testing.T) {
	h, primary, backup, other := placed(t)
	h.Ops[0].Node = other
	h.Ops[0].Spec.Interval, h.Ops[0].Spec.RepeatFor = sec, 30*sec
	h.End = 50 * sec
	h.Faults = []Fault{{At: 0, Kind: Pause, Nodes: []string{primary}}, {At: 0, Kind: Pause, Nodes: []string{backup}},
		{At: 6 * sec, Kind: Resume, Nodes: []string{primary}}, {At: 6 * sec, Kind: Resume, Nodes: []string{backup}},
		{At: 23500 * ms, Kind: Partition, Nodes: []string{primary}, Peers: []string{backup}}}
	h.Pops = nil
	for k := 1; k <= 30; k++ {
		p := pop(time.Duration(k)*sec+6*sec+20*ms, primary, "a", k)
		p.Timer = placedTimer
		h.Pops = append(h.Pops, p)
		if k >= 18 {
			d := pop(time.Duration(k)*sec+8*sec+20*ms, backup, "a", k)
			d.Timer = placedTimer
			h.Pops = append(h.Pops, d)
		}
	}
	requireNone(t, Check(h))
}

// TestOverloadHoldsACopyOnlyPastTheAnswerByItsWait is C8: a replication
// that waited for its overloaded sender holds its receiver's copy, which
// rebuilds its start when it processes it, but only past the client's
// answer (the replicas the answer waited for got it in time) and by no
// more than the wait; and once the late replica's own pop notice is
// answered by a replica that kept the true start, it pops on time: the
// hold excuses only the pops due before then. The proxy is a member
// holding no replica; its replication to the primary (sent at 5 ms)
// waits 1.5 s, the backup answers at once, the client has its answer at
// 10 ms, and the primary pops 1 late by the wait (at 2.525 s), and pop 2,
// due at 2 s, as soon as the answer to its notice of pop 1 is back.
func TestOverloadHoldsACopyOnlyPastTheAnswerByItsWait(t *testing.T) {
	for _, c := range []struct {
		name     string
		detail   string        // the waited message's fault (none: "")
		ret      time.Duration // when the client had its answer
		pop1     time.Duration // when the primary made pop 1
		pop3Late bool          // the primary made pop 3 late by the wait too
		want     string
	}{
		{"replication waited", "waited=1.5s record", 10 * ms, 2525 * ms, false, ""},
		{"no fault", "", 10 * ms, 2525 * ms, false, "G3"},
		{"later than the wait", "waited=1.5s record", 10 * ms, 2700 * ms, false, "G3"},
		{"answered after it", "waited=1.5s record", 1600 * ms, 3200 * ms, false, "G3"},
		{"a read waited", "waited=1.5s", 10 * ms, 2525 * ms, false, "G3"},
		{"late after its notice came back", "waited=1.5s record", 10 * ms, 2525 * ms, true, "G3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, p, _, o := placed(t)
			h.Ops[0].Node, h.Ops[0].Return = o, c.ret
			if c.detail != "" {
				h.Faults = []Fault{{At: 5 * ms, Kind: Overload, Nodes: []string{o}, Peers: []string{p}, Detail: c.detail, Timer: placedTimer}}
			}
			h.Pops[0].At = c.pop1
			h.Pops[1].At = c.pop1 + 10*ms
			if c.pop3Late {
				h.Pops[2].At += 1500 * ms
			}
			vs, cov := DefaultOptions().Judge(h)
			if c.want != "" {
				requireHas(t, vs, c.want, "late")
				return
			}
			requireNone(t, vs)
			// Pops 1 and 2 only: the notice of pop 1 handed the true
			// start back before pop 3 fell due.
			if got := cov.Excused[ExHeld]; got != 2 {
				t.Errorf("held-replication excused %d pops, want 2 (excused: %v)", got, cov.Excused)
			}
		})
	}
}

// TestCallbackThatWaitedForItsSenderArrivesThatLate proves a pop whose
// own callback waited for its overloaded sender may arrive late by the
// wait, and by no more: the primary crashed, the backup pops at its rank
// and its callback of pop 3 waits 1.5 s (recorded as it is sent, at its
// turn), past the rank bound. The same wait on the crashed primary's
// callback, or a pop later than the wait, is G3.
func TestCallbackThatWaitedForItsSenderArrivesThatLate(t *testing.T) {
	for _, c := range []struct {
		name   string
		waiter string
		late   time.Duration
		want   string
	}{
		{"its callback waited", "backup", 1500 * ms, ""},
		{"another replica's callback waited", "primary", 1500 * ms, "G3"},
		{"later than the wait", "backup", 1800 * ms, "G3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, p, b, _ := placed(t)
			handOver(h, b, 3)
			waiter := map[string]string{"primary": p, "backup": b}[c.waiter]
			h.Faults = []Fault{{At: 2500 * ms, Kind: Crash, Nodes: []string{p}},
				{At: 5 * sec, Kind: Overload, Nodes: []string{waiter}, Peers: []string{"client"}, Detail: "waited=1.5s", Timer: placedTimer}}
			h.Pops[2].At = 5*sec + c.late + 2*ms
			requireWant(t, Check(h), c.want, "pop 3")
		})
	}
}

// TestCallbackThatWaitedForAPausedSenderLeavesAtItsResume is the
// callback of TestCallbackThatWaitedForItsSenderArrivesThatLate whose
// sender stood still before its 1.5 s wait ran out: the Overload fault
// records the wait as the callback is queued, the pause holds it until
// the resume, and it arrives then, behind the other sends the resume
// released, within a healthy delay. A pause that began once the callback
// had left, or a pop later than that delay past the resume, is G3.
func TestCallbackThatWaitedForAPausedSenderLeavesAtItsResume(t *testing.T) {
	for _, c := range []struct {
		name  string
		pause time.Duration // when the backup paused (0: it did not)
		pop3  time.Duration
		want  string
	}{
		{"paused while it waited", 6 * sec, 8030 * ms, ""},
		{"no pause", 0, 8030 * ms, "G3"},
		{"paused once it had left", 6600 * ms, 8030 * ms, "G3"},
		{"later than the resume", 6 * sec, 8300 * ms, "G3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, p, b, _ := placed(t)
			handOver(h, b, 3)
			h.Faults = []Fault{{At: 2500 * ms, Kind: Crash, Nodes: []string{p}},
				{At: 5 * sec, Kind: Overload, Nodes: []string{b}, Peers: []string{"client"}, Detail: "waited=1.5s", Timer: placedTimer}}
			if c.pause > 0 {
				h.Faults = append(h.Faults, Fault{At: c.pause, Kind: Pause, Nodes: []string{b}}, Fault{At: 8 * sec, Kind: Resume, Nodes: []string{b}})
				h.Pops[3].At, h.Pops[4].At = 8050*ms, 8060*ms // pops 4 and 5 fell due while it stood still
			}
			h.Pops[2].At = c.pop3
			requireWant(t, Check(h), c.want, "pop 3")
		})
	}
}

// TestInboundWaitHoldsACopyByItsProcessingTime is C8 at the receiver: a
// replication of the write that waited in its receiver's inbound queue
// (a Queued fault, recorded when it arrived) holds the receiver's copy,
// which rebuilds its start when it processes the message, by what its
// processing ran past the client's answer, and no more; a send wait and
// an inbound wait on one message add up, the inbound fault's arrival
// coming after the send wait. The proxy is a member holding no replica;
// the client has its answer at 10 ms, the backup got the write at once,
// and the primary pops 1 late, pop 2 as soon as its notice is answered.
func TestInboundWaitHoldsACopyByItsProcessingTime(t *testing.T) {
	for _, c := range []struct {
		name   string
		faults func(o, p string) []Fault
		pop1   time.Duration
		want   string
	}{
		{"replication waited", func(o, p string) []Fault {
			return []Fault{{At: 8 * ms, Kind: Queued, Nodes: []string{o}, Peers: []string{p}, Detail: "waited=1.5s record", Timer: placedTimer}}
		}, 2525 * ms, ""},
		{"no fault", func(o, p string) []Fault { return nil }, 2525 * ms, "G3"},
		{"later than the wait", func(o, p string) []Fault {
			return []Fault{{At: 8 * ms, Kind: Queued, Nodes: []string{o}, Peers: []string{p}, Detail: "waited=1.5s record", Timer: placedTimer}}
		}, 2700 * ms, "G3"},
		{"another replica's replication waited", func(o, p string) []Fault {
			return []Fault{{At: 8 * ms, Kind: Queued, Nodes: []string{o}, Peers: []string{o}, Detail: "waited=1.5s record", Timer: placedTimer}}
		}, 2525 * ms, "G3"},
		{"a read waited", func(o, p string) []Fault {
			return []Fault{{At: 8 * ms, Kind: Queued, Nodes: []string{o}, Peers: []string{p}, Detail: "waited=1.5s", Timer: placedTimer}}
		}, 2525 * ms, "G3"},
		{"sent after the write", func(o, p string) []Fault {
			// A message sent 1 s after the answer (a notice) finds the
			// primary's copy with its start: it holds nothing.
			return []Fault{{At: 1010 * ms, Kind: Queued, Nodes: []string{o}, Peers: []string{p}, Detail: "waited=1.5s record", Timer: placedTimer}}
		}, 2525 * ms, "G3"},
		{"send and inbound waits add up", func(o, p string) []Fault {
			return []Fault{{At: 5 * ms, Kind: Overload, Nodes: []string{o}, Peers: []string{p}, Detail: "waited=1s record", Timer: placedTimer},
				{At: 1008 * ms, Kind: Queued, Nodes: []string{o}, Peers: []string{p}, Detail: "waited=1s record", Timer: placedTimer}}
		}, 3020 * ms, ""},
		{"past the sum", func(o, p string) []Fault {
			return []Fault{{At: 5 * ms, Kind: Overload, Nodes: []string{o}, Peers: []string{p}, Detail: "waited=1s record", Timer: placedTimer},
				{At: 1008 * ms, Kind: Queued, Nodes: []string{o}, Peers: []string{p}, Detail: "waited=1s record", Timer: placedTimer}}
		}, 3200 * ms, "G3"},
		{"the send wait alone", func(o, p string) []Fault {
			return []Fault{{At: 5 * ms, Kind: Overload, Nodes: []string{o}, Peers: []string{p}, Detail: "waited=1s record", Timer: placedTimer}}
		}, 3020 * ms, "G3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, p, _, o := placed(t)
			h.Ops[0].Node = o
			h.Faults = c.faults(o, p)
			h.Pops[0].At = c.pop1
			h.Pops[1].At = c.pop1 + 10*ms
			vs, cov := DefaultOptions().Judge(h)
			if c.want != "" {
				requireHas(t, vs, c.want, "late")
				return
			}
			requireNone(t, vs)
			// The pops due before the notice of pop 1 was answered.
			if got := cov.Excused[ExHeldInbound]; got < 2 || c.pop1 < 3*sec && got != 2 {
				t.Errorf("held-inbound excused %d pops, want 2 (3 when pop 1 is as late as pop 3's due time; excused: %v)", got, cov.Excused)
			}
		})
	}
}

// TestCallbackThatWaitedAtItsEndpointArrivesThatLate proves a callback
// that waited in its endpoint's inbound queue is delivered late by the
// wait, added to the wait for its sender, and by no more: the primary
// crashed, the backup pops 3 at its rank, its callback waits 1 s for the
// backup's CPU (sent at 5 s) and 0.5 s in the endpoint's queue after it
// arrives at 6.002 s. The same inbound wait on the crashed primary's
// callback, or a pop later than the sum, is G3.
func TestCallbackThatWaitedAtItsEndpointArrivesThatLate(t *testing.T) {
	for _, c := range []struct {
		name   string
		waiter string
		at     time.Duration
		want   string
	}{
		{"its callback waited", "backup", 6503 * ms, ""},
		{"another replica's callback waited", "primary", 6503 * ms, "G3"},
		{"later than the sum", "backup", 6800 * ms, "G3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, p, b, _ := placed(t)
			handOver(h, b, 3)
			waiter := map[string]string{"primary": p, "backup": b}[c.waiter]
			h.Faults = []Fault{{At: 2500 * ms, Kind: Crash, Nodes: []string{p}},
				{At: 5 * sec, Kind: Overload, Nodes: []string{waiter}, Peers: []string{"client"}, Detail: "waited=1s", Timer: placedTimer},
				{At: 6002 * ms, Kind: Queued, Nodes: []string{waiter}, Peers: []string{"client"}, Detail: "waited=500ms", Timer: placedTimer}}
			h.Pops[2].At = c.at
			vs, cov := DefaultOptions().Judge(h)
			requireWant(t, vs, c.want, "pop 3")
			if c.want == "" && cov.Excused[ExFault+"/"+Excuse(Queued)] == 0 {
				t.Errorf("fault-window/queued excused nothing (excused: %v)", cov.Excused)
			}
		})
	}
}

// TestCopyBroughtBackByAWaitedNoticeStartsLate is C8 after the write:
// the primary's replication to the backup is shed, so the backup has no
// copy until the notice of the primary's pop 1 (at 10 s) brings it, and
// that notice waits 1.5 s for the primary's CPU (or in the backup's
// queue), so the backup rebuilds the start 1.5 s late; the primary then
// crashes and restarts empty, taking the true start with it, and every
// later pop runs 1.5 s late (heldByWait). The same wait on a backup that
// got the write, no wait at all, or pops later than the wait are G3.
func TestCopyBroughtBackByAWaitedNoticeStartsLate(t *testing.T) {
	for _, c := range []struct {
		name    string
		kind    FaultKind
		at      time.Duration // when the notice's fault was recorded
		shed    bool          // the replication to the backup was shed
		late    time.Duration // how late pops 2.. come
		excused Excuse
		want    string
	}{
		{"notice waited for its sender", Overload, 10030 * ms, true, 1520 * ms, ExHeld, ""},
		{"notice waited in the backup's queue", Queued, 10035 * ms, true, 1520 * ms, ExHeldInbound, ""},
		{"no wait", "", 0, true, 1520 * ms, "", "G3"},
		{"the backup held its copy", Overload, 10030 * ms, false, 1520 * ms, "", "G3"},
		{"later than the wait", Overload, 10030 * ms, true, 1720 * ms, "", "G3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, p, b, _ := placed(t)
			h.Ops[0].Spec.Interval, h.Ops[0].Spec.RepeatFor = 10*sec, 60*sec
			h.End = 70 * sec
			h.Faults = []Fault{{At: 11 * sec, Kind: Crash, Nodes: []string{p}}, {At: 12 * sec, Kind: Restart, Nodes: []string{p}}}
			if c.shed {
				h.Faults = append(h.Faults, Fault{At: 5 * ms, Kind: Overload, Nodes: []string{p}, Peers: []string{b}, Detail: ShedDetail, Timer: placedTimer})
			}
			if c.kind != "" {
				h.Faults = append(h.Faults, Fault{At: c.at, Kind: c.kind, Nodes: []string{p}, Peers: []string{b}, Detail: "waited=1.5s record", Timer: placedTimer})
			}
			h.Pops = []Pop{pop(10*sec+20*ms, p, "a", 1)}
			for k := 2; k <= 6; k++ {
				h.Pops = append(h.Pops, pop(time.Duration(k)*10*sec+c.late, p, "a", k))
			}
			for i := range h.Pops {
				h.Pops[i].Timer = placedTimer
			}
			vs, cov := DefaultOptions().Judge(h)
			requireWant(t, vs, c.want, "late")
			if c.want == "" && cov.Excused[c.excused] == 0 {
				t.Errorf("%s excused nothing (excused: %v)", c.excused, cov.Excused)
			}
		})
	}
}

// TestCopyBroughtBackByAReplayedNoticeStartsLate is scenarios/README.md
// C53: both replicas crash at 11 s and restart empty at 12 s, every
// copy gone, and at 13 s the network replays to the backup the primary's
// notice of pop 1, sent 3 s before. The backup takes it as a fresh
// message and rebuilds the start from its arrival (start-time-delta,
// docs/design.md 4.13), 3 s late; the primary takes the late start back
// from the backup's notices, and every later pop runs 3 s late
// (heldByWait: a late or replayed record message waited its age). The
// same replay to a backup that kept its copy, a replay that carried no
// record, no replay, or pops later than the age are G3.
func TestCopyBroughtBackByAReplayedNoticeStartsLate(t *testing.T) {
	for _, c := range []struct {
		name   string
		detail string // the replay's; "" for none
		crashB bool   // the backup lost its copy too
		late   time.Duration
		want   string
	}{
		{"replayed notice to the emptied backup", "replayed=3s record", true, 3020 * ms, ""},
		{"late notice to the emptied backup", "late=3s record", true, 3020 * ms, ""},
		{"the backup kept its copy", "replayed=3s record", false, 3020 * ms, "G3"},
		{"the replay carried no record", "replayed=3s", true, 3020 * ms, "G3"},
		{"no replay", "", true, 3020 * ms, "G3"},
		{"later than the age", "replayed=3s record", true, 3220 * ms, "G3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, p, b, _ := placed(t)
			h.Ops[0].Spec.Interval, h.Ops[0].Spec.RepeatFor = 10*sec, 60*sec
			h.End = 70 * sec
			h.Faults = []Fault{{At: 11 * sec, Kind: Crash, Nodes: []string{p}}, {At: 12 * sec, Kind: Restart, Nodes: []string{p}}}
			if c.crashB {
				h.Faults = append(h.Faults, Fault{At: 11 * sec, Kind: Crash, Nodes: []string{b}}, Fault{At: 12 * sec, Kind: Restart, Nodes: []string{b}})
			}
			if c.detail != "" {
				h.Faults = append(h.Faults, Fault{At: 13*sec + 20*ms, Kind: Late, Nodes: []string{p}, Peers: []string{b}, Detail: c.detail, Timer: placedTimer})
			}
			h.Pops = []Pop{pop(10*sec+20*ms, p, "a", 1)}
			for k := 2; k <= 6; k++ {
				h.Pops = append(h.Pops, pop(time.Duration(k)*10*sec+c.late, b, "a", k))
			}
			for i := range h.Pops {
				h.Pops[i].Timer = placedTimer
			}
			vs, cov := DefaultOptions().Judge(h)
			requireWant(t, vs, c.want, "late")
			if c.want == "" && cov.Excused[ExHeld] == 0 {
				t.Errorf("%s excused nothing (excused: %v)", ExHeld, cov.Excused)
			}
		})
	}
}

// TestHoldsAddUpAlongAPath: a copy that a held replica passes on carries
// its hold. The backup's copy comes 1.5 s late from the primary's waited
// notice (as in TestCopyBroughtBackByAWaitedNoticeStartsLate); the
// primary restarts empty and takes its copy back from the backup by a
// message that waits 0.5 s more: it runs 2 s late, the sum on the path,
// and no later. Without the first wait the primary is held by 0.5 s only.
func TestHoldsAddUpAlongAPath(t *testing.T) {
	for _, c := range []struct {
		name  string
		first bool
		late  time.Duration
		want  string
	}{
		{"both waits", true, 2020 * ms, ""},
		{"past the sum", true, 2220 * ms, "G3"},
		{"the second wait alone", false, 2020 * ms, "G3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, p, b, _ := placed(t)
			h.Ops[0].Spec.Interval, h.Ops[0].Spec.RepeatFor = 10*sec, 60*sec
			h.End = 70 * sec
			h.Faults = []Fault{{At: 5 * ms, Kind: Overload, Nodes: []string{p}, Peers: []string{b}, Detail: ShedDetail, Timer: placedTimer},
				{At: 11 * sec, Kind: Crash, Nodes: []string{p}}, {At: 12 * sec, Kind: Restart, Nodes: []string{p}},
				{At: 12500 * ms, Kind: Overload, Nodes: []string{b}, Peers: []string{p}, Detail: "waited=500ms record", Timer: placedTimer}}
			if c.first {
				h.Faults = append(h.Faults, Fault{At: 10030 * ms, Kind: Overload, Nodes: []string{p}, Peers: []string{b}, Detail: "waited=1.5s record", Timer: placedTimer})
			}
			h.Pops = []Pop{pop(10*sec+20*ms, p, "a", 1)}
			for k := 2; k <= 6; k++ {
				h.Pops = append(h.Pops, pop(time.Duration(k)*10*sec+c.late, p, "a", k))
			}
			for i := range h.Pops {
				h.Pops[i].Timer = placedTimer
			}
			requireWant(t, Check(h), c.want, "late")
		})
	}
}

// TestRequestLostAfterItsSendWaitWasSentInTheWrite is a sweep's find: a
// request is recorded lost when it leaves its sender, after its wait for
// the sender's CPU, so one the write sent may be lost long after the
// client had its answer. The backup missed the write: when the primary
// crashes and restarts empty before pop 1, every copy is gone
// (copies-lost). The same loss with no recorded wait was of a message
// sent after the write, which the backup had, so its lost pops are G2.
func TestRequestLostAfterItsSendWaitWasSentInTheWrite(t *testing.T) {
	for _, waited := range []bool{true, false} {
		h, p, b, _ := placed(t)
		h.Faults = []Fault{{At: 507 * ms, Kind: Lost, Nodes: []string{p}, Peers: []string{b}, Timer: placedTimer},
			{At: 700 * ms, Kind: Crash, Nodes: []string{p}}, {At: 750 * ms, Kind: Restart, Nodes: []string{p}}}
		if waited {
			h.Faults = append(h.Faults, Fault{At: 5 * ms, Kind: Overload, Nodes: []string{p}, Peers: []string{b}, Detail: "waited=500ms record", Timer: placedTimer})
		}
		h.Pops = nil
		vs, cov := DefaultOptions().Judge(h)
		if !waited {
			requireHas(t, vs, "G2")
			continue
		}
		requireNone(t, vs)
		if cov.Excused[ExCopiesLost] == 0 {
			t.Errorf("copies-lost excused nothing: %v", cov.Excused)
		}
	}
}

// TestRequestRefusedAfterItsInboundWaitWasSentInTheWrite is a sweep's find: a
// full replica's refusal is recorded (a lost request) when it processed
// the request, after its wait in its inbound queue, so the replication
// of a write it refused after the client had its answer was still the
// write's: the backup missed it, and the primary's crash before pop 1
// takes every copy (copies-lost). The refusal is dated back by its Age
// (as the simulator records every refusal: the receiver may have been
// paused too) or, with none, by a recorded inbound wait.
// The same refusal with neither was of a message sent after the write:
// G2.
func TestRequestRefusedAfterItsInboundWaitWasSentInTheWrite(t *testing.T) {
	for _, dated := range []string{"queued", "age", ""} {
		h, p, b, _ := placed(t)
		refused := Fault{At: 409 * ms, Kind: Lost, Nodes: []string{p}, Peers: []string{b}, Timer: placedTimer, Detail: "refused at its limit"}
		if dated == "age" {
			refused.Age = 401 * ms
		}
		h.Faults = []Fault{refused, {At: 700 * ms, Kind: Crash, Nodes: []string{p}}, {At: 750 * ms, Kind: Restart, Nodes: []string{p}}}
		if dated == "queued" {
			h.Faults = append(h.Faults, Fault{At: 8 * ms, Kind: Queued, Nodes: []string{p}, Peers: []string{b}, Detail: "waited=400ms record", Timer: placedTimer})
		}
		h.Pops = nil
		vs, cov := DefaultOptions().Judge(h)
		if dated == "" {
			requireHas(t, vs, "G2")
			continue
		}
		requireNone(t, vs)
		if cov.Excused[ExCopiesLost] == 0 {
			t.Errorf("%s: copies-lost excused nothing: %v", dated, cov.Excused)
		}
	}
}

// TestHandOffThatWaitedStartsTheNewReplicaLate is a class two fresh
// seeds found: a scale moves an rf 1 timer from the member it removes to
// another, and the hand-off that brings the new replica its copy waits
// 0.5 s for the old one's CPU, so the new replica rebuilds the start that
// late and, the old copy gone, pops late by it for good. No wait, a pop
// later than it, or the wait on a message to a member the scale placed
// nothing on, is G3.
func TestHandOffThatWaitedStartsTheNewReplicaLate(t *testing.T) {
	members := []string{"n1", "n2", "n3", "n4"}
	old, shrunk, neu := scaleDownMove(members)
	var bystander string
	for _, m := range shrunk {
		if m != neu {
			bystander = m
		}
	}
	for _, c := range []struct {
		name string
		to   string // the waited message's receiver ("": none waited)
		late time.Duration
		want string
	}{
		{"hand-off waited", neu, 520 * ms, ""},
		{"no wait", "", 520 * ms, "G3"},
		{"later than the wait", neu, 720 * ms, "G3"},
		{"a message to a member of no role waited", bystander, 520 * ms, "G3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &History{
				Members: members,
				Ops:     []Op{write(1, Create, placedTimer, "a", 10*sec, 60*sec, 0, 10*ms, OK)},
				Scales:  []Scale{{Kind: ScaleDown, Start: 5 * sec, End: 8 * sec, Before: members, After: shrunk}},
				End:     70 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
			}
			h.Ops[0].Node, h.Ops[0].Spec.ReplicationFactor = old, 1
			if c.to != "" {
				h.Faults = []Fault{{At: 6 * sec, Kind: Overload, Nodes: []string{old}, Peers: []string{c.to}, Detail: "waited=500ms record", Timer: placedTimer}}
			}
			for k := 1; k <= 6; k++ {
				h.Pops = append(h.Pops, Pop{At: time.Duration(k)*10*sec + c.late, Node: neu, URI: "http://client/cb", Opaque: "a", Seq: k, Answered: 200, Timer: placedTimer})
			}
			requireWant(t, Check(h), c.want, "late")
		})
	}
}

// scaleDownMove is the scale-down that moves placedTimer (rf 1): old,
// its replica among members, leaves; shrunk is the members after; neu
// is its replica among them.
func scaleDownMove(members []string) (old string, shrunk []string, neu string) {
	old = Replicas(members, placedTimer, 1)[0]
	shrunk = slices.DeleteFunc(slices.Clone(members), func(m string) bool { return m == old })
	return old, shrunk, Replicas(shrunk, placedTimer, 1)[0]
}

// TestCopyMovedBackFromAHeldReplicaRunsLate is the hand-off of
// TestHandOffThatWaitedStartsTheNewReplicaLate followed by a scale back
// to the first membership (fresh seed 3503955, scenarios C38): the new
// replica, late by its hand-off's wait, is the only holder when the
// timer moves back, so the old replica takes the late start from it by
// a hand-off that did not wait, and runs late by the first wait for
// good. No first wait, or a pop later than it, is G3.
func TestCopyMovedBackFromAHeldReplicaRunsLate(t *testing.T) {
	members := []string{"n1", "n2", "n3", "n4"}
	old, shrunk, neu := scaleDownMove(members)
	for _, c := range []struct {
		name   string
		waited bool
		late   time.Duration
		want   string
	}{
		{"moved back from the held replica", true, 520 * ms, ""},
		{"the first hand-off did not wait", false, 520 * ms, "G3"},
		{"later than the first wait", true, 720 * ms, "G3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &History{
				Members: members,
				Ops:     []Op{write(1, Create, placedTimer, "a", 10*sec, 100*sec, 0, 10*ms, OK)},
				Scales: []Scale{
					{Kind: ScaleDown, Start: 5 * sec, End: 8 * sec, Before: members, After: shrunk},
					{Kind: ScaleUp, Start: 25 * sec, End: 28 * sec, Before: shrunk, After: members},
				},
				End: 110 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
			}
			h.Ops[0].Node, h.Ops[0].Spec.ReplicationFactor = old, 1
			if c.waited {
				h.Faults = []Fault{{At: 6 * sec, Kind: Overload, Nodes: []string{old}, Peers: []string{neu}, Detail: "waited=500ms record", Timer: placedTimer}}
			}
			for k := 1; k <= 10; k++ {
				n := neu
				if k > 2 {
					n = old
				}
				h.Pops = append(h.Pops, Pop{At: time.Duration(k)*10*sec + c.late, Node: n, URI: "http://client/cb", Opaque: "a", Seq: k, Answered: 200, Timer: placedTimer})
			}
			requireWant(t, Check(h), c.want, "late")
		})
	}
}

// TestHandOffFromAWriteHeldReplicaAddsBothHolds is fresh seed 4812907
// (scenarios/README.md C42): the write's replication to the backup
// waited 1.5 s in its inbound queue, past the client's answer, so the
// backup rebuilt the start late by the wait (held-inbound); the primary
// crashed and lost its copy; a scale-down removed the backup, whose
// hand-off to the new replica waited 0.5 s for its sender, so the new
// replica's start was late by both waits, and the primary, restarted,
// took that start from the new replica (its resync) and popped late by
// the sum for good. A hand-off waits from its sender's hold, whether a
// waited message or the write's own faults held the sender
// (heldByWait's holdOf). Either wait alone, or a pop later than the
// sum, is G3.
func TestHandOffFromAWriteHeldReplicaAddsBothHolds(t *testing.T) {
	members := []string{"n1", "n2", "n3", "n4", "n5"}
	r := Replicas(members, placedTimer, 2)
	p, o := r[0], r[1]
	shrunk := slices.DeleteFunc(slices.Clone(members), func(m string) bool { return m == o })
	neu := Replicas(shrunk, placedTimer, 2)[1]
	var proxy string
	for _, m := range shrunk {
		if m != p && m != neu {
			proxy = m
		}
	}
	for _, c := range []struct {
		name            string
		queued, handOff bool
		late            time.Duration
		want            string
	}{
		{"both waits", true, true, 1900 * ms, ""},
		{"the hand-off did not wait", true, false, 1900 * ms, "G3"},
		{"the write's replication did not wait", false, true, 1900 * ms, "G3"},
		{"later than the sum", true, true, 2200 * ms, "G3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &History{
				Members: members,
				Ops:     []Op{write(1, Create, placedTimer, "a", 10*sec, 60*sec, 0, 10*ms, OK)},
				Faults:  []Fault{{At: 3 * sec, Kind: Crash, Nodes: []string{p}}, {At: 4 * sec, Kind: Restart, Nodes: []string{p}}},
				Scales:  []Scale{{Kind: ScaleDown, Start: 5 * sec, End: 8 * sec, Before: members, After: shrunk}},
				End:     70 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
			}
			h.Ops[0].Node = proxy
			if c.queued {
				h.Faults = append(h.Faults, Fault{At: 8 * ms, Kind: Queued, Nodes: []string{proxy}, Peers: []string{o}, Detail: "waited=1.5s record", Timer: placedTimer})
			}
			if c.handOff {
				h.Faults = append(h.Faults, Fault{At: 6 * sec, Kind: Overload, Nodes: []string{o}, Peers: []string{neu}, Detail: "waited=500ms record", Timer: placedTimer})
			}
			for k := 1; k <= 6; k++ {
				h.Pops = append(h.Pops, Pop{At: time.Duration(k)*10*sec + c.late, Node: p, URI: "http://client/cb", Opaque: "a", Seq: k, Answered: 200, Timer: placedTimer})
			}
			vs, cov := DefaultOptions().Judge(h)
			requireWant(t, vs, c.want, "late")
			// The longer wait, in the backup's inbound queue, names it.
			if c.want == "" && cov.Excused[ExHeldInbound] == 0 {
				t.Errorf("held-inbound excused nothing: %v", cov.Excused)
			}
		})
	}
}

// TestHandOffHeldByItsReceiversPauseStartsItLate is the hand-off of
// TestHandOffThatWaitedStartsTheNewReplicaLate held by a pause of the
// member the scale moves the timer to (fresh seed 2401380, scenarios
// C32): the new replica rebuilds the start when it resumes and
// processes the hand-off, and runs late by up to the pause for good. No
// pause, a pop later than the pause's hold, a pause of a member of no
// role, or one that ended before the scale began, is G3; so are the
// new replica's pops after its first notice was answered by a replica
// that kept its copy through the scale, with the true start (rf 2).
func TestHandOffHeldByItsReceiversPauseStartsItLate(t *testing.T) {
	members := []string{"n1", "n2", "n3", "n4"}
	for _, c := range []struct {
		name     string
		rf       int
		paused   string // "new", "bystander" or "" (none)
		pausedAt time.Duration
		late     time.Duration
		want     string
		part     string // in the violation's message too
	}{
		{"new replica paused", 1, "new", 5 * sec, 520 * ms, "", ""},
		{"no pause", 1, "", 5 * sec, 520 * ms, "G3", ""},
		{"later than the pause", 1, "new", 5 * sec, 1700 * ms, "G3", ""},
		{"a member of no role paused", 1, "bystander", 5 * sec, 520 * ms, "G3", ""},
		{"paused before the scale", 1, "new", 2 * sec, 520 * ms, "G3", ""},
		// The other replica answers the new one's notices with the
		// true start: its pops after the first two are on time.
		{"the other replica kept its copy", 2, "new", 5 * sec, 520 * ms, "G3", "pop 3 "},
	} {
		t.Run(c.name, func(t *testing.T) {
			// old leaves; neu is a replica after the scale and none
			// before it. With rf 2, old and one other held the timer
			// before, and that other holds it after too.
			var old, neu string
			var shrunk []string
			for _, o := range members {
				shrunk = slices.DeleteFunc(slices.Clone(members), func(m string) bool { return m == o })
				before, after := Replicas(members, placedTimer, c.rf), Replicas(shrunk, placedTimer, c.rf)
				if !slices.Contains(before, o) {
					continue
				}
				for _, n := range after {
					if !slices.Contains(before, n) {
						old, neu = o, n
					}
				}
				if neu != "" {
					break
				}
			}
			if neu == "" {
				t.Fatal("no member moves the timer")
			}
			var bystander string
			for _, m := range shrunk {
				if !slices.Contains(Replicas(shrunk, placedTimer, c.rf), m) {
					bystander = m
				}
			}
			if bystander == "" {
				t.Fatal("no member of no role")
			}
			h := &History{
				Members: members,
				Ops:     []Op{write(1, Create, placedTimer, "a", 10*sec, 60*sec, 0, 10*ms, OK)},
				Scales:  []Scale{{Kind: ScaleDown, Start: 5 * sec, End: 8 * sec, Before: members, After: shrunk}},
				End:     70 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
			}
			h.Ops[0].Node, h.Ops[0].Spec.ReplicationFactor = old, c.rf
			if p := map[string]string{"new": neu, "bystander": bystander}[c.paused]; p != "" {
				h.Faults = []Fault{{At: c.pausedAt, Kind: Pause, Nodes: []string{p}}, {At: c.pausedAt + 1500*ms, Kind: Resume, Nodes: []string{p}}}
			}
			for k := 1; k <= 6; k++ {
				h.Pops = append(h.Pops, Pop{At: time.Duration(k)*10*sec + c.late, Node: neu, URI: "http://client/cb", Opaque: "a", Seq: k, Answered: 200, Timer: placedTimer})
			}
			requireWant(t, Check(h), c.want, "late", c.part)
		})
	}
}

// TestHandOffThatWaitedAfterTheOldReplicaPopped is the hand-off of
// TestHandOffThatWaitedStartsTheNewReplicaLate made once the old
// replica had popped twice on time: its notices went to the replicas of
// its view, which the new replica was not yet, so they handed it no
// start, and its copy, rebuilt from start-time-delta when the waited
// hand-off arrived, runs late by the wait for good. A pop later than the
// wait is still late, even when a clog held the write on its way to the
// new replica for longer: the old replica's pops ended that hold.
func TestHandOffThatWaitedAfterTheOldReplicaPopped(t *testing.T) {
	members := []string{"n1", "n2", "n3", "n4"}
	old, shrunk, neu := scaleDownMove(members)
	for _, c := range []struct {
		name   string
		waited bool
		clog   bool // old -> neu clogged for 4 s from the write
		late   time.Duration
		want   string
	}{
		{"hand-off waited", true, false, 520 * ms, ""},
		{"no wait", false, false, 520 * ms, "G3"},
		{"later than the wait", true, false, 720 * ms, "G3"},
		{"later than the wait, the write held longer", true, true, 720 * ms, "G3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &History{
				Members: members,
				Ops:     []Op{write(1, Create, placedTimer, "a", 10*sec, 60*sec, 0, 10*ms, OK)},
				Scales:  []Scale{{Kind: ScaleDown, Start: 25 * sec, End: 28 * sec, Before: members, After: shrunk}},
				End:     70 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
			}
			h.Ops[0].Node, h.Ops[0].Spec.ReplicationFactor = old, 1
			if c.waited {
				h.Faults = []Fault{{At: 26 * sec, Kind: Overload, Nodes: []string{old}, Peers: []string{neu}, Detail: "waited=500ms record", Timer: placedTimer}}
			}
			if c.clog {
				h.Faults = append(h.Faults, Fault{At: 0, Kind: Clog, Nodes: []string{old}, Peers: []string{neu}}, Fault{At: 4 * sec, Kind: Heal})
			}
			for k := 1; k <= 6; k++ {
				p := Pop{At: time.Duration(k)*10*sec + c.late, Node: neu, URI: "http://client/cb", Opaque: "a", Seq: k, Answered: 200, Timer: placedTimer}
				if k <= 2 {
					p.At, p.Node = time.Duration(k)*10*sec+5*ms, old
				}
				h.Pops = append(h.Pops, p)
			}
			requireWant(t, Check(h), c.want, "late")
		})
	}
}

// TestLateCopyKeepsItsHoldWhileItsNoticesTimeOut is a sweep's find: the
// primary missed the write (its replication was lost), the backup pops 1
// at its rank and its notice, waiting 1.5 s for its CPU, brings the
// primary a copy that starts 1.5 s late. The backup kept the true start
// and answers the primary's notices with it, which ends the hold after
// pop 2, unless each notice waited in the backup's inbound queue about as
// long as the primary waits for an answer (ReplicationTimeout): then the
// answer came after the primary gave up, and the primary runs late on.
// A wait too short to lose the answer ends the hold as none does.
func TestLateCopyKeepsItsHoldWhileItsNoticesTimeOut(t *testing.T) {
	for _, c := range []struct {
		name  string
		queue string // each notice's wait in the backup's queue ("": none)
		want  string
	}{
		{"answers came after the primary gave up", "waited=495ms record", ""},
		{"answers came back", "", "G3"},
		{"answers came back after a short wait", "waited=300ms record", "G3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, p, b, _ := placed(t)
			h.Ops[0].Spec.Interval, h.Ops[0].Spec.RepeatFor = 10*sec, 60*sec
			h.Ops[0].Node = b
			h.End = 70 * sec
			h.Faults = []Fault{{At: 5 * ms, Kind: Lost, Nodes: []string{b}, Peers: []string{p}, Timer: placedTimer},
				{At: 12030 * ms, Kind: Overload, Nodes: []string{b}, Peers: []string{p}, Detail: "waited=1.5s record", Timer: placedTimer}}
			h.Pops = []Pop{pop(12*sec+20*ms, b, "a", 1)}
			for k := 2; k <= 6; k++ {
				at := time.Duration(k)*10*sec + 1520*ms
				h.Pops = append(h.Pops, pop(at, p, "a", k))
				if c.queue != "" {
					h.Faults = append(h.Faults, Fault{At: at + 10*ms, Kind: Queued, Nodes: []string{p}, Peers: []string{b}, Detail: c.queue, Timer: placedTimer})
				}
			}
			for i := range h.Pops {
				h.Pops[i].Timer = placedTimer
			}
			requireWant(t, Check(h), c.want, "late")
		})
	}
}

func TestLatestLocalSeesAStepBackWithin(t *testing.T) {
	// A clock stepped 3 min ahead at 10s and back at 40s showed, within
	// [20s, 60s], 3m40s at the latest: just before its correction.
	tl := buildTimeline(&History{Faults: []Fault{
		{At: 10 * sec, Kind: ClockJump, Nodes: []string{"a"}, Detail: "+3m0s"},
		{At: 40 * sec, Kind: ClockJump, Nodes: []string{"a"}, Detail: "-3m0s"}}}, 200*sec, 0)
	if got, want := tl.latestLocal("a", 20*sec, 60*sec), 40*sec+3*time.Minute; got != want {
		t.Fatalf("latestLocal over the step: got %v, want %v", got, want)
	}
	if got, want := tl.latestLocal("a", 50*sec, 60*sec), 60*sec; got != want {
		t.Fatalf("latestLocal after the correction: got %v, want %v", got, want)
	}
	if got, want := tl.latestLocal("b", 20*sec, 60*sec), 60*sec; got != want {
		t.Fatalf("latestLocal of a true clock: got %v, want %v", got, want)
	}
}

// TestStartHandedOnByAnOlderCopysHolderMayGainItsClock proves G1 counts
// the clock of every node that may have held a definition's start: an
// rf 1 update of an rf 2 timer replaces the copy on the timer's old
// backup too (a write reaches the older copies), which hands its start
// on in an answer, rebuilt from what its clock measured meanwhile. With
// that backup's clock 1% fast, pop 1 of the update may come 50 ms before
// its due time; with the clock of a node that never held it fast, that
// is G1.
func TestStartHandedOnByAnOlderCopysHolderMayGainItsClock(t *testing.T) {
	for _, holder := range []bool{true, false} {
		h, p, b, other := placed(t)
		fast := other
		if holder {
			fast = b
		}
		up := write(2, Update, placedTimer, "u", 10*sec, 10*sec, 12*sec, 12*sec+10*ms, OK)
		up.Node, up.Spec.ReplicationFactor = p, 1
		h.Ops = append(h.Ops, up)
		h.Faults = []Fault{{At: 0, Kind: ClockDrift, Nodes: []string{fast}, Detail: "10000ppm"}}
		early := pop(22*sec-50*ms, p, "u", 1)
		early.Timer = placedTimer
		h.Pops = append(h.Pops, early)
		vs := Check(h)
		if holder {
			requireNone(t, vs)
		} else {
			requireHas(t, vs, "G1", "pop 1")
		}
	}
}

// TestStartHandedOnByAnotherSitesHolderMayGainItsClock proves G1 counts
// the clocks of the default factor's replicas at every site, not only at
// the write's: another site's relay answers a forward or a pop notice
// with the earliest start its site holds, a default replica's there
// among them, rebuilt from what that replica's clock measured. With the
// clock of the other site's default replica 1% fast, an rf 1 timer's pop
// 1 may come 50 ms before its due time at its home primary; with the
// clock fast on that site's node outside the default's replicas, that is
// G1.
func TestStartHandedOnByAnotherSitesHolderMayGainItsClock(t *testing.T) {
	home := []string{"n1", "n2", "n3"}
	far := []string{"n4", "n5", "n6"}
	away := Replicas(far, placedTimer, 1)[0]
	holder := Replicas(far, placedTimer, DefaultReplicationFactor)[1]
	var outside string
	for _, n := range far {
		if n != away && n != holder {
			outside = n
		}
	}
	primary := Replicas(home, placedTimer, 1)[0]
	for _, related := range []bool{true, false} {
		h := &History{
			Members: append(slices.Clone(home), far...),
			// The far site's relay is its rf 1 replica, so that only
			// the default's replicas there are new to the timer.
			Sites:        [][]string{home, {away, holder, outside}},
			Ops:          []Op{write(1, Create, placedTimer, "a", 10*sec, 10*sec, 0, 10*ms, OK)},
			End:          20 * sec,
			MaxClockSkew: ms,
			MaxNetDelay:  5 * ms,
			Faults:       []Fault{{At: 0, Kind: ClockDrift, Nodes: []string{pick(related, holder, outside)}, Detail: "10000ppm"}},
		}
		h.Ops[0].Node, h.Ops[0].Spec.ReplicationFactor = primary, 1
		early := pop(10*sec-50*ms, primary, "a", 1)
		early.Timer = placedTimer
		h.Pops = []Pop{early}
		vs := Check(h)
		if related {
			requireNone(t, vs)
		} else {
			requireHas(t, vs, "G1", "pop 1")
		}
	}
}

// TestRelayForwardThatWaitedHoldsItsSite proves the other site's replica
// is held by the waits of its relay's forward of the write: the write
// waits 1.5 s in the relay's inbound queue, and the relay's forward,
// sent once it processed it, past SiteLag after the client's answer, waits
// 2 s for the relay's CPU; the replica rebuilds its start when it
// processes the forward, so with the home replica down it pops 3.5 s
// late. The same wait on a forward to a node of no role holds nothing,
// nor one the relay sent past its own hold plus SiteLag after the answer
// (the write reached the relay in time: such a message is a notice, not
// the forward): G3.
func TestRelayForwardThatWaitedHoldsItsSite(t *testing.T) {
	sites, home, away := twoSitesRelayNoReplica()
	other := sites[0][0]
	if other == home {
		other = sites[0][1]
	}
	cases := []struct {
		name        string
		to          string
		relayWaited uint64 // the timer whose write waited in the relay's queue
		want        string
	}{
		{"forward to the site's replica", away, placedTimer, ""},
		{"forward to a node of no role", other, placedTimer, "G3"},
		{"write reached the relay in time", away, placedTimer + 1, "G3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &History{
				Members: []string{"n1", "n2", "n3", "n4"}, Sites: sites,
				Ops: []Op{write(1, Create, placedTimer, "a", sec, 5*sec, 0, 10*ms, OK)},
				End: 15 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
				Faults: []Fault{{At: 5 * ms, Kind: Queued, Nodes: []string{home}, Peers: []string{relay(sites)},
					Detail: "waited=1.5s record", Timer: c.relayWaited},
					{At: 500 * ms, Kind: Crash, Nodes: []string{home}},
					{At: 1505 * ms, Kind: Overload, Nodes: []string{relay(sites)}, Peers: []string{c.to},
						Detail: "waited=2s record", Timer: placedTimer}},
			}
			h.Ops[0].Node, h.Ops[0].Spec.ReplicationFactor = home, 1
			for k := 1; k <= 5; k++ {
				p := pop(time.Duration(k)*sec+2*sec+3500*ms+20*ms, away, "a", k)
				p.Timer = placedTimer
				h.Pops = append(h.Pops, p)
			}
			vs := Check(h)
			if c.want == "" {
				requireNone(t, vs)
			} else {
				requireHas(t, vs, c.want)
			}
		})
	}
}

// TestRelayPausedAgainAsItResumedHoldsItsSite proves another site's copy
// is held by every pause of its relay that began while an earlier one
// still held the write (seed 125298): the relay is paused when the write
// is made, resumes at 1.5 s and is paused again at that instant, before
// it can pass the write on, until 8 s; the write's node sends the
// forward again meanwhile, and the relay's replica rebuilds its start
// from the last of them, processed at 8 s. With the home replica
// crashed, the other site's replica pops 7.5 s late. Bounded: a second
// pause 100 ms after the resume, when the relay had passed the write on,
// holds nothing more (G3).
func TestRelayPausedAgainAsItResumedHoldsItsSite(t *testing.T) {
	sites, home, away := twoSitesRelayNoReplica()
	for _, c := range []struct {
		name  string
		again time.Duration // when the relay is paused again
		want  string
	}{
		{"paused again as it resumed", 1500 * ms, ""},
		{"paused again once it passed the write on", 1600 * ms, "G3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &History{
				Members: []string{"n1", "n2", "n3", "n4"}, Sites: sites,
				Ops: []Op{write(1, Create, placedTimer, "a", 10*sec, 30*sec, 0, 10*ms, OK)},
				End: 45 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
				Faults: []Fault{{At: 0, Kind: Pause, Nodes: []string{relay(sites)}},
					{At: 1500 * ms, Kind: Resume, Nodes: []string{relay(sites)}},
					{At: c.again, Kind: Pause, Nodes: []string{relay(sites)}},
					{At: 8 * sec, Kind: Resume, Nodes: []string{relay(sites)}},
					{At: 9 * sec, Kind: Crash, Nodes: []string{home}}},
			}
			h.Ops[0].Node, h.Ops[0].Spec.ReplicationFactor = home, 1
			for k := 1; k <= 3; k++ {
				p := pop(time.Duration(10*k)*sec+2*sec+7500*ms+20*ms, away, "a", k)
				p.Timer = placedTimer
				h.Pops = append(h.Pops, p)
			}
			requireWant(t, Check(h), c.want)
		})
	}
}

// TestRelayPausedAfterACutFromItHoldsItsSite proves another site's copy
// is held by a pause of its relay that began after a cut between the
// write's node and the relay healed, within the wait before the forward
// is sent again (SiteRetry; fresh seed 9820413): the cut loses every
// forward until 5 s, the relay pauses, and the forward sent again 3 s
// before its resume is processed then, so the relay's replica rebuilds
// its start 3 s late. The home replica restarts empty after the resume
// and takes that start from the other site's notice of pop 1: every pop
// after comes 3 s late from it. Bounded: a pause that began past
// SiteRetry after the heal held nothing of the write, which had reached
// the site by then, nor does a cut elsewhere (G3).
func TestRelayPausedAfterACutFromItHoldsItsSite(t *testing.T) {
	sites, home, away := twoSitesRelayNoReplica()
	for _, c := range []struct {
		name   string
		cut    [2][]string // the partition's sides
		paused time.Duration
		want   string
	}{
		{"paused after the cut healed", [2][]string{{home}, {relay(sites)}}, 8 * sec, ""},
		{"paused after a one-way cut from the relay healed", [2][]string{{relay(sites)}, {home, away}}, 8 * sec, ""},
		{"paused past the retry", [2][]string{{home}, {relay(sites)}}, 5*sec + SiteRetry + 100*ms, "G3"},
		{"a cut elsewhere", [2][]string{{home}, {"n2"}}, 8 * sec, "G3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resume := c.paused + 4*sec
			const late = 3 * sec
			h := &History{
				Members: []string{"n1", "n2", "n3", "n4"}, Sites: sites,
				Ops: []Op{write(1, Create, placedTimer, "a", 30*sec, 90*sec, 0, 10*ms, OK)},
				End: 2 * time.Minute, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
				Faults: []Fault{{At: 0, Kind: Partition, Nodes: c.cut[0], Peers: c.cut[1]},
					{At: 5 * sec, Kind: Heal},
					{At: c.paused, Kind: Pause, Nodes: []string{relay(sites)}},
					{At: resume, Kind: Resume, Nodes: []string{relay(sites)}},
					{At: 25 * sec, Kind: Crash, Nodes: []string{home}},
					{At: 26 * sec, Kind: Restart, Nodes: []string{home}}},
			}
			h.Ops[0].Node, h.Ops[0].Spec.ReplicationFactor = home, 1
			p := pop(30*sec+2*sec+late+20*ms, away, "a", 1)
			p.Timer = placedTimer
			h.Pops = append(h.Pops, p)
			for k := 2; k <= 3; k++ {
				p := pop(time.Duration(30*k)*sec+late+20*ms, home, "a", k)
				p.Timer = placedTimer
				h.Pops = append(h.Pops, p)
			}
			requireWant(t, Check(h), c.want)
		})
	}
}

// TestRelayWithoutACopyPassesItsHoldToItsSite proves another site's
// replica that missed the write is held by the waits of the message that
// brought the record to its relay, when the relay holds no copy of its
// own: the write's forward to the relay is shed, so the home replica's
// notice of pop 1 brings the other site the timer, but it waits 1.8 s for
// the home replica's CPU, and the relay places it on its site's replica
// at once, too quickly to be recorded. With the home replica shedding its
// later callbacks (its backlog outlasting the faults, into the liveness
// phase), the other site's replica pops them at its site's rank, 1.8 s
// late. The same wait on a message to a node of no role holds nothing,
// nor one to a relay whose site had the write (the shed forward was
// another timer's): G7.
func TestRelayWithoutACopyPassesItsHoldToItsSite(t *testing.T) {
	sites, home, away := twoSitesRelayNoReplica()
	other := sites[0][0]
	if other == home {
		other = sites[0][1]
	}
	cases := []struct {
		name string
		to   string
		shed uint64 // the timer whose forward to the relay was shed
		want string
	}{
		{"notice to the relay", relay(sites), placedTimer, ""},
		{"notice to a node of no role", other, placedTimer, "G7"},
		{"the site had the write", relay(sites), placedTimer + 1, "G7"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := &History{
				Members: []string{"n1", "n2", "n3", "n4"}, Sites: sites,
				Ops: []Op{write(1, Create, placedTimer, "a", 6*sec, 30*sec, 0, 10*ms, OK)},
				End: 45 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms, LivenessFrom: 10 * sec,
				Faults: []Fault{{At: 10 * ms, Kind: Overload, Nodes: []string{home}, Peers: []string{relay(sites)},
					Detail: ShedDetail, Timer: c.shed},
					{At: 6030 * ms, Kind: Overload, Nodes: []string{home}, Peers: []string{c.to},
						Detail: "waited=1.8s record", Timer: placedTimer}},
			}
			h.Ops[0].Node, h.Ops[0].Spec.ReplicationFactor = home, 1
			first := pop(6*sec+20*ms, home, "a", 1)
			first.Timer = placedTimer
			h.Pops = append(h.Pops, first)
			for k := 2; k <= 5; k++ {
				h.Faults = append(h.Faults, Fault{At: time.Duration(6*k) * sec, Kind: Overload, Nodes: []string{home}, Peers: []string{"client"},
					Detail: ShedDetail, Timer: placedTimer})
				p := pop(time.Duration(6*k)*sec+2*sec+1800*ms+20*ms, away, "a", k)
				p.Timer = placedTimer
				h.Pops = append(h.Pops, p)
			}
			vs := Check(h)
			if c.want == "" {
				requireNone(t, vs)
			} else {
				requireHas(t, vs, c.want)
			}
		})
	}
}

// TestNoticeThroughAPausedRelayRevivesNothing proves that a pop notice to
// a replica at another site, which reaches it through that site's address
// node, brings its copy back only when the relay passed it on (seed
// 735724): rf 1 at each of two sites, the home replica restarted empty,
// the other site's replica popped at its site's rank, and the home
// site's relay was paused, so nothing reached the home replica and the
// later pops are owed at the other site's rank. With the relay up, the
// first notice refilled the home replica, and the same pops are late.
func TestNoticeThroughAPausedRelayRevivesNothing(t *testing.T) {
	sites := [][]string{{"n1", "n2"}, {"n3", "n4"}}
	home := Replicas(sites[0], placedTimer, 1)[0]
	if home == sites[0][0] {
		sites[0][0], sites[0][1] = sites[0][1], sites[0][0] // the relay is not the replica
	}
	away := Replicas(sites[1], placedTimer, 1)[0]
	for _, paused := range []bool{true, false} {
		t.Run(map[bool]string{true: "relay paused", false: "relay up"}[paused], func(t *testing.T) {
			h := &History{
				Members: []string{"n1", "n2", "n3", "n4"}, Sites: sites,
				Ops: []Op{write(1, Create, placedTimer, "a", 5*sec, 30*sec, 0, 10*ms, OK)},
				End: 45 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
				Faults: []Fault{{At: sec, Kind: Crash, Nodes: []string{home}}, {At: 2 * sec, Kind: Restart, Nodes: []string{home}}},
			}
			if paused {
				h.Faults = append(h.Faults, Fault{At: 3 * sec, Kind: Pause, Nodes: []string{sites[0][0]}},
					Fault{At: 40 * sec, Kind: Resume, Nodes: []string{sites[0][0]}})
			}
			h.Ops[0].Node, h.Ops[0].Spec.ReplicationFactor = home, 1
			for k := 1; k <= 6; k++ {
				p := pop(time.Duration(5*k)*sec+2*sec+20*ms, away, "a", k)
				p.Timer = placedTimer
				h.Pops = append(h.Pops, p)
			}
			vs := Check(h)
			if paused {
				requireNone(t, vs)
			} else {
				requireHas(t, vs, "G3")
			}
		})
	}
}

// TestLostCallbackIsItsReplicasFailedAttempt shows how a callback request
// lost on its way to the endpoint (sim's lose step) is judged: its
// replica tried the pop once and failed it, with no pop in the history
// to show for it, so the next replica's pop at its own rank is on time
// (G3), as after a refused callback. The same history without the lost
// request, or with one of another pop, holds the primary to pop 2: the
// backup's pop is late.
func TestLostCallbackIsItsReplicasFailedAttempt(t *testing.T) {
	build := func(lost bool, seq int) *History {
		h := healthy()
		replicas, _ := placeHealthy(h)
		h.Ops[0].Spec.Interval, h.Ops[0].Spec.RepeatFor, h.End = 10*sec, 30*sec, 40*sec
		h.Pops = nil
		for k := 1; k <= 3; k++ {
			h.Pops = append(h.Pops, pop(time.Duration(k)*10*sec+20*ms, replicas[0], "a", k))
		}
		h.Pops[1].Node, h.Pops[1].At = replicas[1], h.Pops[1].At+ReplicaSkew
		if lost {
			h.Faults = []Fault{{At: 20 * sec, Kind: Lost, Nodes: []string{replicas[0]}, Peers: []string{"client"},
				Timer: h.Ops[0].Timer, Detail: CallbackDetail + strconv.Itoa(seq)}}
		}
		return h
	}
	requireNone(t, Check(build(true, 2)))
	requireHas(t, Check(build(false, 2)), "G3", "pop 2")
	requireHas(t, Check(build(true, 3)), "G3", "pop 2")
}

// TestCopyAScalePlacedStoodStillRunsLate is scenarios/README.md C33
// (fresh seed 2200091): a scale-up places the timer on a new member,
// which is paused while the staying primary's resync pushes it the copy,
// so it rebuilds the start late by the hold; then both replicas that
// kept the true start crash, and the primary's boot resync takes the new
// member's late start back. Every later pop runs late by the hold, with a
// factor written or one the history leaves to the node (an update
// without one, of a timer whose last pop was past). The same pause on a
// member the scale placed nothing on, or a pause over before the scale
// began (nothing on its way), holds nothing, and the late pops are G3.
// The old backup, which the scale takes the timer off, hands the new
// member its copy and start before the scale completes: when it kept the
// true start and nothing held its hand-off (the new member's resync push
// from the primary held by a clog of their link alone), the new member
// holds the true start once the scale is done and the late pops are G3
// (handedStart); when the new member's pause may have held the hand-off
// too, it ends nothing, and a live old backup alone does not either
// (scenarios/README.md C46).
func TestCopyAScalePlacedStoodStillRunsLate(t *testing.T) {
	before := []string{"n1", "n2", "n3"}
	after := []string{"n1", "n2", "n3", "n4"}
	timer := uint64(placedTimer)
	for ; ; timer++ {
		b, a := Replicas(before, timer, 2), Replicas(after, timer, 2)
		if a[0] == b[0] && a[1] == "n4" {
			break
		}
	}
	primary, backup := Replicas(before, timer, 2)[0], Replicas(before, timer, 2)[1]
	var bystander string
	for _, m := range before {
		if m != primary && m != backup {
			bystander = m
		}
	}
	for _, c := range []struct {
		name, paused  string
		pausedAt      time.Duration
		factorLeft    bool
		backupCrashes bool
		clog          bool // a clog from the primary into the node, not a pause
		want          string
	}{
		{"new replica paused", "n4", 7 * sec, false, true, false, ""},
		{"new replica paused, factor left to the node", "n4", 7 * sec, true, true, false, ""},
		{"member of no role paused", bystander, 7 * sec, false, true, false, "G3"},
		{"member of no role paused, factor left to the node", bystander, 7 * sec, true, true, false, "G3"},
		{"the old backup kept the true start, its hand-off maybe held too", "n4", 7 * sec, false, false, false, ""},
		{"the old backup kept the true start and handed it on", "n4", 7 * sec, false, false, true, "G3"},
		{"primary's link clogged, the old backup crashed", "n4", 7 * sec, false, true, true, ""},
		{"new replica paused before the scale", "n4", 900 * ms, false, true, false, "G3"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &History{
				Members: before,
				Ops:     []Op{write(1, Create, timer, "a", 30*sec, 90*sec, 0, 10*ms, OK)},
				Scales:  []Scale{{Kind: ScaleUp, Start: 6 * sec, End: 25 * sec, Before: before, After: after}},
				End:     120 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
			}
			h.Ops[0].Node = primary
			start := time.Duration(0)
			if c.factorLeft {
				// A timer of factor 1 that popped once, updated without
				// a factor: the node keeps 1 or, the timer ended, takes
				// the default.
				h.Ops = []Op{write(1, Create, timer, "o", sec, 0, 0, 10*ms, OK),
					write(2, Update, timer, "a", 30*sec, 90*sec, 2*sec, 2*sec+10*ms, OK)}
				h.Ops[0].Node, h.Ops[0].Spec.ReplicationFactor = primary, 1
				h.Ops[1].Node, h.Ops[1].Spec.ReplicationFactor = primary, 0
				h.Pops = []Pop{{At: sec + 20*ms, Node: primary, URI: "http://client/cb", Opaque: "o", Seq: 1, Answered: 200, Timer: timer}}
				start = 2 * sec
			}
			h.Faults = []Fault{{At: c.pausedAt, Kind: Pause, Nodes: []string{c.paused}}, {At: c.pausedAt + 5*sec, Kind: Resume, Nodes: []string{c.paused}},
				{At: 14 * sec, Kind: Crash, Nodes: []string{primary}}, {At: 15 * sec, Kind: Restart, Nodes: []string{primary}}}
			if c.clog {
				h.Faults[0], h.Faults[1] = Fault{At: c.pausedAt, Kind: Clog, Nodes: []string{primary}, Peers: []string{c.paused}}, Fault{At: c.pausedAt + 5*sec, Kind: Heal}
			}
			if c.backupCrashes {
				h.Faults = append(h.Faults, Fault{At: 16 * sec, Kind: Crash, Nodes: []string{backup}}, Fault{At: 17 * sec, Kind: Restart, Nodes: []string{backup}})
			}
			for k := 1; k <= 3; k++ {
				h.Pops = append(h.Pops, Pop{At: start + time.Duration(k)*30*sec + 4500*ms, Node: primary, URI: "http://client/cb", Opaque: "a", Seq: k, Answered: 200, Timer: timer})
			}
			vs, cov := DefaultOptions().Judge(h)
			requireWant(t, vs, c.want, "late")
			if c.want == "" && cov.Excused[ExHeld] == 0 {
				t.Errorf("the late pops were not excused as %s: got %v", ExHeld, cov.Excused)
			}
		})
	}
}

// TestRefilledHoldOutlastsALiveHolderCutOff is scenarios/README.md C46
// (fresh seed 4881053): a partition keeps the write from the primary, the
// backup's notice of pop 1 brings it the copy while it is paused, so it
// rebuilds the start late by the pause's rest, and a partition that
// starts just after its resume keeps every notice of the backup, which
// kept the true start and never crashes, from it. The primary stays
// late, so the backup pops at its rank (2 s) through the cut: no G3. A
// live holder does not end the hold by itself; only a message with the
// true start that can reach the held replica does: once the cut heals,
// the backup's next notice does, and a pop late by the backup's rank
// after that is G3 (the bound).
func TestRefilledHoldOutlastsALiveHolderCutOff(t *testing.T) {
	h, p, b, _ := placed(t)
	h.Ops[0].Node = b
	h.Ops[0].Spec.Interval, h.Ops[0].Spec.RepeatFor = 10*sec, 60*sec
	h.End = 70 * sec
	var rest []string
	for _, m := range h.Members {
		if m != p {
			rest = append(rest, m)
		}
	}
	h.Faults = []Fault{
		{At: 0, Kind: Partition, Nodes: []string{p}, Peers: rest}, {At: 5 * sec, Kind: Heal},
		{At: 11 * sec, Kind: Pause, Nodes: []string{p}}, {At: 17 * sec, Kind: Resume, Nodes: []string{p}},
		{At: 17500 * ms, Kind: Partition, Nodes: []string{p}, Peers: rest}, {At: 40 * sec, Kind: Heal},
	}
	// Pop 1 from the backup at its rank, pops 2 to 4 from both through
	// the cut: the backup at its rank, the primary late by its hold; pops
	// 5 and 6 from the primary on time (the backup's notice of pop 4, once
	// the cut healed, handed it the true start), or, late6, pop 6 late by
	// the hold.
	build := func(late6 bool) *History {
		c := *h
		c.Pops = nil
		add := func(at time.Duration, node string, k int) {
			q := pop(at, node, "a", k)
			q.Timer = placedTimer
			c.Pops = append(c.Pops, q)
		}
		add(12*sec+20*ms, b, 1)
		for k := 2; k <= 4; k++ {
			due := time.Duration(k) * 10 * sec
			add(due+2*sec+20*ms, b, k)
			add(due+4*sec+900*ms, p, k)
		}
		add(50*sec+20*ms, p, 5)
		if late6 {
			add(64*sec+900*ms, p, 6)
		} else {
			add(60*sec+20*ms, p, 6)
		}
		return &c
	}
	vs, cov := DefaultOptions().Judge(build(false))
	requireNone(t, vs)
	if cov.Excused[ExHeld] == 0 {
		t.Errorf("the backup's pops were not excused as %s: got %v", ExHeld, cov.Excused)
	}
	vs = requireOnly(t, Check(build(true)), "G3")
	requireHas(t, vs, "G3", "pop 6", "late")
}
