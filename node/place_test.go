package node

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/wire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMarksFollowTheirReplicas: the marks a record keeps by position in
// its replica list (Lacking, Refused) follow each replica to its place in
// the list a change of view gives, and a replica the new list leaves out
// loses its mark; left by position, a mark would name another replica.
func TestMarksFollowTheirReplicas(t *testing.T) {
	a, b, c, d := "10.0.0.1:7253", "10.0.0.2:7253", "10.0.0.3:7253", "10.0.0.4:7253"
	cases := []struct {
		from, to []string
		mask     uint32
		want     uint32
	}{
		{[]string{a, b, c}, []string{a, b, c}, 0b100, 0b100},
		{[]string{a, b, c}, []string{c, a, b}, 0b100, 0b001},
		{[]string{a, b, c}, []string{d, a, b}, 0b100, 0},
		{[]string{a, b, c}, []string{b, d, c}, 0b110, 0b101},
		{[]string{a, b}, []string{a, b, c}, 0, 0},
	}
	for _, tc := range cases {
		if got := remark(tc.from, tc.to, tc.mask); got != tc.want {
			t.Errorf("remark(%v, %v, %b): got %b, want %b", tc.from, tc.to, tc.mask, got, tc.want)
		}
	}
}

// TestLackingMarkFollowsItsReplicaAcrossAReload: a replica that marked a
// later replica as may lack the timer still names that replica after a
// change of view moved it to another position in the timer's replica
// list; left by position, the mark named the joining node instead.
func TestLackingMarkFollowsItsReplicaAcrossAReload(t *testing.T) {
	before, after := NewRing([]string{nodeA, nodeB, nodeC}), NewRing([]string{nodeA, nodeB, nodeC, nodeD})
	id := uint64(1)
	for !slices.Equal(before.Replicas(id, 3), []string{nodeA, nodeB, nodeC}) || !slices.Equal(after.Replicas(id, 3), []string{nodeA, nodeD, nodeB}) {
		id++
	}
	c := newCluster(t, nodeA, nodeB, nodeC)
	c.lose = func(host string, req Request) bool { return strings.Contains(host, nodeB) }
	r := c.client(nodeA, "PUT", "/timers/"+wire.FormatWireID(id, 0), string(wire.Encode(wire.Timer{Interval: 10 * time.Second, RepeatFor: 30 * time.Second, URI: cb, ReplicationFactor: 3})))
	require.Equal(t, 200, r.Status, "%s", r.Body)
	held := c.nodes[nodeA].store.Get(id)
	require.Equal(t, []string{nodeB}, appendMarked(nil, held.Placement().Replicas, held.lacking()), "marked before the reload")

	require.NoError(t, c.nodes[nodeA].SetCluster(Membership{Nodes: []string{nodeA, nodeB, nodeC, nodeD}}))
	held = c.nodes[nodeA].store.Get(id)
	require.Equal(t, []string{nodeA, nodeD, nodeB}, held.Placement().Replicas)
	assert.Equal(t, []string{nodeB}, appendMarked(nil, held.Placement().Replicas, held.lacking()), "marked after the reload")
}

// TestReplicaPromotedByAReloadPopsAtItsNewRank: a backup that a change
// of view makes a timer's primary pops it at the primary's time, not at
// its old rank's 4 s later. Its alarm was set for the old rank, so a
// reload must set it again for every record it places anew. (A primary
// has the lowest score and backups follow from the highest down, so the
// last backup of three becomes the primary of the two left.)
func TestReplicaPromotedByAReloadPopsAtItsNewRank(t *testing.T) {
	three, staying := []string{nodeA, nodeB, nodeC}, []string{nodeB, nodeC}
	before, after := NewRing(three), NewRing(staying)
	id := uint64(1)
	step := loopBound(t, 1000, "an ID whose last backup the reload makes its primary")
	for before.Replicas(id, 3)[0] != nodeA || before.Replicas(id, 3)[2] != after.Replicas(id, 3)[0] {
		step()
		id++
	}

	c := newCluster(t, three...)
	r := c.client(nodeB, "PUT", "/timers/"+wire.FormatWireID(id, 0), string(wire.Encode(wire.Timer{Interval: 10 * time.Second, RepeatFor: 30 * time.Second, URI: cb, ReplicationFactor: 3})))
	require.Equal(t, 200, r.Status, "%s", r.Body)
	due := c.clock.now.Add(10 * time.Second)

	// The primary is gone, and the others reload without it.
	c.down[nodeA] = true
	for _, a := range staying {
		require.NoError(t, c.nodes[a].SetCluster(Membership{Nodes: staying}))
	}
	pops := c.advance(due.Add(ReplicaSkew/2).Sub(c.clock.now), 200)
	require.Len(t, pops, 1, "pops by %v, half the backup skew after the first is due", ReplicaSkew/2)
	assert.Equal(t, "1", pops[0].Header.Get(wire.HeaderSequenceNumber))
}
