package node

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/wire"

	"pgregory.net/rapid"
)

// The properties of the conflict rule, checked on merge alone: for any
// record held and any record offered, whatever the path that brought it.

var mergeNodes = []string{"10.0.0.1:7253", "10.0.0.2:7253", "10.0.0.3:7253", "10.0.0.4:7253"}

// mergeViews are the views records' writers placed them under.
var mergeViews = []uint64{100, 200, 300}

func testEnv(now int64) *mergeEnv {
	return &mergeEnv{
		self: mergeNodes[0], now: now,
		retryWindow:        2000,
		replicationTimeout: 500 * time.Millisecond,
		maxClockSkew:       DefaultMaxClockSkew.Milliseconds(),
	}
}

// drawRecord draws a record of timer 7 placed on p (as the node places
// every record it holds and every record it is offered, under its own
// view): a version out of three, each with a definition of its own (now
// and then another one, as two timers sharing an ID would have), a state
// and progress.
func drawRecord(t *rapid.T, label string, now int64, p *Placement) Timer {
	version := rapid.Uint64Range(1, 3).Draw(t, label+".version")
	interval := int64(version) * 1000
	spec := wire.Timer{Interval: time.Duration(interval) * time.Millisecond, RepeatFor: time.Duration(interval*int64(rapid.IntRange(0, 6).Draw(t, label+".pops"))) * time.Millisecond,
		URI: "http://cb.example/cb", Opaque: fmt.Sprintf("v%d", version), ReplicationFactor: 2}
	if rapid.IntRange(0, 9).Draw(t, label+".twin") == 0 {
		spec.Opaque += "-twin"
	}
	start := now - rapid.Int64Range(0, 3*interval).Draw(t, label+".age")
	seq := uint32(rapid.IntRange(0, 6).Draw(t, label+".seq"))
	rec := newTimer(7, version, spec, start, seq, p, rapid.SampledFrom(mergeViews).Draw(t, label+".view"), nil)
	switch rapid.IntRange(0, 5).Draw(t, label+".state") {
	case 0:
		rec.entomb()
	case 1:
		rec.entombAs(Moved)
	default:
		missed := rapid.Uint32Range(0, 7).Draw(t, label+".missed")
		rec.setPopMarks(missed, missed&rapid.Uint32Range(0, 7).Draw(t, label+".owed"))
	}
	return *rec
}

// held is what the replica holds after r, given it held before.
func (r mergeResult) after(before *Timer) *Timer {
	switch {
	case r.verdict == took:
		return &r.in
	case r.heldChanged:
		return &r.held
	default:
		return before
	}
}

func TestMergeProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		const now = int64(1_000_000)
		env := testEnv(now)
		first := rapid.IntRange(0, 3).Draw(t, "primary")
		second := (first + 1 + rapid.IntRange(0, 2).Draw(t, "backup")) % len(mergeNodes)
		p := &Placement{Replicas: []string{mergeNodes[first], mergeNodes[second]}}
		var held *Timer
		if rapid.Bool().Draw(t, "holds") {
			h := drawRecord(t, "held", now, p)
			settle(&h)
			held = &h
		}
		in := drawRecord(t, "in", now, p)
		r := merge(env, held, in)
		got := r.after(held)
		if r.verdict == collided && r.heldChanged {
			t.Fatalf("a collision changed the held record")
		}
		if held == nil || got == nil {
			return
		}
		if got.Version < held.Version {
			t.Fatalf("version went back from %d to %d", held.Version, got.Version)
		}
		if got.Version == held.Version && got.def == held.def {
			if got.Seq < held.Seq && got.State == Live {
				t.Fatalf("sequence went back from %d to %d", held.Seq, got.Seq)
			}
			if got.State == Live && held.State == Live && got.Start > held.Start {
				t.Fatalf("start moved later, from %d to %d", held.Start, got.Start)
			}
			if ahead := time.Duration(held.Seq+1)*held.Interval() <= held.RepeatFor(); ahead && held.State == Live && got.State != Live && in.State == Live && in.Seq == held.Seq &&
				slices.Contains(in.Placement().Replicas, env.self) {
				t.Fatalf("a live record of the held version at its sequence number buried it with pops still to come")
			}
			_, heldOwed := held.popMarks()
			_, owed := got.popMarks()
			// Owed pops at or below what the held copy reached are only
			// those it owed: one attempt per replica per pop.
			atOrBelow := owed &^ above(held.Seq, got.Seq)
			if atOrBelow&^shiftMarks(heldOwed, held.Seq, got.Seq) != 0 {
				t.Fatalf("owes pops %b at or below seq %d that the held copy (owed %b at seq %d) did not", atOrBelow, held.Seq, heldOwed, held.Seq)
			}
		}
		// Offered again, the same record changes nothing more.
		again := merge(env, got, in)
		if twice := again.after(got); !sameRecord(twice, got) {
			t.Fatalf("merging the same record twice changed it again:\n once  %s\n twice %s", describe(got), describe(twice))
		}
	})
}

// sameRecord compares what merge decides on: not the store's bookkeeping.
func sameRecord(a, b *Timer) bool {
	am, ao := a.popMarks()
	bm, bo := b.popMarks()
	return a.Version == b.Version && a.State == b.State && a.Seq == b.Seq && a.Start == b.Start &&
		a.def == b.def && a.ViewID() == b.ViewID() && am == bm && ao == bo && a.lastDue() == b.lastDue()
}

