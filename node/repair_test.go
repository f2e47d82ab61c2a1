package node

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/wire"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newRepairingCluster is a cluster whose nodes run repair rounds.
func newRepairingCluster(t *testing.T, addrs ...string) *cluster {
	t.Helper()
	return newClusterWith(t, func(_ string, cfg *Config) { cfg.RepairInterval = DefaultRepairInterval }, addrs...)
}

// createVia creates a timer through via and returns its wire ID.
func createVia(t *testing.T, c *cluster, via, body string) string {
	t.Helper()
	r := c.client(via, "POST", "/timers", body)
	if r.Status != 200 {
		t.Fatalf("POST via %s: %d %s", via, r.Status, r.Body)
	}
	return strings.TrimPrefix(r.Header.Get(wire.HeaderLocation), "/timers/")
}

// TestRepairBringsAMissedUpdateToAReplica: a replica that missed an
// update (its replication lost) holds the old definition; no later write
// or notice reaches it before its pop, and the next repair round gives it
// the update, so it never pops the old definition.
func TestRepairBringsAMissedUpdateToAReplica(t *testing.T) {
	c := newRepairingCluster(t, three...)
	wid := createVia(t, c, three[0], `{"timing":{"interval":120},"callback":{"http":{"uri":"`+cb+`","opaque":"old"}},"reliability":{"replication-factor":3}}`)
	id := mustID(t, wid)
	ring := NewRing(three)
	backup := ring.Replicas(id, 3)[2]
	// The update reaches every replica but the last backup.
	c.lose = func(host string, req Request) bool { return host == backup && req.Method == "PUT" }
	if r := c.client(three[0], "PUT", "/timers/"+wid, `{"timing":{"interval":120},"callback":{"http":{"uri":"`+cb+`","opaque":"new"}}}`); r.Status != 200 {
		t.Fatalf("PUT: %d %s", r.Status, r.Body)
	}
	c.lose = nil
	if got, _ := c.nodes[backup].Timer(id); got.Opaque() != "old" {
		t.Fatalf("the backup should have missed the update, holds %q", got.Opaque())
	}
	c.advance(DefaultRepairInterval+5*time.Second, 200)
	if got, _ := c.nodes[backup].Timer(id); got.Opaque() != "new" {
		t.Errorf("after a repair round the backup holds %q, want the update", got.Opaque())
	}
	pushes := uint64(0)
	for _, n := range c.nodes {
		pushes += n.Stats().RepairPushes
	}
	if pushes == 0 {
		t.Errorf("no repair push counted")
	}
}

// TestRepairRefillsARestartedReplica: a replica restarted empty gets its
// timers back from its peers at its first round, without a resync, over
// several pages.
func TestRepairRefillsARestartedReplica(t *testing.T) {
	c := newClusterWith(t, func(_ string, cfg *Config) {
		cfg.RepairInterval, cfg.RepairPage = DefaultRepairInterval, 16
	}, three...)
	var ids []uint64
	for i := range 200 {
		wid := createVia(t, c, three[i%3], `{"timing":{"interval":600},"callback":{"http":{"uri":"`+cb+`"}},"reliability":{"replication-factor":2}}`)
		ids = append(ids, mustID(t, wid))
	}
	victim := three[1]
	want := 0
	for _, id := range ids {
		if slices.Contains(NewRing(three).Replicas(id, 2), victim) {
			want++
		}
	}
	c.restart(victim)
	c.advance(5*time.Second, 200)
	got := 0
	for _, id := range ids {
		if tm, ok := c.nodes[victim].Timer(id); ok && tm.State == Live {
			got++
		}
	}
	if got != want || want == 0 {
		t.Errorf("restarted replica holds %d of its %d timers after its first round", got, want)
	}
}

// TestRepairHandsOffAndThenStops: a node that holds a timer it is no
// longer a replica of (a scale moved it while the resync's messages were
// lost) passes it to the new replicas and stops popping it only once
// they hold it; a quiet cluster runs no further rounds.
func TestRepairHandsOffAndThenStops(t *testing.T) {
	four := append(slices.Clone(three), "10.0.0.4:7253")
	c := newRepairingCluster(t, three...)
	// A timer whose replicas change when the fourth node joins.
	var wid string
	var id uint64
	for {
		wid = createVia(t, c, three[0], `{"timing":{"interval":300},"callback":{"http":{"uri":"`+cb+`"}},"reliability":{"replication-factor":1}}`)
		id = mustID(t, wid)
		if NewRing(four).Replicas(id, 1)[0] == "10.0.0.4:7253" {
			break
		}
	}
	old := NewRing(three).Replicas(id, 1)[0]
	// Every message to the new node is lost while the cluster reloads:
	// the resync cannot move the timer.
	c.down["10.0.0.4:7253"] = true
	c.join("10.0.0.4:7253", Membership{Nodes: four})
	for _, a := range three {
		if err := c.nodes[a].SetCluster(Membership{Nodes: four}); err != nil {
			t.Fatal(err)
		}
	}
	c.advance(3*time.Minute, 200)
	if tm, _ := c.nodes[old].Timer(id); tm.State != Live {
		t.Fatalf("the old replica dropped its copy (%v) while the new one could not take it", tm.State)
	}
	delete(c.down, "10.0.0.4:7253")
	c.advance(2*DefaultRepairInterval, 200)
	if tm, ok := c.nodes["10.0.0.4:7253"].Timer(id); !ok || tm.State != Live {
		t.Fatalf("the new replica does not hold the timer live: %v %v", ok, tm.State)
	}
	if tm, _ := c.nodes[old].Timer(id); tm.State == Live {
		t.Errorf("the old replica still pops its copy after handing it off")
	}
	if c.nodes[old].Stats().RepairHandoffs == 0 {
		t.Errorf("the old replica handed nothing off: the resync moved the timer, not repair")
	}
	rounds := c.nodes[old].Stats().RepairRounds
	c.advance(5*DefaultRepairInterval, 200)
	if got := c.nodes[old].Stats().RepairRounds; got != rounds {
		t.Errorf("a quiet cluster ran %d more rounds", got-rounds)
	}
}

// TestHandOffGoesToTheAddedReplicasOnly: a node's hand-off pushes a
// record to the replicas its latest change of view added, not to those
// that were replicas before it too (they hold what they held, and repair
// settles it between replicas); with none added, or no view before, to
// every replica.
func TestHandOffGoesToTheAddedReplicasOnly(t *testing.T) {
	four := append(slices.Clone(three), nodeD)
	was, is := NewRing(three), NewRing(four)
	// An rf 2 timer of nodeA and another node under three nodes, of that
	// other node and nodeD under four.
	id := uint64(1 << 12)
	for ; ; id += 1 << 12 {
		before, after := was.Replicas(id, 2), is.Replicas(id, 2)
		if slices.Contains(before, nodeA) && !slices.Contains(after, nodeA) && slices.Contains(after, nodeD) {
			break
		}
	}
	n := newClusterWith(t, nil, three...).nodes[nodeA]
	placed := func(rf int) *Timer {
		return withParts(&Timer{ID: id, RF: uint8(rf)}, n.placement(n.ring.Replicas(id, rf), nil), nil)
	}
	if got, want := n.handOffTargets(placed(2)), was.Replicas(id, 2); !slices.Equal(got, want) {
		t.Errorf("no view before: pushed to %v, want every replica %v", got, want)
	}
	if err := n.SetCluster(Membership{Nodes: four}); err != nil {
		t.Fatal(err)
	}
	if got := n.handOffTargets(placed(2)); !slices.Equal(got, []string{nodeD}) {
		t.Errorf("placed on %v, then on %v: pushed to %v, want %s only", was.Replicas(id, 2), is.Replicas(id, 2), got, nodeD)
	}
	// A factor of four, from four nodes to three: none added.
	if err := n.SetCluster(Membership{Nodes: three}); err != nil {
		t.Fatal(err)
	}
	if got, want := n.handOffTargets(placed(4)), was.Replicas(id, 4); !slices.Equal(got, want) {
		t.Errorf("no replica added: pushed to %v, want every replica %v", got, want)
	}
}

