package checker

import (
	"testing"
)

// TestUpdateWithoutFactorKeepsTheTimersFactor proves the checker takes an
// update's replication factor from the history, never from the node's
// default: an update without one keeps the factor its timer's earlier
// writes gave (a PUT cannot change it), so an rf 3 timer's update is
// judged with three replicas and a write quorum of two, where the default
// of 2 would have placed it on two and let one replica's answer stand for
// the write (the may-reorder excuse). A create without one gets the API's
// default.
func TestUpdateWithoutFactorKeepsTheTimersFactor(t *testing.T) {
	h, primary, _, _ := placed(t)
	create := write(1, Create, placedTimer, "a", sec, 10*sec, 0, 10*ms, OK)
	create.Spec.ReplicationFactor = 3
	bare := write(2, Create, placedTimer+1, "c", sec, 10*sec, 0, 10*ms, OK)
	bare.Spec.ReplicationFactor = 0
	up := write(3, Update, placedTimer, "b", sec, 10*sec, 5*sec, 5*sec+10*ms, OK)
	up.Spec.ReplicationFactor = 0
	h.Ops = []Op{create, bare, up}
	for i := range h.Ops {
		h.Ops[i].Node = primary
	}
	h.Pops = nil
	x := newIndex(h, DefaultOptions())
	for _, c := range []struct {
		opaque       string
		rf, quorum   int
		wantReplicas int
	}{{"a", 3, 2, 3}, {"b", 3, 2, 3}, {"c", DefaultReplicationFactor, 1, DefaultReplicationFactor}} {
		d := x.byOpaque[c.opaque]
		if d.rf != c.rf || d.quorum != c.quorum || d.rfUnknown || len(d.replicas) != c.wantReplicas {
			t.Errorf("write %q: rf %d quorum %d unknown %v replicas %v, want rf %d quorum %d, %d replicas",
				c.opaque, d.rf, d.quorum, d.rfUnknown, d.replicas, c.rf, c.quorum, c.wantReplicas)
		}
	}
}

// TestUpdateOfUnknownFactorIsUnplaced proves an update without a factor of
// a timer whose factor the history never gave (its create is not in the
// history) is judged as placed nowhere known: a fault on any member may
// touch it (excused by the worst rank), rather than by a guessed factor.
func TestUpdateOfUnknownFactorIsUnplaced(t *testing.T) {
	h, primary, _, other := placed(t)
	up := write(2, Update, placedTimer, "b", sec, 10*sec, 0, 10*ms, OK)
	up.Node, up.Spec.ReplicationFactor = primary, 0
	h.Ops = []Op{up}
	h.Pops = nil
	for _, p := range pops(primary, "b", 1, 10, 0) {
		p.Timer = placedTimer
		h.Pops = append(h.Pops, p)
	}
	h.Pops[2].At += 3 * sec
	h.Faults = []Fault{{At: 2500 * ms, Kind: Crash, Nodes: []string{other}}}
	x := newIndex(h, DefaultOptions())
	d := x.byOpaque["b"]
	if !d.rfUnknown || d.placed || d.rf != len(h.Members) {
		t.Fatalf("update of unknown factor: rfUnknown %v placed %v rf %d, want true false %d", d.rfUnknown, d.placed, d.rf, len(h.Members))
	}
	vs, _ := DefaultOptions().Judge(h)
	requireNone(t, vs)
}

// TestUpdateAfterTheTimerEndedHasUnknownFactor proves that an update
// without a factor of a timer whose last pop may be past (a one-shot
// create) is judged with an unknown factor: a PUT to a finished timer is a
// create to the client, and a node may give it the factor of the finished
// record it holds or the default.
func TestUpdateAfterTheTimerEndedHasUnknownFactor(t *testing.T) {
	h, primary, _, _ := placed(t)
	create := write(1, Create, placedTimer, "a", 0, 0, 0, 10*ms, OK)
	create.Spec.ReplicationFactor = 1
	up := write(2, Update, placedTimer, "b", sec, 10*sec, 5*sec, 5*sec+10*ms, OK)
	up.Spec.ReplicationFactor = 0
	h.Ops = []Op{create, up}
	for i := range h.Ops {
		h.Ops[i].Node = primary
	}
	h.Pops = nil
	if d := newIndex(h, DefaultOptions()).byOpaque["b"]; !d.rfUnknown {
		t.Errorf("update of a finished timer: rf %d, known; want unknown", d.rf)
	}
}
