package node

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/wire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSlowCallbackKeepsTheSchedule shows that a replica sends a timer's
// next pop on time while the callback before it still awaits its answer
// (docs/design.md 4.7: the copy keeps its schedule), that the notice of
// the later pop tells the backup the earlier one is not known to be made,
// and that the earlier pop's success, told in turn, takes it off the
// backup, which so never pops it.
func TestSlowCallbackKeepsTheSchedule(t *testing.T) {
	c := newCluster(t, three...)
	wid, replicas := createOn(t, c, 1, 5, 2)
	id := mustID(t, wid)
	step := func(d time.Duration) []*sent {
		c.clock.advance(d)
		c.settle()
		return c.net.take(cb)
	}
	first := step(time.Second)
	if len(first) != 1 || first[0].from != replicas[0] {
		t.Fatalf("at 1 s: got %d callbacks, want the primary's pop 1", len(first))
	}
	second := step(time.Second)
	if got := seqs(reqsOf(second)); !slices.Equal(got, []string{"2:x"}) {
		t.Fatalf("at 2 s, pop 1 unanswered: got %v, want pop 2 on time", got)
	}
	second[0].done(Response{Status: 200}, nil)
	c.settle()
	held, _ := c.nodes[replicas[1]].Timer(id)
	if _, owed := held.popMarks(); held.Seq != 2 || owed != popBit(2, 1) {
		t.Fatalf("backup after pop 2's notice: got seq %d owed %b, want seq 2 owing pop 1", held.Seq, owed)
	}
	first[0].done(Response{Status: 200}, nil)
	c.settle()
	held, _ = c.nodes[replicas[1]].Timer(id)
	if missed, owed := held.popMarks(); missed != 0 || owed != 0 {
		t.Fatalf("backup after pop 1's notice: got missed %b owed %b, want nothing", missed, owed)
	}
	if got := c.advance(10*time.Second, 200); len(got) != 3 {
		t.Fatalf("the rest: got %v, want pops 3 to 5 once each", seqs(got))
	}
}

func reqsOf(ss []*sent) []Request {
	var out []Request
	for _, s := range ss {
		out = append(out, s.req)
	}
	return out
}

// TestPopLeftToNoReplicaThatMayLackIt: a write, proxied by its primary,
// could not place the timer on the backup (the replication went
// unanswered: shed under load, in a case the sweep found). The primary
// notes the backup may lack it, and does not leave a pop it cannot send
// within the skew to that backup: it waits, as the last replica does.
// Once the backup takes a message of the definition, the primary may
// leave pops to it again.
func TestPopLeftToNoReplicaThatMayLackIt(t *testing.T) {
	id := idPlacedOn([]string{nodeA, nodeB}, []string{nodeA, nodeB})
	wid := wire.FormatWireID(id, 0)
	c := newCluster(t, nodeA, nodeB)
	c.lose = func(host string, req Request) bool { return strings.Contains(host, nodeB) }
	r := c.client(nodeA, "PUT", "/timers/"+wid, string(wire.Encode(wire.Timer{Interval: 10 * time.Second, RepeatFor: 30 * time.Second, URI: cb, ReplicationFactor: 2})))
	require.Equal(t, 200, r.Status, "%s", r.Body)
	held := c.nodes[nodeA].store.Get(id)
	require.NotNil(t, held)
	assert.Equal(t, time.Duration(0), c.nodes[nodeA].handOnAfter(held), "the primary's pops, with the backup lacking the timer")

	c.lose = nil
	c.advance(11*time.Second, 200) // pop 1, whose notice the backup takes
	held = c.nodes[nodeA].store.Get(id)
	assert.Equal(t, ReplicaSkew, c.nodes[nodeA].handOnAfter(held), "the primary's pops, once the backup took a notice")
}

