package node

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"sort"
	"testing"

	"github.com/chronos-timer/chronos/wire"

	"github.com/twmb/murmur3"
	"pgregory.net/rapid"
)

// placeWith places one timer on r with injected scores: scoreOf maps each
// member's resolved server hash to its score for the timer. It runs the same
// ranking code as Replicas, only the murmur3 call is replaced.
func placeWith(t *testing.T, r *Ring, scoreOf map[uint32]uint32, n int) []string {
	t.Helper()
	scores := make([]uint32, len(r.hashes))
	for i, h := range r.hashes {
		s, ok := scoreOf[h]
		if !ok {
			t.Fatalf("no injected score for server hash %d", h)
		}
		scores[i] = s
	}
	return r.appendRanked(nil, scores, n)
}

// TestRingWorkedExamples reproduces the worked examples of the original hashing.md
// with their injected server hashes and timer scores: ordering (primary is
// the lowest score, backups from the highest down), scale-up, server hash
// clashes resolved by incrementing the later server, and timer score clashes
// won by the server first in the configured list.
func TestRingWorkedExamples(t *testing.T) {
	tests := []struct {
		name       string
		members    []string
		raw        []uint32 // raw server hashes, configured order
		wantHashes []uint32 // after clash resolution
		scores     map[uint32]uint32
		want2      []string // replication factor 2
		want3      []string // replication factor 3
	}{{
		name:    "worked example",
		members: []string{"A", "B", "C"}, raw: []uint32{1000, 2000, 3000},
		wantHashes: []uint32{1000, 2000, 3000},
		scores:     map[uint32]uint32{1000: 7777, 2000: 9999, 3000: 8888},
		want2:      []string{"A", "B"}, want3: []string{"A", "B", "C"},
	}, {
		name:    "worked example scaled up with D",
		members: []string{"A", "B", "C", "D"}, raw: []uint32{1000, 2000, 3000, 4000},
		wantHashes: []uint32{1000, 2000, 3000, 4000},
		scores:     map[uint32]uint32{1000: 7777, 2000: 9999, 3000: 8888, 4000: 6666},
		want2:      []string{"D", "B"}, want3: []string{"D", "B", "C"},
	}, {
		name:    "server hash clash A1 A2",
		members: []string{"A1", "A2", "B", "C"}, raw: []uint32{1000, 1000, 2000, 3000},
		wantHashes: []uint32{1000, 1001, 2000, 3000},
		scores:     map[uint32]uint32{1000: 7777, 1001: 9000, 2000: 9999, 3000: 8888},
		want2:      []string{"A1", "B"}, want3: []string{"A1", "B", "A2"},
	}, {
		name:    "server hash clash gone after A1 leaves",
		members: []string{"A2", "B", "C"}, raw: []uint32{1000, 2000, 3000},
		wantHashes: []uint32{1000, 2000, 3000},
		scores:     map[uint32]uint32{1000: 7777, 2000: 9999, 3000: 8888},
		want2:      []string{"A2", "B"}, want3: []string{"A2", "B", "C"},
	}, {
		name:    "timer score clash, first server wins",
		members: []string{"A", "B", "C"}, raw: []uint32{1000, 2000, 3000},
		wantHashes: []uint32{1000, 2000, 3000},
		scores:     map[uint32]uint32{1000: 800, 2000: 800, 3000: 900},
		want2:      []string{"A", "C"}, want3: []string{"A", "C", "B"},
	}, {
		name:    "timer score clash listed the other way round",
		members: []string{"B", "A", "C"}, raw: []uint32{2000, 1000, 3000},
		wantHashes: []uint32{2000, 1000, 3000},
		scores:     map[uint32]uint32{1000: 800, 2000: 800, 3000: 900},
		want2:      []string{"B", "C"}, want3: []string{"B", "C", "A"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRing(tt.members, tt.raw)
			if !slices.Equal(r.hashes, tt.wantHashes) {
				t.Fatalf("server hashes %v, want %v", r.hashes, tt.wantHashes)
			}
			if got := placeWith(t, r, tt.scores, 2); !slices.Equal(got, tt.want2) {
				t.Errorf("replicas(2) %q, want %q", got, tt.want2)
			}
			if got := placeWith(t, r, tt.scores, 3); !slices.Equal(got, tt.want3) {
				t.Errorf("replicas(3) %q, want %q", got, tt.want3)
			}
		})
	}
}

