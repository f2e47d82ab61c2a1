package node

import (
	"encoding/binary"
	"math/bits"

	"github.com/dchest/siphash"
)

// idIndex finds a held timer by its ID: an open-addressing hash set of
// *Timer keyed by Timer.ID, linear probing, deletion by backward shift (no
// tombstones). It replaces a map[uint64]*Timer, which keeps the ID beside
// the pointer and a control byte a slot (about 35 bytes a timer at 1M,
// docs/design.md 5.1): a slot here is the pointer alone, 8 bytes. The
// table grows by half or by a third (its sizes are the powers of two and
// three times the powers of two, tableSizeAfter) once it would be more
// than 3/4 full, so it is between 1/2 and 3/4 full as it grows: 11 to 16
// bytes a timer, where doubling left it between 3/8 and 3/4 (11 to 21
// bytes, 17 at 1M where this takes 13). It is never iterated: lookups
// only, so no order reaches an output.
//
// A client may choose a timer's ID, so the hash is SipHash, keyed from
// the node's seed (Config.Seed: the operating system's randomness in
// production), as a Go map's hash is keyed: with a fixed hash, IDs
// chosen to share a home slot would make each lookup walk all of them
// (TestIDIndexResistsChosenIDs). The key changes only where a timer sits
// in the table, never what the index answers.
type idIndex struct {
	slots  []*Timer // len is 0 or a table size (tableSizeAfter)
	n      int      // timers held
	k0, k1 uint64   // the hash's key, set before the first timer
}

// minIndexSlots is the least table the index allocates.
const minIndexSlots = 16

// tableSizeAfter is the table size after size: a power of two grows by
// half, three times a power of two by a third, so that the table
// grows by half or a third and its sizes stay integers.
func tableSizeAfter(size int) int {
	if size&(size-1) == 0 {
		return size + size/2
	}
	return size + size/3
}

// tableSizeBefore is the table size before size, the least when size is.
func tableSizeBefore(size int) int {
	if size <= minIndexSlots {
		return minIndexSlots
	}
	if size&(size-1) == 0 {
		return size - size/4
	}
	return size - size/3
}

// keyed keys the index's hash from seed; it must be called while the
// index is empty.
func (x *idIndex) keyed(seed uint64) {
	if x.n != 0 {
		panic("node: idIndex keyed while it holds timers")
	}
	x.k0, x.k1 = seed, bits.RotateLeft64(seed, 32)^0x736f6d6570736575
	x.slots = nil
}

// home is the first slot of id: its keyed hash scaled to the table
// (the high word of hash times size, an even spread over any size).
func (x *idIndex) home(id uint64) int {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], id)
	hi, _ := bits.Mul64(siphash.Hash(x.k0, x.k1, b[:]), uint64(len(x.slots)))
	return int(hi)
}

// after is the slot after i, the first after the last.
func (x *idIndex) after(i int) int {
	if i++; i == len(x.slots) {
		return 0
	}
	return i
}

// walk is how far slot i is from slot home, going forward and round.
func (x *idIndex) walk(home, i int) int {
	if i < home {
		return i + len(x.slots) - home
	}
	return i - home
}

// len is the number of timers held.
func (x *idIndex) len() int { return x.n }

// get returns the timer held under id, or nil.
func (x *idIndex) get(id uint64) *Timer {
	if x.n == 0 {
		return nil
	}
	for i := x.home(id); ; i = x.after(i) {
		t := x.slots[i]
		if t == nil {
			return nil
		}
		if t.ID == id {
			return t
		}
	}
}

// set holds t under t.ID, and returns the timer it replaced, or nil.
func (x *idIndex) set(t *Timer) *Timer {
	if (x.n+1)*4 > len(x.slots)*3 {
		size := minIndexSlots
		if len(x.slots) > 0 {
			size = tableSizeAfter(len(x.slots))
		}
		x.resize(size)
	}
	for i := x.home(t.ID); ; i = x.after(i) {
		old := x.slots[i]
		if old == nil {
			x.slots[i] = t
			x.n++
			return nil
		}
		if old.ID == t.ID {
			x.slots[i] = t
			return old
		}
	}
}

// remove drops the timer held under id, and returns it, or nil.
func (x *idIndex) remove(id uint64) *Timer {
	if x.n == 0 {
		return nil
	}
	i := x.home(id)
	for ; ; i = x.after(i) {
		t := x.slots[i]
		if t == nil {
			return nil
		}
		if t.ID == id {
			break
		}
	}
	old := x.slots[i]
	// Backward shift: move each later timer of the run into the hole
	// when its home is not between the hole and it (cyclically), so
	// that every timer stays reachable from its home without a gap.
	for j := x.after(i); ; j = x.after(j) {
		t := x.slots[j]
		if t == nil {
			break
		}
		if x.walk(x.home(t.ID), j) >= x.walk(i, j) {
			x.slots[i] = t
			i = j
		}
	}
	x.slots[i] = nil
	x.n--
	if x.n*8 < len(x.slots) && len(x.slots) > minIndexSlots {
		x.resize(tableSizeBefore(len(x.slots)))
	}
	return old
}

// resize moves the timers into a table of size slots (a table size).
func (x *idIndex) resize(size int) {
	old := x.slots
	x.slots = make([]*Timer, size)
	for _, t := range old {
		if t == nil {
			continue
		}
		i := x.home(t.ID)
		for x.slots[i] != nil {
			i = x.after(i)
		}
		x.slots[i] = t
	}
}
