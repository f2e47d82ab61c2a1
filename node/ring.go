package node

import (
	"encoding/binary"
	"fmt"
	"math/bits"
	"slices"

	"github.com/twmb/murmur3"
)

// Rendezvous hashing (the original hashing.md, docs/design.md 4.3) and the replica bloom
// filter carried in every wire timer ID (the original technical introduction,
// docs/design.md 4.1).
//
// Every node must place every timer identically, so nothing here depends on
// anything but the configured member list and the timer's unique ID: no map
// order, no randomness, no state that changes after NewRing.

// BloomHashes is the number of bits (hash functions) each address sets in a
// 64-bit replica bloom filter.
//
// With m = 64 bits, k = 4 and n replicas in a filter, a member that is not a
// replica matches it with probability about (1 - e^(-k*n/m))^k:
//
//	n = 1:  1.4e-5      n = 2:  1.9e-4      n = 3:  8.6e-4
//	n = 16: 0.16 (MaxReplicationFactor)
//
// k = 4 is near the optimum (m/n * ln 2) for the usual two or three replicas
// while still leaving a usable filter at the maximum replication factor. A
// false positive only costs one superfluous replication message: the member
// sees it is not a replica and drops the timer.
const BloomHashes = 4

// bloomSeeds seed the BloomHashes murmur3 hashes of an address. They differ
// from the seed 0 of the server hash, so that a member's filter bits are
// independent of its rendezvous seed.
var bloomSeeds = [BloomHashes]uint32{0x9e3779b9, 0x85ebca6b, 0xc2b2ae35, 0x27d4eb2f}

// maxStackMembers is the cluster size up to which Replicas scores members in
// stack buffers; larger clusters cost one scratch allocation per call.
const maxStackMembers = 64

// Ring places timers on the members of one cluster view. It is immutable
// once built, so one Ring may be shared by every timer placed under the same
// view.
type Ring struct {
	// members is the configured list, in configured order; the order only
	// matters for breaking hash clashes (the earlier member wins).
	members []string
	// hashes are the members' rendezvous seeds, clashes already resolved.
	hashes []uint32
	// bits are the bloom filter bits of each member (BloomBits).
	bits []uint64
	// index finds a member's position from its address.
	index map[string]int
	view  uint64
}

// NewRing returns the ring of members, given in configured order. A member's
// server hash is the murmur3 hash (x86, 32-bit, seed 0) of its address
// string; when two clash, the later member's hash is incremented until it is
// unique. It panics if members is empty or holds a duplicate, because
// configuration validation rules both out before any ring is built.
func NewRing(members []string) *Ring {
	raw := make([]uint32, len(members))
	for i, m := range members {
		raw[i] = murmur3.SeedStringSum32(0, m)
	}
	return newRing(members, raw)
}

// newRing builds a ring from precomputed raw server hashes, so that tests can
// inject the clashes that real addresses never produce.
func newRing(members []string, raw []uint32) *Ring {
	if len(members) == 0 {
		panic("node: ring with no members")
	}
	r := &Ring{
		members: slices.Clone(members),
		hashes:  slices.Clone(raw),
		bits:    make([]uint64, len(members)),
		index:   make(map[string]int, len(members)),
	}
	for i, m := range r.members {
		if j, dup := r.index[m]; dup {
			panic(fmt.Sprintf("node: ring member %q at positions %d and %d", m, j, i))
		}
		r.index[m] = i
		r.bits[i] = BloomBits(m)
	}
	resolveClashes(r.hashes)
	r.view = viewID(r.members)
	return r
}

// Members returns a copy of the members in configured order.
func (r *Ring) Members() []string { return slices.Clone(r.members) }

// ViewID identifies the membership: every node configured with the same set
// of members computes the same ID, whatever order it lists them in.
func (r *Ring) ViewID() uint64 { return r.view }

// viewID hashes the sorted, length-prefixed member list. The length prefix
// keeps {"a", "bc"} and {"ab", "c"} apart.
func viewID(members []string) uint64 {
	sorted := slices.Clone(members)
	slices.Sort(sorted)
	var buf []byte
	for _, m := range sorted {
		buf = binary.LittleEndian.AppendUint32(buf, uint32(len(m)))
		buf = append(buf, m...)
	}
	return murmur3.Sum64(buf)
}

// Replicas returns the members holding timer id, primary first, then the
// backups in rank order. The primary is the member with the lowest score;
// the backups follow from the highest score down, so that adding or removing
// one member never turns a primary into a backup while the cluster is larger
// than n (the original hashing.md; on smaller clusters every member is a replica).
//
// n is the replication factor. It is capped at the number of members, and
// n < 1 is treated as 1: every timer has a primary.
func (r *Ring) Replicas(id uint64, n int) []string {
	return r.AppendReplicas(make([]string, 0, r.clamp(n)), id, n)
}

