package checker

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

const (
	ms  = time.Millisecond
	sec = time.Second
)

// write builds a create or update.
func write(seq int, kind Kind, timer uint64, opaque string, interval, repeatFor, invoke, ret time.Duration, out Outcome) Op {
	status := map[Outcome]int{OK: 200, Failed: 400, Unknown: 0}[out]
	return Op{Seq: seq, Client: seq % 3, Node: "n1", Kind: kind, Timer: timer,
		Spec:   Spec{Interval: interval, RepeatFor: repeatFor, URI: "http://client/cb", Opaque: opaque, ReplicationFactor: 2},
		Invoke: invoke, Return: ret, Outcome: out, Status: status}
}

// del builds a delete.
func del(seq int, timer uint64, invoke, ret time.Duration, out Outcome) Op {
	return Op{Seq: seq, Client: seq % 3, Node: "n1", Kind: Delete, Timer: timer, Invoke: invoke, Return: ret, Outcome: out, Status: 200}
}

func pop(at time.Duration, node, opaque string, seq int) Pop {
	return Pop{At: at, Node: node, URI: "http://client/cb", Opaque: opaque, Seq: seq, Answered: 200}
}

// pops delivers pops first..last of a definition started in [0, 10ms] with
// interval 1s, each 20ms after its earliest due time.
func pops(node, opaque string, first, last int, start time.Duration) []Pop {
	var out []Pop
	for k := first; k <= last; k++ {
		out = append(out, pop(start+time.Duration(k)*sec+20*ms, node, opaque, k))
	}
	return out
}

// healthy is a one-timer history: created OK at [0, 10ms], interval 1s,
// repeat-for 5s, every pop delivered once 20ms after due, no faults.
func healthy() *History {
	return &History{
		Ops:          []Op{write(1, Create, 1, "a", sec, 5*sec, 0, 10*ms, OK)},
		Pops:         pops("n1", "a", 1, 5, 0),
		End:          10 * sec,
		MaxClockSkew: 1 * ms,
		MaxNetDelay:  5 * ms,
	}
}

// placeHealthy gives a healthy() history three members and a timer ID
// whose rf-2 replicas leave one member out; the timer is written through
// its primary. It returns the replicas and the member left out.
func placeHealthy(h *History) (replicas []string, other string) {
	h.Members = []string{"n1", "n2", "n3"}
	h.Ops[0].Timer = 0x0b061cf0001d7000
	replicas = Replicas(h.Members, h.Ops[0].Timer, 2)
	h.Ops[0].Node = replicas[0]
	for _, m := range h.Members {
		if !slices.Contains(replicas, m) {
			other = m
		}
	}
	return replicas, other
}

// without returns h without the pops matching drop.
func without(h *History, drop func(Pop) bool) *History {
	c := *h
	c.Pops = nil
	for _, p := range h.Pops {
		if !drop(p) {
			c.Pops = append(c.Pops, p)
		}
	}
	return &c
}

// requireNone fails unless vs is empty.
func requireNone(t *testing.T, vs []Violation) {
	t.Helper()
	if len(vs) != 0 {
		t.Fatalf("got %d violations:\n%s\nwant none", len(vs), dump(vs))
	}
}

// requireOnly fails unless every violation is of guarantee g and at least
// one is, and returns them.
func requireOnly(t *testing.T, vs []Violation, g string) []Violation {
	t.Helper()
	if len(vs) == 0 {
		t.Fatalf("got no violation, want %s", g)
	}
	for _, v := range vs {
		if v.Guarantee != g {
			t.Fatalf("got violations:\n%s\nwant only %s", dump(vs), g)
		}
	}
	return vs
}

// requireHas fails unless some violation of g mentions every part.
func requireHas(t *testing.T, vs []Violation, g string, parts ...string) Violation {
	t.Helper()
	for _, v := range vs {
		if v.Guarantee != g {
			continue
		}
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(v.Message, p)
		}
		if ok {
			return v
		}
	}
	t.Fatalf("got violations:\n%s\nwant a %s mentioning %q", dump(vs), g, parts)
	return Violation{}
}

// requireWant fails unless vs is empty when want is "", and otherwise
// has a violation of want mentioning every part.
func requireWant(t *testing.T, vs []Violation, want string, parts ...string) {
	t.Helper()
	if want == "" {
		requireNone(t, vs)
		return
	}
	requireHas(t, vs, want, parts...)
}

func dump(vs []Violation) string {
	var b strings.Builder
	for _, v := range vs {
		fmt.Fprintf(&b, "  %s at %v timer %x: %s\n", v.Guarantee, v.At, v.Timer, v.Message)
	}
	return b.String()
}

// twoSitesRelayNoReplica is two sites of two nodes, ordered so that the
// other site's relay (its first node) is not placedTimer's replica there
// at factor 1, and the timer's replicas at factor 1: home at the first
// site, away at the other.
func twoSitesRelayNoReplica() (sites [][]string, home, away string) {
	sites = [][]string{{"n1", "n2"}, {"n3", "n4"}}
	home, away = Replicas(sites[0], placedTimer, 1)[0], Replicas(sites[1], placedTimer, 1)[0]
	if away == sites[1][0] {
		sites[1][0], sites[1][1] = sites[1][1], sites[1][0]
	}
	return sites, home, away
}
