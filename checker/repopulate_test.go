package checker

import (
	"testing"
	"time"
)

// TestRestartedReplicaIsOwedItsTimersAfterRepopulating proves the
// checker owes a restarted replica's timers once it had the time to
// repopulate from a replica that kept them (docs/design.md 4.8): the
// primary crashes at 2 s and restarts empty at 3 s; the backup, which
// kept the timer, crashes at 8 s and restarts at 9 s. Pop 2 is due at
// 20 s. With the primary repopulated by 5 s, one copy is left, and a
// missing pop 2 is G2, not copies-lost; with a restart too late for
// the bound, a fault between the two while the primary repopulates, or
// the timer's first write missing the backup, every copy may be gone.
func TestRestartedReplicaIsOwedItsTimersAfterRepopulating(t *testing.T) {
	for _, c := range []struct {
		name      string
		restart   time.Duration // of the primary
		cut       bool          // a partition between the two at 3..4 s
		delivered bool          // the primary makes every pop
		want      string        // "" or the violation
		excuse    Excuse        // counted when want is ""
	}{
		{"repopulated, pops made", 2 * sec, false, true, "", ""},
		{"repopulated, pop 2 lost", 2 * sec, false, false, "G2", ""},
		{"restarted too late", 6 * sec, false, false, "", ExCopiesLost},
		{"cut while repopulating", 2 * sec, true, false, "", ExCopiesLost},
	} {
		t.Run(c.name, func(t *testing.T) {
			h, p, b, _ := placed(t)
			h.Ops[0].Spec.Interval, h.Ops[0].Spec.RepeatFor = 10*sec, 60*sec
			h.End = 70 * sec
			h.Faults = []Fault{{At: 1 * sec, Kind: Crash, Nodes: []string{p}}, {At: c.restart, Kind: Restart, Nodes: []string{p}},
				{At: 8 * sec, Kind: Crash, Nodes: []string{b}}, {At: 9 * sec, Kind: Restart, Nodes: []string{b}}}
			if c.cut {
				h.Faults = append(h.Faults, Fault{At: 3 * sec, Kind: Partition, Nodes: []string{p}, Peers: []string{b}}, Fault{At: 4 * sec, Kind: Heal})
			}
			h.Pops = nil
			for k := 1; k <= 6; k++ {
				if k == 2 && !c.delivered {
					continue
				}
				on := pop(time.Duration(k)*10*sec+20*ms, p, "a", k)
				on.Timer = placedTimer
				h.Pops = append(h.Pops, on)
			}
			vs, cov := DefaultOptions().Judge(h)
			if c.want != "" {
				requireHas(t, vs, c.want, "pop 2")
				return
			}
			requireNone(t, vs)
			if c.excuse != "" && cov.Excused[c.excuse] == 0 {
				t.Errorf("excuse %s covered nothing: got %v", c.excuse, cov.Excused)
			}
		})
	}
}

// TestRepopulationComesFromTheNodesOwnSite proves a restarted replica is
// owed only what a replica of its own site kept: each site is a cluster
// of its own, whose resync and repair ask its own members. An rf 1 timer
// over two sites: the home replica crashes at 0.5 s and restarts empty at
// 1 s; the other site's replica pops 1 and 2 at its rank, then crashes at
// 4.5 s and restarts empty. No node holds the timer after 4.5 s, so pop
// 3 and later are excused as copies lost, not owed by the home replica as
// if the other site had repopulated it.
func TestRepopulationComesFromTheNodesOwnSite(t *testing.T) {
	sites := [][]string{{"n1", "n2"}, {"n3", "n4"}}
	home, away := Replicas(sites[0], placedTimer, 1)[0], Replicas(sites[1], placedTimer, 1)[0]
	h := &History{
		Members: []string{"n1", "n2", "n3", "n4"}, Sites: sites,
		Ops: []Op{write(1, Create, placedTimer, "a", sec, 10*sec, 0, 10*ms, OK)},
		End: 20 * sec, MaxClockSkew: ms, MaxNetDelay: 5 * ms,
		Faults: []Fault{{At: 500 * ms, Kind: Crash, Nodes: []string{home}}, {At: sec, Kind: Restart, Nodes: []string{home}},
			{At: 4500 * ms, Kind: Crash, Nodes: []string{away}}, {At: 5 * sec, Kind: Restart, Nodes: []string{away}}},
	}
	h.Ops[0].Node, h.Ops[0].Spec.ReplicationFactor = home, 1
	for k := 1; k <= 2; k++ {
		p := pop(time.Duration(k)*sec+2*sec+20*ms, away, "a", k)
		p.Timer = placedTimer
		h.Pops = append(h.Pops, p)
	}
	vs, cov := DefaultOptions().Judge(h)
	requireNone(t, vs)
	if cov.Excused[ExCopiesLost] == 0 {
		t.Errorf("copies-lost covered nothing: got %v", cov.Excused)
	}
}
