package node

import (
	"fmt"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/wire"
)

// BenchmarkResyncJoin measures docs/design.md section 5's resync target: a
// node joining a three-node cluster that holds n timers (replication
// factor 2) is fully rebalanced within 60 s. The nodes run in one process
// over the test harness's network, which costs nothing, so the figure is
// the nodes' own work: serving pages, taking timers, passing them on and
// tombstoning old copies. It reports:
//
//   - resync-s: the time from the reload to every resync's end;
//
//   - taken/s: timers the joining node took per second of that;
//
//   - vs-apply: that rate over the rate at which the same node takes the
//     same records straight into its store (apply) in the same run, the
//     baseline of a resync that did nothing but store;
//
//   - the messages the join sent, counted as the harness delivers them
//     (joinMessages): pages, PUTs to the joining node and to the old
//     ones, references; and of the PUTs, the ones each kind of send
//     made, from the nodes' counters: a page's pass-ons (passon) and
//     rebalancing tombstones (tombstone), and a hand-off's pushes
//     (handoff, one a record and target).
//
//     go test -run '^$' -bench ResyncJoin -benchtime 1x ./node
func BenchmarkResyncJoin(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 300_000, 1_000_000} {
		b.Run(fmt.Sprintf("timers=%d", n), func(b *testing.B) {
			if testing.Short() && n > 100_000 {
				b.Skip("-short")
			}
			var took time.Duration
			var taken uint64
			var applyRate float64
			var msgs joinMessages
			for range b.N {
				b.StopTimer()
				c := newClusterWith(b, nil, nodeA, nodeB, nodeC)
				// A round a page of each peer; a hand-off's messages in one.
				c.rounds, c.pending = max(n/10, settleRounds), max(n, settlePending)
				fillCluster(c, n, 2)
				grown := Membership{Nodes: []string{nodeA, nodeB, nodeC}, Joining: []string{nodeD}}
				c.join(nodeD, grown)
				c.settle()
				before := msgs.watch(c, nodeD)
				b.StartTimer()
				start := time.Now()
				c.reload(grown)
				took += time.Since(start)
				b.StopTimer()
				c.watch = nil
				msgs.sends(c, before)
				taken += c.nodes[nodeD].ResyncStatus().Taken
				c.requirePlacedSample(n, 2, []string{nodeA, nodeB, nodeC, nodeD})
				applyRate = applyBaseline(c.nodes[nodeD])
			}
			perSec := float64(taken) / took.Seconds()
			b.ReportMetric(took.Seconds()/float64(b.N), "resync-s")
			b.ReportMetric(perSec, "taken/s")
			b.ReportMetric(perSec/applyRate, "vs-apply")
			msgs.report(b)
		})
	}
}

// fillCluster gives c's nodes n timers of replication factor rf, placed on
// their replicas as creates would place them, due from ten minutes on
// over the following fifty: none pops while the resync runs (the harness
// keeps unanswered callbacks, which would cost it more with every round),
// and all sit in the store's wheel.
func fillCluster(c *cluster, n, rf int) {
	var any *Node
	for _, nd := range c.nodes {
		any = nd
		break
	}
	now := any.nowMs()
	for i := range n {
		id := uint64(i+1) << 12
		replicas := any.ring.Replicas(id, rf)
		spec := wire.Timer{Interval: time.Hour, RepeatFor: time.Hour, URI: "http://client.example/cb", Opaque: "x", ReplicationFactor: rf}
		for _, a := range replicas {
			nd := c.nodes[a]
			start := now + 10*60_000 + int64(i%(50*60_000)) - spec.Interval.Milliseconds()
			nd.apply(newTimer(id, id, spec, start, 0, nd.placement(replicas, nil), nd.ring.ViewID(), nd.shared))
		}
	}
}

// requirePlacedSample checks a sample of the n timers fillCluster made for
// placement on members.
func (c *cluster) requirePlacedSample(n, rf int, members []string) {
	c.t.Helper()
	var ids []uint64
	for i := 0; i < n; i += max(n/1000, 1) {
		ids = append(ids, uint64(i+1)<<12)
	}
	c.requirePlaced(ids, members, rf)
}

// applyBaseline is how many records per second n takes straight into its
// store: copies of the ones it holds, under fresh IDs, in a node of its
// own so that its store is not disturbed.
func applyBaseline(n *Node) float64 {
	var records []*Timer
	n.Held(func(t *Timer) bool {
		if t.State == Live {
			c := *t
			c.prev, c.next, c.slot = nil, nil, 0
			records = append(records, &c)
		}
		return true
	})
	cfg := n.cfg
	fresh, err := New(cfg)
	if err != nil {
		panic(err)
	}
	start := time.Now()
	for _, t := range records {
		fresh.apply(t)
	}
	return float64(len(records)) / time.Since(start).Seconds()
}

// joinMessages counts the messages of a join, summed over a benchmark's
// runs: by what the harness delivered (page, put-new to the joining node,
// put-old to the others, refs) and, of the PUTs, by the send that made
// them, read from the nodes' counters (passon, tombstone, handoff).
type joinMessages struct {
	page, putNew, putOld, refs, other    uint64
	passOn, tombstone, handOff, pushSent uint64
}

// watch counts the messages c delivers from now on, joining being the
// node that joins, and returns the nodes' counters before them.
func (m *joinMessages) watch(c *cluster, joining string) map[string]joinCounters {
	c.watch = func(s *sent, to string, _ int, _ bool) {
		switch {
		case to == "":
		case s.req.Method == "GET":
			m.page++
		case s.req.Method == "DELETE":
			m.refs++
		case s.req.Method != "PUT":
			m.other++
		case to == joining:
			m.putNew++
		default:
			m.putOld++
		}
	}
	before := map[string]joinCounters{}
	for a, n := range c.nodes {
		before[a] = countersOf(n)
	}
	return before
}

// joinCounters are the counters of one node that say which send made a
// PUT.
// A resync's counters start again with each run: runs tells whether
// they are of the same run.
type joinCounters struct{ runs, passOn, tombstone, handOff, sent uint64 }

func countersOf(n *Node) joinCounters {
	r, s := n.ResyncStatus(), n.Stats()
	return joinCounters{r.Runs, r.Replicated, r.Tombstoned, s.RepairHandoffs, s.ReplicationsSent}
}

// sends adds what each node's counters grew by since before.
func (m *joinMessages) sends(c *cluster, before map[string]joinCounters) {
	for a, n := range c.nodes {
		now, was := countersOf(n), before[a]
		if now.runs > was.runs+1 {
			panic("joinMessages: a node resynced twice in one join")
		}
		if now.runs != was.runs {
			was.passOn, was.tombstone = 0, 0
		}
		m.passOn += now.passOn - was.passOn
		m.tombstone += now.tombstone - was.tombstone
		m.handOff += now.handOff - was.handOff
		m.pushSent += now.sent - was.sent
	}
}

// report reports the counts per run.
func (m *joinMessages) report(b *testing.B) {
	per := func(v uint64) float64 { return float64(v) / float64(b.N) }
	b.ReportMetric(per(m.page), "pages")
	b.ReportMetric(per(m.putNew), "put-new")
	b.ReportMetric(per(m.putOld), "put-old")
	b.ReportMetric(per(m.refs), "refs")
	b.ReportMetric(per(m.passOn), "passon")
	b.ReportMetric(per(m.tombstone), "tombstone")
	b.ReportMetric(per(m.handOff), "handoff-records")
	b.ReportMetric(per(m.pushSent), "puts-sent")
}
