package node

import (
	"strings"
	"testing"
	"time"
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
		func(body string) Response { return h.do("PUT", "/timers/"+FormatWireID(1, 0), body) },
	} {
		r := send(timerJSON(1, 1, "http://198.51.100.7/cb", "x"))
		if r.Status != 400 || !strings.Contains(r.Header.Get(HeaderReason), "allowed callback hosts") {
			t.Errorf("disallowed host: got %d %q, want 400 naming the allowed callback hosts", r.Status, r.Header.Get(HeaderReason))
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