// TestScaleHandsOffATombstoneToTheNewReplicas: a delete that reached one
// of a timer's two replicas, and a join that moves the timer off that
// one before any repair round: the node that holds the only tombstone is
// no replica any more, so repair between the replicas never compares it,
// and the replica that missed the delete would pop the deleted timer
// under the new view for good. The tombstone's hand-off to the added
// replica tells the new placement of the delete: the deleted timer never
// pops, and no node holds it live after.
func TestScaleHandsOffATombstoneToTheNewReplicas(t *testing.T) {
	const joiner = "10.0.0.4:7253"
	four := append(slices.Clone(three), joiner)
	c := newRepairingCluster(t, three...)
	var wid, opaque, kept, dropped string
	for i := 0; ; i++ {
		opaque = fmt.Sprintf("t%d", i)
		wid = createVia(t, c, three[0], `{"timing":{"interval":60,"repeat-for":600},"callback":{"http":{"uri":"`+cb+`","opaque":"`+opaque+`"}},"reliability":{"replication-factor":2}}`)
		id := mustID(t, wid)
		before, after := NewRing(three).Replicas(id, 2), NewRing(four).Replicas(id, 2)
		if slices.Contains(after, joiner) && slices.Contains(after, before[0]) {
			kept, dropped = before[0], before[1]
			break
		}
	}
	// The delete reaches only the replica the join drops.
	c.lose = func(host string, req Request) bool { return host == kept && req.Method == "PUT" }
	if r := c.client(dropped, "DELETE", "/timers/"+wid, ""); r.Status != 200 {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	c.lose = nil
	if tm, _ := c.nodes[kept].Timer(mustID(t, wid)); tm.State != Live {
		t.Fatalf("the kept replica should have missed the delete, holds %v", tm.State)
	}
	c.join(joiner, Membership{Nodes: four})
	for _, a := range three {
		if err := c.nodes[a].SetCluster(Membership{Nodes: four}); err != nil {
			t.Fatal(err)
		}
	}
	var popped []string
	for _, r := range c.advance(5*time.Minute, 200) {
		if string(r.Body) == opaque {
			popped = append(popped, r.Header.Get(wire.HeaderSequenceNumber))
		}
	}
	if len(popped) != 0 {
		t.Errorf("the deleted timer popped %v after the join, want never", popped)
	}
	if h := c.holders(wid); len(h) != 0 {
		t.Errorf("live copies of the deleted timer: %v, want none", h)
	}
}

// TestHandOffEndsOnAReplicaThatHoldsTheDefinitionEnded: a node leaves
// while it is a backup of a timer, and the scale's resync brings the new
// backup nothing before the primary makes the last pop, whose notice
// leaves the new backup the tombstone of that definition. The leaving
// node's hand-off then meets the tombstone: the new backup answers that
// the definition ended there (X-Chronos-Held: ended), which the hand-off
// counts as something newer, and the leaving node keeps its copy as
// moved away instead of popping the last pop again after every
// replica's turn. Without the answer its 200 said nothing, and the
// hand-off waited on a replica that would never hold the version live.
func TestHandOffEndsOnAReplicaThatHoldsTheDefinitionEnded(t *testing.T) {
	leaving := three[2]
	staying := three[:2]
	c := newRepairingCluster(t, three...)
	var wid, opaque, primary, newBackup string
	for i := 0; ; i++ {
		opaque = fmt.Sprintf("t%d", i)
		wid = createVia(t, c, three[0], `{"timing":{"interval":10,"repeat-for":20},"callback":{"http":{"uri":"`+cb+`","opaque":"`+opaque+`"}},"reliability":{"replication-factor":2}}`)
		id := mustID(t, wid)
		before, after := NewRing(three).Replicas(id, 2), NewRing(staying).Replicas(id, 2)
		if before[1] == leaving && after[0] == before[0] {
			primary, newBackup = after[0], after[1]
			break
		}
	}
	start := c.clock.now
	var pops []string
	collect := func(d time.Duration) {
		for _, r := range c.advance(d, 200) {
			if string(r.Body) == opaque {
				pops = append(pops, r.Header.Get(wire.HeaderSequenceNumber))
			}
		}
	}
	collect(12 * time.Second) // pop 1, made by the primary
	// The scale's resync brings the new backup nothing before the last
	// pop: the primary's push is lost until just before it, the leaving
	// node's hand-off until just after it, and the new backup's page
	// requests to the leaving node throughout.
	from := func(req Request, node string) bool {
		return strings.Contains(req.Header.Get(HeaderInstance), node)
	}
	c.lose = func(host string, req Request) bool {
		now := c.clock.now.Sub(start)
		switch {
		case host == newBackup && from(req, primary) && now < 19*time.Second:
		case host == newBackup && from(req, leaving) && now < 21*time.Second:
		case host == leaving && from(req, newBackup):
		default:
			return false
		}
		return true
	}
	shrunk := Membership{Nodes: staying, Leaving: []string{leaving}}
	for _, a := range three {
		if err := c.nodes[a].SetCluster(shrunk); err != nil {
			t.Fatal(err)
		}
	}
	collect(9 * time.Second)
	// Past the last pop, which the new backup holds as the definition's
	// tombstone: the leaving node's next hand-off (a repair round's,
	// here at once) meets it.
	c.nodes[leaving].handOff(nil)
	c.settle()
	collect(time.Minute)
	if got := strings.Join(pops, " "); got != "1 2" {
		t.Errorf("pops of the timer: %q, want \"1 2\" (each once)", got)
	}
	if tm, ok := c.nodes[leaving].Timer(mustID(t, wid)); ok && tm.State == Live {
		t.Errorf("the leaving node still holds the ended definition live")
	}
}

// TestHandOffAgainWaitsForThePushUnderWay proves handOff's rule: a
// hand-off made while an earlier one still pushes the same copy to its
// new replica sends it no second time, and learns that push's outcome.
func TestHandOffAgainWaitsForThePushUnderWay(t *testing.T) {
	c, id, wid := clusterWithMovingTimer(t)
	require.Equal(t, 200, c.client(nodeB, "PUT", "/timers/"+wid, movingDef("x")).Status)

	grown := Membership{Nodes: []string{nodeA, nodeB, nodeC}, Joining: []string{nodeD}}
	c.join(nodeD, grown)
	require.NoError(t, c.nodes[nodeC].SetCluster(grown))
	var outcomes []bool
	for range 2 {
		c.nodes[nodeC].handOff(func(all bool) { outcomes = append(outcomes, all) })
	}
	pushes := 0
	for _, s := range c.net.out {
		if s.from == nodeC && s.req.Method == "PUT" && strings.HasPrefix(s.req.URL, "http://"+nodeD+"/timers/"+wire.FormatID(id)) {
			pushes++
		}
	}
	assert.Equal(t, 1, pushes, "pushes of the copy to D under way")
	assert.Empty(t, outcomes, "hand-offs ended before the push was answered")
	c.settle()
	assert.Equal(t, []bool{true, true}, outcomes, "the hand-offs' outcomes")
	held, _ := c.nodes[nodeC].Timer(id)
	assert.Equal(t, Moved, held.State, "C's copy once D holds it")
}

// TestRepairTakesItsDigestsOnceARound: every page of a round carries the
// digests its first page took, though the asker's records change between
// the pages (a restarted replica being refilled by its peers' rounds): a
// page costs no walk of the asker's whole store for them.
func TestRepairTakesItsDigestsOnceARound(t *testing.T) {
	c := newClusterWith(t, func(_ string, cfg *Config) {
		cfg.RepairInterval, cfg.RepairPage = DefaultRepairInterval, 16
	}, three...)
	for i := range 200 {
		createVia(t, c, three[i%3], `{"timing":{"interval":600},"callback":{"http":{"uri":"`+cb+`"}},"reliability":{"replication-factor":2}}`)
	}
	victim, peer := three[1], three[0]
	var digests [][]string
	c.lose = func(host string, req Request) bool {
		var body repairDigestBody
		if host == peer && strings.HasSuffix(req.URL, repairPath) && json.Unmarshal(req.Body, &body) == nil &&
			body.From == victim && len(body.Digests) > 0 {
			digests = append(digests, body.Digests)
		}
		return false
	}
	c.restart(victim)
	c.advance(5*time.Second, 200)
	require.Greater(t, len(digests), 1, "pages of the restarted replica's round with %s", peer)
	require.Positive(t, c.nodes[victim].Stats().Timers, "the restarted replica refilled")
	for i, d := range digests[1:] {
		assert.Equal(t, digests[0], d, "page %d's digests", i+2)
	}
}

// TestRepairPageFitsItsBody proves a repair answer of MaxRepairEntries
// of the longest entries, every bucket listed, stays within half of
// wire.MaxBodyBytes, as a resync page does.
func TestRepairPageFitsItsBody(t *testing.T) {
	ans := repairAnswer{Through: wire.FormatID(^uint64(0))}
	for i := range repairBuckets {
		ans.Buckets = append(ans.Buckets, i)
	}
	for range MaxRepairEntries {
		ans.Entries = append(ans.Entries, repairEntry{ID: wire.FormatID(^uint64(0)),
			Version: strconv.FormatUint(^uint64(0), 10), State: wire.StateTombstone, Seq: ^uint32(0)})
	}
	b, err := json.Marshal(&ans)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(b), wire.MaxBodyBytes/2)
}

// TestRepairPushesADeleteTheReplicaMissed: a delete by the bare ID through
// a node without a copy goes to every member (the factor is unknown), and
// the rf 1 timer's one replica misses it. That replica's record places
// the timer on itself alone, so its notices meet nobody and no digest of
// either side lists it; the delete's proxy marks on its tombstone that the
// replica may lack it, and its next round pushes it there whatever the
// digests say (scenarios/README.md N43).
func TestRepairPushesADeleteTheReplicaMissed(t *testing.T) {
	c := newRepairingCluster(t, three...)
	wid := createVia(t, c, three[0], `{"timing":{"interval":120},"callback":{"http":{"uri":"`+cb+`","opaque":"old"}},"reliability":{"replication-factor":1}}`)
	id := mustID(t, wid)
	holder := NewRing(three).Replicas(id, 1)[0]
	proxy := three[0]
	if proxy == holder {
		proxy = three[1]
	}
	require.Nil(t, c.nodes[proxy].store.Get(id), "the proxy holds no copy")
	c.lose = func(host string, req Request) bool { return host == holder }
	c.client(proxy, "DELETE", "/timers/"+wire.FormatWireID(id, 0), "")
	c.lose = nil
	require.Positive(t, c.nodes[proxy].probeHits[probeDeleteEveryMember])
	require.Equal(t, Live, c.nodes[holder].store.Get(id).State, "the replica missed the delete")
	c.advance(2*DefaultRepairInterval, 200)
	held := c.nodes[holder].store.Get(id)
	require.NotNil(t, held)
	assert.Equal(t, Tombstone, held.State, "the replica still holds the deleted timer live")
	assert.Positive(t, c.nodes[proxy].probeHits[probeRepairLacking])
	if p := c.nodes[proxy].store.Get(id); p != nil {
		assert.Zero(t, p.lacking(), "the replica's answer clears the mark")
	}
}

// TestDeleteProxyTellsTheReplicasWhoMayLackIt: a delete through a node
// that is none of the timer's replicas reached one replica only. The
// proxy holds no tombstone to keep for the replica it missed, so it tells
// the replica that took the delete (reliability.lacking, as for a live
// write), whose tombstone then stays past its life while the other
// replica may lack it, for its notices to meet and repair rounds to push
// (scenarios/README.md N57). Untold, it lived its own life only.
func TestDeleteProxyTellsTheReplicasWhoMayLackIt(t *testing.T) {
	c := newCluster(t, three...)
	wid := createVia(t, c, three[0], `{"timing":{"interval":10,"repeat-for":20},"callback":{"http":{"uri":"`+cb+`","opaque":"old"}},"reliability":{"replication-factor":2}}`)
	id := mustID(t, wid)
	replicas := NewRing(three).Replicas(id, 2)
	proxy := three[slices.IndexFunc(three, func(a string) bool { return !slices.Contains(replicas, a) })]
	took, missed := replicas[0], replicas[1]
	c.lose = func(host string, req Request) bool { return host == missed }
	if r := c.client(proxy, "DELETE", "/timers/"+wid, ""); r.Status != 200 {
		t.Fatalf("DELETE: %d %s", r.Status, r.Body)
	}
	c.lose = nil
	require.Nil(t, c.nodes[proxy].store.Get(id), "the proxy holds no copy")
	require.Equal(t, Live, c.nodes[missed].store.Get(id).State, "the replica missed the delete")
	held := c.nodes[took].store.Get(id)
	require.NotNil(t, held)
	require.Equal(t, Tombstone, held.State)
	assert.True(t, lackedBy(held, missed), "the tombstone marks the replica the delete missed (marks %b)", held.lacking())
	assert.Positive(t, c.nodes[proxy].probeHits[probeLackingDeleteTold])
	c.down[missed] = true
	c.advance(5*time.Minute, 200)
	held = c.nodes[took].store.Get(id)
	if assert.NotNil(t, held, "the tombstone, five minutes on, while the replica it missed is cut off") {
		assert.Equal(t, Tombstone, held.State)
	}
}

