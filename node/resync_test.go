package node

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/wire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// join adds a node at addr to c, configured with m, as an operator starts
// a new node with the scaled configuration; like the production binary,
// it resyncs at start-up.
func (c *cluster) join(addr string, m Membership) {
	c.t.Helper()
	c.joinWith(addr, m, nil)
}

// joinWith joins as join does, letting configure change the new node's
// configuration first.
func (c *cluster) joinWith(addr string, m Membership, configure func(*Config)) {
	c.t.Helper()
	cfg := c.cfgs[slices.Sorted(maps.Keys(c.cfgs))[0]]
	cfg.Address, cfg.Cluster = addr, m
	if configure != nil {
		configure(&cfg)
	}
	cfg.Clock, cfg.Network = skewedClock{c.clock, 0, new(bool)}, senderNet{c, addr}
	n, err := New(cfg)
	require.NoError(c.t, err, "New(%s)", addr)
	c.nodes[addr], c.cfgs[addr] = n, cfg
	n.Resync(true)
}

// reload gives every node the membership m (which starts its resync when
// the view changes) and runs the resyncs to their end.
func (c *cluster) reload(m Membership) {
	c.t.Helper()
	for _, a := range slices.Sorted(maps.Keys(c.nodes)) {
		cfg := c.cfgs[a]
		cfg.Cluster = m
		c.cfgs[a] = cfg
		require.NoError(c.t, c.nodes[a].SetCluster(m), "SetCluster(%s)", a)
	}
	c.finishResyncs()
}

// reloadLast gives every node but last the membership m, lets their
// resyncs run for a second, then reloads last too and runs every resync
// to its end: the order in which an operator's reloads may arrive.
func (c *cluster) reloadLast(last string, m Membership) {
	c.t.Helper()
	for _, a := range slices.Sorted(maps.Keys(c.nodes)) {
		if a == last {
			continue
		}
		cfg := c.cfgs[a]
		cfg.Cluster = m
		c.cfgs[a] = cfg
		require.NoError(c.t, c.nodes[a].SetCluster(m), "SetCluster(%s)", a)
	}
	for range 100 {
		c.settle()
		c.clock.advance(10 * time.Millisecond)
	}
	c.reload(m)
}

// setCluster gives the nodes at addrs the membership m, which starts
// their resyncs, and runs nothing further.
func (c *cluster) setCluster(m Membership, addrs ...string) {
	c.t.Helper()
	for _, a := range addrs {
		cfg := c.cfgs[a]
		cfg.Cluster = m
		c.cfgs[a] = cfg
		require.NoError(c.t, c.nodes[a].SetCluster(m), "SetCluster(%s)", a)
	}
}

// finishResyncs settles messages and moves the clock on until no node's
// resync runs, with a bound that a resync that never ends would hit.
func (c *cluster) finishResyncs() {
	c.t.Helper()
	for i := 0; ; i++ {
		require.Less(c.t, i, 10_000, "resyncs still running")
		c.settle()
		running := false
		for _, n := range c.nodes {
			running = running || n.ResyncStatus().Running
		}
		if !running {
			return
		}
		c.clock.advance(10 * time.Millisecond)
	}
}

// livePlacement returns, for each timer held live anywhere, the nodes
// holding it live.
func (c *cluster) livePlacement() map[uint64][]string {
	out := map[uint64][]string{}
	for a, n := range c.nodes {
		n.Held(func(t *Timer) bool {
			if t.State == Live {
				out[t.ID] = append(out[t.ID], a)
			}
			return true
		})
	}
	for id := range out {
		slices.Sort(out[id])
	}
	return out
}

// requirePlaced checks G6: every timer in ids is held live by exactly its
// replicas among members, each record placed on them.
func (c *cluster) requirePlaced(ids []uint64, members []string, rf int) {
	c.t.Helper()
	live := c.livePlacement()
	ring := NewRing(members)
	for _, id := range ids {
		want := ring.Replicas(id, rf)
		assert.Equal(c.t, sorted(want), live[id], "timer %s holders", wire.FormatID(id))
		for _, a := range want {
			if t, ok := c.nodes[a].Timer(id); ok {
				assert.Equal(c.t, want, t.Placement().Replicas, "timer %s placement on %s", wire.FormatID(id), a)
			}
		}
	}
}

// createMany creates k timers through the nodes in turn and returns their
// IDs.
func (c *cluster) createMany(k, rf int, interval, repeatFor int) []uint64 {
	c.t.Helper()
	addrs := slices.Sorted(maps.Keys(c.nodes))
	var ids []uint64
	for i := range k {
		body := wire.Encode(wire.Timer{Interval: time.Duration(interval) * time.Second, RepeatFor: time.Duration(repeatFor) * time.Second, URI: cb, Opaque: strconv.Itoa(i), ReplicationFactor: rf})
		r := c.client(addrs[i%len(addrs)], "POST", "/timers", string(body))
		require.Equal(c.t, 200, r.Status, "create %d: %s", i, r.Body)
		ids = append(ids, mustID(c.t, strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")))
	}
	return ids
}

var (
	nodeA, nodeB, nodeC, nodeD = "10.0.0.1:7253", "10.0.0.2:7253", "10.0.0.3:7253", "10.0.0.4:7253"
)

// TestScaleUpRebalancesEveryTimer adds a node to three (the original
// scaling design's first worked example, over many timers): after the
// reload and resync every timer sits on exactly its replicas under the
// new membership, the old replicas no longer involved have dropped it,
// and nothing pops twice or is lost.
func TestScaleUpRebalancesEveryTimer(t *testing.T) {
	for _, rf := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("rf%d", rf), func(t *testing.T) {
			c := newCluster(t, nodeA, nodeB, nodeC)
			ids := c.createMany(60, rf, 30, 60)
			grown := Membership{Nodes: []string{nodeA, nodeB, nodeC}, Joining: []string{nodeD}}
			c.join(nodeD, grown)
			c.reload(grown)
			for a, n := range c.nodes {
				s := n.ResyncStatus()
				assert.False(t, s.Running, a)
				assert.Empty(t, s.Failed, a)
				assert.EqualValues(t, 1, s.Completed, a)
			}
			c.requirePlaced(ids, []string{nodeA, nodeB, nodeC, nodeD}, rf)
			moved := 0
			for _, id := range ids {
				if slices.Contains(NewRing([]string{nodeA, nodeB, nodeC, nodeD}).Replicas(id, rf), nodeD) {
					moved++
				}
			}
			assert.Positive(t, moved, "no timer moved to the new node")
			if rf == 1 {
				readMovedTimer(t, c, ids)
			}

			// The operator's last step: the joining node becomes a member;
			// the view is the same, so nothing moves.
			final := Membership{Nodes: []string{nodeA, nodeB, nodeC, nodeD}}
			c.reload(final)
			c.requirePlaced(ids, final.Nodes, rf)
			requireEachPopOnce(t, c.advance(65*time.Second, 200), ids, 2)
		})
	}
}

// readMovedTimer reads, through the node it moved to, a timer that a
// scale moved off its old replica, by its old ID: the old replica's copy
// is reported moved, and the timer found.
func readMovedTimer(t *testing.T, c *cluster, ids []uint64) {
	t.Helper()
	before := NewRing([]string{nodeA, nodeB, nodeC})
	for _, id := range ids {
		from := before.Replicas(id, 1)
		if held, ok := c.nodes[nodeD].Timer(id); !ok || held.State != Live || held.Placement().Replicas[0] != nodeD {
			continue
		}
		r, got := readTimer(t, c, nodeD, wire.FormatWireID(id, before.Bloom(from)))
		require.Equal(t, 200, r.Status, "%s", r.Body)
		assert.Equal(t, []string{from[0] + "=moved", nodeD + "=live"}, got.states())
		return
	}
	t.Fatal("no timer moved to " + nodeD)
}

// requireEachPopOnce checks that each timer of ids popped pops times, each
// sequence number once.
func requireEachPopOnce(t *testing.T, pops []Request, ids []uint64, pops0 int) {
	t.Helper()
	got := map[string]int{}
	for _, p := range pops {
		got[p.Header.Get(wire.HeaderTimerID)+"/"+p.Header.Get(wire.HeaderSequenceNumber)]++
	}
	for _, id := range ids {
		for seq := 1; seq <= pops0; seq++ {
			assert.Equal(t, 1, got[wire.FormatID(id)+"/"+strconv.Itoa(seq)], "timer %s pop %d", wire.FormatID(id), seq)
		}
	}
	assert.Len(t, pops, len(ids)*pops0, "pops in all")
}

// TestScaleDownMovesTimersOffTheLeavingNode takes a node out of three
// (the original's second worked example over many timers): the staying
// nodes take the leaving node's timers, and the leaving node drops its
// copies once the new primaries' references reach it, so it can be
// stopped without losing a timer.
func TestScaleDownMovesTimersOffTheLeavingNode(t *testing.T) {
	for _, rf := range []int{1, 2} {
		t.Run(fmt.Sprintf("rf%d", rf), func(t *testing.T) {
			c := newCluster(t, nodeA, nodeB, nodeC)
			ids := c.createMany(60, rf, 30, 60)
			shrunk := Membership{Nodes: []string{nodeA, nodeB}, Leaving: []string{nodeC}}
			c.reload(shrunk)
			c.requirePlaced(ids, shrunk.Nodes, rf)
			assert.Zero(t, c.nodes[nodeC].Stats().Timers, "live timers left on the leaving node")
			c.down[nodeC] = true
			delete(c.nodes, nodeC)
			c.reload(Membership{Nodes: []string{nodeA, nodeB}})
			requireEachPopOnce(t, c.advance(65*time.Second, 200), ids, 2)
		})
	}
}

// TestScaleDownWorkedExample follows the original scaling design's
// example: three nodes, rf 2, C leaving, a timer on (C, A) moving to
// (B, A). A takes it in place as the backup it stays; B takes it as the
// new primary, passes it to A and tells C, which drops its copy.
func TestScaleDownWorkedExample(t *testing.T) {
	before, after := NewRing([]string{nodeA, nodeB, nodeC}), NewRing([]string{nodeA, nodeB})
	id := idMoving(before, after, []string{nodeC, nodeA}, []string{nodeB, nodeA})
	c := newCluster(t, nodeA, nodeB, nodeC)
	wid := wire.FormatWireID(id, before.Bloom([]string{nodeC, nodeA}))
	r := c.client(nodeB, "PUT", "/timers/"+wid, string(wire.Encode(wire.Timer{Interval: 30 * time.Second, RepeatFor: 30 * time.Second, URI: cb, ReplicationFactor: 2})))
	require.Equal(t, 200, r.Status, "%s", r.Body)
	require.Equal(t, []string{nodeA, nodeC}, c.holders(wid))

	shrunk := Membership{Nodes: []string{nodeA, nodeB}, Leaving: []string{nodeC}}
	c.reload(shrunk)
	assert.Equal(t, []string{nodeA, nodeB}, c.holders(wid))
	for _, a := range []string{nodeA, nodeB} {
		held, _ := c.nodes[a].Timer(id)
		assert.Equal(t, []string{nodeB, nodeA}, held.Placement().Replicas, a)
	}
	held, _ := c.nodes[nodeC].Timer(id)
	assert.Equal(t, Moved, held.State, "the leaving node's copy")
	// (once for each page that offered it: A's, and C's, which hands
	// its copy off)
	assert.GreaterOrEqual(t, c.nodes[nodeB].ResyncStatus().Replicated, uint64(1), "B passes the timer to A")
	assert.EqualValues(t, 0, c.nodes[nodeB].ResyncStatus().Tombstoned, "no tombstone to a leaving node")

	// A read through the leaving node finds the timer on its new
	// replicas: the copy it moved away is no delete.
	r, got := readTimer(t, c, nodeC, wid)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.Equal(t, []string{nodeA + "=live", nodeB + "=live", nodeC + "=moved"}, got.states())

	// C's moved copy, sent on (as a 409 answer to a stale write or pop
	// notice carries it), is the live definition to a replica, never its
	// delete.
	body := EncodeReplication(&held, c.nodes[nodeC].nowMs())
	spec, _, err := wire.Parse(body)
	require.NoError(t, err)
	assert.NotEmpty(t, spec.URI, "a moved copy encoded")
	widID, widBloom, err := wire.ParseWireID(wid)
	require.NoError(t, err)
	put := c.nodes[nodeC].internalPut(nodeB, widID, widBloom, body)
	put.URL = "/timers/" + wid
	r = c.serve(nodeB, put)
	assert.Equal(t, 200, r.Status, "%s", r.Body)
	kept, _ := c.nodes[nodeB].Timer(id)
	assert.Equal(t, Live, kept.State, "B's copy after C's moved copy reached it")
}

// TestLeavingNodeKeepsATimerItsNewBackupMissed: C leaves three nodes,
// rf 2, and a timer on (A, C) moves to (A, B). A, staying primary, takes
// it in place while B is cut off, so its replication to B fails. A tells
// C that it took the timer only once B has it: if C dropped its copy on
// A's word alone, A's crash would leave the timer nowhere, and once A
// restarts and B is back, no resync offers it again. C keeps it live
// instead, so A's start-up resync gets it back, and the operator's run
// again (A's failed send) places it on B. A's word comes from its
// resync, or from a pop notice C sends under the old view, which A
// places on the new one as it arrives.
func TestLeavingNodeKeepsATimerItsNewBackupMissed(t *testing.T) {
	for _, notice := range []bool{false, true} {
		t.Run(map[bool]string{false: "resync", true: "late-notice"}[notice], func(t *testing.T) {
			before, after := NewRing([]string{nodeA, nodeB, nodeC}), NewRing([]string{nodeA, nodeB})
			id := idMoving(before, after, []string{nodeA, nodeC}, []string{nodeA, nodeB})
			c := newCluster(t, nodeA, nodeB, nodeC)
			wid := wire.FormatWireID(id, before.Bloom([]string{nodeA, nodeC}))
			r := c.client(nodeB, "PUT", "/timers/"+wid, string(wire.Encode(wire.Timer{Interval: 10 * time.Second, RepeatFor: 30 * time.Second, URI: cb, ReplicationFactor: 2})))
			require.Equal(t, 200, r.Status, "%s", r.Body)

			shrunk := Membership{Nodes: []string{nodeA, nodeB}, Leaving: []string{nodeC}}
			c.down[nodeB] = true
			for _, a := range []string{nodeA, nodeC} {
				cfg := c.cfgs[a]
				cfg.Cluster = shrunk
				c.cfgs[a] = cfg
				require.NoError(t, c.nodes[a].SetCluster(shrunk), "SetCluster(%s)", a)
			}
			for range 30 { // A's replications to B fail every attempt
				c.settle()
				c.clock.advance(100 * time.Millisecond)
			}
			if notice {
				// A's pop notice goes to B only; C pops too, after
				// every replica's turn (it is no replica, its copy is
				// to be handed off), and its notice reaches A.
				require.Len(t, c.advance(15*time.Second, 200), 2, "pop 1 by A and by C")
			}
			held, _ := c.nodes[nodeC].Timer(id)
			assert.Equal(t, Live, held.State, "the leaving node's copy while B misses the timer")

			c.restart(nodeA)
			delete(c.down, nodeB)
			c.nodes[nodeA].Resync(true)
			c.reload(shrunk)
			for _, n := range c.nodes { // the operator runs again a resync that failed
				if s := n.ResyncStatus(); len(s.Failed) > 0 || s.SendFailures > 0 {
					n.Resync(false)
				}
			}
			c.finishResyncs()
			c.requirePlaced([]uint64{id}, shrunk.Nodes, 2)
			held, _ = c.nodes[nodeC].Timer(id)
			assert.Equal(t, Moved, held.State, "the leaving node's copy once B has the timer")
			c.down[nodeC] = true
			delete(c.nodes, nodeC)
			var seqs []string
			for _, p := range c.advance(35*time.Second, 200) {
				seqs = append(seqs, p.Header.Get(wire.HeaderSequenceNumber))
			}
			if notice {
				assert.Equal(t, []string{"2", "3"}, seqs, "the pops after the crash")
			} else {
				assert.Equal(t, []string{"1", "2", "3"}, seqs, "the pops after the crash")
			}
		})
	}
}

