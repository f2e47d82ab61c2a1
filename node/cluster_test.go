package node

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// cluster wires several nodes to one manual clock and one held network;
// settle delivers node-to-node requests (except to nodes marked down) until
// none are left, leaving client callbacks for the test to answer.
type cluster struct {
	t     testing.TB
	clock *manualClock
	net   *heldNet
	nodes map[string]*Node
	cfgs  map[string]Config
	down  map[string]bool
	// watch, if set, sees each node-to-node message settle handles, with
	// its answer's status (0 and lost when it was dropped), and each
	// callback advance answers (to is "").
	watch func(s *sent, to string, status int, lost bool)
	// lose, if set, drops the node-to-node messages settle is asked to
	// deliver when it returns true.
	lose func(host string, req Request) bool
	// loseAnswer, if set, delivers the node-to-node messages for which it
	// returns true and drops their answers: the sender sees no answer.
	loseAnswer func(host string, req Request) bool
	// checkStamps makes every node-to-node request sent fail the test
	// unless it is stamped with its destination and its sender's clock
	// at the moment it is sent (see sign); stamped counts those checked.
	checkStamps bool
	stamped     int
	// rounds and pending, if set, replace settleRounds and
	// settlePending: a benchmark whose resync pages a store of a million
	// timers takes thousands of rounds, and its hand-off sends a message
	// for each timer it moves in one.
	rounds, pending int
	// takes, if set, is how many node-to-node messages a receiver takes
	// from one sender in a round of settle: the rest of that sender's
	// messages to it pending in the round fail, as the production
	// driver sheds what waits past its MaxWait for a slow receiver.
	takes int
	// shed counts the messages takes failed.
	shed int
}

func (c *cluster) watched(s *sent, to string, status int, lost bool) {
	if c.watch != nil {
		c.watch(s, to, status, lost)
	}
}

func newCluster(t *testing.T, addrs ...string) *cluster {
	t.Helper()
	return newSkewedCluster(t, nil, addrs...)
}

// skewedClock is a node's clock offset from the cluster's manual clock.
// Once *gone is set (the node was restarted), its alarms no longer fire:
// the process they belonged to is dead.
type skewedClock struct {
	c      *manualClock
	offset time.Duration
	gone   *bool
}

func (s skewedClock) Now() time.Time { return s.c.Now().Add(s.offset) }

func (s skewedClock) AfterFunc(d time.Duration, f func()) Alarm {
	return s.c.AfterFunc(d, func() {
		if s.gone == nil || !*s.gone {
			f()
		}
	})
}

// newSkewedCluster builds a cluster whose nodes' clocks are offset from
// true time by offsets[addr].
func newSkewedCluster(t *testing.T, offsets map[string]time.Duration, addrs ...string) *cluster {
	t.Helper()
	// The tests of skewed clocks are about the order of writes, not the
	// age of messages (TestMessageAgeWindow): the members tolerate the
	// skew given.
	spread := time.Duration(0)
	for _, a := range offsets {
		for _, b := range offsets {
			spread = max(spread, a-b, a, -a)
		}
	}
	return newClusterWith(t, func(a string, cfg *Config) {
		clock := cfg.Clock.(skewedClock)
		clock.offset = offsets[a]
		cfg.Clock = clock
		cfg.MaxClockSkew = max(cfg.MaxClockSkew, spread)
	}, addrs...)
}

// newClusterWith builds a cluster of addrs, letting configure change each
// node's configuration before the node is built.
func newClusterWith(t testing.TB, configure func(addr string, cfg *Config), addrs ...string) *cluster {
	t.Helper()
	c := &cluster{t: t, clock: &manualClock{now: epoch}, net: &heldNet{}, nodes: map[string]*Node{}, cfgs: map[string]Config{}, down: map[string]bool{}}
	for _, a := range addrs {
		cfg := DefaultConfig()
		cfg.Address = a
		cfg.Cluster = Membership{Nodes: addrs}
		cfg.Clock, cfg.Network = skewedClock{c.clock, 0, new(bool)}, senderNet{c, a}
		if len(addrs) == 1 {
			// A lone node takes internal requests (the ones a test
			// makes as a peer's) only with a key.
			cfg.ClusterKey = testKey
		}
		cfg.RepairInterval = 0 // the tests that want repair turn it on
		if configure != nil {
			configure(a, &cfg)
		}
		n, err := New(cfg)
		if err != nil {
			t.Fatalf("New(%s): %v", a, err)
		}
		c.nodes[a] = n
		c.cfgs[a] = cfg
	}
	return c
}

// restart replaces the node at addr with a fresh, empty one, as after a
// crash.
func (c *cluster) restart(addr string) {
	c.t.Helper()
	cfg := c.cfgs[addr]
	clock := cfg.Clock.(skewedClock)
	*clock.gone = true
	clock.gone = new(bool)
	cfg.Clock = clock
	c.cfgs[addr] = cfg
	n, err := New(cfg)
	if err != nil {
		c.t.Fatalf("New(%s): %v", addr, err)
	}
	c.nodes[addr] = n
}

// settle delivers every pending node-to-node request; requests to down
// nodes fail.
func (c *cluster) settle() { c.settleLosing(c.lose) }

// settleRounds bounds the rounds of delivery a settle may take, and
// settlePending the requests one round may carry: far above what any
// test's exchange needs, so that a message storm (a bug that answers
// every message with more) fails its test at once, naming what was
// pending, instead of hanging it until the test binary's timeout.
const (
	settleRounds  = 1000
	settlePending = 100_000
)