// AppendReplicas appends Replicas(id, n) to dst and returns the extended
// slice. With room in dst and at most maxStackMembers members it does not
// allocate, for the per-request hot path.
func (r *Ring) AppendReplicas(dst []string, id uint64, n int) []string {
	var buf [maxStackMembers]uint32
	scores := buf[:0]
	if len(r.members) > maxStackMembers {
		scores = make([]uint32, 0, len(r.members))
	}
	var le [8]byte
	binary.LittleEndian.PutUint64(le[:], id)
	for _, h := range r.hashes {
		scores = append(scores, murmur3.SeedSum32(h, le[:]))
	}
	return r.appendRanked(dst, scores, n)
}

// appendRanked appends the members chosen by their timer scores (one per
// member, in configured order; clobbered) to dst: the lowest, then from the
// highest down. Selection scans the scores once per replica instead of
// sorting them, since n is small: two or three scans in the usual case.
func (r *Ring) appendRanked(dst []string, scores []uint32, n int) []string {
	n = r.clamp(n)
	if hasClash(scores) {
		resolveClashes(scores)
	}
	lo, hi := 0, 0
	for i, s := range scores {
		if s < scores[lo] {
			lo = i
		}
		if s > scores[hi] {
			hi = i
		}
	}
	dst = append(dst, r.members[lo])
	// Scores are unique now and n <= len(scores), so each scan finds a
	// member and none of them is the primary.
	for k := 1; k < n; k++ {
		if k > 1 {
			hi = highestBelow(scores, scores[hi])
		}
		dst = append(dst, r.members[hi])
	}
	return dst
}

// highestBelow returns the index of the highest score below bound; one must
// exist.
func highestBelow(scores []uint32, bound uint32) int {
	best := -1
	for i, s := range scores {
		if s < bound && (best < 0 || s > scores[best]) {
			best = i
		}
	}
	return best
}

func (r *Ring) clamp(n int) int {
	return max(1, min(n, len(r.members)))
}

// hasClash reports whether two scores are equal, using an open-addressing
// set of at least twice as many slots as scores, so that the common
// clash-free case costs one probe or so per member.
func hasClash(scores []uint32) bool {
	size := 2 * maxStackMembers
	for size < 2*len(scores) {
		size *= 2
	}
	var slotBuf [2 * maxStackMembers]uint32
	var usedBuf [2 * maxStackMembers / 64]uint64
	slots, used := slotBuf[:], usedBuf[:]
	if size > len(slotBuf) {
		slots, used = make([]uint32, size), make([]uint64, size/64)
	}
	shift := 32 - bits.TrailingZeros(uint(size))
	for _, s := range scores {
		// Fibonacci hashing: scores injected by tests are small numbers,
		// and real ones are already uniform.
		i := int((s * 0x9e3779b1) >> shift)
		for used[i/64]&(1<<(i%64)) != 0 {
			if slots[i] == s {
				return true
			}
			i = (i + 1) & (size - 1)
		}
		slots[i] = s
		used[i/64] |= 1 << (i % 64)
	}
	return false
}

// resolveClashes makes the values unique as the original hashing.md requires: walking
// in configured order, a value equal to an earlier one is incremented (with
// uint32 wrap-around) until it is unique, so the earlier member keeps its
// value. It is quadratic, which is fine: server hashes are resolved once per
// ring, and timer scores only when a clash has been seen.
func resolveClashes(v []uint32) {
	for i := 1; i < len(v); i++ {
		for slices.Contains(v[:i], v[i]) {
			v[i]++
		}
	}
}

// BloomBits returns the bits addr sets in a replica bloom filter: bit
// (h >> 26) for each of the BloomHashes murmur3 hashes h of addr. Two hashes
// may pick the same bit, so an address sets between 1 and BloomHashes bits.
func BloomBits(addr string) uint64 {
	var set uint64
	for _, seed := range bloomSeeds {
		set |= 1 << (murmur3.SeedStringSum32(seed, addr) >> 26)
	}
	return set
}

// Bloom returns the bloom filter of the replica addresses: the union of
// their BloomBits. Members' bits are precomputed; an address outside the
// ring (a replica under an older view) is hashed.
func (r *Ring) Bloom(replicas []string) uint64 {
	var bloom uint64
	for _, a := range replicas {
		if i, ok := r.index[a]; ok {
			bloom |= r.bits[i]
		} else {
			bloom |= BloomBits(a)
		}
	}
	return bloom
}

// Matching returns, in configured order, the members whose bits are all set
// in bloom: every replica the filter was built from that is still a member,
// plus rare false positives (see BloomHashes). It is the set a PUT or DELETE
// must reach so that old replicas drop their copy.
func (r *Ring) Matching(bloom uint64) []string {
	var out []string
	for i, b := range r.bits {
		if bloom&b == b {
			out = append(out, r.members[i])
		}
	}
	return out
}