// TestLeavingNodeDropsACopyAnUpdateReplaced is a case the sweep found: C
// leaves three nodes, rf 2, and a timer on (B, C) moves to (B, A). B
// reloads first and takes the timer; its reference reaches C before C
// has reloaded, while the timer is still C's own, and C keeps its copy.
// The timer is updated on its new replicas. Once C has reloaded, B's
// resync asks C's page again, which offers the old definition: B holds
// the update, passes it on, and tells C it dealt with the timer, so C
// drops the copy the update replaced rather than pop it at its old rank
// until it is stopped.
func TestLeavingNodeDropsACopyAnUpdateReplaced(t *testing.T) {
	before, after := NewRing([]string{nodeA, nodeB, nodeC}), NewRing([]string{nodeA, nodeB})
	id := idMoving(before, after, []string{nodeB, nodeC}, []string{nodeB, nodeA})
	c := newCluster(t, nodeA, nodeB, nodeC)
	wid := wire.FormatWireID(id, before.Bloom([]string{nodeB, nodeC}))
	def := func(opaque string) string {
		return string(wire.Encode(wire.Timer{Interval: 30 * time.Second, RepeatFor: 30 * time.Second, URI: cb, Opaque: opaque, ReplicationFactor: 2}))
	}
	require.Equal(t, 200, c.client(nodeB, "PUT", "/timers/"+wid, def("v1")).Status)

	shrunk := Membership{Nodes: []string{nodeA, nodeB}, Leaving: []string{nodeC}}
	require.NoError(t, c.nodes[nodeB].SetCluster(shrunk))
	c.settle()
	held, _ := c.nodes[nodeC].Timer(id)
	require.Equal(t, Live, held.State, "C, not reloaded, keeps its copy on B's reference")
	require.Equal(t, 200, c.client(nodeB, "PUT", "/timers/"+wire.FormatWireID(id, after.Bloom([]string{nodeB, nodeA})), def("v2")).Status)

	c.reload(shrunk)
	held, _ = c.nodes[nodeC].Timer(id)
	assert.NotEqual(t, Live, held.State, "C's copy of the replaced definition")
	for _, p := range c.advance(35*time.Second, 200) {
		assert.Equal(t, "v2", string(p.Body), "pop %s", p.Header.Get(wire.HeaderSequenceNumber))
	}
}

// TestLeavingNodeWritingAnUpdateStopsItsOldCopy is a case the sweep
// found: C leaves three nodes, rf 2, and a timer on (C, A) moves to (B,
// A). C has reloaded, but the new primary B has not, so no reference has
// reached C, which still holds the timer live. An update through C by
// the ID a later answer's Location gives, whose bloom filter names only
// the new replicas, goes to them only, C being neither a replica nor
// named; C must still replace its own copy with it, or it pops the
// replaced definition at its old rank after the update was acknowledged.
func TestLeavingNodeWritingAnUpdateStopsItsOldCopy(t *testing.T) {
	before, after := NewRing([]string{nodeA, nodeB, nodeC}), NewRing([]string{nodeA, nodeB})
	id := idMoving(before, after, []string{nodeC, nodeA}, []string{nodeB, nodeA})
	c := newCluster(t, nodeA, nodeB, nodeC)
	wid := wire.FormatWireID(id, before.Bloom([]string{nodeC, nodeA}))
	def := func(interval int64, opaque string) string {
		return string(wire.Encode(wire.Timer{Interval: time.Duration(interval) * time.Millisecond, RepeatFor: time.Duration(interval) * time.Millisecond, URI: cb, Opaque: opaque, ReplicationFactor: 2}))
	}
	require.Equal(t, 200, c.client(nodeB, "PUT", "/timers/"+wid, def(10_000, "v1")).Status)

	require.NoError(t, c.nodes[nodeC].SetCluster(Membership{Nodes: []string{nodeA, nodeB}, Leaving: []string{nodeC}}))
	moved := wire.FormatWireID(id, after.Bloom([]string{nodeB, nodeA}))
	require.Equal(t, 200, c.client(nodeC, "PUT", "/timers/"+moved, def(30_000, "v2")).Status)
	held, _ := c.nodes[nodeC].Timer(id)
	assert.NotEqual(t, Live, held.State, "the leaving writer's copy after its update")
	for _, p := range c.advance(35*time.Second, 200) {
		assert.Equal(t, "v2", string(p.Body), "pop %s", p.Header.Get(wire.HeaderSequenceNumber))
	}
}

// TestRestartedNodeRepopulates restarts a node without its store: its
// start-up resync fetches back every timer it is a replica of, so the
// timers survive its peers' loss afterwards.
func TestRestartedNodeRepopulates(t *testing.T) {
	c := newCluster(t, nodeA, nodeB, nodeC)
	ids := c.createMany(40, 2, 30, 30)
	before := c.livePlacement()
	c.restart(nodeB)
	assert.Zero(t, c.nodes[nodeB].Stats().Timers)
	// Without repopulating, the timers placed under the current view are
	// passed over (until a repopulating page has marked B as may lack
	// them: a page offers a record to a replica marked so).
	c.nodes[nodeB].Resync(false)
	c.finishResyncs()
	assert.Zero(t, c.nodes[nodeB].Stats().Timers)
	c.nodes[nodeB].Resync(true)
	c.finishResyncs()
	assert.Equal(t, before, c.livePlacement())
	c.restart(nodeB)
	c.nodes[nodeB].Resync(true)
	c.finishResyncs()
	c.down[nodeA], c.down[nodeC] = true, true
	var onB []uint64
	for _, id := range ids {
		if slices.Contains(before[id], nodeB) {
			onB = append(onB, id)
		}
	}
	require.NotEmpty(t, onB)
	requireEachPopOnce(t, c.advance(35*time.Second, 200), onB, 1)
}

// TestReloadDuringRepopulatingResyncStillRepopulates restarts a node and
// reloads it to a new membership before its start-up resync has ended:
// the resync the reload starts still fetches the timers of the view.
func TestReloadDuringRepopulatingResyncStillRepopulates(t *testing.T) {
	c := newCluster(t, nodeA, nodeB, nodeC)
	c.createMany(30, 2, 30, 30)
	before := c.livePlacement()
	c.restart(nodeB)
	c.nodes[nodeB].Resync(true)
	// The operator adds D to B's file only; B's view changes, and its
	// first pages are answered 400 by A and C until they reload too.
	grown := Membership{Nodes: []string{nodeA, nodeB, nodeC}, Joining: []string{nodeD}}
	require.NoError(t, c.nodes[nodeB].SetCluster(grown))
	c.join(nodeD, grown)
	c.reload(grown)
	assert.True(t, c.nodes[nodeB].resyncRepopulate)
	c.requirePlaced(slices.Collect(maps.Keys(before)), []string{nodeA, nodeB, nodeC, nodeD}, 2)
}

// TestKeyedClusterResyncCompletes scales a cluster that has a key: every
// node's resync, its own pages included, completes (its own pages never
// cross the network, and were once refused as unsigned: N10).
func TestKeyedClusterResyncCompletes(t *testing.T) {
	c := keyed(t, nodeA, nodeB, nodeC)
	ids := c.createMany(30, 2, 30, 30)
	grown := Membership{Nodes: []string{nodeA, nodeB, nodeC}, Joining: []string{nodeD}}
	c.join(nodeD, grown)
	c.reload(grown)
	for a, n := range c.nodes {
		s := n.ResyncStatus()
		assert.Empty(t, s.Failed, a)
		assert.EqualValues(t, 0, s.Incomplete, a)
		assert.Zero(t, n.Stats().Forbidden, a)
	}
	c.requirePlaced(ids, []string{nodeA, nodeB, nodeC, nodeD}, 2)
}

// TestTimerMovedAwayAndBackIsHeldAgain scales up and back down: timers
// that moved off a node when the fourth joined move back when it leaves,
// and the tombstone the first move left there does not keep them out (as
// a generated plan showed: it did, and the node never held its timers
// again).
func TestTimerMovedAwayAndBackIsHeldAgain(t *testing.T) {
	c, ids := grownByD(t, 60)
	c.requirePlaced(ids, []string{nodeA, nodeB, nodeC, nodeD}, 2)
	c.reload(Membership{Nodes: []string{nodeA, nodeB, nodeC}, Leaving: []string{nodeD}})
	c.requirePlaced(ids, []string{nodeA, nodeB, nodeC}, 2)
	c.down[nodeD] = true
	delete(c.nodes, nodeD)
	requireEachPopOnce(t, c.advance(65*time.Second, 200), ids, 1)
}

// grownByD is a cluster of A, B and C holding 60 timers of rf 2 that pop
// once after interval seconds, scaled up by D to its end: some of the
// timers have moved off each of A, B and C.
func grownByD(t *testing.T, interval int) (*cluster, []uint64) {
	t.Helper()
	c := newRepairingCluster(t, nodeA, nodeB, nodeC)
	ids := c.createMany(60, 2, interval, interval)
	grown := Membership{Nodes: []string{nodeA, nodeB, nodeC}, Joining: []string{nodeD}}
	c.join(nodeD, grown)
	c.reload(grown)
	c.reload(Membership{Nodes: []string{nodeA, nodeB, nodeC, nodeD}})
	return c, ids
}

// TestTimerMovedBackBeforeItsNodeReloads is a case the sweep found: a
// scale moves timers off C, and a later one, to a view C has never been
// in, moves some back; C reloads last, after the others' resyncs pushed
// the timers to it. It takes them then, though it holds them as moved
// away: once they are placed under the new view no resync offers them
// again.
func TestTimerMovedBackBeforeItsNodeReloads(t *testing.T) {
	c, ids := grownByD(t, 600)
	c.requirePlaced(ids, []string{nodeA, nodeB, nodeC, nodeD}, 2)

	// D leaves as E joins: the view of A, B, C and E is one C has never
	// been in, and some of the timers D took from C come back to C.
	const nodeE = "10.0.0.5:7253"
	swapped := Membership{Nodes: []string{nodeA, nodeB, nodeC}, Joining: []string{nodeE}, Leaving: []string{nodeD}}
	c.join(nodeE, swapped)
	c.reloadLast(nodeC, swapped)
	c.requirePlaced(ids, []string{nodeA, nodeB, nodeC, nodeE}, 2)
	c.down[nodeD] = true
	delete(c.nodes, nodeD)
	requireEachPopOnce(t, c.advance(605*time.Second, 200), ids, 1)
}

// TestTimerMovedBackToAViewItWasIn: timers move off C when D joins and
// back when D leaves, to the view C was in before, and C reloads last.
// Before its reload C places the resyncs' pushes on its old view, where
// they are not its own, and keeps them as moved away; once it has
// reloaded, repair finds what C lacks and brings the timers back.
func TestTimerMovedBackToAViewItWasIn(t *testing.T) {
	c, ids := grownByD(t, 600)

	shrunk := Membership{Nodes: []string{nodeA, nodeB, nodeC}, Leaving: []string{nodeD}}
	c.reloadLast(nodeC, shrunk)
	c.advance(3*time.Second, 200) // C's first repair round after its reload
	c.requirePlaced(ids, []string{nodeA, nodeB, nodeC}, 2)
	// D handed its copies off before C took them (C kept them as moved
	// away under the view it had not left yet): the operator runs D's
	// resync again, and it completes.
	for _, n := range c.nodes {
		if s := n.ResyncStatus(); len(s.Failed) > 0 || s.SendFailures > 0 {
			n.Resync(false)
		}
	}
	c.finishResyncs()
	for a, n := range c.nodes {
		assert.Zero(t, n.ResyncStatus().SendFailures, a)
	}
	c.down[nodeD] = true
	delete(c.nodes, nodeD)
	requireEachPopOnce(t, c.advance(605*time.Second, 200), ids, 1)
}

// TestReplicaNotYetReloadedTakesItsTimersInItsOwnResync proves that a
// scale is placed when the last node's resync ends, before any repair
// round: timers move back to C when D leaves, and C reloads last. The
// others' resyncs push the timers to C while it is still on the view
// that places them on D, so C keeps them as moved away, and its 200 says
// it holds no live copy; the senders mark C as may lack them, and C's own
// resync is then offered them, though they were placed under the view it
// asks for (scenarios/README.md N47: without the mark a scale-down
// completed with a replica holding only a moved-away copy, G6).
func TestReplicaNotYetReloadedTakesItsTimersInItsOwnResync(t *testing.T) {
	c := newCluster(t, nodeA, nodeB, nodeC) // no repair rounds: the resyncs alone
	ids := c.createMany(60, 2, 600, 600)
	grown := Membership{Nodes: []string{nodeA, nodeB, nodeC}, Joining: []string{nodeD}}
	c.join(nodeD, grown)
	c.reload(grown)
	c.reload(Membership{Nodes: []string{nodeA, nodeB, nodeC, nodeD}})
	c.requirePlaced(ids, []string{nodeA, nodeB, nodeC, nodeD}, 2)

	shrunk := Membership{Nodes: []string{nodeA, nodeB, nodeC}, Leaving: []string{nodeD}}
	c.reloadLast(nodeC, shrunk)
	c.requirePlaced(ids, []string{nodeA, nodeB, nodeC}, 2)
	assert.Positive(t, c.nodes[nodeA].probeHits[probeResyncOffersLacking]+c.nodes[nodeB].probeHits[probeResyncOffersLacking],
		"a page offered C a timer placed under its view")
}

