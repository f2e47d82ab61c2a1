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

// genUnpopped adds genStaleUnpopped's sequence to one plan in three of
// one site that does not scale, and genStaleSpread's to one such plan of
// five nodes in two, drawn from faults after every other draw of the
// plan (Generate calls it last), so that it moves no earlier choice.
// Each cut ends at the liveness phase's heal, so that no other fault of
// the plan outlasts it and the checker judges what follows strictly.
func genUnpopped(p *Plan, faults Source, safety time.Duration) {
	if p.enabled(mixScale) || p.enabled(mixSites) {
		return
	}
	if faults.IntN("stale-unpopped", 3) == 0 {
		genStaleUnpopped(p, faults, safety)
	}
	if len(p.InitialMembers()) >= 5 && faults.IntN("stale-spread", 2) == 0 {
		genStaleSpread(p, faults, safety)
	}
}

// genStaleSpread is genUnpopped's second sequence: two replicas left
// holding a definition a client update replaced, where the first one's
// repairing pop must mend the other too. A timer of factor 5 with a
// client-chosen ID, popping every second; its primary and first backup
// cut off together from every other node and from the writing client 2
// to 10 s after the create; an update through another node while they
// are (the other three replicas are its quorum), with an interval of 60
// to 120 s; and the heal, the liveness phase's, 15 to 35 s later, 100 to
// 400 ms before one of the replaced definition's pops. The primary makes that pop, its notice
// reaches the backup and the three that took the update, and the 409
// that answers it brings the primary the newer record, which it sends on
// to the replicas it told of the stale pop (node/pop.go spreadRepair):
// the backup holds it about a network delay later, before the next
// pop's backup turn (docs/design.md 3, G5's spread of a repair). Without
// it (mutation notice-repair-not-spread) the backup pops the replaced
// definition two seconds after the next due.
func genStaleSpread(p *Plan, src Source, safety time.Duration) {
	cutFor := time.Duration(15+src.IntN("spread-cut-for", 21)) * time.Second
	at := safety - cutFor - time.Duration(2+src.IntN("spread-cut-after", 9))*time.Second + time.Duration(1+src.IntN("spread-heal-before", 4))*100*time.Millisecond
	if at < 0 {
		return
	}
	c := genTimerStep(p, src, OpCreate, "r3", at)
	c.ID = 1<<63 | uint64(src.IntN("spread-id-hi", 1<<31))<<31 | uint64(src.IntN("spread-id-lo", 1<<31))
	c.Interval, c.RepeatFor, c.RF, c.Tag = time.Second, 90*time.Second, 5, ""
	primary, _ := staleVictim(p, c, 0)
	backup, others := staleVictim(p, c, 1)
	others = slices.DeleteFunc(others, func(n string) bool { return n == nodeName(p, primary) })
	cut := safety - cutFor
	u := genTimerStep(p, src, OpUpdate, "r3", cut+time.Duration(5+src.IntN("spread-update-at", 10))*100*time.Millisecond)
	u.Interval = time.Duration(60+30*src.IntN("spread-update-interval", 3)) * time.Second
	u.RepeatFor, u.RF, u.Tag, u.Bare = 2*u.Interval, c.RF, "", false
	fmt.Sscanf(others[src.IntN("spread-via", len(others))], "n%d", &u.Via)
	staleCut(p, []string{primary, backup}, others, u.Client, cut, safety)
	p.Steps = append(p.Steps, c, u)
	p.End = max(p.End, c.At+c.span()+genSettle, u.At+u.span()+genSettle)
}