// TestRepairPushesOfMarkedRecordsAreCapped: a proxy whose deletes missed a
// replica that is down holds many tombstones marked as that replica may
// lack them. While the replica answers nothing, no round pushes it any of
// them (the round's digests are its first word, and get no answer); once
// it answers, each round pushes it at most a page of them, the next round
// the next ones, so every mark is cleared by the replica's answers within
// as many rounds as there are pages of them (scenarios/README.md N46).
func TestRepairPushesOfMarkedRecordsAreCapped(t *testing.T) {
	const page, timers = 4, 13
	c, proxy, down, _, marked := markedTombstones(t, page, timers)
	var n pushCount
	n.watch(c, proxy, down)
	c.advance(5*DefaultRepairInterval, 200)
	require.Positive(t, n.asked)
	assert.Zero(t, n.most, "pushes to a replica that answers nothing")
	require.Equal(t, timers, marked())
	c.down[down] = false
	for marked() > 0 && n.answered < 2*timers {
		c.advance(time.Second, 200)
	}
	assert.Zero(t, marked(), "marks left")
	assert.LessOrEqual(t, n.answered, (timers+page-1)/page, "rounds answered until every mark was cleared")
	assert.LessOrEqual(t, n.most, page, "pushes in one round")
	assert.Positive(t, c.nodes[proxy].probeHits[probeRepairLackingCap])
}

// markedTombstones builds a cluster of three nodes with repair pages of
// page records, and timers rf 3 timers created and deleted through
// proxy while down was down (it still is): the proxy's tombstones, by
// ids, each mark down as may lack it. marked counts those still marked.
func markedTombstones(t *testing.T, page, timers int) (c *cluster, proxy, down string, ids []uint64, marked func() int) {
	t.Helper()
	c = newClusterWith(t, func(_ string, cfg *Config) {
		cfg.RepairInterval, cfg.RepairPage = DefaultRepairInterval, page
	}, three...)
	proxy, down = three[0], three[2]
	c.down[down] = true
	for range timers {
		wid := createVia(t, c, proxy, `{"timing":{"interval":600},"callback":{"http":{"uri":"`+cb+`"}},"reliability":{"replication-factor":3}}`)
		ids = append(ids, mustID(t, wid))
		if r := c.client(proxy, "DELETE", "/timers/"+wid, ""); r.Status/100 != 2 {
			t.Fatalf("DELETE: %d %s", r.Status, r.Body)
		}
	}
	marked = func() int {
		m := 0
		for _, id := range ids {
			if held := c.nodes[proxy].store.Get(id); held != nil && held.lacking() != 0 {
				m++
			}
		}
		return m
	}
	require.Equal(t, timers, marked(), "every delete marks the replica that was down")
	return c, proxy, down, ids, marked
}

// TestRepairPushesOfMarkedRecordsTakeTurns: a replica that answers its
// rounds but never takes the pushes of a page of marked tombstones (they
// are lost on the way, every time) does not keep the others from it: each
// round takes up after the last one the round before pushed, so every
// other mark is cleared within as many rounds as there are pages, and the
// pushes of one round stay within a page's tries.
func TestRepairPushesOfMarkedRecordsTakeTurns(t *testing.T) {
	const page, timers = 4, 13
	c, proxy, down, ids, marked := markedTombstones(t, page, timers)
	slices.Sort(ids)
	c.lose = func(host string, req Request) bool {
		_, path := splitURL(req.URL)
		return host == down && req.Method == "PUT" && slices.Contains(ids[:page], mustID(t, strings.TrimPrefix(path, "/timers/")))
	}
	var n pushCount
	n.watch(c, proxy, down)
	c.down[down] = false
	for marked() > page && n.answered < 2*timers {
		c.advance(time.Second, 200)
	}
	assert.Equal(t, page, marked(), "marks left")
	assert.LessOrEqual(t, n.answered, (timers+page-1)/page, "rounds answered until every other mark was cleared")
	assert.LessOrEqual(t, n.most, page*maxResyncSends, "pushes in one round")
}

// pushCount is what the harness counts of a node's sends to a peer: the
// rounds' digests asked (a round's first page, each try), those
// answered 200, the pushes since the last digests asked, and the most
// pushes between two of them.
type pushCount struct{ asked, answered, pushes, most int }

// watch counts from's sends to to in c.
func (n *pushCount) watch(c *cluster, from, to string) {
	c.watch = func(s *sent, host string, status int, _ bool) {
		if s.from != from || host != to {
			return
		}
		switch {
		case s.req.Method == "PUT":
			n.pushes++
			n.most = max(n.most, n.pushes)
		case strings.HasSuffix(s.req.URL, repairPath) && !strings.Contains(string(s.req.Body), `"after"`) &&
			!strings.Contains(string(s.req.Body), `"want"`):
			n.asked++
			if status == 200 {
				n.answered++
			}
			n.pushes = 0
		}
	}
}

// streamRecord is a fresh write's record, versioned now by g, placed by
// ring at rf 2.
func streamRecord(t *testing.T, g *idGen, nowMs int64, ring *Ring, opaque string) Timer {
	t.Helper()
	id, ok := g.next(nowMs)
	require.True(t, ok)
	return *withCallback(withParts(&Timer{ID: id, Version: id, Start: nowMs, interval: sec(600 * time.Second), repeatFor: sec(600 * time.Second), RF: 2}, &Placement{Replicas: ring.Replicas(id, 2)}, nil), cb, opaque)
}

// TestRepairUnderAStreamOfWritesListsTheOldRecordsThatDiffer: while fresh
// writes stream in, each reaching its second replica 2 s after its first
// (the replication path still carrying it), the rounds compare only the
// records dated before their young range (repairAges). Every bucket held
// a record in flight, so every round listed, page by page, every record
// of the buckets: now a round lists the records of the one bucket whose
// settled records differ (an old record one replica lacks), which it
// repairs, and no round takes a second page (docs/design.md 5).
func TestRepairUnderAStreamOfWritesListsTheOldRecordsThatDiffer(t *testing.T) {
	c := newClusterWith(t, func(_ string, cfg *Config) {
		cfg.RepairInterval, cfg.RepairPage = DefaultRepairInterval, 16
	}, three...)
	c.createMany(300, 2, 600, 600)
	c.advance(2*DefaultRepairInterval, 200) // the first, full rounds
	ring := NewRing(three)
	listed := func() (sum uint64) {
		for _, n := range c.nodes {
			sum += n.Stats().RepairListed
		}
		return sum
	}
	listedBefore := listed()

	// An old record (dated a minute ago) that its second replica lacks.
	now := c.clock.now.UnixMilli()
	oldGen := newIDGen(7, 0)
	old := streamRecord(t, &oldGen, now-60_000, ring, "old")
	holder, lacker := old.Placement().Replicas[0], old.Placement().Replicas[1]
	c.place(holder, old)

	// The stream: 32 writes every 500 ms for a minute, each on its
	// second replica 2 s after its first.
	var pages int
	c.watch = func(s *sent, _ string, _ int, _ bool) {
		if strings.HasSuffix(s.req.URL, repairPath) && strings.Contains(string(s.req.Body), `"after"`) {
			pages++
		}
	}
	g := newIDGen(9, 0)
	type due struct {
		at  int64
		rec Timer
	}
	var inFlight []due
	for i := 0; i < 120; i++ {
		now := c.clock.now.UnixMilli()
		for len(inFlight) > 0 && inFlight[0].at <= now {
			c.place(inFlight[0].rec.Placement().Replicas[1], inFlight[0].rec)
			inFlight = inFlight[1:]
		}
		for k := range 32 {
			rec := streamRecord(t, &g, now, ring, fmt.Sprint(i, "/", k))
			c.place(rec.Placement().Replicas[0], rec)
			inFlight = append(inFlight, due{now + 2000, rec})
		}
		c.advance(500*time.Millisecond, 200)
	}
	c.watch = nil

	got := c.nodes[lacker].store.Get(old.ID)
	require.NotNil(t, got, "the old record the replica lacked was not repaired")
	assert.Equal(t, Live, got.State)
	assert.Positive(t, c.nodes[holder].probeHits[probeRepairYoung]+c.nodes[lacker].probeHits[probeRepairYoung], "no round left out a young record")
	// What a round may list: the records both hold in the old record's
	// bucket, once from each side, before the first round repairs it.
	bucket := 0
	c.nodes[holder].heldFor(lacker, func(tm *Timer, mine bool) {
		if mine && repairBucket(tm.ID) == repairBucket(old.ID) && IDTime(tm.Version) < now {
			bucket++
		}
	})
	assert.LessOrEqual(t, listed()-listedBefore, uint64(2*bucket), "records listed under the stream (%d in the old record's bucket)", bucket)
	assert.Zero(t, pages, "second pages of rounds under the stream")
}

// TestRepairComparesAYoungRecordOnceItSettles: a record a round leaves
// out as young, that the replication path then never delivers, is
// compared by a later round though nothing changes meanwhile: a node that
// leaves a record out runs another round.
func TestRepairComparesAYoungRecordOnceItSettles(t *testing.T) {
	c, rec, holder, lacker := youngRecordOnItsPrimary(t)
	// A round right away leaves it out (its replication is lost) and
	// leaves the node quiet but for it.
	c.nodes[holder].repairRound()
	c.settle()
	require.Nil(t, c.nodes[lacker].store.Get(rec.ID), "a round compared a young record")
	require.Positive(t, c.nodes[holder].probeHits[probeRepairYoung])
	c.advance(2*DefaultRepairInterval, 200)
	got := c.nodes[lacker].store.Get(rec.ID)
	require.NotNil(t, got, "the record a round left out as young was never compared")
	assert.Equal(t, Live, got.State)
}