// TestLeavingNodeKeepsItsCopyUntilEveryNewReplicaHoldsIt is fresh seed
// 3704915 (scenarios/README.md N52): a timer of rf 2 on A and C moves
// to A and D as C leaves, and D reloads last. A's resync push and C's
// hand-off reach D before it reloads, and D keeps the record as moved
// away (a 200 without X-Chronos-Held: live). A's reference made C drop
// its copy on A's take alone, and A then crashed without its store: no
// live copy was left anywhere, and the scale completed so. An old
// replica drops its copy only once every new replica has answered
// holding it live; a send the replica answered so is sent again after a
// wait (heldAwayRetry), which its reload makes one it takes, and the
// leaving node's resync waits so for the slowest reload.
func TestLeavingNodeKeepsItsCopyUntilEveryNewReplicaHoldsIt(t *testing.T) {
	before := NewRing([]string{nodeA, nodeB, nodeC, nodeD})
	after := NewRing([]string{nodeA, nodeB, nodeD})
	id := idMoving(before, after, []string{nodeA, nodeC}, []string{nodeA, nodeD})
	c := newCluster(t, nodeA, nodeB, nodeC, nodeD) // no repair rounds: the resyncs alone
	wid := wire.FormatWireID(id, before.Bloom([]string{nodeA, nodeC}))
	r := c.client(nodeB, "PUT", "/timers/"+wid, string(wire.Encode(wire.Timer{Interval: time.Minute, RepeatFor: 10 * time.Minute, URI: cb, ReplicationFactor: 2})))
	require.Equal(t, 200, r.Status, "%s", r.Body)

	shrunk := Membership{Nodes: []string{nodeA, nodeB, nodeD}, Leaving: []string{nodeC}}
	for _, a := range []string{nodeA, nodeB, nodeC} {
		cfg := c.cfgs[a]
		cfg.Cluster = shrunk
		c.cfgs[a] = cfg
		require.NoError(t, c.nodes[a].SetCluster(shrunk), "SetCluster(%s)", a)
	}
	for range 10 { // A's push and C's hand-off reach D, not reloaded
		c.settle()
		c.clock.advance(50 * time.Millisecond)
	}
	held, _ := c.nodes[nodeD].Timer(id)
	require.NotEqual(t, Live, held.State, "D keeps the pushed record as moved away")

	c.restart(nodeA) // without its store, before D reloads
	c.nodes[nodeA].Resync(true)
	c.reload(shrunk)
	// The scale completes on the resyncs alone, none run again: the
	// leaving node's hand-off waited for D's reload.
	for _, a := range []string{nodeA, nodeB, nodeC, nodeD} {
		s := c.nodes[a].ResyncStatus()
		assert.Empty(t, s.Failed, "%s's resync failed peers", a)
		assert.Zero(t, s.SendFailures, "%s's resync send failures", a)
	}
	held, _ = c.nodes[nodeC].Timer(id)
	assert.Equal(t, Moved, held.State, "the leaving node's copy once D holds the timer")
	c.down[nodeC] = true
	delete(c.nodes, nodeC)
	c.requirePlaced([]uint64{id}, shrunk.Nodes, 2)
}

// TestWritesFromANodeNotYetReloadedReachTheNewReplicas updates and
// deletes timers through a node that has not reloaded the scaled
// membership yet, after the others have resynced: the writes, placed
// under the old view, reach only the old replicas, which place them on
// the new ones as they arrive (as a generated plan showed: a new backup
// never told of the primary's pops popped again; in another, a joined
// node popped a deleted timer).
func TestWritesFromANodeNotYetReloadedReachTheNewReplicas(t *testing.T) {
	c := newCluster(t, nodeA, nodeB, nodeC)
	ids := c.createMany(40, 2, 30, 30)
	grown := Membership{Nodes: []string{nodeA, nodeB, nodeC}, Joining: []string{nodeD}}
	c.join(nodeD, grown)
	for _, a := range []string{nodeA, nodeC} {
		require.NoError(t, c.nodes[a].SetCluster(grown))
	}
	c.settle()
	ring := NewRing([]string{nodeA, nodeB, nodeC})
	deleted := map[uint64]bool{}
	for i, id := range ids {
		wid := wire.FormatWireID(id, ring.Bloom(ring.Replicas(id, 2)))
		if i%4 == 0 {
			deleted[id] = true
			require.Equal(t, 200, c.client(nodeB, "DELETE", "/timers/"+wid, "").Status)
			continue
		}
		body := wire.Encode(wire.Timer{Interval: 40 * time.Second, RepeatFor: 40 * time.Second, URI: cb, Opaque: "updated"})
		require.Equal(t, 200, c.client(nodeB, "PUT", "/timers/"+wid, string(body)).Status)
	}
	require.NoError(t, c.nodes[nodeB].SetCluster(grown))
	c.finishResyncs()
	for _, n := range c.nodes { // the operator runs again a resync that gave up
		if s := n.ResyncStatus(); len(s.Failed) > 0 {
			n.Resync(false)
		}
	}
	c.finishResyncs()
	var live []uint64
	for _, id := range ids {
		if !deleted[id] {
			live = append(live, id)
		}
	}
	c.requirePlaced(live, []string{nodeA, nodeB, nodeC, nodeD}, 2)
	for id := range deleted {
		assert.Empty(t, c.livePlacement()[id], "deleted timer %s", wire.FormatID(id))
	}
	pops := c.advance(45*time.Second, 200)
	for _, p := range pops {
		assert.Equal(t, "updated", string(p.Body))
	}
	requireEachPopOnce(t, pops, live, 1)
}

// TestWritesDuringAScaleDownReachTheLeavingNode is a case the sweep
// found: a timer of rf 1 is on C, which is leaving, and A, its new
// primary, has not fetched it from C yet (its pages are lost), so C
// still holds and pops it. The client's wire ID names C. A read through
// B finds C's copy, and an update through B reaches C as well as A: C
// keeps it as moved away and pops the replaced definition no more (it
// went to the members the ID names, and a leaving node is none).
func TestWritesDuringAScaleDownReachTheLeavingNode(t *testing.T) {
	before, after := NewRing([]string{nodeA, nodeB, nodeC}), NewRing([]string{nodeA, nodeB})
	id := idMoving(before, after, []string{nodeC}, []string{nodeA})
	c := newCluster(t, nodeA, nodeB, nodeC)
	wid := wire.FormatWireID(id, before.Bloom([]string{nodeC}))
	def := func(opaque string) string {
		return string(wire.Encode(wire.Timer{Interval: 30 * time.Second, RepeatFor: 10 * time.Minute, URI: cb, Opaque: opaque, ReplicationFactor: 1}))
	}
	require.Equal(t, 200, c.client(nodeB, "PUT", "/timers/"+wid, def("v1")).Status)

	// Nothing reaches C's pages, and nothing C sends arrives: its copy
	// can be neither fetched nor handed off.
	c.lose = func(host string, req Request) bool {
		from, _, _ := senderInstance(req)
		return host == nodeC && strings.Contains(req.URL, "/timers?") || from == nodeC
	}
	shrunk := Membership{Nodes: []string{nodeA, nodeB}, Leaving: []string{nodeC}}
	for _, a := range []string{nodeA, nodeB, nodeC} {
		require.NoError(t, c.nodes[a].SetCluster(shrunk), "SetCluster(%s)", a)
	}
	c.settle()
	require.Equal(t, []string{nodeC}, c.holders(wid), "A has not fetched the timer")
	r, got := readTimer(t, c, nodeB, wid)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	assert.Contains(t, got.states(), nodeC+"=live")

	require.Equal(t, 200, c.client(nodeB, "PUT", "/timers/"+wid, def("v2")).Status)
	assert.Equal(t, []string{nodeA}, c.holders(wid))
	held, _ := c.nodes[nodeC].Timer(id)
	assert.Equal(t, Moved, held.State, "the leaving node's copy")
	pops := c.advance(65*time.Second, 200)
	assert.Len(t, pops, 2)
	for _, p := range pops {
		assert.Equal(t, "v2", string(p.Body), "pop %s", p.Header.Get(wire.HeaderSequenceNumber))
	}
}

// idMovedToD returns an ID whose replica at factor 1 among three (X)
// holds none of its default factor's copies once D joins, whose primary
// D then is, and X.
func idMovedToD() (uint64, string) {
	before, after := NewRing(three), NewRing([]string{nodeA, nodeB, nodeC, nodeD})
	for id := uint64(1); ; id++ {
		old, now := before.Replicas(id, 1)[0], after.Replicas(id, wire.DefaultReplicationFactor)
		if now[0] == nodeD && !slices.Contains(now, old) {
			return id, old
		}
	}
}

// TestWriteReachesTheReplicasOfTheViewBefore is fresh seed 2800170
// (scenarios/README.md N49): a timer of rf 1 on X moves to D as D
// joins, and X's hand-off to D is held (a clog into D), so X keeps its
// copy live, popping after every replica's turn. An update by the bare
// ID (its bloom names no one) through a node on the new view went to D
// and to the default's replicas only, was acknowledged by D, and X
// popped the definition it replaced. A write also goes to the replicas
// the timer had under the view before the proxy's (pastRings): X keeps
// the update as moved away and pops nothing more. The proxy knows that
// view from its latest change of view (after the scale's last step too,
// which leaves the view as it is) or, started since the scale began,
// from the scale's membership.
func TestWriteReachesTheReplicasOfTheViewBefore(t *testing.T) {
	id, x := idMovedToD()
	proxy := nodeA
	if x == nodeA {
		proxy = nodeB
	}
	bare := wire.FormatWireID(id, 0)
	def := func(interval time.Duration, opaque string) string {
		return string(wire.Encode(wire.Timer{Interval: interval, RepeatFor: 10 * interval, URI: cb, Opaque: opaque, ReplicationFactor: 1}))
	}
	scaling := Membership{Nodes: three, Joining: []string{nodeD}}
	for _, step := range []string{"reloaded proxy", "proxy started during the scale", "scale's last step given"} {
		t.Run(step, func(t *testing.T) {
			c := newCluster(t, three...)
			require.Equal(t, 200, c.client(proxy, "PUT", "/timers/"+bare, def(30*time.Second, "old")).Status)
			require.Equal(t, []string{x}, c.holders(bare))
			// Nothing X sends reaches D, nor D's pages asked of X: X can
			// neither hand its copy off nor have it fetched.
			c.lose = func(host string, req Request) bool {
				from, _, _ := senderInstance(req)
				return host == nodeD && from == x || host == x && from == nodeD
			}
			c.join(nodeD, scaling)
			c.reload(scaling)
			switch step {
			case "proxy started during the scale":
				c.restart(proxy)
			case "scale's last step given":
				c.reload(Membership{Nodes: []string{nodeA, nodeB, nodeC, nodeD}})
			}
			require.Equal(t, []string{x}, c.holders(bare), "X still holds its copy to hand off")
			for _, s := range c.net.take(cb) { // the pops made while the scale ran
				require.Equal(t, "old", string(s.req.Body))
				s.done(Response{Status: 200}, nil)
			}
			c.settle()
			require.Equal(t, 200, c.client(proxy, "PUT", "/timers/"+bare, def(20*time.Second, "new")).Status)
			assert.Equal(t, []string{nodeD}, c.holders(bare))
			held, _ := c.nodes[x].Timer(id)
			assert.Equal(t, Moved, held.State, "X's copy after the update")
			pops := c.advance(45*time.Second, 200)
			require.NotEmpty(t, pops)
			for _, p := range pops {
				assert.Equal(t, "new", string(p.Body), "pop %s", p.Header.Get(wire.HeaderSequenceNumber))
			}
		})
	}
}

// TestWriteSkipsAReplicaOfTheViewBeforeThatLeft: once a scale-down's
// last step is given, the leaving node is stopped, and the view before
// (which a write's targets take the replicas of, pastRings) still names
// it until the next change of view. A write of a timer it held goes to
// the members only: waiting on the stopped node would hold every such
// write for its timeout, and a delete that buried nothing would be
// answered 503 for the node that did not answer.
func TestWriteSkipsAReplicaOfTheViewBeforeThatLeft(t *testing.T) {
	four := []string{nodeA, nodeB, nodeC, nodeD}
	before := NewRing(four)
	var id uint64
	for id = 1; before.Replicas(id, 1)[0] != nodeD; id++ {
	}
	bare := wire.FormatWireID(id, 0)
	def := func(opaque string) string {
		return string(wire.Encode(wire.Timer{Interval: 30 * time.Second, RepeatFor: 10 * time.Minute, URI: cb, Opaque: opaque, ReplicationFactor: 1}))
	}
	c := newCluster(t, four...)
	require.Equal(t, 200, c.client(nodeA, "PUT", "/timers/"+bare, def("old")).Status)
	c.reload(Membership{Nodes: three, Leaving: []string{nodeD}})
	c.down[nodeD] = true
	delete(c.nodes, nodeD)
	c.reload(Membership{Nodes: three})
	toD := 0
	c.watch = func(s *sent, to string, _ int, _ bool) {
		if to == nodeD {
			toD++
		}
	}
	require.Equal(t, 200, c.client(nodeA, "PUT", "/timers/"+bare, def("new")).Status)
	assert.Zero(t, toD, "messages to the node that left")
	assert.Len(t, c.holders(bare), 1)
}

// TestDeleteByAnIDNamingALeavingReplicaReachesTheNewBackup deletes a
// timer of rf 2 that moved from (A, D) to (A, X) as D left, through the
// fourth node, which holds no copy, by the wire ID the client has (its
// bloom names A and D). The tombstone reaches X, which pops the timer no
// more. During the scale the replication factor the delete
// infers from the nodes the ID names counts D; counting only the members,
// it took rf 1 and reached A alone, and X popped the deleted timer at its
// rank. Once D is gone no node can count it: bits of the
// bloom no member sets say a replica has left, so the replication factor
// is unknown and the tombstone goes to every member, as for a bare chosen
// ID.
func TestDeleteByAnIDNamingALeavingReplicaReachesTheNewBackup(t *testing.T) {
	for _, gone := range []bool{false, true} {
		t.Run(fmt.Sprintf("leaving node gone %v", gone), func(t *testing.T) {
			m := movedOffD(t, gone)
			require.Equal(t, 200, m.c.client(m.other, "DELETE", "/timers/"+m.wid, "").Status)
			assert.Empty(t, m.c.holders(m.wid))
			assert.Empty(t, m.c.advance(65*time.Second, 200), "pops of the deleted timer")
		})
	}
}