// genStaleUnpopped is genUnpopped's sequence: a replica left holding
// a definition a client update replaced where only a repair round can
// mend it in time, as no pop of either definition falls due for long
// after the heal. A timer of factor 3 with a client-chosen ID and an
// interval of 90 s; one of its replicas cut off from every other node
// and from the writing client 2 to 10 s after the create; an update
// through another node 0.5 to 1.4 s into the cut, to an interval of 120
// to 180 s, so that the newer definition pops only long after the old
// one's first due; and the heal, the liveness phase's, 48 to 55 s before
// that due. The cut
// replica pops nothing while cut off (the first due is after the heal),
// and no notice of the newer definition comes before its own first pop,
// so a repair round of a replica that took the update (every
// RepairInterval, after a heal that ended the rounds it was retrying) is
// what must bring it the update before the old definition's due, as
// checker.RepairRound bounds (docs/design.md 3, G5's repair round). A
// digest blind to versions (mutation repair-digest-ignores-version)
// leaves it popping the replaced definition.
func genStaleUnpopped(p *Plan, src Source, safety time.Duration) {
	const interval = 90 * time.Second
	// The old definition's first due comes 48 to 55 s after the heal.
	at := safety + time.Duration(48+src.IntN("unpopped-due-after", 8))*time.Second - interval
	if at < 0 {
		return
	}
	c := genTimerStep(p, src, OpCreate, "r2", at)
	c.ID = 1<<63 | uint64(src.IntN("unpopped-id-hi", 1<<31))<<31 | uint64(src.IntN("unpopped-id-lo", 1<<31))
	c.Interval, c.RepeatFor, c.RF, c.Tag = interval, 4*interval, 3, ""
	victim, others := staleVictim(p, c, src.IntN("unpopped-rank", c.RF))
	cut := c.At + time.Duration(2+src.IntN("unpopped-cut-after", 9))*time.Second
	u := genTimerStep(p, src, OpUpdate, "r2", cut+time.Duration(5+src.IntN("unpopped-update-at", 10))*100*time.Millisecond)
	u.Interval = time.Duration(120+30*src.IntN("unpopped-update-interval", 3)) * time.Second
	u.RepeatFor, u.RF, u.Tag, u.Bare = 2*u.Interval, c.RF, "", false
	fmt.Sscanf(others[src.IntN("unpopped-via", len(others))], "n%d", &u.Via)
	staleCut(p, []string{victim}, others, u.Client, cut, safety)
	p.Steps = append(p.Steps, c, u)
	p.End = max(p.End, c.At+c.span()+genSettle, u.At+u.span()+genSettle)
}

// staleVictim is the replica of rank r of timer step c and the plan's
// names ("n2") of every other member.
func staleVictim(p *Plan, c Step, r int) (victim string, others []string) {
	members := p.InitialMembers()
	addrs := make([]string, len(members))
	for i, m := range members {
		addrs[i] = p.nodeAddr(m)
	}
	victim = checker.Replicas(addrs, c.ID, c.RF)[r]
	for i, a := range addrs {
		if a != victim {
			others = append(others, fmt.Sprintf("n%d", members[i]))
		}
	}
	return victim, others
}

// staleCut cuts the nodes at victims off from the nodes others and
// from client from cut to heal, again at once after each heal of the
// plan's other faults in between (a heal ends every cut); a heal at the
// liveness phase is the phase's own.
func staleCut(p *Plan, victims, others []string, client int, cut, heal time.Duration) {
	// The client is cut off from the victims too: it retries a write
	// that timed out through other nodes, the victims among them.
	var side []string
	for _, v := range victims {
		side = append(side, nodeName(p, v))
	}
	split := Step{At: cut, Op: OpPartition, Side: side,
		Peers: append(slices.Clone(others), fmt.Sprintf("client%d", client))}
	for _, s := range p.Steps {
		if s.Op == OpHeal && s.At >= cut && s.At < heal {
			again := split
			again.At = s.At
			p.Steps = append(p.Steps, again)
		}
	}
	p.Steps = append(p.Steps, split)
	if heal < p.LivenessFrom {
		p.Steps = append(p.Steps, Step{At: heal, Op: OpHeal})
	}
}

// genStalePrimary is genStale's sequence.
func genStalePrimary(p *Plan, src Source, safety time.Duration) {
	c := genTimerStep(p, src, OpCreate, "r1", time.Duration(src.IntN("stale-at", int(safety/time.Second)/3))*time.Second)
	c.ID = 1<<63 | uint64(src.IntN("stale-id-hi", 1<<31))<<31 | uint64(src.IntN("stale-id-lo", 1<<31))
	c.Interval, c.RepeatFor, c.RF, c.Tag = time.Second, 60*time.Second, 3, ""
	primary, others := staleVictim(p, c, 0)
	cut := c.At + time.Duration(2+src.IntN("stale-cut-after", 9))*time.Second
	heal := cut + time.Duration(15+src.IntN("stale-heal-after", 21))*time.Second - time.Duration(1+src.IntN("stale-heal-before", 4))*100*time.Millisecond
	if heal >= safety {
		return
	}
	u := genTimerStep(p, src, OpUpdate, "r1", cut+time.Duration(5+src.IntN("stale-update-at", 10))*100*time.Millisecond)
	u.Interval = time.Duration(10+5*src.IntN("stale-update-interval", 4)) * time.Second
	u.RepeatFor, u.RF, u.Tag, u.Bare = 4*u.Interval, c.RF, "", false
	fmt.Sscanf(others[src.IntN("stale-via", len(others))], "n%d", &u.Via)
	p.Steps = append(p.Steps, c)
	staleCut(p, []string{primary}, others, u.Client, cut, heal)
	// The update after the cut, as the sort is stable.
	p.Steps = append(p.Steps[:len(p.Steps)-1], u, p.Steps[len(p.Steps)-1])
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
