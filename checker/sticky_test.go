package checker

import "testing"

// reorderedUpdates is seed 1596's shape (N4): update "b" through a replica
// cut off by a partition is acknowledged, then update "c", invoked 500ms
// after "b" returned, through a node whose clock runs behind; after the
// heal only "b" pops.
func reorderedUpdates(rf int) *History {
	h := healthy()
	h.Ops = []Op{
		write(1, Create, 1, "a", 10*sec, 60*sec, 0, 10*ms, OK),
		write(2, Update, 1, "b", 10*sec, 60*sec, 2*sec, 2500*ms, OK),
		write(3, Update, 1, "c", 10*sec, 60*sec, 3*sec, 3500*ms, OK),
	}
	for i := range h.Ops {
		h.Ops[i].Spec.ReplicationFactor = rf
	}
	h.Faults = []Fault{{At: 1 * sec, Kind: Partition, Nodes: []string{"n3"}, Peers: []string{"n1", "n2"}},
		{At: 5 * sec, Kind: Heal}}
	h.MaxClockSkew = 2 * sec
	h.LivenessFrom = 6 * sec
	h.End = 40 * sec
	h.Pops = []Pop{pop(12*sec, "n3", "b", 1), pop(22*sec, "n3", "b", 2), pop(32*sec, "n3", "b", 3)}
	return h
}

func TestClockReorderedUpdatesAreExcusedOnlyBelowAMajority(t *testing.T) {
	// With one or two replicas a write needs one acknowledgement, so two
	// writes cut by a split may be ordered by clock, not real time.
	requireNone(t, Check(reorderedUpdates(2)))
	// From three replicas up acknowledged writes share a replica: the
	// later write must win: "c" is owed its pops, and n3, whose first pop
	// of "b" after the heal met "c" at the others, must stop popping "b".
	vs := Check(reorderedUpdates(3))
	requireHas(t, vs, "G7", "never delivered", `"c"`)
	requireHas(t, vs, "G5", "should have repaired that replica")
}