func describe(t *Timer) string {
	m, o := t.popMarks()
	return fmt.Sprintf("v%d state %d seq %d start %d view %d missed %b owed %b lastDue %d", t.Version, t.State, t.Seq, t.Start, t.ViewID(), m, o, t.lastDue())
}

// TestMovedBackOwesNoPopItMade: a replica that made pop 1, kept its copy
// as moved away (a resync placed the timer elsewhere), and is then sent
// the same definition placed back on it by a notice that says pop 1 was
// missed, does not make pop 1 again.
func TestMovedBackOwesNoPopItMade(t *testing.T) {
	const now = int64(1_000_000)
	env := testEnv(now)
	spec := wire.Timer{Interval: 2 * time.Second, RepeatFor: 2 * time.Second, URI: "http://cb.example/cb", ReplicationFactor: 3}
	// Both placed under the node's view, which places the timer on it
	// again.
	p := &Placement{Replicas: mergeNodes[:3]}
	moved := newTimer(7, 1, spec, now-6000, 1, p, mergeViews[2], nil)
	moved.entombAs(Moved)
	notice := newTimer(7, 1, spec, now-6000, 1, p, mergeViews[0], nil)
	notice.setPopMarks(1, 1)
	r := merge(env, moved, *notice)
	if r.verdict != took {
		t.Fatalf("verdict %d, want the live record taken back", r.verdict)
	}
	if p, ok := r.in.nextPop(); ok {
		t.Errorf("the copy taken back pops %d again", p)
	}
}

// TestTombstoneOfTheVersionWinsWhateverItsSequence: within one version a
// tombstone wins (rule 6) even when it carries a lower sequence number
// than the live record held, and merge's own assertions accept it (a
// fresh sweep's seed panicked on an assertion that held every record of
// the version to its sequence number, tombstones too).
func TestTombstoneOfTheVersionWinsWhateverItsSequence(t *testing.T) {
	p := &Placement{Replicas: mergeNodes[:2]}
	spec := wire.Timer{Interval: time.Second, RepeatFor: 10 * time.Second, URI: "http://cb.example/cb", ReplicationFactor: 2}
	now := int64(1_000_000)
	held := newTimer(7, 1, spec, now-6000, 5, p, mergeViews[0], nil)
	in := newTimer(7, 1, spec, now-6000, 2, p, mergeViews[0], nil)
	in.entomb()
	r := merge(testEnv(now), held, *in)
	if r.verdict != took || r.in.State != Tombstone {
		t.Fatalf("verdict %v, state %v: want the tombstone taken", r.verdict, r.in.State)
	}
}

// TestMovedCopyTakesItsDefinitionsEnd: a replica keeps its copy as moved
// away, and the definition's end (the tombstone of its version, a
// finished timer) reaches it: it takes the end, so that a stale live
// record of the same definition placed back on it (a scale that returns,
// a resync page from a copy that lagged) is not taken back (movedBack)
// to pop again what was made. Kept as moved away, it was.
func TestMovedCopyTakesItsDefinitionsEnd(t *testing.T) {
	const now = int64(1_000_000)
	env := testEnv(now)
	spec := wire.Timer{Interval: 2 * time.Second, RepeatFor: 6 * time.Second, URI: "http://cb.example/cb", ReplicationFactor: 3}
	p := &Placement{Replicas: mergeNodes[:3]}
	moved := newTimer(7, 1, spec, now-7000, 1, p, mergeViews[0], nil)
	moved.entombAs(Moved)
	end := newTimer(7, 1, spec, now-7000, 3, p, mergeViews[1], nil)
	end.entomb()
	r := merge(env, moved, *end)
	if r.verdict != took || r.in.State != Tombstone {
		t.Fatalf("the end offered to a moved copy: verdict %d, state %d; want the tombstone taken", r.verdict, r.in.State)
	}
	held := r.in
	stale := newTimer(7, 1, spec, now-7000, 1, p, mergeViews[2], nil)
	if r := merge(env, &held, *stale); r.verdict == took {
		t.Fatalf("a stale live copy of the ended definition taken back (state %d, seq %d)", r.in.State, r.in.Seq)
	}
}