// TestUpdateByAnIDNamingAReplicaThatLeftKeepsTheFactor is the update's
// counterpart, once D is gone: an update without a replication factor,
// by the same ID, through the node without a copy, reads the factor off
// the timer's replicas, as for a bare chosen ID, instead of taking the
// one member the ID names for it; the backup then pops the update, not
// the replaced definition.
func TestUpdateByAnIDNamingAReplicaThatLeftKeepsTheFactor(t *testing.T) {
	m := movedOffD(t, true)
	update := string(wire.Encode(wire.Timer{Interval: 30 * time.Second, RepeatFor: 10 * time.Minute, URI: cb, Opaque: "new"}))
	require.Equal(t, 200, m.c.client(m.other, "PUT", "/timers/"+m.wid, update).Status)
	assert.Equal(t, sorted([]string{nodeA, m.backup}), m.c.holders(m.wid))
	m.c.down[nodeA] = true
	wantPops(t, m.c.advance(35*time.Second, 200), "1:new")
}

// movedOff is a timer of rf 2 (pops every 30 s) that a scale-down moved
// from (A, D) to (A, backup), with the wire ID the client has from before.
type movedOff struct {
	c      *cluster
	wid    string
	backup string
	// other is the staying node that holds no copy.
	other string
}

// movedOffD scales a cluster of A, B, C and D down by D, to its end (D
// stopped) when gone, with a timer placed on (A, D) before.
func movedOffD(t *testing.T, gone bool) movedOff {
	t.Helper()
	before, after := NewRing([]string{nodeA, nodeB, nodeC, nodeD}), NewRing([]string{nodeA, nodeB, nodeC})
	var id uint64
	for id = 1; ; id++ {
		if slices.Equal(before.Replicas(id, 2), []string{nodeA, nodeD}) && after.Replicas(id, 2)[0] == nodeA {
			break
		}
	}
	m := movedOff{c: newCluster(t, nodeA, nodeB, nodeC, nodeD), wid: wire.FormatWireID(id, before.Bloom([]string{nodeA, nodeD})),
		backup: after.Replicas(id, 2)[1], other: nodeB}
	if m.backup == nodeB {
		m.other = nodeC
	}
	def := string(wire.Encode(wire.Timer{Interval: 30 * time.Second, RepeatFor: 10 * time.Minute, URI: cb, Opaque: "old", ReplicationFactor: 2}))
	require.Equal(t, 200, m.c.client(nodeA, "PUT", "/timers/"+m.wid, def).Status)
	m.c.reload(Membership{Nodes: []string{nodeA, nodeB, nodeC}, Leaving: []string{nodeD}})
	if gone {
		m.c.down[nodeD] = true
		delete(m.c.nodes, nodeD)
		m.c.reload(Membership{Nodes: []string{nodeA, nodeB, nodeC}})
	}
	require.Equal(t, sorted([]string{nodeA, m.backup}), m.c.holders(m.wid))
	return m
}

// TestResyncEndsWithAPeerDown proves a resync terminates when a peer never
// answers, and says which peer it gave up on.
func TestResyncEndsWithAPeerDown(t *testing.T) {
	c := newCluster(t, nodeA, nodeB, nodeC)
	c.createMany(10, 2, 30, 30)
	c.down[nodeC] = true
	c.nodes[nodeA].Resync(false)
	c.finishResyncs()
	s := c.nodes[nodeA].ResyncStatus()
	assert.Equal(t, []string{nodeC}, s.Failed)
	assert.EqualValues(t, 1, s.Incomplete)
	assert.Equal(t, 2, s.PeersDone)
	assert.Less(t, s.Finished.Sub(s.Started), 5*time.Minute)
}

// serve hands req to the node at addr and returns its reply, which must
// come at once.
func (c *cluster) serve(addr string, req Request) Response {
	c.t.Helper()
	var got *Response
	c.nodes[addr].Handle(asPeer(c.nodes[addr], req, c.peerOf(addr)), func(r Response) { got = &r })
	require.NotNil(c.t, got, "%s %s: no immediate reply", req.Method, req.URL)
	return *got
}

// resyncPage is the JSON form of a GET /timers answer.
type resyncPage struct {
	Timers []wire.PageEntry `json:"timers"`
}

// resyncURL is a GET /timers target.
func resyncURL(requester string, view uint64, extra string) string {
	return fmt.Sprintf("/timers?node-for-replicas=%s&cluster-view-id=%d%s", url.QueryEscape(requester), view, extra)
}

// TestResyncGetRefusesBadRequests covers api.md's answers to a GET
// /timers it must refuse.
func TestResyncGetRefusesBadRequests(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Address, c.Cluster = nodeA, Membership{Nodes: []string{nodeA, nodeB}} })
	view := h.node.ring.ViewID()
	for target, want := range map[string]int{
		"/timers":                                                   400,
		"/timers?node-for-replicas=" + nodeB:                        400,
		"/timers?cluster-view-id=1":                                 400,
		resyncURL(nodeB, view+1, ""):                                400,
		resyncURL(nodeB, view, "&time-from=-1"):                     400,
		resyncURL(nodeB, view, "&time-from=x"):                      400,
		resyncURL(nodeB, view, "&include-current-view=maybe"):       400,
		resyncURL("10.9.9.9:7253", view, ""):                        404,
		resyncURL(nodeB, view, ""):                                  200,
		"/timers?node-for-replicas=" + nodeB + "&cluster-view-id=x": 400,
	} {
		r := h.do("GET", target, "")
		assert.Equal(t, want, r.Status, "GET %s: %s", target, r.Body)
		if want != 200 {
			assert.NotEmpty(t, r.Header.Get(wire.HeaderReason), target)
		}
	}
	r := h.send(Request{Method: "GET", URL: resyncURL(nodeB, view, ""), Header: Header{HeaderRange: "none"}})
	assert.Equal(t, 400, r.Status)
	assert.Equal(t, 405, h.do("PUT", "/timers", "").Status)
	assert.Equal(t, 405, h.do("GET", "/timers/references", "").Status)
	for _, body := range []string{"", "{}", `{"IDs":[{"ID":"zz","ReplicaIndex":0}]}`, `{"IDs":[{"ID":"0000000000000001","ReplicaIndex":-1}]}`, `{"IDs":[]} {}`} {
		assert.Equal(t, 400, h.do("DELETE", "/timers/references", body).Status, body)
	}
	assert.Equal(t, 202, h.do("DELETE", "/timers/references", `{"IDs":[{"ID":"0000000000000001","ReplicaIndex":0}]}`).Status)
}

// TestResyncAPINeedsTheClusterKey proves GET /timers and DELETE
// /timers/references are internal: without the key's signature they are
// refused and change nothing.
func TestResyncAPINeedsTheClusterKey(t *testing.T) {
	c := keyed(t, nodeA, nodeB)
	c.createMany(5, 2, 30, 30)
	a := c.nodes[nodeA]
	target := resyncURL(nodeB, a.ring.ViewID(), "&include-current-view=true")
	unsigned := Header{HeaderSignature: ""}
	assert.Equal(t, 403, c.serve(nodeA, Request{Method: "GET", URL: target, Header: unsigned}).Status)
	r := c.serve(nodeA, Request{Method: "GET", URL: target, Header: Header{}}) // signed as a peer's
	assert.Equal(t, 200, r.Status)
	assert.Contains(t, string(r.Body), "OldReplicas")
	assert.Equal(t, 403, c.serve(nodeA, Request{Method: "DELETE", URL: "/timers/references", Header: Header{HeaderSignature: ""}, Body: []byte(`{"IDs":[]}`)}).Status)
}

// TestResyncPagesMoveOn pages through a node's timers: each page holds
// Range timers, and the rest of its last millisecond, and following the
// pages yields every timer the requester will hold exactly once.
func TestResyncPagesMoveOn(t *testing.T) {
	c := newCluster(t, nodeA, nodeB)
	for range 5 { // 50 timers a millisecond
		c.clock.advance(time.Millisecond)
		c.createMany(50, 2, 10, 10)
	}
	view := c.nodes[nodeA].ring.ViewID()
	// Without include-current-view, timers placed under the view are
	// passed over (asked first: a repopulating page marks the requester
	// as may lack every timer it offers, and a page offers a record to
	// a replica marked so).
	r := c.serve(nodeA, Request{Method: "GET", URL: resyncURL(nodeB, view, ""), Header: Header{}})
	assert.Equal(t, `{"timers":[]}`, string(r.Body))
	seen := map[string]int{}
	from, pages := "", 0
	step := loopBound(t, 250, "resync pages until the last")
	for {
		step()
		req := Request{Method: "GET", URL: resyncURL(nodeB, view, "&include-current-view=true"+from), Header: Header{HeaderRange: "60"}}
		r := c.serve(nodeA, req)
		require.Contains(t, []int{200, 206}, r.Status, "%s", r.Body)
		var page resyncPage
		require.NoError(t, json.Unmarshal(r.Body, &page))
		for _, e := range page.Timers {
			seen[e.TimerID]++
		}
		pages++
		if r.Status == 200 {
			break
		}
		// Pages end on a millisecond: 50 timers share each one.
		assert.Equal(t, strconv.Itoa(len(page.Timers)), r.Header.Get(HeaderContentRange))
		assert.GreaterOrEqual(t, len(page.Timers), 60, "60 asked, and the rest of the last millisecond")
		from = "&time-from=" + r.Header.Get(HeaderNextTimeFrom)
	}
	assert.Len(t, seen, 250)
	for id, k := range seen {
		assert.Equal(t, 1, k, id)
	}
	assert.LessOrEqual(t, pages, 5)
}

// TestResyncAgainRepairsAnOldReplicaThatMissedAnUpdate is a case the
// sweep found: an old replica no longer involved (C) is cut off while
// the new primary's resync sends it the rebalancing tombstone, and while
// the timer is updated. When the operator runs the resync again, C's
// page offers its stale definition; the new primary, holding the update,
// passes the update on to C, which then keeps it as a tombstone instead
// of popping the replaced definition.
func TestResyncAgainRepairsAnOldReplicaThatMissedAnUpdate(t *testing.T) {
	c, id, wid := clusterWithMovingTimer(t)
	def := movingDef
	require.Equal(t, 200, c.client(nodeB, "PUT", "/timers/"+wid, def("v1")).Status)

	c.down[nodeC] = true
	grown := Membership{Nodes: []string{nodeA, nodeB, nodeC}, Joining: []string{nodeD}}
	c.join(nodeD, grown)
	c.reload(grown)
	require.Equal(t, 200, c.client(nodeB, "PUT", "/timers/"+wid, def("v2")).Status)
	stale, _ := c.nodes[nodeC].Timer(id)
	require.Equal(t, Live, stale.State, "C missed the scale's tombstone and the update")

	delete(c.down, nodeC)
	c.nodes[nodeD].Resync(false)
	c.finishResyncs()
	held, _ := c.nodes[nodeC].Timer(id)
	assert.NotEqual(t, Live, held.State, "C's stale copy after the resync ran again")
	assert.Greater(t, held.Version, stale.Version, "C holds the update's record")
	for _, p := range c.advance(11*time.Minute, 200) {
		assert.Equal(t, "v2", string(p.Body), "pop %s", p.Header.Get(wire.HeaderSequenceNumber))
	}
}

// TestScaleKeepsTheEarliestStartOfAnOldReplicaLeftBehind is a case the
// sweep found: a timer on C and A (rf 2) reached A 5 s late (A was
// paused), and moves to D and A when D joins. A's resync has a page of
// other timers to deal with first, so D fetches the timer from A, late
// start and old replicas and all, and sends C, which has not reloaded
// yet, the rebalancing tombstone; C keeps the earlier start on its
// moved-away copy and answers with it, but, not reloaded, keeps no copy
// for D's resync to fetch. D must take the start from that answer, or
// the timer pops 5 s late for good.
func TestScaleKeepsTheEarliestStartOfAnOldReplicaLeftBehind(t *testing.T) {
	before := NewRing([]string{nodeA, nodeB, nodeC})
	after := NewRing([]string{nodeA, nodeB, nodeC, nodeD})
	placedOn := func(id uint64, was, is []string) bool {
		return slices.Equal(before.Replicas(id, 2), was) && slices.Equal(after.Replicas(id, 2), is)
	}
	c := newCluster(t, nodeA, nodeB, nodeC)
	start := c.clock.now
	def := func(interval int64, opaque string) []byte {
		return wire.Encode(wire.Timer{Interval: time.Duration(interval) * time.Millisecond, RepeatFor: time.Duration(3*interval) * time.Millisecond, URI: cb, Opaque: opaque, ReplicationFactor: 2})
	}
	// A page of timers on A and B, due first, that stay there.
	var id uint64
	for n := 0; n < DefaultResyncPage; {
		if id++; placedOn(id, []string{nodeA, nodeB}, []string{nodeA, nodeB}) {
			wid := wire.FormatWireID(id, before.Bloom([]string{nodeA, nodeB}))
			require.Equal(t, 200, c.client(nodeB, "PUT", "/timers/"+wid, string(def(10_000, "filler"))).Status)
			n++
		}
	}
	for id++; !placedOn(id, []string{nodeC, nodeA}, []string{nodeD, nodeA}); id++ {
	}
	var got *Response
	c.nodes[nodeB].Handle(Request{Method: "PUT", URL: "/timers/" + wire.FormatWireID(id, before.Bloom([]string{nodeC, nodeA})),
		Header: Header{}, Body: def(30_000, "x")}, func(r Response) { got = &r })
	held := c.net.take("http://" + nodeA)
	c.settle() // C applies at once
	c.clock.advance(5 * time.Second)
	c.net.out = append(c.net.out, held...)
	c.settle() // A applies 5 s late
	require.NotNil(t, got)
	require.Equal(t, 200, got.Status)

	grown := Membership{Nodes: []string{nodeA, nodeB, nodeC}, Joining: []string{nodeD}}
	c.join(nodeD, grown)
	c.reloadLast(nodeC, grown)
	c.requirePlaced([]uint64{id}, []string{nodeA, nodeB, nodeC, nodeD}, 2)
	// Steps of 100 ms from the create, so that a pop on time reads as
	// a whole step: how long the resync took moves the phase.
	if off := c.clock.now.Sub(start) % (100 * time.Millisecond); off != 0 {
		c.clock.advance(100*time.Millisecond - off)
		c.settle()
	}
	var at []time.Duration
	for c.clock.now.Sub(start) < 100*time.Second {
		for _, p := range c.advance(100*time.Millisecond, 200) {
			if string(p.Body) == "x" {
				at = append(at, c.clock.now.Sub(start).Round(100*time.Millisecond))
			}
		}
	}
	assert.Equal(t, []time.Duration{30 * time.Second, time.Minute, 90 * time.Second}, at, "pops, from the create")
}

