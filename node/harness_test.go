package node

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// The harness drives one or more nodes by hand: a manual clock per node
// and a network that holds every outbound request until the test answers
// it. It is the smallest driver that honours the determinism contract; the
// simulator in sim/ is the full one.

// epoch is an arbitrary wall time the harness clocks start at.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type manualClock struct {
	now    time.Time
	seq    int
	alarms []*manualAlarm
}

type manualAlarm struct {
	at      time.Time
	seq     int
	f       func()
	stopped bool
	clock   *manualClock
}

func (a *manualAlarm) Stop() bool {
	was := !a.stopped
	a.stopped = true
	a.clock.alarms = slices.DeleteFunc(a.clock.alarms, func(b *manualAlarm) bool { return b == a })
	return was
}

func (c *manualClock) Now() time.Time { return c.now }

func (c *manualClock) AfterFunc(d time.Duration, f func()) Alarm {
	c.seq++
	a := &manualAlarm{at: c.now.Add(d), seq: c.seq, f: f, clock: c}
	c.alarms = append(c.alarms, a)
	return a
}

// maxAlarmsAtOnce bounds the alarms one instant of a manualClock may
// fire: far above what any test's node sets, so that an alarm that sets
// itself again at once (a node spinning at one instant) fails its test
// with a panic naming the instant instead of hanging it until the test
// binary's timeout.
const maxAlarmsAtOnce = 1_000_000

// advance moves the clock to now+d, firing due alarms in time order.
func (c *manualClock) advance(d time.Duration) {
	end := c.now.Add(d)
	atOnce := 0
	for {
		slices.SortFunc(c.alarms, func(a, b *manualAlarm) int {
			if c := a.at.Compare(b.at); c != 0 {
				return c
			}
			return a.seq - b.seq
		})
		if len(c.alarms) == 0 || c.alarms[0].at.After(end) {
			break
		}
		a := c.alarms[0]
		c.alarms = c.alarms[1:]
		if a.at.Equal(c.now) {
			if atOnce++; atOnce > maxAlarmsAtOnce {
				panic(fmt.Sprintf("manualClock: more than %d alarms fired at %v: an alarm that sets itself again at once?", maxAlarmsAtOnce, c.now))
			}
		} else {
			atOnce = 0
		}
		c.now = a.at
		a.f()
	}
	c.now = end
}

type sent struct {
	req     Request
	timeout time.Duration
	done    func(Response, error)
	// from is the sending node, when a cluster's senderNet sent it.
	from string
}

type heldNet struct{ out []*sent }

func (h *heldNet) Send(req Request, timeout time.Duration, done func(Response, error)) {
	h.out = append(h.out, &sent{req: req, timeout: timeout, done: done})
}

// take removes and returns the requests sent to URLs with the prefix.
func (h *heldNet) take(prefix string) []*sent {
	var got []*sent
	h.out = slices.DeleteFunc(h.out, func(s *sent) bool {
		if strings.HasPrefix(s.req.URL, prefix) {
			got = append(got, s)
			return true
		}
		return false
	})
	return got
}

type harness struct {
	t     *testing.T
	clock *manualClock
	net   *heldNet
	node  *Node
}

// newHarness builds a lone node on the default address. It has the
// cluster key testKey, so that the requests a test makes as a peer's
// (see asPeer) are taken; a mutator may clear it.
func newHarness(t *testing.T, mutate ...func(*Config)) *harness {
	t.Helper()
	h := &harness{t: t, clock: &manualClock{now: epoch}, net: &heldNet{}}
	cfg := DefaultConfig()
	cfg.Clock, cfg.Network = h.clock, h.net
	cfg.ClusterKey = testKey
	cfg.RepairInterval = 0 // the tests answer every message by hand
	for _, m := range mutate {
		m(&cfg)
	}
	n, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.node = n
	return h
}

// do sends a request and returns the reply, which must come at once.
func (h *harness) do(method, url, body string) Response {
	h.t.Helper()
	return h.send(Request{Method: method, URL: url, Header: Header{}, Body: []byte(body)})
}

// testPeer is the address the requests a test makes as a peer's come
// from.
const testPeer = "10.255.0.1:7253"