// TestProxyTellsReplicasWhichMayLackIt: a proxy that is no replica of the
// timer tells the replicas that took its write which replicas did not
// (reliability.lacking), so the primary does not leave its pops to a
// backup that never took the timer; once the backup answers one of its
// messages, the primary leaves them to it again. Without the word, the
// primary shed every pop for a backup that held nothing under load
// (scenarios/README.md N29).
func TestProxyTellsReplicasWhichMayLackIt(t *testing.T) {
	id := idPlacedOn([]string{nodeA, nodeB, nodeC}, []string{nodeA, nodeB})
	wid := wire.FormatWireID(id, 0)
	c := newCluster(t, nodeA, nodeB, nodeC)
	c.lose = func(host string, req Request) bool { return strings.Contains(host, nodeB) }
	r := c.client(nodeC, "PUT", "/timers/"+wid, string(wire.Encode(wire.Timer{Interval: 10 * time.Second, RepeatFor: 30 * time.Second, URI: cb, ReplicationFactor: 2})))
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Nil(t, c.nodes[nodeC].store.Get(id), "the proxy is no replica")
	held := c.nodes[nodeA].store.Get(id)
	require.NotNil(t, held)
	assert.Equal(t, time.Duration(0), c.nodes[nodeA].handOnAfter(held), "the primary's pops, told the backup lacks the timer")

	c.lose = nil
	c.advance(11*time.Second, 200) // pop 1, whose notice the backup takes
	held = c.nodes[nodeA].store.Get(id)
	assert.Equal(t, ReplicaSkew, c.nodes[nodeA].handOnAfter(held), "the primary's pops, once the backup took a notice")
	assert.Zero(t, c.nodes[nodeB].store.Get(id).lacking(), "the backup's marks: it holds the timer")
}

// TestPopLeftOnlyToAHolderHeardFrom: a replica leaves a pop to a later
// one only once it knows that one holds the definition, from a message of
// it the later replica answered or sent; not merely unless it was told
// that one may lack it. The write's replication to the last replica went
// unanswered, and the proxy's word of it to the middle replica was lost
// too: the middle replica, never told, must not leave its pops to a
// replica that holds nothing (scenarios/README.md N29's third road, seen
// under load as a pop nobody made). Once the last replica answers it, it
// may.
func TestPopLeftOnlyToAHolderHeardFrom(t *testing.T) {
	id := idPlacedOn([]string{nodeA, nodeB, nodeC}, []string{nodeA, nodeB, nodeC})
	wid := wire.FormatWireID(id, 0)
	c := newCluster(t, nodeA, nodeB, nodeC)
	c.lose = func(host string, req Request) bool {
		return strings.Contains(host, nodeC) || strings.Contains(host, nodeB) && strings.Contains(string(req.Body), `"lacking"`)
	}
	r := c.client(nodeA, "PUT", "/timers/"+wid, string(wire.Encode(wire.Timer{Interval: 10 * time.Second, RepeatFor: 30 * time.Second, URI: cb, ReplicationFactor: 3})))
	require.Equal(t, 200, r.Status, "%s", r.Body)
	a, b := c.nodes[nodeA].store.Get(id), c.nodes[nodeB].store.Get(id)
	require.NotNil(t, a)
	require.NotNil(t, b)
	require.Nil(t, c.nodes[nodeC].store.Get(id), "the last replica took nothing")
	require.Zero(t, b.lacking(), "the middle replica was never told who may lack the timer")
	assert.Equal(t, ReplicaSkew, c.nodes[nodeA].handOnAfter(a), "the primary's pops: the middle replica answered its write")
	assert.Equal(t, time.Duration(0), c.nodes[nodeB].handOnAfter(b), "the middle replica's pops, never having heard from the last")

	c.lose = nil
	c.nodes[nodeB].replicate(nodeC, b, nil, c.nodes[nodeB].nowMs(), nil)
	c.advance(time.Second, 200)
	require.NotNil(t, c.nodes[nodeC].store.Get(id), "the last replica took the middle one's message")
	assert.Equal(t, ReplicaSkew, c.nodes[nodeB].handOnAfter(c.nodes[nodeB].store.Get(id)), "the middle replica's pops, once the last answered it")
}

