package checker

import (
	"slices"
	"testing"
	"time"
)

// toldHistory is placeHealthy's history with a crash of the primary, r0,
// just after it made pop 3 (at 3.5 s, back at 3.9 s), and the backup, r1,
// delivering pop 3 again at its own turn, 5.02 s: the crash excuses the
// duplicate (the backup may not have heard of the pop). told is r0's
// notice of pop 3, handed to r1 at 3.05 s.
func toldHistory(t *testing.T) (h *History, r0, r1 string, told Told) {
	t.Helper()
	h = healthy()
	replicas, _ := placeHealthy(h)
	r0, r1 = replicas[0], replicas[1]
	for i := range h.Pops {
		h.Pops[i].Node = r0
	}
	h.Pops = append(h.Pops, pop(5*sec+20*ms, r1, "a", 3))
	slices.SortStableFunc(h.Pops, func(a, b Pop) int { return int(a.At - b.At) })
	h.Faults = []Fault{{At: 3500 * ms, Kind: Crash, Nodes: []string{r0}}, {At: 3900 * ms, Kind: Restart, Nodes: []string{r0}}}
	told = Told{At: 3050 * ms, Sent: 3045 * ms, From: r0, Node: r1, Timer: h.Ops[0].Timer, Opaque: "a", Seq: 3}
	return h, r0, r1, told
}

// TestRecordsWordThatAPopWasMadeHoldsItsReceiver proves G4 holds a
// replica to a record's word that a pop was made (docs/design.md 4.7: a
// pop either record knows was made was made), whatever fault around the
// pop excuses its other duplicates: the backup told by the primary's
// notice that pop 3 was made and delivering it again is a violation,
// where the same history without the notice, or with a notice that marks
// pop 3 missed, that came after the backup's attempt, that its receiver
// refused, that was of another definition, or that told of pop 3 before
// it was surely due on the start it handed over (its age included: no
// progress from the future), passes. An answer to the
// backup's own record saying the pop was made (X-Chronos-Popped) holds
// it as a notice does.
func TestRecordsWordThatAPopWasMadeHoldsItsReceiver(t *testing.T) {
	h, r0, r1, told := toldHistory(t)
	requireNone(t, judgeOnly(t, h))

	h.Told = []Told{told}
	vs, cov := DefaultOptions().Judge(h)
	requireHas(t, requireOnly(t, vs, "G4"), "G4", "pop 3 delivered by "+r1, r0+"'s record (pop 3", "told it at 3.05s")
	if cov.Told == 0 {
		t.Errorf("Coverage.Told = 0, want the duplicate counted as judged by the word")
	}

	answer := told
	answer.Sent = -1
	h.Told = []Told{answer}
	requireHas(t, requireOnly(t, judgeOnly(t, h), "G4"), "G4", r0+"'s answer to its record (pop 3")

	for name, change := range map[string]func(*Told){
		"missed":             func(c *Told) { c.Missed = 1 },
		"missed below":       func(c *Told) { c.Seq, c.Missed = 4, 2 },
		"after the attempt":  func(c *Told) { c.At, c.Sent = 5*sec, 5*sec-5*ms },
		"another definition": func(c *Told) { c.Opaque = "b" },
		"another node":       func(c *Told) { c.Node = r0 },
		"below the window":   func(c *Told) { c.Seq = 3 + toldWindow },
		"not yet due":        func(c *Told) { c.At, c.Sent = 2900*ms, 2895*ms },
		"late by its age":    func(c *Told) { c.Sent = 2900 * ms },
	} {
		c := told
		change(&c)
		h.Told = []Told{c}
		if vs := judgeOnly(t, h); len(vs) != 0 {
			t.Errorf("%s: got %v, want none", name, vs)
		}
	}

	// Refused by its receiver (recorded as a lost request sent when the
	// notice was): it told nothing.
	h.Told = []Told{told}
	faults := h.Faults
	h.Faults = append(slices.Clip(faults), Fault{At: told.At, Age: told.At - told.Sent, Kind: Lost, Nodes: []string{r0}, Peers: []string{r1}, Timer: told.Timer})
	requireNone(t, judgeOnly(t, h))

	// Its own copy of the record refused at its limit, as a site's relay
	// placing another site's record records it (a lost request from the
	// node to itself, C70): it told nothing either; a refusal of another
	// request sent at another time changes nothing.
	h.Faults = append(slices.Clip(faults), Fault{At: told.At, Age: told.At - told.Sent, Kind: Lost, Nodes: []string{r1}, Peers: []string{r1}, Timer: told.Timer})
	requireNone(t, judgeOnly(t, h))
	h.Faults = append(slices.Clip(faults), Fault{At: told.At, Age: 1 * ms, Kind: Lost, Nodes: []string{r1}, Peers: []string{r1}, Timer: told.Timer})
	requireHas(t, requireOnly(t, judgeOnly(t, h), "G4"), "G4", "pop 3 delivered by "+r1)
}

