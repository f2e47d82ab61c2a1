package node

import (
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/wire"

	"pgregory.net/rapid"
)

// TestIDsNeverRepeat proves one node never issues the same ID twice and
// never issues a smaller one, even when its clock steps back or more than
// 4096 IDs are asked for in one millisecond.
func TestIDsNeverRepeat(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g := newIDGen(uint64(rapid.IntRange(0, MaxInstanceID).Draw(t, "instance")), DefaultMaxClockLead.Milliseconds())
		now := int64(idEpochMs) + rapid.Int64Range(0, 1<<40).Draw(t, "start")
		last, first := uint64(0), true
		steps := rapid.SliceOfN(rapid.Int64Range(-5000, 5000), 1, 300).Draw(t, "steps")
		for i, step := range steps {
			now += step
			burst := 1
			if i%50 == 0 {
				burst = 5000
			}
			for range burst {
				id, _ := g.next(now)
				if !first && id <= last {
					t.Fatalf("id %x after %x: not increasing", id, last)
				}
				last, first = id, false
			}
		}
	})
}

// TestGeneratorCannotBePoisoned proves that whatever a node is shown, by
// clients (IDs of any value in PUT and DELETE paths) or by peers
// (versions), and whatever its clock does, the IDs it issues stay unique
// and increasing, carry its instance number, never overflow, and are never
// dated more than MaxClockLead (plus the milliseconds bursts borrowed)
// ahead of the latest time its clock showed.
func TestGeneratorCannotBePoisoned(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lead := rapid.Int64Range(1, 120_000).Draw(t, "lead")
		instance := uint64(rapid.IntRange(0, MaxInstanceID).Draw(t, "instance"))
		g := newIDGen(instance, lead)
		now := int64(idEpochMs) + rapid.Int64Range(0, maxIDMs).Draw(t, "start")
		latest, issued, last := now, int64(0), uint64(0)
		steps := rapid.IntRange(1, 200).Draw(t, "steps")
		for range steps {
			switch rapid.IntRange(0, 4).Draw(t, "op") {
			case 0: // the clock jumps, either way
				now = max(now+rapid.Int64Range(-3_600_000, 3_600_000).Draw(t, "jump"), 0)
				latest = max(latest, now)
			case 1: // a client's ID or a peer's version, any value
				g.observe(rapid.Uint64().Draw(t, "seen"), now)
			case 2: // a value at the very top of the ID space
				g.observe(^uint64(0)-rapid.Uint64Range(0, 1<<20).Draw(t, "top"), now)
			default:
				for range rapid.IntRange(1, 5000).Draw(t, "burst") {
					id, ok := g.next(now)
					if !ok {
						if g.lastMs != maxIDMs {
							t.Fatalf("generator gave up at %d ms, before the end of the ID space", g.lastMs)
						}
						return
					}
					issued++
					if issued > 1 && id <= last {
						t.Fatalf("id %x after %x: not increasing", id, last)
					}
					if got := id >> seqBits & MaxInstanceID; got != instance {
						t.Fatalf("id %x carries instance %d, want %d", id, got, instance)
					}
					if limit := min(latest-idEpochMs+lead+issued>>seqBits+1, maxIDMs); idMs(id) > limit {
						t.Fatalf("id %x dated %d ms, past the bound %d", id, idMs(id), limit)
					}
					last = id
				}
			}
		}
	})
}

// TestObserveIsBounded tabulates what observing an outside value does to
// the next ID: a value within the lead moves the generator past it; one
// beyond it moves the generator only to the lead.
func TestObserveIsBounded(t *testing.T) {
	const lead = 60_000
	now := int64(idEpochMs) + 1_000_000
	at := func(ms int64) uint64 { return uint64(ms-idEpochMs) << (instanceBits + seqBits) }
	for _, tc := range []struct {
		name   string
		seen   uint64
		wantMs int64 // time field of the next ID, relative to now
	}{
		{"past value", at(now - 5000), 0},
		{"value just ahead", at(now + 5000), 5001},
		{"value at the lead", at(now + lead), lead + 1},
		{"value beyond the lead", at(now + 10*lead), lead + 1},
		{"top of the ID space", ^uint64(0), lead + 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := newIDGen(5, lead)
			g.observe(tc.seen, now)
			id, _ := g.next(now)
			if got := idMs(id) - (now - idEpochMs); got != tc.wantMs {
				t.Errorf("next ID dated now%+d ms, want now%+d", got, tc.wantMs)
			}
		})
	}
}

// TestObserveIDIgnoresIDsNoNodeIssued shows that a timer ID dated beyond
// the lead, which no node issues, leaves the version clock where it is,
// while one within the lead is observed as a version is.
func TestObserveIDIgnoresIDsNoNodeIssued(t *testing.T) {
	const lead = 60_000
	now := int64(idEpochMs) + 1_000_000
	at := func(ms int64) uint64 { return uint64(ms-idEpochMs) << (instanceBits + seqBits) }
	for _, tc := range []struct {
		seen   uint64
		wantMs int64 // time field of the next ID, relative to now
	}{
		{at(now - 5000), 0},
		{at(now + 5000), 5001},
		{at(now + lead), lead + 1},
		{at(now + lead + 1), 0},
		{1 << 63, 0},
		{^uint64(0), 0},
	} {
		g := newIDGen(5, lead)
		g.observeID(tc.seen, now)
		id, _ := g.next(now)
		if got := idMs(id) - (now - idEpochMs); got != tc.wantMs {
			t.Errorf("after observing ID %016x: next ID dated now%+d ms, want now%+d", tc.seen, got, tc.wantMs)
		}
	}
}

