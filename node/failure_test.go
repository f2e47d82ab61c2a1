package node

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// The callback failure policy (docs/design.md 4.7): a failed callback
// costs that pop on that replica only. These tests run whole clusters of
// nodes on one manual clock (see cluster_test.go).

// createOn creates a repeating timer through three[0] and returns its wire
// ID and replicas, primary first.
func createOn(t *testing.T, c *cluster, interval, repeatFor, rf int) (string, []string) {
	t.Helper()
	body := timerJSON(interval, repeatFor, cb, "x")
	body = strings.TrimSuffix(body, "}") + `,"reliability":{"replication-factor":` + string(rune('0'+rf)) + `}}`
	r := c.client(three[0], "POST", "/timers", body)
	if r.Status != 200 {
		t.Fatalf("create: got %d (%s)", r.Status, r.Body)
	}
	wid := strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
	return wid, NewRing(three).Replicas(mustID(t, wid), rf)
}

// popBy is one callback as a test sees it: which replica sent which pop.
type popBy struct {
	node string
	seq  string
}

// record answers every callback with answer and lists them in order.
func record(list *[]popBy, answer func(node, seq string) int) func(*sent) int {
	return func(s *sent) int {
		seq := s.req.Header.Get(wire.HeaderSequenceNumber)
		*list = append(*list, popBy{s.from, seq})
		return answer(s.from, seq)
	}
}

// refusing answers 500 to pop seq from node (any node when node is ""),
// 200 to every other callback.
func refusing(node, seq string) func(string, string) int {
	return func(n, s string) int {
		if (node == "" || n == node) && s == seq {
			return 500
		}
		return 200
	}
}

// TestEveryReplicaFailingAPopStillPopsTheNext proves that when the
// callback of one pop fails on every replica, each replica tried it once
// (no retry storm) and the timer still pops the next interval: a failure
// never ends a repeating timer.
func TestEveryReplicaFailingAPopStillPopsTheNext(t *testing.T) {
	c := newCluster(t, three...)
	_, replicas := createOn(t, c, 10, 40, 2)
	var got []popBy
	c.advanceWith(60*time.Second, record(&got, refusing("", "1")))
	want := []popBy{{replicas[0], "1"}, {replicas[1], "1"}, {replicas[0], "2"}, {replicas[0], "3"}, {replicas[0], "4"}}
	if !slices.Equal(got, want) {
		t.Fatalf("callbacks: got %v, want %v", got, want)
	}
}

// TestMissedPopIsLeftToTheNextReplicaWhenALaterNoticeComesFirst proves a
// failed pop is left to the next replica even when the notice of a later
// pop reaches it before its turn for the failed one (an interval shorter
// than the 2 s skew): the notice says which pop was missed, the backup
// pops that one at its rank, and pops nothing the primary made.
func TestMissedPopIsLeftToTheNextReplicaWhenALaterNoticeComesFirst(t *testing.T) {
	c := newCluster(t, three...)
	wid, replicas := createOn(t, c, 1, 5, 2)
	primary, backup := replicas[0], replicas[1]
	var got []popBy
	c.advanceWith(20*time.Second, record(&got, refusing(primary, "2")))
	want := []popBy{{primary, "1"}, {primary, "2"}, {primary, "3"}, {backup, "2"}, {primary, "4"}, {primary, "5"}}
	if !slices.Equal(got, want) {
		t.Fatalf("callbacks: got %v, want %v", got, want)
	}
	if h := c.holders(wid); len(h) != 0 {
		t.Fatalf("live copies after the last pop: got %v, want none (tombstones)", h)
	}
}