// TestRingResolveClashes proves the clash rule of the original hashing.md on its edges:
// the earlier value keeps its hash, increments cascade past values already
// taken, and the increment wraps at 2^32 (so a wrapped value ranks lowest).
func TestRingResolveClashes(t *testing.T) {
	const top = math.MaxUint32
	tests := []struct {
		name     string
		in, want []uint32
	}{
		{"none", []uint32{5, 1, 9}, []uint32{5, 1, 9}},
		{"pair", []uint32{800, 800, 900}, []uint32{800, 801, 900}},
		{"cascade into a later raw value", []uint32{800, 800, 801}, []uint32{800, 801, 802}},
		{"cascade past an earlier increment", []uint32{7, 8, 7, 7}, []uint32{7, 8, 9, 10}},
		{"all equal", []uint32{3, 3, 3, 3}, []uint32{3, 4, 5, 6}},
		{"wrap", []uint32{top, top}, []uint32{top, 0}},
		{"wrap past zero", []uint32{top, 0, top}, []uint32{top, 0, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := slices.Clone(tt.in)
			resolveClashes(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("resolveClashes(%v) = %v, want %v", tt.in, got, tt.want)
			}
		})
	}
}

// TestRingKnownAnswers pins murmur3 x86 32-bit reference vectors and the
// placement of real addresses, cross-checked against an independent
// implementation of MurmurHash3_x86_32, so that a change of hash library or
// of the algorithm (which would move every timer of a live cluster) fails
// here.
func TestRingKnownAnswers(t *testing.T) {
	vectors := []struct {
		seed uint32
		in   string
		want uint32
	}{
		{0, "", 0},
		{1, "", 0x514e28b7},
		{0xffffffff, "", 0x81f16f39},
		{1234, "Hello, world!", 0xfaf6cdb3},
		{0, "The quick brown fox jumps over the lazy dog", 0x2e4ff723},
	}
	for _, v := range vectors {
		if got := murmur3.SeedStringSum32(v.seed, v.in); got != v.want {
			t.Errorf("murmur3(seed %#x, %q) = %#x, want %#x", v.seed, v.in, got, v.want)
		}
	}

	members := []string{"10.0.0.1:7253", "10.0.0.2:7253", "10.0.0.3:7253"}
	r := NewRing(members)
	if want := []uint32{0x3e2c5d23, 0x89be5d95, 0x4ba33747}; !slices.Equal(r.hashes, want) {
		t.Errorf("server hashes %#x, want %#x", r.hashes, want)
	}
	le := []byte{100, 0, 0, 0, 0, 0, 0, 0}
	if got, want := murmur3.SeedSum32(r.hashes[0], le), uint32(0x10b6b4e7); got != want {
		t.Errorf("score of timer 100 on %s = %#x, want %#x", members[0], got, want)
	}
	placements := []struct {
		id   uint64
		want []int // member numbers, primary first
	}{
		{0, []int{1, 3, 2}},
		{1, []int{3, 2, 1}},
		{100, []int{1, 2, 3}},
		{200, []int{1, 3, 2}},
		{0x0123456789abcdef, []int{1, 2, 3}},
	}
	for _, p := range placements {
		var want []string
		for _, k := range p.want {
			want = append(want, members[k-1])
		}
		if got := r.Replicas(p.id, 3); !slices.Equal(got, want) {
			t.Errorf("Replicas(%#x, 3) = %q, want %q", p.id, got, want)
		}
	}
	if got, want := BloomBits(members[0]), uint64(0x84000014000); got != want {
		t.Errorf("BloomBits(%s) = %#x, want %#x", members[0], got, want)
	}
	if got, want := r.ViewID(), uint64(0x527bf17ab6030c8); got != want {
		t.Errorf("ViewID() = %#x, want %#x", got, want)
	}
}

