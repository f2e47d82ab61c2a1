package sim

import (
	"strings"
	"time"

	"github.com/chronos-timer/chronos/checker"
	"github.com/chronos-timer/chronos/node"
	"github.com/chronos-timer/chronos/wire"
)

// What the network brought each node of each timer's record: the first
// delivery of a message carrying it, per timer and node
// (checker.History.Carried). Taken from the messages delivered, as the
// twins' moments are (twins.go), never from what a node said of them.

// carryKey is one timer on one node.
type carryKey struct {
	timer uint64
	node  string
}

// carried notes that a message carrying timer's record reached node now,
// if none had before.
func (w *world) carried(timer uint64, node string) {
	if timer == 0 {
		return
	}
	k := carryKey{timer, node}
	if w.carriedTo[k] {
		return
	}
	if w.carriedTo == nil {
		w.carriedTo = map[carryKey]bool{}
	}
	w.carriedTo[k] = true
	w.hist.Carried = append(w.hist.Carried, checker.Carried{At: w.loop.Now(), Node: node, Timer: timer})
}

// carriedIn notes a request delivered to node that carries a timer's
// record: an internal PUT to /timers/<wire ID>.
func (w *world) carriedIn(node string, req *node.Request) {
	if carriesRecord(req) {
		w.carried(timerOfURL(req.URL), node)
	}
}

// carriedBack notes the answer to req, delivered to its sender node, when
// it carries records: a 409 to an internal PUT (the newer record), or a
// resync page (every timer it lists).
func (w *world) carriedBack(node string, req *node.Request, resp node.Response) {
	switch {
	case carriesRecord(req) && resp.Status == 409:
		w.carried(timerOfURL(req.URL), node)
	case req.Method == "GET" && strings.Contains(req.URL, "/timers?") && resp.Status == 200:
		entries, err := wire.ParsePage(resp.Body)
		if err != nil {
			return
		}
		for _, e := range entries {
			if id, err := wire.ParseID(e.TimerID); err == nil {
				w.carried(id, node)
			}
		}
	}
}

// carryNet is a node's network, noting the answers that carry records
// back to it (carriedBack).
type carryNet struct {
	w    *world
	net  node.Network
	self string
}

var _ node.Network = carryNet{}

func (c carryNet) Send(req node.Request, timeout time.Duration, done func(node.Response, error)) {
	c.net.Send(req, timeout, func(resp node.Response, err error) {
		if err == nil {
			c.w.carriedBack(c.self, &req, resp)
		}
		done(resp, err)
	})
}