// TestRepopulatingReplicaMayLackItsTimers: a replica that asks for the
// timers placed under the current view too (include-current-view), as a
// node does at start-up, may hold none of them: it restarted without its
// store. A replica before it does not leave its pops to it until it
// answers a message of the definition; under load, each replica before a
// restarted one shed its pop for the next, and the pop was left to a node
// that held nothing (scenarios/README.md N31). A resync page without
// include-current-view marks nothing.
func TestRepopulatingReplicaMayLackItsTimers(t *testing.T) {
	id := idPlacedOn([]string{nodeA, nodeB}, []string{nodeA, nodeB})
	wid := wire.FormatWireID(id, 0)
	c := newCluster(t, nodeA, nodeB)
	r := c.client(nodeA, "PUT", "/timers/"+wid, string(wire.Encode(wire.Timer{Interval: 10 * time.Second, RepeatFor: 30 * time.Second, URI: cb, ReplicationFactor: 2})))
	require.Equal(t, 200, r.Status, "%s", r.Body)
	a := c.nodes[nodeA]
	require.NotNil(t, a.store.Get(id))
	assert.Equal(t, ReplicaSkew, a.handOnAfter(a.store.Get(id)), "the primary's pops, with the backup holding the timer")

	view := a.ring.ViewID()
	r = c.serve(nodeA, Request{Method: "GET", URL: resyncURL(nodeB, view, ""), Header: Header{}})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.Equal(t, ReplicaSkew, a.handOnAfter(a.store.Get(id)), "the primary's pops, after a rebalancing page")

	r = c.serve(nodeA, Request{Method: "GET", URL: resyncURL(nodeB, view, "&include-current-view=true"), Header: Header{}})
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.Equal(t, time.Duration(0), a.handOnAfter(a.store.Get(id)), "the primary's pops, with the backup repopulating")

	c.advance(11*time.Second, 200) // pop 1, whose notice the backup takes
	assert.Equal(t, ReplicaSkew, a.handOnAfter(a.store.Get(id)), "the primary's pops, once the backup took a notice")
}

// TestPopMadeUnderTheFirstTryCountsForTheRetry: a replica sent pops 1
// and 2 of a client write's first try, and the proxy's retry of the
// write (another version, the same definition and start) arrived behind
// them while their callbacks were in flight, from a replica whose own pop
// 1 failed. The replica pops neither again. Once their callbacks succeed
// the retry it holds knows both were made, so no later notice tells of
// them as missed (which has a replica that did not attempt them pop them
// again); once they fail, it tells of both as missed, so that the next
// replica pops them (docs/design.md 4.7), pop 2 included, which the
// retry's sender knew nothing of.
func TestPopMadeUnderTheFirstTryCountsForTheRetry(t *testing.T) {
	for _, tc := range []struct {
		name       string
		status     int
		wantMissed uint32
	}{
		{"callbacks answered 200", 200, 0},
		{"callbacks failed", 503, 0b11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, three...)
			node := c.nodes[three[0]]
			c.down[three[1]], c.down[three[2]] = true, true
			id := idPlacedOn(three, three)
			place := &Placement{Replicas: three}
			first := *withCallback(withParts(&Timer{ID: id, Version: 1 << 30, Start: node.nowMs(), interval: sec(time.Second), repeatFor: sec(4 * time.Second), RF: 3}, place, nil), cb, "x")
			require.Equal(t, 200, replicateFrom(node, three[1], first).Status, "the first try")
			c.clock.advance(2100 * time.Millisecond)
			c.settle()
			sent := c.net.take(cb)
			require.Len(t, sent, 2, "callbacks by pop 2's due time")

			retry := first
			retry.Version++
			retry.Seq = 1
			retry.setPopMarks(1, 1) // the sender's pop 1 failed
			require.Equal(t, 200, replicateFrom(node, three[1], retry).Status, "the retry")
			c.clock.advance(100 * time.Millisecond)
			c.settle()
			require.Empty(t, c.net.take(cb), "a pop again while its callback is in flight")

			for _, s := range sent {
				s.done(Response{Status: tc.status}, nil)
			}
			c.settle()
			got, ok := node.Timer(id)
			require.True(t, ok)
			missed, owed := got.popMarks()
			assert.Equal(t, [3]uint64{retry.Version, 2, uint64(tc.wantMissed)}, [3]uint64{got.Version, uint64(got.Seq), uint64(missed)},
				"the retry held (version, sequence, missed) once the callbacks were answered")
			assert.Zero(t, owed)
			c.clock.advance(2 * time.Second)
			c.settle()
			var seqs []string
			for _, s := range c.net.take(cb) {
				seqs = append(seqs, s.req.Header.Get(wire.HeaderSequenceNumber))
			}
			assert.Equal(t, []string{"3", "4"}, seqs, "the pops that follow")
		})
	}
}

