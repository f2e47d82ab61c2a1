package checker

import (
	"slices"
	"testing"
	"time"
)

// recorded runs the checks on h and counts the excuses of every verdict
// they recorded, due or not, beside the violations.
func recorded(h *History) ([]Violation, map[Excuse]int) {
	x := newIndex(h, DefaultOptions())
	vs, _, _ := x.judge()
	n := map[Excuse]int{}
	for _, pv := range x.verdicts {
		for col, v := range pv.v {
			if pv.set[col] && v.excuse != "" {
				n[v.excuse]++
			}
		}
	}
	for _, v := range x.writeVerdicts {
		if v.excuse != "" {
			n[v.excuse]++
		}
	}
	return vs, n
}

// TestCheckExcusesAreNeededAndBounded shows, for each excuse a check
// gives by itself rather than for a fault (the exits of missing,
// checkDelivery, checkRetries and the writes' verdicts), a history it
// rightly excuses, and the same history just past the excuse's bound, or
// without the condition that grants it, failing.
func TestCheckExcusesAreNeededAndBounded(t *testing.T) {
	cases := []struct {
		excuse Excuse
		want   string // the guarantee broken past the bound
		build  func(rel bool) *History
	}{
		{ExUnknownWrite, "G2", func(rel bool) *History {
			// The create's answer was lost and no pop came: it may
			// never have taken effect. Answered OK, its pops are owed.
			h, _, _, _ := placed(t)
			h.Pops = nil
			if rel {
				h.Ops[0].Outcome, h.Ops[0].Return, h.Ops[0].Status = Unknown, 0, 0
			}
			return h
		}},
		{ExSuperseded, "G2", func(rel bool) *History {
			// A delete invoked at 4.5 s may have removed pop 5 (due at
			// 5 s) before it fell due, so its loss is excused; pop 4
			// fell due and its bound passed before the delete began,
			// so it is owed.
			h, p, _, _ := placed(t)
			h.Ops = append(h.Ops, del(2, placedTimer, 4500*ms, 4510*ms, OK))
			h.Ops[1].Node = p
			h.Pops = h.Pops[:pickInt(rel, 4, 3)]
			return h
		}},
		{ExMayReorder, "G7", func(rel bool) *History {
			// Two updates cut by a split, from proxies whose clocks
			// are apart by more than the gap between the writes, with
			// rf 2: the earlier one may win (scenarios/README.md N4),
			// so the later one's pops are not owed. With rf 3 the
			// writes share a replica, and the later one's are.
			return reorderedUpdates(pickInt(rel, 2, 3))
		}},
		{ExClockAhead, "G5", func(rel bool) *History {
			// n1's clock was stepped 10 s ahead before it took the
			// create (rf 1); n2 deletes the timer 3 s later, and n1
			// pops on: its version is above the delete's, by a step
			// larger than the gap. Stepped by 1 s, less than the gap,
			// the delete must stick.
			h := healthy()
			h.Members = []string{"n1", "n2", "n3"}
			p := Replicas(h.Members, placedTimer, 1)[0]
			other := h.Members[(slices.Index(h.Members, p)+1)%3]
			h.Ops = []Op{write(1, Create, placedTimer, "a", sec, 20*sec, sec, sec+10*ms, OK), del(2, placedTimer, 4*sec, 4*sec+10*ms, OK)}
			h.Ops[0].Spec.ReplicationFactor, h.Ops[0].Node, h.Ops[1].Node = 1, p, other
			h.Faults = []Fault{{At: 500 * ms, Kind: ClockJump, Nodes: []string{p}, Detail: pickStr(rel, "+10s", "+1s")}}
			h.Pops = pops(p, "a", 1, 19, sec)
			for i := range h.Pops {
				h.Pops[i].Timer = placedTimer
			}
			h.End, h.LivenessFrom = 25*sec, 22*sec
			return h
		}},
		{ExClockAhead, "G7", func(rel bool) *History {
			// The same judgement on the later write's pops
			// (scenarios/README.md C37): n1's clock, stepped 10 s
			// ahead, versioned a create (rf 1) that never pops
			// (repeat-for below its interval); an update through
			// another node 3 s later orders below it, last-writer-wins
			// keeps the create's finished record, and the update's
			// pop (due in the liveness phase) is not owed. Stepped by
			// 1 s, less than the gap, the update wins and its pop is
			// owed.
			h := healthy()
			h.Members = []string{"n1", "n2", "n3"}
			p := Replicas(h.Members, placedTimer, 1)[0]
			other := h.Members[(slices.Index(h.Members, p)+1)%3]
			h.Ops = []Op{write(1, Create, placedTimer, "a", 2*sec, sec, sec, sec+10*ms, OK), write(2, Update, placedTimer, "b", 20*sec, 20*sec, 4*sec, 4*sec+10*ms, OK)}
			h.Ops[0].Node, h.Ops[1].Node = p, other
			for i := range h.Ops {
				h.Ops[i].Spec.ReplicationFactor = 1
			}
			h.Faults = []Fault{{At: 500 * ms, Kind: ClockJump, Nodes: []string{p}, Detail: pickStr(rel, "+10s", "+1s")}}
			h.Pops = nil
			h.End, h.LivenessFrom = 50*sec, 22*sec
			return h
		}},
		{ExWorstRank, "G3", func(rel bool) *History {
			// A timer placed nowhere known (no members in the history)
			// with a crash around: the backup's pops at its rank 2 s
			// late are allowed at the worst rank; 3 s late is past it.
			h := healthy()
			h.Faults = []Fault{{At: 2500 * ms, Kind: Crash, Nodes: []string{"n1"}}}
			h.Pops = h.Pops[:2]
			late := time.Duration(pickInt(rel, 2, 3)) * sec
			for k := 3; k <= 5; k++ {
				h.Pops = append(h.Pops, pop(time.Duration(k)*sec+late+20*ms, "n2", "a", k))
			}
			return h
		}},
		{ExForgot, "G4", func(rel bool) *History {
			// The replica made pop 3, crashed, and made it again once
			// back: it forgot. Crashed only after its second attempt,
			// it made one pop twice.
			h := healthy()
			first := h.Pops[2]
			h.Pops = append(h.Pops[:3], pop(first.At+900*ms, "n1", "a", 3))
			h.Pops = append(h.Pops, pops("n1", "a", 4, 5, 0)...)
			crash := first.At + pickDuration(rel, 100*ms, 1500*ms)
			h.Faults = []Fault{{At: crash, Kind: Crash, Nodes: []string{"n1"}}, {At: crash + 100*ms, Kind: Restart, Nodes: []string{"n1"}}}
			return h
		}},
		{ExFault + "/write", "G5", func(rel bool) *History {
			// A delete's request to the backup is lost: the delete
			// itself is excused by that fault (the backup pops once
			// more at its rank before its notice meets the
			// tombstone). Lost for another timer, the pop is stale.
			h, p, b, _ := placed(t)
			h.Ops = append(h.Ops, del(2, placedTimer, 4500*ms, 4510*ms, OK))
			h.Ops[1].Node = p
			h.Faults = []Fault{{At: 4501 * ms, Kind: Lost, Nodes: []string{p}, Peers: []string{b}, Timer: pickTimer(rel)}}
			h.Pops = h.Pops[:4]
			s := pop(7020*ms, b, "a", 5)
			s.Timer = placedTimer
			h.Pops = append(h.Pops, s)
			return h
		}},
		{ExPastEnd, "G2", func(rel bool) *History {
			// The primary crashes after pop 9, so pop 10 is owed from
			// the backup at its rank, 2 s after due; the history ends
			// first, and its loss cannot be told. Ending after the
			// backup's turn, the loss is a violation.
			h, p, _, _ := placed(t)
			h.Faults = []Fault{{At: 9500 * ms, Kind: Crash, Nodes: []string{p}}}
			h.Pops = h.Pops[:9]
			h.End = pickDuration(rel, 10500*ms, 12500*ms)
			return h
		}},
	}
	for _, c := range cases {
		t.Run(string(c.excuse), func(t *testing.T) {
			vs, excuses := recorded(c.build(true))
			requireNone(t, vs)
			if excuses[c.excuse] == 0 {
				t.Errorf("excuse %s covered nothing: got %v", c.excuse, excuses)
			}
			requireHas(t, Check(c.build(false)), c.want)
		})
	}
}