// idMoving returns the first ID whose replicas are from under before and
// to under after, with len(from) replicas: a timer a scale moves as a test
// needs it.
func idMoving(before, after *Ring, from, to []string) uint64 {
	for id := uint64(1); ; id++ {
		if slices.Equal(before.Replicas(id, len(from)), from) && slices.Equal(after.Replicas(id, len(from)), to) {
			return id
		}
	}
}

// clusterWithBFull is a cluster of A, B and C, in which B, if full, may
// hold one timer and holds one of its own.
func clusterWithBFull(t *testing.T, full bool) *cluster {
	c := newClusterWith(t, func(a string, cfg *Config) {
		if full && a == nodeB {
			cfg.Limits.MaxTimers = 1
		}
	}, nodeA, nodeB, nodeC)
	if full {
		ring := NewRing([]string{nodeA, nodeB, nodeC})
		own := idMoving(ring, ring, []string{nodeB}, []string{nodeB})
		r := c.client(nodeB, "PUT", "/timers/"+wire.FormatWireID(own, 0),
			string(wire.Encode(wire.Timer{Interval: time.Minute, URI: cb, ReplicationFactor: 1})))
		require.Equal(t, 200, r.Status, "%s", r.Body)
	}
	return c
}

// TestWriteCountsOnlyReplicasThatHoldIt writes a timer through a node
// whose view has moved on (a scale-down under way) to the one replica
// that view names, which has not reloaded and places the timer on the
// leaving node instead. That replica answers 200, keeping a moved marker
// and passing the record on; a full one has no room for the marker and
// refuses it at its limit, as it would the timer (refuseFull). Neither
// holds the timer, so neither vouches for the write: the proxy answers
// 503 rather than acknowledge a timer no replica it wrote to holds.
// Counted on such answers, a generated plan whose nodes were full
// acknowledged hundreds of creates that no node held.
func TestWriteCountsOnlyReplicasThatHoldIt(t *testing.T) {
	for _, full := range []bool{false, true} {
		t.Run(fmt.Sprintf("full %v", full), func(t *testing.T) {
			before := NewRing([]string{nodeA, nodeB, nodeC})
			after := NewRing([]string{nodeA, nodeB})
			id := idMoving(before, after, []string{nodeC}, []string{nodeB})
			c := clusterWithBFull(t, full)
			require.NoError(t, c.nodes[nodeA].SetCluster(Membership{Nodes: []string{nodeA, nodeB}, Leaving: []string{nodeC}}))
			c.settle()
			wid := wire.FormatWireID(id, 0)
			body := string(wire.Encode(wire.Timer{Interval: 30 * time.Second, RepeatFor: 10 * time.Minute, URI: cb, ReplicationFactor: 1}))
			r := c.client(nodeA, "PUT", "/timers/"+wid, body)
			assert.Equal(t, 503, r.Status, "%s", r.Body)
			if full {
				assert.Contains(t, string(r.Body), "no replica could take the write: node holds 1 timers, its limit")
			} else {
				assert.Contains(t, string(r.Body), "may still take effect")
			}
			assert.Empty(t, slices.DeleteFunc(c.holders(wid), func(a string) bool { return a == nodeC }),
				"no node but the one B's view places it on holds it")

			// Once B has reloaded too, it holds the timer and says so.
			require.NoError(t, c.nodes[nodeB].SetCluster(Membership{Nodes: []string{nodeA, nodeB}, Leaving: []string{nodeC}}))
			c.settle()
			if !full {
				r = c.client(nodeA, "PUT", "/timers/"+wid, body)
				assert.Equal(t, 200, r.Status, "%s", r.Body)
				assert.Contains(t, c.holders(wid), nodeB)
			}
		})
	}
}

// TestWriteOfADefinitionThatNeverFiresIsAcknowledged updates a timer,
// through a node that is none of its replicas, to a definition that
// never fires (api.md: a repeat-for below the interval). Its replica
// takes it and holds it ended at once, and says so (HeaderHeld "ended");
// that answer vouches for the write as a live copy's would: the update
// is acknowledged, and the replica pops nothing more. Counted as a copy
// kept elsewhere, the proxy answered 503 "a scale is under way" to a
// write that had taken effect.
func TestWriteOfADefinitionThatNeverFiresIsAcknowledged(t *testing.T) {
	ring := NewRing([]string{nodeA, nodeB, nodeC})
	id := idMoving(ring, ring, []string{nodeC}, []string{nodeC})
	c := newClusterWith(t, nil, nodeA, nodeB, nodeC)
	wid := wire.FormatWireID(id, 0)
	r := c.client(nodeA, "PUT", "/timers/"+wid, string(wire.Encode(wire.Timer{Interval: time.Second, RepeatFor: time.Minute, URI: cb, ReplicationFactor: 1})))
	require.Equal(t, 200, r.Status, "%s", r.Body)
	c.advance(1500*time.Millisecond, 200)
	r = c.client(nodeA, "PUT", "/timers/"+wid, string(wire.Encode(wire.Timer{Interval: 15 * time.Second, RepeatFor: 14 * time.Second, URI: cb, ReplicationFactor: 1})))
	assert.Equal(t, 200, r.Status, "%s", r.Body)
	held := c.mustTimer(nodeC, id)
	assert.Equal(t, Tombstone, held.State, "the replica holds the update ended")
	assert.Empty(t, c.advance(time.Minute, 200), "pops after the update")
}

// TestFullNodeRefusesAMovedCopyItCannotKeep hands B a pop notice of a
// timer its view places on C alone, from a primary whose view places it
// on B (a scale under way). With room, B keeps it as a copy moved away,
// which learns the pops the notice tells of: should a later view place
// the timer on B, a stale record that brings it back pops none of them
// again (learnMoved). Full, B has no room for that copy, and says so
// with a 503 at its limit, as it would for the timer: answering 200 it
// acknowledged a word it had dropped. A full replica was told pops 15 to
// 19 were made, answered 200, dropped the copy, and popped all five again
// once a scale placed the timer on it and a stale resync page brought
// it (fresh seed 9728020, scenarios/README.md N80).
func TestFullNodeRefusesAMovedCopyItCannotKeep(t *testing.T) {
	ring := NewRing([]string{nodeA, nodeB, nodeC})
	id := idMoving(ring, ring, []string{nodeC}, []string{nodeC})
	for _, full := range []bool{false, true} {
		t.Run(fmt.Sprintf("full %v", full), func(t *testing.T) {
			c := clusterWithBFull(t, full)
			spec := wire.Timer{Interval: time.Second, RepeatFor: time.Minute, URI: cb, ReplicationFactor: 1}
			notice := newTimer(id, id, spec, c.clock.now.UnixMilli()-3500, 3, &Placement{Replicas: []string{nodeB}}, 0, nil)
			r := c.offer(nodeB, *notice)
			if full {
				assert.Equal(t, 503, r.Status, "%s", r.Body)
				assert.Equal(t, "node holds 1 timers, its limit", r.Header.Get(wire.HeaderReason))
				_, held := c.nodes[nodeB].Timer(id)
				assert.False(t, held, "a full node keeps no copy")
				return
			}
			assert.Equal(t, 200, r.Status, "%s", r.Body)
			moved := c.mustTimer(nodeB, id)
			assert.Equal(t, Moved, moved.State)
			assert.Equal(t, uint32(3), moved.Seq, "the moved copy learned the pops the notice told of")
		})
	}
}

// TestResyncRefusedAtALimitIsIncomplete scales a timer's only replica, C,
// out of the cluster while the node that takes its place, A, is full. A
// is offered the timer by its resync and refuses it; C's hand-off is
// refused too. Both resyncs end incomplete, each naming itself, so an
// operator who waits for every resync to complete (docs/operations.md)
// never stops C, which goes on holding and popping the timer. A resync
// that called this complete let a generated plan stop a leaving node
// holding the only copies of hundreds of timers.
func TestResyncRefusedAtALimitIsIncomplete(t *testing.T) {
	before, after := NewRing([]string{nodeA, nodeB, nodeC}), NewRing([]string{nodeA, nodeB})
	id := idMoving(before, after, []string{nodeC}, []string{nodeA})
	c := newClusterWith(t, func(a string, cfg *Config) {
		if a == nodeA {
			cfg.Limits.MaxTimers = 1
		}
	}, nodeA, nodeB, nodeC)
	def := string(wire.Encode(wire.Timer{Interval: 30 * time.Second, RepeatFor: 10 * time.Minute, URI: cb, ReplicationFactor: 1}))
	own := idMoving(before, after, []string{nodeA}, []string{nodeA})
	for _, i := range []uint64{own, id} {
		r := c.client(nodeB, "PUT", "/timers/"+wire.FormatWireID(i, 0), def)
		require.Equal(t, 200, r.Status, "%s", r.Body)
	}
	wid := wire.FormatWireID(id, 0)
	require.Equal(t, []string{nodeC}, c.holders(wid))

	shrunk := Membership{Nodes: []string{nodeA, nodeB}, Leaving: []string{nodeC}}
	for _, a := range []string{nodeA, nodeB, nodeC} {
		require.NoError(t, c.nodes[a].SetCluster(shrunk), "SetCluster(%s)", a)
	}
	c.settle()
	c.advance(10*time.Second, 200)
	st := c.nodes[nodeA].ResyncStatus()
	assert.False(t, st.Running)
	assert.EqualValues(t, 1, st.Refused, "timers A refused")
	assert.Equal(t, []string{nodeA}, st.Failed, "A names itself")
	assert.Contains(t, c.nodes[nodeC].ResyncStatus().Failed, nodeC, "C's hand-off was refused")
	assert.Equal(t, []string{nodeC}, c.holders(wid), "C keeps the only copy")
	assert.Empty(t, c.nodes[nodeB].ResyncStatus().Failed, "B had nothing to take")
}

// TestDeleteCountsOnlyTheTimersReplicas deletes an rf 1 timer through a
// node of the default factor's replicas, which holds no copy but takes
// the tombstone, while the timer's one replica is unreachable. The
// delete answers 503: the tombstone the proxy took itself vouches for
// nothing, since that node was never going to pop the timer, and the
// replica goes on popping. Counted (with a quorum of the default's two),
// a generated plan acknowledged such a delete and the replica popped the
// deleted timer for its whole repeat-for.
func TestDeleteCountsOnlyTheTimersReplicas(t *testing.T) {
	c := newCluster(t, nodeA, nodeB, nodeC)
	ring := NewRing([]string{nodeA, nodeB, nodeC})
	var id uint64
	for id = 1; ; id++ {
		if r := ring.Replicas(id, 2); r[0] != nodeB && r[1] == nodeB {
			break
		}
	}
	primary := ring.Replicas(id, 1)[0]
	wid := wire.FormatWireID(id, ring.Bloom([]string{primary}))
	body := string(wire.Encode(wire.Timer{Interval: 30 * time.Second, RepeatFor: 10 * time.Minute, URI: cb, ReplicationFactor: 1}))
	require.Equal(t, 200, c.client(primary, "PUT", "/timers/"+wid, body).Status)
	c.down[primary] = true
	r := c.client(nodeB, "DELETE", "/timers/"+wid, "")
	assert.Equal(t, 503, r.Status, "%s", r.Body)
	c.down[primary] = false
	assert.Equal(t, []string{primary}, c.holders(wid))
}

// TestRecreateReachesTheOldFactorsReplicas lets an rf 3 timer finish, so
// that every replica holds its tombstone; the third replica then takes an
// update with rf 3 that makes it live there alone (its replication to the
// others lost), and another replica takes an update without a factor,
// which creates the finished timer again with the default, rf 2. That
// write also reaches the replicas of the factor of the tombstone it held
// (alsoHolders), so the third replica takes it and no node pops the
// replaced definition; written to the default's two alone, the third
// popped it beside them.
func TestRecreateReachesTheOldFactorsReplicas(t *testing.T) {
	c := newCluster(t, nodeA, nodeB, nodeC)
	ring := NewRing([]string{nodeA, nodeB, nodeC})
	id := uint64(1)
	replicas := ring.Replicas(id, 3)
	third, proxy := replicas[2], replicas[1]
	wid := wire.FormatWireID(id, 0)
	def := func(opaque string, rf int) string {
		return string(wire.Encode(wire.Timer{Interval: 10 * time.Second, RepeatFor: 10 * time.Second, URI: cb, Opaque: opaque, ReplicationFactor: rf}))
	}
	require.Equal(t, 200, c.client(proxy, "PUT", "/timers/"+wid, def("v1", 3)).Status)
	require.Len(t, c.advance(11*time.Second, 200), 1, "the one pop of v1")
	require.Empty(t, c.holders(wid), "v1 finished")

	var got *Response
	c.nodes[third].Handle(Request{Method: "PUT", URL: "/timers/" + wid, Header: Header{}, Body: []byte(def("v2", 3))}, func(r Response) { got = &r })
	c.settleLosing(func(host string, _ Request) bool { return host != third })
	require.NotNil(t, got)
	require.Equal(t, []string{third}, c.holders(wid), "v2 live on the third replica alone")

	c.advance(time.Second, 200)
	r := c.client(proxy, "PUT", "/timers/"+wid, def("v3", 0))
	require.Equal(t, 200, r.Status, "%s", r.Body)
	for _, p := range c.advance(25*time.Second, 200) {
		assert.Equal(t, "v3", string(p.Body), "pop %s", p.Header.Get(wire.HeaderSequenceNumber))
	}
}

