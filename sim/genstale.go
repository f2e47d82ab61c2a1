package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/chronos-timer/chronos/checker"
)

// genStale adds, drawn from faults after every other draw of the plan so
// that it moves no earlier choice, to one plan with partitions in three
// (one site, no scale) a replica left holding a definition a client
// write replaced, in the one place where only the answer to its own pop
// notice repairs it soon: a timer of factor 3 with a client-chosen ID,
// popping every second, whose primary is cut off from every other node
// and from the writing client (which would retry through it) 2 to 10 s
// after its create; an update through another node, with an interval of
// 10 to 25 s, while it is; and the heal 15 to 35 s later (the other
// replicas' repair rounds back off meanwhile), 100 to 400 ms before one
// of the replaced definition's pops. The primary, which missed the
// update, makes that pop, once (G5's one repairing pop); the 409 that
// answers its notice must make it take the newer definition (read
// repair, node/pop.go noticeAnswered), or it pops the replaced one every
// second until a repair round or a notice of the newer one, 10 s or more
// away, reaches it (mutation no-read-repair). A heal of the plan's other
// faults within the cut cuts the primary off again at once.
func genStale(p *Plan, faults Source, safety time.Duration) {
	if !p.enabled(mixScale) && !p.enabled(mixSites) && faults.IntN("stale-primary", 4) == 0 {
		genStalePrimary(p, faults, safety)
	}
}

// genStalePrimary is genStale's sequence.
func genStalePrimary(p *Plan, src Source, safety time.Duration) {
	members := p.InitialMembers()
	addrs := make([]string, len(members))
	for i, m := range members {
		addrs[i] = p.nodeAddr(m)
	}
	c := genTimerStep(p, src, OpCreate, "r1", time.Duration(src.IntN("stale-at", int(safety/time.Second)/3))*time.Second)
	c.ID = 1<<63 | uint64(src.IntN("stale-id-hi", 1<<31))<<31 | uint64(src.IntN("stale-id-lo", 1<<31))
	c.Interval, c.RepeatFor, c.RF, c.Tag = time.Second, 60*time.Second, 3, ""
	primary := checker.Replicas(addrs, c.ID, c.RF)[0]
	var others []string
	for i, a := range addrs {
		if a != primary {
			others = append(others, fmt.Sprintf("n%d", members[i]))
		}
	}
	cut := c.At + time.Duration(2+src.IntN("stale-cut-after", 9))*time.Second
	heal := cut + time.Duration(15+src.IntN("stale-heal-after", 21))*time.Second - time.Duration(1+src.IntN("stale-heal-before", 4))*100*time.Millisecond
	if heal >= safety {
		return
	}
	u := genTimerStep(p, src, OpUpdate, "r1", cut+time.Duration(5+src.IntN("stale-update-at", 10))*100*time.Millisecond)
	u.Interval = time.Duration(10+5*src.IntN("stale-update-interval", 4)) * time.Second
	u.RepeatFor, u.RF, u.Tag, u.Bare = 4*u.Interval, c.RF, "", false
	var via int
	fmt.Sscanf(others[src.IntN("stale-via", len(others))], "n%d", &via)
	u.Via = via
	// The client is cut off from the primary too: it retries a write
	// that timed out through other nodes, the primary among them.
	split := Step{At: cut, Op: OpPartition, Side: []string{nodeName(p, primary)},
		Peers: append(slices.Clone(others), fmt.Sprintf("client%d", u.Client))}
	for _, s := range p.Steps {
		if s.Op == OpHeal && s.At >= cut && s.At < heal {
			// A heal of the plan's other faults ends every cut: the
			// primary is cut off again at once (after it, as the
			// sort is stable).
			again := split
			again.At = s.At
			p.Steps = append(p.Steps, again)
		}
	}
	p.Steps = append(p.Steps, c, split, u, Step{At: heal, Op: OpHeal})
	p.End = max(p.End, c.At+c.span()+genSettle, u.At+u.span()+genSettle)
}

// nodeName is the plan's name ("n3") of the node at addr.
func nodeName(p *Plan, addr string) string {
	for i := 1; i <= p.Nodes; i++ {
		if p.nodeAddr(i) == addr {
			return fmt.Sprintf("n%d", i)
		}
	}
	panic("sim: no node at " + addr)
}