// TestMissedPopIsNotOwedByAReplicaThatMadeIt proves a notice that says a
// pop was missed changes nothing on a replica that made that pop itself,
// and that the replica's answer tells the sender so: the sender's later
// notices no longer mention it.
func TestMissedPopIsNotOwedByAReplicaThatMadeIt(t *testing.T) {
	c := newCluster(t, three...)
	wid, replicas := createOn(t, c, 10, 30, 2)
	primary, backup := replicas[0], replicas[1]
	var got []popBy
	answer := record(&got, refusing(primary, "1"))
	c.advanceWith(25*time.Second, answer)
	held, _ := c.nodes[primary].Timer(mustID(t, wid))
	if missed, owed := held.popMarks(); missed != 0 || owed != 0 || held.Seq != 2 {
		t.Fatalf("primary after pop 2: got seq %d missed %b owed %b, want seq 2 and nothing missed", held.Seq, missed, owed)
	}
	c.advanceWith(10*time.Second, answer)
	want := []popBy{{primary, "1"}, {backup, "1"}, {primary, "2"}, {primary, "3"}}
	if !slices.Equal(got, want) {
		t.Fatalf("callbacks: got %v, want %v", got, want)
	}
}

// TestPopMarks proves the arithmetic of the missed and owed marks: a bit
// per pop below Seq, shifted as Seq moves on, and gone past MissedWindow.
func TestPopMarks(t *testing.T) {
	cases := []struct {
		seq, p uint32
		want   uint32
	}{
		{5, 5, 1}, {5, 4, 2}, {5, 1, 16}, {5, 6, 0}, {40, 9, 1 << 31}, {40, 8, 0},
	}
	for _, tc := range cases {
		if got := popBit(tc.seq, tc.p); got != tc.want {
			t.Errorf("popBit(%d, %d): got %b, want %b", tc.seq, tc.p, got, tc.want)
		}
	}
	if got := shiftMarks(0b101, 3, 5); got != 0b10100 {
		t.Errorf("shiftMarks: got %b, want 10100", got)
	}
	if got := shiftMarks(1, 3, 3+MissedWindow); got != 0 {
		t.Errorf("shiftMarks past the window: got %b, want 0", got)
	}
	tm := &Timer{Seq: 7, interval: sec(time.Second), repeatFor: sec(10 * time.Second), Start: 0}
	tm.setPopMarks(0b1010, 0b1000)
	if p, ok := tm.nextPop(); !ok || p != 4 {
		t.Errorf("nextPop with pop 4 owed: got %d %v, want 4", p, ok)
	}
	if at, _ := tm.NextPopAt(); at != 4000 {
		t.Errorf("NextPopAt: got %d, want 4000", at)
	}
}

// TestOnlyTheLastReplicasPopWaitsToBeSent proves a pop another replica
// would make after this one may wait to be sent no longer than the skew
// to that replica (past it the driver sheds it, and that replica pops
// instead of both), while the last replica's pop, which nobody would
// make after it, carries no such bound.
func TestOnlyTheLastReplicasPopWaitsToBeSent(t *testing.T) {
	c := newCluster(t, three...)
	_, replicas := createOn(t, c, 10, 10, 2)
	waits := map[string]time.Duration{}
	c.advanceWith(15*time.Second, func(s *sent) int {
		waits[s.from] = s.req.MaxWait
		return 500
	})
	if len(waits) != 2 || waits[replicas[0]] != ReplicaSkew || waits[replicas[1]] != 0 {
		t.Fatalf("MaxWait by replica: got %v, want %v for the primary %s and 0 for the backup %s", waits, ReplicaSkew, replicas[0], replicas[1])
	}
}

