package node

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

const storeHourMs = 3600 * 1000

// storeBase is a block-aligned wall time in 2023, so that tests can name
// bucket boundaries as offsets from it.
const storeBase = int64(1_700_000_000_000) &^ fineMask

// storeModel is the trivially correct reference: a map, sorted when asked.
type storeModel struct {
	timers  map[uint64]*Timer
	dues    map[uint64]int64
	lastNow int64
}

func (m *storeModel) put(t *Timer, due int64) {
	m.timers[t.ID] = t
	m.dues[t.ID] = due
}

func (m *storeModel) remove(id uint64) {
	delete(m.timers, id)
	delete(m.dues, id)
}

// due returns the IDs due at or before now.
func (m *storeModel) due(now int64) []uint64 {
	var ids []uint64
	for id, d := range m.dues {
		if d <= now {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

func (m *storeModel) minDue() (int64, bool) {
	first, ok := int64(0), false
	for _, d := range m.dues {
		if !ok || d < first {
			first, ok = d, true
		}
	}
	return first, ok
}

// checkPop pops at now from both and compares them.
func (m *storeModel) checkPop(t rapid.TB, s *Store, now int64) int {
	t.Helper()
	got := s.PopDue(now, nil)
	want := m.due(now)
	var ids []uint64
	for i, tm := range got {
		ids = append(ids, tm.ID)
		if tm.Due() > now {
			t.Fatalf("PopDue(%d) returned timer %d due %d: early", now, tm.ID, tm.Due())
		}
		if i > 0 && tm.Due() < got[i-1].Due() {
			t.Fatalf("PopDue(%d) order: due %d after %d, want nondecreasing", now, tm.Due(), got[i-1].Due())
		}
		if m.timers[tm.ID] != tm || m.dues[tm.ID] != tm.Due() {
			t.Fatalf("PopDue(%d) returned timer %d (%p) due %d, want %p due %d",
				now, tm.ID, tm, tm.Due(), m.timers[tm.ID], m.dues[tm.ID])
		}
	}
	slices.Sort(ids)
	if !slices.Equal(ids, want) {
		t.Fatalf("PopDue(%d) popped %v, want %v", now, ids, want)
	}
	for _, id := range want {
		m.remove(id)
	}
	m.lastNow = now
	return len(got)
}

// checkAgree compares Len, NextDue and, for a sample of IDs, Get.
func (m *storeModel) checkAgree(t rapid.TB, s *Store) {
	t.Helper()
	if s.Len() != len(m.timers) {
		t.Fatalf("Len() = %d, want %d", s.Len(), len(m.timers))
	}
	got, ok := s.NextDue()
	first, want := m.minDue()
	if ok != want {
		t.Fatalf("NextDue() ok = %t, want %t", ok, want)
	}
	if ok && got > first {
		t.Fatalf("NextDue() = %d, want at most the earliest due %d", got, first)
	}
	if ok && first > m.lastNow && got <= m.lastNow {
		t.Fatalf("NextDue() = %d, want after last PopDue's now %d (earliest due %d): no progress",
			got, m.lastNow, first)
	}
	for id, tm := range m.timers {
		if g := s.Get(id); g != tm || g.Due() != m.dues[id] {
			t.Fatalf("Get(%d) = %p, want %p due %d", id, g, tm, m.dues[id])
		}
	}
}

// drawStoreDue draws a due time around now, favouring the edges of blocks
// and of the coarse range, and reaching from the past to hours ahead.
func drawStoreDue(t *rapid.T, now int64) int64 {
	edge := rapid.Int64Range(-1, 1).Draw(t, "edge")
	switch rapid.IntRange(0, 4).Draw(t, "dueKind") {
	case 0:
		return now + rapid.Int64Range(-3000, 3000).Draw(t, "near")
	case 1:
		return (now>>fineBits+rapid.Int64Range(-2, 4).Draw(t, "block"))<<fineBits + edge
	case 2:
		return (now>>fineBits+coarseSlots+rapid.Int64Range(-2, 2).Draw(t, "block"))<<fineBits + edge
	case 3:
		return now + edge
	default:
		return now + rapid.Int64Range(-2*storeHourMs, 3*storeHourMs).Draw(t, "far")
	}
}

// drawStoreStep draws how far the clock moves: small and large steps
// forward, exact blocks, and jumps backwards on either side of the rebuild
// threshold.
func drawStoreStep(t *rapid.T) int64 {
	switch rapid.IntRange(0, 5).Draw(t, "stepKind") {
	case 0:
		return rapid.Int64Range(0, 5).Draw(t, "small")
	case 1:
		return rapid.Int64Range(0, 5000).Draw(t, "medium")
	case 2:
		return rapid.Int64Range(1, 3).Draw(t, "blocks") * fineSlots
	case 3:
		return rapid.Int64Range(0, 3*storeHourMs).Draw(t, "large")
	case 4:
		return -rapid.Int64Range(1, 2*rebuildBackMs).Draw(t, "back")
	default:
		return -rapid.Int64Range(0, 2*storeHourMs).Draw(t, "farBack")
	}
}

func TestStoreModel(t *testing.T) {
	// Proves the store matches a map-plus-sort reference under random puts
	// (new and held IDs, other timers under held IDs, dues from the past to
	// hours ahead and on bucket edges), removes, gets and pops with time
	// moving in small and large steps and jumping back: same timers popped
	// per call, in due order, never early, Len/Get/NextDue agreeing, and
	// NextDue always making progress.
	rapid.Check(t, func(t *rapid.T) {
		now := rapid.OneOf(rapid.Int64Range(-5000, 5000),
			rapid.Int64Range(storeBase-3000, storeBase+3000)).Draw(t, "start")
		s := NewStore(now)
		m := &storeModel{timers: map[uint64]*Timer{}, dues: map[uint64]int64{}, lastNow: now}
		id := rapid.Uint64Range(1, 40)
		actions := map[string]func(*rapid.T){
			"put": func(t *rapid.T) {
				tm := m.timers[id.Draw(t, "id")]
				if tm == nil {
					tm = &Timer{ID: id.Draw(t, "newID")}
					if m.timers[tm.ID] != nil {
						tm = m.timers[tm.ID]
					}
				}
				due := drawStoreDue(t, m.lastNow)
				s.Put(tm, due)
				m.put(tm, due)
			},
			"putOther": func(t *rapid.T) {
				tm := &Timer{ID: id.Draw(t, "id")}
				due := drawStoreDue(t, m.lastNow)
				s.Put(tm, due)
				m.put(tm, due)
			},
			"burst": func(t *rapid.T) {
				for range rapid.IntRange(1, 60).Draw(t, "count") {
					tm := &Timer{ID: rapid.Uint64Range(100, 600).Draw(t, "burstID")}
					due := drawStoreDue(t, m.lastNow)
					s.Put(tm, due)
					m.put(tm, due)
				}
			},
			"remove": func(t *rapid.T) {
				i := id.Draw(t, "id")
				if len(m.timers) > 0 && rapid.Bool().Draw(t, "held") {
					i = rapid.SampledFrom(slices.Sorted(maps.Keys(m.timers))).Draw(t, "heldID")
				}
				if got := s.Remove(i); got != m.timers[i] {
					t.Fatalf("Remove(%d) = %p, want %p", i, got, m.timers[i])
				}
				m.remove(i)
			},
			"pop": func(t *rapid.T) {
				m.checkPop(t, s, m.lastNow+drawStoreStep(t))
			},
			"alarm": func(t *rapid.T) {
				if at, ok := s.NextDue(); ok {
					m.checkPop(t, s, at)
				}
			},
			"ascend": func(t *rapid.T) {
				from := int64(math.MinInt64)
				if rapid.Bool().Draw(t, "fromSome") {
					from = drawStoreDue(t, m.lastNow)
				}
				checkStoreAscend(t, s, m, from, rapid.IntRange(0, 50).Draw(t, "stopAfter"))
			},
			"each": func(t *rapid.T) {
				checkStoreEach(t, s, m)
			},
			"": func(t *rapid.T) {
				m.checkAgree(t, s)
				checkStoreInvariants(t, s)
			},
		}
		// Repeat runs about 30 actions; a few rounds reach deeper states.
		for range 8 {
			t.Repeat(actions)
		}
		checkStoreDrains(t, s, m)
	})
}

// checkStoreInvariants checks the wheel's structure: every timer sits in
// the tier and bucket its due time selects, its slot says so, the bitmaps
// mark exactly the busy buckets, the heaps are heaps, and all tiers
// together hold exactly the timers by ID.
func checkStoreInvariants(t rapid.TB, s *Store) {
	t.Helper()
	held := 0
	for _, l := range []*level{&s.fine, &s.coarse} {
		for i, h := range l.head {
			busy := l.bits[i>>6]&(1<<(i&63)) != 0
			if (h != nil) != busy || (l.bits[i>>6] != 0) != (l.sum&(1<<(i>>6)) != 0) {
				t.Fatalf("bucket %d of level %d: head %p, bit %t, sum %b", i, l.slot0, h, busy, l.sum)
			}
			for tm := h; tm != nil; tm = tm.next {
				held++
				if tm.next != nil && tm.next.prev != tm || tm == h && tm.prev != nil {
					t.Fatalf("timer %d: broken links in bucket %d", tm.ID, i)
				}
				checkStoreTier(t, s, tm, l.slot0+int32(i))
			}
		}
	}
	for _, h := range []*timerHeap{&s.overdue, &s.far} {
		for k, tm := range h.ts {
			held++
			if k > 0 && h.ts[(k-1)/2].due > tm.due {
				t.Fatalf("heap %d: index %d due %d below parent due %d", h.tag, k, tm.due, h.ts[(k-1)/2].due)
			}
			checkStoreTier(t, s, tm, h.tag-2*int32(k))
		}
	}
	if held != s.Len() {
		t.Fatalf("tiers hold %d timers, want Len() = %d", held, s.Len())
	}
}

// checkStoreTier checks that tm is held, at slot, as its due selects.
func checkStoreTier(t rapid.TB, s *Store, tm *Timer, slot int32) {
	t.Helper()
	d, b, nb := tm.due, tm.due>>fineBits, s.next>>fineBits
	var ok bool
	switch {
	case d < s.next:
		ok = slot < 0 && slot&1 != 0 // the overdue heap
	case b == nb:
		ok = slot == 1+int32(d&fineMask)
	case b-nb < coarseSlots:
		ok = slot == coarseSlot0+int32(b&coarseMask)
	default:
		ok = slot < 0 && slot&1 == 0 // the far heap
	}
	if tm.slot != slot || !ok || s.byID.get(tm.ID) != tm {
		t.Fatalf("timer %d due %d (next %d): slot %d found at slot %d, held %t; want the tier its due selects",
			tm.ID, d, s.next, tm.slot, slot, s.byID.get(tm.ID) == tm)
	}
}

// checkStoreAscend checks that AscendFrom visits the model's timers due
// from from on in (due, ID) order and stops after stopAfter of them.
func checkStoreAscend(t rapid.TB, s *Store, m *storeModel, from int64, stopAfter int) {
	t.Helper()
	var want []*Timer
	for _, tm := range m.timers {
		if tm.Due() >= from {
			want = append(want, tm)
		}
	}
	slices.SortFunc(want, func(a, b *Timer) int {
		return cmp.Or(cmp.Compare(a.Due(), b.Due()), cmp.Compare(a.ID, b.ID))
	})
	if stopAfter < len(want) {
		want = want[:stopAfter+1]
	}
	var got []*Timer
	s.AscendFrom(from, func(tm *Timer) bool {
		got = append(got, tm)
		return len(got) <= stopAfter
	})
	if !slices.Equal(got, want) {
		t.Fatalf("Ascend visited %v, want %v", storeTimerList(got), storeTimerList(want))
	}
}

// checkStoreEach checks that Each visits every timer of the model once.
func checkStoreEach(t rapid.TB, s *Store, m *storeModel) {
	t.Helper()
	var want, got []uint64
	for _, tm := range m.timers {
		want = append(want, tm.ID)
	}
	s.Each(func(tm *Timer) { got = append(got, tm.ID) })
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("Each visited %v, want %v", got, want)
	}
}

// checkStoreDrains follows NextDue like the node's alarm until the store
// is empty, and checks that no alarm is wasted twice in a row: each either
// pops or enters the block of a timer, which makes the next one exact.
func checkStoreDrains(t rapid.TB, s *Store, m *storeModel) {
	t.Helper()
	limit := 2*s.Len() + 2
	for steps := 0; s.Len() > 0; steps++ {
		if steps > limit {
			t.Fatalf("draining took more than %d alarms, %d timers left", limit, s.Len())
		}
		at, _ := s.NextDue()
		m.checkPop(t, s, at)
		m.checkAgree(t, s)
	}
}

func storeTimerList(ts []*Timer) string {
	out := ""
	for _, t := range ts {
		out += fmt.Sprintf(" %d@%d", t.ID, t.Due())
	}
	return "[" + out + " ]"
}

// storePopIDs pops at now and returns the IDs, checking due order and that
// nothing is early.
func storePopIDs(t *testing.T, s *Store, now int64) []uint64 {
	t.Helper()
	var ids []uint64
	got := s.PopDue(now, nil)
	for i, tm := range got {
		if tm.Due() > now || i > 0 && tm.Due() < got[i-1].Due() {
			t.Fatalf("PopDue(%d) = %s, want due order and nothing after %d", now, storeTimerList(got), now)
		}
		ids = append(ids, tm.ID)
	}
	return ids
}

func wantStorePop(t *testing.T, s *Store, now int64, want ...uint64) {
	t.Helper()
	if got := storePopIDs(t, s, now); !slices.Equal(got, want) {
		t.Fatalf("PopDue(%d) popped %v, want %v", now, got, want)
	}
}

func wantStoreNextDue(t *testing.T, s *Store, want int64) {
	t.Helper()
	if got, ok := s.NextDue(); !ok || got != want {
		t.Fatalf("NextDue() = %d, %t, want %d, true", got, ok, want)
	}
}

func TestStoreEmpty(t *testing.T) {
	// Proves an empty store answers every query with nothing, and that
	// popping an empty store across years is harmless.
	s := NewStore(storeBase)
	if at, ok := s.NextDue(); ok {
		t.Fatalf("NextDue() = %d, true, want false", at)
	}
	if s.Get(1) != nil || s.Remove(1) != nil || s.Len() != 0 {
		t.Fatalf("Get, Remove, Len = %v, %v, %d, want nil, nil, 0", s.Get(1), s.Remove(1), s.Len())
	}
	wantStorePop(t, s, storeBase+10*365*24*storeHourMs)
	s.Ascend(func(tm *Timer) bool {
		t.Fatalf("Ascend visited %d, want nothing", tm.ID)
		return false
	})
}

func TestStoreBucketBoundaries(t *testing.T) {
	// Proves timers on the edges of fine buckets, blocks and the coarse
	// range pop exactly at their due time, not a millisecond before, and
	// that NextDue is exact within the current block.
	s := NewStore(storeBase)
	coarseEnd := storeBase + coarseSlots*fineSlots
	dues := []int64{
		storeBase + 1, storeBase + fineMask, storeBase + fineSlots, storeBase + fineSlots + 1,
		storeBase + 2*fineSlots - 1, storeBase + 2*fineSlots,
		coarseEnd - fineSlots - 1, coarseEnd - fineSlots, coarseEnd - 1, coarseEnd, coarseEnd + 1,
	}
	for i, d := range dues {
		s.Put(&Timer{ID: uint64(i + 1)}, d)
	}
	wantStoreNextDue(t, s, storeBase+1)
	for i, d := range dues {
		wantStorePop(t, s, d-1)
		wantStorePop(t, s, d, uint64(i+1))
		if at, ok := s.NextDue(); ok && (at <= d || i+1 < len(dues) && at > dues[i+1]) {
			t.Fatalf("after popping %d: NextDue() = %d, want in (%d, next due]", d, at, d)
		}
	}
	if s.Len() != 0 {
		t.Fatalf("Len() = %d, want 0", s.Len())
	}
}

func TestStoreCascadeCoarseToFine(t *testing.T) {
	// Proves a timer beyond the current block waits in coarse: NextDue
	// gives its block's start (early but progressing), an alarm there
	// cascades it into fine without popping it, and NextDue is then exact.
	s := NewStore(storeBase + 10)
	due := storeBase + 3*fineSlots + 517
	s.Put(&Timer{ID: 7}, due)
	wantStoreNextDue(t, s, storeBase+3*fineSlots)
	wantStorePop(t, s, storeBase+3*fineSlots)
	wantStoreNextDue(t, s, due)
	wantStorePop(t, s, due-1)
	wantStorePop(t, s, due, 7)
}

func TestStoreCascadeFromFar(t *testing.T) {
	// Proves timers beyond the coarse range (over an hour ahead) come back
	// through the wheel in order, whether time creeps up on them or jumps
	// past several at once.
	s := NewStore(storeBase)
	s.Put(&Timer{ID: 1}, storeBase+3*storeHourMs)
	s.Put(&Timer{ID: 2}, storeBase+5*storeHourMs+1)
	s.Put(&Timer{ID: 3}, storeBase+5*storeHourMs)
	s.Put(&Timer{ID: 4}, storeBase+9*storeHourMs)
	wantStoreNextDue(t, s, storeBase+3*storeHourMs)
	wantStorePop(t, s, storeBase+2*storeHourMs)
	if at, _ := s.NextDue(); at > storeBase+3*storeHourMs || at <= storeBase+2*storeHourMs {
		t.Fatalf("NextDue() = %d, want in (%d, %d]", at, storeBase+2*storeHourMs, storeBase+3*storeHourMs)
	}
	wantStorePop(t, s, storeBase+3*storeHourMs-1)
	wantStorePop(t, s, storeBase+3*storeHourMs, 1)
	wantStorePop(t, s, storeBase+6*storeHourMs, 3, 2)
	wantStorePop(t, s, storeBase+9*storeHourMs-1)
	wantStoreNextDue(t, s, storeBase+9*storeHourMs)
	wantStorePop(t, s, storeBase+9*storeHourMs, 4)
}

func TestStoreOverdue(t *testing.T) {
	// Proves timers put in the past pop on the next PopDue, in due order and
	// before timers still in the wheel, and that NextDue names the oldest.
	s := NewStore(storeBase)
	wantStorePop(t, s, storeBase+5000)
	now := storeBase + 5000
	s.Put(&Timer{ID: 1}, now)
	s.Put(&Timer{ID: 2}, now-100)
	s.Put(&Timer{ID: 3}, now-5)
	s.Put(&Timer{ID: 4}, now+1)
	s.Put(&Timer{ID: 5}, now-3*storeHourMs)
	wantStoreNextDue(t, s, now-3*storeHourMs)
	wantStorePop(t, s, now, 5, 2, 3, 1)
	wantStoreNextDue(t, s, now+1)
	wantStorePop(t, s, now+1, 4)
}

func TestStoreBackwardJump(t *testing.T) {
	// Proves a clock jumping back never pops early: a small jump keeps the
	// wheel and holds timers put in the gap in the overdue heap, a large one
	// rebuilds the wheel; both keep due order and NextDue progress.
	for _, back := range []int64{2, 500, rebuildBackMs, rebuildBackMs + 1, 2 * storeHourMs} {
		t.Run(fmt.Sprint(back), func(t *testing.T) {
			now := storeBase + 7*storeHourMs + 300
			s := NewStore(storeBase)
			s.Put(&Timer{ID: 1}, now+10)
			s.Put(&Timer{ID: 2}, now+5000)
			s.Put(&Timer{ID: 3}, now+2*storeHourMs)
			wantStorePop(t, s, now)
			past := now - back
			wantStorePop(t, s, past)
			gap := &Timer{ID: 4}
			s.Put(gap, past+1)
			// A small jump keeps the wheel, so the gap is overdue; a large
			// one rebuilds it around past, so the gap is in the wheel.
			if inWheel, rebuilt := gap.slot > 0, back > rebuildBackMs; inWheel != rebuilt {
				t.Fatalf("timer put in the gap: in wheel %t (slot %d), want %t", inWheel, gap.slot, rebuilt)
			}
			s.Put(&Timer{ID: 5}, past)
			s.Put(&Timer{ID: 6}, past+back/2+1)
			wantStoreNextDue(t, s, past)
			wantStorePop(t, s, past, 5)
			wantStoreNextDue(t, s, past+1)
			wantStorePop(t, s, past+1, 4)
			if at, _ := s.NextDue(); at <= past+1 || at > past+back/2+1 {
				t.Fatalf("NextDue() = %d, want in (%d, %d]", at, past+1, past+back/2+1)
			}
			wantStorePop(t, s, past+back/2)
			wantStorePop(t, s, past+back/2+1, 6)
			wantStorePop(t, s, now+9)
			wantStorePop(t, s, now+10, 1)
			wantStorePop(t, s, now+3*storeHourMs, 2, 3)
		})
	}
}

func TestStoreRePutAcrossTiers(t *testing.T) {
	// Proves moving a held timer from any tier (overdue, fine, coarse, far)
	// to any other leaves exactly one copy, popping only at the new due.
	now := storeBase + 100
	tiers := map[string]int64{
		"overdue": now - 50, "fine": now + 20, "coarse": now + 10*fineSlots, "far": now + 2*storeHourMs,
	}
	for from, fromDue := range tiers {
		for to, toDue := range tiers {
			t.Run(from+"To"+to, func(t *testing.T) {
				s := NewStore(now)
				s.Put(&Timer{ID: 2}, now+30)
				tm := &Timer{ID: 1}
				s.Put(tm, fromDue)
				s.Put(tm, toDue)
				if s.Len() != 2 || s.Get(1) != tm || tm.Due() != toDue {
					t.Fatalf("Len, Get(1), Due = %d, %p, %d, want 2, %p, %d", s.Len(), s.Get(1), tm.Due(), tm, toDue)
				}
				n := 0
				s.Ascend(func(*Timer) bool { n++; return true })
				if n != 2 {
					t.Fatalf("Ascend visited %d timers, want 2", n)
				}
				for _, got := range s.PopDue(toDue-1, nil) {
					if got == tm {
						t.Fatalf("PopDue(%d) popped timer 1 due %d: early", toDue-1, toDue)
					}
				}
				if got := storePopIDs(t, s, toDue); !slices.Contains(got, 1) {
					t.Fatalf("PopDue(%d) popped %v, want timer 1 among them", toDue, got)
				}
				wantStorePop(t, s, now+3*storeHourMs, []uint64{2}[:s.Len()]...)
			})
		}
	}
}

func TestStoreReplacesOtherTimerWithSameID(t *testing.T) {
	// Proves putting a different *Timer under a held ID drops the old one:
	// only the new one is held, visited and popped.
	s := NewStore(storeBase)
	old, repl := &Timer{ID: 9}, &Timer{ID: 9}
	s.Put(old, storeBase+10)
	s.Put(repl, storeBase+5000)
	if s.Len() != 1 || s.Get(9) != repl {
		t.Fatalf("Len, Get(9) = %d, %p, want 1, %p", s.Len(), s.Get(9), repl)
	}
	got := s.PopDue(storeBase+storeHourMs, nil)
	if len(got) != 1 || got[0] != repl {
		t.Fatalf("PopDue popped %s, want only the replacement", storeTimerList(got))
	}
}

func TestStoreLongGaps(t *testing.T) {
	// Proves the alarm loop crosses decades of sparse timers in a few steps
	// per timer: advancing skips empty buckets and blocks instead of walking
	// them (a walk of every block would not finish this test).
	s := NewStore(storeBase)
	const n = 200
	for i := range n {
		s.Put(&Timer{ID: uint64(i + 1)}, storeBase+int64(i)*int64(i)*37*storeHourMs+int64(i))
	}
	m := &storeModel{timers: map[uint64]*Timer{}, dues: map[uint64]int64{}, lastNow: storeBase}
	s.Ascend(func(tm *Timer) bool { m.put(tm, tm.Due()); return true })
	checkStoreDrains(t, s, m)
}

func TestStoreAscend(t *testing.T) {
	// Proves Ascend visits timers of every tier in (due, ID) order, stops
	// when asked, and panics if the callback modifies the store.
	s := NewStore(storeBase)
	wantStorePop(t, s, storeBase+2000)
	dues := []int64{storeBase + 2*storeHourMs, storeBase - 1, storeBase + 2500, storeBase + 9000,
		storeBase + 2500, storeBase + coarseSlots*fineSlots + 4000, storeBase + 2001}
	for i, d := range dues {
		s.Put(&Timer{ID: uint64(10 - i)}, d)
	}
	var got []uint64
	s.Ascend(func(tm *Timer) bool { got = append(got, tm.ID); return true })
	if want := []uint64{9, 4, 6, 8, 7, 5, 10}; !slices.Equal(got, want) {
		t.Fatalf("Ascend visited %v, want %v", got, want)
	}
	got = got[:0]
	s.Ascend(func(tm *Timer) bool { got = append(got, tm.ID); return len(got) < 3 })
	if want := []uint64{9, 4, 6}; !slices.Equal(got, want) {
		t.Fatalf("Ascend with stop visited %v, want %v", got, want)
	}
	defer func() {
		if recover() == nil {
			t.Fatalf("Ascend with a modifying callback did not panic, want a panic")
		}
	}()
	s.Ascend(func(tm *Timer) bool { s.Remove(tm.ID); return true })
}

func TestStoreDeterministic(t *testing.T) {
	// Proves the pop order of ties depends only on the calls made, not on
	// map iteration order, even across a rebuild (determinism contract).
	run := func() []uint64 {
		s := NewStore(storeBase)
		for i := range 300 {
			s.Put(&Timer{ID: uint64(i*7919%1000 + 1)}, storeBase+int64(i%5)*storeHourMs/2)
		}
		ids := storePopIDs(t, s, storeBase)
		wantStorePop(t, s, storeBase-storeHourMs)
		return append(ids, storePopIDs(t, s, storeBase+3*storeHourMs)...)
	}
	first := run()
	for range 5 {
		if got := run(); !slices.Equal(got, first) {
			t.Fatalf("pop order %v, want the first run's %v", got, first)
		}
	}
}