// settleLosing settles like settle, failing as lost every request for
// which lose, if not nil, returns true.
func (c *cluster) settleLosing(lose func(host string, req Request) bool) {
	for round := 1; ; round++ {
		reqs := c.net.take("http://10.")
		if len(reqs) == 0 {
			return
		}
		if round > cmp.Or(c.rounds, settleRounds) || len(reqs) > cmp.Or(c.pending, settlePending) {
			c.t.Helper()
			c.t.Fatalf("settle: still %d requests pending after %d rounds (a message storm?), first: %s",
				len(reqs), round-1, pendingSummary(reqs, 10))
		}
		c.deliver(reqs, lose)
	}
}

// deliver hands each of reqs to its node, as one round of settle does.
func (c *cluster) deliver(reqs []*sent, lose func(host string, req Request) bool) {
	taken := map[[2]string]int{}
	for _, s := range reqs {
		host, path, _ := strings.Cut(strings.TrimPrefix(s.req.URL, "http://"), "/")
		pair := [2]string{s.from, host}
		taken[pair]++
		if c.takes > 0 && taken[pair] > c.takes {
			c.shed++
			c.watched(s, host, 0, true)
			s.done(Response{}, errUnreachable)
			continue
		}
		if c.down[host] || lose != nil && lose(host, s.req) {
			c.watched(s, host, 0, true)
			s.done(Response{}, errUnreachable)
			continue
		}
		in := s.req
		in.URL = "/" + path
		in.Remote = s.from
		if c.loseAnswer != nil && c.loseAnswer(host, s.req) {
			c.nodes[host].Handle(in, func(Response) {
				c.watched(s, host, 0, true)
				s.done(Response{}, errUnreachable)
			})
			continue
		}
		c.nodes[host].Handle(in, func(r Response) {
			c.watched(s, host, r.Status, false)
			s.done(r, nil)
		})
	}
}

// pendingSummary names the first n of reqs, sender, method and URL.
func pendingSummary(reqs []*sent, n int) string {
	var b strings.Builder
	for i, s := range reqs[:min(n, len(reqs))] {
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s %s %s", s.from, s.req.Method, s.req.URL)
	}
	return b.String()
}

// senderNet is one node's view of the cluster network: a down node can
// send nothing.
type senderNet struct {
	c    *cluster
	from string
}

func (s senderNet) Send(req Request, timeout time.Duration, done func(Response, error)) {
	if s.c.down[s.from] {
		done(Response{}, errUnreachable)
		return
	}
	if s.c.checkStamps {
		s.c.checkStamp(s.from, req)
	}
	s.c.net.out = append(s.c.net.out, &sent{req: req, timeout: timeout, done: done, from: s.from})
}

// checkStamp fails the test unless req, sent by from, is a callback or
// an internal request stamped now, to its destination, and signed.
func (c *cluster) checkStamp(from string, req Request) {
	host, _ := splitURL(req.URL)
	if _, member := c.nodes[host]; !member {
		return // a callback
	}
	c.stamped++
	sender := c.nodes[from]
	if got, want := req.Header.Get(HeaderSent), strconv.FormatInt(sender.nowMs(), 10); got != want {
		c.t.Errorf("%s %s from %s: %s %q, want the time it is sent, %s", req.Method, req.URL, from, HeaderSent, got, want)
	}
	if got := req.Header.Get(HeaderTo); got != host {
		c.t.Errorf("%s %s from %s: %s %q, want %s", req.Method, req.URL, from, HeaderTo, got, host)
	}
	if sender.cfg.ClusterKey != "" && req.Header.Get(HeaderSignature) == "" {
		c.t.Errorf("%s %s from %s: not signed", req.Method, req.URL, from)
	}
}

// peerOf returns a member other than addr, for requests a test makes as
// a peer's.
func (c *cluster) peerOf(addr string) string {
	for _, a := range slices.Sorted(maps.Keys(c.nodes)) {
		if a != addr {
			return a
		}
	}
	return testPeer
}

type unreachable struct{}

func (unreachable) Error() string { return "unreachable" }

var errUnreachable error = unreachable{}

// client sends a client request to a node, settles, and returns the reply.
func (c *cluster) client(via, method, url, body string) Response {
	c.t.Helper()
	var got *Response
	c.nodes[via].Handle(Request{Method: method, URL: url, Header: Header{}, Body: []byte(body)}, func(r Response) { got = &r })
	c.settle()
	if got == nil {
		c.t.Fatalf("%s %s via %s: no reply after settling", method, url, via)
	}
	return *got
}

// advance moves time on in 100 ms steps, answering callbacks with status
// and settling replication after each, and returns the callbacks.
func (c *cluster) advance(d time.Duration, status int) []Request {
	return c.advanceWith(d, func(*sent) int { return status })
}

// advanceWith advances like advance, answering each callback with the
// status answer gives it.
func (c *cluster) advanceWith(d time.Duration, answer func(*sent) int) []Request {
	var out []Request
	end := c.clock.now.Add(d)
	for c.clock.now.Before(end) {
		c.clock.advance(100 * time.Millisecond)
		c.settle()
		for _, s := range c.net.take(cb) {
			out = append(out, s.req)
			status := answer(s)
			c.watched(s, "", status, false)
			s.done(Response{Status: status}, nil)
		}
		c.settle()
	}
	return out
}

