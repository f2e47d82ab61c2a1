package wire

import (
	"fmt"
	"testing"

	"pgregory.net/rapid"
)

// TestWireIDRoundTrip proves FormatWireID and ParseWireID are inverse.
func TestWireIDRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		id, bloom := rapid.Uint64().Draw(t, "id"), rapid.Uint64().Draw(t, "bloom")
		if got, want := FormatWireID(id, bloom), fmt.Sprintf("%016x%016x", id, bloom); got != want {
			t.Fatalf("FormatWireID(%x, %x) = %q, want %q", id, bloom, got, want)
		}
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
