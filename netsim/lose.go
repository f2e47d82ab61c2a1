package netsim

import (
	"time"

	"github.com/chronos-timer/chronos/node"
)

// One lost message: a real network loses a single request on a link that
// otherwise works (a connection reset mid-request, a dropped packet whose
// sender gave up before retransmitting), and the request that was lost
// is one the protocol's timing picked, not one a loss rate drew. Random
// loss (Options.LossRate) reaches such a message only by chance; Lose
// picks it, so that a plan can cut one message out of an exchange (the
// retry of a write to one replica, a single callback) while every other
// message on the link arrives.

// MaxLoseRules bounds the rules waiting at once.
const MaxLoseRules = 1024

// loseRule loses one request on a link: the one after skip others that
// match, sent before until.
type loseRule struct {
	l     link
	match func(*node.Request) bool
	skip  int
	until time.Duration
}

// Lose loses one request sent from -> to before until: the first that
// match accepts after skip earlier ones it accepted. Answers are never
// lost by it (the request reached its receiver). The tracer sees the loss
// as "lost", as a random one.
func (n *Network) Lose(from, to string, match func(*node.Request) bool, skip int, until time.Duration) {
	if len(n.lose) >= MaxLoseRules {
		n.lose = n.lose[1:]
	}
	n.lose = append(n.lose, loseRule{l: link{from, to}, match: match, skip: skip, until: until})
}

// loses reports whether a lose rule takes request req, sent on l now, and
// consumes the rule's count. Rules past their time are dropped.
func (n *Network) loses(l link, req *node.Request) bool {
	if len(n.lose) == 0 || req == nil {
		return false
	}
	if h, _, ok := hostOf(req.URL); !ok || h != l.to {
		return false // an answer, or a request relayed through l
	}
	now := n.sched.Now()
	kept := n.lose[:0]
	lost := false
	for _, r := range n.lose {
		switch {
		case r.until < now:
			continue
		case !lost && r.l == l && (r.match == nil || r.match(req)):
			if r.skip == 0 {
				lost = true
				continue
			}
			r.skip--
		}
		kept = append(kept, r)
	}
	clear(n.lose[len(kept):])
	n.lose = kept
	return lost
}