func (c *cluster) holders(wid string) []string {
	id := mustID(c.t, wid)
	var out []string
	for a, n := range c.nodes {
		if t, ok := n.Timer(id); ok && t.State == Live {
			out = append(out, a)
		}
	}
	slices.Sort(out)
	return out
}

var three = []string{"10.0.0.1:7253", "10.0.0.2:7253", "10.0.0.3:7253"}

// TestCreateReplicatesToRendezvousReplicas proves a create through any node
// is held by exactly the timer's rendezvous replicas, and that the
// Location's bloom names them.
func TestCreateReplicatesToRendezvousReplicas(t *testing.T) {
	for _, rf := range []int{1, 2, 3, 5} {
		c := newCluster(t, three...)
		r := c.client(three[rf%3], "POST", "/timers", `{"timing":{"interval":10},"callback":{"http":{"uri":"`+cb+
			`"}},"reliability":{"replication-factor":`+string(rune('0'+rf))+`}}`)
		if r.Status != 200 {
			t.Fatalf("rf %d: POST got %d (%s)", rf, r.Status, r.Body)
		}
		wid := strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
		id, bloom, _ := wire.ParseWireID(wid)
		ring := NewRing(three)
		want := ring.Replicas(id, rf)
		got := c.holders(wid)
		if !slices.Equal(got, sorted(want)) {
			t.Errorf("rf %d: held by %v, want %v", rf, got, sorted(want))
		}
		if m := ring.Matching(bloom); !slices.Equal(sorted(m), sorted(want)) {
			t.Errorf("rf %d: bloom matches %v, want %v", rf, m, want)
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestReplicasPopOnceWhenHealthy proves the skew scheme: the primary pops,
// tells the backups, and they skip that pop; every pop of a repeating
// timer is delivered exactly once, and the final pop removes the timer
// from every replica.
func TestReplicasPopOnceWhenHealthy(t *testing.T) {
	c := newCluster(t, three...)
	r := c.client(three[0], "POST", "/timers", `{"timing":{"interval":5,"repeat-for":15},"callback":{"http":{"uri":"`+cb+
		`","opaque":"x"}},"reliability":{"replication-factor":3}}`)
	wid := strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
	got := seqs(c.advance(40*time.Second, 200))
	if want := []string{"1:x", "2:x", "3:x"}; !slices.Equal(got, want) {
		t.Fatalf("pops: got %v, want %v", got, want)
	}
	if h := c.holders(wid); len(h) != 0 {
		t.Errorf("after the final pop: still held by %v", h)
	}
}

// TestBackupPopsWhenPrimaryIsDown proves the redundancy path: with the
// primary unreachable, the first backup pops 2 s late and the second
// backup, told by it, does not pop.
func TestBackupPopsWhenPrimaryIsDown(t *testing.T) {
	c := newCluster(t, three...)
	r := c.client(three[0], "POST", "/timers", `{"timing":{"interval":5,"repeat-for":10},"callback":{"http":{"uri":"`+cb+
		`","opaque":"x"}},"reliability":{"replication-factor":3}}`)
	id, _, _ := wire.ParseWireID(strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/"))
	primary := NewRing(three).Replicas(id, 3)[0]
	c.down[primary] = true
	if got := c.advance(6900*time.Millisecond, 200); len(got) != 0 {
		t.Fatalf("pops by 6.9 s: got %v, want none (primary down, backup pops at 7 s)", seqs(got))
	}
	got := seqs(c.advance(20*time.Second, 200))
	if want := []string{"1:x", "2:x"}; !slices.Equal(got, want) {
		t.Fatalf("pops: got %v, want %v", got, want)
	}
}

// TestCallbackFailureHandsOverToBackup proves that when the primary's
// callback fails it tells the others nothing, so the first backup pops 2 s
// later (docs/design.md 4.7), while the primary keeps its copy and pops
// the next interval itself.
func TestCallbackFailureHandsOverToBackup(t *testing.T) {
	c := newCluster(t, three...)
	r := c.client(three[0], "POST", "/timers", `{"timing":{"interval":10,"repeat-for":20},"callback":{"http":{"uri":"`+cb+
		`","opaque":"x"}},"reliability":{"replication-factor":2}}`)
	wid := strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
	if got := seqs(c.advance(10*time.Second, 500)); !slices.Equal(got, []string{"1:x"}) {
		t.Fatalf("first attempt: got %v", got)
	}
	if h := c.holders(wid); len(h) != 2 {
		t.Fatalf("after the failure: held by %v, want both replicas", h)
	}
	if got := seqs(c.advance(2*time.Second, 200)); !slices.Equal(got, []string{"1:x"}) {
		t.Fatalf("backup's turn: got %v, want [1:x]", got)
	}
	got := c.advanceWith(10*time.Second, func(*sent) int { return 200 })
	if len(got) != 1 || got[0].Header.Get(wire.HeaderSequenceNumber) != "2" {
		t.Fatalf("second pop: got %v, want [2:x] once", seqs(got))
	}
}

// TestDeleteThroughAnyNodeSticks proves a DELETE through a node that is not
// a replica tombstones the timer on every replica.
func TestDeleteThroughAnyNodeSticks(t *testing.T) {
	c := newCluster(t, three...)
	r := c.client(three[0], "POST", "/timers", `{"timing":{"interval":5},"callback":{"http":{"uri":"`+cb+`"}},"reliability":{"replication-factor":1}}`)
	wid := strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
	via := three[0]
	for _, a := range three {
		if !slices.Contains(c.holders(wid), a) {
			via = a
		}
	}
	if r := c.client(via, "DELETE", "/timers/"+wid, ""); r.Status != 200 {
		t.Fatalf("DELETE: got %d", r.Status)
	}
	if got := c.advance(30*time.Second, 200); len(got) != 0 {
		t.Fatalf("pops after delete: %v", seqs(got))
	}
}

// TestPassiveRebalancing proves scaling.md's passive method: after a node
// joins, an update through any node moves the timer onto its new replicas,
// the old replicas that are no longer replicas drop their copy, and the
// response carries the new bloom.
func TestPassiveRebalancing(t *testing.T) {
	four := append(slices.Clone(three), "10.0.0.4:7253")
	c := newCluster(t, four...)
	for _, n := range c.nodes {
		if err := n.SetCluster(Membership{Nodes: three, Joining: nil}); err != nil && !strings.Contains(err.Error(), "does not list") {
			t.Fatal(err)
		}
	}
	// The fourth node is not yet a member: find a timer it will own.
	var wid string
	for {
		r := c.client(three[0], "POST", "/timers", `{"timing":{"interval":50},"callback":{"http":{"uri":"`+cb+`"}},"reliability":{"replication-factor":2}}`)
		wid = strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
		if slices.Contains(NewRing(four).Replicas(mustID(t, wid), 2), four[3]) {
			break
		}
	}
	for _, n := range c.nodes {
		if err := n.SetCluster(Membership{Nodes: four}); err != nil {
			t.Fatal(err)
		}
	}
	r := c.client(three[1], "PUT", "/timers/"+wid, `{"timing":{"interval":50},"callback":{"http":{"uri":"`+cb+`","opaque":"moved"}}}`)
	if r.Status != 200 {
		t.Fatalf("PUT: got %d (%s)", r.Status, r.Body)
	}
	want := sorted(NewRing(four).Replicas(mustID(t, wid), 2))
	if got := c.holders(wid); !slices.Equal(got, want) {
		t.Errorf("held by %v, want %v", got, want)
	}
	_, bloom, _ := wire.ParseWireID(strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/"))
	if got := sorted(NewRing(four).Matching(bloom)); !slices.Equal(got, want) {
		t.Errorf("new bloom matches %v, want %v", got, want)
	}
}

// TestUpdateThroughLaggingClockSticks proves a client update through a node
// whose clock is behind still supersedes an earlier update made through
// another node: the replica refuses the lower version with 409, and the
// proxy retries above the version it reported.
func TestUpdateThroughLaggingClockSticks(t *testing.T) {
	lagging := three[2]
	c := newSkewedCluster(t, map[string]time.Duration{lagging: -10 * time.Second}, three...)
	var wid string
	for {
		r := c.client(three[0], "POST", "/timers", `{"timing":{"interval":100},"callback":{"http":{"uri":"`+cb+
			`","opaque":"a"}},"reliability":{"replication-factor":1}}`)
		wid = strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
		if !slices.Contains(c.holders(wid), lagging) {
			break
		}
	}
	c.advance(time.Second, 200)
	for _, step := range []struct{ via, opaque string }{{three[1], "b"}, {lagging, "c"}} {
		r := c.client(step.via, "PUT", "/timers/"+wid, `{"timing":{"interval":100},"callback":{"http":{"uri":"`+cb+`","opaque":"`+step.opaque+`"}}}`)
		if r.Status != 200 {
			t.Fatalf("PUT via %s: got %d (%s)", step.via, r.Status, r.Body)
		}
	}
	holder := c.holders(wid)[0]
	if got, _ := c.nodes[holder].Timer(mustID(t, wid)); got.Opaque() != "c" {
		t.Fatalf("held definition: got opaque %q, want %q (the last update)", got.Opaque(), "c")
	}
}

// TestDelayedReplicationConverges proves a replica that applied a create
// late (it was paused, or the link held the message) does not stay late:
// the first pop round brings every replica back to the earliest start.
func TestDelayedReplicationConverges(t *testing.T) {
	c := newCluster(t, three...)
	// A timer ID whose replicas are the other two nodes, so the proxy's
	// messages to both can be delivered by hand.
	id := uint64(1)
	for slices.Contains(NewRing(three).Replicas(id, 2), three[0]) {
		id++
	}
	primary := NewRing(three).Replicas(id, 2)[0]
	body := `{"timing":{"interval":10,"repeat-for":40},"callback":{"http":{"uri":"` + cb + `","opaque":"x"}},"reliability":{"replication-factor":2}}`
	var got *Response
	start := c.clock.now
	c.nodes[three[0]].Handle(Request{Method: "PUT", URL: "/timers/" + wire.FormatWireID(id, 0), Header: Header{}, Body: []byte(body)},
		func(r Response) { got = &r })
	held := c.net.take("http://" + primary)
	c.settle() // the backup applies at once
	c.clock.advance(1500 * time.Millisecond)
	c.net.out = append(c.net.out, held...)
	c.settle() // the primary applies 1.5 s late
	if got == nil || got.Status != 200 {
		t.Fatalf("create: got %v, want 200", got)
	}
	var at []time.Duration
	for range 400 {
		for range c.advance(100*time.Millisecond, 200) {
			at = append(at, c.clock.now.Sub(start).Round(100*time.Millisecond))
		}
	}
	want := []time.Duration{11500 * time.Millisecond, 20 * time.Second, 30 * time.Second, 40 * time.Second}
	if fmt.Sprint(at) != fmt.Sprint(want) {
		t.Fatalf("pops at %v, want %v (the primary 1.5 s late once, then on time)", at, want)
	}
}

// TestReplicaThatMissedDeleteStopsAfterHeal proves read repair: a replica
// cut off while a timer was deleted pops it (the net-split allowance),
// but the replicas holding the tombstone answer its pop notice with it,
// so after the heal it pops no more.
func TestReplicaThatMissedDeleteStopsAfterHeal(t *testing.T) {
	c := newCluster(t, three...)
	r := c.client(three[0], "POST", "/timers", `{"timing":{"interval":10,"repeat-for":100},"callback":{"http":{"uri":"`+cb+
		`","opaque":"x"}},"reliability":{"replication-factor":3}}`)
	wid := strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
	backup := NewRing(three).Replicas(mustID(t, wid), 3)[2]
	c.down[backup] = true // cut off: it neither sends nor receives
	via := three[0]
	if via == backup {
		via = three[1]
	}
	if r := c.client(via, "DELETE", "/timers/"+wid, ""); r.Status != 200 {
		t.Fatalf("DELETE: got %d", r.Status)
	}
	delete(c.down, backup)
	// The cut-off replica still holds the timer and pops it once, at 10 s
	// plus its 4 s skew; then it holds the tombstone and stops.
	if got := seqs(c.advance(60*time.Second, 200)); !slices.Equal(got, []string{"1:x"}) {
		t.Fatalf("pops after the delete: got %v, want one pop from the replica that missed it", got)
	}
	if h := c.holders(wid); len(h) != 0 {
		t.Errorf("live copies after the repair: %v, want none", h)
	}
}

// TestWriteQuorum proves a client write is acknowledged only once a
// majority of three or more replicas applied it, and once one of one or
// two did (writeQuorum); a write short of its quorum answers 503 saying it
// may still take effect.
func TestWriteQuorum(t *testing.T) {
	for _, tc := range []struct {
		rf, down int
		want     int
	}{
		{rf: 3, down: 0, want: 200},
		{rf: 3, down: 1, want: 200},
		{rf: 3, down: 2, want: 503},
		{rf: 2, down: 1, want: 200},
		{rf: 1, down: 0, want: 200},
	} {
		t.Run(fmt.Sprintf("rf=%d,down=%d", tc.rf, tc.down), func(t *testing.T) {
			c := newCluster(t, three...)
			body := func(opaque string) string {
				return `{"timing":{"interval":100},"callback":{"http":{"uri":"` + cb + `","opaque":"` + opaque +
					`"}},"reliability":{"replication-factor":` + fmt.Sprint(tc.rf) + `}}`
			}
			r := c.client(three[0], "POST", "/timers", body("a"))
			if r.Status != 200 {
				t.Fatalf("create: got %d (%s)", r.Status, r.Body)
			}
			wid := strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
			holders := c.holders(wid)
			via := holders[0]
			downed := 0
			for _, h := range holders[1:] {
				if downed < tc.down {
					c.down[h] = true
					downed++
				}
			}
			if downed != tc.down {
				t.Fatalf("timer has %d other replicas, cannot take %d down", len(holders)-1, tc.down)
			}
			r = c.client(via, "PUT", "/timers/"+wid, body("b"))
			if r.Status != tc.want {
				t.Fatalf("update with %d of %d replicas down: got %d (%s), want %d", tc.down, tc.rf, r.Status, r.Body, tc.want)
			}
			if tc.want == 503 && !strings.Contains(string(r.Body), "may still take effect") {
				t.Fatalf("503 body %q does not say the write may still take effect", r.Body)
			}
		})
	}
}

// TestReadRepairReachesEveryReplica is the shape of a case the sweep
// found: the primary missed a delete, a backup that held the tombstone
// restarted empty, and the primary's first stale pop notice is answered
// 409 by the other backup but taken by the empty one. The primary must
// pass the tombstone on, or the empty backup pops the deleted timer at
// its rank.
func TestReadRepairReachesEveryReplica(t *testing.T) {
	c := newCluster(t, three...)
	r := c.client(three[0], "POST", "/timers", `{"timing":{"interval":10,"repeat-for":100},"callback":{"http":{"uri":"`+cb+
		`","opaque":"x"}},"reliability":{"replication-factor":3}}`)
	wid := strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
	replicas := NewRing(three).Replicas(mustID(t, wid), 3)
	primary, keeper, amnesiac := replicas[0], replicas[1], replicas[2]
	c.down[primary] = true
	if r := c.client(keeper, "DELETE", "/timers/"+wid, ""); r.Status != 200 {
		t.Fatalf("DELETE: got %d", r.Status)
	}
	delete(c.down, primary)
	c.restart(amnesiac)
	if got := seqs(c.advance(60*time.Second, 200)); !slices.Equal(got, []string{"1:x"}) {
		t.Fatalf("pops after the delete: got %v, want the one stale pop of the primary that missed it", got)
	}
	if h := c.holders(wid); len(h) != 0 {
		t.Errorf("live copies after the repair: %v, want none", h)
	}
}

// TestTombstoneOutlivesStaleDefinition: a replica that holds a tombstone
// burying nothing it knew (the delete reached it, the create had not)
// keeps it while notices of the buried definition still arrive, so each
// one is answered 409, not taken once the tombstone's minimum life is up.
func TestTombstoneOutlivesStaleDefinition(t *testing.T) {
	c := newCluster(t, three...)
	node := c.nodes[three[0]]
	send := func(rec Timer) Response { return replicateFrom(node, three[1], rec) }
	place := &Placement{Replicas: three}
	const id = 1 << 30
	start := node.nowMs()
	live := *withCallback(withParts(&Timer{ID: id, Version: id, Start: start, interval: sec(10 * time.Second), repeatFor: sec(100 * time.Second), RF: 3}, place, nil), cb, "x")
	if r := send(*withParts(&Timer{ID: id, Version: id + 1, Start: start, State: Tombstone, RF: 3}, place, nil)); r.Status != 200 {
		t.Fatalf("tombstone: got %d (%s)", r.Status, r.Body)
	}
	for _, at := range []time.Duration{5 * time.Second, 2 * TombstoneMin, 6 * TombstoneMin} {
		c.clock.advance(at - time.Duration(node.nowMs()-start)*time.Millisecond)
		notice := live
		notice.Seq = uint32(at / (10 * time.Second))
		if r := send(notice); r.Status != 409 {
			t.Fatalf("stale notice at +%v: got %d, want 409 (the tombstone still answering)", at, r.Status)
		}
	}
}

// TestTombstoneOutlivesItsLifeWhileAReplicaMayLackIt is the shape of a
// case a sweep found: a replica that had restarted empty took a short
// update while the timer's other replica, cut off, kept popping the older
// definition it alone held. The update's write could not reach that
// replica (it is marked as may lack it), and its tombstone buried nothing
// known here, so it lived its least life only; the other replica's notice
// after the heal then brought the replaced definition back. The tombstone
// now stays while a replica may lack it, so the notice is answered 409;
// without the mark, once that replica took a message of the update (which
// clears it), or past MaxLackingHold, it lives its life as before. An
// update's notices that the replica never answered mark it too
// (TestUnansweredReplicationKeepsTheTombstoneForItsPeer).
func TestTombstoneOutlivesItsLifeWhileAReplicaMayLackIt(t *testing.T) {
	place := &Placement{Replicas: three[:2]}
	const id = 1 << 30
	for _, tc := range []struct {
		name    string
		lacking uint32
		reached bool // the update's pop notices reach the other replica
		after   time.Duration
		want    int
	}{
		{"the other replica may lack it", 0b10, false, time.Minute, 409},
		{"unmarked, its notices unanswered", 0, false, time.Minute, 409}, // N57: marked then
		{"unmarked, its notices answered", 0, true, time.Minute, 200},
		{"the other replica took its notices", 0b10, true, time.Minute, 200},
		{"past MaxLackingHold", 0b10, false, MaxLackingHold + time.Minute, 200},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, three...)
			node := c.nodes[three[0]]
			send := func(rec Timer) Response { return replicateFrom(node, three[1], rec) }
			c.down[three[1]] = !tc.reached
			start := node.nowMs()
			update := *withCallback(withParts(&Timer{ID: id, Version: id + 1, Start: start, interval: sec(time.Second), repeatFor: sec(2 * time.Second), RF: 2}, place, nil), cb, "y")
			update.setLacking(tc.lacking)
			if r := send(update); r.Status != 200 {
				t.Fatalf("the update: got %d (%s)", r.Status, r.Body)
			}
			if got := seqs(c.advance(tc.after, 200)); !slices.Equal(got, []string{"1:y", "2:y"}) {
				t.Fatalf("pops of the update: got %v, want its two", got)
			}
			old := *withCallback(withParts(&Timer{ID: id, Version: id, Start: start - 10_000, interval: sec(30 * time.Second), repeatFor: sec(10 * time.Hour),
				Seq: uint32((node.nowMs() - start + 10_000) / 30_000), RF: 2}, place, nil), cb, "x")
			if r := send(old); r.Status != tc.want {
				t.Fatalf("the other replica's notice of the older definition: got %d, want %d", r.Status, tc.want)
			}
		})
	}
}

// TestUnansweredReplicationKeepsTheTombstoneForItsPeer is the shape of
// scenarios/README.md N57: a replica took a short update and sent it
// to the timer's other replica, which never answered (cut off, it holds
// the older, longer definition); meanwhile a delete buried the update
// here. Nothing marked the other replica as may lack the tombstone, so
// it lived its own short life, and the other replica's notice after the
// heal brought the deleted definition back. An unanswered replication of
// the timer to a replica now marks it on the tombstone held of that
// version or a newer one, which then stays while it may lack it: the
// notice is answered 409. A replication answered, or a replica outside
// the tombstone's placement, leaves the tombstone its own life.
func TestUnansweredReplicationKeepsTheTombstoneForItsPeer(t *testing.T) {
	place := &Placement{Replicas: three[:2]}
	const id = 1 << 30
	for _, tc := range []struct {
		name     string
		to       string // the replica the update was sent to
		answered bool
		refused  bool // answered 403: dated outside its window
		want     int
	}{
		{"the other replica did not answer", three[1], false, false, 409},
		{"the other replica answered", three[1], true, false, 200},
		{"a node outside the placement did not answer", three[2], false, false, 200},
		// N73: a replica that refused the update may hold the older
		// definition still, as one that never answered may (fresh
		// seed 9546075: its clock stepped behind).
		{"the other replica refused", three[1], true, true, 409},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, three...)
			node := c.nodes[three[0]]
			send := func(rec Timer) Response { return replicateFrom(node, three[2], rec) }
			start := node.nowMs()
			update := *withCallback(withParts(&Timer{ID: id, Version: id + 1, Start: start, interval: sec(time.Second), repeatFor: sec(2 * time.Second), RF: 2}, place, nil), cb, "y")
			if r := send(update); r.Status != 200 {
				t.Fatalf("the update: got %d (%s)", r.Status, r.Body)
			}
			var outcome Response
			node.replicate(tc.to, &update, nil, node.nowMs(), func(_ bool, resp Response) { outcome = resp })
			if r := send(*withParts(&Timer{ID: id, Version: id + 2, Start: start, State: Tombstone, RF: 2}, place, nil)); r.Status != 200 {
				t.Fatalf("the delete: got %d (%s)", r.Status, r.Body)
			}
			if tc.refused {
				for _, r := range c.net.take("http://" + tc.to) {
					r.done(Response{Status: 403, Body: []byte("internal API: the request is dated 2.2s ahead of this node's clock")}, nil)
				}
			}
			c.down[tc.to] = !tc.answered
			c.advance(time.Second, 200)
			if (outcome.Status == 0) == tc.answered {
				t.Fatalf("the update's replication: got %d, want answered %v", outcome.Status, tc.answered)
			}
			c.down[tc.to] = true // cut off from here on
			c.advance(time.Minute, 200)
			old := *withCallback(withParts(&Timer{ID: id, Version: id, Start: start - 10_000, interval: sec(30 * time.Second), repeatFor: sec(10 * time.Hour),
				Seq: uint32((node.nowMs() - start + 10_000) / 30_000), RF: 2}, place, nil), cb, "x")
			if r := replicateFrom(node, three[1], old); r.Status != tc.want {
				t.Fatalf("the other replica's notice of the older definition: got %d, want %d", r.Status, tc.want)
			}
		})
	}
}

