package node

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIDIndexModel checks idIndex against a map through random sets,
// replacements and removals, with IDs drawn from a small range and from
// multiples of a large power of two and
// from IDs whose high bits differ, so
// that runs of probes wrap and backward shifts cross the table's end; the
// table must grow and shrink through it.
func TestIDIndexModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	var x idIndex
	model := map[uint64]*Timer{}
	grew, shrank := 0, 0
	for step := range 200_000 {
		var id uint64
		switch rng.IntN(3) {
		case 0:
			id = rng.Uint64N(3000)
		case 1:
			id = rng.Uint64N(64) << 58
		default:
			id = rng.Uint64N(5000) * 0x1_0000_0001 // low and high bits
		}
		// Mostly sets in the first half, mostly removals in the second.
		setP := 7
		if step >= 100_000 {
			setP = 1
		}
		size := len(x.slots)
		if rng.IntN(10) < setP {
			tm := &Timer{ID: id}
			if got, want := x.set(tm), model[id]; got != want {
				t.Fatalf("step %d: set(%d) replaced %p, want %p", step, id, got, want)
			}
			model[id] = tm
		} else {
			if got, want := x.remove(id), model[id]; got != want {
				t.Fatalf("step %d: remove(%d) = %p, want %p", step, id, got, want)
			}
			delete(model, id)
		}
		switch {
		case len(x.slots) > size:
			grew++
		case len(x.slots) < size:
			shrank++
		}
		if x.len() != len(model) {
			t.Fatalf("step %d: len %d, want %d", step, x.len(), len(model))
		}
		if step%10_000 == 0 || step == 199_999 {
			for id, tm := range model {
				if x.get(id) != tm {
					t.Fatalf("step %d: get(%d) lost its timer", step, id)
				}
			}
			held := 0
			for _, tm := range x.slots {
				if tm != nil {
					held++
				}
			}
			if held != len(model) || (len(x.slots) > 0 && len(model)*4 > len(x.slots)*3) {
				t.Fatalf("step %d: %d slots hold %d timers, want %d and at most 3/4 full", step, len(x.slots), held, len(model))
			}
		}
		if x.get(id^1) != model[id^1] {
			t.Fatalf("step %d: get(%d) disagrees with the model", step, id^1)
		}
	}
	if grew == 0 || shrank == 0 {
		t.Fatalf("the table grew %d and shrank %d times; want both", grew, shrank)
	}
}

// TestIDIndexSize checks what the index is for: grown to any number of
// timers it is more than half full, at most 16 bytes a timer (a
// map[uint64]*Timer about 35), 13 at 1M (17 when it doubled).
func TestIDIndexSize(t *testing.T) {
	var x idIndex
	for i := range 1_000_000 {
		x.set(&Timer{ID: uint64(i + 1)})
		if n := x.len(); n > minIndexSlots/2 && n*2 <= len(x.slots) {
			t.Fatalf("%d slots for %d timers: half full or less", len(x.slots), n)
		}
	}
	if per := len(x.slots) * 8 / x.len(); per > 13 {
		t.Fatalf("%d slots for %d timers: %d bytes a timer, want at most 13", len(x.slots), x.len(), per)
	}
}

// TestIDIndexResistsChosenIDs: a client may choose its timers' IDs. IDs
// chosen so that a fixed multiplicative hash (Fibonacci hashing, as the
// index first had) sends them all to one home slot must spread over the
// table, or each lookup walks all of them: with 20,000 such IDs every
// probe run would be thousands of slots long.
func TestIDIndexResistsChosenIDs(t *testing.T) {
	var phi, phiInverse uint64 = 0x9e3779b97f4a7c15, 0xf1de83e19937733d
	require.Equal(t, uint64(1), phi*phiInverse)
	var x idIndex
	x.keyed(0x5eed)
	const n = 20_000
	for j := range uint64(n) {
		// id*phi is j: its high bits, any table's home, are all zero.
		x.set(&Timer{ID: j * phiInverse})
	}
	require.Equal(t, n, x.len())
	longest := 0
	for i, tm := range x.slots {
		if tm != nil {
			longest = max(longest, x.walk(x.home(tm.ID), i))
		}
	}
	assert.Less(t, longest, 200, "the longest walk from a home slot, of %d slots", len(x.slots))
}
