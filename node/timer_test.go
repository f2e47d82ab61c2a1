package node

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/chronos-timer/chronos/wire"
)

// TestTimerFitsItsSizeClass: a held record is one 96-byte allocation
// (docs/design.md 5.1); a field added to Timer takes padding or the
// place of another, or every held timer costs the next size class, 16
// bytes more.
func TestTimerFitsItsSizeClass(t *testing.T) {
	if size := unsafe.Sizeof(Timer{}); size > 96 {
		t.Fatalf("a Timer is %d bytes, want at most 96", size)
	}
}

// TestTimingKeptInSeconds proves a record gives back the timing it was
// built with, whole seconds up to wire.MaxTiming (ten years, past what
// milliseconds in 32 bits would hold), in seconds and in milliseconds.
func TestTimingKeptInSeconds(t *testing.T) {
	for _, d := range []time.Duration{0, time.Second, time.Hour, 49 * 24 * time.Hour, 50 * 24 * time.Hour, wire.MaxTiming} {
		var tm Timer
		tm.setTiming(d, wire.MaxTiming-d)
		if tm.Interval() != d || tm.RepeatFor() != wire.MaxTiming-d {
			t.Fatalf("timing (%v, %v): got (%v, %v)", d, wire.MaxTiming-d, tm.Interval(), tm.RepeatFor())
		}
	}
	tm := newTimer(1, 1, wire.Timer{URI: "http://h/", Interval: wire.MaxTiming, RepeatFor: wire.MaxTiming}, 0, 0, nil, 0, nil)
	if got, ok := tm.NextPopAt(); !ok || got != wire.MaxTiming.Milliseconds() {
		t.Fatalf("a ten-year timer's first pop: got %d, %t, want %d", got, ok, wire.MaxTiming.Milliseconds())
	}
}

// TestTimerPartsShared proves the records of one placement and one host
// share their parts (docs/design.md 5.1), with no extra parts or with
// the shared mark of a pop in flight; a record with extra parts of its
// own has parts of its own; a change to one record's parts leaves the
// others' as they were; the table stays within maxParts, and records
// keep their parts when it starts over.
func TestTimerPartsShared(t *testing.T) {
	in := newInterned()
	lists := &Placement{Replicas: []string{"a:1", "b:1"}}
	spec := wire.Timer{URI: "http://h/cb", Opaque: "x", Interval: time.Second}
	a := newTimer(1, 1, spec, 0, 0, lists, 7, in)
	b := newTimer(2, 2, spec, 0, 0, lists, 7, in)
	if a.parts == nil || a.parts != b.parts {
		t.Fatalf("records of one placement and host: parts %p and %p, want one shared", a.parts, b.parts)
	}
	a.setPopMarks(1, 0)
	b.setPopMarks(1, 0)
	if a.Extra() != &popInFlight || a.parts != b.parts {
		t.Fatalf("records with a pop in flight: extra %p, parts %p and %p, want popInFlight and one shared", a.Extra(), a.parts, b.parts)
	}
	b.setPopMarks(0, 0)
	if a.Extra() != &popInFlight || b.Extra() != nil || b.Placement() != a.Placement() || *b.host() != "http://h" {
		t.Fatalf("one record's mark cleared: extras %p and %p", a.Extra(), b.Extra())
	}
	tagged := spec
	tagged.Tags = []wire.Tag{{Type: "t", Count: 1}}
	c := newTimer(3, 3, tagged, 0, 0, lists, 7, in)
	d := newTimer(4, 4, tagged, 0, 0, lists, 7, in)
	if c.parts == d.parts || c.Placement() != b.Placement() || c.host() != b.host() {
		t.Fatalf("records with tags of their own: parts %p and %p, want two", c.parts, d.parts)
	}
	for i := range 3 * maxParts {
		newTimer(uint64(10+i), 1, spec, 0, 0, lists, uint64(100+i), in)
		if len(in.parts) > maxParts {
			t.Fatalf("after %d placements the table holds %d parts, want at most %d", i+1, len(in.parts), maxParts)
		}
	}
	if a.ViewID() != 7 || a.Extra() != &popInFlight || a.CallbackURI() != "http://h/cb" {
		t.Fatalf("a record changed when the table started over")
	}
}