// TestClientIDAtTopOfRangeCannotPoisonTheNode proves the reported bug is
// gone: a PUT to ffff...ffff used to drag the generator to the top of its
// range, so later IDs wrapped to small numbers and timers created earlier
// could no longer be deleted (503). Now it is an ordinary client-chosen
// timer, and the node goes on issuing IDs near its clock.
func TestClientIDAtTopOfRangeCannotPoisonTheNode(t *testing.T) {
	h := newHarness(t)
	before := h.create(timerJSON(60, 60, cb, "before"))
	top := wire.FormatWireID(^uint64(0), ^uint64(0))
	if r := h.do("PUT", "/timers/"+top, timerJSON(60, 60, cb, "top")); r.Status != 200 {
		t.Fatalf("PUT %s: got %d (%s), want 200", top, r.Status, r.Body)
	}
	after := h.create(timerJSON(60, 60, cb, "after"))
	idBefore, idAfter := mustID(t, before), mustID(t, after)
	if idAfter <= idBefore || IDTime(idAfter)-h.node.nowMs() > 1 {
		t.Fatalf("ID after the PUT: got %016x (dated %d ms ahead), want above %016x and dated now",
			idAfter, IDTime(idAfter)-h.node.nowMs(), idBefore)
	}
	for _, wid := range []string{before, after, top} {
		if r := h.do("DELETE", "/timers/"+wid, ""); r.Status != 200 {
			t.Errorf("DELETE %s: got %d (%s), want 200", wid, r.Status, r.Body)
		}
	}
	h.clock.advance(2 * time.Minute)
	if got := h.pops(cb, 200); len(got) != 0 {
		t.Errorf("pops after deleting every timer: got %v, want none", seqs(got))
	}
}

// TestIDLayout proves the ID carries its issue time and instance number.
func TestIDLayout(t *testing.T) {
	g := newIDGen(1023, DefaultMaxClockLead.Milliseconds())
	now := int64(idEpochMs) + 123456789
	id, _ := g.next(now)
	if got := IDTime(id); got != now {
		t.Errorf("IDTime: got %d, want %d", got, now)
	}
	if got := id >> seqBits & MaxInstanceID; got != 1023 {
		t.Errorf("instance: got %d, want 1023", got)
	}
}

// TestObserveOrdersLaterVersions proves a version issued after observing
// another node's ID orders after it, whatever the local clock says.
func TestObserveOrdersLaterVersions(t *testing.T) {
	lead := DefaultMaxClockLead.Milliseconds()
	a, b := newIDGen(1, lead), newIDGen(2, lead)
	seen, _ := a.next(idEpochMs + 10_000)
	b.observe(seen, idEpochMs+5_000)
	if got, _ := b.next(idEpochMs + 5_000); got <= seen {
		t.Errorf("version after observe: got %x, want above %x", got, seen)
	}
}

// TestClockSteppedBackIssuesNoVersionBeyondTheLead: a node whose clock
// was stepped back further than MaxClockLead behind the IDs it issued
// refuses writes with 503 until the clock catches up, rather than date
// an ID or version beyond what its peers take or can ever supersede
// (scenarios/n21-clock-step-lead.scenario), an update or delete as a
// create; within the lead it goes on.
func TestClockSteppedBackIssuesNoVersionBeyondTheLead(t *testing.T) {
	h := newHarness(t)
	lead := DefaultConfig().MaxClockLead
	wid := h.create(timerJSON(60, 60, cb, "before"))
	h.clock.now = h.clock.now.Add(-lead / 2)
	if r := h.do("POST", "/timers", timerJSON(60, 60, cb, "within")); r.Status != 200 {
		t.Fatalf("clock stepped back within the lead: %d %s, want 200", r.Status, r.Body)
	}
	h.clock.now = h.clock.now.Add(-2 * lead)
	for _, w := range []struct{ method, url, body string }{
		{"POST", "/timers", timerJSON(60, 60, cb, "behind")},
		{"PUT", "/timers/" + wid, timerJSON(60, 60, cb, "behind")},
		{"DELETE", "/timers/" + wid, ""},
	} {
		if r := h.do(w.method, w.url, w.body); r.Status != 503 || !strings.Contains(string(r.Body), "stepped back") {
			t.Fatalf("%s %s, clock stepped back past the lead: %d %s, want 503 naming the step", w.method, w.url, r.Status, r.Body)
		}
	}
	if held, _ := h.node.Timer(mustID(t, wid)); held.State != Live || held.Opaque() != "before" {
		t.Fatalf("the timer after refused writes: state %v, opaque %q; want it live as created", held.State, held.Opaque())
	}
	h.clock.now = h.clock.now.Add(2 * lead)
	if r := h.do("POST", "/timers", timerJSON(60, 60, cb, "caught up")); r.Status != 200 {
		t.Fatalf("clock caught up: %d %s, want 200", r.Status, r.Body)
	}
}

// TestWritesPastTheEndOfTheIDSpaceAreRefused: a node whose clock is past
// the end of the ID space (2159), once it has issued every ID of its last
// millisecond, refuses writes with 503 rather than issue an ID that
// orders before one it issued.
func TestWritesPastTheEndOfTheIDSpaceAreRefused(t *testing.T) {
	h := newHarness(t)
	h.clock.now = time.UnixMilli(idEpochMs + maxIDMs + 1000)
	h.node.ids.lastMs, h.node.ids.seq = maxIDMs, 1<<seqBits-2
	h.create(timerJSON(60, 60, cb, "last"))
	if r := h.do("POST", "/timers", timerJSON(60, 60, cb, "past")); r.Status != 503 || !strings.Contains(string(r.Body), errIDSpaceEnded) {
		t.Fatalf("create past the end of the ID space: %d %s, want 503 naming it", r.Status, r.Body)
	}
}
