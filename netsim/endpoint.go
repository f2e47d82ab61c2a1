package netsim

import (
	"fmt"
	"time"

	"github.com/chronos-timer/chronos/node"
)

// Endpoint is one incarnation of a host's connection to the network. It is
// the node.Network the simulator hands to a node.
type Endpoint struct {
	net  *Network
	host *host
	inc  uint64
}

var _ node.Network = (*Endpoint)(nil)

// Host returns the endpoint's host name.
func (e *Endpoint) Host() string { return e.host.name }

// Incarnation returns which incarnation of its host the endpoint belongs to.
func (e *Endpoint) Incarnation() uint64 { return e.inc }

// Alive reports whether the endpoint's incarnation is the host's current,
// running one.
func (e *Endpoint) Alive() bool { return e.host.inc == e.inc && e.host.state != Down }

// call is one request in flight and the promise to complete it once.
type call struct {
	from     *host
	inc      uint64
	to       string
	req      *node.Request // as sent, for tracing what a fault hit
	sent     time.Duration // when it left its sender
	done     func(node.Response, error)
	finished bool
}

// Send sends req to the host named in its absolute URL and calls done once,
// on this host's process, with the response or an error no later than
// timeout after the request leaves the sender: with the load model on, it
// first waits for the sender's modelled CPU to write it, and is shed
// (ErrShed) if that wait would be longer than req.MaxWait, as the
// production client does. A dead incarnation cannot send: that is a
// simulator bug.
func (e *Endpoint) Send(req node.Request, timeout time.Duration, done func(node.Response, error)) {
	if !e.Alive() {
		panic(fmt.Sprintf("netsim: send from dead incarnation %d of %s", e.inc, e.host.name))
	}
	n := e.net
	n.stats.Sent++
	to, target, ok := hostOf(req.URL)
	c := &call{from: e.host, inc: e.inc, to: to, done: done}
	if !ok {
		n.sched.At(n.sched.Now(), func() { n.finish(c, node.Response{}, ErrBadURL) })
		return
	}
	n.trace("send", e.host.name, to, &req, int64(timeout))
	leave, modelled, shed := n.sendCPU(e.host, req.MaxWait)
	if shed {
		n.trace("shed", e.host.name, to, &req, 0)
		n.sched.At(n.sched.Now(), func() { n.finish(c, node.Response{}, ErrShed) })
		return
	}
	if !modelled {
		leave = n.sched.Now()
	} else if wait := leave - n.opts.NodeSendTime - n.sched.Now(); wait > 0 {
		n.trace("queued", e.host.name, to, &req, int64(wait))
	}
	n.sched.At(leave+timeout, func() {
		if !c.finished {
			n.stats.TimedOut++
			n.trace("timeout", e.host.name, to, nil, 0)
		}
		n.finish(c, node.Response{}, ErrTimeout)
	})
	inbound := req
	inbound.URL = target
	copies := 1
	if n.noisy(e.host.name, to) && n.opts.DuplicateRate > 0 && n.rng.Float64() < n.opts.DuplicateRate {
		n.stats.Duplicated++
		copies = 2
	}
	if copies == 2 {
		n.trace("duplicated", e.host.name, to, &req, 0)
	}
	c.req, c.sent = &req, leave
	n.capture(e.host.name, to, req, inbound)
	send := func() {
		for range copies {
			n.transmit(e.host.name, to, c.req, func() { n.arrive(c, inbound) })
		}
	}
	if modelled {
		// The request leaves once the sender's CPU has written it.
		inc, from := e.inc, e.host.name
		n.sched.At(leave, func() { n.Run(from, inc, send) })
		return
	}
	send()
}

// finish completes c once, on its sender's process.
func (n *Network) finish(c *call, resp node.Response, err error) {
	if c.finished {
		return
	}
	c.finished = true
	if c.from.inc != c.inc || c.from.state == Down {
		return
	}
	n.Run(c.from.name, c.inc, func() { c.done(resp, err) })
}

