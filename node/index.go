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
// docs/design.md 5.1): a slot here is the pointer alone, 8 bytes, and the
// table is kept between 3/8 and 3/4 full, so 11 to 21 bytes a timer. It is
// never iterated: lookups only, so no order reaches an output.
//
// A client may choose a timer's ID, so the hash is SipHash, keyed from
// the node's seed (Config.Seed: the operating system's randomness in
// production), as a Go map's hash is keyed: with a fixed hash, IDs
// chosen to share a home slot would make each lookup walk all of them
// (TestIDIndexResistsChosenIDs). The key changes only where a timer sits
// in the table, never what the index answers.
type idIndex struct {
	slots  []*Timer // len is 0 or a power of two
	n      int      // timers held
	shift  uint     // 64 - log2(len(slots))
	k0, k1 uint64   // the hash's key, set before the first timer
}

// minIndexSlots is the least table the index allocates.
const minIndexSlots = 16

// keyed keys the index's hash from seed; it must be called while the
// index is empty.
func (x *idIndex) keyed(seed uint64) {
	if x.n != 0 {
		panic("node: idIndex keyed while it holds timers")
	}
	x.k0, x.k1 = seed, bits.RotateLeft64(seed, 32)^0x736f6d6570736575
	x.slots = nil
}

// home is the first slot of id: the high bits of its keyed hash.
func (x *idIndex) home(id uint64) uint64 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], id)
	return siphash.Hash(x.k0, x.k1, b[:]) >> x.shift
}

// len is the number of timers held.
func (x *idIndex) len() int { return x.n }

// get returns the timer held under id, or nil.
func (x *idIndex) get(id uint64) *Timer {
	if x.n == 0 {
		return nil
	}
	mask := uint64(len(x.slots) - 1)
	for i := x.home(id); ; i = (i + 1) & mask {
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
		x.resize(max(2*len(x.slots), minIndexSlots))
	}
	mask := uint64(len(x.slots) - 1)
	for i := x.home(t.ID); ; i = (i + 1) & mask {
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
	mask := uint64(len(x.slots) - 1)
	i := x.home(id)
	for ; ; i = (i + 1) & mask {
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
	for j := (i + 1) & mask; ; j = (j + 1) & mask {
		t := x.slots[j]
		if t == nil {
			break
		}
		if (j-x.home(t.ID))&mask >= (j-i)&mask {
			x.slots[i] = t
			i = j
		}
	}
	x.slots[i] = nil
	x.n--
	if x.n*8 < len(x.slots) && len(x.slots) > minIndexSlots {
		x.resize(len(x.slots) / 2)
	}
	return old
}

// resize moves the timers into a table of size slots (a power of two).
func (x *idIndex) resize(size int) {
	old := x.slots
	x.slots = make([]*Timer, size)
	x.shift = uint(64 - bits.TrailingZeros(uint(size)))
	mask := uint64(size - 1)
	for _, t := range old {
		if t == nil {
			continue
		}
		i := x.home(t.ID)
		for x.slots[i] != nil {
			i = (i + 1) & mask
		}
		x.slots[i] = t
	}
}