// TestDeleteStandsOnlyWhereItRefutes deletes, by a bare ID (its factor
// unknown, so the tombstone goes to every member), an rf 1 timer whose
// one replica does not answer. The two members that answer held nothing:
// their tombstones bury nothing and live only tombstoneMin, so once they
// expire nothing would answer that replica's notices, and it would pop
// the deleted timer to its end. The delete answers 503 (it may still
// take effect) rather than 200; with every member answering and none
// holding the timer there is nothing to refute, and it answers 200; and
// once the replica is back, it buries the timer and answers so.
func TestDeleteStandsOnlyWhereItRefutes(t *testing.T) {
	c := newCluster(t, nodeA, nodeB, nodeC)
	ring := NewRing([]string{nodeA, nodeB, nodeC})
	id := uint64(1)
	replica := ring.Replicas(id, 1)[0]
	var proxy string // outside the default's replicas: it holds nothing
	for _, a := range []string{nodeA, nodeB, nodeC} {
		if !slices.Contains(ring.Replicas(id, 2), a) {
			proxy = a
		}
	}
	assert.Equal(t, 200, c.client(proxy, "DELETE", "/timers/"+wire.FormatWireID(id+1, 0), "").Status, "nothing held anywhere, every member answered")

	wid := wire.FormatWireID(id, 0)
	body := string(wire.Encode(wire.Timer{Interval: 30 * time.Second, RepeatFor: 10 * time.Minute, URI: cb, ReplicationFactor: 1}))
	require.Equal(t, 200, c.client(replica, "PUT", "/timers/"+wid, body).Status)
	require.Equal(t, []string{replica}, c.holders(wid))
	c.down[replica] = true
	r := c.client(proxy, "DELETE", "/timers/"+wid, "")
	assert.Equal(t, 503, r.Status, "%s", r.Body)
	assert.Contains(t, string(r.Body), "none of which held the timer")
	c.down[replica] = false
	r = c.client(proxy, "DELETE", "/timers/"+wid, "")
	assert.Equal(t, 200, r.Status, "%s", r.Body)
	assert.Empty(t, c.holders(wid))
}

// TestDeleteOfAFinishedTimerStandsOnItsTombstone deletes an rf 2 timer
// that has made its last pop while one replica is down: the other's
// tombstone of the finished definition answers for it, as a live copy's
// would, so the delete answers 200 (a finished timer pops no more).
func TestDeleteOfAFinishedTimerStandsOnItsTombstone(t *testing.T) {
	c := newCluster(t, nodeA, nodeB, nodeC)
	r := c.client(nodeA, "POST", "/timers", string(wire.Encode(wire.Timer{Interval: 2 * time.Second, RepeatFor: 2 * time.Second, URI: cb, ReplicationFactor: 2})))
	require.Equal(t, 200, r.Status)
	wid := strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
	require.Len(t, c.advance(5*time.Second, 200), 1)
	replicas := NewRing([]string{nodeA, nodeB, nodeC}).Replicas(mustID(t, wid), 2)
	c.down[replicas[1]] = true
	r = c.client(replicas[0], "DELETE", "/timers/"+wid, "")
	assert.Equal(t, 200, r.Status, "%s", r.Body)
}

// TestPagePassesOverTimersTheScaleDidNotMove: after a change of view, a
// page offers a requester the timers whose placement changed, not those
// their writer placed, under the view before, on the replicas and ranks
// they have now (taking them would change nothing); a repopulating
// requester (include-current-view) still gets every one.
func TestPagePassesOverTimersTheScaleDidNotMove(t *testing.T) {
	four := append(slices.Clone(three), nodeD)
	was, is := NewRing(three), NewRing(four)
	c := newClusterWith(t, nil, three...)
	fillCluster(c, 300, 2)
	n := c.nodes[nodeA]
	require.NoError(t, n.SetCluster(Membership{Nodes: four}))
	offered := func(current bool) map[uint64]bool {
		url := fmt.Sprintf("/timers?node-for-replicas=%s&cluster-view-id=%d&include-current-view=%t", nodeB, n.ViewID(), current)
		resp := n.resyncPage(Request{Method: "GET", URL: url, Header: Header{HeaderRange: strconv.Itoa(MaxResyncPage)}})
		require.Equal(t, 200, resp.Status, "%s", resp.Body)
		entries, err := wire.ParsePage(resp.Body)
		require.NoError(t, err)
		ids := map[uint64]bool{}
		for _, e := range entries {
			id, err := wire.ParseID(e.TimerID)
			require.NoError(t, err)
			ids[id] = true
		}
		return ids
	}
	moved, all := offered(false), offered(true)
	var kept, changed int
	n.Held(func(tm *Timer) bool {
		after := is.Replicas(tm.ID, 2)
		if !slices.Contains(after, nodeB) {
			return true
		}
		require.True(t, all[tm.ID], "a repopulating page left out %x", tm.ID)
		if slices.Equal(was.Replicas(tm.ID, 2), after) {
			kept++
			require.False(t, moved[tm.ID], "offered %x, placed on %v before and after", tm.ID, after)
		} else {
			changed++
			require.True(t, moved[tm.ID], "left out %x, placed on %v, now %v", tm.ID, was.Replicas(tm.ID, 2), after)
		}
		return true
	})
	require.Positive(t, kept)
	require.Positive(t, changed)
}

// TestResyncTellsOthersToDropOnlyWhatIsDurable: C leaves three nodes, and
// an rf 1 timer on C moves to B, which keeps its records on disk. B takes
// the timer from C's page, in memory first (a resynced record reaches the
// disk lazily); it tells C to drop its copy only once the take is
// durable. Told at once, C dropped it, and B, crashing within the second,
// restarted without it: the timer was nowhere (a case the sweep found).
func TestResyncTellsOthersToDropOnlyWhatIsDurable(t *testing.T) {
	before, after := NewRing([]string{nodeA, nodeB, nodeC}), NewRing([]string{nodeA, nodeB})
	id := idMoving(before, after, []string{nodeC}, []string{nodeB})
	disk := newMemStorage()
	c := newClusterWith(t, func(addr string, cfg *Config) {
		if addr == nodeB {
			cfg.Storage = disk
		}
	}, nodeA, nodeB, nodeC)
	wid := wire.FormatWireID(id, before.Bloom([]string{nodeC}))
	r := c.client(nodeA, "PUT", "/timers/"+wid, string(wire.Encode(wire.Timer{Interval: 30 * time.Second, RepeatFor: 60 * time.Second, URI: cb, ReplicationFactor: 1})))
	require.Equal(t, 200, r.Status, "%s", r.Body)

	disk.hold = true // B's disk does not answer yet
	shrunk := Membership{Nodes: []string{nodeA, nodeB}, Leaving: []string{nodeC}}
	for _, a := range []string{nodeA, nodeB, nodeC} {
		require.NoError(t, c.nodes[a].SetCluster(shrunk))
	}
	for range 100 {
		c.settle()
		c.clock.advance(10 * time.Millisecond)
	}
	taken, _ := c.nodes[nodeB].Timer(id)
	require.Equal(t, Live, taken.State, "B took the timer")
	_, durable := disk.durable[id]
	require.False(t, durable, "B's take on disk before its barrier was answered")
	held, _ := c.nodes[nodeC].Timer(id)
	require.Equal(t, Live, held.State, "C's copy while B's take is not durable")

	disk.hold = false
	step := loopBound(t, 1000, "held disk writes done")
	for len(disk.held) > 0 {
		step()
		done := disk.held[0]
		disk.held = disk.held[1:]
		disk.sync()
		done(nil)
	}
	c.finishResyncs()
	_, durable = disk.durable[id]
	require.True(t, durable, "B's take on disk")
	held, _ = c.nodes[nodeC].Timer(id)
	assert.Equal(t, Moved, held.State, "C's copy once B's take is durable")
}

// TestLeavingNodeKeepsAVersionNewerThanTheReference: C leaves three nodes,
// and a timer on (C, A) moves to (B, A). An update reached C alone (A was
// cut off; one acknowledgement of two is a quorum), so C holds a newer
// version than A. A reference that names the older version (the new
// primary took what A held, in a case the sweep found) does not make C
// drop its copy: its hand-off brings the newer version to the new
// replicas instead. A reference of that version, or one without a version
// (the original's bodies have none), does.
func TestLeavingNodeKeepsAVersionNewerThanTheReference(t *testing.T) {
	before, after := NewRing([]string{nodeA, nodeB, nodeC}), NewRing([]string{nodeA, nodeB})
	id := idMoving(before, after, []string{nodeC, nodeA}, []string{nodeB, nodeA})
	wid := wire.FormatWireID(id, before.Bloom([]string{nodeC, nodeA}))
	for _, tc := range []struct {
		name    string
		version func(older, newer uint64) uint64
		want    State
	}{
		{"older version", func(older, _ uint64) uint64 { return older }, Live},
		{"held version", func(_, newer uint64) uint64 { return newer }, Moved},
		{"no version", func(uint64, uint64) uint64 { return 0 }, Moved},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCluster(t, nodeA, nodeB, nodeC)
			spec := wire.Timer{Interval: 30 * time.Second, RepeatFor: 60 * time.Second, URI: cb, ReplicationFactor: 2}
			require.Equal(t, 200, c.client(nodeB, "PUT", "/timers/"+wid, string(wire.Encode(spec))).Status)
			older, _ := c.nodes[nodeA].Timer(id)
			c.lose = func(host string, _ Request) bool { return host == nodeA }
			spec.Opaque = "newer"
			require.Equal(t, 200, c.client(nodeC, "PUT", "/timers/"+wid, string(wire.Encode(spec))).Status)
			newer, _ := c.nodes[nodeC].Timer(id)
			require.Greater(t, newer.Version, older.Version)

			require.NoError(t, c.nodes[nodeC].SetCluster(Membership{Nodes: []string{nodeA, nodeB}, Leaving: []string{nodeC}}))
			body := referencesJSON([]reference{{ID: wire.FormatID(id), Version: tc.version(older.Version, newer.Version)}})
			req := c.nodes[nodeA].referencesRequest(nodeC, body)
			req.URL = "/timers/references"
			require.Equal(t, 202, c.serve(nodeC, req).Status)
			held, _ := c.nodes[nodeC].Timer(id)
			assert.Equal(t, tc.want, held.State, "C's copy of version %d", held.Version)
		})
	}
}

// TestJoinCompletesOnASlowReceiver joins a fourth node to three that hold
// thousands of timers, over a network whose receivers take only half a
// starting window of messages from each sender at a time and fail the
// rest, as the production driver sheds what waits past its MaxWait:
// every resync, hand-offs included, still completes with no send given
// up, and every timer ends on its replicas, because a resync and a
// hand-off send at most a window at a time to a peer, and the window
// halves where sends fail (flow.go).
func TestJoinCompletesOnASlowReceiver(t *testing.T) {
	const timers = 6000
	c := newCluster(t, nodeA, nodeB, nodeC)
	fillCluster(c, timers, 2)
	c.takes = bulkWindowStart / 2
	grown := Membership{Nodes: []string{nodeA, nodeB, nodeC}, Joining: []string{nodeD}}
	c.join(nodeD, grown)
	c.reload(grown)
	for _, a := range slices.Sorted(maps.Keys(c.nodes)) {
		s := c.nodes[a].ResyncStatus()
		assert.False(t, s.Running, a)
		assert.Empty(t, s.Failed, "%s's resync gave up on", a)
		assert.Zero(t, s.SendFailures, "%s's resync send failures", a)
	}
	assert.Positive(t, c.nodes[nodeD].Stats().Timers, "timers on the joining node")
	assert.Positive(t, c.shed, "messages the slow receivers failed")
	c.requirePlacedSample(timers, 2, []string{nodeA, nodeB, nodeC, nodeD})
}

// TestResyncPageEndsAtItsByteBound proves a page of large timers ends
// once its body has passed maxResyncPageBytes (at the end of its last
// millisecond), however many timers its Range asks for, so that a page
// is always within the body a driver reads; following the pages still
// yields every timer once.
func TestResyncPageEndsAtItsByteBound(t *testing.T) {
	c := newCluster(t, nodeA, nodeB)
	opaque := strings.Repeat("x", 32<<10)
	const timers = 40
	for i := range timers {
		c.clock.advance(time.Millisecond)
		body := wire.Encode(wire.Timer{Interval: 30 * time.Second, RepeatFor: 30 * time.Second, URI: cb, Opaque: opaque + strconv.Itoa(i), ReplicationFactor: 2})
		require.Equal(t, 200, c.client(nodeA, "POST", "/timers", string(body)).Status)
	}
	view := c.nodes[nodeA].ring.ViewID()
	seen, from, pages := 0, "", 0
	step := loopBound(t, timers, "resync pages until the last")
	for {
		step()
		req := Request{Method: "GET", URL: resyncURL(nodeB, view, "&include-current-view=true"+from), Header: Header{HeaderRange: strconv.Itoa(MaxResyncPage)}}
		r := c.serve(nodeA, req)
		require.Contains(t, []int{200, 206}, r.Status, "%s", r.Body)
		assert.Less(t, len(r.Body), maxResyncPageBytes+len(opaque)+4096, "a page's body")
		var page resyncPage
		require.NoError(t, json.Unmarshal(r.Body, &page))
		seen += len(page.Timers)
		pages++
		if r.Status == 200 {
			break
		}
		from = "&time-from=" + r.Header.Get(HeaderNextTimeFrom)
	}
	assert.Equal(t, timers, seen, "timers paged")
	assert.Greater(t, pages, 1, "pages of timers whose bodies pass the bound")
}

// TestResyncSendsNoTombstoneAnOldReplicasHandOffMakesNeedless proves the
// rule of takePage: a page's server that offered the record the joining
// node passes on, live, is not sent that record as the rebalancing
// tombstone (it would keep it live: merge's rule 1), and its own hand-off
// still ends its copy, which pops no more.
func TestResyncSendsNoTombstoneAnOldReplicasHandOffMakesNeedless(t *testing.T) {
	c, id, wid := clusterWithMovingTimer(t)
	require.Equal(t, 200, c.client(nodeB, "PUT", "/timers/"+wid, movingDef("x")).Status)

	toC := map[string]int{}
	c.watch = func(s *sent, to string, _ int, _ bool) {
		if to == nodeC && s.req.Method == "PUT" {
			toC[s.from]++
		}
	}
	grown := Membership{Nodes: []string{nodeA, nodeB, nodeC}, Joining: []string{nodeD}}
	c.join(nodeD, grown)
	c.reload(grown)
	assert.Empty(t, toC, "PUTs to C, the old replica that served the page, by sender")
	var tombstoned uint64
	for _, n := range c.nodes {
		tombstoned += n.ResyncStatus().Tombstoned
	}
	assert.Zero(t, tombstoned, "rebalancing tombstones sent")
	held, _ := c.nodes[nodeC].Timer(id)
	assert.Equal(t, Moved, held.State, "C's copy after its hand-off")
	c.requirePlaced([]uint64{id}, []string{nodeA, nodeB, nodeC, nodeD}, 2)
	pops := c.advance(11*time.Minute, 200)
	assert.Len(t, pops, 1, "pops of the one due time")
}

