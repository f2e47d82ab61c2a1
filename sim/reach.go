package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/chronos-timer/chronos/node"
)

// genReach adds what makes a plan reach the node's rarer paths (its
// coverage probes, node/probe.go): updates without a replication factor,
// updates and deletes by a bare ID, resyncs of many pages, overload and
// scales that return to an earlier membership or run
// during long faults, restarts in the middle of a resync, timers with
// more replicas than members created during a scale, and busy timers on
// a slow endpoint through a scale's return (genBusyThrough). It draws from work
// after every other draw of the plan, so that it moves no earlier choice:
// a seed's plan is the one it had before, with these additions.
func genReach(p *Plan, work Source, safety time.Duration) {
	for i := range p.Steps {
		s := &p.Steps[i]
		if s.Op == OpUpdate && work.IntN("update-no-rf", 3) == 0 {
			// The client leaves the factor out: the node infers it.
			s.RF = 0
		}
		if (s.Op == OpUpdate || s.Op == OpDelete) && work.IntN("bare", 6) == 0 {
			s.Bare = true
		}
	}
	if work.IntN("resync-page", 3) == 0 {
		p.Node.ResyncPage = 1 + work.IntN("resync-page-size", 4)
	}
	if p.enabled(mixLoad) && work.IntN("overload", 3) == 0 {
		genOverload(p, work)
	}
	var returnAt time.Duration
	if p.enabled(mixScale) {
		returnAt = genScaleReach(p, work, safety)
	}
	genLimits(p, work)
	genRenumber(p, work)
	if returnAt > 0 {
		// Drawn last, so that it moves no earlier choice.
		genBusyThrough(p, work, returnAt)
	}
}

// genRenumber gives, in one plan in four that scales up and never down
// (a plan that scales down keeps the placements it had), the first
// machine to join an address (10.0.0.0:<port>) whose derived instance
// number clashes with a member's and that sorts before every member's:
// while it joins it takes the next free number, and once it is a steady
// member it takes the clashing number and the member moves up
// (node.InstanceIDs), so both nodes are renumbered by a reload.
func genRenumber(p *Plan, work Source) {
	var join int
	for _, s := range p.Steps {
		switch {
		case s.Op == OpScaleDown:
			return // a plan that also scales down keeps its placements
		case s.Op == OpScaleUp && join == 0 && len(s.Side) > 0:
			fmt.Sscanf(s.Side[0], "n%d", &join)
		}
	}
	if join == 0 || work.IntN("renumber", 4) != 0 {
		return
	}
	members := p.InitialMembers()
	target := p.nodeAddr(members[work.IntN("renumber-member", len(members))])
	want := instanceOf(target)
	for port := 7000; port < 17000; port++ {
		if a := fmt.Sprintf("10.0.0.0:%d", port); instanceOf(a) == want {
			if p.Addrs == nil {
				p.Addrs = map[int]string{}
			}
			p.Addrs[join] = a
			return
		}
	}
}

// instanceOf is the instance number addr derives alone: the low bits of
// its server hash.
func instanceOf(addr string) int {
	ids, err := node.InstanceIDs(node.Membership{Nodes: []string{addr}})
	if err != nil {
		panic(err)
	}
	return ids[addr]
}

// genLimits gives a load plan's nodes, one in three of those that do not
// scale (a scale plan's resync is left as it was), a limit of 1 to 8
// requests in flight, so that its burst meets it and client writes are
// shed (503); and one plan in ten a limit on the records a node holds of
// about a quarter of the timers the plan creates, so that nodes fill:
// client writes to a full node are shed, and a replica at its limit
// refuses a copy (sim/refusal.go records that refusal as a lost copy).
func genLimits(p *Plan, work Source) {
	if p.enabled(mixLoad) && !p.enabled(mixScale) && work.IntN("in-flight", 3) == 0 {
		p.Node.MaxInFlight = 1 + work.IntN("in-flight-max", 8)
	}
	if work.IntN("max-timers", 10) == 0 {
		creates := 0
		for _, s := range p.Steps {
			switch s.Op {
			case OpCreate:
				creates++
			case OpBurst:
				creates += s.Count
			}
		}
		p.Node.MaxTimers = 1 + work.IntN("max-timers-n", max(1, creates/4))
	}
}

// genOverload makes a load plan's nodes slower than its burst needs, so
// that they shed: a send that would wait longer than the backup skew is
// given up, and the history records it, and every send that waited long,
// as an Overload fault on its timer.
func genOverload(p *Plan, work Source) {
	p.Net.NodeWorkers, p.Net.NodeSendTime = 1, time.Duration(2+work.IntN("overload-send", 8))*time.Millisecond
}