// TestPlacementUnderViewShared proves the records of one placement under
// one view share one Placement, which says the view; a view of its own
// gives a record a placement of its own, with the same lists; the table
// stays within maxPlacements, and records keep their view when it starts
// over; a nil table shares nothing.
func TestPlacementUnderViewShared(t *testing.T) {
	in := newInterned()
	lists := &Placement{Replicas: []string{"a:1", "b:1"}, Sites: []string{"s"}}
	spec := wire.Timer{URI: "http://h/", Interval: time.Second}
	a := newTimer(1, 1, spec, 0, 0, lists, 7, in)
	b := newTimer(2, 2, spec, 0, 0, lists, 7, in)
	c := newTimer(3, 3, spec, 0, 0, lists, 8, in)
	if a.Placement() != b.Placement() || a.ViewID() != 7 || c.ViewID() != 8 || c.Placement() == a.Placement() {
		t.Fatalf("placements %p (view %d), %p (view %d), %p (view %d): want the first two shared, under 7, the third under 8",
			a.Placement(), a.ViewID(), b.Placement(), b.ViewID(), c.Placement(), c.ViewID())
	}
	if &c.Placement().Replicas[0] != &lists.Replicas[0] || &c.Placement().Sites[0] != &lists.Sites[0] {
		t.Fatalf("a placement under a view copied the interned lists")
	}
	if z := newTimer(4, 4, spec, 0, 0, lists, 0, in); z.Placement() != lists {
		t.Fatalf("placement under view 0: got %p, want the lists %p themselves", z.Placement(), lists)
	}
	for v := range uint64(3 * maxPlacements) {
		in.under(lists, 100+v)
		if len(in.placed) > maxPlacements {
			t.Fatalf("after %d views the table holds %d, want at most %d", v+1, len(in.placed), maxPlacements)
		}
	}
	if a.ViewID() != 7 || c.ViewID() != 8 {
		t.Fatalf("records changed when the table started over: views %d, %d", a.ViewID(), c.ViewID())
	}
	if x, y := newTimer(5, 5, spec, 0, 0, lists, 7, nil), newTimer(6, 6, spec, 0, 0, lists, 7, nil); x.Placement() == y.Placement() || x.ViewID() != 7 {
		t.Fatalf("records built with no table: placements %p, %p (view %d), want two under 7", x.Placement(), y.Placement(), x.ViewID())
	}
	// A copy that travels under another view gets a placement of its own.
	d := *a
	d.setViewID(9)
	if d.ViewID() != 9 || a.ViewID() != 7 || d.Placement() == a.Placement() || !slices.Equal(d.Placement().Replicas, a.Placement().Replicas) {
		t.Fatalf("copy under view 9: views %d and %d", d.ViewID(), a.ViewID())
	}
}

// withCallback sets t's callback, with no host sharing, for tests that
// build records by hand.
func withCallback(t *Timer, uri, opaque string) *Timer {
	t.setCallback(uri, opaque, nil)
	return t
}

// withParts gives t placement p and extra parts e (nil: none), not
// shared, and returns it: a record's placement and Extra are behind its
// parts, which a struct literal cannot name.
func withParts(t *Timer, p *Placement, e *TimerExtra) *Timer {
	k := t.key()
	k.placement, k.extra = p, e
	t.setKey(k, nil)
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
	hosts := newInterned()
	for _, uri := range uris {
		for _, opaque := range opaques {
			for _, table := range []*interned{nil, hosts} {
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
	in := newInterned()
	hosts := in.hosts
	a := newTimer(1, 1, wire.Timer{URI: "http://h:1/a", Opaque: "x"}, 0, 0, nil, 0, in)
	b := newTimer(2, 2, wire.Timer{URI: "http://h:1/b?c", Opaque: "y"}, 0, 0, nil, 0, in)
	if a.host() == nil || a.host() != b.host() {
		t.Fatalf("records of one host: hosts %p and %p, want one shared", a.host(), b.host())
	}
	c := newTimer(3, 3, wire.Timer{URI: "http://h:1/a"}, 0, 0, nil, 0, nil)
	if c.host() == a.host() {
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

// sec is d as a Timer keeps its timing: whole seconds.
func sec(d time.Duration) uint32 { return timingSeconds(d) }