// clusterWithMovingTimer starts nodes A, B and C, and returns an ID whose
// rf 2 replicas are C and A, and D and A once D joins, with its wire ID
// under the three-node view. movingDef is a definition to write there.
func clusterWithMovingTimer(t *testing.T) (c *cluster, id uint64, wid string) {
	before := NewRing([]string{nodeA, nodeB, nodeC})
	after := NewRing([]string{nodeA, nodeB, nodeC, nodeD})
	id = idMoving(before, after, []string{nodeC, nodeA}, []string{nodeD, nodeA})
	return newCluster(t, nodeA, nodeB, nodeC), id, wire.FormatWireID(id, before.Bloom([]string{nodeC, nodeA}))
}

// movingDef is an rf 2 definition, ten minutes apart, with opaque data.
func movingDef(opaque string) string {
	return string(wire.Encode(wire.Timer{Interval: 10 * time.Minute, RepeatFor: 10 * time.Minute, URI: cb, Opaque: opaque, ReplicationFactor: 2}))
}

// TestResyncAsksForPagesAheadOfTheirMessages proves that a resync's pages
// stream: the joining node asks a peer for its next page once it has
// taken one, while the replications that page made are still
// unanswered, up to resyncPagesAhead pages of a peer at once; and that
// the join still ends with every timer placed once they are answered.
func TestResyncAsksForPagesAheadOfTheirMessages(t *testing.T) {
	c, ids := joinPassingOnEverything(t)
	// Every message is answered but the joining node's replications,
	// which are held back.
	asked, held := map[string]int{}, []*sent{}
	for range settleRounds {
		var deliver []*sent
		for _, s := range c.net.take("http://10.") {
			if s.from == nodeD && s.req.Method == "PUT" {
				held = append(held, s)
				continue
			}
			if s.from == nodeD && s.req.Method == "GET" && strings.Contains(s.req.URL, "/timers?") {
				host, _, _ := strings.Cut(strings.TrimPrefix(s.req.URL, "http://"), "/")
				asked[host]++
			}
			deliver = append(deliver, s)
		}
		if len(deliver) == 0 {
			break
		}
		c.deliver(deliver, nil)
	}
	require.NotEmpty(t, held, "replications the joining node's pages made")
	for _, a := range []string{nodeA, nodeB, nodeC} {
		assert.Equal(t, resyncPagesAhead, asked[a], "pages the joining node asked %s for, its replications unanswered", a)
	}
	assert.True(t, c.nodes[nodeD].ResyncStatus().Running)
	c.net.out = append(c.net.out, held...)
	c.finishResyncs()
	s := c.nodes[nodeD].ResyncStatus()
	assert.Empty(t, s.Failed)
	assert.Zero(t, s.SendFailures)
	c.requirePlaced(ids, []string{nodeA, nodeB, nodeC, nodeD}, 2)
}

// joinPassingOnEverything builds three nodes holding timers a fourth's
// join makes it the primary of, each of which it passes on to its
// backup, so that every page it is offered makes replications; it
// reloads the three and starts the fourth, and returns the timers.
func joinPassingOnEverything(t *testing.T) (*cluster, []uint64) {
	c := newClusterWith(t, func(_ string, cfg *Config) { cfg.ResyncPage = 10 }, nodeA, nodeB, nodeC)
	grown := Membership{Nodes: []string{nodeA, nodeB, nodeC}, Joining: []string{nodeD}}
	ring, now := NewRing([]string{nodeA, nodeB, nodeC, nodeD}), c.nodes[nodeA].nowMs()
	var ids []uint64
	for i := 1; len(ids) < 500; i++ {
		id := uint64(i) << 12
		if ring.Replicas(id, 2)[0] != nodeD {
			continue
		}
		ids = append(ids, id)
		spec := wire.Timer{Interval: time.Hour, RepeatFor: time.Hour, URI: cb, Opaque: "x", ReplicationFactor: 2}
		replicas := c.nodes[nodeA].ring.Replicas(id, 2)
		for _, a := range replicas {
			nd := c.nodes[a]
			nd.apply(newTimer(id, id, spec, now+int64(i), 0, nd.placement(replicas, nil), nd.ring.ViewID(), nd.shared))
		}
	}
	c.setCluster(grown, nodeA, nodeB, nodeC)
	c.join(nodeD, grown)
	return c, ids
}

// TestResyncGivenUpPeerEndsOnceItsPagesSettle proves that a peer given up
// on while pages it answered still have messages in flight ends the
// resync only once they are answered: a resync that reports its end
// has every message of its pages answered.
func TestResyncGivenUpPeerEndsOnceItsPagesSettle(t *testing.T) {
	c, _ := joinPassingOnEverything(t)
	// The joining node's replications are held back; the old nodes then
	// go down, so that its pages fail until it gives up on each.
	var held []*sent
	holdAndDeliver := func() {
		var deliver []*sent
		for _, s := range c.net.take("http://10.") {
			if s.from == nodeD && s.req.Method == "PUT" {
				held = append(held, s)
				continue
			}
			deliver = append(deliver, s)
		}
		c.deliver(deliver, nil)
	}
	step := loopBound(t, settleRounds, "the joining node's first pages taken")
	for len(held) == 0 {
		step()
		holdAndDeliver() // until the first pages are taken
	}

	for _, a := range []string{nodeA, nodeB, nodeC} {
		c.down[a] = true
	}
	// About two minutes of pages asked again (pageRetry), and more.
	for range 300 {
		holdAndDeliver()
		c.clock.advance(time.Second)
	}
	assert.Empty(t, c.net.out, "pages still asked for")
	assert.True(t, c.nodes[nodeD].ResyncStatus().Running, "the resync, its pages' replications unanswered")
	c.net.out = append(c.net.out, held...)
	c.finishResyncs()
	s := c.nodes[nodeD].ResyncStatus()
	assert.ElementsMatch(t, []string{nodeA, nodeB, nodeC}, s.Failed)
	assert.Equal(t, uint64(1), s.Incomplete)
}

// TestResyncPassesATimerOnOnce proves that a resync passes a record on to
// the replicas ranked after its node once, however many pages offer it:
// each old replica's page offers a moved timer, and each passed it on
// again. A new primary passes it on to the backup once, and so does an
// old primary to a joining backup.
func TestResyncPassesATimerOnOnce(t *testing.T) {
	before := NewRing([]string{nodeA, nodeB, nodeC})
	after := NewRing([]string{nodeA, nodeB, nodeC, nodeD})
	toBackup := idMoving(before, after, []string{nodeA, nodeC}, []string{nodeA, nodeD})
	fromPrimary := idMoving(before, after, []string{nodeB, nodeC}, []string{nodeD, nodeC})
	c := newCluster(t, nodeA, nodeB, nodeC)
	for _, id := range []uint64{toBackup, fromPrimary} {
		wid := wire.FormatWireID(id, before.Bloom(before.Replicas(id, 2)))
		require.Equal(t, 200, c.client(nodeA, "PUT", "/timers/"+wid, movingDef("x")).Status)
	}
	c.settle()
	puts := map[[2]string]map[uint64]int{}
	c.watch = func(s *sent, to string, _ int, _ bool) {
		if s.req.Method != "PUT" {
			return
		}
		last, _, _ := strings.Cut(strings.TrimPrefix(s.req.URL, "http://"+to+"/timers/"), "?")
		id, _, err := wire.ParseWireID(last)
		require.NoError(t, err, s.req.URL)
		pair := [2]string{s.from, to}
		if puts[pair] == nil {
			puts[pair] = map[uint64]int{}
		}
		puts[pair][id]++
	}
	grown := Membership{Nodes: []string{nodeA, nodeB, nodeC}, Joining: []string{nodeD}}
	c.join(nodeD, grown)
	c.reload(grown)
	assert.Equal(t, 1, puts[[2]string{nodeA, nodeD}][toBackup], "the old primary's pass-ons to the joining backup")
	assert.Equal(t, 1, puts[[2]string{nodeD, nodeC}][fromPrimary], "the joining primary's pass-ons to its backup")
	c.requirePlaced([]uint64{toBackup, fromPrimary}, []string{nodeA, nodeB, nodeC, nodeD}, 2)
}

// TestResyncPassesOnAgainAfterAFailedSend proves that a record whose pass-on
// failed every attempt is passed on again by a later page that offers it:
// only a send that did not fail stands for the run.
func TestResyncPassesOnAgainAfterAFailedSend(t *testing.T) {
	before := NewRing([]string{nodeA, nodeB, nodeC})
	after := NewRing([]string{nodeA, nodeB, nodeC, nodeD})
	id := idMoving(before, after, []string{nodeA, nodeC}, []string{nodeA, nodeD})
	wid := wire.FormatWireID(id, before.Bloom([]string{nodeA, nodeC}))
	c := newCluster(t, nodeA, nodeB, nodeC)
	require.Equal(t, 200, c.client(nodeA, "PUT", "/timers/"+wid, movingDef("x")).Status)
	c.settle()
	// A's pass-ons to D fail while C's pages to A, and C's messages to D
	// (its hand-off, which would end the copy its page offers), are held
	// back: A's own page offers the timer first, and its pass-on fails.
	delivered := 0
	c.watch = func(s *sent, to string, _ int, lost bool) {
		if !lost && s.from == nodeA && to == nodeD && s.req.Method == "PUT" && strings.Contains(s.req.URL, wire.FormatID(id)) {
			delivered++
		}
	}
	grown := Membership{Nodes: []string{nodeA, nodeB, nodeC}, Joining: []string{nodeD}}
	c.setCluster(grown, nodeA, nodeB, nodeC)
	c.join(nodeD, grown)
	var held []*sent
	for i := 0; c.nodes[nodeA].ResyncStatus().SendFailures == 0; i++ {
		require.Less(t, i, 1000, "A's pass-on never failed")
		for _, s := range c.net.take("http://10.") {
			switch {
			case s.from == nodeA && s.req.Method == "GET" && strings.HasPrefix(s.req.URL, "http://"+nodeC+"/"),
				s.from == nodeC && strings.HasPrefix(s.req.URL, "http://"+nodeD+"/"):
				held = append(held, s)
			case s.from == nodeA && s.req.Method == "PUT" && strings.HasPrefix(s.req.URL, "http://"+nodeD+"/"):
				s.done(Response{}, errUnreachable)
			default:
				c.deliver([]*sent{s}, nil)
			}
		}
		c.clock.advance(time.Second)
	}
	require.Zero(t, delivered)
	// C's page first, then its messages to D.
	slices.SortStableFunc(held, func(a, b *sent) int { return cmp.Compare(b.from, a.from) })
	c.deliver(held, nil)
	c.finishResyncs()
	assert.Equal(t, 1, delivered, "A's pass-ons of the timer to D once one failed")
	c.requirePlaced([]uint64{id}, []string{nodeA, nodeB, nodeC, nodeD}, 2)
}

// TestResyncRefersATimerOnlyFromThePageThatPassedItOn proves that a page
// that offers a record the run already passed on tells the leaving nodes
// nothing of it: the page that passed it on tells them, and withholds the
// reference when a send failed. Told by the later page while the pass-on
// was still under way, the leaving node dropped its copy, and the pass-on
// then failed: the new primary's copy was the only one.
func TestResyncRefersATimerOnlyFromThePageThatPassedItOn(t *testing.T) {
	before := NewRing([]string{nodeA, nodeB, nodeC, nodeD})
	after := NewRing([]string{nodeA, nodeB, nodeC})
	var id uint64
	for i := uint64(1); i < 100_000 && id == 0; i++ {
		if slices.Equal(before.Replicas(i, 2), []string{nodeC, nodeD}) && after.Replicas(i, 2)[0] == nodeC {
			id = i
		}
	}
	require.NotZero(t, id)
	backup := after.Replicas(id, 2)[1]
	wid := wire.FormatWireID(id, before.Bloom([]string{nodeC, nodeD}))
	c := newCluster(t, nodeA, nodeB, nodeC, nodeD)
	require.Equal(t, 200, c.client(nodeC, "PUT", "/timers/"+wid, movingDef("x")).Status)
	c.settle()
	shrunk := Membership{Nodes: []string{nodeA, nodeB, nodeC}, Leaving: []string{nodeD}}
	c.setCluster(shrunk, nodeA, nodeB, nodeC, nodeD)
	// Every message to the new backup waits: C's own page passed the
	// timer on to it; D's page offers it again meanwhile.
	var held []*sent
	round := func() {
		for _, s := range c.net.take("http://10.") {
			if strings.HasPrefix(s.req.URL, "http://"+backup+"/timers/") && s.req.Method == "PUT" {
				held = append(held, s)
				continue
			}
			c.deliver([]*sent{s}, nil)
		}
	}
	for range 10 {
		round()
	}
	require.Positive(t, c.nodes[nodeC].ResyncStatus().Received, "offers to the new primary")
	// C's pass-ons fail every attempt; D's hand-off keeps waiting.
	for i := 0; c.nodes[nodeC].ResyncStatus().SendFailures == 0; i++ {
		require.Less(t, i, 1000, "C's pass-on never failed")
		var keep []*sent
		for _, s := range held {
			if s.from == nodeC {
				s.done(Response{}, errUnreachable)
				continue
			}
			keep = append(keep, s)
		}
		held = keep
		c.clock.advance(time.Second)
		round()
	}
	for range 10 {
		round()
	}
	held2, ok := c.nodes[nodeD].Timer(id)
	require.True(t, ok)
	assert.Equal(t, Live, held2.State, "the leaving node's copy, the new backup's pass-on failed")
	c.net.out = append(c.net.out, held...)
	c.finishResyncs()
}