// TestRepairOwesAPeerTheRoundAnotherRoundLeftOut: a round with a peer
// cut off retries for as long as the cut lasts, with the digests it took
// when it began; a record it left out as young is owed a round with that
// peer, and a round with the other peers meanwhile does not pay it. Fresh
// seed 8497762 (U37): the note was one flag, cleared by the round with the
// other peer, so once the cut healed the retried round compared nothing
// and no round with the peer came again.
func TestRepairOwesAPeerTheRoundAnotherRoundLeftOut(t *testing.T) {
	c, rec, holder, lacker := youngRecordOnItsPrimary(t)
	c.lose = func(host string, _ Request) bool { return host == lacker }
	c.nodes[holder].repairRound() // leaves rec out; its round with lacker retries
	c.settle()
	require.Positive(t, c.nodes[holder].probeHits[probeRepairYoung])
	c.clock.advance(2 * time.Second)
	c.nodes[holder].repairRound() // the other peer's round, lacker's still under way
	c.settle()
	require.True(t, c.nodes[holder].repairBusy[lacker], "the round with the cut-off peer ended")
	c.lose = nil
	c.advance(3*DefaultRepairInterval, 200)
	got := c.nodes[lacker].store.Get(rec.ID)
	require.NotNil(t, got, "the record a round with a cut-off peer left out as young was never compared with it")
	assert.Equal(t, Live, got.State)
}

// youngRecordOnItsPrimary is a repairing cluster of three past its first,
// full rounds, and a record written just now placed on its primary
// (holder) alone, its second replica (lacker) without it.
func youngRecordOnItsPrimary(t *testing.T) (c *cluster, rec Timer, holder, lacker string) {
	c = newRepairingCluster(t, three...)
	c.advance(2*DefaultRepairInterval, 200) // the first, full rounds
	g := newIDGen(9, 0)
	rec = streamRecord(t, &g, c.clock.now.UnixMilli(), NewRing(three), "young")
	holder, lacker = rec.Placement().Replicas[0], rec.Placement().Replicas[1]
	c.place(holder, rec)
	return c, rec, holder, lacker
}

// TestRepairAfterARestartLeavesNothingOut: a replica restarted empty is
// given, by its first round, the records written just before it
// restarted too, young as they are.
func TestRepairAfterARestartLeavesNothingOut(t *testing.T) {
	c := newRepairingCluster(t, three...)
	c.advance(2*DefaultRepairInterval, 200)
	ring := NewRing(three)
	g := newIDGen(9, 0)
	rec := streamRecord(t, &g, c.clock.now.UnixMilli(), ring, "young")
	holder, victim := rec.Placement().Replicas[0], rec.Placement().Replicas[1]
	c.place(holder, rec)
	c.restart(victim)
	c.advance(2*time.Second, 200) // its first round, about 1 s after it starts
	got := c.nodes[victim].store.Get(rec.ID)
	require.NotNil(t, got, "the restarted replica's first round left out a young record")
	assert.Equal(t, Live, got.State)
}

// pagedRepairCluster is three nodes holding 300 timers of rf 2, repair
// on with pages of 16, so that a round refilling a replica has many.
func pagedRepairCluster(t *testing.T) *cluster {
	c := newClusterWith(t, func(_ string, cfg *Config) {
		cfg.RepairInterval, cfg.RepairPage = DefaultRepairInterval, 16
	}, three...)
	c.createMany(300, 2, 600, 600)
	c.advance(2*DefaultRepairInterval, 200)
	return c
}

// TestRepairPageCostsWhatItLists: a round of many pages (a restarted
// replica refilled by its peers) walks each side's store once for its
// list, on its first page, not once a page: the answer's IDs and the
// asker's are kept for the round's next pages.
func TestRepairPageCostsWhatItLists(t *testing.T) {
	c := pagedRepairCluster(t)
	victim := three[1]
	pages := 0
	c.watch = func(s *sent, _ string, _ int, _ bool) {
		if s.from == victim && strings.HasSuffix(s.req.URL, repairPath) && strings.Contains(string(s.req.Body), `"after"`) {
			pages++
		}
	}
	c.restart(victim)
	walks := func() (sum int) {
		for _, n := range c.nodes {
			sum += n.repairWalks
		}
		return sum
	}
	before := walks()
	c.advance(5*time.Second, 200)
	require.Positive(t, c.nodes[victim].Stats().Timers, "the restarted replica refilled")
	require.Greater(t, pages, 8, "pages of the restarted replica's rounds")
	// Each of the victim's two rounds walks its store twice (digests,
	// list) and the peer's once; the peers' own rounds with it as many.
	assert.LessOrEqual(t, walks()-before, 12, "walks of the stores for %d pages", pages)
}

// A round a node serves ends with a change of membership: its list was
// taken under the view before, and a peer that left never asks for the
// round's last page, so its entry would stay until the node restarts.
func TestMembershipChangeEndsTheRoundsServed(t *testing.T) {
	c := pagedRepairCluster(t)
	victim, server := three[2], three[0]
	c.restart(victim)
	c.watch = func(s *sent, to string, _ int, _ bool) {
		if s.from == victim && to == server && c.nodes[server].repairServing[victim] != nil {
			c.down[victim] = true // leaves mid-round
		}
	}
	c.advance(5*time.Second, 200)
	require.True(t, c.down[victim], "%s served a round of the restarted %s's", server, victim)
	require.NotNil(t, c.nodes[server].repairServing[victim], "the round's last page never asked for")
	require.NoError(t, c.nodes[server].SetCluster(Membership{Nodes: three[:2]}))
	assert.Empty(t, c.nodes[server].repairServing, "the rounds served under the view before")
}

// fullReplica is a cluster of three repairing nodes in which the first
// holds at most limit records, and timers created through the second at
// replication factor 3 (so on every node): first deleted ones, created
// and deleted at once, whose tombstones fill the first node for two
// minutes, then long ones, which it refuses for want of room. refused
// counts the node-to-node PUTs the first node answers 503 from then on.
func fullReplica(t *testing.T, limit, deleted, long int) (c *cluster, full string, longIDs []uint64, refused *int) {
	t.Helper()
	full = three[0]
	c = newClusterWith(t, func(a string, cfg *Config) {
		cfg.RepairInterval = DefaultRepairInterval
		if a == full {
			cfg.Limits.MaxTimers = limit
		}
	}, three...)
	for range deleted {
		wid := createVia(t, c, three[1], `{"timing":{"interval":120},"callback":{"http":{"uri":"`+cb+`"}},"reliability":{"replication-factor":3}}`)
		require.Equal(t, 200, c.client(three[1], "DELETE", "/timers/"+wid, "").Status)
	}
	for range long {
		wid := createVia(t, c, three[1], `{"timing":{"interval":3600},"callback":{"http":{"uri":"`+cb+`"}},"reliability":{"replication-factor":3}}`)
		longIDs = append(longIDs, mustID(t, wid))
	}
	refused = new(int)
	c.watch = func(s *sent, host string, status int, _ bool) {
		if host == full && s.req.Method == "PUT" && status == 503 {
			*refused++
		}
	}
	return c, full, longIDs, refused
}

// heldOf counts the records of ids that addr holds live.
func heldOf(c *cluster, addr string, ids []uint64) int {
	got := 0
	for _, id := range ids {
		if tm, ok := c.nodes[addr].Timer(id); ok && tm.State == Live {
			got++
		}
	}
	return got
}

// TestRepairSendsAFullReplicaNothingItCannotTake: a replica at its
// limit lacks the records it refused, and its peers hold them. Repair
// rounds on every side, for as long as it stays full, neither push it
// those records nor have it ask for them: it would refuse each one,
// every round (scenarios/README.md U20).
func TestRepairSendsAFullReplicaNothingItCannotTake(t *testing.T) {
	c, full, long, refused := fullReplica(t, 20, 0, 50)
	require.Equal(t, 20, c.nodes[full].store.Len(), "the replica holds its limit")
	// Every node's records change, so that every node runs its rounds.
	c.advance(5*DefaultRepairInterval, 200)
	assert.Zero(t, *refused, "records pushed to a full replica and refused")
	assert.Equal(t, 20, heldOf(c, full, long))
	held := uint64(0)
	for _, n := range c.nodes {
		held += n.Stats().RepairHeldForRoom
	}
	assert.NotZero(t, held, "no record held back for want of room")
	for _, a := range three[1:] {
		assert.Equal(t, 50, heldOf(c, a, long), "%s lost records", a)
	}
}