// TestRetrySendsThePopsItsProxyMade: a one-shot update through replica A
// (the timer's only replica, rf 1; B is the default factor's other
// replica) races a delete through C. A pops the update's first try, its
// callback answered before anything else happens (its notice goes to A's
// replicas: none), then takes the delete's tombstone, remembering the pop;
// B took the tombstone first and answers the first try's replication 409,
// so A writes the update again above it, now at the default factor, on A
// and B. A's own copy of the retry carries pop 1 as made (keepProgress);
// the retry must tell B so too, or B pops pop 1 again at its turn with no
// notice to stop it (scenarios/README.md N48, seed 2600304).
func TestRetrySendsThePopsItsProxyMade(t *testing.T) {
	c := newCluster(t, three...)
	a, b, via := three[0], three[1], three[2]
	id := idPlacedOn(three, []string{a, b})
	wid := wire.FormatWireID(id, BloomBits(a))
	old := withCallback(withParts(&Timer{ID: id, Version: id, Start: c.clock.now.UnixMilli(), interval: sec(10 * time.Second),
		repeatFor: sec(30 * time.Second), RF: 1}, &Placement{Replicas: []string{a}}, nil), cb, "old")
	c.place(a, *old)

	var updated *Response
	c.nodes[a].Handle(Request{Method: "PUT", URL: "/timers/" + wid, Header: Header{},
		Body: []byte(timerJSON(0, 0, cb, "new"))}, func(r Response) { updated = &r })
	firstTry := c.net.take("http://" + b)
	require.Len(t, firstTry, 1, "the first try's replication to B")
	c.clock.advance(time.Millisecond) // A pops the first try
	pops := c.net.take(cb)
	require.Len(t, pops, 1, "A's pop of the first try")
	pops[0].done(Response{Status: 200}, nil)

	var deleted *Response
	c.nodes[via].Handle(Request{Method: "DELETE", URL: "/timers/" + wid, Header: Header{}}, func(r Response) { deleted = &r })
	c.deliver(c.net.take("http://"+b), nil) // B takes the tombstone first
	c.deliver(c.net.take("http://"+a), nil) // then A, after its pop
	c.deliver(firstTry, nil)                // B answers the first try 409
	c.settle()
	got := requireRetryHeldAndNoPopAgain(t, c, deleted, updated, id, a, b)
	assert.Equal(t, uint32(1), got.Seq, "B's copy of the retry: pop 1 made")
}

