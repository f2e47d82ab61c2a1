package node

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// TestAnotherSitesNewerRecordRepairsThisSite shows that when another site
// answers a forward with a newer record (it took a delete whose forward to
// this site was lost), this site takes it and stops popping the timer.
func TestAnotherSitesNewerRecordRepairsThisSite(t *testing.T) {
	h, id, fwd := forwardedCreate(t, 60)
	held, _ := h.node.Timer(id)
	tomb := *withParts(&Timer{ID: id, Version: held.Version + 1, Start: held.Start, interval: held.interval, repeatFor: held.repeatFor,
		State: Tombstone, RF: held.RF}, &Placement{Replicas: []string{otherSite}, Sites: []string{"site1", "site2"}}, nil)
	fwd.done(Response{Status: 409, Header: Header{HeaderVersion: strconv.FormatUint(tomb.Version, 10)},
		Body: EncodeReplication(&tomb, h.node.nowMs())}, nil)
	if now, _ := h.node.Timer(id); now.State == Live || now.Version != tomb.Version {
		t.Fatalf("after the other site's 409: got version %d tombstone %v, want the tombstone %d", now.Version, now.State != Live, tomb.Version)
	}
	h.clock.advance(time.Minute)
	if got := seqs(h.drainPops(cb, 200)); len(got) != 0 {
		t.Fatalf("got pops %v of a timer the other site deleted, want none", got)
	}
}

// TestAnotherSitesAnswerKeepsItsMissedPops is the shape of a case the
// sweep found: the other site answers a forward with a newer record that
// knows a pop was missed there; this site takes the record with the
// missed pop, and makes it.
func TestAnotherSitesAnswerKeepsItsMissedPops(t *testing.T) {
	h, id, fwd := forwardedCreate(t, 40)
	held, _ := h.node.Timer(id)
	spec := definition(&held)
	// An update of 20 s before whose pop 2 is due by now (a record's
	// progress is never from the future: TestProgressFromTheFutureIsNotTaken).
	newer := newTimer(id, held.Version+1, spec, held.Start-20_000, 2, &Placement{Replicas: []string{otherSite}, Sites: []string{"site1", "site2"}}, 0, nil)
	newer.setPopMarks(popBit(2, 1), 0)
	fwd.done(Response{Status: 409, Header: Header{HeaderVersion: strconv.FormatUint(newer.Version, 10)},
		Body: EncodeReplication(newer, h.node.nowMs())}, nil)
	h.clock.advance(15 * time.Second)
	if got := seqs(h.drainPops(cb, 200)); !slices.Equal(got, []string{"1:x", "3:x"}) {
		t.Fatalf("pops after the other site's answer: got %v, want the missed pop 1 and then pop 3", got)
	}
}

// otherSite is the address of the other site in forwardedCreate.
const otherSite = "127.0.0.2:7253"

// forwardedCreate creates a timer (interval 10 s, repeatFor seconds) on a
// node that knows another site, and returns the node, the timer's ID and
// the one forward of it to the other site, still to be answered.
func forwardedCreate(t *testing.T, repeatFor int) (*harness, uint64, *sent) {
	t.Helper()
	h := newHarness(t, func(c *Config) { c.RemoteSites = []Site{{Name: "site2", Address: otherSite}} })
	id := mustID(t, h.create(timerJSON(10, repeatFor, cb, "x")))
	fwd := h.net.take("http://" + otherSite)
	if len(fwd) != 1 {
		t.Fatalf("got %d forwards to the other site, want 1", len(fwd))
	}
	return h, id, fwd[0]
}

// newSites builds two sites of two nodes each, sharing a key; each site
// knows the other through one of its nodes.
func newSites(t *testing.T) (*cluster, []string, []string) {
	t.Helper()
	a := []string{"10.0.0.1:7253", "10.0.0.2:7253"}
	b := []string{"10.0.1.1:7253", "10.0.1.2:7253"}
	c := &cluster{t: t, clock: &manualClock{now: epoch}, net: &heldNet{}, nodes: map[string]*Node{}, down: map[string]bool{}}
	add := func(addrs []string, local, remote string, remoteAddr string, base int) {
		for i, addr := range addrs {
			cfg := DefaultConfig()
			// Each site derives instance numbers from its own members
			// only, so across sites they are configured.
			cfg.Address, cfg.InstanceID = addr, base+i
			cfg.Cluster = Membership{Nodes: addrs}
			// A site's forwards come from any of its nodes, which the
			// other site knows by one address: sites share a key.
			cfg.ClusterKey = testKey
			cfg.LocalSite, cfg.RemoteSites = local, []Site{{Name: remote, Address: remoteAddr}}
			cfg.Clock, cfg.Network = c.clock, senderNet{c, addr}
			n, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			c.nodes[addr] = n
		}
	}
	add(a, "east", "west", b[0], 0)
	add(b, "west", "east", a[0], 10)
	return c, a, b
}

