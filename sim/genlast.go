package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/chronos-timer/chronos/checker"
)

// genLastHolder adds, drawn from work after every other draw of the plan
// so that it moves no earlier choice, to one overloaded plan in two
// (genOverload: one sender a node, each send taking milliseconds) a
// batch of timers of factor 1 held by one node, all due together 5 to
// 15 s into the liveness phase, and more of them than that node can send
// within the backup skew: 2.5 s of its sends and 5 to 50 more. A client
// creates them through that node, with IDs it chose, in ten instants a
// second apart (intervals are whole seconds), 10 to 20 s before they
// fall due, so that the creates do not meet the overload. Their only
// replica is their last: nobody pops after it, so its pop waits to be
// sent however long the queue (node/pop.go handOnAfter). A node that
// shed it once it waited longer than the skew (mutation
// last-replica-hands-on) loses the pops at the queue's tail, which G7
// sees: in the liveness phase nothing excuses a pop the one holder gave
// up. Before it, a last holder's pop waited that long only when a
// node's own share of a burst filled its queue, one seed in a thousand
// (seed 646), and that seed lost it to a later change of its plan. The
// holder is one no step crashes, pauses or faults the disk of from a
// minute before the creates until after the pops, and the plan has no
// node limit that would refuse the creates.
func genLastHolder(p *Plan, work Source) {
	if p.Net.NodeWorkers != 1 || p.Net.NodeSendTime < time.Millisecond || p.Callbacks == MaxCallbacks ||
		work.IntN("last-holder", 2) != 0 {
		return
	}
	const spread = 10 * time.Second
	due := p.LivenessFrom + time.Duration(5+work.IntN("last-holder-due", 11))*time.Second
	from := due - spread - time.Duration(10+work.IntN("last-holder-at", 11))*time.Second
	count := int(2500*time.Millisecond/p.Net.NodeSendTime) + 5 + work.IntN("last-holder-extra", 46)
	count = min(count, MaxSteps/4)
	members := p.InitialMembers()
	holder := members[work.IntN("last-holder-node", len(members))]
	if !steadyThrough(p, holder, from-time.Minute, due+5*time.Second) || p.Node.MaxInFlight > 0 || p.Node.MaxTimers > 0 {
		// A limit would refuse the creates (503) before the pops.
		return
	}
	ids := idsPlacedOn(p, members, holder, uint64(work.IntN("last-holder-ids", 1<<31)), count)
	client := 1 + work.IntN("last-holder-client", p.Clients)
	// An endpoint of their own, which no callback fault of the plan
	// touches: the checker excuses what a fault touched.
	p.Callbacks++
	cb := p.Callbacks
	for i, id := range ids {
		// Intervals are whole seconds: the creates go in ten instants
		// a second apart, so that every pop falls due together.
		at := from + time.Duration(i%int(spread/time.Second))*time.Second
		p.Steps = append(p.Steps, Step{At: at, Op: OpCreate, Timer: fmt.Sprintf("h%d", i+1), Client: client, Via: holder,
			Callback: cb, RF: 1, Interval: due - at, RepeatFor: due - at, ID: id})
	}
	p.End = max(p.End, due+genSettle)
}

// idsPlacedOn returns count client-chosen IDs (top bit set) that place a
// timer of factor 1 on member holder of the plan's initial members,
// searched from base on.
func idsPlacedOn(p *Plan, members []int, holder int, base uint64, count int) []uint64 {
	addrs := make([]string, len(members))
	for i, m := range members {
		addrs[i] = p.nodeAddr(m)
	}
	want := p.nodeAddr(holder)
	var ids []uint64
	for k := base << 20; len(ids) < count; k++ {
		id := searchedID(k)
		if checker.Replicas(addrs, id, 1)[0] == want {
			ids = append(ids, id)
		}
	}
	return ids
}

// steadyThrough reports whether no step of the plan crashes, pauses or
// faults the disk of node n (1-based) from from to until: a holder that
// is down makes no pops, and whether it would shed them is not asked.
func steadyThrough(p *Plan, n int, from, until time.Duration) bool {
	name := fmt.Sprintf("n%d", n)
	for _, s := range p.Steps {
		switch s.Op {
		case OpCrash, OpPause, OpDiskFull, OpDiskLie, OpDiskCorrupt:
			if s.At >= from && s.At <= until && slices.Contains(s.Side, name) {
				return false
			}
		}
	}
	return true
}

// searchedID is the k-th candidate of a search for a client-chosen ID
// (top bit set, as genWorkload's) with a placement of its own: k
// scattered over the ID space.
func searchedID(k uint64) uint64 { return 1<<63 | k*0x9e3779b97f4a7c15>>1 }