// TestRecordsWordForgotten proves the excuse checkTold makes is needed
// and bounded: a backup that crashed after the notice reached it (and
// before its attempt) may have forgotten the word (forgot), unless it
// was told again after its restart, and one that crashed before the
// notice did not.
func TestRecordsWordForgotten(t *testing.T) {
	for _, after := range []bool{true, false} {
		h, _, r1, told := toldHistory(t)
		h.Told = []Told{told}
		at := told.At + 200*ms
		if !after {
			at = told.At - 200*ms
		}
		h.Faults = append(h.Faults, Fault{At: at, Kind: Crash, Nodes: []string{r1}}, Fault{At: at + 100*ms, Kind: Restart, Nodes: []string{r1}})
		slices.SortStableFunc(h.Faults, func(a, b Fault) int { return int(a.At - b.At) })
		requireExcusedElseG4(t, h, after, ExForgot, "told it at 3.05s")
		if after {
			// Told again once it restarted: that word it kept.
			again := told
			again.At, again.Sent = at+300*ms, at+295*ms
			h.Told = append(h.Told, again)
			requireHas(t, requireOnly(t, judgeOnly(t, h), "G4"), "G4", "told it at 3.55s")
		}
	}
}

// TestRecordsWordHoldsACopyKeptAway: the timer's ID is one a scale from
// three members to four moves off one replica, away, which pops it again
// after a notice reached it once the scale had begun, before or after it
// reloaded: a replica whose view places the timer elsewhere keeps the
// record as moved away, and a moved copy learns the pops a record tells
// of (node/merge.go learnMoved), so the word holds it as it holds a
// replica (scenarios/README.md N74; the excuse that allowed it, kept-away,
// is gone).
func TestRecordsWordHoldsACopyKeptAway(t *testing.T) {
	before, after := []string{"n1", "n2", "n3"}, []string{"n1", "n2", "n3", "n4"}
	var id uint64
	var stay, away string
	for c := uint64(0x0b061cf0001d7000); id == 0; c += 0x1000 {
		rb, ra := Replicas(before, c, 2), Replicas(after, c, 2)
		for i, r := range rb {
			if !slices.Contains(ra, r) && slices.Contains(ra, rb[1-i]) {
				id, away, stay = c, r, rb[1-i]
			}
		}
	}
	for _, begun := range []bool{true, false} {
		h := healthy()
		h.Members = before
		h.Ops[0].Timer, h.Ops[0].Node = id, stay
		for i := range h.Pops {
			h.Pops[i].Node = stay
		}
		h.Pops = append(h.Pops, pop(5*sec+20*ms, away, "a", 3))
		slices.SortStableFunc(h.Pops, func(a, b Pop) int { return int(a.At - b.At) })
		told := Told{At: 3050 * ms, Sent: 3045 * ms, From: stay, Node: away, Timer: id, Opaque: "a", Seq: 3}
		h.Told = []Told{told}
		start := told.At - 200*ms
		if !begun {
			start = told.At + 200*ms
		}
		h.Scales = []Scale{{Kind: ScaleUp, Start: start, Before: before, After: after, Reloaded: map[string]time.Duration{}}}
		h.Faults = []Fault{{At: start, Kind: ScaleUp, Nodes: []string{"n4"}}}
		requireHas(t, requireOnly(t, judgeOnly(t, h), "G4"), "G4", "pop 3 delivered by "+away, "told it at 3.05s")
	}
}

// judgeOnly judges h with the default options.
func judgeOnly(t *testing.T, h *History) []Violation {
	t.Helper()
	vs, _ := DefaultOptions().Judge(h)
	return vs
}

