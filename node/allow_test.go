package node

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// TestCallbackHostList tabulates which callback URIs an allow-list lets
// through: names and IPs at any port, host:port pairs, IP prefixes, IPv6
// and IPv4-mapped forms, case-insensitively, and nothing else.
func TestCallbackHostList(t *testing.T) {
	p, err := NewCallbackPolicy([]string{"Callbacks.Example", "127.0.0.0/8", "sink.example:8080", "[::1]:9000", "::2"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		uri  string
		want bool
	}{
		{"http://callbacks.example/x", true},
		{"https://CALLBACKS.example:8443/x", true},
		{"http://127.0.0.1:9/x", true},
		{"http://127.255.1.2/x", true},
		{"http://[::ffff:127.0.0.1]/x", true},
		{"http://sink.example:8080/x", true},
		{"http://sink.example/x", false},
		{"http://sink.example:8081/x", false},
		{"http://[::1]:9000/", true},
		{"http://[::1]:9001/", false},
		{"http://[::2]:1/", true},
		{"http://128.0.0.1/x", false},
		{"http://callbacks.example.evil/x", false},
		{"http://evil/x", false},
	} {
		if got := p.CheckURI(tc.uri) == nil; got != tc.want {
			t.Errorf("%s: got %v, want %v", tc.uri, got, tc.want)
		}
	}
	for _, bad := range []string{"", "a/b", "user@host", "host:0", "host:70000"} {
		if _, err := parseHostList([]string{bad}); err == nil {
			t.Errorf("entry %q: accepted, want an error", bad)
		}
	}
}

// TestDisallowedCallbackIsRefusedWithoutSending proves a node with an
// allow-list refuses a timer whose callback names another host, with 400
// and the reason, on create and on update, and never sends anything to it;
// an allowed host works as before.
func TestDisallowedCallbackIsRefusedWithoutSending(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.CallbackHosts = []string{"127.0.0.1"} })
	for _, send := range []func(body string) Response{
		func(body string) Response { return h.do("POST", "/timers", body) },
		func(body string) Response { return h.do("PUT", "/timers/"+wire.FormatWireID(1, 0), body) },
	} {
		r := send(timerJSON(1, 1, "http://198.51.100.7/cb", "x"))
		if r.Status != 400 || !strings.Contains(r.Header.Get(wire.HeaderReason), "allowed callback hosts") {
			t.Errorf("disallowed host: got %d %q, want 400 naming the allowed callback hosts", r.Status, r.Header.Get(wire.HeaderReason))
		}
	}
	h.create(timerJSON(1, 1, "http://127.0.0.1:9/cb", "ok"))
	h.clock.advance(5 * time.Second)
	for _, s := range h.net.out {
		if !strings.HasPrefix(s.req.URL, "http://127.0.0.1:9/") {
			t.Errorf("sent %s %s: want only callbacks to the allowed host", s.req.Method, s.req.URL)
		}
	}
	if len(h.net.out) != 1 {
		t.Errorf("requests sent: got %d, want the allowed timer's one pop", len(h.net.out))
	}
}

// TestCallbackPolicyDefaults tabulates what the policy refuses whatever
// the list: link-local, unspecified and the node's own addresses, unless
// an entry names them (the address, that host:port, or a prefix inside
// the refused range; a blanket prefix does not), at the URI and, for
// addresses a name resolved to, at connect time (CheckAddr).
func TestCallbackPolicyDefaults(t *testing.T) {
	own := []string{"10.0.0.1:7253", "0.0.0.0:7300"}
	for _, tc := range []struct {
		allowed []string
		uri     string
		want    string // "" allowed, else a word of the reason
	}{
		{nil, "http://127.0.0.1:9/cb", ""},
		{nil, "http://10.1.2.3/cb", ""},
		{nil, "http://cb.example/cb", ""},
		{nil, "http://169.254.169.254/latest", "link-local"},
		{nil, "http://[fe80::1%25eth0]/", "link-local"},
		{nil, "http://0.0.0.0:80/", "unspecified"},
		{nil, "http://0.1.2.3/", "unspecified"},
		{nil, "http://[::]/", "unspecified"},
		{nil, "http://10.0.0.1:7253/timers", "own address"},
		{nil, "http://10.0.0.1:7254/timers", ""},
		{nil, "http://127.0.0.5:7300/timers", "own address"},
		{nil, "http://[::ffff:169.254.1.1]/", "link-local"},
		{[]string{"169.254.169.254"}, "http://169.254.169.254/latest", ""},
		{[]string{"169.254.0.0/16"}, "http://169.254.9.9/", ""},
		{[]string{"0.0.0.0/0"}, "http://169.254.169.254/", "link-local"},
		{[]string{"10.0.0.1:7253"}, "http://10.0.0.1:7253/timers", ""},
		{[]string{"10.0.0.0/8"}, "http://10.0.0.1:7253/timers", "own address"},
	} {
		p, err := NewCallbackPolicy(tc.allowed, own)
		if err != nil {
			t.Fatal(err)
		}
		err = p.CheckURI(tc.uri)
		if tc.want == "" && err != nil || tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("list %v, %s: %v, want %q", tc.allowed, tc.uri, err, tc.want)
		}
	}
	p, _ := NewCallbackPolicy(nil, own)
	for addr, refused := range map[string]bool{"169.254.169.254:80": true, "127.0.0.1:7300": true, "10.0.0.1:7253": true, "10.0.0.2:80": false, "[::ffff:0.0.0.0]:80": true} {
		if err := p.CheckAddr(netip.MustParseAddrPort(addr)); (err != nil) != refused {
			t.Errorf("CheckAddr(%s) = %v, want refused %v", addr, err, refused)
		}
	}
}

// TestReplicaRefusesAForbiddenCallback closes the allow-list's bypass
// through the internal API (docs/operations.md, Security): a
// replication PUT, signed by a peer with a looser list, of a timer whose
// callback this replica's list forbids is refused with 400, counted, and
// leaves nothing held; so is a resync page's record of one.
func TestReplicaRefusesAForbiddenCallback(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.CallbackHosts = []string{"127.0.0.1"} })
	const id = 1 << 40
	now := h.node.nowMs()
	rec := withCallback(withParts(&Timer{ID: id, Version: id, Start: now, interval: sec(10 * time.Second), repeatFor: sec(10 * time.Second), RF: 1}, &Placement{Replicas: []string{h.node.self}}, nil), "http://198.51.100.7/cb", "x")
	r := h.send(Request{Method: "PUT", URL: "/timers/" + wire.FormatWireID(id, 0), Body: EncodeReplication(rec, now)})
	if r.Status != 400 || !strings.Contains(r.Header.Get(wire.HeaderReason), "allowed callback hosts") {
		t.Errorf("replicated forbidden callback: %d %q, want 400 naming the allow-list", r.Status, r.Header.Get(wire.HeaderReason))
	}
	if _, held := h.node.Timer(id); held {
		t.Error("the replica holds the timer")
	}
	if a := h.node.apply(withCallback(withParts(&Timer{ID: id + 1, Version: id + 1, Start: now, interval: sec(10 * time.Second), repeatFor: sec(10 * time.Second), RF: 1}, &Placement{Replicas: []string{h.node.self}}, nil), "http://169.254.169.254/", "")); a.refusal == nil || a.refusal.Status != 400 {
		t.Errorf("a resync page's record with a link-local callback: %+v, want a 400 refusal", a)
	}
	if got := h.node.Stats().CallbacksRefused; got != 2 {
		t.Errorf("CallbacksRefused %d, want 2", got)
	}
}