// TestMovedCopyLearnsThePopsItIsToldOf is the shape of seed 443
// (scenarios/README.md N74): a node not yet reloaded for a scale that
// makes it a replica keeps a hand-off (pop 1 made) as moved away; a
// notice then tells it pops 2 and 3 were made and 4 missed. Once
// reloaded it takes the definition back from a resync page of a replica
// that lagged (pop 1, nothing missed): it owes pop 4 alone, as it never
// attempted it, and makes neither 2 nor 3 again. A moved copy that owes
// a pop (missed, never attempted here) still owes it placed back, where
// one it attempted itself before the timer moved away it does not.
func TestMovedCopyLearnsThePopsItIsToldOf(t *testing.T) {
	const now = int64(1_000_000)
	env := testEnv(now)
	spec := wire.Timer{Interval: time.Second, RepeatFor: 10 * time.Second, URI: "http://cb.example/cb", ReplicationFactor: 2}
	elsewhere := &Placement{Replicas: mergeNodes[2:4]}
	here := &Placement{Replicas: mergeNodes[:2]}
	start := now - 5500
	handOff := newTimer(7, 1, spec, start, 1, elsewhere, mergeViews[0], nil)
	r := merge(env, nil, *handOff)
	moved := r.in
	if moved.State != Moved {
		t.Fatalf("hand-off to a node that places the timer elsewhere: state %d, want moved", moved.State)
	}
	notice := newTimer(7, 1, spec, start, 4, elsewhere, mergeViews[0], nil)
	notice.setPopMarks(1, 1) // pop 4 missed
	r = merge(env, &moved, *notice)
	held := r.after(&moved)
	if held.State != Moved || held.Seq != 4 {
		t.Fatalf("moved copy told of pops 2 to 4: state %d seq %d, want moved at 4", held.State, held.Seq)
	}
	if _, owed := held.popMarks(); owed != 1 {
		t.Fatalf("moved copy owes %#b at seq 4, want pop 4 (0b1)", owed)
	}
	page := newTimer(7, 1, spec, start, 1, here, mergeViews[1], nil)
	r = merge(env, held, *page)
	if r.verdict != took || r.in.State != Live || r.in.Seq != 4 {
		t.Fatalf("placed back: verdict %d, state %d, seq %d; want the live record taken at seq 4", r.verdict, r.in.State, r.in.Seq)
	}
	if p, ok := r.in.nextPop(); !ok || p != 4 {
		t.Fatalf("placed back, the copy pops %d next (ok %v), want the owed pop 4", p, ok)
	}

	// Pop 4 in flight when the copy moved away: attempted here, so not
	// owed (one attempt per replica per pop), whatever the record that
	// places it back says.
	live := newTimer(7, 1, spec, start, 4, here, mergeViews[1], nil)
	live.setPopMarks(1, 0)
	live.entombAs(Moved)
	back := newTimer(7, 1, spec, start, 4, here, mergeViews[2], nil)
	back.setPopMarks(1, 1)
	r = merge(env, live, *back)
	if p, ok := r.in.nextPop(); r.verdict != took || ok && p <= 4 {
		t.Fatalf("placed back after its own attempt: verdict %d, pops %d next; want pop 4 not owed", r.verdict, p)
	}
}

// TestStaleNoticePlacedElsewhereIsATombstone is the shape of fresh seed
// 9615765 (scenarios/README.md N76): a node holding nothing of a timer
// is handed a notice of it, every pop past at every rank, that its view
// places on other nodes. Rule 2 keeps it as a tombstone, not a copy
// moved away: moved away, it owed the pops the notice marked missed, and
// a scale that placed the timer back here made them, late and again. A
// record of the same version placed back later meets the tombstone.
func TestStaleNoticePlacedElsewhereIsATombstone(t *testing.T) {
	const now = int64(1_000_000)
	env := testEnv(now)
	spec := wire.Timer{Interval: time.Second, RepeatFor: 5 * time.Second, URI: "http://cb.example/cb", ReplicationFactor: 2}
	elsewhere := &Placement{Replicas: mergeNodes[2:4]}
	here := &Placement{Replicas: mergeNodes[:2]}
	start := now - 40_000
	notice := newTimer(7, 1, spec, start, 5, elsewhere, mergeViews[0], nil)
	notice.setPopMarks(3, 3) // pops 4 and 5 missed
	r := merge(env, nil, *notice)
	if r.verdict != took || r.in.State != Tombstone {
		t.Fatalf("stale notice placed elsewhere: verdict %d, state %d; want a tombstone taken", r.verdict, r.in.State)
	}
	held := r.in
	back := newTimer(7, 1, spec, start, 5, here, mergeViews[1], nil)
	back.setPopMarks(3, 3)
	if r := merge(env, &held, *back); r.verdict == took {
		t.Fatalf("the definition placed back over the tombstone: state %d, seq %d; want it kept out", r.in.State, r.in.Seq)
	}
}

// TestMovedCopyLearnsTheEarliestStart: a node whose view is not yet
// reloaded for a scale keeps the hand-offs it is sent as moved copies. The
// first comes from a replica that took the write late (its start late by
// the hold), the second from the replica that took it on time. Once
// reloaded, the node takes the definition back from a resync page that
// carries the late start again: it pops at the earliest start its moved
// copy learnt, not late by the hold for the rest of the timer's life
// (scenarios/README.md N32).
func TestMovedCopyLearnsTheEarliestStart(t *testing.T) {
	const now = int64(1_000_000)
	env := testEnv(now)
	spec := wire.Timer{Interval: time.Hour, RepeatFor: 2 * time.Hour, URI: "http://cb.example/cb", ReplicationFactor: 2}
	elsewhere := &Placement{Replicas: mergeNodes[2:4]}
	here := &Placement{Replicas: mergeNodes[:2]}
	const onTime, late = now - 6000, now - 4000
	moved := newTimer(7, 1, spec, late, 0, elsewhere, mergeViews[0], nil)
	moved.entombAs(Moved)
	r := merge(env, moved, *newTimer(7, 1, spec, onTime, 0, elsewhere, mergeViews[0], nil))
	held := r.after(moved)
	if held.State != Moved || held.Start != onTime {
		t.Fatalf("moved copy offered the earlier start: state %d start %d, want moved at %d", held.State, held.Start, onTime)
	}
	back := newTimer(7, 1, spec, late, 0, here, mergeViews[1], nil)
	r = merge(env, held, *back)
	if r.verdict != took || r.in.State != Live {
		t.Fatalf("placed back: verdict %d, state %d; want the live record taken", r.verdict, r.in.State)
	}
	if r.in.Start != onTime {
		t.Errorf("taken back with start %d, want the earliest, %d (late by %d ms)", r.in.Start, onTime, r.in.Start-onTime)
	}
}

