package node

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chronos-timer/chronos/wire"
)

// TestSupersedes proves the conflict rule for two records of one timer: a
// later client write wins; within one write the record that popped further
// wins; a tombstone ends its definition for good; duplicates change
// nothing.
func TestSupersedes(t *testing.T) {
	live := func(version uint64, seq uint32) *Timer { return &Timer{Version: version, Seq: seq} }
	tomb := func(version uint64, seq uint32) *Timer { return &Timer{Version: version, Seq: seq, State: Tombstone} }
	moved := func(version uint64, seq uint32) *Timer { return &Timer{Version: version, Seq: seq, State: Moved} }
	cases := []struct {
		name               string
		existing, incoming *Timer
		want               bool
	}{
		{"nothing held", nil, live(1, 0), true},
		{"nothing held, tombstone", nil, tomb(1, 0), true},
		{"later write", live(1, 5), live(2, 0), true},
		{"earlier write", live(2, 0), live(1, 5), false},
		{"later delete", live(1, 3), tomb(2, 0), true},
		{"write after delete", tomb(1, 0), live(2, 0), true},
		{"stale write after delete", tomb(2, 0), live(1, 9), false},
		{"pop notice", live(1, 1), live(1, 2), true},
		{"stale pop notice", live(1, 2), live(1, 1), false},
		{"duplicate", live(1, 2), live(1, 2), false},
		{"final pop", live(1, 2), tomb(1, 3), true},
		{"final pop seen before the last notice", live(1, 3), tomb(1, 2), true},
		{"notice after the final pop", tomb(1, 3), live(1, 4), false},
		{"duplicate tombstone", tomb(1, 3), tomb(1, 3), false},
		{"end of a moved copy", moved(1, 2), tomb(1, 3), true},
		{"moved copy of an ended definition", tomb(1, 3), moved(1, 2), false},
		{"moved copy offered live", moved(1, 2), live(1, 3), false},
		{"moved copy twice", moved(1, 2), moved(1, 3), false},
	}
	for _, tc := range cases {
		if got := Supersedes(tc.existing, tc.incoming); got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestPlacementsAreBounded shows the interned placements stay within
// maxPlacements however many distinct lists peers send, and that a list
// is interned again after the cache starts over.
func TestPlacementsAreBounded(t *testing.T) {
	h := newHarness(t)
	for i := range 3 * maxPlacements {
		h.node.placement([]string{"127.0.0.1:" + strconv.Itoa(i)}, nil)
		if len(h.node.placements) > maxPlacements {
			t.Fatalf("after %d lists: %d interned, want at most %d", i+1, len(h.node.placements), maxPlacements)
		}
	}
	a := h.node.placement([]string{"a", "b"}, []string{"s"})
	if b := h.node.placement([]string{"a", "b"}, []string{"s"}); a != b {
		t.Fatalf("the same list was not interned once")
	}
}

// TestTombstoneOverTombstoneKeepsReplacedPops is the shape of a case the
// sweep found: a one-shot definition popped here, then two deletes
// replaced it in turn. The second tombstone must still remember the pop
// the first remembered, so that a proxy's retry of the one-shot write
// above both deletes does not pop it again.
func TestTombstoneOverTombstoneKeepsReplacedPops(t *testing.T) {
	h := newHarness(t)
	n := h.node
	place := n.placement([]string{n.self}, nil)
	now := n.nowMs()
	oneShot := wire.Timer{URI: cb, Opaque: "x", ReplicationFactor: 1}
	popped := newTimer(7, 100, oneShot, now, 1, place, 0, n.shared)
	popped.entomb()
	for i, rec := range []*Timer{
		popped,
		newTimer(7, 200, wire.Timer{}, now, 0, place, 0, n.shared),
		newTimer(7, 300, wire.Timer{}, now, 0, place, 0, n.shared),
		newTimer(7, 400, oneShot, now, 0, place, 0, n.shared),
	} {
		if a := n.apply(rec); !a.ok || a.newer != nil {
			t.Fatalf("record %d not applied: %+v", i, a)
		}
	}
	if got := n.store.Get(7); got == nil || got.Seq != 1 {
		t.Fatalf("after the retry: got %+v, want the one pop carried over", got)
	}
	h.clock.advance(time.Minute)
	wantPops(t, h.pops(cb, 200))
}

// TestEarlierStartIsAnsweredOnlyForTheSameDefinition proves a replica
// tells a sender its earlier start only of the definition the sender
// wrote: a later copy of the same definition is answered with it, but a
// live update meeting a client delete's tombstone of the very same
// version (twins sharing an instance number) is not, since
// the tombstone's start is the buried definition's, and a replica of the
// update would take it and pop early (the update's proxy popped at once, in a case
// the sweep found).
func TestEarlierStartIsAnsweredOnlyForTheSameDefinition(t *testing.T) {
	h := newHarness(t)
	wid := h.create(timerJSON(10, 30, cb, "old"))
	held, _ := h.node.Timer(mustID(t, wid))
	h.clock.advance(5 * time.Second)
	put := func(rec *Timer) Response {
		return h.send(Request{Method: "PUT", URL: "/timers/" + wid, Header: Header{}, Body: EncodeReplication(rec, h.node.nowMs())})
	}
	late := held
	late.Start += 5000
	if r := put(&late); r.Status != 200 || r.Header.Get(HeaderStartDelta) == "" {
		t.Fatalf("a later copy of the same definition: got %d, %s %q, want 200 with the earlier start", r.Status, HeaderStartDelta, r.Header.Get(HeaderStartDelta))
	}
	deleted := *withParts(&Timer{ID: held.ID, Version: held.Version + 1, Start: h.node.nowMs(), State: Tombstone}, held.Placement(), nil)
	if r := put(&deleted); r.Status != 200 {
		t.Fatalf("delete: got %d (%s)", r.Status, r.Body)
	}
	update := *withCallback(withParts(&Timer{ID: held.ID, Version: deleted.Version, Start: h.node.nowMs(), interval: sec(10 * time.Second), repeatFor: sec(10 * time.Second)}, held.Placement(), nil), cb, "new")
	update.def = definitionHash(update.Interval(), update.RepeatFor(), cb, "new")
	if r := put(&update); r.Header.Get(HeaderStartDelta) != "" {
		t.Fatalf("an update of the delete's version: got %s %q, want none", HeaderStartDelta, r.Header.Get(HeaderStartDelta))
	}
}

// TestEarlierStartAnswerNeverMovesTheSenderEarlier proves the rounding
// rule of a replica's answer with its earlier start (node.go startMs): the
// delta is taken from the replica's clock truncated to the millisecond,
// and the sender adds it to its own clock rounded up, so the start the
// sender takes is never before the replica's own, by any fraction of a
// millisecond, and no pop of its precedes the request's arrival plus the
// interval. A client's create reaches its proxy, the backup, 0.2 ms into
// a millisecond; the backup's clock runs 0.5 ms ahead of the primary's
// (well within MaxClockSkew), and the rounding up each way leaves the
// primary's copy a millisecond later than the backup's. The primary's
// first pop notice is sent on a whole millisecond of its clock, the
// backup's then 0.5 ms into one: a delta from the backup's time rounded
// up moved the primary's start a millisecond early, 0.2 ms before the
// request's arrival (mutation start-answer-rounded).
func TestEarlierStartAnswerNeverMovesTheSenderEarlier(t *testing.T) {
	primary, backup := three[0], three[1]
	c := newSkewedCluster(t, map[string]time.Duration{backup: 500 * time.Microsecond}, primary, backup)
	c.clock.advance(200 * time.Microsecond)
	arrival := c.clock.now
	var wid string
	for try := 0; ; try++ {
		if try == 32 {
			t.Fatalf("no timer of %d created through %s is placed on %s first", try, backup, primary)
		}
		wid = createVia(t, c, backup, `{"timing":{"interval":10,"repeat-for":30},"callback":{"http":{"uri":"`+cb+
			`","opaque":"x"}},"reliability":{"replication-factor":2}}`)
		if NewRing(three[:2]).Replicas(mustID(t, wid), 2)[0] == primary {
			break
		}
		require.Equal(t, 200, c.client(backup, "DELETE", "/timers/"+wid, "").Status)
	}
	id := mustID(t, wid)
	p, _ := c.nodes[primary].Timer(id)
	b, _ := c.nodes[backup].Timer(id)
	require.Greater(t, p.Start, b.Start, "the primary's start against the backup's, before the notice")
	c.clock.advance(800 * time.Microsecond) // on whole milliseconds of the primary's clock from here on
	require.Equal(t, []string{"1:x"}, seqs(c.advance(11*time.Second, 200)), "pop 1, by the primary")
	require.Positive(t, c.nodes[primary].probeHits[probeStartAnswered], "the backup answered the notice with its start")
	p, _ = c.nodes[primary].Timer(id)
	b, _ = c.nodes[backup].Timer(id)
	if p.Start < b.Start {
		t.Errorf("the primary took the backup's earlier start as %d, %d ms before the backup's own (%d)", p.Start, b.Start-p.Start, b.Start)
	}
	// The primary's clock reads true time: its pops are due start +
	// k intervals of it.
	if start := time.UnixMilli(p.Start); start.Before(arrival) {
		t.Errorf("the primary's start is %v before the create's arrival: each pop of it would be that early", arrival.Sub(start))
	}
}

// TestEarlierStartIsTakenOnlyForTheSameDefinition is the sender's side: a
// replication's answer with an earlier start is of the definition sent,
// and the sender takes it only while it holds that one. Twins sharing an
// instance number gave two timers one ID and version; a node holding one
// relayed the other, and took the start its peer answered for it (seed
// 19111: an rf 1 timer popped 233 ms early, at the twin's start).
func TestEarlierStartIsTakenOnlyForTheSameDefinition(t *testing.T) {
	c := newCluster(t, three...)
	a := c.nodes[three[0]]
	const id = uint64(0x125f_17bf_fd00_0000)
	now := a.nowMs()
	record := func(opaque string, on string) *Timer {
		spec := wire.Timer{Interval: 10 * time.Second, RepeatFor: time.Minute, URI: cb, Opaque: opaque, ReplicationFactor: 1}
		return newTimer(id, id, spec, now, 0, a.placement([]string{on}, nil), a.ring.ViewID(), a.shared)
	}
	a.apply(record("mine", three[0]))
	for _, tc := range []struct {
		name      string
		sent      *Timer
		wantStart int64
	}{
		{"the twin's definition", record("twin", three[1]), now},
		{"the same definition", record("mine", three[1]), now - 5000},
	} {
		a.replicate(three[1], tc.sent, nil, now, nil)
		for _, s := range c.net.take("http://10.") {
			s.done(Response{Status: 200, Header: Header{HeaderStartDelta: "-5000"}}, nil)
		}
		if held, _ := a.Timer(id); held.Start != tc.wantStart {
			t.Fatalf("%s: the held record's start moved by %d ms, want %d", tc.name, held.Start-now, tc.wantStart-now)
		}
	}
}

// TestProgressFromTheFutureIsNotTaken proves a replica takes no pops that
// are not due yet by its clock, give or take MaxClockSkew: a peer whose
// clock ran minutes ahead popped a timer's every pop at once, and once
// set right offered its finished tombstone, which buried the live copies
// of the timer's other replicas and lost their remaining pops (a case
// the sweep found). A tombstone of a definition whose last pop is due
// within MaxClockSkew of now is taken; a live record is taken with the
// pops that can be due.
func TestProgressFromTheFutureIsNotTaken(t *testing.T) {
	skew := DefaultMaxClockSkew
	for _, tc := range []struct {
		name  string
		state State
		seq   uint32
		ahead time.Duration // how long after now the offered pop seq is due
		// What the node holds afterwards, and the pops it then makes.
		wantState State
		wantSeq   uint32
		wantPops  []string
	}{
		{"finished, far ahead", Tombstone, 5, 25 * time.Second, Live, 2, []string{"3:x", "4:x", "5:x"}},
		{"finished, just past the skew", Tombstone, 5, skew + time.Millisecond, Live, 2, []string{"3:x", "4:x", "5:x"}},
		{"finished, within the skew", Tombstone, 5, skew, Tombstone, 5, nil},
		{"live, far ahead", Live, 4, 15 * time.Second, Live, 2, []string{"3:x", "4:x", "5:x"}},
		{"live, just past the skew", Live, 4, skew + time.Millisecond, Live, 3, []string{"4:x", "5:x"}},
		{"live, within the skew", Live, 4, skew, Live, 4, []string{"5:x"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, wid, rec := twoPopsOfFive(t)
			rec.State, rec.Seq = tc.state, tc.seq
			// Pop seq of the offer is due tc.ahead after now: its start
			// is the held one's, or earlier (the held copy converges on
			// the earlier start of its definition).
			rec.Start = h.node.nowMs() + tc.ahead.Milliseconds() - int64(tc.seq)*10_000
			offerThenPops(t, h, wid, &rec, tc.wantState, tc.wantSeq, tc.wantPops)
		})
	}
}

// TestReplicaPushesItsEarlierStartWhenItsAnswerIsLost: a primary holding
// a start later than its backup's by most of the rank skew (its copy of
// the create waited seconds in a queue, N3) pops, and the backup's answer
// to the notice, which carries the earlier start, is lost. The backup
// pushes the primary its record, so the primary's next pop is not within
// a few milliseconds of the backup's turn (seed 4101183:
// two deliveries of pop 2). Once the starts agree, nothing more is pushed.
func TestReplicaPushesItsEarlierStartWhenItsAnswerIsLost(t *testing.T) {
	c, id, primary, backup := backupStartsEarlier(t)
	c.loseAnswer = timerPutsTo(backup)
	pushes := countPushes(c, backup, primary)
	got := seqs(c.advance(11*time.Second, 200))
	require.Equal(t, []string{"1:x"}, got, "pop 1, by the primary")
	p, _ := c.nodes[primary].Timer(id)
	b, _ := c.nodes[backup].Timer(id)
	assert.InDelta(t, b.Start, p.Start, 50, "the primary's start against the backup's, ms")
	c.loseAnswer = nil
	got = seqs(c.advance(40*time.Second, 200))
	assert.Equal(t, []string{"2:x", "3:x", "4:x"}, got, "the pops after, once each")
	assert.Equal(t, 1, *pushes, "the backup's pushes of its start")
}

// TestHeldBackPushOfAStartIsDroppedOnceTheTimerChanged: the backup's
// push of its earlier start waits behind a full window of bulk sends to
// the primary (flow.go), and the timer is updated meanwhile. Once the
// window has room, the push is dropped rather than sent: the update
// has a start of its own, and the record it was for is no longer held.
func TestHeldBackPushOfAStartIsDroppedOnceTheTimerChanged(t *testing.T) {
	c, id, primary, backup := backupStartsEarlier(t)
	release := fillBulkWindow(c, backup, primary)
	pushes := countPushes(c, backup, primary)
	require.Equal(t, []string{"1:x"}, seqs(c.advance(11*time.Second, 200)), "pop 1, by the primary")
	require.Zero(t, *pushes, "pushes while the window is full")
	require.Equal(t, 200, c.client(primary, "PUT", "/timers/"+wire.FormatWireID(id, 0), `{"timing":{"interval":10,"repeat-for":40},"callback":{"http":{"uri":"`+cb+
		`","opaque":"y"}},"reliability":{"replication-factor":2}}`).Status, "the update")
	release()
	assert.Zero(t, *pushes, "pushes of the replaced record's start")
}

// TestBurstOfNoticesWhileAPushIsHeldBackSendsOnePush: the backup's push
// of its earlier start waits behind a full window of bulk sends to the
// primary, and the primary pops twice meanwhile, each notice with its
// later start (the answers that carry the earlier start are lost). Once
// the window has room one push answers them both.
func TestBurstOfNoticesWhileAPushIsHeldBackSendsOnePush(t *testing.T) {
	c, _, primary, backup := backupStartsEarlier(t)
	c.loseAnswer = timerPutsTo(backup) // the answers carrying the earlier start
	release := fillBulkWindow(c, backup, primary)
	pushes := countPushes(c, backup, primary)
	require.Equal(t, []string{"1:x", "2:x"}, seqs(c.advance(21*time.Second, 200)), "pops 1 and 2, by the primary")
	release()
	assert.Equal(t, 1, *pushes, "pushes of the backup's start")
}

// fillBulkWindow fills from's window of bulk sends to (flow.go) with
// sends that wait for release, which answers them all and settles.
func fillBulkWindow(c *cluster, from, to string) (release func()) {
	var finishes []func(bool)
	for range bulkWindowStart {
		c.nodes[from].bulkSend(to, func(finish func(bool)) { finishes = append(finishes, finish) }, func() {})
	}
	return func() {
		for _, finish := range finishes {
			finish(true)
		}
		c.settle()
	}
}

// backupStartsEarlier creates a timer of four pops, one every 10 s, on
// two replicas, and moves its backup's start 1.9 s earlier than its
// primary's (a copy of the create that waited in a queue, N3).
func backupStartsEarlier(t *testing.T) (c *cluster, id uint64, primary, backup string) {
	c = newCluster(t, three[:2]...)
	r := c.client(three[0], "POST", "/timers", `{"timing":{"interval":10,"repeat-for":40},"callback":{"http":{"uri":"`+cb+
		`","opaque":"x"}},"reliability":{"replication-factor":2}}`)
	require.Equal(t, 200, r.Status, "create: %s", r.Body)
	id = mustID(t, strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/"))
	held, _ := c.nodes[three[0]].Timer(id)
	primary, backup = held.Placement().Replicas[0], held.Placement().Replicas[1]
	early, _ := c.nodes[backup].Timer(id)
	early.Start -= 1900
	c.place(backup, early)
	return c, id, primary, backup
}

// timerPutsTo picks the replications of a timer to host.
func timerPutsTo(host string) func(string, Request) bool {
	return func(to string, req Request) bool {
		return to == host && req.Method == "PUT" && strings.Contains(req.URL, "/timers/")
	}
}

// countPushes counts the replications from to to, delivered or not.
func countPushes(c *cluster, from, to string) *int {
	n := 0
	c.watch = func(s *sent, host string, _ int, _ bool) {
		if s.from == from && host == to && s.req.Method == "PUT" {
			n++
		}
	}
	return &n
}

// TestBackupPushesItsStartAgainUntilThePrimaryTakesIt: the backup's push
// of its earlier start to the primary is lost, and the primary's notices
// keep coming with the later start meanwhile (its own retries, their
// answers lost too). The backup sends the push again until the primary
// answers (bulkRetry), not only on the primary's next pop: the primary's
// next pops come as far from the backup's turn as the rank skew says,
// and each once.
func TestBackupPushesItsStartAgainUntilThePrimaryTakesIt(t *testing.T) {
	c, id, primary, backup := backupStartsEarlier(t)
	c.loseAnswer = timerPutsTo(backup)
	pushes := countPushes(c, backup, primary)
	lost := 0
	c.lose = func(host string, req Request) bool {
		if timerPutsTo(primary)(host, req) && lost < 1 {
			lost++
			return true
		}
		return false
	}
	got := seqs(c.advance(11*time.Second, 200))
	require.Equal(t, []string{"1:x"}, got, "pop 1, by the primary")
	p, _ := c.nodes[primary].Timer(id)
	b, _ := c.nodes[backup].Timer(id)
	assert.InDelta(t, b.Start, p.Start, float64(startPushGap.Milliseconds()), "the primary's start against the backup's, ms")
	assert.Equal(t, 2, *pushes, "the backup's pushes of its start: one lost, once again")
	c.loseAnswer, c.lose = nil, nil
	assert.Equal(t, []string{"2:x", "3:x", "4:x"}, seqs(c.advance(40*time.Second, 200)), "the pops after, once each")
}

// TestExpiredTombstoneFromTheFutureIsNotTaken: a tombstone that ended a
// copy's life with pops it knew were missed (expire) keeps their marks
// and carries them, and a replica takes it only once every replica's
// turn at the last pop is past on its clock, less MaxClockSkew. A holder
// whose clock ran ahead popped the last pops early, failed them, and
// ended the life early by the gain; taken, its tombstone buried the copy
// of a replica whose turn at those pops was still to come, and nobody
// made them (scenarios/README.md N65). A tombstone with no marks
// is the last pop's notice, taken within the skew as before.
func TestExpiredTombstoneFromTheFutureIsNotTaken(t *testing.T) {
	skew := DefaultMaxClockSkew
	for _, tc := range []struct {
		name   string
		missed uint32
		// lastTurn is how long after now + MaxClockSkew the last pop's
		// every turn is past (on this node's clock); lastDue is when
		// the last pop is due, relative to now.
		lastTurn  time.Duration
		wantState State
		wantSeq   uint32
		wantPops  []string
	}{
		{"expired, last pop due within the skew", 1, -1, Live, 2, []string{"3:x", "4:x", "5:x"}},
		{"expired, a millisecond before every turn is past", 1, time.Millisecond, Live, 2, []string{"3:x", "4:x", "5:x"}},
		{"expired, every turn past", 1, 0, Tombstone, 5, nil},
		{"last pop's notice, due within the skew", 0, -1, Tombstone, 5, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, wid, rec := twoPopsOfFive(t)
			rec.State, rec.Seq = Tombstone, 5
			rec.setPopMarks(tc.missed, 0)
			now := h.node.nowMs()
			if tc.lastTurn < 0 {
				// The last pop due exactly MaxClockSkew from now.
				rec.Start = now + skew.Milliseconds() - 50_000
			} else {
				life := maxSkewOf(&rec, h.node.cfg.ReplicationTimeout)
				rec.Start = now + skew.Milliseconds() + tc.lastTurn.Milliseconds() - life.Milliseconds() - 50_000
			}
			offerThenPops(t, h, wid, &rec, tc.wantState, tc.wantSeq, tc.wantPops)
		})
	}
}

// twoPopsOfFive is a node holding a timer of five pops, 10 s apart, that
// has made the first two, and its record.
func twoPopsOfFive(t *testing.T) (*harness, string, Timer) {
	t.Helper()
	h := newHarness(t)
	wid := h.create(timerJSON(10, 50, cb, "x"))
	h.clock.advance(25 * time.Second)
	if got := seqs(h.drainPops(cb, 200)); len(got) != 2 {
		t.Fatalf("pops by 25 s: got %v, want 2", got)
	}
	held, _ := h.node.Timer(mustID(t, wid))
	return h, wid, held
}

// offerThenPops offers rec to h's node and wants it to hold the timer in
// state at seq afterwards, and to make pops in the next minute.
func offerThenPops(t *testing.T, h *harness, wid string, rec *Timer, state State, seq uint32, pops []string) {
	t.Helper()
	if r := h.send(Request{Method: "PUT", URL: "/timers/" + wid, Body: EncodeReplication(rec, h.node.nowMs())}); r.Status != 200 {
		t.Fatalf("offer: got %d (%s), want 200", r.Status, r.Body)
	}
	got, _ := h.node.Timer(rec.ID)
	if got.State != state || got.Seq != seq {
		t.Fatalf("after the offer: got state %d at sequence %d, want state %d at %d", got.State, got.Seq, state, seq)
	}
	h.clock.advance(time.Minute)
	if got := seqs(h.drainPops(cb, 200)); !slices.Equal(got, pops) {
		t.Fatalf("pops after the offer: got %v, want %v", got, pops)
	}
}

// TestExpiredRecordKeepsItsMissedMarks: a finished copy whose last pop's
// callback failed stays live, popping nothing, for its life, and then
// goes on as a tombstone that still marks the pop missed (expire), so
// that its messages do not tell of the pop as made.
func TestExpiredRecordKeepsItsMissedMarks(t *testing.T) {
	h := newHarness(t)
	wid := h.create(timerJSON(10, 20, cb, "x"))
	h.clock.advance(10 * time.Second)
	h.drainPops(cb, 200)
	h.clock.advance(10 * time.Second)
	if got := seqs(h.drainPops(cb, 500)); !slices.Equal(got, []string{"2:x"}) {
		t.Fatalf("pops by 20 s: got %v, want [2:x]", got)
	}
	h.clock.advance(CallbackTimeout)
	if got, _ := h.node.Timer(mustID(t, wid)); got.State != Live {
		t.Fatalf("after the failed last pop: got state %d, want live", got.State)
	}
	h.clock.advance(10 * time.Second) // past its life, within the tombstone's
	got, ok := h.node.Timer(mustID(t, wid))
	if missed, _ := got.popMarks(); !ok || got.State != Tombstone || missed != 1 {
		t.Fatalf("after its life: got state %d marks %b, want a tombstone marking pop 2 missed", got.State, missed)
	}
	body := string(EncodeReplication(&got, h.node.nowMs()))
	if !strings.Contains(body, `"missed":1`) {
		t.Fatalf("its message: got %s, want the mark", body)
	}
}