// genScaleReach adds to a scale plan, each by a draw of its own: a scale
// back to the membership before the last one (A,B,C -> A,B,C,D -> A,B,C,
// or A,B,C -> A,B -> A,B,C), with faults around it; a member down longer
// than a resync asks a peer for; a restart of a staying member while its
// resync runs; and a timer created during the scale with more replicas
// than members. A long outage pushes the liveness phase past its end. It
// returns when the scale back starts, 0 for none.
func genScaleReach(p *Plan, work Source, safety time.Duration) (returnAt time.Duration) {
	var last *Step
	for i := range p.Steps {
		if p.Steps[i].Op == OpScaleUp || p.Steps[i].Op == OpScaleDown {
			last = &p.Steps[i]
		}
	}
	if last == nil {
		return 0
	}
	scale := *last
	members, _ := p.scaledMembers()
	if work.IntN("scale-return", 2) == 0 {
		back := Step{At: scale.At + time.Duration(20+work.IntN("scale-return-after", 40))*time.Second, Side: scale.Side}
		back.Op = OpScaleDown
		if scale.Op == OpScaleDown {
			back.Op = OpScaleUp
		}
		p.Steps = append(p.Steps, back)
		genScaleFaults(p, work, back.At, safety)
		p.End = max(p.End, back.At+genScaleRunway)
		returnAt = back.At
	}
	staying := slices.DeleteFunc(slices.Clone(members), func(m int) bool { return slices.Contains(scale.Side, fmt.Sprintf("n%d", m)) })
	if len(staying) > 1 && work.IntN("scale-restart", 3) == 0 {
		// A member crashes while its resync runs, and restarts while
		// the others' run: its start-up resync repopulates mid-scale.
		n := fmt.Sprintf("n%d", staying[work.IntN("scale-restart-node", len(staying))])
		at := scale.At + time.Duration(work.IntN("scale-restart-at", 40))*100*time.Millisecond
		p.Steps = append(p.Steps, Step{At: at, Op: OpCrash, Side: []string{n}},
			Step{At: at + time.Duration(1+work.IntN("scale-restart-for", 5))*time.Second, Op: OpRestart, Side: []string{n}})
	}
	if len(staying) > 1 && work.IntN("scale-outage", 4) == 0 {
		// A member down for longer than a resync asks it for pages
		// (about 131 s): the others give it up, the operator runs
		// their resyncs again. The liveness phase waits for it.
		n := fmt.Sprintf("n%d", staying[work.IntN("scale-outage-node", len(staying))])
		back := scale.At + genScaleOutage
		p.Steps = append(p.Steps, Step{At: scale.At, Op: OpCrash, Side: []string{n}}, Step{At: back, Op: OpRestart, Side: []string{n}})
		p.LivenessFrom = max(p.LivenessFrom, back+genSettle)
		p.End = max(p.End, p.LivenessFrom+genScaleRunway)
	}
	if work.IntN("scale-rf-over", 2) == 0 {
		s := genTimerStep(p, work, OpCreate, "s1", scale.At+time.Duration(work.IntN("scale-rf-at", 30))*100*time.Millisecond)
		s.RF, s.ID = min(p.Nodes+1, genMaxRF), 0
		p.Steps = append(p.Steps, s)
		p.End = max(p.End, s.At+s.span()+genSettle)
	}
	return returnAt
}

// genScaleOutage is how long genScaleReach keeps a member down: longer
// than a resync asks one peer for pages (8 attempts of up to 5 s, 91 s of
// waits between them).
const genScaleOutage = 150 * time.Second

// genScaleFaults adds up to genScaleFaultsMax faults of the enabled node
// kinds in the 15 s after at, each lasting up to 20 s.
func genScaleFaults(p *Plan, src Source, at, safety time.Duration) {
	var kinds []string
	for _, k := range []string{"crash", "pause", "partition", "one-way"} {
		if p.enabled(k) {
			kinds = append(kinds, k)
		}
	}
	for range src.IntN("scale-faults", genScaleFaultsMax+1) {
		if len(kinds) == 0 {
			break
		}
		fat := at + time.Duration(src.IntN("scale-fault-at", 150))*100*time.Millisecond
		dur := time.Duration(1+src.IntN("scale-fault-for", 20)) * time.Second
		if fat < safety {
			genFault(p, src, kinds[src.IntN("scale-fault-kind", len(kinds))], fat, dur, safety)
		}
	}
}

