package sim

import (
	"fmt"
	"strconv"
	"time"

	"github.com/chronos-timer/chronos/checker"
	"github.com/chronos-timer/chronos/node"
)

// ageRefusal judges a node's 403 to an internal request that its own
// clock dates outside the age window (node's admit: sent more than
// MaxMessageAge + MaxClockSkew ago, or more than MaxClockSkew ahead).
//
// Clocks apart by more than MaxClockSkew act as a cut link between the
// two nodes (docs/design.md 4.13): a justified refusal is recorded as a
// lost request about the timer it named, so the checker weighs exactly
// what it would have done (a write or notice the receiver missed) and
// nothing else. Justified means by the simulator's own clocks: the two
// were apart by more than MaxClockSkew, or the request really was older
// than MaxMessageAge. A node that refuses a fresh request between
// agreeing clocks breaks the protocol: that is an API violation, never
// an excuse, and nothing of it enters the history.
func (w *world) ageRefusal(m *machine, from string, req node.Request, resp node.Response) {
	if resp.Status != 403 {
		return
	}
	sent, err := strconv.ParseInt(req.Header.Get(node.HeaderSent), 10, 64)
	if err != nil {
		return // not an internal request, or not stamped: another refusal
	}
	sender := w.machineAt(from)
	if sender == nil {
		return
	}
	cfg := node.DefaultConfig()
	apparent := time.Duration(m.clock.Now().UnixMilli()-sent) * time.Millisecond
	if apparent <= cfg.MaxMessageAge+cfg.MaxClockSkew && -apparent <= cfg.MaxClockSkew {
		return // within the window: refused for another reason
	}
	apart := m.clock.Skew() - sender.clock.Skew()
	// The sender's clock may have moved since it sent: it had one of the
	// offsets it has had, and the extremes are the ones that explain the
	// most (the clocks furthest apart, the longest transit).
	lo, hi := sender.clock.SkewRange()
	justified := false
	for _, off := range []time.Duration{lo, hi} {
		apartThen := m.clock.Skew() - off
		transit := apparent - apartThen // the request's age on true time
		justified = justified || apartThen.Abs() > cfg.MaxClockSkew-refusalSlack || transit > cfg.MaxMessageAge-refusalSlack
	}
	if justified {
		// The simulator's own clocks explain the refusal: a lost
		// message the checker may weigh. An unjustified one excuses
		// nothing; it is the node's fault.
		detail := fmt.Sprintf("refused as dated %v ago, clocks %v apart", apparent, apart)
		w.hist.Faults = append(w.hist.Faults, checker.Fault{At: w.loop.Now(), Kind: checker.Lost,
			Nodes: []string{from}, Peers: []string{m.addr}, Timer: timerOfURL(req.URL), Detail: detail})
		return
	}
	msg := fmt.Sprintf("%s refused %s %s from %s as out of its age window (dated %v ago), but the clocks were within %v of each other and it was fresh",
		m.addr, req.Method, req.URL, from, apparent, cfg.MaxClockSkew)
	w.apiErrs = append(w.apiErrs, checker.Violation{Guarantee: "API", At: w.loop.Now(), Timer: timerOfURL(req.URL), Message: msg})
	w.tr.note("API violation: %s", msg)
}

// refusalSlack is how far inside the window a refused request must have
// been for the refusal to be a violation.
const refusalSlack = 100 * time.Millisecond

// machineAt is the machine whose node serves at addr, or nil (a client).
func (w *world) machineAt(addr string) *machine {
	for _, m := range w.machines {
		if m.addr == addr {
			return m
		}
	}
	return nil
}