// TestSitesReplicateAndPopAfterLocal proves docs/design.md 4.10: a timer is
// replicated to the remote site's own replicas, the remote site skips pops
// the local site made, and pops (after every local replica's skew) when
// the whole local site is down.
func TestSitesReplicateAndPopAfterLocal(t *testing.T) {
	c, a, b := newSites(t)
	r := c.client(a[1], "POST", "/timers", `{"timing":{"interval":10,"repeat-for":30},"callback":{"http":{"uri":"`+cb+
		`","opaque":"x"}},"reliability":{"replication-factor":2}}`)
	wid := strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
	if got, want := c.holders(wid), sorted(append(slices.Clone(a), b...)); !slices.Equal(got, want) {
		t.Fatalf("held by %v, want %v", got, want)
	}
	if got := seqs(c.advance(10500*time.Millisecond, 200)); !slices.Equal(got, []string{"1:x"}) {
		t.Fatalf("first pop: got %v, want [1:x] once", got)
	}
	for _, addr := range a {
		c.down[addr] = true
	}
	// Pop 2 is due at 20 s; the local site (ranks 0, 1) would pop by 22 s,
	// the remote site's primary pops at 20 + 2*2 = 24 s.
	if got := c.advance(13300*time.Millisecond, 200); len(got) != 0 {
		t.Fatalf("pops before 23.8 s with the local site down: %v", seqs(got))
	}
	if got := seqs(c.advance(10*time.Second, 200)); !slices.Equal(got, []string{"2:x"}) {
		t.Fatalf("remote site's pop: got %v, want [2:x] once", got)
	}
}

// TestSiteRelayRepairsAPopOfADeletedTimer shows a site that missed a
// delete (its forward was lost, and so was every forward sent again)
// repaired by its first pop: the other site's replica that took the
// delete answers the forwarded pop notice with its tombstone (the relay
// itself, or its site peer), even though the other replica of that site,
// which missed the delete too, took the notice; and that replica is
// repaired with it, the relay included, so nobody pops the deleted timer
// again.
func TestSiteRelayRepairsAPopOfADeletedTimer(t *testing.T) {
	for _, tc := range []struct {
		name      string
		via, lost int // the west's nodes: the delete's proxy, and the one it missed
	}{{"the relay took the delete", 0, 1}, {"the relay missed the delete", 1, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			c, a, b := newSites(t)
			r := c.client(a[1], "POST", "/timers", `{"timing":{"interval":10,"repeat-for":60},"callback":{"http":{"uri":"`+cb+
				`","opaque":"x"}},"reliability":{"replication-factor":2}}`)
			wid := strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
			via, missed := b[tc.via], b[tc.lost]
			var got *Response
			c.nodes[via].Handle(Request{Method: "DELETE", URL: "/timers/" + wid, Header: Header{}}, func(r Response) { got = &r })
			c.settleLosing(func(host string, _ Request) bool { return host == a[0] || host == missed })
			if got == nil || got.Status != 200 {
				t.Fatalf("DELETE via %s: got %v, want 200", via, got)
			}
			if held := c.holders(wid); !slices.Equal(held, sorted(append(slices.Clone(a), missed))) {
				t.Fatalf("after the partly lost delete: held by %v, want %v and %s", held, a, missed)
			}
			// Every forward of the delete that its proxy sends again is
			// lost too (forwardToSite); so, when the relay missed it, is
			// every push of it to the relay, which only the answer to the
			// pop's notice then repairs (repairSite).
			cut := []string{a[0]}
			if missed == b[0] {
				cut = append(cut, missed)
			}
			c.lose = func(host string, req Request) bool {
				from, _, _ := senderInstance(req)
				return slices.Contains(cut, host) && from == via && req.Method == "PUT" &&
					strings.Contains(req.URL, "/timers/"+wire.FormatID(mustID(t, wid)))
			}
			if pops := seqs(c.advance(time.Minute, 200)); !slices.Equal(pops, []string{"1:x"}) {
				t.Fatalf("pops of the deleted timer: got %v, want the one pop that met the tombstone", pops)
			}
			if held := c.holders(wid); len(held) != 0 {
				t.Fatalf("after that pop: still held by %v, want none", held)
			}
		})
	}
}

