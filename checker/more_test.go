package checker

import (
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

func TestPlacement(t *testing.T) {
	// G6: exact placement passes; a missing replica, a stale copy on a
	// node that is no replica, and a copy of a dead timer are reported.
	want := map[uint64][]string{1: {"a", "b"}, 2: {"b", "c"}}
	tests := []struct {
		name  string
		held  map[string][]uint64
		wants []string
	}{
		{"converged", map[string][]uint64{"a": {1}, "b": {1, 2}, "c": {2}}, nil},
		{"missing replica", map[string][]uint64{"a": {1}, "b": {1}, "c": {2}},
			[]string{"replica b of timer 0000000000000002 holds no copy"}},
		{"stale copy on a node that left", map[string][]uint64{"a": {1}, "b": {1, 2}, "c": {2}, "d": {1}},
			[]string{"node d holds a stale copy of timer 0000000000000001"}},
		{"copy of a dead timer", map[string][]uint64{"a": {1, 9}, "b": {1, 2}, "c": {2}},
			[]string{"node a holds timer 0000000000000009 that is not live"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs := CheckPlacement(tt.held, want)
			if len(vs) != len(tt.wants) {
				t.Fatalf("got %d violations:\n%s\nwant %d", len(vs), dump(vs), len(tt.wants))
			}
			for i, w := range tt.wants {
				if vs[i].Guarantee != "G6" || !strings.Contains(vs[i].Message, w) {
					t.Fatalf("got %s: %s, want G6 mentioning %q", vs[i].Guarantee, vs[i].Message, w)
				}
			}
		})
	}
}

func TestLinearizableNamesTheBadTimer(t *testing.T) {
	// With two timers, only the one whose update did not stick is named,
	// dated by the offending pop.
	h := healthy()
	h.Ops = append(h.Ops,
		write(2, Create, 2, "x", sec, 5*sec, 0, 10*ms, OK),
		write(3, Update, 2, "y", sec, sec, 2500*ms, 2510*ms, OK))
	h.Pops = append(h.Pops, pops("n2", "x", 1, 3, 0)...)
	h.Pops = append(h.Pops, pop(3520*ms, "n2", "y", 1))
	ok, info := Linearizable(h)
	if ok || info.Result != porcupine.Illegal {
		t.Fatalf("got ok %v result %v, want not linearizable", ok, info.Result)
	}
	if len(info.Violations) != 1 || info.Violations[0].Timer != 2 || info.Violations[0].At != 3020*ms {
		t.Fatalf("got %v, want one violation on timer 2 at 3.02s", dump(info.Violations))
	}
	if info.Partitions != 2 {
		t.Fatalf("got %d partitions, want 2", info.Partitions)
	}
}

func TestLinearizableWithUnknownWrites(t *testing.T) {
	// Unknown outcomes may apply late or never: an unknown delete after
	// which pops go on, and an unknown update whose pops start later, are
	// both linearizable.
	h := healthy()
	h.Ops = append(h.Ops, del(2, 1, 1500*ms, 1600*ms, Unknown),
		write(3, Create, 2, "x", sec, 5*sec, 0, 10*ms, OK),
		write(4, Update, 2, "y", sec, sec, 1500*ms, 1600*ms, Unknown))
	h.Pops = append(h.Pops, pops("n2", "x", 1, 3, 0)...)
	h.Pops = append(h.Pops, pop(4520*ms, "n2", "y", 1))
	if ok, info := Linearizable(h); !ok {
		t.Fatalf("got not linearizable %s, want linearizable", dump(info.Violations))
	}
}

func TestLinearizableLeavesOutFaultedStretch(t *testing.T) {
	// A write that a fault touched stops the porcupine check of its timer
	// from there on: the stale pops that follow are left out, with a note.
	h := healthy()
	h.Ops = append(h.Ops, del(2, 1, 2500*ms, 2510*ms, OK))
	h.Faults = []Fault{{At: 2400 * ms, Kind: Partition, Nodes: []string{"n2"}}, {At: 2600 * ms, Kind: Heal}}
	ok, info := Linearizable(h)
	if !ok || info.Excluded == 0 || !strings.Contains(info.Note, "left out") {
		t.Fatalf("got ok %v excluded %d note %q, want ok with pops left out", ok, info.Excluded, info.Note)
	}
}

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

func TestLatePopAfterLivenessIsG7(t *testing.T) {
	// Right after the liveness phase began, a pop later than the
	// replica-failure bound is G7.
	h := healthy()
	h.Faults = []Fault{{At: 1500 * ms, Kind: Crash, Nodes: []string{"n3"}}, {At: 2 * sec, Kind: Restart, Nodes: []string{"n3"}}}
	h.LivenessFrom = 2 * sec
	h.Pops[2].At = 6 * sec
	requireHas(t, Check(h), "G7", "pop 3", "late")
}

func TestOptionsValidate(t *testing.T) {
	// Validate names the field and value that cannot be used.
	o := DefaultOptions()
	if err := o.Validate(); err != nil {
		t.Fatalf("got %v, want nil", err)
	}
	o.NetHops = -1
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "NetHops -1") {
		t.Fatalf("got %v, want an error naming NetHops -1", err)
	}
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

// reorderedUpdates is seed 1596's shape (N4): update "b" through a replica
// cut off by a partition is acknowledged, then update "c", invoked 500ms
// after "b" returned, through a node whose clock runs behind; after the
// heal only "b" pops.
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

func TestLatePopAfterOtherReplicasFailedCallbackIsExcused(t *testing.T) {
	// Pop 2's callback fails from the primary and the first backup, each
	// of which drops its copy (docs/design.md 4.7); the second backup is paused
	// and pops on resume, seconds late. Every replica was without a copy
	// or down, so no lateness bound applies.
	h := healthy()
	h.Ops[0].Spec.ReplicationFactor = 3
	refused := func(p Pop) Pop { p.Answered = 500; return p }
	h.Pops = []Pop{h.Pops[0], refused(pop(2020*ms, "n1", "a", 2)), refused(pop(4020*ms, "n2", "a", 2)),
		pop(8*sec, "n3", "a", 2), pop(8100*ms, "n3", "a", 3)}
	h.Faults = []Fault{{At: 1900 * ms, Kind: FailCallback, Nodes: []string{"http://client/cb"}},
		{At: 4500 * ms, Kind: CallbackOK, Nodes: []string{"http://client/cb"}},
		{At: 1500 * ms, Kind: Pause, Nodes: []string{"n3"}}, {At: 8 * sec, Kind: Resume, Nodes: []string{"n3"}}}
	h.End = 9 * sec
	h.Ops[0].Spec.RepeatFor = 3 * sec
	requireNone(t, Check(h))
	// Without the failed callbacks, the two other replicas could have
	// popped in time: the paused one's late pop is G3.
	h.Pops = append(h.Pops[:1], h.Pops[3:]...)
	requireHas(t, Check(h), "G3", "pop 2 from n3 arrived late")
}

func TestCopyDroppedBeforeTheWindowStaysDropped(t *testing.T) {
	// n1's callback for pop 1 fails at 10s and it drops its copy; no pop
	// succeeds after, so it still has none when pop 3 falls due at 30s,
	// while n2 is paused from 11s to 35s and pops 2 and 3 on resume.
	h := healthy()
	h.Ops[0].Spec.Interval, h.Ops[0].Spec.RepeatFor = 10*sec, 30*sec
	refused := pop(10020*ms, "n1", "a", 1)
	refused.Answered = 500
	h.Pops = []Pop{refused, pop(35*sec, "n2", "a", 1), pop(35001*ms, "n2", "a", 2), pop(35002*ms, "n2", "a", 3)}
	h.Faults = []Fault{{At: 9 * sec, Kind: FailCallback, Nodes: []string{"http://client/cb"}},
		{At: 10500 * ms, Kind: CallbackOK, Nodes: []string{"http://client/cb"}},
		{At: 11 * sec, Kind: Pause, Nodes: []string{"n2"}}, {At: 35 * sec, Kind: Resume, Nodes: []string{"n2"}}}
	h.End = 40 * sec
	requireNone(t, Check(h))
	// Had n1's callback succeeded, n1 would still hold the timer: pop 3
	// from the paused n2 is late.
	h.Pops[0].Answered = 200
	requireHas(t, Check(h), "G3", "pop 3 from n2 arrived late")
}

func TestSlowCallbackLosesTheOnlyCopy(t *testing.T) {
	// Seed 11801: an rf 1 timer pops into a slow endpoint, which answers
	// 200 after the service's timeout; the replica takes it for a failure
	// and drops its only copy, so no later pop is owed, even after the
	// liveness phase.
	h := healthy()
	h.Ops[0].Spec.ReplicationFactor = 1
	h.Ops[0].Spec.RepeatFor = 10 * sec
	h.End = 20 * sec
	h.Faults = []Fault{{At: 500 * ms, Kind: SlowCallback, Nodes: []string{"http://client/cb"}, Detail: "delay=3s"},
		{At: 1500 * ms, Kind: CallbackOK, Nodes: []string{"http://client/cb"}}}
	h.LivenessFrom = 1500 * ms
	h.Pops = h.Pops[:1]
	requireNone(t, Check(h))
	// With the endpoint fast, the copy stays and the missing pops are lost (G2).
	h.Faults = nil
	h.LivenessFrom = 0
	requireOnly(t, Check(h), "G2")
}

func TestLatePopAfterEveryCopyWentDormantIsExcused(t *testing.T) {
	// Both replicas were cut off from the endpoint when pop 2 fell due,
	// so both failed that callback and hold the timer dormant; the timer
	// comes back only when a replica that missed the write pops, and its
	// first pop after the liveness phase may be late.
	h := healthy()
	h.Ops[0].Spec.RepeatFor = 10 * sec
	h.End = 20 * sec
	h.Faults = []Fault{{At: 1500 * ms, Kind: Partition, Nodes: []string{"n1", "n2"}, Peers: []string{"client"}},
		{At: 2500 * ms, Kind: Heal}}
	h.LivenessFrom = 3 * sec
	h.Pops = append(h.Pops[:1], pop(9*sec, "n3", "a", 3))
	vs := Check(h)
	for _, v := range vs {
		if v.Guarantee == "G7" && strings.Contains(v.Message, "pop 3") && strings.Contains(v.Message, "late") {
			t.Fatalf("got %s, want pop 3's lateness excused", v.Message)
		}
	}
	// Cut off from another endpoint, they kept their copies: pop 3 is late.
	h.Faults[0].Peers = []string{"elsewhere"}
	requireHas(t, Check(h), "G7", "pop 3", "late")
}
