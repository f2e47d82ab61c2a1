package sim

import (
	"fmt"
	"slices"
	"time"

	"github.com/chronos-timer/chronos/checker"
)

// genMovedBack adds, drawn from work after every other draw of the plan
// so that it moves no earlier choice, to one plan in two that scales up
// and back (A,B,C -> A,B,C,D -> A,B,C, genScaleReach) a timer placed
// back on a member whose moved-away copy is ahead of the record that
// brings it back (apply/moved-back-keeps-pops, node/merge.go movedBack).
//
// For each member P of the cluster before the scale-up and the member B
// after it in the plan's order (the last one's is the first), a timer of
// factor 2 whose ID places it on P then D (the first machine to join)
// while D is a member, and on P then B once it has left, popping every
// second from 10 s before the scale back, created through D: a node
// started since the view before it has no view before to write to, so B
// holds nothing of it. Its callback endpoint, its own, is slow (1 to
// 1.9 s) from 3 s before the return until 10 s after it: a replica tells
// the others of a pop once the callback answered, so P's record is a
// pop or two ahead of D's. When P reloads before B, its resync pushes
// the timer to B, which, not reloaded yet, keeps it as moved away at
// P's pop and passes it on to D (node/apply.go forward): that one
// request is lost (a connection reset). And B's link to P is clogged for
// 6 s, so that the page B asks P for once it reloads waits while D's
// page, offering D's copy a pop behind, arrives. In a cycle of the
// members some P reloads before its B, whatever the order; D must
// reload before that B too. Before this sequence, the busy timers of
// genBusyThrough were created through any node, whose view before (the
// one the scale back returns to) gave B a copy at the create, and no run
// of seeds 1..1000 reached the probe.
func genMovedBack(p *Plan, work Source) {
	up, back := scaleReturn(p)
	if up == nil || p.Callbacks == MaxCallbacks || work.IntN("moved-back", 2) != 0 {
		return
	}
	staying := p.InitialMembers()
	var joined []int
	for _, n := range up.Side {
		var k int
		fmt.Sscanf(n, "n%d", &k)
		joined = append(joined, k)
	}
	full := slices.Concat(staying, joined)
	d := joined[0]
	from := back.At - 10*time.Second
	for _, m := range full {
		if !steadyThrough(p, m, from, back.At+10*time.Second) {
			return
		}
	}
	p.Callbacks++
	cb := p.Callbacks
	client := 1 + work.IntN("moved-back-client", p.Clients)
	base := uint64(work.IntN("moved-back-ids", 1<<31))
	side := []string{fmt.Sprintf("c%d", cb)}
	p.Steps = append(p.Steps,
		Step{At: back.At - 3*time.Second, Op: OpSlow, Side: side, Delta: time.Duration(10+work.IntN("moved-back-slow", 10)) * 100 * time.Millisecond},
		Step{At: back.At + 10*time.Second, Op: OpCallbackOK, Side: side})
	for i, pr := range staying {
		b := staying[(i+1)%len(staying)]
		id, ok := idPlaced(p, full, []int{pr, d}, staying, []int{pr, b}, base+uint64(i)<<40)
		if !ok {
			continue
		}
		label := fmt.Sprintf("v%d", i+1)
		s := Step{At: from + time.Duration(i)*100*time.Millisecond, Op: OpCreate, Timer: label, Client: client, Via: d,
			Callback: cb, RF: 2, Interval: time.Second, RepeatFor: 40 * time.Second, ID: id}
		bn, pn, dn := fmt.Sprintf("n%d", b), fmt.Sprintf("n%d", pr), fmt.Sprintf("n%d", d)
		p.Steps = append(p.Steps, s,
			Step{At: back.At, Op: OpLose, Side: []string{bn}, Peers: []string{dn}, OneWay: true, Timer: label, For: 8 * time.Second},
			Step{At: back.At, Op: OpClog, Side: []string{bn}, Peers: []string{pn}, OneWay: true, For: 6 * time.Second})
		p.End = max(p.End, s.At+s.span()+genSettle)
	}
}

// scaleReturn finds a plan's scale-up and the later scale-down of the
// same machines (A,B,C -> A,B,C,D -> A,B,C), nil when it has none.
func scaleReturn(p *Plan) (up, back *Step) {
	if !p.enabled(mixScale) {
		return nil, nil
	}
	for i := range p.Steps {
		if s := &p.Steps[i]; s.Op == OpScaleUp && up == nil {
			up = s
		}
	}
	if up == nil {
		return nil, nil
	}
	for i := range p.Steps {
		if s := &p.Steps[i]; s.Op == OpScaleDown && s.At > up.At && slices.Equal(s.Side, up.Side) {
			return up, s
		}
	}
	return nil, nil
}

// idPlaced searches from base for a client-chosen ID (top bit set) that
// a timer of factor 2 places on the nodes want among members (in that
// order) and on then among after.
func idPlaced(p *Plan, members, want, after, then []int, base uint64) (uint64, bool) {
	addrs := func(ns []int) []string {
		out := make([]string, len(ns))
		for i, n := range ns {
			out[i] = p.nodeAddr(n)
		}
		return out
	}
	m, w, a, t := addrs(members), addrs(want), addrs(after), addrs(then)
	for k := base; k < base+1<<20; k++ {
		id := searchedID(k)
		if slices.Equal(checker.Replicas(m, id, 2), w) && slices.Equal(checker.Replicas(a, id, 2), t) {
			return id, true
		}
	}
	return 0, false
}
