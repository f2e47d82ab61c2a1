package checker

import (
	"slices"
	"strings"
	"testing"

	"github.com/twmb/murmur3"
)

// TestMurmur3KnownAnswers pins the hash the reference placement uses to the
// published MurmurHash3 x86_32 test vectors.
func TestMurmur3KnownAnswers(t *testing.T) {
	for _, c := range []struct {
		in   string
		seed uint32
		want uint32
	}{
		{"", 0, 0},
		{"", 1, 0x514e28b7},
		{"test", 0, 0xba6bd213},
		{"Hello, world!", 0x9747b28c, 0x24884cba},
		{"The quick brown fox jumps over the lazy dog", 0x9747b28c, 0x2fa826cd},
		{"aaaa", 0x9747b28c, 0x5a97808a},
	} {
		if got := murmur3.SeedStringSum32(c.seed, c.in); got != c.want {
			t.Errorf("murmur3(%q, seed %#x): got %#08x, want %#08x", c.in, c.seed, got, c.want)
		}
	}
}

// TestReplicasKnownAnswers pins the reference placement of five simulated
// nodes. The table was taken from the reference and agrees with node's Ring
// (sim's TestReferencePlacementMatchesRing holds the two together on random
// inputs), so a change to either that moves a timer fails here.
func TestReplicasKnownAnswers(t *testing.T) {
	ms := []string{"10.0.0.1:7253", "10.0.0.2:7253", "10.0.0.3:7253", "10.0.0.4:7253", "10.0.0.5:7253"}
	n := func(is ...int) []string {
		var out []string
		for _, i := range is {
			out = append(out, ms[i-1])
		}
		return out
	}
	for _, c := range []struct {
		id   uint64
		rf   int
		want []string
	}{
		{0x0, 1, n(1)},
		{0x0, 3, n(1, 4, 3)},
		{0x0, 7, n(1, 4, 3, 5, 2)},
		{0x1, 2, n(4, 2)},
		{0x1, 5, n(4, 2, 1, 5, 3)},
		{0x0b061cf0001d7000, 0, n(5)},
		{0x0b061cf0001d7000, 3, n(5, 2, 1)},
		{0xffffffffffffffff, 2, n(5, 1)},
		{0xffffffffffffffff, 5, n(5, 1, 4, 3, 2)},
		{0x123456789abcdef0, 3, n(5, 4, 1)},
	} {
		if got := Replicas(ms, c.id, c.rf); !slices.Equal(got, c.want) {
			t.Errorf("Replicas(%016x, rf %d): got %v, want %v", c.id, c.rf, got, c.want)
		}
	}
	if got := Replicas(nil, 1, 2); got != nil {
		t.Errorf("Replicas of no members: got %v, want nil", got)
	}
}

// TestUniqueResolvesClashesInOrder checks the clash rule: the earlier value
// keeps its number, the later one moves up, wrapping at 2^32.
func TestUniqueResolvesClashesInOrder(t *testing.T) {
	v := []uint32{5, 5, 6, 0xffffffff, 0xffffffff}
	unique(v)
	if want := []uint32{5, 6, 7, 0xffffffff, 0}; !slices.Equal(v, want) {
		t.Fatalf("unique: got %v, want %v", v, want)
	}
}

func TestPlacement(t *testing.T) {
	// G6: exact placement passes; a missing replica, a stale copy on a
	// node that is no replica, and a copy of a dead timer are reported.
	want := map[uint64][]string{1: {"a", "b"}, 2: {"b", "c"}}
	tests := []struct {
		name  string
		held  map[string][]uint64
		wants []string
	}{
		{"converged", map[string][]uint64{"a": {1}, "b": {1, 2}, "c": {2}}, nil},
		{"missing replica", map[string][]uint64{"a": {1}, "b": {1}, "c": {2}},
			[]string{"replica b of timer 0000000000000002 holds no copy"}},
		{"stale copy on a node that left", map[string][]uint64{"a": {1}, "b": {1, 2}, "c": {2}, "d": {1}},
			[]string{"node d holds a stale copy of timer 0000000000000001"}},
		{"copy of a dead timer", map[string][]uint64{"a": {1, 9}, "b": {1, 2}, "c": {2}},
			[]string{"node a holds timer 0000000000000009 that is not live"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vs := CheckPlacement(tt.held, want)
			if len(vs) != len(tt.wants) {
				t.Fatalf("got %d violations:\n%s\nwant %d", len(vs), dump(vs), len(tt.wants))
			}
			for i, w := range tt.wants {
				if vs[i].Guarantee != "G6" || !strings.Contains(vs[i].Message, w) {
					t.Fatalf("got %s: %s, want G6 mentioning %q", vs[i].Guarantee, vs[i].Message, w)
				}
			}
		})
	}
}
