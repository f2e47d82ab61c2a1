package node

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// sharedInstance returns a cluster of addrs whose nodes are all configured
// with one instance number none of them derives: the misconfiguration that
// makes two nodes issue the same ID in the same millisecond.
func sharedInstance(t *testing.T, addrs ...string) *cluster {
	t.Helper()
	derived, err := InstanceIDs(Membership{Nodes: addrs})
	if err != nil {
		t.Fatal(err)
	}
	shared := 0
	for slices.Contains(slices.Collect(mapValues(derived)), shared) {
		shared++
	}
	return newClusterWith(t, func(_ string, cfg *Config) { cfg.InstanceID = shared }, addrs...)
}

func mapValues(m map[string]int) func(func(int) bool) {
	return func(yield func(int) bool) {
		for _, v := range m {
			if !yield(v) {
				return
			}
		}
	}
}

func oneShot(opaque string, rf int) string {
	return string(wire.Encode(wire.Timer{Interval: 5 * time.Second, URI: cb, Opaque: opaque, ReplicationFactor: rf}))
}

// TestCollidingCreateIsRetriedUnderFreshID proves the second line of
// defence against shared instance numbers: a create whose ID another timer
// already holds is refused by the replica holding it, and the proxy
// creates the timer again under a fresh ID. The first timer is untouched
// and both pop, each once, with its own data.
func TestCollidingCreateIsRetriedUnderFreshID(t *testing.T) {
	two := three[:2]
	c := sharedInstance(t, two...)
	// Both fresh generators issue the same first ID; find which node is
	// its only replica, and create there first, so that the other node
	// has never seen the ID.
	g := newIDGen(uint64(c.cfgs[two[0]].InstanceID), DefaultMaxClockLead.Milliseconds())
	x, _ := g.next(epoch.UnixMilli())
	holder := NewRing(two).Replicas(x, 1)[0]
	other := two[0]
	if other == holder {
		other = two[1]
	}
	first := c.client(holder, "POST", "/timers", oneShot("first", 1))
	second := c.client(other, "POST", "/timers", oneShot("second", 1))
	if first.Status != 200 || second.Status != 200 {
		t.Fatalf("creates: got %d and %d (%s), want 200 and 200", first.Status, second.Status, second.Body)
	}
	idFirst := mustID(t, strings.TrimPrefix(first.Header.Get(wire.HeaderLocation), "/timers/"))
	idSecond := mustID(t, strings.TrimPrefix(second.Header.Get(wire.HeaderLocation), "/timers/"))
	if idFirst != x || idSecond == x {
		t.Fatalf("IDs: got %016x and %016x, want %016x and a fresh one", idFirst, idSecond, x)
	}
	if held, _ := c.nodes[holder].Timer(x); held.Opaque() != "first" || held.State != Live {
		t.Fatalf("timer %016x after the collision: got %+v, want the first definition, live", x, held)
	}
	got := seqs(c.advance(10*time.Second, 200))
	slices.Sort(got)
	if want := []string{"1:first", "1:second"}; !slices.Equal(got, want) {
		t.Fatalf("pops: got %v, want %v", got, want)
	}
	if n := c.nodes[other].Stats().IDCollisions; n != 1 {
		t.Errorf("proxy's IDCollisions: got %d, want 1", n)
	}
}