// TestSiteRelayReplacesItsOwnOlderCopy forwards an update of an rf 1
// timer to the other site, whose relay holds an older definition outside
// the update's placement there: an earlier update through that site, its
// forward of the create lost, found no copy and created the timer again
// with the default factor, on both of its nodes. The relay passes the
// update to the nodes that may hold an older copy as a local write would
// (the default factor's replicas, and itself), so no node of that site
// goes on popping the replaced definition; without it the relay popped
// the old definition once the new one's primary had popped.
func TestSiteRelayReplacesItsOwnOlderCopy(t *testing.T) {
	c, a, b := newSites(t)
	west := NewRing(b)
	id := uint64(1)
	for ; west.Replicas(id, 1)[0] != b[1]; id++ {
	}
	wid := wire.FormatWireID(id, 0)
	put := func(via, opaque string, rf int, lost []string) {
		t.Helper()
		body := wire.Encode(wire.Timer{Interval: 10 * time.Second, RepeatFor: time.Minute, URI: cb, Opaque: opaque, ReplicationFactor: rf})
		var got *Response
		c.nodes[via].Handle(Request{Method: "PUT", URL: "/timers/" + wid, Header: Header{}, Body: body}, func(r Response) { got = &r })
		c.settleLosing(func(host string, _ Request) bool { return slices.Contains(lost, host) })
		if got == nil || got.Status != 200 {
			t.Fatalf("PUT %s via %s: got %v, want 200", opaque, via, got)
		}
	}
	put(a[0], "v1", 1, b) // the forward to the west is lost
	c.advance(time.Second, 200)
	put(b[0], "v2", 0, a) // the west creates it again, rf 2; the east never hears
	c.advance(time.Second, 200)
	put(a[0], "v3", 1, nil) // the east's update reaches the west's relay
	for _, addr := range b {
		if held, ok := c.nodes[addr].Timer(id); ok && held.State == Live && string(held.Opaque()) != "v3" {
			t.Errorf("%s holds %q live, want v3 or nothing", addr, held.Opaque())
		}
	}
	for _, p := range c.advance(30*time.Second, 200) {
		if string(p.Body) != "v3" {
			t.Errorf("pop %s carries %q, want v3", p.Header.Get(wire.HeaderSequenceNumber), p.Body)
		}
	}
}

// TestSiteForwardIsSentAgain loses a create's forward to the other site:
// the node sends it again after a wait (forwardToSite), and the other
// site holds the timer before its first pop. A forward is the only way
// a site hears of a write; sent once, a lost delete left the other site
// popping a deleted timer for its whole repeat-for, since the tombstone
// its notice would have met had expired (it buried nothing there).
func TestSiteForwardIsSentAgain(t *testing.T) {
	c, a, b := newSites(t)
	var got *Response
	c.nodes[a[1]].Handle(Request{Method: "POST", URL: "/timers", Header: Header{}, Body: []byte(`{"timing":{"interval":10,"repeat-for":60},"callback":{"http":{"uri":"` + cb +
		`","opaque":"x"}},"reliability":{"replication-factor":2}}`)}, func(r Response) { got = &r })
	c.settleLosing(func(host string, _ Request) bool { return host == b[0] })
	if got == nil || got.Status != 200 {
		t.Fatalf("POST via %s: got %v, want 200", a[1], got)
	}
	wid := strings.TrimPrefix(got.Header.Get(wire.HeaderLocation), "/timers/")
	if held := c.holders(wid); !slices.Equal(held, sorted(a)) {
		t.Fatalf("after the lost forward: held by %v, want %v", held, a)
	}
	c.advance(3*time.Second, 200)
	if held := c.holders(wid); !slices.Equal(held, sorted(append(slices.Clone(a), b...))) {
		t.Fatalf("after the forward was sent again: held by %v, want both sites", held)
	}
}

// TestPopLeftToNoSiteThatMayLackIt: the last replica of the first site,
// which took the write, leaves its pops to the other site only once its
// forward there was answered. While the forward goes unanswered the other
// site may not hold the timer, and a pop shed for it under load is made
// by nobody (scenarios/README.md N34).
func TestPopLeftToNoSiteThatMayLackIt(t *testing.T) {
	c, a, b := newSites(t)
	id := idPlacedOn(a, a)
	wid := wire.FormatWireID(id, 0)
	c.lose = func(host string, _ Request) bool { return host == b[0] }
	putEvery10s(t, c, a[1], wid)
	last, first := c.nodes[a[1]].store.Get(id), c.nodes[a[0]].store.Get(id)
	if last == nil || first == nil {
		t.Fatalf("held by %v, want %v", c.holders(wid), a)
	}
	if got := c.nodes[a[1]].handOnAfter(last); got != 0 {
		t.Errorf("the site's last replica, its forward unanswered: hands on after %v, want 0 (its pops wait)", got)
	}
	if got := c.nodes[a[0]].handOnAfter(first); got != ReplicaSkew {
		t.Errorf("the site's first replica: hands on after %v, want %v", got, ReplicaSkew)
	}

	c.lose = nil
	c.advance(3*time.Second, 200) // the forward, sent again, is answered
	if got := c.holders(wid); !slices.Equal(got, sorted(append(slices.Clone(a), b...))) {
		t.Fatalf("held by %v after the forward was sent again, want both sites", got)
	}
	if got := c.nodes[a[1]].handOnAfter(c.nodes[a[1]].store.Get(id)); got != ReplicaSkew {
		t.Errorf("the site's last replica, once the other site answered: hands on after %v, want %v", got, ReplicaSkew)
	}
}