// TestTombstoneForgetsAReplicaThatTookIt: the replica a tombstone was
// kept for took a message of it (a repair round's push, answered 200):
// its mark is cleared on the tombstone, which then lives its own life and
// no longer, and a stale notice after that is taken as before.
func TestTombstoneForgetsAReplicaThatTookIt(t *testing.T) {
	place := &Placement{Replicas: three[:2]}
	const id = 1 << 30
	c := newCluster(t, three...)
	node := c.nodes[three[0]]
	c.down[three[1]] = true
	start := node.nowMs()
	update := *withCallback(withParts(&Timer{ID: id, Version: id + 1, Start: start, interval: sec(time.Second), repeatFor: sec(2 * time.Second), RF: 2}, place, nil), cb, "y")
	update.setLacking(0b10)
	var r Response
	node.Handle(asPeer(node, Request{Method: "PUT", URL: "/timers/" + wire.FormatWireID(id, 0),
		Body: EncodeReplication(&update, node.nowMs())}, three[2]), func(got Response) { r = got })
	if r.Status != 200 {
		t.Fatalf("the update: got %d (%s)", r.Status, r.Body)
	}
	c.advance(time.Minute, 200)
	held, ok := node.Timer(id)
	if !ok || held.State != Tombstone || held.lacking() == 0 {
		t.Fatalf("after its pops: held %+v (%v), want its tombstone marking the other replica (marks %b)", held, ok, held.lacking())
	}
	node.markLacking(&held, three[1], false) // the other replica took it
	if held, _ := node.Timer(id); held.lacking() != 0 {
		t.Fatalf("mark after the other replica took it: %b, want none", held.lacking())
	}
	c.advance(time.Minute, 200)
	if held, ok := node.Timer(id); ok {
		t.Errorf("a minute later: held %+v, want the tombstone gone at the end of its life", held)
	}
}