// TestRacingCollidingCreatesBothSurvive proves that two creates issued the
// same ID by two nodes at once, each reaching its own replica first, both
// end up held under fresh IDs: each proxy withdraws the copy it left, and
// neither withdrawal touches the other timer. Every acknowledged timer pops
// once with its own data; nothing pops under the colliding ID.
func TestRacingCollidingCreatesBothSurvive(t *testing.T) {
	two := three[:2]
	c := sharedInstance(t, two...)
	replies := map[string]*Response{}
	for i, a := range two {
		opaque := []string{"a", "b"}[i]
		c.nodes[a].Handle(Request{Method: "POST", URL: "/timers", Header: Header{}, Body: []byte(oneShot(opaque, 2))},
			func(r Response) { replies[opaque] = &r })
	}
	c.settle()
	ids := map[uint64]bool{}
	for _, o := range []string{"a", "b"} {
		r := replies[o]
		if r == nil || r.Status != 200 {
			t.Fatalf("create %s: got %+v, want 200", o, r)
		}
		id := mustID(t, strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/"))
		if ids[id] {
			t.Fatalf("create %s: ID %016x issued twice", o, id)
		}
		ids[id] = true
	}
	got := seqs(c.advance(10*time.Second, 200))
	slices.Sort(got)
	if want := []string{"1:a", "1:b"}; !slices.Equal(got, want) {
		t.Fatalf("pops: got %v, want %v", got, want)
	}
}

// TestCreateNeverReplacesTimerAClientCreatedUnderItsID proves a create
// (whose version is its ID) is refused where a client already created a
// timer under that ID with a PUT, whatever the versions: the PUT's timer
// keeps popping, and the create is retried under a fresh ID.
func TestCreateNeverReplacesTimerAClientCreatedUnderItsID(t *testing.T) {
	h := newHarness(t)
	// The ID the node will issue next, taken by a client first.
	g := newIDGen(uint64(h.node.instance), DefaultMaxClockLead.Milliseconds())
	x, _ := g.next(epoch.UnixMilli() + 1000)
	if r := h.do("PUT", "/timers/"+wire.FormatWireID(x, 0), oneShot("chosen", 1)); r.Status != 200 {
		t.Fatalf("PUT: got %d (%s), want 200", r.Status, r.Body)
	}
	h.clock.advance(time.Second)
	// The PUT moved the generator past x, so force the node to issue x
	// again, as a second node with the same instance number would.
	h.node.ids = g
	h.node.ids.lastMs--
	r := h.do("POST", "/timers", oneShot("created", 1))
	if r.Status != 200 {
		t.Fatalf("POST: got %d (%s), want 200", r.Status, r.Body)
	}
	if id := mustID(t, strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")); id == x {
		t.Fatalf("POST: got ID %016x, the one the client's timer holds", id)
	}
	h.clock.advance(10 * time.Second)
	got := seqs(h.pops(cb, 200))
	slices.Sort(got)
	if want := []string{"1:chosen", "1:created"}; !slices.Equal(got, want) {
		t.Fatalf("pops: got %v, want %v", got, want)
	}
}

// TestLostWithdrawalIsSentAgain proves a collided create's withdrawal that
// is lost on its way is sent again: without that, the copy it should have
// buried pops under the old ID for good, beside the timer's new ID (found
// by the simulator's shared-instance runs with message loss). Two twins
// create at once with three replicas; the third node takes one create and
// refuses the other, and the withdrawals sent to it are lost once each.
func TestLostWithdrawalIsSentAgain(t *testing.T) {
	c := sharedInstance(t, three...)
	for i, a := range three[:2] {
		opaque := []string{"a", "b"}[i]
		c.nodes[a].Handle(Request{Method: "POST", URL: "/timers", Header: Header{}, Body: []byte(oneShot(opaque, 3))},
			func(Response) {})
	}
	dropped := 0
	c.settleLosing(func(host string, req Request) bool {
		if host == three[2] && dropped < 2 && strings.Contains(string(req.Body), `"callback":{}`) {
			dropped++
			return true
		}
		return false
	})
	if dropped == 0 {
		t.Fatal("no withdrawal reached the third node: the test lost its point")
	}
	got := seqs(c.advance(10*time.Second, 200))
	slices.Sort(got)
	if want := []string{"1:a", "1:b"}; !slices.Equal(got, want) {
		t.Fatalf("pops: got %v, want %v (an orphan copy popped)", got, want)
	}
}

// TestReplicaRefusingACollidedTimerLosesItsRank proves that a backup
// whose pop notice is answered with a collision (the primary holds another
// timer under the ID: two nodes issued it, and the refusal of the create
// was lost) takes the primary's rank from the next pop on, instead of
// popping every pop 2 s late for good (scenarios/README.md I2).
func TestReplicaRefusingACollidedTimerLosesItsRank(t *testing.T) {
	two := three[:2]
	c := newCluster(t, two...)
	g := newIDGen(1, 0)
	id, _ := g.next(epoch.UnixMilli())
	replicas := NewRing(two).Replicas(id, 2)
	// The two replicas hold two timers of one version under the ID, as
	// the twins of a shared instance number leave them.
	for i, opaque := range []string{"other", "first"} {
		c.place(replicas[i], *withCallback(withParts(&Timer{ID: id, Version: id, Start: epoch.UnixMilli(), interval: sec(5 * time.Second), repeatFor: sec(30 * time.Second), RF: 2}, &Placement{Replicas: replicas}, nil), cb, opaque))
	}
	got := seqs(c.advance(7500*time.Millisecond, 200))
	slices.Sort(got)
	if want := []string{"1:first", "1:other"}; !slices.Equal(got, want) {
		t.Fatalf("pops by 7.5 s: got %v, want %v (the backup pops the first timer at its rank, 2 s late)", got, want)
	}
	got = seqs(c.advance(3*time.Second, 200))
	slices.Sort(got)
	if want := []string{"2:first", "2:other"}; !slices.Equal(got, want) {
		t.Fatalf("pops by 10.5 s: got %v, want %v (the backup has taken the refusing primary's rank)", got, want)
	}
}

// TestRetriedWriteDoesNotPopAgain proves that a newer version of the same
// definition written again moments later (a proxy's retry above a
// concurrent write) keeps the pops this replica already made: a one-shot
// timer popped under the first version does not pop again under the
// second. A definition written again later starts over.
func TestRetriedWriteDoesNotPopAgain(t *testing.T) {
	one := three[:1]
	c := newCluster(t, one...)
	g := newIDGen(1, 0)
	id, _ := g.next(epoch.UnixMilli())
	opaque, start := "once", epoch.UnixMilli()
	put := func(version uint64) {
		c.place(one[0], *withCallback(withParts(&Timer{ID: id, Version: version, Start: start, RF: 1}, &Placement{Replicas: one}, nil), cb, opaque))
	}
	put(id)
	if got := seqs(c.advance(200*time.Millisecond, 200)); len(got) != 1 {
		t.Fatalf("first version: got pops %v, want one", got)
	}
	put(id + 1) // the retry, 200 ms later
	if got := seqs(c.advance(time.Second, 200)); len(got) != 0 {
		t.Fatalf("retried version: got pops %v, want none", got)
	}
	// A concurrent write of another definition lands in between, then the
	// proxy's retry of the first comes back above it.
	opaque = "other"
	put(id + 2)
	if got := seqs(c.advance(200*time.Millisecond, 200)); len(got) != 1 || got[0] != "1:other" {
		t.Fatalf("the concurrent write: got pops %v, want its one pop", got)
	}
	opaque = "once"
	put(id + 3)
	if got := seqs(c.advance(time.Second, 200)); len(got) != 0 {
		t.Fatalf("the retry above a concurrent write: got pops %v, want none", got)
	}
	// The same race with a one-shot timer, whose pop notice is a
	// tombstone: the replica that holds the concurrent write refuses the
	// notice as older but must remember the pop it tells of, with the
	// definition the notice names.
	c.advance(time.Minute, 200)
	start = c.clock.now.UnixMilli()
	c.place(one[0], *withCallback(withParts(&Timer{ID: id, Version: id + 6, Start: start, interval: sec(20 * time.Second), repeatFor: sec(40 * time.Second),
		RF: 1}, &Placement{Replicas: one}, nil), cb, "other"))
	notice := *withCallback(withParts(&Timer{ID: id, Version: id + 5, Start: start, Seq: 1, State: Tombstone,
		RF: 1}, &Placement{Replicas: one}, nil), cb, "once")
	if r := c.offer(one[0], notice); r.Status != 409 {
		t.Fatalf("a pop notice older than the held record: got %d, want 409", r.Status)
	}
	put(id + 7) // the proxy's retry of the one-shot, above the concurrent write
	if got := seqs(c.advance(time.Second, 200)); len(got) != 0 {
		t.Fatalf("the retry of a one-shot whose pop notice was refused: got pops %v, want none", got)
	}
	// The replica holds the retry when the notice of the first try's pop
	// arrives, its start rebuilt a millisecond later on a clock that
	// differs: it is older, refused, and its pop taken over.
	c.advance(time.Minute, 200)
	start = c.clock.now.UnixMilli()
	put(id + 12)
	notice = *withCallback(withParts(&Timer{ID: id, Version: id + 11, Start: start + 1, Seq: 1, State: Tombstone,
		RF: 1}, &Placement{Replicas: one}, nil), cb, "once")
	if r := c.offer(one[0], notice); r.Status != 409 {
		t.Fatalf("a pop notice of the first try: got %d, want 409", r.Status)
	}
	c.requireCounts(one[0]) // taking the pop over ended the timer
	if got := seqs(c.advance(time.Second, 200)); len(got) != 0 {
		t.Fatalf("the retry after the first try's pop notice: got pops %v, want none", got)
	}
	// And with a concurrent delete: its tombstone replaces the popped
	// one-shot, then the retry comes back above it.
	c.advance(time.Minute, 200)
	start = c.clock.now.UnixMilli()
	put(id + 13)
	if got := seqs(c.advance(200*time.Millisecond, 200)); len(got) != 1 {
		t.Fatalf("one-shot before a concurrent delete: got pops %v, want one", got)
	}
	c.place(one[0], *withParts(&Timer{ID: id, Version: id + 14, Start: start, State: Tombstone, RF: 1}, &Placement{Replicas: one}, nil))
	put(id + 15)
	if got := seqs(c.advance(time.Second, 200)); len(got) != 0 {
		t.Fatalf("the retry of a one-shot above a concurrent delete: got pops %v, want none", got)
	}
	// The first try's callback fails: that pop was this replica's one
	// attempt, and the retry above a concurrent write must not make
	// another (the next replica's turn is the redundancy).
	c.advance(time.Minute, 200)
	start = c.clock.now.UnixMilli()
	put(id + 17)
	if got := seqs(c.advance(200*time.Millisecond, 500)); len(got) != 1 {
		t.Fatalf("one-shot whose callback fails: got pops %v, want one", got)
	}
	opaque = "other"
	put(id + 18)
	c.advance(200*time.Millisecond, 200)
	opaque = "once"
	put(id + 19)
	if got := seqs(c.advance(time.Second, 200)); len(got) != 0 {
		t.Fatalf("the retry of a one-shot whose callback failed: got pops %v, want none", got)
	}
	c.advance(time.Minute, 200)
	start = c.clock.now.UnixMilli()
	put(id + 20) // the same definition written again a minute later
	if got := seqs(c.advance(time.Second, 200)); len(got) != 1 {
		t.Fatalf("a later write of the same definition: got pops %v, want one", got)
	}
}

// place hands node addr the replication PUT of rec, fingerprinted, as if
// from a peer, and requires it taken.
func (c *cluster) place(addr string, rec Timer) {
	c.t.Helper()
	if r := c.offer(addr, rec); r.Status != 200 {
		c.t.Fatalf("placing %q version %d on %s: got %d (%s), want 200", rec.Opaque(), rec.Version, addr, r.Status, r.Body)
	}
}

// offer hands node addr the replication PUT of rec, fingerprinted, as if
// from a peer, and returns the node's answer.
func (c *cluster) offer(addr string, rec Timer) Response {
	if uri := rec.CallbackURI(); uri != "" { // a client delete's tombstone knows no definition
		rec.def = definitionHash(rec.Interval(), rec.RepeatFor(), uri, rec.Opaque())
	}
	put := Request{Method: "PUT", URL: "/timers/" + wire.FormatWireID(rec.ID, 0), Header: Header{},
		Body: EncodeReplication(&rec, c.clock.now.UnixMilli())}
	var got Response
	c.nodes[addr].Handle(asPeer(c.nodes[addr], put, c.peerOf(addr)), func(r Response) { got = r })
	return got
}

// requireCounts requires node addr's counts of timers and tombstones to
// match the records it holds.
func (c *cluster) requireCounts(addr string) {
	c.t.Helper()
	var live, dead int
	c.nodes[addr].Held(func(t *Timer) bool {
		if t.State != Live {
			dead++
		} else {
			live++
		}
		return true
	})
	if s := c.nodes[addr].Stats(); s.Timers != live || s.Tombstones != dead {
		c.t.Fatalf("%s counts %d timers and %d tombstones, holds %d and %d", addr, s.Timers, s.Tombstones, live, dead)
	}
}

// TestStaleNoticeOfAFinishedTimerDoesNotPopAgain shows that a pop notice
// of a timer whose every pop is past, arriving where no record is held
// (the tombstone expired), is kept as a tombstone and pops nothing, while
// a notice of a timer with pops to come is taken and pops them.
func TestStaleNoticeOfAFinishedTimerDoesNotPopAgain(t *testing.T) {
	one := three[:1]
	c := newCluster(t, one...)
	c.advance(time.Minute, 200)
	g := newIDGen(1, 0)
	now := c.clock.now.UnixMilli()
	finished, _ := g.next(now)
	c.place(one[0], *withCallback(withParts(&Timer{ID: finished, Version: finished, Start: now - 60_000, interval: sec(10 * time.Second), repeatFor: sec(20 * time.Second),
		Seq: 1, RF: 1}, &Placement{Replicas: one}, nil), cb, "finished"))
	going, _ := g.next(now)
	c.place(one[0], *withCallback(withParts(&Timer{ID: going, Version: going, Start: now - 15_000, interval: sec(10 * time.Second), repeatFor: sec(30 * time.Second),
		Seq: 1, RF: 1}, &Placement{Replicas: one}, nil), cb, "going"))
	if got := seqs(c.advance(30*time.Second, 200)); !slices.Equal(got, []string{"2:going", "3:going"}) {
		t.Fatalf("got pops %v, want going's 2 and 3 only", got)
	}
	c.requireCounts(one[0])
}

// TestRetryKeepsTheStartOfTheFirstTry: a proxy, itself a replica, writes
// an update whose replication meets a newer version, and writes it again
// above it. Between the two tries the proxy's clock stepped ahead, and it
// popped the first try's one pop at once. The retry is the same client
// write: it keeps the first try's start, so the proxy knows the pop it
// made, and the peer is sent the same start; dated by the stepped clock
// anew, it was a write of its own, and the proxy popped it again.
func TestRetryKeepsTheStartOfTheFirstTry(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Cluster = Membership{Nodes: []string{c.Address, testPeer}} })
	var replies []Response
	reply := func(r Response) { replies = append(replies, r) }
	// answer answers the first request pending to the peer, the write's
	// replication, with status, and the others (pop notices) with 200.
	answer := func(status int, header Header) *sent {
		t.Helper()
		puts := h.net.take("http://" + testPeer)
		if len(puts) == 0 {
			t.Fatal("no request to the peer, want the write's replication")
		}
		puts[0].done(Response{Status: status, Header: header}, nil)
		for _, s := range puts[1:] {
			s.done(Response{Status: 200, Header: Header{HeaderHeld: "live"}}, nil)
		}
		return puts[0]
	}
	body := `{"timing":{"interval":3,"repeat-for":3},"callback":{"http":{"uri":"` + cb + `","opaque":"x"}},"reliability":{"replication-factor":2}}`
	h.node.Handle(Request{Method: "POST", URL: "/timers", Header: Header{}, Body: []byte(body)}, reply)
	answer(200, Header{HeaderHeld: "live"})
	if len(replies) != 1 || replies[0].Status != 200 {
		t.Fatalf("create: got %+v, want one 200", replies)
	}
	url := replies[0].Header.Get(wire.HeaderLocation)
	id := mustID(t, strings.TrimPrefix(url, "/timers/"))

	h.node.Handle(Request{Method: "PUT", URL: url, Header: Header{}, Body: []byte(body)}, reply)
	first, _ := h.node.Timer(id)
	h.clock.advance(5 * time.Second) // the proxy's clock steps ahead
	if got := seqs(h.drainPops(cb, 200)); !slices.Equal(got, []string{"1:x"}) {
		t.Fatalf("pops of the first try after the step: got %v, want [1:x]", got)
	}
	answer(409, Header{HeaderVersion: strconv.FormatUint(first.Version+1, 10)})
	retry := answer(200, Header{HeaderHeld: "live"})
	if len(replies) != 2 || replies[1].Status != 200 {
		t.Fatalf("update: got %+v, want a 200 after the create's", replies)
	}
	var sent struct {
		Timing struct {
			Delta   int64  `json:"start-time-delta"`
			Version string `json:"version"`
		} `json:"timing"`
	}
	if err := json.Unmarshal(retry.req.Body, &sent); err != nil {
		t.Fatalf("the retry's replication: %v", err)
	}
	if v, _ := strconv.ParseUint(sent.Timing.Version, 10, 64); v <= first.Version+1 {
		t.Fatalf("the retry's replication: got version %s, want one above %d", sent.Timing.Version, first.Version+1)
	}
	if got, want := h.node.nowMs()+sent.Timing.Delta, first.Start; got != want {
		t.Errorf("the retry's start: got %d, want the first try's %d", got, want)
	}
	h.clock.advance(time.Minute)
	if got := seqs(h.drainPops(cb, 200)); len(got) != 0 {
		t.Fatalf("pops of the retry: got %v, want none (the first try made its pop)", got)
	}
}