// TestPopLeftToNoSiteItsForwardHasNotReached: a forward still in flight
// has reached nobody, nor has one its node lost by restarting before the
// answer came. The last holder of the first site pops last (its pops
// wait) from the write on, across a restart, until the other site answers
// a message of the definition (scenarios/README.md N36).
func TestPopLeftToNoSiteItsForwardHasNotReached(t *testing.T) {
	disk := newMemStorage()
	h := newHarness(t, func(c *Config) {
		c.RemoteSites = []Site{{Name: "site2", Address: otherSite}}
		c.Storage = disk
	})
	id := mustID(t, h.create(timerJSON(10, 60, cb, "x")))
	if fwd := h.net.take("http://" + otherSite); len(fwd) != 1 {
		t.Fatalf("got %d forwards to the other site, want 1", len(fwd))
	}
	held := h.node.store.Get(id)
	if got := h.node.handOnAfter(held); got != 0 {
		t.Errorf("the site's only replica, its forward unanswered: hands on after %v, want 0 (its pops wait)", got)
	}
	h.clock.advance(persistLazily)

	h2 := restarted(t, h, disk, time.Second)
	after := h2.node.store.Get(id)
	if after == nil {
		t.Fatal("restored node holds no record of the timer")
	}
	if got := h2.node.handOnAfter(after); got != 0 {
		t.Errorf("restarted before the forward's answer: hands on after %v, want 0 (its pops wait)", got)
	}
	h2.clock.advance(10 * time.Second) // pop 1, and its notice to the other site
	if got := h2.pops(cb, 200); len(got) != 1 {
		t.Fatalf("pops by 11 s: got %d, want 1", len(got))
	}
	notices := h2.net.take("http://" + otherSite)
	if len(notices) == 0 {
		t.Fatal("no notice of pop 1 went to the other site")
	}
	for _, n := range notices {
		n.done(Response{Status: 200, Header: Header{}}, nil)
	}
	if got := h2.node.handOnAfter(h2.node.store.Get(id)); got != ReplicaSkew {
		t.Errorf("once the other site answered: hands on after %v, want %v", got, ReplicaSkew)
	}
}

// TestAnotherSitesEarlierStartIsTaken proves a node takes the earlier
// start of its definition that another site answers a forward with, as
// it takes one a replica of its own site answers a notice with: a site
// whose start a held write made late converges on the other's.
func TestAnotherSitesEarlierStartIsTaken(t *testing.T) {
	h, id, fwd := forwardedCreate(t, 60)
	held, _ := h.node.Timer(id)
	fwd.done(Response{Status: 200, Header: Header{HeaderStartDelta: strconv.FormatInt(held.Start-1500-h.node.nowMs(), 10)}}, nil)
	if now, _ := h.node.Timer(id); now.Start != held.Start-1500 {
		t.Fatalf("after the other site answered a start 1.5 s earlier: start %d, want %d", now.Start, held.Start-1500)
	}
}

// TestSiteRelayAnswersItsEarlierStart proves the relay of a site answers
// a forward of a definition its site holds with an earlier start (it took
// the first forward 2 s before, the second was built from a late copy)
// with that start, and keeps it; a forward with the earlier start is
// answered with none.
func TestSiteRelayAnswersItsEarlierStart(t *testing.T) {
	origin, id, _ := forwardedCreate(t, 60)
	held, _ := origin.node.Timer(id)
	relay := newHarness(t, func(c *Config) {
		c.Address, c.LocalSite = otherSite, "site2"
		c.Cluster = Membership{Nodes: []string{otherSite}}
		c.RemoteSites = []Site{{Name: "site1", Address: DefaultConfig().Address}}
	})
	forward := func(start int64) Response {
		fwd := held
		fwd.Start = start
		fwd.setPlacement(&Placement{Sites: held.Placement().Sites})
		return relay.send(Request{Method: "PUT", URL: "/timers/" + wire.FormatWireID(id, 0), Body: EncodeReplication(&fwd, relay.node.nowMs())})
	}
	now := relay.node.nowMs()
	if r := forward(now - 2000); r.Status != 200 || r.Header.Get(HeaderStartDelta) != "" {
		t.Fatalf("first forward: got %d start delta %q, want 200 and none", r.Status, r.Header.Get(HeaderStartDelta))
	}
	r := forward(now - 500)
	if r.Status != 200 || r.Header.Get(HeaderStartDelta) != "-2000" {
		t.Fatalf("forward of a later start: got %d start delta %q, want 200 and -2000", r.Status, r.Header.Get(HeaderStartDelta))
	}
	if got, _ := relay.node.Timer(id); got.Start != now-2000 {
		t.Fatalf("relay's start: got %d, want the earlier %d", got.Start, now-2000)
	}
}

