package node

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// The tests here bound the allocations of the paths every create and pop
// takes. Allocation counts are deterministic, unlike timings: each bound
// is what the path allocates today, which the code before exceeded.

// heldRecord creates a timer of body on h's node and returns its record.
func heldRecord(h *harness, body string) *Timer {
	h.t.Helper()
	id, _, err := wire.ParseWireID(h.create(body))
	if err != nil {
		h.t.Fatal(err)
	}
	t := h.node.store.Get(id)
	if t == nil {
		h.t.Fatalf("timer %d not held after its create", id)
	}
	return t
}

// TestApplyOfAHeldRecordAllocatesNothing proves that offering a replica a
// record it already holds allocates nothing: the callback check's answer
// is allocated only when it refuses (it used to escape on every apply).
func TestApplyOfAHeldRecordAllocatesNothing(t *testing.T) {
	h := newHarness(t)
	c := *heldRecord(h, `{"timing":{"interval":600},`+okCallback+`}`)
	if got := testing.AllocsPerRun(100, func() { h.node.apply(&c) }); got != 0 {
		t.Errorf("apply of a held record: %v allocations, want 0", got)
	}
}

// TestAllowedCallbackIsNotParsedAgain proves that a write's callback
// whose scheme://authority the node has judged before is allowed on that
// verdict, without parsing its URL again (the wire has), while a refused
// one is still answered with the whole URI the client gave.
func TestAllowedCallbackIsNotParsedAgain(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.CallbackHosts = []string{"client.example"} })
	n := h.node
	allowed := wire.Timer{URI: "http://client.example/cb?x=1"}
	if _, refused := n.refuseCallback(allowed); refused {
		t.Fatalf("refuseCallback(%q) refused, want allowed", allowed.URI)
	}
	if got := testing.AllocsPerRun(100, func() { n.refuseCallback(allowed) }); got != 0 {
		t.Errorf("refuseCallback of a judged host: %v allocations, want 0", got)
	}
	refused := wire.Timer{URI: "http://other.example/cb?x=1"}
	for range 2 { // the second time on the verdict kept
		resp, ok := n.refuseCallback(refused)
		if reason := resp.Header.Get(wire.HeaderReason); !ok || resp.Status != 400 || !strings.Contains(reason, refused.URI) {
			t.Errorf("refuseCallback(%q) = %d %q, %v; want 400 naming the URI, true", refused.URI, resp.Status, reason, ok)
		}
	}
}