// TestWriteBelowANewerVersionIsNotAcknowledged proves a proxy does not
// acknowledge a client write whose last try still met a newer version,
// even though a replica took it: the replica holding the newer version
// buries it wherever that version reaches (scenarios/README.md N50: an
// rf 2 update, versioned by a clock stepped minutes ahead and held by one
// replica, met an update through a node that could not pass it; the
// other replica took the later update, it was acknowledged, and was
// buried once the stepped version came within twice the lead of that
// replica's clock). A newer version within the lead is passed by the
// retry, and the write is acknowledged.
func TestWriteBelowANewerVersionIsNotAcknowledged(t *testing.T) {
	for _, tc := range []struct {
		ahead time.Duration
		want  int
	}{{time.Second, 200}, {DefaultMaxClockLead + 30*time.Second, 503}} {
		c := newCluster(t, three...)
		r := c.client(three[0], "POST", "/timers", `{"timing":{"interval":60},"callback":{"http":{"uri":"`+cb+`","opaque":"created"}},"reliability":{"replication-factor":2}}`)
		wid := strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
		id := mustID(t, wid)
		reps := NewRing(three).Replicas(id, 2)
		proxy := ""
		for _, a := range three {
			if !slices.Contains(reps, a) {
				proxy = a
			}
		}
		held, _ := c.nodes[reps[0]].Timer(id)
		g := newIDGen(7, 0)
		v, _ := g.next(c.nodes[reps[0]].nowMs() + tc.ahead.Milliseconds())
		ahead := held
		ahead.Version = v
		c.place(reps[0], ahead)
		// Each try a few milliseconds after the last, as on a network:
		// the proxy's generator, moved to its bound by the 409, is not
		// then stepped back past it by borrowing (nextID).
		var got *Response
		update := `{"timing":{"interval":30},"callback":{"http":{"uri":"` + cb + `","opaque":"later"}},"reliability":{"replication-factor":2}}`
		c.nodes[proxy].Handle(Request{Method: "PUT", URL: "/timers/" + wid, Header: Header{}, Body: []byte(update)}, func(r Response) { got = &r })
		for i := 0; got == nil && i < 20; i++ {
			c.clock.advance(10 * time.Millisecond)
			c.deliver(c.net.take("http://10."), nil)
		}
		if got == nil {
			t.Fatalf("an update meeting a version %v ahead: no answer", tc.ahead)
		}
		if got.Status != tc.want {
			t.Errorf("an update meeting a version %v ahead on %s: got %d (%s), want %d", tc.ahead, reps[0], got.Status, got.Body, tc.want)
		}
		if after, _ := c.nodes[reps[1]].Timer(id); after.Opaque() != "later" {
			t.Errorf("the other replica %s holds %q, want the update taken there either way", reps[1], after.Opaque())
		}
	}
}

