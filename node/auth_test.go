package node

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

const testKey = "0123456789abcdef-test-key"

// keyed builds a cluster of addrs sharing testKey.
func keyed(t *testing.T, addrs ...string) *cluster {
	t.Helper()
	return newClusterWith(t, func(_ string, cfg *Config) { cfg.ClusterKey = testKey }, addrs...)
}

// TestKeyedClusterReplicatesAndPops proves peers holding the key work as
// before: a create reaches every replica, pop notices reach the backups,
// and each pop is delivered once.
func TestKeyedClusterReplicatesAndPops(t *testing.T) {
	c := keyed(t, three...)
	r := c.client(three[0], "POST", "/timers", `{"timing":{"interval":5,"repeat-for":10},"callback":{"http":{"uri":"`+cb+
		`","opaque":"x"}},"reliability":{"replication-factor":3}}`)
	if r.Status != 200 {
		t.Fatalf("create: got %d (%s), want 200", r.Status, r.Body)
	}
	wid := strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
	if h := c.holders(wid); len(h) != 3 {
		t.Fatalf("holders: got %v, want all three", h)
	}
	if got := seqs(c.advance(20*time.Second, 200)); !slices.Equal(got, []string{"1:x", "2:x"}) {
		t.Fatalf("pops: got %v, want [1:x 2:x]", got)
	}
	for a, n := range c.nodes {
		if f := n.Stats().Forbidden; f != 0 {
			t.Errorf("%s refused %d internal requests, want 0", a, f)
		}
	}
}

// TestForgedInternalRequestsAreRefused proves that a replication PUT
// redirecting the callback, a pop notice skipping a pop and a tombstone
// killing the timer are each refused with 403 and change nothing, whether
// they carry no signature, one made with another key, or the signature of
// another body: the held timer is unchanged and its pops go on as defined.
func TestForgedInternalRequestsAreRefused(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.ClusterKey = testKey })
	wid := h.create(timerJSON(10, 30, cb, "real"))
	id := mustID(t, wid)
	held, _ := h.node.Timer(id)
	forge := func(mutate func(*Timer)) []byte {
		f := held
		f.setPlacement(&Placement{Replicas: []string{h.node.self}})
		mutate(&f)
		return EncodeReplication(&f, h.node.nowMs())
	}
	bodies := map[string][]byte{
		"redirect":  forge(func(f *Timer) { f.Version++; f.setCallback("http://127.0.0.1:1/evil", "evil", nil) }),
		"notice":    forge(func(f *Timer) { f.Seq = 2 }),
		"tombstone": forge(func(f *Timer) { f.entomb() }),
	}
	url := "/timers/" + wid
	s := stamp{sent: h.node.nowMs(), to: h.node.self}
	signs := map[string]func(body []byte) string{
		"unsigned":   func([]byte) string { return "" },
		"other key":  func(b []byte) string { return signature("another-key-of-16-bytes", "PUT", url, s, b) },
		"other body": func([]byte) string { return signature(testKey, "PUT", url, s, []byte("{}")) },
		"other time": func(b []byte) string { return signature(testKey, "PUT", url, stamp{s.sent - 1, s.to}, b) },
		"other node": func(b []byte) string { return signature(testKey, "PUT", url, stamp{s.sent, "10.0.0.9:7253"}, b) },
	}
	for what, body := range bodies {
		for how, sign := range signs {
			r := h.send(Request{Method: "PUT", URL: url, Header: stamped(s, HeaderSignature, sign(body)), Body: body})
			if r.Status != 403 || !strings.Contains(r.Header.Get(wire.HeaderReason), HeaderSignature) {
				t.Errorf("%s, %s: got %d %q, want 403 naming %s", what, how, r.Status, r.Header.Get(wire.HeaderReason), HeaderSignature)
			}
		}
	}
	if now, _ := h.node.Timer(id); now != held {
		t.Fatalf("held timer after forgeries: got %+v, want %+v", now, held)
	}
	h.clock.advance(31 * time.Second)
	if got := seqs(h.drainPops("http://", 200)); !slices.Equal(got, []string{"1:real", "2:real", "3:real"}) {
		t.Fatalf("pops: got %v, want [1:real 2:real 3:real]", got)
	}
	if f := h.node.Stats().Forbidden; f != uint64(len(bodies)*len(signs)) {
		t.Errorf("Forbidden: got %d, want %d", f, len(bodies)*len(signs))
	}
	// The same request signed with the key is taken.
	body := bodies["notice"]
	if r := h.send(Request{Method: "PUT", URL: url, Body: body}); r.Status != 200 { // signed as a peer's
		t.Errorf("signed notice: got %d (%s), want 200", r.Status, r.Body)
	}
}