// TestRecordTooFarAheadIsNotTakenFromAnAnswer proves a node takes no
// record versioned more than twice MaxClockLead ahead of its clock from
// an answer, as it takes none from a replication: not from another
// site's 409 to a forward, nor from a peer's 409 to a notice or to a
// repair round's push. One within the bound is taken.
func TestRecordTooFarAheadIsNotTakenFromAnAnswer(t *testing.T) {
	for _, ahead := range []time.Duration{DefaultMaxClockLead, 2*DefaultMaxClockLead + time.Second} {
		want := ahead <= DefaultMaxClockLead
		h, id, fwd := forwardedCreate(t, 60)
		v, answer := answerAhead(h, id, ahead)
		_, fromNotice := h.node.answeredRecord(id, answer)
		fwd.done(answer, nil)
		now, _ := h.node.Timer(id)
		if taken := now.Version == v; taken != want || fromNotice != want {
			t.Errorf("a record %v ahead: taken from the forward's answer %v, from a notice's %v; want %v", ahead, taken, fromNotice, want)
		}
		h, id, _ = forwardedCreate(t, 60)
		v, answer = answerAhead(h, id, ahead)
		h.node.repairPushAnswered(otherSite, id, answer)
		if now, _ := h.node.Timer(id); (now.Version == v) != want {
			t.Errorf("a record %v ahead: taken from a repair push's answer %v, want %v", ahead, now.Version == v, want)
		}
	}
}

// answerAhead is a 409 that answers h's record of timer id with its
// tombstone, versioned ahead of h's clock, and the tombstone's version.
func answerAhead(h *harness, id uint64, ahead time.Duration) (uint64, Response) {
	held, _ := h.node.Timer(id)
	g := newIDGen(7, 0)
	v, _ := g.next(h.node.nowMs() + ahead.Milliseconds())
	tomb := *withParts(&Timer{ID: id, Version: v, Start: held.Start, interval: held.interval, repeatFor: held.repeatFor,
		State: Tombstone, RF: held.RF}, &Placement{Replicas: []string{h.node.self}, Sites: []string{"site1", "site2"}}, nil)
	return v, Response{Status: 409, Header: Header{HeaderVersion: strconv.FormatUint(v, 10)}, Body: EncodeReplication(&tomb, h.node.nowMs())}
}

// TestRelayPopsLastUntilItsReplicaAnswers: the other site's relay, which
// placed a forwarded timer on its site's replicas, leaves no pop to the
// replica after it while its replication there has no answer: the pop
// is decided when it is due, and an answer that failed later would not
// decide it again (scenarios/README.md N34, the relay's pops). Once that
// replica answers, the relay leaves its pops to it.
func TestRelayPopsLastUntilItsReplicaAnswers(t *testing.T) {
	c, a, b := newSites(t)
	id := idPlacedOn(b, b)
	wid := wire.FormatWireID(id, 0)
	c.lose = func(host string, _ Request) bool { return host == b[1] }
	putEvery10s(t, c, a[0], wid)
	c.advance(100*time.Millisecond, 50) // the forward reaches the relay
	relay := c.nodes[b[0]].store.Get(id)
	if relay == nil {
		t.Fatalf("held by %v, want the relay %s among them", c.holders(wid), b[0])
	}
	if got := c.nodes[b[0]].handOnAfter(relay); got != 0 {
		t.Errorf("the relay, its replication unanswered: hands on after %v, want 0 (its pops wait)", got)
	}

	c.lose = nil
	c.nodes[b[0]].replicate(b[1], relay, nil, c.nodes[b[0]].nowMs(), nil)
	c.advance(time.Second, 200)
	if got := c.nodes[b[0]].handOnAfter(c.nodes[b[0]].store.Get(id)); got != ReplicaSkew {
		t.Errorf("the relay, once its replica answered: hands on after %v, want %v", got, ReplicaSkew)
	}
}

