package sim

import (
	"fmt"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/chronos-timer/chronos/checker"
	"github.com/chronos-timer/chronos/node"
)

// TestReferencePlacementMatchesRing holds the node's rendezvous hashing
// and the checker's independent reference to one answer, for any members
// (in any configured order), timer ID and replication factor. The two share
// no code, so a bug in either shows here.
func TestReferencePlacementMatchesRing(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, MaxNodes).Draw(t, "members")
		var members []string
		for len(members) < n {
			m := fmt.Sprintf("10.%d.%d.%d:%d", rapid.IntRange(0, 3).Draw(t, "b"), rapid.IntRange(0, 3).Draw(t, "c"),
				rapid.IntRange(1, 254).Draw(t, "d"), rapid.SampledFrom([]int{7253, 80, 9000}).Draw(t, "port"))
			if !slices.Contains(members, m) {
				members = append(members, m)
			}
		}
		id := rapid.Uint64().Draw(t, "id")
		rf := rapid.IntRange(0, MaxNodes+2).Draw(t, "rf")
		got, want := checker.Replicas(members, id, rf), node.NewRing(members).Replicas(id, rf)
		if !slices.Equal(got, want) {
			t.Fatalf("timer %016x rf %d on %v: reference %v, ring %v", id, rf, members, got, want)
		}
	})
}
