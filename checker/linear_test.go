package checker

import (
	"strings"
	"testing"

	"github.com/anishathalye/porcupine"
)

func TestLinearizableNamesTheBadTimer(t *testing.T) {
	// With two timers, only the one whose update did not stick is named,
	// dated by the offending pop.
	h := healthy()
	h.Ops = append(h.Ops,
		write(2, Create, 2, "x", sec, 5*sec, 0, 10*ms, OK),
		write(3, Update, 2, "y", sec, sec, 2500*ms, 2510*ms, OK))
	h.Pops = append(h.Pops, pops("n2", "x", 1, 3, 0)...)
	h.Pops = append(h.Pops, pop(3520*ms, "n2", "y", 1))
	ok, info := Linearizable(h)
	if ok || info.Result != porcupine.Illegal {
		t.Fatalf("got ok %v result %v, want not linearizable", ok, info.Result)
	}
	if len(info.Violations) != 1 || info.Violations[0].Timer != 2 || info.Violations[0].At != 3020*ms {
		t.Fatalf("got %v, want one violation on timer 2 at 3.02s", dump(info.Violations))
	}
	if info.Partitions != 2 {
		t.Fatalf("got %d partitions, want 2", info.Partitions)
	}
}

func TestLinearizableWithUnknownWrites(t *testing.T) {
	// Unknown outcomes may apply late or never: an unknown delete after
	// which pops go on, and an unknown update whose pops start later, are
	// both linearizable.
	h := healthy()
	h.Ops = append(h.Ops, del(2, 1, 1500*ms, 1600*ms, Unknown),
		write(3, Create, 2, "x", sec, 5*sec, 0, 10*ms, OK),
		write(4, Update, 2, "y", sec, sec, 1500*ms, 1600*ms, Unknown))
	h.Pops = append(h.Pops, pops("n2", "x", 1, 3, 0)...)
	h.Pops = append(h.Pops, pop(4520*ms, "n2", "y", 1))
	if ok, info := Linearizable(h); !ok {
		t.Fatalf("got not linearizable %s, want linearizable", dump(info.Violations))
	}
}

func TestLinearizableLeavesOutFaultedStretch(t *testing.T) {
	// A write that a fault touched stops the porcupine check of its timer
	// from there on: the stale pops that follow are left out, with a note.
	h := healthy()
	h.Ops = append(h.Ops, del(2, 1, 2500*ms, 2510*ms, OK))
	h.Faults = []Fault{{At: 2400 * ms, Kind: Partition, Nodes: []string{"n2"}}, {At: 2600 * ms, Kind: Heal}}
	ok, info := Linearizable(h)
	if !ok || info.Excluded == 0 || !strings.Contains(info.Note, "left out") {
		t.Fatalf("got ok %v excluded %d note %q, want ok with pops left out", ok, info.Excluded, info.Note)
	}
}