// TestLastHolderOfASiteThatDidNotForwardPopsLast: only the forwarding node
// hears the other site answer its forward. The last replica of the first
// site, which took the write from the primary, leaves no pop to the other
// site until that site answers it a message of the definition (its
// first pop notice): it has no word that the site holds the timer
// (scenarios/README.md N34, a last replica that was not the proxy).
func TestLastHolderOfASiteThatDidNotForwardPopsLast(t *testing.T) {
	c, a, b := newSites(t)
	id := idPlacedOn(a, a)
	wid := wire.FormatWireID(id, 0)
	putEvery10s(t, c, a[0], wid)
	c.advance(time.Second, 200)
	if got := c.holders(wid); !slices.Equal(got, sorted(append(slices.Clone(a), b...))) {
		t.Fatalf("held by %v, want both sites", got)
	}
	if got := c.nodes[a[0]].handOnAfter(c.nodes[a[0]].store.Get(id)); got != ReplicaSkew {
		t.Errorf("the primary: hands on after %v, want %v", got, ReplicaSkew)
	}
	if got := c.nodes[a[1]].handOnAfter(c.nodes[a[1]].store.Get(id)); got != 0 {
		t.Errorf("the site's last replica, never answered by the other site: hands on after %v, want 0 (its pops wait)", got)
	}

	held := c.nodes[a[1]].store.Get(id)
	c.nodes[a[1]].forwardToSites(held)
	c.advance(time.Second, 200)
	if got := c.nodes[a[1]].handOnAfter(c.nodes[a[1]].store.Get(id)); got != ReplicaSkew {
		t.Errorf("the site's last replica, once the other site answered it: hands on after %v, want %v", got, ReplicaSkew)
	}
}

// putEvery10s writes timer wid through via, every 10 s for a minute, rf
// 2, and fails t unless it is acknowledged.
func putEvery10s(t *testing.T, c *cluster, via, wid string) {
	t.Helper()
	r := c.client(via, "PUT", "/timers/"+wid, `{"timing":{"interval":10,"repeat-for":60},"callback":{"http":{"uri":"`+cb+
		`","opaque":"x"}},"reliability":{"replication-factor":2}}`)
	if r.Status != 200 {
		t.Fatalf("PUT via %s: %d %s", via, r.Status, r.Body)
	}
}

// TestDeleteTombstoneStaysWhileAnotherSiteMayLackIt is fresh seed 734770
// (scenarios/README.md N39): an rf 1 timer held at the west site by
// b1 alone (the east never took its forward), deleted through the east's
// a0 while b1 was down. No tombstone buried anything, and the west's
// relay b0 could not place its own on b1. Three rules keep the deleted
// definition from coming back once b1 returns after every tombstone's
// own life: the relay answers the forwarded delete 503 since a node it
// sent it to did not answer (docs/design.md 4.5 at a relay); the
// forwarding node keeps its tombstone while that site may lack it
// (SitesLacking, lackingTombstone); and the relay, no replica of the
// timer at its site, answers b1's notice from that tombstone (refutes).
// So b1's first pop is its last; without any one of them b1's notice met
// nothing, the east took the deleted definition and b1 popped it to its
// end.
func TestDeleteTombstoneStaysWhileAnotherSiteMayLackIt(t *testing.T) {
	deleteWhileTheWestsHolderIsDown(t, 1, 0)
}

// deleteWhileTheWestsHolderIsDown is TestDeleteTombstoneStaysWhileAnotherSiteMayLackIt
// with the timer's replica at the east a[east] and the delete made
// through a[via]: an rf 1 timer held at the west by b1 alone, deleted
// while b1 is down, must pop once more only (b1's repairing pop) once b1
// is back after every tombstone's own life. The rounds to b1 get no
// answer: the relay's tombstone marks b1 as may lack it, and a round
// b1 answers pushes it there (repairLacking), before b1's pop when b1
// is back soon enough; the test is of the notices' road, which was the
// only one while a round's push left before its peer answered.
func deleteWhileTheWestsHolderIsDown(t *testing.T, east, via int) {
	t.Helper()
	c, a, b := newSites(t)
	c.lose = func(host string, req Request) bool { return host == b[1] && strings.HasSuffix(req.URL, repairPath) }
	eastRing, westRing := NewRing(a), NewRing(b)
	id := uint64(1)
	for eastRing.Replicas(id, 1)[0] != a[east] || westRing.Replicas(id, 1)[0] != b[1] {
		id++
	}
	rec := *withCallback(withParts(&Timer{ID: id, Version: id, Start: c.nodes[b[1]].nowMs(), interval: sec(time.Minute), repeatFor: sec(4 * time.Minute),
		RF: 1}, &Placement{Replicas: []string{b[1]}, Sites: []string{"west", "east"}}, nil), cb, "x")
	if r := replicateFrom(c.nodes[b[1]], b[0], rec); r.Status != 200 {
		t.Fatalf("b1 taking the timer: got %d (%s)", r.Status, r.Body)
	}
	c.down[b[1]] = true
	if r := c.client(a[via], "DELETE", "/timers/"+wire.FormatWireID(id, 0), ""); r.Status != 200 {
		t.Fatalf("DELETE via %s: got %d (%s), want 200", a[via], r.Status, r.Body)
	}
	c.advance(50*time.Second, 200) // every tombstone's own life, and every forward sent again
	c.down[b[1]] = false
	if got := seqs(c.advance(4*time.Minute, 200)); !slices.Equal(got, []string{"1:x"}) {
		t.Fatalf("pops of the deleted timer once b1 is back: got %v, want its one repairing pop", got)
	}
}