// requireRetryHeldAndNoPopAgain checks the end of a one-shot update's
// retry above a racing delete: both answered, the update 200, B holding
// the retry A holds, and no pop made again in the next 10 s. It returns
// B's copy as it was before those 10 s.
func requireRetryHeldAndNoPopAgain(t *testing.T, c *cluster, deleted, updated *Response, id uint64, a, b string) Timer {
	t.Helper()
	require.NotNil(t, deleted)
	require.NotNil(t, updated)
	require.Equal(t, 200, updated.Status, "the update, written again above the delete")
	got, ok := c.nodes[b].Timer(id)
	require.True(t, ok)
	held, _ := c.nodes[a].Timer(id)
	require.Equal(t, held.Version, got.Version, "B holds the retry")
	var again []string
	c.advanceWith(10*time.Second, func(s *sent) int {
		again = append(again, s.from)
		return 200
	})
	assert.Empty(t, again, "pop 1 made again, by")
	return got
}

// TestReplicaThatCarriesPopsIntoARetryTellsTheRetrysReplicas: a replica
// that takes a retry of a client write and carries over the pops it made
// of the write's first try tells the retry's other replicas of them, as a
// pop notice does. The first try went to A alone (the timer's factor was
// 1), A popped it, a delete through B replaced it on A (remembered) and
// on B (before the first try: B answered it 409), and the retry above the
// delete, with the default factor of 2, placed the write on A and B. A's
// notice of the pop went to the first try's replicas, A alone: without a
// notice under the retry, B popped pop 1 again as the backup
// (scenarios/README.md N54).
func TestReplicaThatCarriesPopsIntoARetryTellsTheRetrysReplicas(t *testing.T) {
	c := newCluster(t, three...)
	a, b, via := three[0], three[1], three[2]
	id := idPlacedOn(three, []string{a, b})
	wid := wire.FormatWireID(id, 0)
	old := withCallback(withParts(&Timer{ID: id, Version: id, Start: c.clock.now.UnixMilli(), interval: sec(10 * time.Second),
		repeatFor: sec(30 * time.Second), RF: 1}, &Placement{Replicas: []string{a}}, nil), cb, "old")
	c.place(a, *old)

	var updated *Response
	c.nodes[via].Handle(Request{Method: "PUT", URL: "/timers/" + wid, Header: Header{},
		Body: []byte(timerJSON(0, 0, cb, "new"))}, func(r Response) { updated = &r })
	c.deliver(c.net.take("http://10."), nil) // the reads of the update
	firstTry := c.net.take("http://10.")
	require.Len(t, firstTry, 2, "the first try's replications to A and B")
	c.clock.advance(time.Millisecond)
	var deleted *Response
	c.nodes[b].Handle(Request{Method: "DELETE", URL: "/timers/" + wid, Header: Header{}}, func(r Response) { deleted = &r })
	deletes := c.net.take("http://10.")
	for _, s := range firstTry {
		if strings.HasPrefix(s.req.URL, "http://"+a) {
			c.deliver([]*sent{s}, nil) // A takes the first try
		}
	}
	c.clock.advance(time.Millisecond) // and pops it
	pops := c.net.take(cb)
	require.Len(t, pops, 1, "A's pop of the first try")
	pops[0].done(Response{Status: 200}, nil)
	c.deliver(deletes, nil) // the delete reaches A after its pop
	for _, s := range firstTry {
		if strings.HasPrefix(s.req.URL, "http://"+b) {
			c.deliver([]*sent{s}, nil) // B answers the first try 409
		}
	}
	c.settle()
	requireRetryHeldAndNoPopAgain(t, c, deleted, updated, id, a, b)
}