// TestRingConstruction proves NewRing keeps its own copy of the members,
// hands out copies, and rejects an empty or duplicated member list loudly.
func TestRingConstruction(t *testing.T) {
	in := []string{"a:1", "b:1"}
	r := NewRing(in)
	in[0] = "z:1"
	got := r.Members()
	if want := []string{"a:1", "b:1"}; !slices.Equal(got, want) {
		t.Fatalf("Members() after caller edit = %q, want %q", got, want)
	}
	got[1] = "y:1"
	if got, want := r.Members(), []string{"a:1", "b:1"}; !slices.Equal(got, want) {
		t.Fatalf("Members() after edit of a returned copy = %q, want %q", got, want)
	}
	for _, bad := range [][]string{nil, {"a:1", "b:1", "a:1"}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("NewRing(%q) did not panic, want a panic", bad)
				}
			}()
			NewRing(bad)
		}()
	}
}

// TestRingReplicationFactorBounds proves n is capped at the cluster size and
// that n < 1 still yields the primary.
func TestRingReplicationFactorBounds(t *testing.T) {
	r := NewRing([]string{"a:1", "b:1", "c:1"})
	full := r.Replicas(42, 3)
	for _, tt := range []struct{ n, want int }{{-1, 1}, {0, 1}, {1, 1}, {2, 2}, {3, 3}, {4, 3}, {100, 3}} {
		got := r.Replicas(42, tt.n)
		if len(got) != tt.want {
			t.Errorf("len(Replicas(42, %d)) = %d, want %d", tt.n, len(got), tt.want)
		}
		if !slices.Equal(got, full[:len(got)]) {
			t.Errorf("Replicas(42, %d) = %q, want a prefix of %q", tt.n, got, full)
		}
	}
}

// TestRingViewID proves the view ID depends on the member set only: not on the
// configured order, and it changes when a member joins, leaves or is
// renamed, including renames that keep the concatenated bytes.
func TestRingViewID(t *testing.T) {
	base := NewRing([]string{"a:1", "b:1", "c:1"}).ViewID()
	if got := NewRing([]string{"c:1", "a:1", "b:1"}).ViewID(); got != base {
		t.Errorf("ViewID of reordered members = %#x, want %#x", got, base)
	}
	for _, other := range [][]string{
		{"a:1", "b:1"},
		{"a:1", "b:1", "c:1", "d:1"},
		{"a:1", "b:1", "c:2"},
	} {
		if got := NewRing(other).ViewID(); got == base {
			t.Errorf("ViewID(%q) = %#x, want anything but %#x", other, got, base)
		}
	}
	if x, y := NewRing([]string{"a", "bc"}).ViewID(), NewRing([]string{"ab", "c"}).ViewID(); x == y {
		t.Errorf("ViewID({a, bc}) = ViewID({ab, c}) = %#x, want different", x)
	}
}

// TestAppendReplicasAllocs proves the per-request placement does not
// allocate once the caller provides room, for small and large clusters up
// to maxStackMembers.
func TestAppendReplicasAllocs(t *testing.T) {
	for _, m := range []int{1, 3, 50, maxStackMembers} {
		r := NewRing(addresses(m))
		dst := make([]string, 0, 3)
		id := uint64(0)
		got := testing.AllocsPerRun(100, func() {
			id++
			dst = r.AppendReplicas(dst[:0], id, 3)
		})
		if got != 0 {
			t.Errorf("AppendReplicas with %d members: %v allocations, want 0", m, got)
		}
	}
}

// addresses returns m distinct member addresses in the production shape.
func addresses(m int) []string {
	out := make([]string, m)
	for i := range out {
		out[i] = fmt.Sprintf("10.0.%d.%d:7253", i/256, i%256)
	}
	return out
}

