package sim

import (
	"fmt"
	"time"
)

// genHeldAnswer adds, to one plan in four of one site that does not
// scale, a busy timer whose primary learns from an answer held past its
// next pop which pops another replica made (node/pop.go learnPopped, the
// probe notice/popped-learnt-behind). A timer of factor 3 with a
// client-chosen ID, popping every second on an endpoint of its own;
// times below are from the create, pop k due about k s after it:
//
//   - the endpoint refuses from 2.7 s (pop 3), answers in 0.8 s from
//     3.5 s (pop 4), refuses again from 4.9 s (pop 5) and answers in
//     0.8 s from 5.5 s until 12 s;
//   - the second replica's messages to the primary are clogged from 4.6
//     s to 5.15 s.
//
// The primary's notice of pop 4, sent when its callback answered (about
// 4.8 s), tells of pop 3 as missed; the second replica's answer (which
// pops it made, X-Chronos-Popped) waits in the clog until after the
// primary's refused pop 5, within the notice's timeout. The answer tells
// of pops up to 4 only, so pop 5 stays missed on the primary, whose next
// notice (pop 6, about 6.8 s) has the second replica make it at its rank
// (7 s). Taking a pop the answer does not speak of as made (mutation
// popped-answer-one-ahead) tells the others that pop 5 was made, and no
// replica makes it (G2). Drawn from faults after every other draw of the
// plan (Generate calls it last), so that it moves no earlier choice.
func genHeldAnswer(p *Plan, faults Source, safety time.Duration) {
	if p.enabled(mixScale) || p.enabled(mixSites) || len(p.InitialMembers()) < 3 || p.Callbacks == MaxCallbacks {
		return
	}
	if faults.IntN("held-answer", 4) != 0 {
		return
	}
	const span = 12 * time.Second
	room := safety - span - genSettle
	if room < 0 {
		return
	}
	at := time.Duration(faults.IntN("held-answer-at", int(room/time.Second)+1)) * time.Second
	p.Callbacks++
	cb := p.Callbacks
	c := genTimerStep(p, faults, OpCreate, "a1", at)
	c.ID = 1<<63 | uint64(faults.IntN("held-answer-id-hi", 1<<31))<<31 | uint64(faults.IntN("held-answer-id-lo", 1<<31))
	c.Interval, c.RepeatFor, c.RF, c.Tag, c.Callback, c.Bare = time.Second, span, 3, "", cb, false
	primary, _ := staleVictim(p, c, 0)
	second, _ := staleVictim(p, c, 1)
	fmt.Sscanf(nodeName(p, primary), "n%d", &c.Via)
	side := []string{fmt.Sprintf("c%d", cb)}
	ms := func(n int) time.Duration { return at + time.Duration(n)*time.Millisecond }
	p.Steps = append(p.Steps, c,
		Step{At: ms(2700), Op: OpFail, Side: side, Status: 500},
		Step{At: ms(3500), Op: OpSlow, Side: side, Delta: 800 * time.Millisecond},
		Step{At: ms(4600), Op: OpClog, Side: []string{nodeName(p, second)}, Peers: []string{nodeName(p, primary)}, OneWay: true,
			For: 550 * time.Millisecond},
		Step{At: ms(4900), Op: OpFail, Side: side, Status: 500},
		Step{At: ms(5500), Op: OpSlow, Side: side, Delta: 800 * time.Millisecond},
		Step{At: at + span, Op: OpCallbackOK, Side: side})
	p.End = max(p.End, c.At+c.span()+genSettle)
}