// arrive hands a request to its destination host.
func (n *Network) arrive(c *call, req node.Request) {
	hs := n.hosts[c.to]
	if hs == nil || hs.state == Down || hs.handler == nil {
		n.stats.Refused++
		n.trace("refused", c.from.name, c.to, nil, 0)
		n.transmit(c.to, c.from.name, c.req, func() { n.finish(c, node.Response{}, ErrRefused) })
		return
	}
	n.stats.Delivered++
	inc := hs.inc
	serve := func() {
		replied := false
		hs.handler(c.from.name, c.sent, req, func(resp node.Response) {
			if replied {
				panic(fmt.Sprintf("netsim: %s replied twice to %s %s", c.to, req.Method, req.URL))
			}
			replied = true
			if hs.inc != inc || hs.state == Down {
				return // the replying incarnation is gone
			}
			n.trace("reply", c.to, c.from.name, nil, int64(resp.Status))
			n.transmit(c.to, c.from.name, c.req, func() { n.finish(c, resp, nil) })
		})
	}
	n.trace("deliver", c.from.name, c.to, &req, 0)
	if done, ok := n.cpu(hs); ok {
		// The request waits for the host's CPU, then is served. A wait
		// in the inbound queue is traced ("inbound", the wait), so that
		// the history can tell a request its receiver processed late.
		if wait := done - n.serviceTime(hs) - n.sched.Now(); wait > 0 {
			n.trace("inbound", c.from.name, c.to, c.req, int64(wait))
		}
		n.sched.At(done, func() { n.Run(c.to, inc, serve) })
		return
	}
	n.Run(c.to, inc, serve)
}

// noisy reports whether random faults apply to the link.
func (n *Network) noisy(from, to string) bool {
	a, b := n.hosts[from], n.hosts[to]
	return a != nil && b != nil && a.noisy && b.noisy
}

// transmit carries one message from one host to another and runs deliver
// on arrival, unless a partition, loss or crash intervenes. req is the
// request the message is or answers: the tracer names it with every fault
// that hits the message, so that a checker can tell which timer it hit.
func (n *Network) transmit(from, to string, req *node.Request, deliver func()) {
	l := link{from, to}
	if n.blocked[l] {
		n.stats.Blocked++
		n.trace("blocked", from, to, nil, 0)
		return
	}
	if n.keep(l, req, deliver) {
		return
	}
	if n.loses(l, req) {
		n.stats.Lost++
		n.trace("lost", from, to, req, 0)
		return
	}
	noisy := n.noisy(from, to)
	if noisy && n.opts.LossRate > 0 && n.rng.Float64() < n.opts.LossRate {
		n.stats.Lost++
		n.trace("lost", from, to, req, 0)
		return
	}
	now := n.sched.Now()
	at := now + n.latency()
	if noisy && n.opts.ReorderRate > 0 && n.rng.Float64() < n.opts.ReorderRate {
		n.stats.Reordered++
		held := time.Duration(n.rng.Int64N(int64(n.opts.ReorderDelayMax) + 1))
		at += held
		n.trace("reordered", from, to, req, int64(held))
	}
	if until, ok := n.clogged[l]; ok {
		if until > now {
			n.stats.Clogged++
			at = max(at, until+n.opts.LatencyMin)
		} else {
			delete(n.clogged, l)
		}
	}
	n.sched.At(at, func() {
		if n.blocked[l] {
			n.stats.Blocked++
			n.trace("blocked", from, to, nil, 1)
			return // a partition cut the link while the message flew
		}
		deliver()
	})
}

// latency draws one one-way delay.
func (n *Network) latency() time.Duration {
	o := n.opts
	spread := o.LatencyMean - o.LatencyMin
	if spread <= 0 {
		return o.LatencyMin
	}
	d := o.LatencyMin + time.Duration(n.rng.ExpFloat64()*float64(spread))
	return min(d, o.LatencyMax)
}