// asPeer returns req as a peer at from would send it to n now: from
// from, stamped to n and signed with n's key if it has one. What the test
// set itself is left as it is: a destination means the stamp, a
// signature (even "") the signature.
func asPeer(n *Node, req Request, from string) Request {
	if req.Header == nil {
		req.Header = Header{}
	}
	if req.Remote == "" {
		req.Remote = from
	}
	if _, ok := req.Header[HeaderTo]; ok {
		return req
	}
	s := stamp{sent: n.nowMs(), to: n.self}
	req.Header.Set(HeaderTo, s.to)
	req.Header.Set(HeaderSent, strconv.FormatInt(s.sent, 10))
	if _, ok := req.Header[HeaderSignature]; !ok && n.cfg.ClusterKey != "" {
		req.Header.Set(HeaderSignature, signature(n.cfg.ClusterKey, req.Method, req.URL, s, req.Body))
	}
	return req
}

// idPlacedOn returns the first timer ID that a ring of members places,
// at the factor of len(replicas), on replicas in that order.
func idPlacedOn(members, replicas []string) uint64 {
	ring := NewRing(members)
	id := uint64(1)
	for !slices.Equal(ring.Replicas(id, len(replicas)), replicas) {
		id++
	}
	return id
}

// replicateFrom hands n rec as the replication PUT peer from sends it
// now, and returns n's answer.
func replicateFrom(n *Node, from string, rec Timer) Response {
	var got Response
	n.Handle(asPeer(n, Request{Method: "PUT", URL: "/timers/" + wire.FormatWireID(rec.ID, 0),
		Body: EncodeReplication(&rec, n.nowMs())}, from), func(r Response) { got = r })
	return got
}

// send hands req to the node, as a peer's (asPeer), and returns the
// reply, which must come at once.
func (h *harness) send(req Request) Response {
	h.t.Helper()
	req = asPeer(h.node, req, testPeer)
	var got *Response
	h.node.Handle(req, func(r Response) {
		if got != nil {
			h.t.Fatalf("%s %s: replied twice", req.Method, req.URL)
		}
		got = &r
	})
	if got == nil {
		h.t.Fatalf("%s %s: no immediate reply", req.Method, req.URL)
	}
	return *got
}

// create posts a timer and returns its wire ID.
func (h *harness) create(body string) string {
	h.t.Helper()
	r := h.do("POST", "/timers", body)
	if r.Status != 200 {
		h.t.Fatalf("POST /timers: status %d (%s), want 200", r.Status, r.Body)
	}
	loc := r.Header.Get(wire.HeaderLocation)
	if !strings.HasPrefix(loc, "/timers/") {
		h.t.Fatalf("POST /timers: Location %q, want /timers/<id>", loc)
	}
	return strings.TrimPrefix(loc, "/timers/")
}

// pops returns the callbacks sent so far to uri and answers each with
// status.
func (h *harness) pops(uri string, status int) []Request {
	h.t.Helper()
	var reqs []Request
	for _, s := range h.net.take(uri) {
		reqs = append(reqs, s.req)
		s.done(Response{Status: status}, nil)
	}
	return reqs
}

// drainPops answers every callback with status, and those the answers
// release (a replica sends a timer's next pop only once the one before
// has been answered), until none is left; it returns them in order.
func (h *harness) drainPops(uri string, status int) []Request {
	h.t.Helper()
	var all []Request
	step := loopBound(h.t, 10_000, "drainPops: callbacks still sent")
	for {
		step()
		reqs := h.pops(uri, status)
		if len(reqs) == 0 {
			return all
		}
		all = append(all, reqs...)
		h.clock.advance(0)
	}
}

func timerJSON(interval, repeatFor int, uri, opaque string) string {
	return string(wire.Encode(wire.Timer{Interval: time.Duration(interval) * time.Second, RepeatFor: time.Duration(repeatFor) * time.Second, URI: uri, Opaque: opaque}))
}

// loopBound returns a step to call once each round of a test's loop that
// waits for a node to do something (take a page, end its paging, fill its
// budget). The step fails t once the loop has run more than max rounds,
// far above what the test needs, so that a bug that never lets the loop
// end fails the test at once, naming what it waited for, instead of
// hanging it until the test binary's timeout.
func loopBound(t testing.TB, max int, what string) func() {
	rounds := 0
	return func() {
		t.Helper()
		if rounds++; rounds > max {
			t.Fatalf("%s: not done after %d rounds", what, max)
		}
	}
}
