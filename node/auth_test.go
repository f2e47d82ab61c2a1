package node

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"testing"
	"time"
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
	wire := strings.TrimPrefix(r.Header.Get(HeaderLocation), "/timers/")
	if h := c.holders(wire); len(h) != 3 {
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
	wire := h.create(timerJSON(10, 30, cb, "real"))
	id := mustID(t, wire)
	held, _ := h.node.Timer(id)
	forge := func(mutate func(*Timer)) []byte {
		f := held
		f.Placement = &Placement{Replicas: []string{h.node.self}}
		mutate(&f)
		return EncodeReplication(&f, h.node.nowMs())
	}
	bodies := map[string][]byte{
		"redirect":  forge(func(f *Timer) { f.Version++; f.setCallback("http://127.0.0.1:1/evil", "evil", nil) }),
		"notice":    forge(func(f *Timer) { f.Seq = 2 }),
		"tombstone": forge(func(f *Timer) { f.entomb() }),
	}
	url := "/timers/" + wire
	signs := map[string]func(body []byte) string{
		"unsigned":   func([]byte) string { return "" },
		"other key":  func(b []byte) string { return signature("another-key-of-16-bytes", "PUT", url, b) },
		"other body": func([]byte) string { return signature(testKey, "PUT", url, []byte("{}")) },
	}
	for what, body := range bodies {
		for how, sign := range signs {
			r := h.send(Request{Method: "PUT", URL: url, Header: Header{HeaderSignature: sign(body)}, Body: body})
			if r.Status != 403 || !strings.Contains(r.Header.Get(HeaderReason), HeaderSignature) {
				t.Errorf("%s, %s: got %d %q, want 403 naming %s", what, how, r.Status, r.Header.Get(HeaderReason), HeaderSignature)
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
	if r := h.send(Request{Method: "PUT", URL: url, Header: Header{HeaderSignature: signature(testKey, "PUT", url, body)}, Body: body}); r.Status != 200 {
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
	if r.Status != 503 || !strings.Contains(r.Header.Get(HeaderReason), "403") {
		t.Fatalf("create: got %d %q, want 503 with the replicas' 403", r.Status, r.Header.Get(HeaderReason))
	}
}

// TestOpenInternalAPIWithoutKey proves the documented default: a node
// without a key takes unsigned internal requests (a lone node or a
// loopback-only cluster).
func TestOpenInternalAPIWithoutKey(t *testing.T) {
	h := newHarness(t)
	wire := h.create(timerJSON(10, 30, cb, "real"))
	held, _ := h.node.Timer(mustID(t, wire))
	held.Seq = 1
	r := h.send(Request{Method: "PUT", URL: "/timers/" + wire, Header: Header{}, Body: EncodeReplication(&held, h.node.nowMs())})
	if r.Status != 200 {
		t.Fatalf("unsigned notice without a key: got %d (%s), want 200", r.Status, r.Body)
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
		rec := *withCallback(&Timer{ID: v, Version: v, Start: now, Interval: 10_000, RepeatFor: 10_000,
			Placement: &Placement{Replicas: []string{h.node.self}}}, cb, "")
		r := h.send(Request{Method: "PUT", URL: "/timers/" + FormatWireID(v, 0), Header: Header{}, Body: EncodeReplication(&rec, now)})
		if r.Status != tc.status {
			t.Errorf("version %v ahead: got %d (%s), want %d", tc.ahead, r.Status, r.Body, tc.status)
		}
	}
}

// TestSignatureIsTheHMACOfTheRequest proves the signature is the hex
// HMAC-SHA256, under the key, of "method\ntarget\nbody", as every node of
// every version computes it, whether made into a node's scratch buffer
// or not, and whatever the buffer held before.
func TestSignatureIsTheHMACOfTheRequest(t *testing.T) {
	url := "http://10.0.0.2:7253/timers/0123?x=y"
	body := []byte(`{"timing":{"interval":5}}`)
	mac := hmac.New(sha256.New, []byte(testKey))
	mac.Write([]byte("PUT\n/timers/0123?x=y\n"))
	mac.Write(body)
	want := hex.EncodeToString(mac.Sum(nil))
	if got := signature(testKey, "PUT", url, body); got != want {
		t.Errorf("signature = %s, want %s", got, want)
	}
	keyed := hmac.New(sha256.New, []byte(testKey))
	for _, scratch := range [][]byte{nil, make([]byte, 3, 8), make([]byte, 0, 512)} {
		if got := string(appendSum(scratch, keyed, "PUT", url, body)[len(scratch):]); got != want {
			t.Errorf("appendSum on a buffer of len %d cap %d = %s, want %s", len(scratch), cap(scratch), got, want)
		}
	}
}