// TestTombstoneOfShortUpdateOutlivesTheOldDefinition is the shape
// of a case the sweep found: an update cuts a long timer down to two quick pops while one
// replica is cut off. The update's tombstone must last until the old
// definition's end, so the cut-off replica's stale pop is answered 409 and
// does not bring the old definition back on the others.
func TestTombstoneOfShortUpdateOutlivesTheOldDefinition(t *testing.T) {
	c := newCluster(t, three...)
	r := c.client(three[0], "POST", "/timers", `{"timing":{"interval":30,"repeat-for":120},"callback":{"http":{"uri":"`+cb+
		`","opaque":"x"}},"reliability":{"replication-factor":3}}`)
	wid := strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
	replicas := NewRing(three).Replicas(mustID(t, wid), 3)
	cutOff := replicas[2]
	c.down[cutOff] = true
	r = c.client(replicas[0], "PUT", "/timers/"+wid, `{"timing":{"interval":1,"repeat-for":2},"callback":{"http":{"uri":"`+cb+`","opaque":"y"}}}`)
	if r.Status != 200 {
		t.Fatalf("update: got %d (%s)", r.Status, r.Body)
	}
	// y pops twice and is over by 2 s; the cut-off replica rejoins at
	// 20 s still holding x, pops it once at 30 s plus its 4 s skew, and is
	// repaired by the 409s.
	got := seqs(c.advance(20*time.Second, 200))
	delete(c.down, cutOff)
	got = append(got, seqs(c.advance(130*time.Second, 200))...)
	if !slices.Equal(got, []string{"1:y", "2:y", "1:x"}) {
		t.Fatalf("pops: got %v, want y's two pops and one stale pop of x", got)
	}
}