// requireExcusedElseG4 requires h to pass with e excusing a pop when
// excused is set, and else to fail G4 only, with a violation naming parts.
func requireExcusedElseG4(t *testing.T, h *History, excused bool, e Excuse, parts ...string) {
	t.Helper()
	vs, cov := DefaultOptions().Judge(h)
	if !excused {
		requireHas(t, requireOnly(t, vs, "G4"), "G4", parts...)
		return
	}
	requireNone(t, vs)
	if cov.Excused[e] == 0 {
		t.Errorf("%s excused nothing: %v", e, cov.Excused)
	}
}

// TestCallbackHeldByAPauseWasMadeBeforeIt is the shape of fresh seed
// 9564772 (scenarios/README.md C74): the backup is paused at the instant
// it takes the word that pop 3 was made, and its callback of pop 3
// arrives just after it resumes. A paused process sends nothing, so the
// callback may have been made before the pause began, before the word,
// and have left at the resume: no violation. Resumed a second before the
// callback arrived, it made the attempt after the resume, after the
// word: a violation.
func TestCallbackHeldByAPauseWasMadeBeforeIt(t *testing.T) {
	for _, resume := range []time.Duration{5 * sec, 4 * sec} {
		h, _, r1, told := toldHistory(t)
		h.Told = []Told{told}
		h.Faults = append(h.Faults, Fault{At: told.At, Kind: Pause, Nodes: []string{r1}}, Fault{At: resume, Kind: Resume, Nodes: []string{r1}})
		slices.SortStableFunc(h.Faults, func(a, b Fault) int { return int(a.At - b.At) })
		if resume == 5*sec {
			requireNone(t, judgeOnly(t, h))
		} else {
			requireHas(t, requireOnly(t, judgeOnly(t, h), "G4"), "G4", "pop 3 delivered by "+r1, "told it at 3.05s")
		}
	}
}

// TestNoticeOfAForgottenTimerIsKeptAsATombstone proves G4's rule 2 check
// (node/merge.go: a notice of a timer its receiver holds nothing of,
// whose every pop is past at every rank, is kept as a tombstone): the
// backup, cut off from the create and so holding nothing, is handed a
// stale notice of pop 5 at 20 s, when pop 10 was past every rank's turn,
// and pops 6 to 10 again from it. The duplicates fall in the cut's
// window, which excuses them as duplicates, but not as pops made of such
// a notice: a violation. Handed the notice holding a record, or before
// every pop was past at every rank, or crashed between the notice and
// the pops, the backup may have taken it, and the pops are the cut's.
func TestNoticeOfAForgottenTimerIsKeptAsATombstone(t *testing.T) {
	build := func(held bool, at time.Duration, crash bool) *History {
		h, primary, backup, _ := placed(t)
		h.End = 40 * sec
		var others []string
		for _, m := range h.Members {
			if m != backup {
				others = append(others, m)
			}
		}
		h.Faults = []Fault{{At: 0, Kind: Partition, Nodes: []string{backup}, Peers: others}, {At: at - 500*ms, Kind: Heal}}
		if crash {
			h.Faults = append(h.Faults, Fault{At: at + 5*ms, Kind: Crash, Nodes: []string{backup}}, Fault{At: at + 8*ms, Kind: Restart, Nodes: []string{backup}})
		}
		h.Told = []Told{{At: at, Sent: at - 5*ms, From: primary, Node: backup, Timer: h.Ops[0].Timer, Opaque: "a", Seq: 5, Held: held, StartDelta: -(at - 5*ms)}}
		for k := 6; k <= 10; k++ {
			p := pop(at+20*ms, backup, "a", k)
			p.Timer = h.Ops[0].Timer
			h.Pops = append(h.Pops, p)
		}
		slices.SortStableFunc(h.Pops, func(a, b Pop) int { return int(a.At - b.At) })
		return h
	}
	requireHas(t, requireOnly(t, judgeOnly(t, build(false, 20*sec, false)), "G4"), "G4", "holding no copy of the timer", "every pop of the definition was past at every rank")
	requireNone(t, judgeOnly(t, build(true, 20*sec, false)))
	requireNone(t, judgeOnly(t, build(false, 12*sec, false)))
	requireNone(t, judgeOnly(t, build(false, 20*sec, true)))
}