// splitmix64 spreads a seed into a deterministic stream of timer IDs, so a
// property can check thousands of IDs while rapid draws (and shrinks) only
// the seed.
func splitmix64(x *uint64) uint64 {
	*x += 0x9e3779b97f4a7c15
	z := *x
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// genMembers draws between lo and hi distinct member addresses.
func genMembers(t *rapid.T, lo, hi int, label string) []string {
	addr := rapid.Custom(func(t *rapid.T) string {
		return fmt.Sprintf("10.%d.%d.%d:%d",
			rapid.IntRange(0, 255).Draw(t, "b"), rapid.IntRange(0, 255).Draw(t, "c"),
			rapid.IntRange(0, 255).Draw(t, "d"), rapid.SampledFrom([]int{7253, 7254}).Draw(t, "port"))
	})
	return rapid.SliceOfNDistinct(addr, lo, hi, rapid.ID[string]).Draw(t, label)
}

// genIDs draws the seed of count timer IDs, either in the shape of real unique
// IDs (milliseconds, instance, sequence: consecutive and highly structured)
// or spread over the whole 64-bit space.
func genIDs(t *rapid.T, count int) []uint64 {
	seed := rapid.Uint64().Draw(t, "idSeed")
	realistic := rapid.Bool().Draw(t, "realisticIDs")
	ids := make([]uint64, count)
	start, instance := seed%(1<<40), (seed>>40)%1024
	for i := range ids {
		if realistic {
			ids[i] = (start+uint64(i/8))<<22 | instance<<12 | uint64(i%8)
		} else {
			ids[i] = splitmix64(&seed)
		}
	}
	return ids
}

// clashFree reports whether r places id without resolving any clash: raw
// server hashes and the timer's raw scores all distinct. Only then do the
// scale properties of the original hashing.md hold exactly (the spec gives them up
// on a clash); with 32-bit hashes a clash is about one in 10^8 here.
func clashFree(members []string, id uint64) bool {
	seen := make(map[uint32]bool, len(members))
	scores := make(map[uint32]bool, len(members))
	le := make([]byte, 8)
	for i := range le {
		le[i] = byte(id >> (8 * i))
	}
	for _, m := range members {
		h := murmur3.SeedStringSum32(0, m)
		s := murmur3.SeedSum32(h, le)
		if seen[h] || scores[s] {
			return false
		}
		seen[h], scores[s] = true, true
	}
	return true
}

// modelPlace is the naive reading of the original hashing.md the ranking code is
// checked against: resolve clashes in configured order with a set, sort all
// members by resolved score, take the lowest, then the highest down.
func modelPlace(scores []uint32, n int) []int {
	taken := map[uint32]bool{}
	resolved := make([]uint32, len(scores))
	for i, s := range scores {
		for taken[s] {
			s++
		}
		taken[s], resolved[i] = true, s
	}
	order := make([]int, len(scores))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return resolved[order[a]] < resolved[order[b]] })
	n = max(1, min(n, len(scores)))
	out := []int{order[0]}
	for i := 1; i < n; i++ {
		out = append(out, order[len(order)-i])
	}
	return out
}

// TestRingRankMatchesModel proves the selection fast path (hash-set clash
// check, scans instead of a sort) places every timer as the naive spec model
// does, with scores drawn from tiny ranges (clashes, cascades), next to 2^32
// (wrap-around), and for clusters past the stack buffers.
func TestRingRankMatchesModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := rapid.OneOf(rapid.IntRange(1, 12), rapid.IntRange(60, 300)).Draw(t, "members")
		base := rapid.SampledFrom([]uint32{0, 1000, math.MaxUint32 - 4}).Draw(t, "base")
		spread := rapid.SampledFrom([]uint32{5, 100000}).Draw(t, "spread")
		scores := make([]uint32, m)
		for i := range scores {
			scores[i] = base + rapid.Uint32Range(0, spread).Draw(t, "offset")
		}
		n := rapid.IntRange(-1, min(m+1, 20)).Draw(t, "n")
		members := make([]string, m)
		for i := range members {
			members[i] = fmt.Sprint(i)
		}
		r := newRing(members, make([]uint32, m))
		got := r.appendRanked(nil, slices.Clone(scores), n)
		var want []string
		for _, i := range modelPlace(scores, n) {
			want = append(want, members[i])
		}
		if !slices.Equal(got, want) {
			t.Fatalf("placement for scores %v, n %d: %q, want %q", scores, n, got, want)
		}
	})
}