// TestDeleteByBareChosenIDReachesEveryReplica deletes a timer created
// with rf 3 under a client-chosen ID, by that ID alone (a bloom filter
// naming no node), through a node that holds no copy: the node cannot
// know the replication factor, so the tombstone goes to every member, and
// no replica goes on popping.
func TestDeleteByBareChosenIDReachesEveryReplica(t *testing.T) {
	four := append(slices.Clone(three), "10.0.0.4:7253")
	c := newCluster(t, four...)
	bare := wire.FormatWireID(0x8000_0000_0000_0123, 0)
	r := c.client(four[0], "PUT", "/timers/"+bare, `{"timing":{"interval":5,"repeat-for":60},"callback":{"http":{"uri":"`+cb+`"}},"reliability":{"replication-factor":3}}`)
	if r.Status != 200 {
		t.Fatalf("PUT: got %d %s", r.Status, r.Body)
	}
	holders := c.holders(bare)
	if len(holders) != 3 {
		t.Fatalf("holders %v, want 3", holders)
	}
	via := ""
	for _, a := range four {
		if !slices.Contains(holders, a) {
			via = a
		}
	}
	if r := c.client(via, "DELETE", "/timers/"+bare, ""); r.Status != 200 {
		t.Fatalf("DELETE through %s: got %d %s", via, r.Status, r.Body)
	}
	if h := c.holders(bare); len(h) != 0 {
		t.Fatalf("after the delete: still held live by %v", h)
	}
	if got := c.advance(70*time.Second, 200); len(got) != 0 {
		t.Fatalf("pops after the delete: %v", seqs(got))
	}
}