// TestUpdateWithoutAFactorLearnsItFromTheViewBefore: an update by a
// bare ID without a factor, through a node reloaded for a scale, learns
// the timer's factor from the replicas of the view before as well as from
// the default's replicas of its own view: those are where a write may
// find the timer live (alsoHolders), so a read that leaves them out finds
// nothing, takes the default, and places the update on a replica its
// factor does not give it. A timer of factor 1 on X, whose hand-off to D
// is held, was updated at the default factor of 2, and the second
// replica popped it after a restart, a pop the first had made
// (scenarios/README.md N55).
func TestUpdateWithoutAFactorLearnsItFromTheViewBefore(t *testing.T) {
	id, x := idMovedToD()
	after := NewRing([]string{nodeA, nodeB, nodeC, nodeD})
	second := after.Replicas(id, wire.DefaultReplicationFactor)[1]
	proxy := nodeA
	for _, n := range three {
		if n != x && n != second {
			proxy = n
		}
	}
	bare := wire.FormatWireID(id, 0)
	c := newCluster(t, three...)
	require.Equal(t, 200, c.client(proxy, "PUT", "/timers/"+bare, string(wire.Encode(wire.Timer{
		Interval: 30 * time.Second, RepeatFor: 300 * time.Second, URI: cb, Opaque: "old", ReplicationFactor: 1}))).Status)
	require.Equal(t, []string{x}, c.holders(bare))
	// Nothing X sends reaches D, nor D's pages asked of X: X can neither
	// hand its copy off nor have it fetched.
	c.lose = func(host string, req Request) bool {
		from, _, _ := senderInstance(req)
		return host == nodeD && from == x || host == x && from == nodeD
	}
	scaling := Membership{Nodes: three, Joining: []string{nodeD}}
	c.join(nodeD, scaling)
	c.reload(scaling)
	require.Equal(t, []string{x}, c.holders(bare), "X still holds its copy to hand off")
	require.Equal(t, 200, c.client(proxy, "PUT", "/timers/"+bare, string(wire.Encode(wire.Timer{
		Interval: 20 * time.Second, RepeatFor: 200 * time.Second, URI: cb, Opaque: "new"}))).Status)
	assert.Equal(t, []string{nodeD}, c.holders(bare), "the update at the timer's factor, 1")
	held, _ := c.nodes[nodeD].Timer(id)
	assert.Equal(t, uint8(1), held.RF)
}

// TestUpdateWithoutAFactorFollowsAMovedCopy is fresh seed 4993225
// (scenarios/README.md U24): a timer of factor 1 on X moved to D as D
// joined, and X, reloaded, handed its copy off and kept it as moved
// away. An update without a factor through a node not yet reloaded read
// the copies of the nodes its view names (X and the default's second
// replica): X answered with its moved copy, which says only that the
// timer lives elsewhere, no one held it live, and the update took the
// default factor of 2, leaving a copy on a replica the timer's factor
// does not give it. A moved copy names where the timer went: the read
// asks those nodes too, and the update keeps the factor it finds there.
func TestUpdateWithoutAFactorFollowsAMovedCopy(t *testing.T) {
	id, x := idMovedToD()
	before := NewRing(three)
	proxy := ""
	for _, r := range before.Replicas(id, wire.DefaultReplicationFactor) {
		if r != x {
			proxy = r // a replica of the default under the view before, as n4 was
		}
	}
	bare := wire.FormatWireID(id, 0)
	c := newCluster(t, three...)
	require.Equal(t, 200, c.client(proxy, "PUT", "/timers/"+bare, string(wire.Encode(wire.Timer{
		Interval: 30 * time.Second, RepeatFor: 300 * time.Second, URI: cb, Opaque: "old", ReplicationFactor: 1}))).Status)
	require.Equal(t, []string{x}, c.holders(bare))
	scaling := Membership{Nodes: three, Joining: []string{nodeD}}
	c.join(nodeD, scaling)
	var others []string
	for _, a := range three {
		if a != proxy {
			others = append(others, a)
		}
	}
	c.setCluster(scaling, others...)
	c.finishResyncs()
	for range 100 {
		c.advance(time.Second, 200)
		c.settle()
	}
	require.Equal(t, []string{nodeD}, c.holders(bare), "D holds the timer")
	moved, ok := c.nodes[x].Timer(id)
	require.True(t, ok)
	require.Equal(t, Moved, moved.State, "X keeps its copy as moved away")

	// Through the proxy not yet reloaded, the update finds the timer on
	// D, which the proxy's view does not name: the write, placed at
	// factor 1 on X under that view, is kept there as moved away, so it
	// is refused for the client to retry. Once the proxy has reloaded
	// (the client retries), it is placed on D.
	update := string(wire.Encode(wire.Timer{Interval: 20 * time.Second, RepeatFor: 200 * time.Second, URI: cb, Opaque: "new"}))
	first := c.client(proxy, "PUT", "/timers/"+bare, update).Status
	c.setCluster(scaling, proxy)
	c.finishResyncs()
	if first != 200 {
		require.Equal(t, 503, first)
		require.Equal(t, 200, c.client(proxy, "PUT", "/timers/"+bare, update).Status)
	}
	for range 100 {
		c.advance(time.Second, 200)
		c.settle()
	}
	assert.Equal(t, []string{nodeD}, c.holders(bare), "the update at the timer's factor, 1")
	held, _ := c.nodes[nodeD].Timer(id)
	assert.Equal(t, uint8(1), held.RF)
	assert.Equal(t, "new", held.Opaque())
}

// TestSupersededResyncAsksForNoMorePages: a resync's page from a peer
// that was down is to be asked again after a wait (retryPage), and the
// operator reloads with a new view meanwhile. The old run asks the peer
// for nothing more once the wait is over: its page would list the
// replicas of a view the node no longer holds, a wasted read of the
// peer's whole store, and the new run asks under its own view.
func TestSupersededResyncAsksForNoMorePages(t *testing.T) {
	c := newCluster(t, nodeA, nodeB, nodeC)
	c.createMany(30, 2, 30, 30)
	c.restart(nodeB)
	old := c.nodes[nodeB].ring.ViewID()
	c.down[nodeA] = true
	c.nodes[nodeB].Resync(true)
	c.settle()
	c.down[nodeA] = false
	grown := Membership{Nodes: []string{nodeA, nodeB, nodeC}, Joining: []string{nodeD}}
	require.NoError(t, c.nodes[nodeB].SetCluster(grown))
	c.down[nodeD] = true // not started yet
	stale := 0
	c.watch = func(s *sent, _ string, _ int, _ bool) {
		if s.from == nodeB && s.req.Method == "GET" && strings.Contains(s.req.URL, fmt.Sprintf("%s=%d", paramClusterViewID, old)) {
			stale++
		}
	}
	c.advance(time.Minute, 200)
	assert.Zero(t, stale, "pages of the old view asked for after the reload")
}

// TestSupersededResyncSendsNoPushHeldBack: a restarted node's resync
// passes the timers its pages bring on to their other replicas, and its
// pushes to one wait behind a full window of bulk sends (flow.go) when
// the operator reloads with a new view. Once the window has room the old
// run's pushes are dropped, not sent: the new view's hand-off pushes
// what that view moves, each timer once.
func TestSupersededResyncSendsNoPushHeldBack(t *testing.T) {
	c := newCluster(t, nodeA, nodeB, nodeC)
	c.createMany(30, 2, 30, 30)
	c.restart(nodeB)
	release := fillBulkWindow(c, nodeB, nodeA)
	c.nodes[nodeB].Resync(true)
	c.settle()
	grown := Membership{Nodes: []string{nodeA, nodeB, nodeC}, Joining: []string{nodeD}}
	require.NoError(t, c.nodes[nodeB].SetCluster(grown))
	c.down[nodeD] = true // not started yet
	pushed := map[uint64]int{}
	c.watch = func(s *sent, to string, _ int, _ bool) {
		if s.from == nodeB && to == nodeA && s.req.Method == "PUT" {
			id, _, _ := wire.ParseWireID(strings.TrimPrefix(s.req.URL, "http://"+nodeA+"/timers/"))
			pushed[id]++
		}
	}
	release()
	require.NotEmpty(t, pushed, "the new view's pushes")
	for id, n := range pushed {
		assert.Equal(t, 1, n, "pushes of timer %s once the window had room", wire.FormatID(id))
	}
}

// TestSupersededResyncSendsNoReferencesHeldBack: a scale-down's resync
// tells the leaving node which of its timers the new replicas hold
// (DELETE /timers/references), and those messages wait behind a full
// window of bulk sends to it (flow.go) when the operator reloads again,
// calling the scale-down off. Once the window has room the old run's
// references are dropped, not sent: they speak of a view that no longer
// holds, to a node that is no longer leaving.
func TestSupersededResyncSendsNoReferencesHeldBack(t *testing.T) {
	c := newCluster(t, nodeA, nodeB, nodeC)
	c.createMany(30, 2, 30, 30)
	release := fillBulkWindow(c, nodeA, nodeC)
	shrunk := Membership{Nodes: []string{nodeA, nodeB}, Leaving: []string{nodeC}}
	c.setCluster(shrunk, nodeA, nodeB, nodeC)
	c.settle()
	require.NoError(t, c.nodes[nodeA].SetCluster(Membership{Nodes: []string{nodeA, nodeB, nodeC}}))
	refs := 0
	c.watch = func(s *sent, to string, _ int, _ bool) {
		if s.from == nodeA && to == nodeC && strings.HasSuffix(s.req.URL, "/timers/references") {
			refs++
		}
	}
	release()
	assert.Zero(t, refs, "references of the old run sent once the window had room")
}

// TestRestartedBackupMakesNoPopTheOthersMadeWhileItWasDown: a backup of a
// timer popping every second keeps its records on disk, and is down for
// 20 s while the primary pops and tells the other backup. Back from its
// disk, its record says no pop was made, every one past its turn. Popped
// at once, each of them was made twice; it waits one backup skew for
// word, the start-up resync's pages tell it which pops were made, and it
// makes none of them.
func TestRestartedBackupMakesNoPopTheOthersMadeWhileItWasDown(t *testing.T) {
	c, disk := clusterWithDiskOnC(t)
	wid := createPlaced(t, c, `{"interval":1,"repeat-for":60}`, "", 3, func(r []string) bool { return r[0] != nodeC })
	id := mustID(t, wid)
	c.advance(500*time.Millisecond, 200)
	_, durable := disk.durable[id]
	require.True(t, durable, "the backup's copy on its disk")

	c.crash(nodeC)
	made := len(c.advance(20*time.Second, 200))
	require.GreaterOrEqual(t, made, 19, "the others' pops while it was down")

	c.restartFromDisk(nodeC, disk)
	var again []string
	c.advanceWith(3*time.Second, func(s *sent) int {
		if seq, _ := strconv.Atoi(s.req.Header.Get(wire.HeaderSequenceNumber)); s.from == nodeC && seq <= made {
			again = append(again, s.req.Header.Get(wire.HeaderSequenceNumber))
		}
		return 200
	})
	assert.Empty(t, again, "pops the restarted backup made again of the %d the others made while it was down (restored records that waited: %d)",
		made, c.nodes[nodeC].probeHits[probeRestoredWaits])
}

// clusterWithDiskOnC is a cluster of three nodes of which C keeps its
// records on disk.
func clusterWithDiskOnC(t *testing.T) (*cluster, *memStorage) {
	disk := newMemStorage()
	return newClusterWith(t, func(addr string, cfg *Config) {
		if addr == nodeC {
			cfg.Storage = disk
		}
	}, three...), disk
}

// createPlaced creates through A a timer of the given timing and factor
// whose replicas placed accepts, deleting those it does not; its opaque
// data is prefix and a count.
func createPlaced(t *testing.T, c *cluster, timing, prefix string, rf int, placed func([]string) bool) string {
	for i := 0; ; i++ {
		wid := createVia(t, c, nodeA, `{"timing":`+timing+`,"callback":{"http":{"uri":"`+cb+
			`","opaque":"`+prefix+strconv.Itoa(i)+`"}},"reliability":{"replication-factor":`+strconv.Itoa(rf)+`}}`)
		if placed(NewRing(three).Replicas(mustID(t, wid), rf)) {
			return wid
		}
		require.Equal(t, 200, c.client(nodeA, "DELETE", "/timers/"+wid, "").Status)
	}
}

// crash stops node addr as a crash does: it answers nothing, and its
// alarms never fire.
func (c *cluster) crash(addr string) {
	*c.cfgs[addr].Clock.(skewedClock).gone = true
	c.down[addr] = true
}

// restartFromDisk starts node addr again with what disk holds, and its
// start-up resync, as the production binary does.
func (c *cluster) restartFromDisk(addr string, disk *memStorage) {
	c.restart(addr)
	disk.restore(c.t, c.nodes[addr])
	delete(c.down, addr)
	c.nodes[addr].Resync(true)
}

// TestRestartedReplicaHearsOfUpdatesItMissedWhileDown crashes C, a
// replica of a timer on A and C with its disk, and updates the timer
// twice while it is down: through A, then through B (no replica) to a
// definition that makes no pop, whose replication A answers as ended, so
// B, with no replica holding it live, tells nobody who lacks it. C comes
// back from its disk long after every tombstone's own life, holding the
// first definition. A keeps the last update's tombstone for it: the
// newer version took over the marks of the copy it replaced
// (inheritLacking), and C's start-up resync has it pushed there at once
// (markRepopulating), well within the backup skew C waits for word
// (waitForWord). Without either, C popped the first definition's pops,
// all of them late, the last update's tombstone long expired (fresh seed
// 5815261, scenarios/README.md N81).
func TestRestartedReplicaHearsOfUpdatesItMissedWhileDown(t *testing.T) {
	c, disk := clusterWithDiskOnC(t)
	wid := createPlaced(t, c, `{"interval":2,"repeat-for":20}`, "first", 2, func(r []string) bool {
		return slices.Contains(r, nodeA) && slices.Contains(r, nodeC)
	})
	id := mustID(t, wid)
	c.advance(500*time.Millisecond, 200)
	_, durable := disk.durable[id]
	require.True(t, durable, "C's copy on its disk")

	c.crash(nodeC)
	r := c.client(nodeA, "PUT", "/timers/"+wid, `{"timing":{"interval":5,"repeat-for":5},"callback":{"http":{"uri":"`+cb+
		`","opaque":"second"}},"reliability":{"replication-factor":2}}`)
	require.Equal(t, 200, r.Status, "%s", r.Body)
	c.advance(time.Second, 200)
	r = c.client(nodeB, "PUT", "/timers/"+wid, `{"timing":{"interval":15,"repeat-for":14},"callback":{"http":{"uri":"`+cb+
		`","opaque":"third"}},"reliability":{"replication-factor":2}}`)
	require.Equal(t, 200, r.Status, "%s", r.Body) // A holds it ended (N82)
	third := c.mustTimer(nodeA, id)
	require.Equal(t, 15*time.Second, third.Interval(), "A took the third definition")
	c.advance(time.Minute, 200)

	c.restartFromDisk(nodeC, disk)
	var stale []string
	c.advanceWith(30*time.Second, func(s *sent) int {
		if s.from == nodeC && strings.HasPrefix(string(s.req.Body), "first") {
			stale = append(stale, s.req.Header.Get(wire.HeaderSequenceNumber))
		}
		return 200
	})
	assert.Empty(t, stale, "pops of the first definition C made once back from its disk")
	assert.Positive(t, c.nodes[nodeA].probeHits[probeRepopulatingToldTombstones], "A pushed C its tombstone at C's start-up")
}