// TestRepairAndHandOffDrawOnOneAccountOfAPeersRoom: a round of a node
// both hands off copies to a peer (the records a scale moved from it to
// the peer) and pushes the peer records they share that it lacks. Each
// takes room there, and the peer answered the round's digests before the
// hand-off's pushes reached it, so its answer does not count them: drawn
// from that answer and from the room it said before, the two together
// sent it twice its room, and it refused half. One account of the
// peer's room, less the pushes not answered yet, sends it only what it
// can take.
func TestRepairAndHandOffDrawOnOneAccountOfAPeersRoom(t *testing.T) {
	const limit = 3
	four := append(slices.Clone(three), nodeD)
	c := newRepairingCluster(t, three...)
	// handed are nodeA's timers a join of nodeD moves from it to nodeD,
	// shared those it keeps, nodeD their other replica.
	var handed, shared []uint64
	for len(handed) < 2*limit || len(shared) < 2*limit {
		id := mustID(t, createVia(t, c, nodeA, `{"timing":{"interval":3600},"callback":{"http":{"uri":"`+cb+`"}},"reliability":{"replication-factor":2}}`))
		before, after := NewRing(three).Replicas(id, 2), NewRing(four).Replicas(id, 2)
		switch {
		case !slices.Contains(before, nodeA) || !slices.Contains(after, nodeD):
		case slices.Contains(after, nodeA):
			shared = append(shared, id)
		default:
			handed = append(handed, id)
		}
	}
	// nodeD joins with room for limit records, and runs no round of its
	// own but one: it takes only what nodeA pushes it. Every push to it
	// is lost until the old replicas' pushes have given up, and its round
	// has told nodeA its room.
	cfg := c.cfgs[nodeA]
	cfg.Address, cfg.Cluster, cfg.RepairInterval = nodeD, Membership{Nodes: four}, 0
	cfg.Limits.MaxTimers = limit
	cfg.Clock, cfg.Network = skewedClock{c.clock, 0, new(bool)}, senderNet{c, nodeD}
	d, err := New(cfg)
	require.NoError(t, err)
	c.nodes[nodeD], c.cfgs[nodeD] = d, cfg
	c.lose = func(host string, req Request) bool { return host == nodeD && req.Method == "PUT" }
	c.reload(Membership{Nodes: four})
	c.advance(5*time.Minute, 200)
	d.repairRound()
	c.settle()
	require.Zero(t, d.store.Len(), "nodeD took nothing yet")
	a := c.nodes[nodeA].peerRoom[nodeD]
	require.Equal(t, roomAccount{left: d.room()}, *a, "nodeA's account of nodeD's room")
	require.EqualValues(t, limit, a.left.Timers)
	// One round of nodeA's, nodeB and nodeC down.
	c.lose, c.down[nodeB], c.down[nodeC] = nil, true, true
	refused := 0
	c.watch = func(s *sent, host string, status int, _ bool) {
		if s.from == nodeA && host == nodeD && s.req.Method == "PUT" && status == 503 {
			refused++
		}
	}
	c.nodes[nodeA].repairRound()
	c.settle()
	assert.Zero(t, refused, "pushes nodeD refused for want of room")
	assert.Equal(t, limit, d.store.Len(), "nodeD takes as many as its room")
	c.advance(2*DefaultRepairInterval, 200)
	assert.Zero(t, refused, "pushes nodeD refused for want of room, rounds later")
	assert.Equal(t, limit, heldOf(c, nodeD, slices.Concat(handed, shared)))
}

// TestAccountOfAPeersRoomCountsThePushesOut: a repair message of a peer
// says its room as it was when sent, which need not count the pushes
// this node drew on its account of that room and the peer has not
// answered yet: the account takes the room said less those. A push held
// back while some are out makes the next round look again, as the
// peer's message may have counted them after all; one held back with
// none out waits for the peer to say it has room.
func TestAccountOfAPeersRoomCountsThePushesOut(t *testing.T) {
	n := newClusterWith(t, nil, three...).nodes[nodeA]
	rec := &Timer{ID: 1, State: Live}
	b := recordBytes(rec)
	answered, ok := n.drawRoom(nodeB, rec)
	require.True(t, ok, "a peer that said nothing of its room is pushed")
	require.Nil(t, answered, "nothing drawn")
	n.heardRoom(nodeB, &room{Timers: 2, Bytes: 10 * b})
	first, ok := n.drawRoom(nodeB, rec)
	require.True(t, ok)
	n.heardRoom(nodeB, &room{Timers: 2, Bytes: 10 * b}) // sent before the push reached it
	assert.Equal(t, roomAccount{left: room{Timers: 1, Bytes: 9 * b}, out: room{Timers: 1, Bytes: b}}, *n.peerRoom[nodeB])
	second, ok := n.drawRoom(nodeB, rec)
	require.True(t, ok)
	marks := n.repairMarks
	_, ok = n.drawRoom(nodeB, rec)
	require.False(t, ok, "the room said less the pushes out")
	assert.NotEqual(t, marks, n.repairMarks, "held back while pushes are out: the next round looks again")
	first()
	second()
	assert.Equal(t, room{}, n.peerRoom[nodeB].out, "the pushes answered")
	marks = n.repairMarks
	_, ok = n.drawRoom(nodeB, rec)
	require.False(t, ok, "no room said since")
	assert.Equal(t, marks, n.repairMarks, "held back with no push out: no round for it")
	n.heardRoom(nodeB, &room{Timers: 1, Bytes: b})
	_, ok = n.drawRoom(nodeB, rec)
	assert.True(t, ok, "room said again")
}

// TestFullReplicaTakesWhatItLacksOnceItHasRoom: a replica whose records
// end, and so has room again, asks its peers in a round for the records
// it lacks, as many as it has room for, and refuses none of them. Its
// tombstones end long after the last change any node saw: nothing but
// the room it gained starts that round.
func TestFullReplicaTakesWhatItLacksOnceItHasRoom(t *testing.T) {
	c, full, long, refused := fullReplica(t, 20, 10, 30)
	require.Equal(t, 10, heldOf(c, full, long), "the long timers the replica took before it was full")
	c.advance(100*time.Second, 200)
	require.Equal(t, 10, heldOf(c, full, long), "the replica took records while its tombstones held its room")
	// The tombstones end; a round follows.
	c.advance(3*time.Minute, 200)
	assert.Equal(t, 20, heldOf(c, full, long), "the replica holds as many as its limit")
	assert.Zero(t, *refused, "records pushed to a full replica and refused")
}

// TestHandOffSendsAFullReplicaOnlyWhatItCanTake: a node joins with room
// for three records, and a scale places ten on it, which end one a
// minute from the fifth. The old replicas keep what it could not take, popping it after
// every replica, and push it nothing once it has said it is full; as its
// records end and it has room again, it says so, and they hand off as
// many as it can take. Every pop of every timer is made.
func TestHandOffSendsAFullReplicaOnlyWhatItCanTake(t *testing.T) {
	four := append(slices.Clone(three), nodeD)
	c := newRepairingCluster(t, three...)
	var moving []uint64         // placed on nodeD once it joins
	minutes := map[string]int{} // a moving timer's opaque data to its minutes
	for i := 0; len(moving) < 10; i++ {
		k, opaque := len(moving)+5, strconv.Itoa(i)
		wid := createVia(t, c, three[0], fmt.Sprintf(`{"timing":{"interval":60,"repeat-for":%d},"callback":{"http":{"uri":"%s","opaque":"%s"}},"reliability":{"replication-factor":1}}`, 60*k, cb, opaque))
		if id := mustID(t, wid); NewRing(four).Replicas(id, 1)[0] == nodeD {
			moving, minutes[opaque] = append(moving, id), k
		}
	}
	c.joinWith(nodeD, Membership{Nodes: four}, func(cfg *Config) { cfg.Limits.MaxTimers = 3 })
	c.reload(Membership{Nodes: four})
	require.Equal(t, 3, c.nodes[nodeD].store.Len(), "the new node holds its limit")
	// Each pop an old replica makes sends nodeD, the timer's replica, a
	// notice, which it refuses while full: one a pop, not a hand-off's
	// worth a round.
	refused, notices := 0, 0
	c.watch = func(s *sent, host string, status int, _ bool) {
		switch {
		case host == nodeD && s.req.Method == "PUT" && status == 503:
			refused++
		case host == "" && s.from != nodeD && minutes[string(s.req.Body)] > 0:
			notices++
		}
	}
	pops := map[string]map[string]bool{} // opaque to sequence numbers
	count := func(cbs []Request) {
		for _, r := range cbs {
			o := string(r.Body)
			if pops[o] == nil {
				pops[o] = map[string]bool{}
			}
			pops[o][r.Header.Get(wire.HeaderSequenceNumber)] = true
		}
	}
	count(c.advance(2*DefaultRepairInterval, 200)) // the old replicas hear its room
	refused, notices = 0, 0
	onD := map[uint64]bool{}
	for range 30 {
		count(c.advance(30*time.Second, 200))
		for _, id := range moving {
			if tm, ok := c.nodes[nodeD].Timer(id); ok && tm.State == Live {
				onD[id] = true
			}
		}
	}
	assert.LessOrEqual(t, refused, notices, "pushes refused by the full replica, beyond one a pop")
	assert.Greater(t, len(onD), 5, "timers the new replica held as it had room")
	for o, k := range minutes {
		assert.Len(t, pops[o], k, "pops of the timer of %d minutes", k)
	}
}

// TestHandOffResumesWhenAFullReplicaSaysItHasRoom: a node that held
// hand-offs back from a full replica runs its next round when a repair
// message of that replica says it has room again, though nothing else
// changed on it: a quiet node runs no round of its own, and its copy,
// popped after every replica's rank, would pop again each pop the new
// replica makes once a notice brought it there. What it pushes then is
// taken from the room the replica said it has.
func TestHandOffResumesWhenAFullReplicaSaysItHasRoom(t *testing.T) {
	n := newClusterWith(t, nil, three...).nodes[nodeA]
	placed := &Timer{ID: 1, State: Live}
	pushed := func(p *Timer) bool { _, ok := n.handOffRoom(nodeB, p); return ok }
	require.True(t, pushed(placed), "a peer that said nothing of its room is pushed")
	n.heardRoom(nodeB, &room{})
	require.False(t, pushed(placed), "a full peer is pushed nothing")
	require.True(t, pushed(&Timer{ID: 2, State: Tombstone, def: 1}), "a finished definition's tombstone takes no room")
	require.False(t, pushed(&Timer{ID: 3, State: Tombstone}), "a delete's tombstone takes room the full peer has not")
	marks := n.repairMarks
	n.heardRoom(nodeB, &room{})
	assert.Equal(t, marks, n.repairMarks, "still full: no round")
	n.heardRoom(nodeB, &room{Timers: 1, Bytes: 1 << 20})
	assert.NotEqual(t, marks, n.repairMarks, "room again: the next round hands off")
	assert.True(t, pushed(placed))
	assert.False(t, pushed(placed), "the room it said it has is taken")
}

// TestNodeThatSaidItWasFullRunsARoundOnceItHasRoom: a node exactly at its
// limit that refused nothing yet tells its peers in a repair message that
// it has no room, so they hold back what it lacks; once it has room it
// runs a round, which says so, whatever else changed.
func TestNodeThatSaidItWasFullRunsARoundOnceItHasRoom(t *testing.T) {
	c := newClusterWith(t, func(a string, cfg *Config) {
		cfg.RepairInterval = DefaultRepairInterval
		cfg.Limits.MaxTimers = 1
	}, three...)
	wid := createVia(t, c, nodeA, `{"timing":{"interval":60},"callback":{"http":{"uri":"`+cb+`"}},"reliability":{"replication-factor":1}}`)
	holder := NewRing(three).Replicas(mustID(t, wid), 1)[0]
	n := c.nodes[holder]
	require.Equal(t, 1, n.store.Len())
	n.lackedRoomAt = nil
	require.Zero(t, n.roomToSay().Timers)
	assert.False(t, n.roomFreed(), "still full")
	n.release(n.store.Get(mustID(t, wid)))
	assert.True(t, n.roomFreed(), "room again after saying it had none")
	assert.False(t, n.roomFreed(), "once")
}

