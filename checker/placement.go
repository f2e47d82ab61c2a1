package checker

import (
	"encoding/binary"
	"slices"
	"sort"

	"github.com/twmb/murmur3"
)

// Replicas is the checker's own reference of rendezvous hashing (the
// original Chronos hashing design; docs/design.md 4.3): the replicas of
// timer id among members (given in configured order) for replication
// factor rf, primary first, then the backups in rank order. It is written
// for obviousness, not speed, and shares no code with node's Ring, so that
// a placement bug in the node cannot hide itself from the checker:
//
//  1. A member's server hash is murmur3 (x86, 32-bit, seed 0) of its
//     address. Walking in configured order, a hash equal to an earlier
//     member's is incremented (wrapping) until no earlier member has it.
//  2. A member's score for a timer is murmur3 (x86, 32-bit) of the timer's
//     ID as 8 little-endian bytes, seeded with the member's server hash;
//     equal scores are made unique the same way.
//  3. The primary is the member with the lowest score; the backups follow
//     from the highest score down.
//
// rf is capped at the number of members and raised to 1.
func Replicas(members []string, id uint64, rf int) []string {
	if len(members) == 0 {
		return nil
	}
	rf = max(1, min(rf, len(members)))
	servers := make([]uint32, len(members))
	for i, m := range members {
		servers[i] = murmur3.SeedStringSum32(0, m)
	}
	unique(servers)
	var key [8]byte
	binary.LittleEndian.PutUint64(key[:], id)
	scores := make([]uint32, len(members))
	for i := range members {
		scores[i] = murmur3.SeedSum32(servers[i], key[:])
	}
	unique(scores)
	order := make([]int, len(members))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return scores[order[a]] < scores[order[b]] })
	out := []string{members[order[0]]}
	for i := len(order) - 1; len(out) < rf; i-- {
		out = append(out, members[order[i]])
	}
	return out
}

// unique increments each value that equals an earlier one until none does.
func unique(v []uint32) {
	for i := range v {
		for slices.Contains(v[:i], v[i]) {
			v[i]++
		}
	}
}
