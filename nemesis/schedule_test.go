package nemesis

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/checker"
)

// TestScheduleIsSeeded proves a seed fixes the schedule, another seed
// gives another, and the first rounds use every kind once.
func TestScheduleIsSeeded(t *testing.T) {
	a := Schedule(3, 20, 5, AllFaults, time.Second)
	b := Schedule(3, 20, 5, AllFaults, time.Second)
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Fatalf("got two schedules from seed 3:\n%v\n%v", a, b)
	}
	if c := Schedule(4, 20, 5, AllFaults, time.Second); fmt.Sprint(a) == fmt.Sprint(c) {
		t.Errorf("seeds 3 and 4 gave the same schedule: %v", a)
	}
	var first []FaultKind
	for _, r := range a[:len(AllFaults)] {
		first = append(first, r.Kind)
	}
	for _, k := range AllFaults {
		if !slices.Contains(first, k) {
			t.Errorf("the first %d rounds %v leave out %s", len(AllFaults), first, k)
		}
	}
	for _, r := range a {
		if len(r.Nodes) == 0 && r.Kind != Degrade || slices.ContainsFunc(r.Nodes, func(n int) bool { return n < 0 || n >= 5 }) || r.For <= 0 {
			t.Errorf("%v: got nodes %v for %v, want nodes of 0..4 and a positive length", r, r.Nodes, r.For)
		}
		if r.Kind == Split && len(r.Nodes) != 2 {
			t.Errorf("%v: a split of 5 cuts off 2 nodes, got %v", r, r.Nodes)
		}
	}
}

// TestCutFor proves each network fault sets the rules of exactly the
// links it names, and records itself as the checker reads cuts: drops
// as partitions, holds and degraded links as clogs.
func TestCutFor(t *testing.T) {
	top := topology{nodes: 3} // ports 0, 1, 2 and the clients at 3
	cases := []struct {
		kind  FaultKind
		links []link
		rule  Rule
		fault checker.FaultKind
	}{
		{IsolateNode, []link{{1, 0}, {0, 1}, {1, 2}, {2, 1}, {1, 3}, {3, 1}}, Rule{Drop: true}, checker.Partition},
		{HoldCut, []link{{1, 0}, {0, 1}, {1, 2}, {2, 1}, {1, 3}, {3, 1}}, Rule{Hold: true}, checker.Clog},
		{DeafNode, []link{{0, 1}, {2, 1}, {3, 1}}, Rule{Drop: true}, checker.Partition},
		{MuteNode, []link{{1, 0}, {1, 2}, {1, 3}}, Rule{Drop: true}, checker.Partition},
	}
	for _, c := range cases {
		got := top.cutFor(Round{Kind: c.kind, Nodes: []int{1}})
		if len(got.rules) != len(c.links) {
			t.Errorf("%s: got %d rules %v, want %d", c.kind, len(got.rules), got.rules, len(c.links))
		}
		for _, l := range c.links {
			if got.rules[l] != c.rule {
				t.Errorf("%s: link %v got rule %v, want %v", c.kind, l, got.rules[l], c.rule)
			}
		}
		f := got.faults[0]
		if f.Kind != c.fault || !slices.Equal(f.Nodes, []string{top.addr(1)}) || !slices.Contains(f.Peers, top.sinkHost()) {
			t.Errorf("%s: got fault %+v, want a %s of %s from the others and the sink", c.kind, f, c.fault, top.addr(1))
		}
	}
	if got := top.cutFor(Round{Kind: Degrade}); len(got.rules) != 4*3 {
		t.Errorf("degrade: got %d rules, want every link of 4 ports: 12", len(got.rules))
	}
	for _, k := range []FaultKind{Kill, Pause} {
		if got := top.cutFor(Round{Kind: k, Nodes: []int{0}}); got != nil {
			t.Errorf("%s: got cut %+v, want none (it is a process fault)", k, got)
		}
	}
}