// TestTombstoneMarksDoNotGoRoundForEver: a delete of a timer on four
// replicas missed two of them (C and D), so the tombstone marks both as
// may lack it, and repair rounds push it to them. Each holder clears a
// mark on the replica's own answer, but a mark travels with the
// tombstone, and a holder learnt a mark it had cleared, or one of
// itself, again from another holder's copy: the marks went round for
// ever, every holder pushing the tombstone each round to replicas that
// held it, and keeping it past its life (fresh seed 4984840,
// scenarios/README.md N60). Once every replica holds the tombstone the
// pushes stop and no mark stands.
func TestTombstoneMarksDoNotGoRoundForEver(t *testing.T) {
	four := []string{nodeA, nodeB, nodeC, nodeD}
	c := newRepairingCluster(t, four...)
	wid := createVia(t, c, nodeA, string(wire.Encode(wire.Timer{
		Interval: 10 * time.Second, RepeatFor: 30 * time.Second, URI: cb, ReplicationFactor: 4})))
	c.advance(time.Second, 200)
	require.Equal(t, four, c.holders(wid))
	c.lose = func(host string, _ Request) bool { return host == nodeC || host == nodeD }
	c.client(nodeA, "DELETE", "/timers/"+wid, "")
	c.settle()
	c.lose = nil
	id := mustID(t, wid)
	perMinute := putsPerMinute(c, 20, wid, "")
	assert.Equal(t, []int{0, 0, 0, 0, 0}, perMinute[15:], "pushes of the tombstone a minute: %v", perMinute)
	for _, a := range four {
		if held, ok := c.nodes[a].Timer(id); ok {
			assert.Zero(t, held.lacking(), "%s's tombstone still marks %b", a, held.lacking())
		}
	}
}

// TestDeleteTombstoneWaitsForAFullReplicasRoom: a full replica refuses a
// delete's tombstone of a timer it holds nothing of (refuseFull, N69), so
// the replicas that mark it as lacking the tombstone draw it on its room,
// as a live record: pushed each round, refused each round, it was a
// message storm (fresh seeds 9330012 and 9334701). The full replica is
// pushed nothing, and holds nothing of the timer, which it never pops.
func TestDeleteTombstoneWaitsForAFullReplicasRoom(t *testing.T) {
	c := newClusterWith(t, func(addr string, cfg *Config) {
		cfg.RepairInterval = DefaultRepairInterval
		if addr == nodeC {
			cfg.Limits.MaxTimers = 1
		}
	}, three...)
	body := string(wire.Encode(wire.Timer{Interval: 10 * time.Minute, RepeatFor: time.Hour, URI: cb, ReplicationFactor: 3}))
	createVia(t, c, nodeA, body) // fills nodeC
	c.advance(time.Second, 200)
	require.Equal(t, 1, c.nodes[nodeC].store.Len())
	c.lose = func(host string, _ Request) bool { return host == nodeC }
	wid := createVia(t, c, nodeA, body)
	c.client(nodeA, "DELETE", "/timers/"+wid, "")
	c.settle()
	c.lose = nil
	perMinute := putsPerMinute(c, 10, wid, "")
	assert.Equal(t, []int{0, 0, 0, 0, 0}, perMinute[5:], "pushes of the tombstone to the full replica a minute: %v", perMinute)
	_, held := c.nodes[nodeC].Timer(mustID(t, wid))
	assert.False(t, held, "the full replica holds a record of the deleted timer")
}

// TestRepairPushAnsweredNewerTeachesThePusher proves a repair round that
// pushes a record its peer answers with a newer one (a 409 carrying it)
// takes that record, and does not push its own again each round: a
// replica an update's smaller factor leaves out, which the tell of it
// missed (droppedReplicas), holds the replaced definition live, and the
// newer record is placed on nodes that neither compare it with that
// replica nor push it there. Before the rule it pushed its stale record
// to them every round for as long as the old definition lasted, each
// answered 409, and popped it (scenarios/README.md N61, seed 122083).
func TestRepairPushAnsweredNewerTeachesThePusher(t *testing.T) {
	c := newRepairingCluster(t, three...)
	wid := createVia(t, c, three[0], `{"timing":{"interval":7200,"repeat-for":14400},"callback":{"http":{"uri":"`+cb+
		`","opaque":"x"}},"reliability":{"replication-factor":3}}`)
	id := mustID(t, wid)
	two := c.nodes[three[0]].ring.Replicas(id, 2)
	dropped := three[slices.IndexFunc(three, func(a string) bool { return !slices.Contains(two, a) })]
	held, _ := c.nodes[two[0]].Timer(id)
	up := *withCallback(withParts(&Timer{ID: id, Version: held.Version + 1, Start: c.nodes[two[0]].nowMs(), interval: sec(time.Minute), repeatFor: sec(2 * time.Hour),
		RF: 2}, &Placement{Replicas: two}, nil), cb, "y")
	// The rf 2 update reaches its replicas; their tell of it to the
	// replica it leaves out is lost.
	c.lose = func(host string, _ Request) bool { return host == dropped }
	for i, r := range two {
		if resp := replicateFrom(c.nodes[r], two[1-i], up); resp.Status != 200 {
			t.Fatalf("the rf 2 write to %s: got %d (%s)", r, resp.Status, resp.Body)
		}
	}
	c.settle()
	c.lose = nil
	if got, _ := c.nodes[dropped].Timer(id); got.State != Live || got.Version == up.Version {
		t.Fatalf("the replica rf 2 leaves out should still hold the replaced definition live, holds %+v", got)
	}
	perMinute := putsPerMinute(c, 20, wid, dropped)
	assert.Equal(t, make([]int, 15), perMinute[5:], "pushes of the replaced definition a minute by %s: %v", dropped, perMinute)
	got, _ := c.nodes[dropped].Timer(id)
	assert.Equal(t, up.Version, got.Version, "%s's record", dropped)
	assert.NotEqual(t, Live, got.State, "%s's record", dropped)
}

// putsPerMinute advances c minutes minutes, answering callbacks 200, and
// returns how many PUTs of timer wid nodes sent each minute (from only,
// when not "").
func putsPerMinute(c *cluster, minutes int, wid, from string) []int {
	puts := 0
	c.watch = func(s *sent, to string, _ int, _ bool) {
		if to != "" && (from == "" || s.from == from) && s.req.Method == "PUT" && strings.Contains(s.req.URL, wid[:16]) {
			puts++
		}
	}
	defer func() { c.watch = nil }()
	var perMinute []int
	for range minutes {
		puts = 0
		c.advance(time.Minute, 200)
		perMinute = append(perMinute, puts)
	}
	return perMinute
}

// TestHandOffDoesNotPushATargetThatHoldsItAgain: a node holds a record
// (a tombstone, and a live one) it must hand off to two replicas a scale
// added; one takes it (200) and the other never answers (or refuses it,
// its clock apart). The hand-off keeps its copy until both hold it, and
// so hands off again every round; it pushes again only the target that
// may lack the record, not the one that answered that it holds it. Before
// the rule each round pushed both, the one that held it included, for as
// long as the other refused (fresh seed 125438: n1's tombstone to n3 and
// n6, n6 answering 200 every round while n3 refused 403; scenarios/README.md
// N63).
func TestHandOffDoesNotPushATargetThatHoldsItAgain(t *testing.T) {
	const nodeE = "10.0.0.5:7253"
	five := []string{nodeA, nodeB, nodeC, nodeD, nodeE}
	for _, tomb := range []bool{true, false} {
		t.Run(fmt.Sprintf("tombstone %v", tomb), func(t *testing.T) {
			c := newRepairingCluster(t, nodeA, nodeB, nodeC)
			wid := createPlacedOnAdded(t, c, five)
			id := mustID(t, wid)
			if tomb {
				require.Equal(t, 200, c.client(nodeA, "DELETE", "/timers/"+wid, "").Status)
			}
			// The added replica nodeE never answers.
			c.down[nodeE] = true
			c.join(nodeD, Membership{Nodes: five})
			for _, a := range []string{nodeA, nodeB, nodeC} {
				require.NoError(t, c.nodes[a].SetCluster(Membership{Nodes: five}))
			}
			c.settle()
			toD := 0
			c.watch = func(s *sent, to string, status int, _ bool) {
				if to == nodeD && s.req.Method == "PUT" && strings.Contains(s.req.URL, wid[:16]) {
					toD++
				}
			}
			var perMinute []int
			for range 20 {
				toD = 0
				c.advance(time.Minute, 200)
				perMinute = append(perMinute, toD)
			}
			c.watch = nil
			assert.Equal(t, make([]int, 15), perMinute[5:], "pushes to %s (holding it) a minute: %v", nodeD, perMinute)
			held, ok := c.nodes[nodeD].Timer(id)
			require.True(t, ok, "%s holds the record", nodeD)
			if tomb {
				assert.Equal(t, Tombstone, held.State)
			} else {
				assert.Equal(t, Live, held.State)
			}
			// The old replicas keep their copies while nodeE may lack it.
			for _, a := range NewRing([]string{nodeA, nodeB, nodeC}).Replicas(id, 2) {
				got, ok := c.nodes[a].Timer(id)
				require.True(t, ok)
				if tomb {
					assert.Equal(t, Tombstone, got.State, "%s's copy", a)
				} else {
					assert.Equal(t, Live, got.State, "%s's copy", a)
				}
			}
			// Once nodeE answers, the hand-off ends: both targets hold
			// it, and the old replicas' live copies pop no more.
			delete(c.down, nodeE)
			c.join(nodeE, Membership{Nodes: five})
			c.advance(5*time.Minute, 200)
			got, ok := c.nodes[nodeE].Timer(id)
			require.True(t, ok, "%s holds the record", nodeE)
			assert.Equal(t, held.State, got.State, "%s's record", nodeE)
			for _, a := range NewRing([]string{nodeA, nodeB, nodeC}).Replicas(id, 2) {
				got, _ := c.nodes[a].Timer(id)
				if tomb {
					assert.Equal(t, got.Version, c.nodes[a].tombsHanded[id], "%s's tombstone handed off", a)
				} else {
					assert.Equal(t, Moved, got.State, "%s's copy once both hold it", a)
				}
			}
		})
	}
}