// genReachFaults adds, drawn from faults after every other draw of the
// plan so that it moves no earlier choice, what takes the nodes to
// paths only rare faults reach:
//
//   - to a shared-instance plan, one time in two, a burst of creates
//     through the twins in the first second after boot, before any node
//     can have told them of the clash (node/instance.go): the collision
//     defence is then the only line, and its withdrawals, refused notices
//     and ranks that skip a refusing replica run; one such burst in two
//     meets the twins cut off from each other for 2 to 10 s;
//   - to a plan with clock jumps, one time in four, a clock step of
//     minutes: a node's clock steps more than twice MaxClockLead ahead
//     (a bad time source) and back 5 to 30 s later (its correction),
//     with creates through it in between, so that it holds versions its
//     peers' clocks date too far ahead to take.
func genReachFaults(p *Plan, faults Source, safety time.Duration) {
	if p.enabled(MixSharedInstance) && faults.IntN("twin-early", 2) == 0 {
		at := time.Duration(faults.IntN("twin-early-at", 10)) * 100 * time.Millisecond
		twinBurst(p, faults, "e", at)
		if faults.IntN("twin-cut", 2) == 0 {
			// The twins cut off from each other: each create may be
			// taken by its own proxy alone, and the clash meets its
			// pop notices after the heal.
			p.Steps = append(p.Steps, Step{At: at, Op: OpPartition, Side: []string{"n1"}, Peers: []string{"n2"}},
				Step{At: at + time.Duration(2+faults.IntN("twin-cut-for", 9))*time.Second, Op: OpHeal})
		}
	}
	if p.enabled("clock-jump") && faults.IntN("clock-step", 4) == 0 {
		n := 1 + faults.IntN("clock-step-node", p.Nodes)
		at := time.Duration(faults.IntN("clock-step-at", int(safety/time.Second)/2)) * time.Second
		step := 2*node.DefaultMaxClockLead + time.Duration(10+faults.IntN("clock-step-size", 170))*time.Second
		back := at + time.Duration(5+faults.IntN("clock-step-for", 26))*time.Second
		side := []string{fmt.Sprintf("n%d", n)}
		p.Steps = append(p.Steps, Step{At: at, Op: OpJump, Side: side, Delta: step}, Step{At: back, Op: OpJump, Side: side, Delta: -step})
		// The correction is a fault of the safety phase: after the
		// liveness phase set every clock right, it would leave this
		// one minutes behind for the rest of the run, a link cut from
		// every peer (scenarios/README.md C54).
		p.LivenessFrom = max(p.LivenessFrom, back+genSettle)
		p.End = max(p.End, p.LivenessFrom+genSettle)
		for i := range 1 + faults.IntN("clock-step-creates", 4) {
			s := genTimerStep(p, faults, OpCreate, fmt.Sprintf("j%d", i+1), at+(back-at)*time.Duration(i+1)/6)
			s.Via, s.ID = n, 0
			p.Steps = append(p.Steps, s)
			p.End = max(p.End, s.At+s.span()+step+genSettle)
		}
	}
}

// genBusyThrough adds, to a plan that scales back to an earlier
// membership, 8 to 20 timers of factor 2 or 3 that pop every second from
// 6 to 15 s before the return until well after it, on a callback
// endpoint of their own that is slow (1 to 1.9 s, within the callback
// timeout) from 1 to 5 s before the return until 3 to 10 s after it: a
// busy service whose endpoint slows while the cluster scales. A replica
// tells the others of a pop only once its callback has answered, so
// while the endpoint is slow they know one pop fewer than the popping
// replica; a hand-off or a page from that replica carries the pop. A
// member that has not reloaded yet keeps such a record as moved away;
// once it reloads and the timer is placed back on it, the first record
// it is offered may be a replica's that knows one pop fewer, and the
// copy brought back keeps the pop it knew (apply/moved-back-keeps-pops,
// node/merge.go movedBack). Since a create is written to the replicas of
// the view before too (node/write.go pastRings), which is the one the
// return goes back to, that member holds a moved-away copy from the
// create, frozen at no pop, and these timers no longer reach the probe:
// genMovedBack does.
func genBusyThrough(p *Plan, work Source, at time.Duration) {
	if p.Callbacks == MaxCallbacks {
		return
	}
	// An endpoint of their own, so that the slow one touches no other
	// timer of the plan: the checker excuses what a fault touched.
	p.Callbacks++
	cb := p.Callbacks
	from := at - time.Duration(6+work.IntN("busy-before", 10))*time.Second
	for i := range 8 + work.IntN("busy", 13) {
		s := genTimerStep(p, work, OpCreate, fmt.Sprintf("m%d", i+1), from+time.Duration(i)*100*time.Millisecond)
		s.Interval, s.RepeatFor, s.RF, s.ID, s.Callback = time.Second, time.Duration(30+work.IntN("busy-for", 31))*time.Second, 2+work.IntN("busy-rf", 2), 0, cb
		p.Steps = append(p.Steps, s)
		p.End = max(p.End, s.At+s.span()+genSettle)
	}
	side := []string{fmt.Sprintf("c%d", cb)}
	p.Steps = append(p.Steps,
		Step{At: at - time.Duration(1+work.IntN("busy-slow-at", 5))*time.Second, Op: OpSlow, Side: side,
			Delta: time.Duration(10+work.IntN("busy-slow", 10)) * 100 * time.Millisecond},
		Step{At: at + time.Duration(3+work.IntN("busy-ok", 8))*time.Second, Op: OpCallbackOK, Side: side})
}