// TestMovedBackKeepsThePopsItsCopyKnew: a scale moved a timer off this
// node after its copy had reached pop 2, and a later scale moves it back;
// the live record that brings it back comes from a replica that knows
// only pop 1 (it missed the notice of pop 2). The node takes the record
// back at the sequence its moved copy knew, so it does not make pop 2
// again, and it owes none of the pops its copy had reached, whatever the
// sender says it missed. (movedBack and keepProgress both carry the
// sequence: the test holds the behaviour, not one of the two.)
func TestMovedBackKeepsThePopsItsCopyKnew(t *testing.T) {
	const now = int64(1_000_000)
	spec := wire.Timer{Interval: time.Second, RepeatFor: 5 * time.Second, URI: "http://cb.example/cb", ReplicationFactor: 3}
	p := &Placement{Replicas: mergeNodes[:3]}
	moved := newTimer(7, 1, spec, now-2500, 2, p, mergeViews[0], nil)
	moved.entombAs(Moved)
	back := newTimer(7, 1, spec, now-2500, 1, p, mergeViews[1], nil)
	back.setPopMarks(0b1, 0b1) // pop 2 missed there, and owed
	r := merge(testEnv(now), moved, *back)
	if r.verdict != took || r.in.State != Live {
		t.Fatalf("moved back: verdict %d, state %d; want the live record taken", r.verdict, r.in.State)
	}
	if next, ok := r.in.nextPop(); r.in.Seq != 2 || !ok || next != 3 {
		t.Errorf("taken at sequence %d, next pop %d (%v); want 2 and pop 3 next", r.in.Seq, next, ok)
	}
	if missed, owed := r.in.popMarks(); owed != 0 {
		t.Errorf("owes %b (missed %b); want nothing of the pops its moved copy had reached", owed, missed)
	}
}

// TestRetryAheadOwesNoPopOfTheFirstTry: a replica popped pop 1 of a
// client write's first try; the proxy's retry of the write (another
// version, the same definition and start) reaches it ahead, in the
// notice of a replica that says pops 1 and 2 were missed there. The two
// versions are one write: the replica owes pop 2, which it has not
// attempted, and not pop 1, which it made (nor does it tell of pop 1 as
// missed); a pop it owes under the first try it still owes. A write it
// only remembers (a concurrent write replaced the first try) counts as
// attempted up to the pops it remembers.
func TestRetryAheadOwesNoPopOfTheFirstTry(t *testing.T) {
	const now = int64(1_000_000)
	p := &Placement{Replicas: mergeNodes[:3]}
	spec := wire.Timer{Interval: time.Second, RepeatFor: 2 * time.Second, URI: "http://cb.example/cb", ReplicationFactor: 3}
	other := spec
	other.Opaque = "concurrent"
	retry := func() Timer {
		in := newTimer(7, 3, spec, now-2490, 2, p, mergeViews[0], nil)
		in.setPopMarks(0b11, 0b11)
		return *in
	}
	for _, tc := range []struct {
		name                 string
		held                 *Timer
		wantMissed, wantOwed uint32
	}{
		{"first try made pop 1", newTimer(7, 1, spec, now-2500, 1, p, mergeViews[0], nil), 0b01, 0b01},
		{"first try owes pop 1", func() *Timer {
			h := newTimer(7, 1, spec, now-2500, 1, p, mergeViews[0], nil)
			h.setPopMarks(1, 1)
			return h
		}(), 0b11, 0b11},
		{"first try remembered", func() *Timer {
			h := newTimer(7, 2, other, now-2000, 0, p, mergeViews[0], nil)
			first := newTimer(7, 1, spec, now-2500, 1, p, mergeViews[0], nil)
			h.replaced(first.progress())
			return h
		}(), 0b11, 0b01},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := merge(testEnv(now), tc.held, retry())
			if r.verdict != took {
				t.Fatalf("verdict %d, want the retry taken", r.verdict)
			}
			if missed, owed := r.in.popMarks(); r.in.Seq != 2 || missed != tc.wantMissed || owed != tc.wantOwed {
				t.Errorf("retry taken at sequence %d, missed %b, owed %b; want 2, %b, %b", r.in.Seq, missed, owed, tc.wantMissed, tc.wantOwed)
			}
		})
	}
}