// TestReplicaWithAnotherKeyFailsTheWrite proves a replica that does not
// share the key refuses the proxy's replication, and the client is told
// why with a 503 instead of a 2xx the replicas do not back.
func TestReplicaWithAnotherKeyFailsTheWrite(t *testing.T) {
	c := newClusterWith(t, func(a string, cfg *Config) {
		cfg.ClusterKey = testKey
		if a != three[0] {
			cfg.ClusterKey = "a-different-cluster-key"
		}
	}, three...)
	r := c.client(three[0], "POST", "/timers", `{"timing":{"interval":5},"callback":{"http":{"uri":"`+cb+
		`"}},"reliability":{"replication-factor":3}}`)
	if r.Status != 503 || !strings.Contains(r.Header.Get(wire.HeaderReason), "403") {
		t.Fatalf("create: got %d %q, want 503 with the replicas' 403", r.Status, r.Header.Get(wire.HeaderReason))
	}
}

// stamped returns the header of an internal request stamped with s, and
// the further fields kv (name, value, ...).
func stamped(s stamp, kv ...string) Header {
	h := Header{HeaderSent: strconv.FormatInt(s.sent, 10), HeaderTo: s.to}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

// ownRecord returns the target and body of the replication PUT of a
// timer placed on h's node alone.
func ownRecord(h *harness) (string, []byte) {
	const id = 1 << 40
	now := h.node.nowMs()
	rec := withCallback(withParts(&Timer{ID: id, Version: id, Start: now, interval: sec(10 * time.Second), repeatFor: sec(30 * time.Second), RF: 1}, &Placement{Replicas: []string{h.node.self}}, nil), cb, "x")
	return "/timers/" + wire.FormatWireID(id, 0), EncodeReplication(rec, now)
}

// TestWithoutKeyOnlyMembersMayUseTheInternalAPI proves the default is
// closed: a node without a key takes an unsigned internal request from
// another member's address, refuses it with 403 from any other address
// (its own included, and an unknown one), and a lone node takes none.
func TestWithoutKeyOnlyMembersMayUseTheInternalAPI(t *testing.T) {
	noKey := func(c *Config) { c.ClusterKey = "" }
	member := func(c *Config) {
		c.Address = "10.0.0.1:7253"
		c.Cluster = Membership{Nodes: []string{"10.0.0.1:7253", "10.0.0.2:7253"}}
	}
	for _, tc := range []struct {
		name   string
		config []func(*Config)
		remote string
		want   int
	}{
		{"member", []func(*Config){noKey, member}, "10.0.0.2:40000", 200},
		{"member, IPv4-mapped", []func(*Config){noKey, member}, "[::ffff:10.0.0.2]:40000", 200},
		{"stranger", []func(*Config){noKey, member}, "10.0.0.3:40000", 403},
		{"own address", []func(*Config){noKey, member}, "10.0.0.1:40000", 403},
		{"unknown address", []func(*Config){noKey, member}, "", 403},
		{"lone node", []func(*Config){noKey}, "127.0.0.1:40000", 403},
	} {
		h := newHarness(t, tc.config...)
		url, body := ownRecord(h)
		r := h.send(Request{Method: "PUT", URL: url, Remote: tc.remote, Body: body})
		if r.Status != tc.want {
			t.Errorf("%s: unsigned notice from %q: got %d (%s), want %d", tc.name, tc.remote, r.Status, r.Body, tc.want)
		}
		if tc.want == 403 && !strings.Contains(r.Header.Get(wire.HeaderReason), "members") {
			t.Errorf("%s: reason %q, want one naming the members", tc.name, r.Header.Get(wire.HeaderReason))
		}
	}
}

// TestRequestsAddressedElsewhereAreRefused proves a request signed for
// one member is refused by every other with 403 and counted, the key
// notwithstanding: a captured request cannot be redirected.
func TestRequestsAddressedElsewhereAreRefused(t *testing.T) {
	h := newHarness(t)
	wid := h.create(timerJSON(10, 30, cb, "real"))
	held, _ := h.node.Timer(mustID(t, wid))
	held.Seq = 1
	body := EncodeReplication(&held, h.node.nowMs())
	url := "/timers/" + wid
	s := stamp{sent: h.node.nowMs(), to: "10.0.0.2:7253"}
	r := h.send(Request{Method: "PUT", URL: url, Header: stamped(s, HeaderSignature, signature(testKey, "PUT", url, s, body)), Body: body})
	if r.Status != 403 || !strings.Contains(r.Header.Get(wire.HeaderReason), "addressed to") {
		t.Errorf("request for another node: got %d %q, want 403 saying whom it is addressed to", r.Status, r.Header.Get(wire.HeaderReason))
	}
	if got := h.node.Stats().Misaddressed; got != 1 {
		t.Errorf("Misaddressed: got %d, want 1", got)
	}
	if now, _ := h.node.Timer(held.ID); now.Seq != 0 {
		t.Errorf("held sequence number: got %d, want 0 (unchanged)", now.Seq)
	}
}

// TestMessageAgeWindow proves the window a node takes internal requests
// in, with and without a key: up to MaxMessageAge plus MaxClockSkew old
// and up to MaxClockSkew ahead, and not a millisecond beyond either, each
// refusal a 403 saying why and counted as Stale.
func TestMessageAgeWindow(t *testing.T) {
	cfg := DefaultConfig()
	oldest := -(cfg.MaxMessageAge + cfg.MaxClockSkew)
	for _, keyed := range []bool{true, false} {
		for _, tc := range []struct {
			offset time.Duration
			want   int
			reason string
		}{
			{0, 200, ""},
			{oldest, 200, ""},
			{oldest - time.Millisecond, 403, "late or replayed"},
			{-time.Hour, 403, "late or replayed"},
			{cfg.MaxClockSkew, 200, ""},
			{cfg.MaxClockSkew + time.Millisecond, 403, "ahead"},
		} {
			h := newHarness(t, func(c *Config) {
				if !keyed {
					c.ClusterKey = ""
					c.Cluster = Membership{Nodes: []string{c.Address, testPeer}}
				}
			})
			url, body := ownRecord(h)
			s := stamp{sent: h.node.nowMs() + tc.offset.Milliseconds(), to: h.node.self}
			hdr := stamped(s, HeaderSignature, signature(testKey, "PUT", url, s, body))
			r := h.send(Request{Method: "PUT", URL: url, Header: hdr, Body: body})
			if r.Status != tc.want || !strings.Contains(r.Header.Get(wire.HeaderReason), tc.reason) {
				t.Errorf("keyed %v, sent %v from now: got %d %q, want %d %q", keyed, tc.offset, r.Status, r.Header.Get(wire.HeaderReason), tc.want, tc.reason)
			}
			if stale := h.node.Stats().Stale; (stale == 1) != (tc.want == 403) {
				t.Errorf("keyed %v, sent %v from now: Stale %d", keyed, tc.offset, stale)
			}
		}
	}
}

// TestMalformedStampsAreRefused proves a request without a readable send
// time or destination is refused with 403 naming the header, and counted.
func TestMalformedStampsAreRefused(t *testing.T) {
	h := newHarness(t)
	now := strconv.FormatInt(h.node.nowMs(), 10)
	for _, tc := range []struct {
		hdr  Header
		want string
	}{
		{Header{HeaderTo: h.node.self}, HeaderSent},
		{Header{HeaderTo: h.node.self, HeaderSent: "+" + now}, HeaderSent},
		{Header{HeaderTo: h.node.self, HeaderSent: "-1"}, HeaderSent},
		{Header{HeaderTo: h.node.self, HeaderSent: "99999999999999999999"}, HeaderSent},
		{Header{HeaderTo: h.node.self, HeaderSent: now + ".5"}, HeaderSent},
		{Header{HeaderTo: "", HeaderSent: now}, HeaderTo},
		{Header{HeaderTo: strings.Repeat("a", maxDestinationBytes+1), HeaderSent: now}, HeaderTo},
	} {
		r := h.send(Request{Method: "GET", URL: "/timers/" + wire.FormatWireID(1, 0) + "?" + readQuery, Header: tc.hdr})
		if r.Status != 403 || !strings.Contains(r.Header.Get(wire.HeaderReason), tc.want) {
			t.Errorf("%v: got %d %q, want 403 naming %s", tc.hdr, r.Status, r.Header.Get(wire.HeaderReason), tc.want)
		}
	}
	if got := h.node.Stats().Forbidden; got != 7 {
		t.Errorf("Forbidden: got %d, want 7", got)
	}
}

// TestKeyRotation proves the three steps of docs/operations.md's
// rotation keep every pair of members talking: nodes that sign with the
// old key and accept the new one, nodes that sign with the new key and
// accept the old one, and nodes that know only the new one, in every
// mix one step leaves; a node that knows only the old key is refused by
// one that has dropped it.
func TestKeyRotation(t *testing.T) {
	const oldKey, newKey = testKey, "the-new-cluster-key-0123"
	phases := map[string][2]string{
		"before":  {oldKey, ""},
		"step 1":  {oldKey, newKey},
		"step 2":  {newKey, oldKey},
		"step 3":  {newKey, ""},
		"unknown": {"some-other-key-0123456789", ""},
	}
	for _, tc := range []struct {
		a, b string
		ok   bool
	}{
		{"before", "step 1", true}, {"step 1", "step 2", true}, {"step 2", "step 3", true},
		// Steps skipped: some member refuses another's signature.
		{"before", "step 2", false}, {"step 1", "step 3", false}, {"before", "step 3", false},
		{"unknown", "step 2", false},
	} {
		keys := map[string][2]string{three[0]: phases[tc.a], three[1]: phases[tc.b], three[2]: phases[tc.b]}
		c := newClusterWith(t, func(a string, cfg *Config) { cfg.ClusterKey, cfg.AcceptedKey = keys[a][0], keys[a][1] }, three...)
		everywhere := true
		for _, via := range three[:2] {
			r := c.client(via, "POST", "/timers", `{"timing":{"interval":5},"callback":{"http":{"uri":"`+cb+
				`"}},"reliability":{"replication-factor":3}}`)
			everywhere = everywhere && r.Status == 200 && len(c.holders(strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/"))) == 3
		}
		if everywhere != tc.ok {
			t.Errorf("%s with %s: creates through both held by all three replicas: %v, want %v", tc.a, tc.b, everywhere, tc.ok)
		}
	}
}

// TestInternalRequestsAreStampedWhenSent proves every internal request a
// node sends, through a run of creates, updates, pops, deletes, reads
// and a resync, is stamped with its destination and the sender's clock
// at the moment it is handed to the network, and signed: its age is
// bounded from then (senderNet checks each).
func TestInternalRequestsAreStampedWhenSent(t *testing.T) {
	c := keyed(t, three...)
	c.checkStamps = true
	var wires []string
	for i := range 6 {
		r := c.client(three[i%3], "POST", "/timers", timerJSON(5, 20, cb, "x"))
		wires = append(wires, strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/"))
	}
	c.advance(7*time.Second, 200)
	c.client(three[1], "GET", "/timers/"+wires[0], "")
	c.client(three[1], "DELETE", "/timers/"+wires[1], "")
	c.client(three[2], "PUT", "/timers/"+wires[2], `{"timing":{"interval":3},"callback":{"http":{"uri":"`+cb+`"}}}`)
	c.nodes[three[0]].Resync(true)
	c.settle()
	c.advance(30*time.Second, 200)
	if c.stamped == 0 {
		t.Fatal("no internal request was checked")
	}
}

// TestClientWriteDeadline proves a client write carrying a deadline is
// taken until it passes and refused with 408 after, counted; a malformed
// deadline is a 400 naming the header.
func TestClientWriteDeadline(t *testing.T) {
	h := newHarness(t)
	now := h.node.nowMs()
	for _, tc := range []struct {
		deadline string
		want     int
	}{
		{strconv.FormatInt(now, 10), 200},
		{strconv.FormatInt(now+1000, 10), 200},
		{strconv.FormatInt(now-1, 10), 408},
		{"0", 408},
		{"soon", 400},
		{"-5", 400},
	} {
		for _, req := range []Request{
			{Method: "POST", URL: "/timers", Body: []byte(timerJSON(10, 30, cb, "x"))},
			{Method: "PUT", URL: "/timers/" + wire.FormatWireID(1<<63|7, 0), Body: []byte(timerJSON(10, 30, cb, "x"))},
			{Method: "DELETE", URL: "/timers/" + wire.FormatWireID(1<<63|7, 0)},
		} {
			req.Header = Header{wire.HeaderDeadline: tc.deadline}
			var r Response
			h.node.Handle(req, func(got Response) { r = got })
			if r.Status != tc.want || r.Status != 200 && !strings.Contains(r.Header.Get(wire.HeaderReason), wire.HeaderDeadline) {
				t.Errorf("%s deadline %q: got %d %q, want %d naming %s", req.Method, tc.deadline, r.Status, r.Header.Get(wire.HeaderReason), tc.want, wire.HeaderDeadline)
			}
		}
	}
	if got := h.node.Stats().DeadlinePassed; got != 6 {
		t.Errorf("DeadlinePassed: got %d, want 6", got)
	}
}

// TestVersionsFarAheadAreRefused proves a peer's version dated more than
// twice MaxClockLead ahead of the node's clock is refused with 400, while
// one within the bound is taken.
func TestVersionsFarAheadAreRefused(t *testing.T) {
	h := newHarness(t)
	now := h.node.nowMs()
	for _, tc := range []struct {
		ahead  time.Duration
		status int
	}{{time.Second, 200}, {DefaultMaxClockLead, 200}, {2*DefaultMaxClockLead + time.Second, 400}, {100 * 365 * 24 * time.Hour, 400}} {
		g := newIDGen(1, 0)
		v, _ := g.next(now + tc.ahead.Milliseconds())
		rec := *withCallback(withParts(&Timer{ID: v, Version: v, Start: now, interval: sec(10 * time.Second), repeatFor: sec(10 * time.Second)}, &Placement{Replicas: []string{h.node.self}}, nil), cb, "")
		r := h.send(Request{Method: "PUT", URL: "/timers/" + wire.FormatWireID(v, 0), Header: Header{}, Body: EncodeReplication(&rec, now)})
		if r.Status != tc.status {
			t.Errorf("version %v ahead: got %d (%s), want %d", tc.ahead, r.Status, r.Body, tc.status)
		}
	}
}

// TestSignatureIsTheHMACOfTheRequest proves the signature is the hex
// HMAC-SHA256, under the key, of "method\ntarget\nsent\nto\nbody", as
// every node computes it, whether made into a node's scratch buffer or
// not, and whatever the buffer held before.
func TestSignatureIsTheHMACOfTheRequest(t *testing.T) {
	url := "http://10.0.0.2:7253/timers/0123?x=y"
	body := []byte(`{"timing":{"interval":5}}`)
	s := stamp{sent: 1767225600123, to: "10.0.0.2:7253"}
	mac := hmac.New(sha256.New, []byte(testKey))
	mac.Write([]byte("PUT\n/timers/0123?x=y\n1767225600123\n10.0.0.2:7253\n"))
	mac.Write(body)
	want := hex.EncodeToString(mac.Sum(nil))
	if got := signature(testKey, "PUT", url, s, body); got != want {
		t.Errorf("signature = %s, want %s", got, want)
	}
	keyed := hmac.New(sha256.New, []byte(testKey))
	for _, scratch := range [][]byte{nil, make([]byte, 3, 8), make([]byte, 0, 512)} {
		if got := string(appendSum(scratch, keyed, "PUT", url, s, body)[len(scratch):]); got != want {
			t.Errorf("appendSum on a buffer of len %d cap %d = %s, want %s", len(scratch), cap(scratch), got, want)
		}
	}
}

// TestReplayNeverResurrectsADeletedTimer is the zombie a late delivery
// made on a real network, and an attacker's replay (docs/operations.md,
// Security): a replication PUT captured as it was sent, delivered again
// after the timer was deleted, never brings the timer back. While the
// tombstone lives the replay meets it; once it has expired the replay is
// older than the message age bound and refused with 403. Sent to another
// member, it is refused as addressed elsewhere.
func TestReplayNeverResurrectsADeletedTimer(t *testing.T) {
	c := keyed(t, three...)
	var captured *sent
	c.watch = func(s *sent, to string, status int, lost bool) {
		if captured == nil && to != "" && s.req.Method == "PUT" {
			captured = s
		}
	}
	r := c.client(three[0], "POST", "/timers", `{"timing":{"interval":1,"repeat-for":2},"callback":{"http":{"uri":"`+cb+
		`","opaque":"x"}},"reliability":{"replication-factor":2}}`)
	wid := strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
	if captured == nil {
		t.Fatal("no replication PUT was sent")
	}
	c.watch = nil
	host, target := splitURL(captured.req.URL)
	replica, id := c.nodes[host], mustID(t, wid)
	if r := c.client(three[1], "DELETE", "/timers/"+wid, ""); r.Status != 200 {
		t.Fatalf("DELETE: got %d (%s)", r.Status, r.Body)
	}
	replay := func(to *Node) Response {
		req := captured.req
		req.URL, req.Remote = target, three[0]
		var got Response
		to.Handle(req, func(r Response) { got = r })
		return got
	}
	// While the tombstone lives, the replay meets it.
	c.advance(time.Second, 200)
	if got := replay(replica); got.Status == 200 {
		if held, _ := replica.Timer(id); held.State == Live {
			t.Fatalf("replayed 1 s after the delete: answered 200, and the replica holds the timer live again")
		}
	}
	// Once it has expired, the replay is refused as too old.
	const until = time.Minute
	waited := time.Second
	for ; waited < until; waited += time.Second {
		if _, ok := replica.Timer(id); !ok {
			break
		}
		c.advance(time.Second, 200)
	}
	if waited >= until {
		t.Fatalf("the tombstone outlived %v", until)
	}
	if got := replay(replica); got.Status != 403 || !strings.Contains(got.Header.Get(wire.HeaderReason), "replayed") {
		t.Errorf("replayed %v after the delete, tombstone expired: got %d %q, want 403 as late or replayed", waited, got.Status, got.Header.Get(wire.HeaderReason))
	}
	if _, ok := replica.Timer(id); ok {
		t.Errorf("replayed %v after the delete: the replica holds the timer again", waited)
	}
	for a, n := range c.nodes {
		if a != host {
			if got := replay(n); got.Status != 403 || !strings.Contains(got.Header.Get(wire.HeaderReason), "addressed to") {
				t.Errorf("replayed to %s: got %d %q, want 403 as addressed elsewhere", a, got.Status, got.Header.Get(wire.HeaderReason))
			}
		}
	}
}

// TestStampsAtTheEndsOfTimeAreRefused proves a send time far enough
// from now that its distance overflows a Duration is refused all the
// same, as dated ahead or sent long ago, and says so without a wrapped
// figure.
func TestStampsAtTheEndsOfTimeAreRefused(t *testing.T) {
	h := newHarness(t)
	url, body := ownRecord(h)
	for sent, want := range map[int64]string{math.MaxInt64: "ahead", 0: "replayed", h.node.nowMs() + 1<<62: "ahead"} {
		s := stamp{sent: sent, to: h.node.self}
		r := h.send(Request{Method: "PUT", URL: url, Header: stamped(s, HeaderSignature, signature(testKey, "PUT", url, s, body)), Body: body})
		if r.Status != 403 || !strings.Contains(r.Header.Get(wire.HeaderReason), want) || strings.Contains(r.Header.Get(wire.HeaderReason), "-") {
			t.Errorf("sent %d: %d %q, want 403 saying %q", sent, r.Status, r.Header.Get(wire.HeaderReason), want)
		}
	}
}

// TestStartIsRebuiltFromArrivalWhateverTheMessagesAge proves a replica
// rebuilds a start from a message's arrival plus its start-time-delta,
// however old the message's X-Chronos-Sent says it is (docs/design.md
// 4.13, scenarios/README.md C53): the sender's clock may run behind
// the receiver's, and the age the two clocks give is no transit. A
// message dated 5 s before the receiver's clock, taken within the age
// window, starts the copy at its arrival less the delta's 1 s, never
// earlier: a start corrected by the age beyond MaxClockSkew (mutation
// 96) is 3 s early, and a receiver whose clock ran 5 s ahead of the
// sender's pops 3 s early. The replica held no copy, so the probe of a
// copy from an aged message is hit; a fresh message does not hit it.
func TestStartIsRebuiltFromArrivalWhateverTheMessagesAge(t *testing.T) {
	for _, tc := range []struct {
		age   time.Duration
		probe bool
	}{
		{0, false},
		{DefaultMaxClockSkew, false},
		{5 * time.Second, true},
	} {
		h := newHarness(t)
		const id = 1 << 40
		now := h.node.nowMs()
		sent := now - tc.age.Milliseconds()
		// On the sender's clock the definition started 1 s before it
		// sent the message.
		rec := withCallback(withParts(&Timer{ID: id, Version: id, Start: sent - 1000, interval: sec(10 * time.Second), repeatFor: sec(30 * time.Second), RF: 1}, &Placement{Replicas: []string{h.node.self}}, nil), cb, "x")
		url, body := "/timers/"+wire.FormatWireID(id, 0), EncodeReplication(rec, sent)
		s := stamp{sent: sent, to: h.node.self}
		r := h.send(Request{Method: "PUT", URL: url, Header: stamped(s, HeaderSignature, signature(testKey, "PUT", url, s, body)), Body: body})
		if r.Status != 200 {
			t.Fatalf("sent %v ago: got %d (%s), want 200", tc.age, r.Status, r.Body)
		}
		held, ok := h.node.Timer(id)
		if want := h.node.startMs() - 1000; !ok || held.Start != want {
			t.Errorf("sent %v ago: held start %d, want %d (arrival less the delta's 1 s)", tc.age, held.Start, want)
		}
		if hit := h.node.probeHits[probeCopyFromAgedMessage] > 0; hit != tc.probe {
			t.Errorf("sent %v ago: probe %s hit %v, want %v", tc.age, probeNames[probeCopyFromAgedMessage], hit, tc.probe)
		}
	}
}