// TestDeleteTombstoneForgetsASiteThatTookIt: the other site answered the
// delete's forward (its relay placed it on every node it sent it to), so
// the forwarding node's tombstone keeps no mark of it and ends at the end
// of its own life, as every tombstone does that nobody may lack.
func TestDeleteTombstoneForgetsASiteThatTookIt(t *testing.T) {
	c, a, _ := newSites(t)
	r := c.client(a[0], "POST", "/timers", `{"timing":{"interval":60,"repeat-for":240},"callback":{"http":{"uri":"`+cb+
		`","opaque":"x"}},"reliability":{"replication-factor":1}}`)
	wid := strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
	if r := c.client(a[0], "DELETE", "/timers/"+wid, ""); r.Status != 200 {
		t.Fatalf("DELETE via %s: got %d (%s), want 200", a[0], r.Status, r.Body)
	}
	id := mustID(t, wid)
	if held, ok := c.nodes[a[0]].Timer(id); !ok || held.sitesLacking() != 0 {
		t.Fatalf("after the delete: %s holds %+v (%v), want its tombstone with no site marked", a[0], held, ok)
	}
	c.advance(5*time.Minute, 200)
	for addr, n := range c.nodes {
		if held, ok := n.Timer(id); ok {
			t.Errorf("%s still holds %+v after every tombstone's life", addr, held)
		}
	}
}

// TestDeleteThroughANonRelayStaysWhereTheOtherSitesNoticesArrive is N39's
// first gap (scenarios/README.md): the same delete made through a1, a node
// of the east that is neither its relay (a0, the address the west knows)
// nor the timer's replica there (a0 too). Only a1's forward learnt that
// the west may lack the delete, so only a1 kept its tombstone; b1's
// notice came to a0, whose own tombstone (it buried nothing) had lived its
// life, and a0 took the deleted definition.
func TestDeleteThroughANonRelayStaysWhereTheOtherSitesNoticesArrive(t *testing.T) {
	deleteWhileTheWestsHolderIsDown(t, 0, 1)
}

// TestUpdatesEndStaysWhileAReplicaOfTheRelaysSiteMayLackIt is N39's second
// gap (scenarios/README.md): the west's b1 alone holds D, an older
// definition (b0 restarted empty, the east never took D's forward), and
// is down when an update U made through the east ends it. The west's
// relay b0 placed U on itself and could not place it on b1, yet marked
// nobody as may lack it, and every holder of U (none had held D) forgot
// its end after its own life. b1, back, popped D, and its notices brought
// D back at both sites. b1's first pop is the one D may still make; here
// b0's kept tombstone reaches b1 first (its repair round), and D makes
// none.
func TestUpdatesEndStaysWhileAReplicaOfTheRelaysSiteMayLackIt(t *testing.T) {
	c, a, b := newSites(t)
	id := uint64(1) << 40
	west := NewRing(b).Replicas(id, 2)
	old := *withCallback(withParts(&Timer{ID: id, Version: id, Start: c.nodes[b[1]].nowMs(), interval: sec(time.Minute), repeatFor: sec(4 * time.Minute),
		RF: 2}, &Placement{Replicas: west, Sites: []string{"west", "east"}}, nil), cb, "x")
	if r := replicateFrom(c.nodes[b[1]], b[0], old); r.Status != 200 {
		t.Fatalf("b1 taking the timer: got %d (%s)", r.Status, r.Body)
	}
	c.down[b[1]] = true
	r := c.client(a[0], "PUT", "/timers/"+wire.FormatWireID(id, 0), `{"timing":{"interval":10,"repeat-for":10},"callback":{"http":{"uri":"`+cb+
		`","opaque":"y"}},"reliability":{"replication-factor":2}}`)
	if r.Status != 200 {
		t.Fatalf("the update via %s: got %d (%s), want 200", a[0], r.Status, r.Body)
	}
	if got := seqs(c.advance(50*time.Second, 200)); !slices.Equal(got, []string{"1:y"}) {
		t.Fatalf("pops of the update: got %v, want its one", got)
	}
	c.down[b[1]] = false
	if got := seqs(c.advance(4*time.Minute, 200)); len(got) > 1 {
		t.Fatalf("pops of the replaced definition once b1 is back: got %v, want at most b1's one repairing pop", got)
	}
}

