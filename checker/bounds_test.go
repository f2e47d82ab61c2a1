package checker

import (
	"slices"
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
	// Seed 11801's shape: an rf 1 timer pops into a slow endpoint, which
	// answers 200 after the service's timeout; the replica takes it for a
	// failure. That costs pop 1 alone: the later pops are owed.
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