// TestRetryBehindKeepsThisReplicasMarks: a replica popped pops 1 and 2
// of a client write's first try; the proxy's retry of the write (another
// version, the same definition and start) reaches it behind, at pop 1,
// from a replica whose callback of pop 1 failed, so it tells of pop 1 as
// missed. The retry takes the first try's pops, and with them this
// replica's marks: a pop it attempted is not owed (its callback still in
// flight it stays missed, so that no notice tells of it as made before
// it is), and a pop the sender made is made. A write it only remembers
// counts as attempted and made up to the pops it remembers. Seed 1501905
// (scenarios/README.md N45): the retry's marks were the sender's, and
// the replica popped pop 1 again while its first callback was in flight.
func TestRetryBehindKeepsThisReplicasMarks(t *testing.T) {
	const now = int64(1_000_000)
	p := &Placement{Replicas: mergeNodes[:3]}
	spec := wire.Timer{Interval: time.Second, RepeatFor: 4 * time.Second, URI: "http://cb.example/cb", ReplicationFactor: 3}
	other := spec
	other.Opaque = "concurrent"
	first := func(missed, owed uint32) *Timer {
		h := newTimer(7, 1, spec, now-2500, 2, p, mergeViews[0], nil)
		h.setPopMarks(missed, owed)
		return h
	}
	for _, tc := range []struct {
		name                 string
		held                 *Timer
		senderMissed         uint32 // the retry's missed marks at its pop 1
		wantMissed, wantOwed uint32
	}{
		{"callbacks of the first try in flight", first(0b11, 0), 1, 0b11, 0},
		{"the first try made both pops", first(0, 0), 1, 0, 0},
		{"the first try owes pop 1", first(0b10, 0b10), 1, 0b10, 0b10},
		{"the sender made pop 1", first(0b11, 0), 0, 0b01, 0},
		{"the first try remembered", func() *Timer {
			h := newTimer(7, 2, other, now-2000, 0, p, mergeViews[0], nil)
			h.replaced(first(0, 0).progress())
			return h
		}(), 1, 0b10, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			retry := newTimer(7, 3, spec, now-2490, 1, p, mergeViews[0], nil)
			retry.setPopMarks(tc.senderMissed, tc.senderMissed)
			r := merge(testEnv(now), tc.held, *retry)
			if r.verdict != took {
				t.Fatalf("verdict %d, want the retry taken", r.verdict)
			}
			if missed, owed := r.in.popMarks(); r.in.Seq != 2 || missed != tc.wantMissed || owed != tc.wantOwed {
				t.Errorf("retry taken at sequence %d, missed %b, owed %b; want 2, %b, %b", r.in.Seq, missed, owed, tc.wantMissed, tc.wantOwed)
			}
		})
	}
}

// TestRetryAboveARetryDoesNotPopAgain: two client writes of one timer
// race, each retried above the other. The replica popped the first
// write's one-shot, and the second write replaced it, remembering that
// pop; the second write's own retry then replaces the second write, and
// must pass the memory on, or the first write's retry, landing last,
// pops again what was popped.
func TestRetryAboveARetryDoesNotPopAgain(t *testing.T) {
	const now = int64(1_000_000)
	env := testEnv(now)
	p := &Placement{Replicas: mergeNodes[:3]}
	first := wire.Timer{URI: "http://cb.example/cb", Opaque: "first", ReplicationFactor: 3}
	second := first
	second.Opaque = "second"
	popped := newTimer(7, 1, first, now-40, 1, p, mergeViews[0], nil)
	popped.entomb()
	held := *popped
	for i, w := range []struct {
		spec  wire.Timer
		start int64
	}{{second, now - 30}, {second, now - 20}, {first, now - 10}} {
		r := merge(env, &held, *newTimer(7, uint64(i+2), w.spec, w.start, 0, p, mergeViews[0], nil))
		if r.verdict != took {
			t.Fatalf("write %d (%s): verdict %d, want it taken", i+2, w.spec.Opaque, r.verdict)
		}
		held = r.in
	}
	if pop, ok := held.nextPop(); ok {
		t.Errorf("the first write's retry, landing last: pops %d again", pop)
	}
}

// TestRetriesOfThreeRacingWritesDoNotPopAgain: three client writes of
// one timer race through three proxies, each retried above the others'
// versions. The replica popped the first write's one-shot, then the
// second's; the third write's retry replaced the second, and the first
// and second writes' retries land last: each must find the pop it made
// remembered, though two other definitions were written between.
func TestRetriesOfThreeRacingWritesDoNotPopAgain(t *testing.T) {
	const now = int64(1_000_000)
	env := testEnv(now)
	p := &Placement{Replicas: mergeNodes[:3]}
	spec := func(opaque string) wire.Timer {
		return wire.Timer{URI: "http://cb.example/cb", Opaque: opaque, ReplicationFactor: 3}
	}
	offer := func(held *Timer, version uint64, opaque string, start int64, seq uint32) Timer {
		t.Helper()
		in := newTimer(7, version, spec(opaque), start, seq, p, mergeViews[0], nil)
		if seq > 0 {
			in.entomb() // a one-shot's pop notice
		}
		r := merge(env, held, *in)
		if r.verdict != took {
			t.Fatalf("version %d (%s): verdict %d, want it taken", version, opaque, r.verdict)
		}
		return r.in
	}
	held := offer(nil, 1, "first", now-50, 1)
	held = offer(&held, 2, "second", now-40, 1)
	held = offer(&held, 3, "third", now-30, 0)
	for i, w := range []string{"first", "second"} {
		held = offer(&held, uint64(4+i), w, now-20+int64(i), 0)
		if pop, ok := held.nextPop(); ok {
			t.Errorf("the %s write's retry, landing after the third write: pops %d again", w, pop)
		}
	}
}

// TestLackingMarkSurvivesANoticeTaken: a replica that knows a later
// replica may lack the timer (TimerExtra.Lacking) keeps knowing it when
// it takes a pop notice of the same definition that carries no mark,
// and learns the marks a notice carries: the mark is what keeps it from
// shedding a pop nobody would make after it. Taken with the notice, it
// was lost, and the proxy shed every pop (scenarios/README.md N29).
func TestLackingMarkSurvivesANoticeTaken(t *testing.T) {
	const now = int64(1_000_000)
	p := &Placement{Replicas: mergeNodes[:3]}
	spec := wire.Timer{Interval: time.Second, RepeatFor: 10 * time.Second, URI: "http://cb.example/cb", ReplicationFactor: 3}
	held := newTimer(7, 1, spec, now-1500, 0, p, mergeViews[0], nil)
	held.setLacking(1 << 2)
	notice := newTimer(7, 1, spec, now-1500, 1, p, mergeViews[0], nil)
	r := merge(testEnv(now), held, *notice)
	if r.verdict != took || r.in.lacking() != 1<<2 {
		t.Fatalf("notice taken: verdict %d, lacking %b; want it taken with lacking %b", r.verdict, r.in.lacking(), 1<<2)
	}

	unmarked := newTimer(7, 1, spec, now-1500, 1, p, mergeViews[0], nil)
	marked := newTimer(7, 1, spec, now-1500, 1, p, mergeViews[0], nil)
	marked.setLacking(1 << 1)
	r = merge(testEnv(now), unmarked, *marked)
	if got := r.after(unmarked).lacking(); got != 1<<1 || !r.heldChanged {
		t.Fatalf("a notice of the held sequence marking a replica: lacking %b (held changed %v); want %b", got, r.heldChanged, 1<<1)
	}
}