// TestRingHasClash proves the clash check against a naive one, on both the
// stack and the allocated table.
func TestRingHasClash(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		scores := rapid.SliceOfN(rapid.Uint32Range(0, 5000), 0, 300).Draw(t, "scores")
		want := false
		for i := range scores {
			want = want || slices.Contains(scores[:i], scores[i])
		}
		if got := hasClash(scores); got != want {
			t.Fatalf("hasClash(%v) = %v, want %v", scores, got, want)
		}
	})
}

// TestReplicasConsistent proves placement depends on nothing but the member
// set and the ID: rings built separately agree, repeated and appending calls
// agree, and without a hash clash the configured order does not matter.
func TestReplicasConsistent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		members := genMembers(t, 1, 12, "members")
		shuffled := rapid.Permutation(members).Draw(t, "shuffled")
		n := rapid.IntRange(1, len(members)+1).Draw(t, "n")
		a, b, c := NewRing(members), NewRing(slices.Clone(members)), NewRing(shuffled)
		if a.ViewID() != c.ViewID() {
			t.Fatalf("ViewID of shuffled members %#x, want %#x", c.ViewID(), a.ViewID())
		}
		for _, id := range genIDs(t, 50) {
			want := a.Replicas(id, n)
			if got := b.Replicas(id, n); !slices.Equal(got, want) {
				t.Fatalf("second ring Replicas(%#x) = %q, want %q", id, got, want)
			}
			if got := a.Replicas(id, n); !slices.Equal(got, want) {
				t.Fatalf("repeated Replicas(%#x) = %q, want %q", id, got, want)
			}
			if got := a.AppendReplicas([]string{"x"}, id, n); !slices.Equal(got, append([]string{"x"}, want...)) {
				t.Fatalf("AppendReplicas(x, %#x) = %q, want x then %q", id, got, want)
			}
			if got := c.Replicas(id, n); clashFree(members, id) && !slices.Equal(got, want) {
				t.Fatalf("shuffled ring Replicas(%#x) = %q, want %q", id, got, want)
			}
		}
	})
}

// TestReplicasShape proves every placement is min(n, members) distinct
// members.
func TestReplicasShape(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		members := genMembers(t, 1, 20, "members")
		n := rapid.IntRange(1, 20).Draw(t, "n")
		r := NewRing(members)
		for _, id := range genIDs(t, 50) {
			got := r.Replicas(id, n)
			if want := min(n, len(members)); len(got) != want {
				t.Fatalf("len(Replicas(%#x, %d)) = %d, want %d", id, n, len(got), want)
			}
			seen := map[string]bool{}
			for _, g := range got {
				if seen[g] || !slices.Contains(members, g) {
					t.Fatalf("Replicas(%#x, %d) = %q, want distinct members of %q", id, n, got, members)
				}
				seen[g] = true
			}
		}
	})
}

// TestReplicasBalance proves timers spread evenly: over 20000 IDs each of k
// members is primary, and holds replicas at factor 2, within 20% of its fair
// share. The binomial spread is under 2%, so the bound is over ten standard
// deviations and cannot flake; it would catch a biased hash or a broken
// ordering.
func TestReplicasBalance(t *testing.T) {
	const ids, slack = 20000, 0.20
	rapid.Check(t, func(t *rapid.T) {
		members := genMembers(t, 2, 8, "members")
		r := NewRing(members)
		primary := make(map[string]int, len(members))
		held := make(map[string]int, len(members))
		dst := make([]string, 0, 2)
		for _, id := range genIDs(t, ids) {
			dst = r.AppendReplicas(dst[:0], id, 2)
			primary[dst[0]]++
			held[dst[0]]++
			held[dst[1]]++
		}
		fair := float64(ids) / float64(len(members))
		for _, m := range members {
			if got := float64(primary[m]); math.Abs(got-fair) > slack*fair {
				t.Fatalf("%s is primary of %v of %d timers, want %.0f ± %.0f%%", m, got, ids, fair, 100*slack)
			}
			if got := float64(held[m]); math.Abs(got-2*fair) > slack*2*fair {
				t.Fatalf("%s holds %v of %d replicas, want %.0f ± %.0f%%", m, got, 2*ids, 2*fair, 100*slack)
			}
		}
	})
}