// createPlacedOnAdded creates, through nodeA of c (nodeA, nodeB, nodeC),
// a timer at rf 2 that the scale to five (those three, nodeD and a fifth)
// places on the two added nodes, and returns its ID as the wire has it.
func createPlacedOnAdded(t *testing.T, c *cluster, five []string) string {
	t.Helper()
	for i := 0; ; i++ {
		wid := createVia(t, c, nodeA, `{"timing":{"interval":7200,"repeat-for":14400},"callback":{"http":{"uri":"`+cb+
			`","opaque":"`+strconv.Itoa(i)+`"}},"reliability":{"replication-factor":2}}`)
		if after := NewRing(five).Replicas(mustID(t, wid), 2); slices.Contains(after, five[3]) && slices.Contains(after, five[4]) {
			return wid
		}
		require.Equal(t, 200, c.client(nodeA, "DELETE", "/timers/"+wid, "").Status)
	}
}

// TestRepairBringsTheEndOfADefinitionToAReplicaThatMissedIt: a replica
// cut off from the last pop's notice (the link between it and the
// primary cut just before the last pop) still holds the timer live, at
// the version the other replicas hold ended: the tombstone of the same
// version, which ranks above the live record. The backup that took the
// notice holds no mark of the replica the notice missed (only the
// primary noted it, and the primary cannot reach it), so a repair round
// between the two replicas that still talk is the one path that tells
// it before its turn at the last pop: the round's compare must rank the
// tombstone above the live record of its version and push it, or the
// replica pops the last pop again. (A client delete's tombstone carries
// a version of its own, newer than the definition's, and wins the
// compare by version.)
func TestRepairBringsTheEndOfADefinitionToAReplicaThatMissedIt(t *testing.T) {
	c := newClusterWith(t, func(_ string, cfg *Config) { cfg.RepairInterval = time.Second }, three...)
	wid := createVia(t, c, three[0], `{"timing":{"interval":10,"repeat-for":20},"callback":{"http":{"uri":"`+cb+
		`","opaque":"x"}},"reliability":{"replication-factor":3}}`)
	id := mustID(t, wid)
	replicas := NewRing(three).Replicas(id, 3)
	primary, backup, last := replicas[0], replicas[1], replicas[2]
	var pops []string
	collect := func(d time.Duration) {
		pops = append(pops, seqs(c.advance(d, 200))...)
	}
	collect(15 * time.Second) // pop 1 at 10 s, told to every replica
	require.Equal(t, []string{"1:x"}, pops)
	from := func(req Request, node string) bool { return strings.Contains(req.Header.Get(HeaderInstance), node) }
	c.lose = func(host string, req Request) bool {
		return host == last && from(req, primary) || host == primary && from(req, last)
	}
	// The primary pops the last pop at 20 s; the backup's turn is at 22 s,
	// the last replica's at 24 s.
	collect(8 * time.Second)
	held, ok := c.nodes[backup].Timer(id)
	require.True(t, ok)
	require.Equal(t, Tombstone, held.State, "the backup took the last pop's notice")
	require.Zero(t, held.lacking(), "the backup's tombstone marks no replica as may lack it")
	if got, _ := c.nodes[last].Timer(id); got.State == Live {
		t.Errorf("at 23 s, before its turn at the last pop, the replica cut off from its notice holds the timer live "+
			"(version %d, seq %d) where the backup holds the tombstone of that version: no repair round sent it",
			got.Version, got.Seq)
	}
	collect(30 * time.Second)
	if got := strings.Join(pops, " "); got != "1:x 2:x" {
		t.Errorf("pops of the timer: %q, want \"1:x 2:x\" (each once)", got)
	}
}

// TestHandOffWaitsForATargetThatHoldsItLive: a scale down moves a timer
// from the leaving node, its one replica, to a staying node that has not
// reloaded for the scale yet and, placing the timer on the leaving node
// under its old view, keeps each push of it as moved away: a 200 that
// vouches for nothing (X-Chronos-Held says no live copy). The leaving
// node's hand-off pushes it again while its waits for the reload last,
// and when they run out it must not count that 200 as the target holding
// the timer: it keeps its own copy live, for no other node holds one.
// Once the target reloads, the next hand-off finds it holding the timer
// live, and only then does the leaving node keep its copy as moved away.
// Counted as held, the copy was ended while nobody held the timer live,
// and no node was left to pop it, after the reload too (mutation
// hand-off-on-any-200).
func TestHandOffWaitsForATargetThatHoldsItLive(t *testing.T) {
	c := newRepairingCluster(t, three...)
	wid := createVia(t, c, three[0], `{"timing":{"interval":3600},"callback":{"http":{"uri":"`+cb+
		`","opaque":"x"}},"reliability":{"replication-factor":1}}`)
	id := mustID(t, wid)
	leaving := NewRing(three).Replicas(id, 1)[0]
	staying := slices.DeleteFunc(slices.Clone(three), func(a string) bool { return a == leaving })
	target := NewRing(staying).Replicas(id, 1)[0]
	shrunk := Membership{Nodes: staying, Leaving: []string{leaving}}
	// Every node reloads for the scale but the target.
	for _, a := range three {
		if a != target {
			require.NoError(t, c.nodes[a].SetCluster(shrunk), "SetCluster(%s)", a)
		}
	}
	// Past the hand-off's waits for the target's reload (heldAwayRetry:
	// eight tries, the waits between them at most 91 s in all) and a
	// repair round's hand-off after them.
	c.advance(4*time.Minute, 200)
	require.Positive(t, c.nodes[leaving].probeHits[probePushAgainHeldAway], "the target kept the leaving node's push as moved away")
	if held, ok := c.nodes[target].Timer(id); ok && held.State == Live {
		t.Fatalf("the target, not reloaded, holds the timer live")
	}
	if on := c.holders(wid); !slices.Equal(on, []string{leaving}) {
		t.Errorf("after four minutes of hand-offs to a target that keeps the timer as moved away, it is held live on %v, want on the leaving node %s alone", on, leaving)
	}
	require.NoError(t, c.nodes[target].SetCluster(shrunk))
	c.advance(2*time.Minute, 200)
	if on := c.holders(wid); !slices.Equal(on, []string{target}) {
		t.Errorf("two minutes after the target reloaded, the timer is held live on %v, want on the target %s alone", on, target)
	}
}

// TestDeleteMarksTheReplicaThatRefusedIt: a delete through one of the
// timer's replicas reaches the other, which missed the create and, full,
// refuses the delete's tombstone with 503 (refuseFull). The proxy's
// tombstone marks it as may lack the delete, so that repair rounds push
// it there once it has room and the tombstone outlives its own life
// meanwhile; unmarked, the refused replica's copy of the timer, should a
// repair hand it one, would never meet the delete.
func TestDeleteMarksTheReplicaThatRefusedIt(t *testing.T) {
	c := newCluster(t, three...)
	proxy, refused := three[0], three[1]
	c.lose = func(host string, _ Request) bool { return host == refused }
	id := mustID(t, createVia(t, c, proxy, `{"timing":{"interval":60},"callback":{"http":{"uri":"`+cb+`"}},"reliability":{"replication-factor":3}}`))
	c.lose = nil
	require.Nil(t, c.nodes[refused].store.Get(id), "the replica missed the create")
	c.nodes[refused].cfg.Limits.MaxTimers = c.nodes[refused].store.Len()
	r := c.client(proxy, "DELETE", "/timers/"+wire.FormatWireID(id, 0), "")
	held := c.nodes[proxy].store.Get(id)
	require.NotNil(t, held, "the proxy's tombstone (delete answered %d %s)", r.Status, r.Body)
	assert.True(t, lackedBy(held, refused), "the tombstone marks the replica that refused it (marks %b)", held.lacking())
}

// TestRepairServeRefusesBadMessages proves POST /timers/repair answers a
// message it cannot read with 400 naming the field, one from a node
// outside the cluster with 404, and one of another view with 409 (its
// sender reloads and asks again), and takes none of them.
func TestRepairServeRefusesBadMessages(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Address, c.Cluster = nodeA, Membership{Nodes: []string{nodeA, nodeB}} })
	view := strconv.FormatUint(h.node.ring.ViewID(), 10)
	digests := slices.Repeat([]string{"0000000000000000"}, repairBuckets)
	for _, tc := range []struct {
		name string
		body string
		want int
	}{
		{"not JSON", "digests", 400},
		{"not a repair message", `{"view":1}`, 400},
		{"a view not a number", `{"view":"x","from":"` + nodeB + `"}`, 400},
		{"from a stranger", `{"view":"` + view + `","from":"10.9.9.9:7253"}`, 404},
		{"of another view", `{"view":"1","from":"` + nodeB + `"}`, 409},
		{"too few digests", `{"view":"` + view + `","from":"` + nodeB + `","digests":["0"]}`, 400},
		{"a digest not hex", `{"view":"` + view + `","from":"` + nodeB + `","digests":["zz"` + strings.Repeat(`,"0"`, repairBuckets-1) + `]}`, 400},
		{"after not an ID", repairBody(view, digests, `"after":"zz"`), 400},
		{"young not versions", repairBody(view, digests, `"young-from":"zz","young-to":"0000000000000001"`), 400},
		{"a round's first page", repairBody(view, digests, ""), 200},
	} {
		r := h.do("POST", repairPath, tc.body)
		assert.Equal(t, tc.want, r.Status, "%s: %s", tc.name, r.Body)
		if tc.want != 200 {
			assert.NotEmpty(t, r.Header.Get(wire.HeaderReason), tc.name)
		}
	}
}

