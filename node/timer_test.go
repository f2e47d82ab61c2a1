package node

import (
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/chronos-timer/chronos/wire"
)

// TestTimerIsOneSizeClass: a held record is one 128-byte allocation
// (docs/design.md 5.1); a field added to Timer takes padding or the
// place of another, or every held timer costs the next size class, 16
// bytes more.
func TestTimerIsOneSizeClass(t *testing.T) {
	if size := unsafe.Sizeof(Timer{}); size > 128 {
		t.Fatalf("a Timer is %d bytes, want at most 128", size)
	}
}

// withCallback sets t's callback, with no host sharing, for tests that
// build records by hand.
func withCallback(t *Timer, uri, opaque string) *Timer {
	t.setCallback(uri, opaque, nil)
	return t
}

// TestCallbackRoundTrip proves a record gives back exactly the callback URI
// and opaque data it was built with, whatever the URI's shape and the
// parts' lengths (the length prefix of one, two and three bytes), with its
// host shared or not.
func TestCallbackRoundTrip(t *testing.T) {
	long := strings.Repeat("p", 200)
	longer := strings.Repeat("q", 20000)
	uris := []string{
		"", "http://a", "http://a/", "http://127.0.0.1:9999/cb/17", "https://h:1?x=/y", "http://h#frag",
		"http://user@h:8/p/q?r#s", "no-scheme/path", "http:///empty-host", "http://h/" + long, "http://h/" + longer,
		"http://ü.example/é",
	}
	opaques := []string{"", "op", "\x00\xff binary", "é" + long, longer}
	hosts := hostTable{}
	for _, uri := range uris {
		for _, opaque := range opaques {
			for _, table := range []hostTable{nil, hosts} {
				var tm Timer
				tm.setCallback(uri, opaque, table)
				if got := tm.CallbackURI(); got != uri {
					t.Fatalf("CallbackURI of (%.40q, %.40q): got %.40q", uri, opaque, got)
				}
				if got := tm.Opaque(); got != opaque {
					t.Fatalf("Opaque of (%.40q, %.40q): got %.40q", uri, opaque, got)
				}
			}
		}
	}
	var empty Timer
	if empty.CallbackURI() != "" || empty.Opaque() != "" {
		t.Fatalf("zero Timer: got (%q, %q), want empty", empty.CallbackURI(), empty.Opaque())
	}
}

// TestCallbackHostsShared proves records calling one host share one copy
// of it, a nil table shares nothing, and the table stays within
// maxCallbackHosts however many hosts it meets, starting over when full.
func TestCallbackHostsShared(t *testing.T) {
	hosts := hostTable{}
	a := newTimer(1, 1, wire.Timer{URI: "http://h:1/a", Opaque: "x"}, 0, 0, nil, 0, hosts)
	b := newTimer(2, 2, wire.Timer{URI: "http://h:1/b?c", Opaque: "y"}, 0, 0, nil, 0, hosts)
	if a.host == nil || a.host != b.host {
		t.Fatalf("records of one host: hosts %p and %p, want one shared", a.host, b.host)
	}
	c := newTimer(3, 3, wire.Timer{URI: "http://h:1/a"}, 0, 0, nil, 0, nil)
	if c.host == a.host {
		t.Fatalf("record built with no table shares the table's host")
	}
	for i := range 3 * maxCallbackHosts {
		hosts.intern("http://h" + strconv.Itoa(i))
		if len(hosts) > maxCallbackHosts {
			t.Fatalf("after %d hosts the table holds %d, want at most %d", i+1, len(hosts), maxCallbackHosts)
		}
	}
	if a.CallbackURI() != "http://h:1/a" || b.CallbackURI() != "http://h:1/b?c" {
		t.Fatalf("records changed when the table started over: %q, %q", a.CallbackURI(), b.CallbackURI())
	}
}