// TestUpdateByBareChosenIDReachesEveryReplica is the update's counterpart:
// an update without a replication factor through a node without a copy
// cannot know the timer's, and takes the default. Every member that held
// the old definition must drop it, so that it never pops again; the
// update pops once an interval, from one replica.
func TestUpdateByBareChosenIDReachesEveryReplica(t *testing.T) {
	four := append(slices.Clone(three), "10.0.0.4:7253")
	c := newCluster(t, four...)
	bare := wire.FormatWireID(0x8000_0000_0000_0123, 0)
	r := c.client(four[0], "PUT", "/timers/"+bare, `{"timing":{"interval":5,"repeat-for":60},"callback":{"http":{"uri":"`+cb+`","opaque":"old"}},"reliability":{"replication-factor":3}}`)
	if r.Status != 200 {
		t.Fatalf("PUT: got %d %s", r.Status, r.Body)
	}
	via, holders := "", c.holders(bare)
	for _, a := range four {
		if !slices.Contains(holders, a) {
			via = a
		}
	}
	update := `{"timing":{"interval":5,"repeat-for":60},"callback":{"http":{"uri":"` + cb + `","opaque":"new"}}}`
	// With every replica down the factor cannot be learned: 503, and
	// nothing is written.
	for _, h := range holders {
		c.down[h] = true
	}
	if r := c.client(via, "PUT", "/timers/"+bare, update); r.Status != 503 {
		t.Fatalf("update with every replica down: got %d %s, want 503", r.Status, r.Body)
	}
	for _, h := range holders {
		c.down[h] = false
	}
	r = c.client(via, "PUT", "/timers/"+bare, update)
	if r.Status != 200 {
		t.Fatalf("update through %s: got %d %s", via, r.Status, r.Body)
	}
	if h := c.holders(bare); !slices.Equal(h, holders) {
		t.Fatalf("the update is held by %v, want the timer's three replicas %v", h, holders)
	}
	got := c.advance(12*time.Second, 200)
	wantPops(t, got, "1:new", "2:new")
}

