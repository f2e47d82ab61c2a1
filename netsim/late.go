package netsim

import (
	"time"

	"github.com/chronos-timer/chronos/node"
)

// Late and replayed messages: what a real network does and a clean one
// never shows. A cut that keeps what is sent on it (bytes still buffered
// in a socket when a partition heals) delivers it all at the heal, however
// long after its senders gave up on it; and an attacker who captured
// requests on a link can send them again at any time. Both reach the
// receiver as fresh requests: nothing in the network tells them apart.

// Limits of late and replayed messages.
const (
	// MaxHeld bounds what held links keep until a heal; past it the
	// oldest message is dropped, as a full socket buffer would.
	MaxHeld = 100_000
	// MaxCaptured bounds the requests kept per link for replay.
	MaxCaptured = 64
)

// heldMsg is a message a held link keeps until the heal.
type heldMsg struct {
	from, to string
	req      *node.Request
	at       time.Duration // when it was sent
	deliver  func()
}

// captured is a request seen on a link, for Replay.
type captured struct {
	req     node.Request // as sent, absolute URL
	inbound node.Request // as the receiver sees it
	at      time.Duration
}

// Hold cuts the link from -> to, keeping what is sent on it meanwhile
// instead of dropping it; HealAll delivers it all, in order.
func (n *Network) Hold(from, to string) {
	if n.holding == nil {
		n.holding = map[link]bool{}
	}
	n.holding[link{from, to}] = true
	n.trace("hold", from, to, nil, 0)
}

// keep holds a message sent on a held link, and reports whether it did.
func (n *Network) keep(l link, req *node.Request, deliver func()) bool {
	if !n.holding[l] {
		return false
	}
	if len(n.held) >= MaxHeld {
		n.held = n.held[1:]
	}
	n.held = append(n.held, heldMsg{from: l.from, to: l.to, req: req, at: n.sched.Now(), deliver: deliver})
	n.trace("held", l.from, l.to, req, 0)
	return true
}

// release delivers every held message, each after a fresh network delay,
// and ends every hold. The tracer sees each as "late", with how long
// after it was sent it is released.
func (n *Network) release() {
	now := n.sched.Now()
	for _, m := range n.held {
		n.trace("late", m.from, m.to, m.req, int64(now-m.at))
		l, deliver := link{m.from, m.to}, m.deliver
		n.sched.At(now+n.latency(), func() {
			if n.blocked[l] {
				n.stats.Blocked++
				n.trace("blocked", l.from, l.to, nil, 1)
				return
			}
			deliver()
		})
	}
	n.held = nil
	clear(n.holding)
}

// CaptureFor starts keeping, per link, the last MaxCaptured requests
// sent on it, for Replay (off by default: it costs a copy per send).
func (n *Network) CaptureFor() {
	if n.captured == nil {
		n.captured = map[link][]captured{}
	}
}

// capture keeps req, sent from -> to, for Replay.
func (n *Network) capture(from, to string, req, inbound node.Request) {
	if n.captured == nil {
		return
	}
	l := link{from, to}
	c := n.captured[l]
	if len(c) >= MaxCaptured {
		c = c[1:]
	}
	n.captured[l] = append(c, captured{req: req, inbound: inbound, at: n.sched.Now()})
}

// Replay sends again, now, the requests captured on the link from -> to
// that were sent at or before sentBy (at most MaxCaptured, oldest
// first), as an attacker who captured them would: each crosses the
// network as a fresh request from the same sender, and its answer goes
// nowhere. The tracer sees each as "replayed", with its age. It returns
// how many it sent.
func (n *Network) Replay(from, to string, sentBy time.Duration) int {
	sender := n.hosts[from]
	if sender == nil {
		return 0
	}
	now, sent := n.sched.Now(), 0
	for _, c := range n.captured[link{from, to}] {
		if c.at > sentBy {
			continue
		}
		req, inbound := c.req, c.inbound
		// An incarnation no host ever has: the answer is dropped.
		call := &call{from: sender, inc: 0, to: to, req: &req, sent: now, done: func(node.Response, error) {}}
		n.trace("replayed", from, to, &req, int64(now-c.at))
		n.stats.Sent++
		n.transmit(from, to, &req, func() { n.arrive(call, inbound) })
		sent++
	}
	return sent
}