// TestTriesWithStartsAStepApartAreOneWrite: a replica popped pop 1 of a
// client write's try; another try of the write (a version the same proxy
// issued 45 ms later on its clock) reaches it by another road, its start
// rebuilt on nodes whose clocks stepped meanwhile, seconds after the
// held one's, and in a pop notice of a try it made, older than the one
// it holds. The tries are one write, told by their versions: the replica
// does not pop pop 1 again, whichever it holds. A version of the same
// definition from another node, or from the same node minutes later, with
// the start as far off, is a write of its own and starts over.
func TestTriesWithStartsAStepApartAreOneWrite(t *testing.T) {
	const now = int64(1_000_000)
	env := testEnv(now)
	p := &Placement{Replicas: mergeNodes[:3]}
	spec := wire.Timer{Interval: 15 * time.Second, RepeatFor: 30 * time.Second, URI: "http://cb.example/cb", Opaque: "x", ReplicationFactor: 3}
	const issued = int64(500_000)
	first := versionAt(5, issued)
	popped := func() *Timer { return newTimer(7, first, spec, now-15_500, 1, p, mergeViews[0], nil) }
	for _, tc := range []struct {
		name    string
		version uint64
		wantSeq uint32
	}{
		{"the proxy's retry", versionAt(5, issued+45), 1},
		{"another proxy's write", versionAt(6, issued+45), 0},
		{"the proxy's write minutes later", versionAt(5, issued+180_000), 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			later := newTimer(7, tc.version, spec, now-15_500+3_165, 0, p, mergeViews[0], nil)
			r := merge(env, popped(), *later)
			if r.verdict != took {
				t.Fatalf("verdict %d, want the later version taken", r.verdict)
			}
			if r.in.Seq != tc.wantSeq {
				t.Errorf("taken at sequence %d, want %d", r.in.Seq, tc.wantSeq)
			}
			// The other order: the later version is held when the pop
			// notice of the earlier one arrives.
			held := *newTimer(7, tc.version, spec, now-15_500+3_165, 0, p, mergeViews[0], nil)
			r = merge(env, &held, *popped())
			if r.verdict != older {
				t.Fatalf("the earlier try's notice: verdict %d, want older", r.verdict)
			}
			if got := r.after(&held).Seq; got != tc.wantSeq {
				t.Errorf("after the earlier try's notice: held at sequence %d, want %d", got, tc.wantSeq)
			}
		})
	}
}

// TestRetryIsOneWriteWhateverTheClocks: a proxy's write met a newer
// version and was written again above it, so the retry's version is
// dated by that version (2.2 s after the first try's), and this replica's
// clock was stepped between the tries, so the retry's start, rebuilt on
// arrival, is 3.4 s after the first try's. Neither starts nor versions
// tell the tries as one write; the retry's name of its first try does,
// in both orders, and without it they are two writes.
func TestRetryIsOneWriteWhateverTheClocks(t *testing.T) {
	const now = int64(1_000_000)
	env := testEnv(now)
	p := &Placement{Replicas: mergeNodes[:2]}
	spec := wire.Timer{Interval: 2 * time.Second, RepeatFor: 8 * time.Second, URI: "http://cb.example/cb", Opaque: "x", ReplicationFactor: 2}
	const issued = int64(500_000)
	first, retryVersion := versionAt(4, issued), versionAt(4, issued+2_200)
	popped := func() *Timer { return newTimer(7, first, spec, now-4_500, 2, p, mergeViews[0], nil) }
	retry := func(named bool) *Timer {
		r := newTimer(7, retryVersion, spec, now-4_500+3_400, 0, p, mergeViews[0], nil)
		if named {
			r.setFirstTry(first)
		}
		return r
	}
	for _, tc := range []struct {
		name    string
		named   bool
		wantSeq uint32
	}{
		{"the retry names its first try", true, 2},
		{"a write that names none", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := merge(env, popped(), *retry(tc.named))
			if r.verdict != took {
				t.Fatalf("verdict %d, want the retry taken", r.verdict)
			}
			if r.in.Seq != tc.wantSeq {
				t.Errorf("retry taken at sequence %d, want %d", r.in.Seq, tc.wantSeq)
			}
			if got := r.in.firstTry(); tc.named && got != first {
				t.Errorf("retry taken naming first try %d, want %d", got, first)
			}
			// The other order: the retry is held when the pop notice of
			// the first try arrives.
			held := *retry(tc.named)
			r = merge(env, &held, *popped())
			if r.verdict != older {
				t.Fatalf("the first try's notice: verdict %d, want older", r.verdict)
			}
			if got := r.after(&held).Seq; got != tc.wantSeq {
				t.Errorf("after the first try's notice: held at sequence %d, want %d", got, tc.wantSeq)
			}
		})
	}
}