// repairBody is a repair message from nodeB of view with digests, and
// extra fields (JSON members) if any.
func repairBody(view string, digests []string, extra string) string {
	d, _ := json.Marshal(digests)
	if extra != "" {
		extra = "," + extra
	}
	return `{"view":"` + view + `","from":"` + nodeB + `","digests":` + string(d) + extra + `}`
}

// TestRepairGivesAtMostAPageOfWantedRecords: a peer's message wanting
// more records than a page (MaxRepairEntries) is given a page of them:
// one message makes a node push no more than a page lists.
func TestRepairGivesAtMostAPageOfWantedRecords(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Address, c.Cluster = nodeA, Membership{Nodes: []string{nodeA, nodeB}} })
	id := mustID(t, h.create(`{"timing":{"interval":60},"callback":{"http":{"uri":"`+cb+`"}},"reliability":{"replication-factor":1}}`))
	h.net.take("http://")
	want, _ := json.Marshal(slices.Repeat([]string{wire.FormatID(id)}, MaxRepairEntries+1))
	view := strconv.FormatUint(h.node.ring.ViewID(), 10)
	r := h.do("POST", repairPath, `{"view":"`+view+`","from":"`+nodeB+`","want":`+string(want)+`}`)
	require.Equal(t, 202, r.Status, "%s", r.Body)
	assert.Len(t, h.net.take("http://"+nodeB), MaxRepairEntries, "pushes to the peer")
}

// createPlacedAlong creates, through nodeA of c, a timer at rf 1 whose
// one replica differs in each of views (each ring's members), and returns
// its ID as the wire has it and its replica in each view.
func createPlacedAlong(t *testing.T, c *cluster, views ...[]string) (string, []string) {
	t.Helper()
	step := loopBound(t, 1000, "createPlacedAlong: no timer placed apart in every view")
	for i := 0; ; i++ {
		step()
		wid := createVia(t, c, nodeA, `{"timing":{"interval":7200},"callback":{"http":{"uri":"`+cb+
			`","opaque":"`+strconv.Itoa(i)+`"}},"reliability":{"replication-factor":1}}`)
		var on []string
		for _, v := range views {
			if r := NewRing(v).Replicas(mustID(t, wid), 1)[0]; !slices.Contains(on, r) {
				on = append(on, r)
			}
		}
		if len(on) == len(views) {
			return wid, on
		}
		require.Equal(t, 200, c.client(nodeA, "DELETE", "/timers/"+wid, "").Status)
	}
}

// TestTombstoneHandedOffBeforeAReloadGoesToTheLaterViewsReplicas: a
// node holds the tombstone of a deleted timer and hands it off to the
// replica a scale added (nodeD); before nodeD's answer arrives, the node
// reloads for a second scale, which places the timer on nodeE, unreached
// for now. The answer tells of the view the node has left: the tombstone
// must not be noted as handed off (tombsHanded) under the new view, or
// no later hand-off would push it, and nodeE, the timer's replica now,
// would never learn of the delete (a copy of the timer it holds live, or
// is later repaired, would pop a deleted timer). Once nodeE answers, the
// node's repair rounds hand the tombstone off to it.
func TestTombstoneHandedOffBeforeAReloadGoesToTheLaterViewsReplicas(t *testing.T) {
	const nodeE = "10.0.0.5:7253"
	four := []string{nodeA, nodeB, nodeC, nodeD}
	five := append(slices.Clone(four), nodeE)
	c := newRepairingCluster(t, nodeA, nodeB, nodeC)
	wid, on := createPlacedAlong(t, c, []string{nodeA, nodeB, nodeC}, four, five)
	id, holder := mustID(t, wid), on[0]
	require.Equal(t, []string{nodeD, nodeE}, on[1:], "the timer's replica under four, then five")
	require.Equal(t, 200, c.client(holder, "DELETE", "/timers/"+wid, "").Status)
	// Nothing passes between the holder and nodeE until the tombstone's
	// first hand-off under five has failed.
	c.join(nodeE, Membership{Nodes: five})
	apart := func(host string, req Request) bool {
		return host == nodeE && strings.Contains(req.Header.Get(HeaderInstance), holder) ||
			host == holder && strings.Contains(req.Header.Get(HeaderInstance), nodeE)
	}
	c.lose = apart
	c.watch = func(s *sent, to string, _ int, lost bool) {
		if s.from == holder && to == nodeD && s.req.Method == "PUT" && strings.Contains(s.req.URL, wid[:16]) && !lost {
			c.watch = nil
			require.NoError(t, c.nodes[holder].SetCluster(Membership{Nodes: five}))
		}
	}
	c.join(nodeD, Membership{Nodes: four})
	for _, a := range []string{nodeA, nodeB, nodeC} {
		require.NoError(t, c.nodes[a].SetCluster(Membership{Nodes: four}))
	}
	c.settle()
	require.Nil(t, c.watch, "nodeD answered the tombstone's hand-off under four")
	got, ok := c.nodes[nodeD].Timer(id)
	require.True(t, ok, "%s holds the tombstone", nodeD)
	require.Equal(t, Tombstone, got.State)
	c.advance(3*time.Minute, 200)
	c.lose = nil
	c.advance(2*DefaultRepairInterval, 200)
	if got, ok = c.nodes[nodeE].Timer(id); !ok || got.State != Tombstone {
		t.Errorf("%s, the timer's replica under five, holds no tombstone of the deleted timer (held %v, state %v; the holder noted it handed off: %v)",
			nodeE, ok, got.State, c.nodes[holder].tombsHanded[id] != 0)
	}
}

// TestHandOffPushesAgainATargetHeardBeforeAReload: a node hands off a
// live timer to the two replicas a scale added, nodeD and nodeE (down).
// Between its push to nodeD and nodeD's answer that it holds the copy,
// the node reloads (an operator's wrong membership) and back. A change
// of view forgets which targets were heard to hold a copy (keepHeard):
// the answer came under a view the node had left, so it must not be
// noted (handHeard). Noted, it was kept as of the view the node returned
// to, and every repair round skipped nodeD as holding the copy for as
// long as nodeE stayed down: nodeD, restarted empty meanwhile, never got
// the timer back from the hand-off, its one source (the other old
// replica restarted empty before the scale). Unnoted, the first round
// once nodeD is back pushes it the timer.
func TestHandOffPushesAgainATargetHeardBeforeAReload(t *testing.T) {
	const nodeE = "10.0.0.5:7253"
	olds := []string{nodeA, nodeB, nodeC}
	five := []string{nodeA, nodeB, nodeC, nodeD, nodeE}
	c := newRepairingCluster(t, olds...)
	wid := createPlacedOnAdded(t, c, five)
	id := mustID(t, wid)
	old := NewRing(olds).Replicas(id, 2)
	holder := old[0]
	c.restart(old[1]) // the holder's copy is the only one left
	c.down[nodeE] = true
	phase := 0
	c.watch = func(s *sent, to string, status int, lost bool) {
		switch {
		case phase == 0 && s.from == holder && to == nodeD && s.req.Method == "PUT" && strings.Contains(s.req.URL, wid[:16]) && !lost:
			require.NoError(t, c.nodes[holder].SetCluster(Membership{Nodes: olds}))
			c.down[nodeD] = true
			phase = 1
		case phase == 1: // nodeD's answer has been taken
			require.NoError(t, c.nodes[holder].SetCluster(Membership{Nodes: five}))
			phase = 2
		}
	}
	c.join(nodeD, Membership{Nodes: five})
	for _, a := range olds {
		require.NoError(t, c.nodes[a].SetCluster(Membership{Nodes: five}))
	}
	c.advance(time.Minute, 200) // the holder's first repair round hands the timer off
	require.Equal(t, 2, phase, "the holder reloaded and back around nodeD's answer")
	c.watch = nil
	c.advance(3*time.Minute, 200)
	c.restart(nodeD)
	delete(c.down, nodeD)
	c.advance(2*DefaultRepairInterval, 200)
	if on := c.holders(wid); !slices.Contains(on, nodeD) {
		t.Errorf("%s, back and empty, does not hold the timer live after two repair intervals (held live on %v; the holder skipped it as heard %d times)",
			nodeD, on, c.nodes[holder].probeHits[probeHandOffHeardSkipped])
	}
}

// TestHandOffConfirmsAFullTargetHeardToHoldTheCopy: a node hands off a
// live timer to the two replicas a scale added; nodeE has said it is
// full, so the resync's hand-off pushes nodeD alone, and the copy stays.
// Once nodeE says it has room for one, a round pushes it the copy, which
// it answers it holds; then nodeE says it is full again (it is at its
// limit). The round that confirms both targets must push nodeE too: it
// holds the record, which takes none of its room. Drawn on its room, the
// push was held back in every confirming round, the copy never ended,
// and each round pushed the same record to one target or the other for
// as long as nodeE stayed at its limit (scenarios/README.md N77, seed
// 9617973).
func TestHandOffConfirmsAFullTargetHeardToHoldTheCopy(t *testing.T) {
	const nodeE = "10.0.0.5:7253"
	olds := []string{nodeA, nodeB, nodeC}
	five := []string{nodeA, nodeB, nodeC, nodeD, nodeE}
	c := newClusterWith(t, nil, olds...)
	wid := createPlacedOnAdded(t, c, five)
	id := mustID(t, wid)
	holder := NewRing(olds).Replicas(id, 2)[0]
	n := c.nodes[holder]
	n.heardRoom(nodeE, &room{})
	c.join(nodeD, Membership{Nodes: five})
	c.join(nodeE, Membership{Nodes: five})
	for _, a := range olds {
		require.NoError(t, c.nodes[a].SetCluster(Membership{Nodes: five}))
	}
	c.settle()
	state := func() State { got, ok := n.Timer(id); require.True(t, ok); return got.State }
	require.Equal(t, Live, state(), "nodeE, full, was pushed nothing: the copy stays")
	n.heardRoom(nodeE, &room{Timers: 1, Bytes: 1 << 20})
	n.handOff(nil)
	c.settle()
	require.Equal(t, Live, state(), "a round that skipped nodeD as heard ends nothing")
	n.heardRoom(nodeE, &room{})
	n.handOff(nil)
	c.settle()
	assert.Equal(t, Moved, state(), "both targets answered the confirming round that they hold the copy (held back for room: %d)",
		n.probeHits[probeHandOffHeldForRoom])
}
