package checker

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestRestartWord is G4 at a restart from disk: n3, a replica of a timer
// popping every second for two minutes, crashes before its first pop and
// restarts from its disk at 40 s, while n1 delivered pops 1 to 30. A pop
// n3 delivers within the backup skew after its restart, of one n1 made,
// is one it made before the others' word could come: a violation. Not
// so one delivered after the skew, one in a history without storage, a
// restart that found the disk wiped, or one another fault touched.
func TestRestartWord(t *testing.T) {
	for _, c := range []struct {
		name   string
		at     time.Duration // n3's pop 5
		change func(h *History)
		want   bool
	}{
		{"within the skew", 40*sec + 5*ms, nil, true},
		{"after the skew", 42*sec + 5*ms, nil, false},
		{"no storage", 40*sec + 5*ms, func(h *History) { h.Storage = false }, false},
		{"disk wiped", 40*sec + 5*ms, func(h *History) {
			h.Faults = append(h.Faults, Fault{At: 40 * sec, Kind: DiskWiped, Nodes: []string{"n3"}})
		}, false},
		{"a partition at the restart", 40*sec + 5*ms, func(h *History) {
			h.Faults = append(h.Faults, Fault{At: 39 * sec, Kind: Partition, Nodes: []string{"n3"}, Peers: []string{"n1", "n2"}},
				Fault{At: 45 * sec, Kind: Heal})
		}, false},
	} {
		op := write(1, Create, 7, "t", time.Second, 2*time.Minute, 0, 10*ms, OK)
		op.Spec.ReplicationFactor = 3
		h := &History{
			Members: []string{"n1", "n2", "n3"}, Storage: true, Ops: []Op{op},
			Faults: []Fault{{At: 1500 * ms, Kind: Crash, Nodes: []string{"n3"}}, {At: 40 * sec, Kind: Restart, Nodes: []string{"n3"}}},
			End:    3 * time.Minute, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
		}
		for k := 1; k <= 30; k++ {
			h.Pops = append(h.Pops, pop(time.Duration(k)*sec+20*ms, "n1", "t", k))
		}
		h.Pops = append(h.Pops, pop(c.at, "n3", "t", 5))
		if c.change != nil {
			c.change(h)
		}
		vs := newIndex(h, DefaultOptions()).checkRestartWord()
		if got := len(vs) == 1 && strings.Contains(vs[0].Message, "restart from disk"); got != c.want || len(vs) > 1 {
			t.Errorf("%s: got %v, want a violation %v", c.name, vs, c.want)
		}
	}
}

// TestRestartReplaced is G5 at a restart from disk: n3, a replica of a
// timer popping every second for two minutes, crashes at 1.5 s; the
// timer is updated through n1 at 10 s, and n3 restarts from its disk at
// 40 s. A pop of the first definition n3 delivers after its restart is
// one it made though the nodes that took the update push its tombstone
// to it as it asks for its pages: a violation, at any time after the
// restart. Not so in a history without storage, a restart that found the
// disk wiped, one another fault touched, an update that returned after
// the restart, or a pop before it.
func TestRestartReplaced(t *testing.T) {
	for _, c := range []struct {
		name   string
		at     time.Duration // n3's pop of the first definition
		change func(h *History)
		want   bool
	}{
		{"after the restart", 42*sec + 5*ms, nil, true},
		{"a round after the restart", 75 * sec, nil, true},
		{"before the crash", 1 * sec, nil, false},
		{"no storage", 42*sec + 5*ms, func(h *History) { h.Storage = false }, false},
		{"disk wiped", 42*sec + 5*ms, func(h *History) {
			h.Faults = append(h.Faults, Fault{At: 40 * sec, Kind: DiskWiped, Nodes: []string{"n3"}})
		}, false},
		{"a partition at the restart", 42*sec + 5*ms, func(h *History) {
			h.Faults = append(h.Faults, Fault{At: 39 * sec, Kind: Partition, Nodes: []string{"n3"}, Peers: []string{"n1", "n2"}},
				Fault{At: 45 * sec, Kind: Heal})
		}, false},
		{"the update returned after the restart", 42*sec + 5*ms, func(h *History) {
			h.Ops[1].Invoke, h.Ops[1].Return = 39*sec+500*ms, 40*sec+100*ms
		}, false},
		{"the update placed elsewhere", 42*sec + 5*ms, func(h *History) {
			for _, rf := range []int{1, 2} {
				if !slices.Contains(Replicas(h.Members, 7, rf), "n3") {
					h.Ops[1].Spec.ReplicationFactor = rf
					return
				}
			}
			t.Fatal("no factor places timer 7 off n3")
		}, false},
		{"a second later write", 42*sec + 5*ms, func(h *History) {
			h.Ops = append(h.Ops, del(3, 7, 20*sec, 20*sec+10*ms, OK))
		}, false},
	} {
		op := write(1, Create, 7, "t", time.Second, 2*time.Minute, 0, 10*ms, OK)
		op.Spec.ReplicationFactor = 3
		up := write(2, Update, 7, "u", time.Second, 2*time.Second, 10*sec, 10*sec+10*ms, OK)
		up.Spec.ReplicationFactor = 3
		h := &History{
			Members: []string{"n1", "n2", "n3"}, Storage: true, Ops: []Op{op, up},
			Faults: []Fault{{At: 1500 * ms, Kind: Crash, Nodes: []string{"n3"}}, {At: 40 * sec, Kind: Restart, Nodes: []string{"n3"}}},
			End:    3 * time.Minute, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
		}
		for k := 1; k <= 9; k++ {
			h.Pops = append(h.Pops, pop(time.Duration(k)*sec+20*ms, "n1", "t", k))
		}
		h.Pops = append(h.Pops, pop(11*sec+20*ms, "n1", "u", 1), pop(12*sec+20*ms, "n1", "u", 2))
		h.Pops = append(h.Pops, pop(c.at, "n3", "t", 10))
		if c.change != nil {
			c.change(h)
		}
		vs := newIndex(h, DefaultOptions()).checkRestartReplaced()
		if got := len(vs) == 1 && strings.Contains(vs[0].Message, "restart from disk"); got != c.want || len(vs) > 1 {
			t.Errorf("%s: got %v, want a violation %v", c.name, vs, c.want)
		}
	}
}