// TestCoverageIsTheTallyOfVerdicts shows the judged coverage counts
// exactly the verdicts the checks recorded: on a history with a fault,
// the due pops' strict and excused counts per guarantee add up to the due
// pops, and a violated pop counts as neither.
func TestCoverageIsTheTallyOfVerdicts(t *testing.T) {
	h, p, b, _ := placed(t)
	h.Faults = []Fault{{At: 2500 * ms, Kind: Crash, Nodes: []string{p}}}
	handOver(h, b, 3)
	h.Pops[5].At += 5 * sec // pop 6 late past the backup's rank: G3
	vs, cov := DefaultOptions().Judge(h)
	requireHas(t, vs, "G3")
	excused := 0
	for _, n := range cov.Excused {
		excused += n
	}
	strict := cov.StrictWrites
	for _, g := range []string{"G2", "G3", "G4"} {
		strict += cov.Strict[g][Safety]
	}
	if got, want := strict+excused, 3*cov.Due[Safety]+cov.Writes-1; got != want || cov.Due[Safety] != 10 {
		t.Errorf("strict %d + excused %d = %d over %d due pops: want %d (every verdict but the violated one)",
			strict, excused, got, cov.Due[Safety], want)
	}
}

func pickInt(rel bool, a, b int) int {
	if rel {
		return a
	}
	return b
}

func pickDuration(rel bool, a, b time.Duration) time.Duration {
	if rel {
		return a
	}
	return b
}

func pickStr(rel bool, a, b string) string {
	if rel {
		return a
	}
	return b
}