// TestCanonicalHost proves canonicalHost writes IP hosts as netip does,
// leaves names alone, and copies nothing for a host already canonical,
// as every callback to an IPv4 address is.
func TestCanonicalHost(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"127.0.0.1", "127.0.0.1"},
		{"::ffff:10.0.0.1", "10.0.0.1"},
		{"0:0::1", "::1"},
		{"fe80::1%eth0", "fe80::1%eth0"},
		{"client.example", "client.example"},
	} {
		if got := canonicalHost(c.in); got != c.want {
			t.Errorf("canonicalHost(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	if got := testing.AllocsPerRun(100, func() { canonicalHost("127.0.0.1") }); got != 0 {
		t.Errorf("canonicalHost of a canonical address: %v allocations, want 0", got)
	}
}

// TestPopOfALoneReplicaAllocationsAreBounded proves the pop of a timer of
// one replica neither builds a pop notice nobody is sent nor the
// arguments of a debug log that is off: with both, the same pop took
// two allocations more.
func TestPopOfALoneReplicaAllocationsAreBounded(t *testing.T) {
	h := newHarness(t)
	heldRecord(h, `{"timing":{"interval":1,"repeat-for":100000},`+okCallback+`}`)
	cycle := func() {
		h.clock.advance(time.Second)
		for _, s := range h.net.out {
			s.done(Response{Status: 200}, nil)
		}
		h.net.out = h.net.out[:0]
	}
	cycle()
	// The rest: the popped copy, the callback request and its
	// completion, the alarm. Its in-flight mark is shared
	// (TestPopInFlightMarkIsShared): one more when each pop copied it.
	if got := testing.AllocsPerRun(100, cycle); got > 14 {
		t.Errorf("a pop of a lone replica: %v allocations, want at most 14", got)
	}
}

// TestCreateAllocationsAreBounded proves a create through a lone node
// (rf 1) allocates what it keeps or answers, and no more: the write
// with its record, the reply's header map (two) and Location, the
// replica's copy and its callback part, and the wire's parse of the body
// (the callback's URI and opaque data; a plain URL is checked without
// url.Parse, one less). The code before took five more: the record
// apart from its write, the callback policy's own parse of the URL and
// netip's errors for a host name, and the apply's refusal.
func TestCreateAllocationsAreBounded(t *testing.T) {
	h := newHarness(t)
	req := Request{Method: "POST", URL: "/timers", Header: Header{}, Body: []byte(`{"timing":{"interval":600},` + okCallback + `}`)}
	status := 0
	reply := func(r Response) { status = r.Status }
	h.node.Handle(req, reply)
	if got := testing.AllocsPerRun(100, func() { h.node.Handle(req, reply) }); got > 7 {
		t.Errorf("a create: %v allocations, want at most 7", got)
	}
	if status != 200 {
		t.Errorf("a create: status %d, want 200", status)
	}
}

// TestInternalPutAllocationsAreBounded proves the internal PUT every
// replication message is builds its URL in one allocation and reuses
// the node's instance header: what is left is the header map (two), the
// URL, the stamp's time and the signature. The code before built the
// wire ID and the instance header apart, two more.
func TestInternalPutAllocationsAreBounded(t *testing.T) {
	h := newHarness(t)
	n, body := h.node, []byte(`{}`)
	const peer, id, bloom = "10.0.0.2:7253", uint64(0x125f17c1cfd14000), uint64(0x8001)
	req := n.internalPut(peer, id, bloom, body)
	if want := "http://" + peer + "/timers/" + wire.FormatWireID(id, bloom); req.URL != want {
		t.Errorf("internalPut URL = %q, want %q", req.URL, want)
	}
	if got, want := req.Header.Get(HeaderInstance), strconv.Itoa(n.instance)+" "+n.self; got != want {
		t.Errorf("internalPut %s = %q, want %q", HeaderInstance, got, want)
	}
	if got := testing.AllocsPerRun(100, func() { n.internalPut(peer, id, bloom, body) }); got > 5 {
		t.Errorf("internalPut: %v allocations, want at most 5", got)
	}
}

// TestPopInFlightMarkIsShared proves that the Missed mark a pop sets on a
// record with no other extra part, until its callback succeeds, is the
// one shared popInFlight, that the callback's success clears it, and
// that nothing changes the shared one in place.
func TestPopInFlightMarkIsShared(t *testing.T) {
	h := newHarness(t)
	rec := heldRecord(h, `{"timing":{"interval":1,"repeat-for":100},`+okCallback+`}`)
	h.clock.advance(time.Second)
	pops := h.net.take(cb)
	if len(pops) != 1 {
		t.Fatalf("%d pops, want 1", len(pops))
	}
	if rec.Extra() != &popInFlight {
		t.Errorf("Extra of a record whose pop is in flight = %+v, want the shared popInFlight", rec.Extra())
	}
	pops[0].done(Response{Status: 200}, nil)
	if rec.Extra() != nil {
		t.Errorf("Extra once the callback succeeded = %+v, want nil", rec.Extra())
	}
	if !popInFlight.onlyMissed(1) {
		t.Errorf("popInFlight = %+v, changed in place", popInFlight)
	}
}

// TestPopInFlightKeepsEveryOtherPart: the shared popInFlight stands only
// for a record with no other extra part; a record with any (here the
// sites its forward has not reached) keeps it through its pop's mark.
func TestPopInFlightKeepsEveryOtherPart(t *testing.T) {
	for _, e := range []TimerExtra{{SitesLacking: 0b10}, {Lacking: 0b10}, {Refused: 0b10}, {Buried: 1}} {
		rec := withParts(&Timer{}, nil, &e)
		rec.setPopMarks(1, 0)
		if rec.Extra() == &popInFlight {
			t.Errorf("record with %+v took the shared popInFlight, losing the part", e)
		} else if rec.Extra().Missed != 1 || rec.Extra().SitesLacking != e.SitesLacking || rec.Extra().Lacking != e.Lacking {
			t.Errorf("record with %+v holds %+v after its pop's mark", e, *rec.Extra())
		}
	}
}
