package nemesis

import (
	"fmt"
	"slices"

	"github.com/chronos-timer/chronos/checker"
)

// Addressing of the namespaces. 198.18.0.0/15 is reserved for testing
// network devices (RFC 2544); the addresses exist only inside the
// namespaces the nemesis makes, and no frame leaves its switch.
const (
	subnet     = "198.18.0.%d"
	prefixLen  = 24
	clientsIP  = 200
	nodePort   = 7253
	sinkPort   = 9999
	macPattern = "02:c6:12:00:00:%02x"
)

// topology is where each namespace sits: ports 0..nodes-1 are the nodes,
// port nodes the clients' namespace, which holds the clients and the
// callback sink.
type topology struct{ nodes int }

func (t topology) clients() int { return t.nodes }
func (t topology) ports() int   { return t.nodes + 1 }

func (t topology) ip(port int) string {
	if port == t.clients() {
		return fmt.Sprintf(subnet, clientsIP)
	}
	return fmt.Sprintf(subnet, port+1)
}

func (t topology) mac(port int) string {
	if port == t.clients() {
		return fmt.Sprintf(macPattern, clientsIP)
	}
	return fmt.Sprintf(macPattern, port+1)
}

// addr is node i's address: where it listens and its name among the
// members.
func (t topology) addr(i int) string { return fmt.Sprintf("%s:%d", t.ip(i), nodePort) }

// sinkHost is the callback sink's host:port, as a callback URI names it
// and as the checker knows the endpoint.
func (t topology) sinkHost() string { return fmt.Sprintf("%s:%d", t.ip(t.clients()), sinkPort) }

// host is the name the checker knows a port by.
func (t topology) host(port int) string {
	if port == t.clients() {
		return t.sinkHost()
	}
	return t.addr(port)
}

func (t topology) members() []string {
	out := make([]string, t.nodes)
	for i := range out {
		out[i] = t.addr(i)
	}
	return out
}

// macs maps every port's MAC to its index.
func (t topology) macs() map[string]int {
	out := map[string]int{}
	for p := range t.ports() {
		out[t.mac(p)] = p
	}
	return out
}

// neighbours maps the IP of every port but p to its MAC, for p's
// permanent neighbour entries.
func (t topology) neighbours(p int) map[string]string {
	out := map[string]string{}
	for q := range t.ports() {
		if q != p {
			out[t.ip(q)] = t.mac(q)
		}
	}
	return out
}

// cut is one set of directed link rules and the faults the history
// records for it.
type cut struct {
	rules  map[link]Rule
	faults []checker.Fault
}

// cutFor is what a network fault of round r does: the rules it sets on
// the switch and how the history records them (kills and pauses are no
// cut: nil). A cut is recorded as a partition when it drops frames and
// as a clog when it holds or degrades them, so that the checker allows
// for late delivery (checker.Clog holds messages until it heals).
func (t topology) cutFor(r Round) *cut {
	var side, other []int
	for p := range t.ports() {
		if slices.Contains(r.Nodes, p) {
			side = append(side, p)
		} else {
			other = append(other, p)
		}
	}
	c := &cut{rules: map[link]Rule{}}
	both := func(rule Rule, kind checker.FaultKind, detail string) {
		for _, a := range side {
			for _, b := range other {
				c.rules[link{a, b}], c.rules[link{b, a}] = rule, rule
			}
		}
		c.faults = append(c.faults, t.fault(kind, side, other, detail))
		if kind == checker.Clog {
			c.faults = append(c.faults, t.fault(kind, other, side, detail))
		}
	}
	switch r.Kind {
	case IsolateNode, Split:
		both(Rule{Drop: true}, checker.Partition, "drop")
	case HoldCut:
		both(Rule{Hold: true}, checker.Clog, "hold until the heal")
	case DeafNode, MuteNode:
		for _, a := range side {
			for _, b := range other {
				if r.Kind == DeafNode {
					c.rules[link{b, a}] = Rule{Drop: true}
				} else {
					c.rules[link{a, b}] = Rule{Drop: true}
				}
			}
		}
		c.faults = append(c.faults, t.fault(checker.Partition, side, other, "one-way: "+string(r.Kind)))
	case Degrade:
		all := append(slices.Clone(side), other...)
		for _, a := range all {
			for _, b := range all {
				if a != b {
					c.rules[link{a, b}] = degradedRule
				}
			}
		}
		c.faults = append(c.faults, t.fault(checker.Clog, all, all, degradedRule.String()))
	default:
		return nil
	}
	return c
}

// fault records a cut between the ports of side and other.
func (t topology) fault(kind checker.FaultKind, side, other []int, detail string) checker.Fault {
	f := checker.Fault{Kind: kind, Detail: detail}
	for _, p := range side {
		f.Nodes = append(f.Nodes, t.host(p))
	}
	for _, p := range other {
		f.Peers = append(f.Peers, t.host(p))
	}
	return f
}
