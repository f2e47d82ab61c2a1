package checker

import (
	"testing"
	"time"
)

// TestTwinRefusesWritesOnceItKnows proves CLASH: a twin that was handed
// a message from its twin (Direct) refuses client writes for good, one
// told by a third node's answer for ClashReported; a write acknowledged
// through it meanwhile is a violation, and none is before it knew, once
// the report lapsed, after it restarted (it forgot), through a node that
// is no twin, or answered 503.
func TestTwinRefusesWritesOnceItKnows(t *testing.T) {
	for _, c := range []struct {
		name   string
		direct bool
		via    string
		at     time.Duration
		out    Outcome
		crash  bool
		want   bool
	}{
		{"after a message from its twin", true, "n1", 5 * sec, OK, false, true},
		{"long after a message from its twin", true, "n1", 5 * time.Minute, OK, false, true},
		{"refused", true, "n1", 5 * sec, Unknown, false, false},
		{"before it knew", true, "n1", 500 * ms, OK, false, false},
		{"through a node that is no twin", true, "n3", 5 * sec, OK, false, false},
		{"after it restarted", true, "n1", 15 * sec, OK, true, false},
		{"told by a third node", false, "n1", 30 * sec, OK, false, true},
		{"once the report lapsed", false, "n1", 62 * sec, OK, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := &History{
				Members: []string{"n1", "n2", "n3"}, Twins: []string{"n1", "n2"}, TwinInstances: []int{5},
				Clashes: []Clash{{At: sec, Node: "n1", Direct: c.direct}},
				End:     10 * time.Minute, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
			}
			if c.crash {
				h.Faults = []Fault{{At: 10 * sec, Kind: Crash, Nodes: []string{"n1"}}, {At: 11 * sec, Kind: Restart, Nodes: []string{"n1"}}}
			}
			op := write(1, Create, 0x0b061cf0001d7000, "a", 0, 0, c.at, c.at+10*ms, c.out)
			op.Node = c.via
			h.Ops = []Op{op}
			vs := DefaultOptions().Check(h)
			got := false
			for _, v := range vs {
				got = got || v.Guarantee == "CLASH"
			}
			if got != c.want {
				t.Fatalf("got violations:\n%s\nwant CLASH: %v", dump(vs), c.want)
			}
		})
	}
}