// TestReplicasScaleUp proves the scale-up properties of the original hashing.md
// when a node X joins: a timer's replicas change only by taking X in (in
// the same order otherwise); a primary changes only to X; and, once the new
// cluster is larger than the replication factor, the old primary is never
// made a backup.
func TestReplicasScaleUp(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		all := genMembers(t, 2, 11, "members")
		joiner := all[len(all)-1]
		before, after := NewRing(all[:len(all)-1]), NewRing(all)
		n := rapid.IntRange(1, len(all)+1).Draw(t, "n")
		for _, id := range genIDs(t, 100) {
			if !clashFree(all, id) {
				continue
			}
			old, cur := before.Replicas(id, n), after.Replicas(id, n)
			checkMoves(t, id, old, cur, joiner, len(all) > n)
			if len(all) > n && cur[0] != old[0] && slices.Contains(cur, old[0]) {
				t.Fatalf("timer %#x: primary %s became a backup after %s joined: %q -> %q", id, old[0], joiner, old, cur)
			}
		}
	})
}

// TestReplicasScaleDown proves the scale-down properties of the original hashing.md
// when a node L leaves: timers that L did not hold keep their placement
// exactly; the others keep their other replicas; a primary changes only
// when L was the primary; and a primary is never made a backup.
func TestReplicasScaleDown(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		all := genMembers(t, 2, 11, "members")
		leaver := rapid.SampledFrom(all).Draw(t, "leaver")
		rest := slices.DeleteFunc(slices.Clone(all), func(m string) bool { return m == leaver })
		before, after := NewRing(all), NewRing(rest)
		n := rapid.IntRange(1, len(all)+1).Draw(t, "n")
		for _, id := range genIDs(t, 100) {
			if !clashFree(all, id) {
				continue
			}
			old, cur := before.Replicas(id, n), after.Replicas(id, n)
			// Read backwards, leaving is joining: the same movement rules.
			checkMoves(t, id, cur, old, leaver, len(all) > n)
			if old[0] != leaver && cur[0] != old[0] {
				t.Fatalf("timer %#x: primary moved from %s to %s though %s left: %q -> %q", id, old[0], cur[0], leaver, old, cur)
			}
		}
	})
}

// checkMoves fails unless small (the placement on the cluster without x) and
// big (with x) differ only by x: big without x is small with at most one
// member dropped, a different primary in big is x, and a placement without
// x is unchanged. With ordered (the big cluster has more members than the
// replication factor) big without x must also keep small's order; on
// smaller clusters every member is a replica and a new lowest score
// reorders them.
func checkMoves(t *rapid.T, id uint64, small, big []string, x string, ordered bool) {
	if slices.Contains(small, x) {
		t.Fatalf("timer %#x: %s placed on %q though not a member", id, x, small)
	}
	if big[0] != small[0] && big[0] != x {
		t.Fatalf("timer %#x: primary moved between remaining members %s and %s (%q vs %q, changed %s)", id, small[0], big[0], small, big, x)
	}
	rest := slices.DeleteFunc(slices.Clone(big), func(m string) bool { return m == x })
	for _, m := range rest {
		if !slices.Contains(small, m) {
			t.Fatalf("timer %#x: %s is placed with %s but not without (%q vs %q)", id, m, x, small, big)
		}
	}
	if len(small)-len(rest) > 1 || (ordered && !isSubsequence(rest, small)) {
		t.Fatalf("timer %#x: placements %q and %q differ by more than %s", id, small, big, x)
	}
	if !slices.Contains(big, x) && !slices.Equal(big, small) {
		t.Fatalf("timer %#x: placement changed from %q to %q without %s", id, small, big, x)
	}
}

// isSubsequence reports whether sub appears in s in order.
func isSubsequence(sub, s []string) bool {
	i := 0
	for _, v := range s {
		if i < len(sub) && sub[i] == v {
			i++
		}
	}
	return i == len(sub)
}