// TestRetryAfterTheClockSteppedBackIsRefused: an update met a newer
// version, and the proxy's clock was stepped back past MaxClockLead
// before the answer came. The proxy does not retry above the newer
// version with a version dated beyond its clock's lead (nextID): it
// refuses the write with 503, as it refuses a first try then.
func TestRetryAfterTheClockSteppedBackIsRefused(t *testing.T) {
	c := newCluster(t, three...)
	rf1 := func(opaque string) string {
		return `{"timing":{"interval":60},"callback":{"http":{"uri":"` + cb + `","opaque":"` + opaque + `"}},"reliability":{"replication-factor":1}}`
	}
	wid := createVia(t, c, three[0], rf1("created"))
	id := mustID(t, wid)
	replica := NewRing(three).Replicas(id, 1)[0]
	proxy := three[(slices.Index(three, replica)+1)%len(three)]
	held, _ := c.nodes[replica].Timer(id)
	held.Version = versionAt(7, c.nodes[replica].nowMs()-idEpochMs+1000)
	c.place(replica, held)
	var got *Response
	c.nodes[proxy].Handle(Request{Method: "PUT", URL: "/timers/" + wid, Header: Header{}, Body: []byte(rf1("later"))}, func(r Response) { got = &r })
	c.watch = func(_ *sent, _ string, status int, _ bool) {
		if status == 409 {
			c.clock.now = c.clock.now.Add(-2 * DefaultMaxClockLead) // before the proxy reads the answer
		}
	}
	c.settle()
	if got == nil || got.Status != 503 || !strings.Contains(string(got.Body), "stepped back") {
		t.Fatalf("the update's retry through a clock stepped back: got %+v, want 503 naming the step", got)
	}
}