// TestMissedRecordEndsByItsOwnDefinition: a finished copy whose last
// pop's callback failed, of an update that cut a long definition short,
// ends its life as a live record by the update's last pop, as every
// replica's copy does, not by the buried definition's (this node's
// alone: a replica that never held it ended the same record hours
// earlier, and repair asked this one for it every round,
// scenarios/README.md N67). Its tombstone still outlives the
// buried definition.
func TestMissedRecordEndsByItsOwnDefinition(t *testing.T) {
	h := newHarness(t)
	wid := h.create(timerJSON(3600, 3600, cb, "old"))
	if r := h.do("PUT", "/timers/"+wid, timerJSON(10, 20, cb, "x")); r.Status != 200 {
		t.Fatalf("update: got %d (%s)", r.Status, r.Body)
	}
	h.clock.advance(10 * time.Second)
	h.drainPops(cb, 200)
	h.clock.advance(10 * time.Second)
	if got := seqs(h.drainPops(cb, 500)); !slices.Equal(got, []string{"2:x"}) {
		t.Fatalf("pops by 20 s: got %v, want [2:x]", got)
	}
	h.clock.advance(CallbackTimeout + 10*time.Second) // past its life
	got, ok := h.node.Timer(mustID(t, wid))
	if missed, _ := got.popMarks(); !ok || got.State != Tombstone || missed != 1 {
		t.Fatalf("after its life: got state %d marks %b (held %v), want a tombstone marking pop 2 missed", got.State, missed, ok)
	}
	h.clock.advance(30 * time.Minute)
	if got, ok := h.node.Timer(mustID(t, wid)); !ok || got.State != Tombstone {
		t.Fatalf("within the buried definition's life: got state %d (held %v), want its tombstone", got.State, ok)
	}
}

// TestStaleNoticeIsRepairedWhereverItWasTaken: a replica cut off from an
// update pops the old definition, and its notice of that pop is taken by
// another replica that missed the update too. The replicas that hold the
// update answer the notice 409 with it, and the stale replica spreads it
// to every replica its notice reached, so the other one pops the old
// definition no more. It must spread the update even when it holds it
// already as the answers come (taken meanwhile from a repair push, say):
// spread only when an answer changed its record, the other stale replica
// kept the old definition and popped it at its own turn (fresh seed
// 9452775, scenarios/README.md N71).
func TestStaleNoticeIsRepairedWhereverItWasTaken(t *testing.T) {
	five := []string{nodeA, nodeB, nodeC, nodeD, "10.0.0.5:7253"}
	c := newCluster(t, five...)
	wid := createVia(t, c, nodeA, `{"timing":{"interval":10,"repeat-for":100},"callback":{"http":{"uri":"`+cb+
		`","opaque":"old"}},"reliability":{"replication-factor":5}}`)
	id := mustID(t, wid)
	replicas := NewRing(five).Replicas(id, 5)
	stale, other := replicas[2], replicas[3] // their turns: 4 s and 6 s after the primary's
	c.down[stale], c.down[other] = true, true
	r := c.client(replicas[0], "PUT", "/timers/"+wid, `{"timing":{"interval":10,"repeat-for":100},"callback":{"http":{"uri":"`+cb+
		`","opaque":"new"}},"reliability":{"replication-factor":5}}`)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	// From here the two hear only the stale replica: the update's
	// retries and every other node's word stay lost to them.
	c.lose = func(host string, req Request) bool {
		return (host == stale || host == other) && !strings.Contains(req.Header.Get(HeaderInstance), stale)
	}
	delete(c.down, stale)
	delete(c.down, other)

	// The stale replica's turn at pop 1 of the old definition: its
	// callback answered, its notices not yet delivered.
	step := loopBound(t, 200, "the stale replica's pop of the old definition")
	for popped := false; !popped; {
		step()
		c.clock.advance(100 * time.Millisecond)
		for _, s := range c.net.take(cb) {
			popped = popped || string(s.req.Body) == "old"
			s.done(Response{Status: 200}, nil)
		}
		if !popped {
			c.settle()
		}
	}
	// Meanwhile the stale replica took the update as the primary holds
	// it now (a repair push): the answers bring it nothing new.
	updated, _ := c.nodes[replicas[0]].Timer(id)
	c.place(stale, updated)
	c.settle()
	held, ok := c.nodes[other].Timer(id)
	require.True(t, ok)
	assert.Equal(t, updated.Version, held.Version, "the other stale replica, once the notice's answers came back")
	for _, s := range seqs(c.advance(10*time.Second, 200)) { // past the other's own turn
		assert.NotContains(t, s, "old", "a pop of the old definition")
	}
}