// TestSitesNewerRecordReachesTheReplicasThroughAProxy: an update through
// a node that is not the timer's replica here is forwarded to the other
// site, which answers with a newer record (a delete made there). The
// proxy passes it to the timer's replicas here, which end the timer, and
// keeps no copy of its own of a timer it is no replica of (at most the
// marker of a copy moved away): a copy there would be one more holder to
// hand off and repair.
func TestSitesNewerRecordReachesTheReplicasThroughAProxy(t *testing.T) {
	c, a, b := newSites(t)
	body := `{"timing":{"interval":10,"repeat-for":60},"callback":{"http":{"uri":"` + cb + `","opaque":"x"}},"reliability":{"replication-factor":1}}`
	wid := strings.TrimPrefix(c.client(a[0], "POST", "/timers", body).Header.Get(wire.HeaderLocation), "/timers/")
	id := mustID(t, wid)
	replica := NewRing(a).Replicas(id, 1)[0]
	proxy := a[(slices.Index(a, replica)+1)%len(a)]
	c.nodes[proxy].Handle(Request{Method: "PUT", URL: "/timers/" + wid, Header: Header{}, Body: []byte(body)}, func(Response) {})
	fwd := c.net.take("http://" + b[0])
	if len(fwd) != 1 {
		t.Fatalf("got %d forwards of the update to the other site, want 1", len(fwd))
	}
	held, _ := c.nodes[proxy].Timer(id)
	tomb := *withParts(&Timer{ID: id, Version: held.Version + 1, Start: held.Start, interval: held.interval, repeatFor: held.repeatFor,
		State: Tombstone, RF: held.RF}, &Placement{Replicas: []string{b[0]}, Sites: []string{"east", "west"}}, nil)
	fwd[0].done(Response{Status: 409, Header: Header{HeaderVersion: strconv.FormatUint(tomb.Version, 10)},
		Body: EncodeReplication(&tomb, c.nodes[proxy].nowMs())}, nil)
	c.settle()
	if now, _ := c.nodes[replica].Timer(id); now.State != Tombstone || now.Version != tomb.Version {
		t.Errorf("the replica %s after the other site's answer: version %d state %v, want the tombstone %d", replica, now.Version, now.State, tomb.Version)
	}
	if now := c.nodes[proxy].store.Get(id); now != nil && now.State != Moved {
		t.Errorf("the proxy %s holds a copy of the timer, state %v", proxy, now.State)
	}
}

// TestSiteRelayPassesOnNoRecordItKnowsIsStale: the west updates a timer
// both sites hold while the east cannot hear it, so the east pops the old
// definition and forwards its notices to the west's relay, which holds
// the update. The relay answers with the update and passes the stale
// record to nobody: passed on, it was taken live by a replica of the
// west that held nothing newer any more (its record of the update, a
// tombstone, had expired), and when the repair after the answer was
// lost on an overloaded link, that replica popped the replaced
// definition (fresh seed 9713084, scenarios/README.md N79).
func TestSiteRelayPassesOnNoRecordItKnowsIsStale(t *testing.T) {
	c, a, b := newSites(t)
	r := c.client(a[0], "POST", "/timers", `{"timing":{"interval":10,"repeat-for":60},"callback":{"http":{"uri":"`+cb+
		`","opaque":"old"}},"reliability":{"replication-factor":2}}`)
	if r.Status != 200 {
		t.Fatalf("create: %d %s", r.Status, r.Body)
	}
	wid := strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
	var got *Response
	body := `{"timing":{"interval":10,"repeat-for":60},"callback":{"http":{"uri":"` + cb + `","opaque":"new"}},"reliability":{"replication-factor":2}}`
	// Nothing the west sends reaches the east from now on.
	c.lose = func(host string, req Request) bool {
		from, _, _ := senderInstance(req)
		return slices.Contains(a, host) && slices.Contains(b, from)
	}
	c.nodes[b[0]].Handle(Request{Method: "PUT", URL: "/timers/" + wid, Header: Header{}, Body: []byte(body)}, func(r Response) { got = &r })
	c.settle()
	if got == nil || got.Status != 200 {
		t.Fatalf("update via the west's relay: got %v, want 200", got)
	}
	var passed []string
	c.watch = func(s *sent, to string, _ int, _ bool) {
		if slices.Contains(b, s.from) && slices.Contains(b, to) && s.from != to && s.req.Method == "PUT" &&
			strings.Contains(s.req.URL, wid[:16]) && strings.Contains(string(s.req.Body), `"old"`) {
			passed = append(passed, s.from+" -> "+to)
		}
	}
	if pops := seqs(c.advance(15*time.Second, 200)); len(pops) == 0 {
		t.Fatal("the east popped nothing of the old definition")
	}
	if len(passed) > 0 {
		t.Errorf("the west's nodes passed the stale record on among themselves: %v (the relay refuted %d forwards)",
			passed, c.nodes[b[0]].probeHits[probeSiteRelayRefutes])
	}
	for _, addr := range b {
		if held, ok := c.nodes[addr].Timer(mustID(t, wid)); ok && held.State == Live && string(held.Opaque()) != "new" {
			t.Errorf("%s holds %q live, want new", addr, held.Opaque())
		}
	}
}