// TestHandOffHolderPopWaitsToBeSent proves a node the placement leaves
// out, which still pops its copy while the new replicas lack it (the
// hand-off of docs/design.md 4.8), sends its pops with no bound on their
// wait: it pops after every replica's turn, so a pop it shed under load
// would be left to nobody and lost (a generated plan whose backlog
// outlasted a scale-up lost every pop the old replica owed that way).
func TestHandOffHolderPopWaitsToBeSent(t *testing.T) {
	four := append(slices.Clone(three), nodeD)
	c := newRepairingCluster(t, three...)
	var id uint64
	for {
		wid := createVia(t, c, three[0], `{"timing":{"interval":10},"callback":{"http":{"uri":"`+cb+`"}},"reliability":{"replication-factor":1}}`)
		if id = mustID(t, wid); NewRing(four).Replicas(id, 1)[0] == nodeD {
			break
		}
	}
	old := NewRing(three).Replicas(id, 1)[0]
	// The new replica takes nothing: the old one keeps its copy live.
	c.down[nodeD] = true
	c.join(nodeD, Membership{Nodes: four})
	for _, a := range three {
		if err := c.nodes[a].SetCluster(Membership{Nodes: four}); err != nil {
			t.Fatal(err)
		}
	}
	waits := map[string][]time.Duration{}
	c.advanceWith(30*time.Second, func(s *sent) int {
		if s.req.Header.Get(wire.HeaderTimerID) == wire.FormatID(id) {
			waits[s.from] = append(waits[s.from], s.req.MaxWait)
		}
		return 200
	})
	if len(waits) != 1 || len(waits[old]) == 0 {
		t.Fatalf("callbacks of the moved timer by node: got %v, want some from the old replica %s only", waits, old)
	}
	for _, w := range waits[old] {
		if w != 0 {
			t.Fatalf("MaxWait of the old replica's pops: got %v, want 0 for every one (nobody pops after it)", waits[old])
		}
	}
}

// TestFinishedCopyKeepsTellingOfAMissedPop proves a replica that made its
// last pop but failed an earlier one stays live, popping nothing, until
// the next replica has made the missed pop: as a tombstone, its notices
// and its answers to other replicas would make them drop the pop they owe
// (a case the sweep found, through another site's relay).
func TestFinishedCopyKeepsTellingOfAMissedPop(t *testing.T) {
	c := newCluster(t, three...)
	wid, replicas := createOn(t, c, 1, 2, 2)
	primary, backup := replicas[0], replicas[1]
	id := mustID(t, wid)
	var got []popBy
	answer := record(&got, refusing(primary, "1"))
	c.advanceWith(2100*time.Millisecond, answer)
	held, _ := c.nodes[primary].Timer(id)
	if missed, _ := held.popMarks(); held.State != Live || held.Seq != 2 || missed != popBit(2, 1) {
		t.Fatalf("primary after its last pop: got state %v seq %d missed %b, want live at seq 2, pop 1 missed", held.State, held.Seq, missed)
	}
	c.advanceWith(2*time.Second, answer)
	want := []popBy{{primary, "1"}, {primary, "2"}, {backup, "1"}}
	if !slices.Equal(got, want) {
		t.Fatalf("callbacks: got %v, want %v", got, want)
	}
	if held, _ := c.nodes[primary].Timer(id); held.State != Tombstone {
		t.Fatalf("primary once the backup made pop 1: got %+v, want a tombstone", held)
	}
}

// FuzzParsePopped proves the reader of a peer's X-Chronos-Popped answer
// never panics, and that what it accepts is exactly what the node writes.
func FuzzParsePopped(f *testing.F) {
	for _, v := range []string{"2 2", "0 0", "4294967295 4294967295", "", " ", "1", "1 ", "-1 2", "1 2 3", "4294967296 0"} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v string) {
		seq, missed, ok := parsePopped(v)
		if !ok {
			return
		}
		if again := strconv.FormatUint(uint64(seq), 10) + " " + strconv.FormatUint(uint64(missed), 10); again != v && !leadingZeroOrPlus(v) {
			t.Fatalf("parsePopped(%q) = %d %d, written back as %q", v, seq, missed, again)
		}
	})
}

// leadingZeroOrPlus reports forms strconv accepts that the node never
// writes ("02 1", "+1 2"): equal in value, not in spelling.
func leadingZeroOrPlus(v string) bool {
	for _, f := range strings.Split(v, " ") {
		if len(f) > 1 && (f[0] == '0' || f[0] == '+') {
			return true
		}
	}
	return false
}