// versionAt is the first version a node of instance number instance
// issues at ms past the ID epoch on its clock.
func versionAt(instance uint64, ms int64) uint64 {
	g := newIDGen(instance, 0)
	v, _ := g.next(idEpochMs + ms)
	return v
}

// TestProgressFromFarAheadDropsMarksOutsideTheWindow: a live record from
// a clock that ran far ahead is taken with the pops that can be due here
// (fromFuture), more than a window of marks behind the sequence number
// it told of. Its marks told of pops it says it missed far ahead, none
// of which is a pop at or below the sequence number taken: they are
// dropped, so this replica neither makes again nor tells as missed a pop
// that nobody missed.
func TestProgressFromFarAheadDropsMarksOutsideTheWindow(t *testing.T) {
	const now = int64(1_000_000)
	p := &Placement{Replicas: mergeNodes[:2]}
	spec := wire.Timer{Interval: time.Second, RepeatFor: 100 * time.Second, URI: "http://cb.example/cb", ReplicationFactor: 2}
	in := newTimer(7, 1, spec, now, MissedWindow+10, p, mergeViews[0], nil)
	in.setPopMarks(0b101, 0b001)
	r := merge(testEnv(now), nil, *in)
	want := uint32(DefaultMaxClockSkew / time.Second)
	if missed, owed := r.in.popMarks(); r.verdict != took || r.in.Seq != want || missed != 0 || owed != 0 {
		t.Fatalf("verdict %d, sequence %d, missed %b, owed %b; want taken at %d with no marks", r.verdict, r.in.Seq, missed, owed, want)
	}
}

// TestLiveCopyTakenKeepsTheSitesItsForwardMissed: a replica marked the
// sites its forward of a definition missed (SitesLacking, known only
// here); a record of the same definition further on taken over its copy
// keeps the marks, so the replica still forwards to those sites.
func TestLiveCopyTakenKeepsTheSitesItsForwardMissed(t *testing.T) {
	const now = int64(1_000_000)
	p := &Placement{Replicas: mergeNodes[:2]}
	spec := wire.Timer{Interval: time.Second, RepeatFor: 10 * time.Second, URI: "http://cb.example/cb", ReplicationFactor: 2}
	held := newTimer(7, 1, spec, now-3500, 2, p, mergeViews[0], nil)
	held.setSitesLacking(0b10)
	in := newTimer(7, 1, spec, now-3500, 3, p, mergeViews[0], nil)
	r := merge(testEnv(now), held, *in)
	if r.verdict != took || r.in.sitesLacking() != 0b10 {
		t.Fatalf("verdict %d, sites lacking %b; want the pop taken with sites %b", r.verdict, r.in.sitesLacking(), 0b10)
	}
}

// TestHeldCopyLearnsTheFirstTryItsPeerNames: two copies of one version
// meet, the held one not naming the client write's first try and the
// offered one naming it. The copy held learns it, so that a later try of
// the same write, dated too far apart to tell otherwise, is still known
// as that write (sameWrite by name) and pops nothing again.
func TestHeldCopyLearnsTheFirstTryItsPeerNames(t *testing.T) {
	const now = int64(1_000_000)
	p := &Placement{Replicas: mergeNodes[:2]}
	spec := wire.Timer{Interval: time.Second, RepeatFor: 10 * time.Second, URI: "http://cb.example/cb", ReplicationFactor: 2}
	held := newTimer(7, 5, spec, now-3500, 2, p, mergeViews[0], nil)
	in := newTimer(7, 5, spec, now-3500, 2, p, mergeViews[0], nil)
	in.setFirstTry(3)
	r := merge(testEnv(now), held, *in)
	if got := r.after(held).firstTry(); got != 3 {
		t.Fatalf("verdict %d: the copy held names first try %d, want 3", r.verdict, got)
	}
}

// TestAboveCoversEveryMarkPastTheWindow: the marks above a sequence
// number a window or more below are every mark (bit i is pop seq-i, each
// above from), as they are one short of it.
func TestAboveCoversEveryMarkPastTheWindow(t *testing.T) {
	for _, tc := range []struct{ from, seq, want uint32 }{
		{5, 5, 0},
		{5, 6, 1},
		{1, MissedWindow, 1<<(MissedWindow-1) - 1},
		{0, MissedWindow, ^uint32(0)},
		{3, 3 + 2*MissedWindow, ^uint32(0)},
	} {
		if got := above(tc.from, tc.seq); got != tc.want {
			t.Errorf("above(%d, %d) = %b, want %b", tc.from, tc.seq, got, tc.want)
		}
	}
}

// TestNewWriteWhoseHashCollidesStartsOver: a client's new write of
// another definition whose 32-bit definition hash happens to equal the
// held one's (a different interval) is not a retry of it, however close
// together they were written: it starts over, and takes none of the
// pops the held definition made.
func TestNewWriteWhoseHashCollidesStartsOver(t *testing.T) {
	const now = int64(1_000_000)
	p := &Placement{Replicas: mergeNodes[:2]}
	spec := wire.Timer{Interval: time.Second, RepeatFor: 10 * time.Second, URI: "http://cb.example/cb", ReplicationFactor: 2}
	held := newTimer(7, versionAt(1, now-3500), spec, now-3500, 3, p, mergeViews[0], nil)
	other := spec
	other.Interval = 2 * time.Second
	in := newTimer(7, versionAt(1, now-3400), other, now-3400, 0, p, mergeViews[0], nil)
	in.def = held.def
	r := merge(testEnv(now), held, *in)
	if r.verdict != took || r.in.Seq != 0 || r.in.Start != now-3400 {
		t.Fatalf("verdict %d, sequence %d, start %d; want the new write taken at 0 from %d", r.verdict, r.in.Seq, r.in.Start, now-3400)
	}
}

