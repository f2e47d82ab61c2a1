package sim

import (
	"slices"
	"strings"
	"time"

	"github.com/chronos-timer/chronos/checker"
	"github.com/chronos-timer/chronos/netsim"
	"github.com/chronos-timer/chronos/node"
)

// twins records what the checker needs to judge a shared-instance plan
// (MixSharedInstance) from the plan and the network alone, never from a
// node's answers: the two members configured with one instance number,
// the numbers they were given, and the moments each surely learned of
// the clash (checker.Clash). A node notes the number every internal
// request carries (node's noteInstance), so a twin knows once it was
// handed one from its twin; and a node that was handed one from each twin
// names the clash in its answers to both, so a twin knows once it took
// the answer to an internal request sent after that node heard its twin.
type twins struct {
	w     *world
	addrs []string
	// heard holds, per node, when it was first handed an internal
	// request from each other node since it last booted.
	heard map[string]map[string]time.Duration
	// told is, per twin, when a Clash from an answer was last recorded:
	// one a second is enough for the checker's minute-long windows.
	told map[string]time.Duration
	// instance is each twin's number as last booted: a twin that booted
	// in another membership may have been given another one.
	instance map[string]int
}

// newTwins is the recorder of a shared-instance plan, nil in any other.
func newTwins(w *world) *twins {
	if !w.plan.enabled(MixSharedInstance) {
		return nil
	}
	t := &twins{w: w, addrs: []string{w.plan.nodeAddr(1), w.plan.nodeAddr(2)}, heard: map[string]map[string]time.Duration{},
		told: map[string]time.Duration{}, instance: map[string]int{}}
	w.hist.Twins = t.addrs
	return t
}

// booted forgets what node addr had heard, and returns the instance
// number it is to be configured with (node.AutoInstanceID: its own).
func (t *twins) booted(addr string) int {
	if t == nil {
		return node.AutoInstanceID
	}
	t.heard[addr] = map[string]time.Duration{}
	if !slices.Contains(t.addrs, addr) {
		return node.AutoInstanceID
	}
	n := t.w.sharedInstance()
	t.instance[addr] = n
	if !slices.Contains(t.w.hist.TwinInstances, n) {
		t.w.hist.TwinInstances = append(t.w.hist.TwinInstances, n)
	}
	return n
}

// served notes that node at is being handed req from node from.
func (t *twins) served(at, from string, req node.Request) {
	if t == nil || req.Header.Get(node.HeaderInstance) == "" {
		return
	}
	if _, seen := t.heard[at][from]; seen {
		return
	}
	t.heard[at][from] = t.w.loop.Now()
	if t.twin(at) == from && t.sharing() {
		t.w.hist.Clashes = append(t.w.hist.Clashes, checker.Clash{At: t.w.loop.Now(), Node: at, Direct: true})
	}
}

// answered notes that twin at took the answer from peer to an internal
// request it sent at sent.
func (t *twins) answered(at, peer string, sent time.Duration) {
	other := t.twin(at)
	knew := func(x string) bool { h, ok := t.heard[peer][x]; return ok && h < sent }
	if peer == at || !t.sharing() || peer == other && !knew(at) || peer != other && !knew(other) {
		return
	}
	now := t.w.loop.Now()
	if last, ok := t.told[at]; ok && now-last < time.Second {
		return
	}
	t.told[at] = now
	t.w.hist.Clashes = append(t.w.hist.Clashes, checker.Clash{At: now, Node: at})
}

// membershipChanged forgets what every node heard: a node forgets the
// number of a peer that its new configuration no longer names, and each
// reloads at its own moment, so only what is heard from here on is sure.
func (t *twins) membershipChanged() {
	if t == nil {
		return
	}
	for _, h := range t.heard {
		clear(h)
	}
}

// sharing reports whether both twins are members and run with one
// number now.
func (t *twins) sharing() bool {
	a, aok := t.instance[t.addrs[0]]
	b, bok := t.instance[t.addrs[1]]
	members := t.w.cluster.All()
	return aok && bok && a == b && slices.Contains(members, t.addrs[0]) && slices.Contains(members, t.addrs[1])
}

// twin is the other twin of addr, "" when addr is none.
func (t *twins) twin(addr string) string {
	switch addr {
	case t.addrs[0]:
		return t.addrs[1]
	case t.addrs[1]:
		return t.addrs[0]
	}
	return ""
}

// network is what a node on machine m sends through: its endpoint, and
// for a twin, one that notes the answers it takes.
func (t *twins) network(m *machine) node.Network {
	if t == nil || t.twin(m.addr) == "" {
		return m.ep
	}
	return twinNet{t: t, ep: m.ep, self: m.addr}
}

// twinNet is a twin's endpoint, noting the answers to its internal
// requests (see answered).
type twinNet struct {
	t    *twins
	ep   *netsim.Endpoint
	self string
}

var _ node.Network = twinNet{}

func (n twinNet) Send(req node.Request, timeout time.Duration, done func(node.Response, error)) {
	sent := n.t.w.loop.Now()
	internal := req.Header.Get(node.HeaderInstance) != ""
	peer, _, _ := strings.Cut(strings.TrimPrefix(req.URL, "http://"), "/")
	n.ep.Send(req, timeout, func(resp node.Response, err error) {
		if internal && err == nil {
			n.t.answered(n.self, peer, sent)
		}
		done(resp, err)
	})
}
