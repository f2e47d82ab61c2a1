package checker

import (
	"testing"
	"time"
)

// versioned builds G6-by-version's base history: an hour-long timer (rf 2)
// on five members, created as "a" through its primary and updated to "b"
// at 10 s, and the snapshot at the end (100 s) in which both replicas hold
// "b" live. It returns the history, the replicas (primary first) and a
// member that holds no replica.
func versioned(t *testing.T) (h *History, primary, backup, other string) {
	t.Helper()
	h, primary, backup, other = placed(t)
	h.Ops = []Op{
		write(1, Create, placedTimer, "a", 3600*sec, 3600*sec, 0, 10*ms, OK),
		write(2, Update, placedTimer, "b", 3600*sec, 3600*sec, 10*sec, 10*sec+10*ms, OK),
	}
	h.Ops[0].Node, h.Ops[1].Node = primary, primary
	h.Pops, h.End = nil, 100*sec
	h.Held = []Held{{At: h.End, Live: map[string][]uint64{}, Defs: map[string]map[uint64]string{}}}
	for _, n := range []string{primary, backup} {
		hold(h, n, "b")
	}
	return h, primary, backup, other
}

// alongside is versioned with write w added, and the backup holding the
// replaced "a" (bounded) or w's definition.
func alongside(t *testing.T, w Op, bounded bool) *History {
	h, _, backup, _ := versioned(t)
	h.Ops = append(h.Ops, w)
	if bounded {
		hold(h, backup, "a")
	} else {
		hold(h, backup, w.Spec.Opaque)
	}
	return h
}

// hold makes node n hold definition opaque of placedTimer live at the end.
func hold(h *History, n, opaque string) {
	end := &h.Held[len(h.Held)-1]
	end.Live[n] = []uint64{placedTimer}
	end.Defs[n] = map[uint64]string{placedTimer: opaque}
}

// missedUpdate is versioned with the update lost on its way to the
// backup, which holds the replaced "a" at the end, and the faults more
// returns after it; the primary holds nothing when the faults crash it.
func missedUpdate(t *testing.T, bounded bool, more func(primary, backup, other string) []Fault) *History {
	h, primary, backup, other := versioned(t)
	h.Faults = append([]Fault{{At: 10*sec + ms, Kind: Lost, Nodes: []string{primary}, Peers: []string{backup}, Timer: placedTimer}},
		more(primary, backup, other)...)
	for _, f := range h.Faults {
		if f.Kind == Crash && f.Nodes[0] == primary {
			delete(h.Held[0].Live, primary)
			delete(h.Held[0].Defs, primary)
		}
	}
	hold(h, backup, "a")
	return h
}

// TestEndHoldsTheNewestDefinition shows G6 by version: at the end of a
// run every replica holds the definition the last acknowledged write
// gave (judged, and counted), and one that still holds the definition an
// update replaced, or a deleted timer, is a violation, which the
// placement half of G6 (who holds, not what) never saw.
func TestEndHoldsTheNewestDefinition(t *testing.T) {
	h, _, backup, _ := versioned(t)
	vs, cov := DefaultOptions().Judge(h)
	requireNone(t, vs)
	if cov.Versions != 2 {
		t.Errorf("definitions judged: got %d, want 2", cov.Versions)
	}
	hold(h, backup, "a")
	requireHas(t, Check(h), "G6", backup, "still holds the definition live", "update \"b\"")

	h, primary, backup, _ := versioned(t)
	h.Ops[1] = del(2, placedTimer, 10*sec, 10*sec+10*ms, OK)
	h.Ops[1].Node = primary
	hold(h, backup, "a")
	delete(h.Held[0].Live, primary)
	delete(h.Held[0].Defs, primary)
	requireHas(t, Check(h), "G6", backup, "still holds the definition live", "delete")
	delete(h.Held[0].Live, backup)
	delete(h.Held[0].Defs, backup)
	requireNone(t, Check(h))
}

// TestStaleHoldingExcusesAreNeededAndBounded shows each allowance of G6
// by version, needed (the history it rightly excuses) and bounded (the
// same history past the bound, or with the fault moved off the timer's
// nodes, is a violation). The backup holds the replaced "a" at the end.
func TestStaleHoldingExcusesAreNeededAndBounded(t *testing.T) {
	o := DefaultOptions()
	x := newIndex(&History{MaxNetDelay: 5 * ms}, o)
	round := x.repairRoundBound()
	cases := []struct {
		name   string
		excuse Excuse
		// build returns the history, with bounded true the one past the
		// allowance.
		build func(bounded bool) *History
	}{{
		// The update returned just before the end: a repair round may
		// not have come yet.
		name: "update returned too recently", excuse: ExInMotion,
		build: func(bounded bool) *History {
			h, _, backup, _ := versioned(t)
			h.End = 10*sec + 10*ms + o.FaultSettle + round
			if bounded {
				h.End += ms
			}
			h.Held[0].At = h.End
			hold(h, backup, "a")
			return h
		},
	}, {
		// A lost message kept the update from the backup, and the
		// faults on the timer went on until 60 s: the backup is mended
		// by a repair round after they healed.
		name: "fault on the timer healed too recently", excuse: ExFault + "/" + Excuse(Partition),
		build: func(bounded bool) *History {
			return missedUpdate(t, bounded, func(primary, backup, other string) []Fault {
				cut := backup
				if bounded {
					cut = other
				}
				return []Fault{{At: 30 * sec, Kind: Partition, Nodes: []string{cut}, Peers: []string{primary}}, {At: 60 * sec, Kind: Heal}}
			})
		},
	}, {
		// The update's outcome is unknown after "b": the backup may
		// hold it, or "b"; "a" is replaced whatever it did.
		name: "a later write's outcome unknown", excuse: ExUnknownWrite,
		build: func(bounded bool) *History {
			return alongside(t, write(3, Update, placedTimer, "c", 3600*sec, 3600*sec, 20*sec, 0, Unknown), bounded)
		},
	}, {
		// Two updates ran at once: either may have been applied last.
		name: "two writes at once", excuse: ExSuperseded,
		build: func(bounded bool) *History {
			return alongside(t, write(3, Update, placedTimer, "c", 3600*sec, 3600*sec, 10*sec+5*ms, 10*sec+20*ms, OK), bounded)
		},
	}, {
		// The primary, the one replica that took the update (a lost
		// message kept it from the backup), crashed without storage:
		// nobody kept "b" to push to the backup.
		name: "every copy of the update lost", excuse: ExCopiesLost,
		build: func(bounded bool) *History {
			return missedUpdate(t, bounded, func(primary, backup, other string) []Fault {
				crashed := primary
				if bounded {
					crashed = other
				}
				return []Fault{{At: 12 * sec, Kind: Crash, Nodes: []string{crashed}}, {At: 13 * sec, Kind: Restart, Nodes: []string{crashed}}}
			})
		},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vs, cov := o.Judge(c.build(false))
			requireNone(t, vs)
			if cov.Excused[c.excuse] == 0 {
				t.Errorf("excused: got %v, want %s counted", cov.Excused, c.excuse)
			}
			requireHas(t, Check(c.build(true)), "G6", "still holds the definition live")
		})
	}
}

// TestEndHoldingNeedsTheFinalSnapshot shows that G6 by version judges only
// the snapshot at the history's end, which carries the definitions: one
// taken earlier (after a scale) is the placement half's.
func TestEndHoldingNeedsTheFinalSnapshot(t *testing.T) {
	h, _, backup, _ := versioned(t)
	hold(h, backup, "a")
	h.Held[0].At = h.End - time.Second
	requireNone(t, Check(h))
}