// TestAnswerToAnyRecordSaysWhichPopsWereMade: the primary's callback of
// pop 1 fails, and the backup makes the pop at its turn, but its notice
// never reaches the primary, which still marks pop 1 missed. The backup
// answers any record of the definition that marks a pop missed with the
// pops it made (HeaderPopped), a repair push as a notice; a primary that
// took the word from a notice's answer alone went on telling of pop 1 as
// missed, and a replica that took its record owed and made the pop again
// (fresh seeds 9532021 and 9532062, scenarios/README.md N72).
func TestAnswerToAnyRecordSaysWhichPopsWereMade(t *testing.T) {
	c := newCluster(t, nodeA, nodeB)
	wid := createVia(t, c, nodeA, `{"timing":{"interval":10,"repeat-for":100},"callback":{"http":{"uri":"`+cb+
		`","opaque":"x"}},"reliability":{"replication-factor":2}}`)
	id := mustID(t, wid)
	replicas := NewRing([]string{nodeA, nodeB}).Replicas(id, 2)
	p, q := replicas[0], replicas[1]
	c.lose = func(host string, req Request) bool {
		return host == p && strings.Contains(req.Header.Get(HeaderInstance), q)
	}
	c.advanceWith(13*time.Second, func(s *sent) int {
		if s.from == p {
			return 500
		}
		return 200
	})
	c.lose = nil
	held, ok := c.nodes[p].Timer(id)
	require.True(t, ok)
	missed, _ := held.popMarks()
	require.Equal(t, uint32(1), held.Seq, "the primary's record after pop 1")
	require.NotZero(t, missed, "the primary marks pop 1 missed before the backup's word")
	c.nodes[p].replicate(q, &held, nil, c.nodes[p].nowMs(), nil) // a repair push, say
	c.settle()
	held, _ = c.nodes[p].Timer(id)
	missed, _ = held.popMarks()
	assert.Zero(t, missed, "the primary's marks once the backup answered its record with the pops it made")
}

// TestMovedCopyLearnsWhichPopsAnAnswerSaysWereMade is the shape of fresh
// seed 9598630 (scenarios/README.md N75): a node keeps a record of a
// timer its view places elsewhere as moved away, owing pop 3, which the
// record marked missed; it pushes that copy to a replica, whose answer
// says pop 3 was made. The moved copy owes it no more, so that placed
// back by a later scale it does not make pop 3 again; an answer ahead of
// the copy teaches it nothing (no progress from the future).
func TestMovedCopyLearnsWhichPopsAnAnswerSaysWereMade(t *testing.T) {
	c := newCluster(t, nodeA, nodeB)
	n := c.nodes[nodeA]
	spec := wire.Timer{Interval: time.Second, RepeatFor: 10 * time.Second, URI: cb, ReplicationFactor: 1}
	id := uint64(0x125f17e3add14000)
	for id = id + 1; slices.Contains(n.ring.Replicas(id, 1), nodeA); id++ {
	}
	rec := newTimer(id, 1, spec, n.nowMs()-3500, 3, n.placement(n.ring.Replicas(id, 1), nil), n.ring.ViewID(), nil)
	rec.setPopMarks(1, 1) // pop 3 missed
	n.apply(rec)
	held, ok := n.Timer(id)
	require.True(t, ok)
	require.Equal(t, Moved, held.State, "a record placed elsewhere is kept as moved away")
	_, owed := held.popMarks()
	require.Equal(t, uint32(1), owed, "the moved copy owes pop 3, which it never attempted")

	n.learnPopped(&held, "4 0") // ahead of the copy
	held, _ = n.Timer(id)
	_, owed = held.popMarks()
	require.Equal(t, uint32(1), owed, "an answer ahead of the copy teaches it nothing")

	n.learnPopped(&held, "3 0")
	held, _ = n.Timer(id)
	_, owed = held.popMarks()
	assert.Zero(t, owed, "the moved copy, told pop 3 was made, owes it no more")
}