// TestLateNoticeDoesNotLowerTheProgressRemembered: a replica popped pops
// 1 to 4 of a client write's first try, their callbacks still in flight,
// when a concurrent write of another definition replaced it, remembering
// the first try at pop 4. Notices of the first try's pops 1 and 3, which
// another replica sent before this one had popped as far, arrive after,
// older than the record held; the write's retry, written again above the
// concurrent one, lands last. What a replica remembers of one write only
// goes forward: each late notice took the place of what it remembered,
// and the retry, taken at pop 3, popped pop 4 again. Seed 9425636
// (scenarios/README.md N70): so the proxy's retry had a replica
// pop pops 4 and 5 of the first try a second time.
func TestLateNoticeDoesNotLowerTheProgressRemembered(t *testing.T) {
	const now = int64(1_000_000)
	env, p, spec, other := replacedWriteSetup(now)
	start := now - 4500
	first := newTimer(7, 1, spec, start, 4, p, mergeViews[0], nil)
	first.setPopMarks(0b1111, 0) // every callback in flight
	r := merge(env, first, *newTimer(7, 2, other, now-100, 0, p, mergeViews[0], nil))
	if r.verdict != took {
		t.Fatalf("concurrent write: verdict %d, want it taken", r.verdict)
	}
	held := r.in
	for _, seq := range []uint32{1, 3} {
		notice := newTimer(7, 1, spec, start, seq, p, mergeViews[0], nil)
		notice.setPopMarks(1, 1)
		r = merge(env, &held, *notice)
		if r.verdict != older {
			t.Fatalf("late notice of pop %d: verdict %d, want it older", seq, r.verdict)
		}
		held = *r.after(&held)
		if got, ok := held.remembered(env.retryWindow, first); !ok || got.Seq != 4 {
			t.Fatalf("after a late notice of pop %d: remembered %+v (%v), want the first try at pop 4", seq, got, ok)
		}
	}
	retry := newTimer(7, 3, spec, start, 0, p, mergeViews[0], nil) // the proxy's write again
	retry.setFirstTry(1)
	r = merge(env, &held, *retry)
	if r.verdict != took {
		t.Fatalf("retry: verdict %d, want it taken", r.verdict)
	}
	if pop, ok := r.in.nextPop(); ok && pop <= 4 {
		t.Errorf("the retry, landing after the late notices: pops %d again (taken at sequence %d)", pop, r.in.Seq)
	}
}

// TestLateNoticeOfAnotherWriteKeepsTheProgressRemembered: what a replica
// remembers is kept per client write, not per definition. The same
// definition written twice, as two client writes 20 s apart, is two
// writes: the replica popped pops 1 to 3 of the second when a concurrent
// write of another definition replaced it. A late notice of the first
// write's last pop, 5, older than the record held, is remembered beside
// it, not in its place: kept as the definition's only memory, it took
// the place of the second write's, and the second write's retry, which
// is not the first write, found nothing of its own and popped 1 to 3
// again (mutation replaced-one-per-definition).
func TestLateNoticeOfAnotherWriteKeepsTheProgressRemembered(t *testing.T) {
	const now = int64(1_000_000)
	env, p, spec, other := replacedWriteSetup(now)
	earlier := newTimer(7, versionAt(1, now-25000), spec, now-25000, 5, p, mergeViews[0], nil)
	second := newTimer(7, versionAt(1, now-3500), spec, now-3500, 3, p, mergeViews[0], nil)
	r := merge(env, second, *newTimer(7, versionAt(2, now-100), other, now-100, 0, p, mergeViews[0], nil))
	if r.verdict != took {
		t.Fatalf("concurrent write: verdict %d, want it taken", r.verdict)
	}
	held := r.in
	r = merge(env, &held, *earlier)
	if r.verdict != older {
		t.Fatalf("late notice of the first write: verdict %d, want it older", r.verdict)
	}
	held = *r.after(&held)
	retry := newTimer(7, versionAt(1, now), spec, now-3500, 0, p, mergeViews[0], nil) // the second write again
	retry.setFirstTry(second.Version)
	r = merge(env, &held, *retry)
	if r.verdict != took {
		t.Fatalf("retry: verdict %d, want it taken", r.verdict)
	}
	if pop, ok := r.in.nextPop(); ok && pop <= 3 {
		t.Errorf("the second write's retry, after a late notice of the first write: pops %d again (taken at sequence %d)", pop, r.in.Seq)
	}
}

// replacedWriteSetup is what the tests of a replaced write's memory
// share: a merge environment at now, three replicas, a timer of five
// pops of 1 s, and a concurrent write of another definition.
func replacedWriteSetup(now int64) (env *mergeEnv, p *Placement, spec, other wire.Timer) {
	spec = wire.Timer{Interval: time.Second, RepeatFor: 5 * time.Second, URI: "http://cb.example/cb", ReplicationFactor: 3}
	other = spec
	other.Opaque = "concurrent"
	return testEnv(now), &Placement{Replicas: mergeNodes[:3]}, spec, other
}
