package node

import (
	"testing"

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

// TestWireIDRoundTrip proves FormatWireID and ParseWireID are inverse.
func TestWireIDRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		id, bloom := rapid.Uint64().Draw(t, "id"), rapid.Uint64().Draw(t, "bloom")
		gotID, gotBloom, err := ParseWireID(FormatWireID(id, bloom))
		if err != nil || gotID != id || gotBloom != bloom {
			t.Fatalf("round trip of %x %x: got %x %x %v", id, bloom, gotID, gotBloom, err)
		}
	})
}

// FuzzParseWireID proves the ID parser never panics, accepts only 32 hex
// digits, and round-trips what it accepts.
func FuzzParseWireID(f *testing.F) {
	f.Add("0000000000000001ffffffffffffffff")
	f.Add("0x00000000000001ffffffffffffffff")
	f.Add("+000000000000001ffffffffffffffff")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		id, bloom, err := ParseWireID(s)
		if err != nil {
			return
		}
		if len(s) != 32 || !isHex(s) {
			t.Fatalf("accepted %q", s)
		}
		if again, _, _ := ParseWireID(FormatWireID(id, bloom)); again != id {
			t.Fatalf("round trip of %q: got %x, want %x", s, again, id)
		}
	})
}