// TestBloom proves the replica bloom filter has no false negatives: every
// replica's bits are set, Matching returns every replica (in configured
// order), and a ring of another view (the replicas' addresses unknown to
// it) builds the same filter.
func TestBloom(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		members := genMembers(t, 1, 20, "members")
		n := rapid.IntRange(1, wire.MaxReplicationFactor).Draw(t, "n")
		r := NewRing(members)
		stranger := NewRing([]string{"192.168.0.1:7253"})
		for _, id := range genIDs(t, 20) {
			replicas := r.Replicas(id, n)
			bloom := r.Bloom(replicas)
			if got := stranger.Bloom(replicas); got != bloom {
				t.Fatalf("Bloom(%q) from another view = %#x, want %#x", replicas, got, bloom)
			}
			for _, a := range replicas {
				if b := BloomBits(a); bloom&b != b {
					t.Fatalf("bloom %#x misses bits %#x of replica %s", bloom, b, a)
				}
			}
			matching := r.Matching(bloom)
			for _, a := range replicas {
				if !slices.Contains(matching, a) {
					t.Fatalf("Matching(%#x) = %q, want it to contain replica %s", bloom, matching, a)
				}
			}
			if !isSubsequence(matching, members) {
				t.Fatalf("Matching(%#x) = %q, want members in configured order %q", bloom, matching, members)
			}
		}
	})
}

// TestBloomBits proves every address sets between 1 and BloomHashes bits.
func TestBloomBits(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		addr := rapid.String().Draw(t, "addr")
		if got := bits.OnesCount64(BloomBits(addr)); got < 1 || got > BloomHashes {
			t.Fatalf("BloomBits(%q) sets %d bits, want 1 to %d", addr, got, BloomHashes)
		}
	})
}

// TestBloomFalsePositives proves the documented false-positive rates hold
// for production-shaped addresses: for filters of 1, 2 and 3 replicas drawn
// from 1000 addresses, the share of other addresses that match stays within
// three times the (1 - e^(-kn/64))^k estimate. The inputs are fixed, so the
// measured rate is too.
func TestBloomFalsePositives(t *testing.T) {
	addrs := addresses(1000)
	r := NewRing(addrs)
	for n := 1; n <= 3; n++ {
		var falsePos, trials int
		for first := 0; first+n <= len(addrs); first += n {
			group := addrs[first : first+n]
			matching := r.Matching(r.Bloom(group))
			falsePos += len(matching) - n
			trials += len(addrs) - n
		}
		got := float64(falsePos) / float64(trials)
		est := math.Pow(1-math.Exp(-BloomHashes*float64(n)/64), BloomHashes)
		t.Logf("%d replicas: false-positive rate %.2g (estimate %.2g, %d trials)", n, got, est, trials)
		if got > 3*est {
			t.Errorf("%d replicas: false-positive rate %.3g, want at most %.3g", n, got, 3*est)
		}
	}
}

// BenchmarkReplicas measures the per-request placement for small and large
// clusters at the default replication factor.
func BenchmarkReplicas(b *testing.B) {
	for _, m := range []int{3, 50} {
		b.Run(fmt.Sprintf("members=%d", m), func(b *testing.B) {
			r := NewRing(addresses(m))
			dst := make([]string, 0, wire.DefaultReplicationFactor)
			b.ReportAllocs()
			var id uint64
			for b.Loop() {
				id++
				dst = r.AppendReplicas(dst[:0], id, wire.DefaultReplicationFactor)
			}
		})
	}
}

// BenchmarkReplicasAllocating measures Replicas, which allocates the result.
func BenchmarkReplicasAllocating(b *testing.B) {
	r := NewRing(addresses(3))
	b.ReportAllocs()
	var id uint64
	for b.Loop() {
		id++
		_ = r.Replicas(id, wire.DefaultReplicationFactor)
	}
}

// BenchmarkMatching measures the bloom lookup a PUT or DELETE makes.
func BenchmarkMatching(b *testing.B) {
	r := NewRing(addresses(50))
	bloom := r.Bloom(r.Replicas(1, 3))
	b.ReportAllocs()
	for b.Loop() {
		_ = r.Matching(bloom)
	}
}