// TestReplacedRecordReachesTheReplicasItsFactorDrops: a write that learnt
// its factor while a concurrent update changed it (an update without a
// factor that read the timer ended and took the default) replaces an rf 3
// definition with an rf 2 one on the replicas of rf 2. The third replica
// of the definition replaced is in no writer's placement: the replica
// that takes the write tells it, and it keeps the write as moved away
// instead of popping the replaced definition until a repair round.
func TestReplacedRecordReachesTheReplicasItsFactorDrops(t *testing.T) {
	c := newCluster(t, three...)
	r := c.client(three[0], "POST", "/timers", `{"timing":{"interval":30,"repeat-for":600},"callback":{"http":{"uri":"`+cb+
		`","opaque":"x"}},"reliability":{"replication-factor":3}}`)
	id, _, err := wire.ParseWireID(strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/"))
	if r.Status != 200 || err != nil {
		t.Fatalf("create: %d %v", r.Status, err)
	}
	c.settle()
	two := c.nodes[three[0]].ring.Replicas(id, 2)
	dropped := three[slices.IndexFunc(three, func(a string) bool { return !slices.Contains(two, a) })]
	held, _ := c.nodes[two[0]].Timer(id)
	up := *withCallback(withParts(&Timer{ID: id, Version: held.Version + 1, Start: c.nodes[two[0]].nowMs(), interval: sec(time.Minute), repeatFor: sec(time.Hour),
		RF: 2}, &Placement{Replicas: two}, nil), cb, "y")
	for i, r := range two {
		if resp := replicateFrom(c.nodes[r], two[1-i], up); resp.Status != 200 {
			t.Fatalf("the rf 2 write to %s: got %d (%s)", r, resp.Status, resp.Body)
		}
	}
	c.settle()
	got, ok := c.nodes[dropped].Timer(id)
	if !ok || got.Version != up.Version || got.State == Live {
		t.Fatalf("the replica rf 2 leaves out holds %+v (%v); want the rf 2 write, not live", got, ok)
	}
	for _, p := range seqs(c.advance(10*time.Minute, 200)) {
		if strings.HasSuffix(p, ":x") {
			t.Fatalf("pop %s of the replaced definition", p)
		}
	}
}
