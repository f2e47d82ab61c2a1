package node

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// The store is a hierarchical timing wheel (docs/design.md section 5: O(1)
// insert, update and delete, never early, p99 lateness within 10 ms).
//
// Time is cut into blocks of fineSlots milliseconds. Let next be the first
// millisecond not yet popped through. Every held timer sits in exactly one
// tier, chosen by its due time d alone:
//
//	overdue  d < next                         min-heap (put in the past)
//	fine     block(d) == block(next)           one bucket per millisecond
//	coarse   block(next) < block(d) < +4096    one bucket per block, ~70 min
//	far      beyond coarse                     min-heap
//
// Powers of two keep bucket arithmetic to shifts and masks. Entering a block
// cascades its coarse bucket into fine, and moves far timers that came
// within coarse range; two-level bitmaps of busy buckets let PopDue and
// NextDue skip empty stretches, so advancing by hours costs the number of
// busy blocks, not the number of milliseconds.
const (
	fineBits    = 10
	fineSlots   = 1 << fineBits
	fineMask    = fineSlots - 1
	coarseBits  = 12
	coarseSlots = 1 << coarseBits
	coarseMask  = coarseSlots - 1

	// rebuildBackMs is the largest backward clock jump absorbed by the
	// overdue heap. A larger one rebuilds the wheel around the new time, so
	// that the wheel, not the O(log n) heap, takes the timers of the
	// following hour; jumps are rare, and small ones cost nothing.
	rebuildBackMs = fineSlots

	// Timer.slot encodes where a held timer sits: 1+i for fine bucket i,
	// 1+fineSlots+j for coarse bucket j, overdueTag-2k and farTag-2k for
	// index k of a heap (odd and even negative numbers), 0 when not held.
	coarseSlot0 = 1 + fineSlots
	overdueTag  = -1
	farTag      = -2
	maxHeapLen  = math.MaxInt32 / 2
)

// Store holds a node's timers by ID, in pop order. It is not safe for
// concurrent use; the node is single-threaded.
type Store struct {
	byID idIndex
	// next is the first millisecond not yet popped through. It only moves
	// forward, except when a large backward clock jump rebuilds the wheel.
	next    int64
	fine    level
	coarse  level
	overdue timerHeap
	far     timerHeap
	// mods counts changes, so that Ascend can catch an fn that modifies.
	mods uint64
	// changed, if set, is told the ID of every timer put, removed or
	// popped (the node's persistence, persist.go).
	changed func(id uint64)
}

// NewStore returns an empty store whose wheel starts at now (ms).
func NewStore(now int64) *Store {
	return &Store{
		next:    now + 1,
		fine:    newLevel(fineSlots, 1),
		coarse:  newLevel(coarseSlots, coarseSlot0),
		overdue: timerHeap{tag: overdueTag},
		far:     timerHeap{tag: farTag},
	}
}

// KeyIndex keys the hash the store finds timers by ID with from seed
// (idIndex): a node keys it from its Config.Seed, so that IDs a client
// chooses cannot be chosen to collide. It must be called while the store
// is empty.
func (s *Store) KeyIndex(seed uint64) { s.byID.keyed(seed) }

// Len returns the number of timers held.
func (s *Store) Len() int { return s.byID.len() }

// Get returns the timer with the given ID, or nil.
func (s *Store) Get(id uint64) *Timer { return s.byID.get(id) }

// Put inserts t due at due (ms), or moves it there if it is already held. A
// different timer held under t.ID is removed first. due may be in the past:
// the timer then pops on the next PopDue whose now reaches it.
func (s *Store) Put(t *Timer, due int64) {
	if old := s.byID.set(t); old != nil {
		s.unlink(old)
	}
	t.due = due
	s.place(t)
	s.mods++
	if s.changed != nil {
		s.changed(t.ID)
	}
}

// Remove removes and returns the timer with the given ID, or nil.
func (s *Store) Remove(id uint64) *Timer {
	t := s.byID.remove(id)
	if t == nil {
		return nil
	}
	s.unlink(t)
	s.mods++
	if s.changed != nil {
		s.changed(id)
	}
	return t
}

// PopDue removes every timer due at or before now and appends them to buf
// in nondecreasing due order. now may be earlier than in the previous call
// (the clock jumped backwards); timers are still never returned early.
func (s *Store) PopDue(now int64, buf []*Timer) []*Timer {
	if now == math.MaxInt64 {
		storeBug("PopDue at the end of time %d", now)
	}
	// Overdue timers are all due before next, so before any wheel timer.
	for t := s.overdue.top(); t != nil && t.due <= now; t = s.overdue.top() {
		s.overdue.remove(0)
		buf = s.popped(t, now, buf)
	}
	if now >= s.next {
		buf = s.advance(now, buf)
	} else if now < s.next-1-rebuildBackMs {
		s.rebuild(now + 1)
	}
	s.mods++ // even popping nothing may cascade
	return buf
}

// NextDue returns a time at which to call PopDue next, and false iff the
// store is empty. The time is at most the earliest due held, and later
// than the last PopDue's now whenever every timer is due later than that
// (so an alarm armed at it always makes progress). It is exact unless the
// earliest timer is more than one block (about a second) ahead, in which
// case it is the start of that timer's block.
func (s *Store) NextDue() (int64, bool) {
	if t := s.overdue.top(); t != nil {
		return t.due, true
	}
	if s.fine.sum != 0 {
		i := s.fine.next(int(s.next & fineMask))
		if i < 0 {
			storeBug("fine timers before next %d", s.next)
		}
		return s.next&^fineMask + int64(i), true
	}
	if s.coarse.sum != 0 {
		return s.nextBusyBlock() << fineBits, true
	}
	if t := s.far.top(); t != nil {
		return t.due, true
	}
	return 0, false
}

// Ascend calls fn for each timer in nondecreasing due order (ties by ID)
// until fn returns false. fn must not modify the store.
func (s *Store) Ascend(fn func(*Timer) bool) { s.AscendFrom(math.MinInt64, fn) }

// AscendFrom is Ascend over the timers due at or after from only, so that
// resync can page by due time: wheel timers before from or after fn stops
// cost nothing, heap timers (overdue or over an hour ahead) a filter.
func (s *Store) AscendFrom(from int64, fn func(*Timer) bool) {
	mods := s.mods
	var scratch []*Timer
	visit := func(ts []*Timer) bool {
		scratch = ts[:0]
		slices.SortFunc(ts, byDueThenID)
		for _, t := range ts {
			if t.due < from {
				continue
			}
			more := fn(t)
			if s.mods != mods {
				storeBug("Ascend callback modified the store")
			}
			if !more {
				return false
			}
		}
		return true
	}
	if from < s.next && !visit(appendDueFrom(scratch, s.overdue.ts, from)) {
		return
	}
	base := s.next &^ fineMask
	if from <= base+fineMask {
		i0 := 0
		if from > base { // from-base would overflow for a from far back
			i0 = int(from - base)
		}
		for i := s.fine.next(i0); i >= 0; i = s.fine.after(i) {
			if !visit(appendListFrom(scratch, s.fine.head[i], from)) {
				return
			}
		}
	}
	// Coarse buckets hold blocks in circular order from the one after
	// next's (bucket wrap); visit from from's block to the wrap.
	cur := s.next >> fineBits
	if first := max(from>>fineBits, cur+1); first-cur < coarseSlots {
		start, wrap := int(first&coarseMask), int((cur+1)&coarseMask)
		ranges := [][2]int{{start, coarseSlots}, {0, wrap}}
		if start < wrap {
			ranges = ranges[:1]
			ranges[0][1] = wrap
		}
		for _, r := range ranges {
			for i := s.coarse.next(r[0]); i >= 0 && i < r[1]; i = s.coarse.after(i) {
				if !visit(appendListFrom(scratch, s.coarse.head[i], from)) {
					return
				}
			}
		}
	}
	visit(appendDueFrom(scratch, s.far.ts, from))
}

// Each calls fn for every timer held, once each, in the order the tiers
// hold them: a function of the store's history, so deterministic, but
// not pop order. For a caller that only sums what it visits or orders
// what it keeps itself (repair's digests and lists, heldFor), it spares
// AscendFrom's sort of every bucket; most of a walk's cost is reaching
// the records, scattered in memory, either way (BenchmarkStoreScan).
// fn must not change the store.
func (s *Store) Each(fn func(*Timer)) {
	mods := s.mods
	visit := func(t *Timer) {
		fn(t)
		if s.mods != mods {
			storeBug("Each callback modified the store")
		}
	}
	for _, t := range s.overdue.ts {
		visit(t)
	}
	for _, l := range []*level{&s.fine, &s.coarse} {
		for i := l.next(0); i >= 0; i = l.after(i) {
			for t := l.head[i]; t != nil; t = t.next {
				visit(t)
			}
		}
	}
	for _, t := range s.far.ts {
		visit(t)
	}
}

// place files t (not held by any tier) into the tier its due time selects.
func (s *Store) place(t *Timer) {
	d := t.due
	if d < s.next {
		s.overdue.push(t)
		return
	}
	b, nb := d>>fineBits, s.next>>fineBits
	switch {
	case b == nb:
		s.fine.push(int(d&fineMask), t)
	case b-nb < coarseSlots:
		s.coarse.push(int(b&coarseMask), t)
	default:
		s.far.push(t)
	}
}

// unlink takes t out of the tier it sits in, leaving it in byID.
func (s *Store) unlink(t *Timer) {
	switch k := t.slot; {
	case k >= coarseSlot0:
		s.coarse.unlink(int(k-coarseSlot0), t)
	case k > 0:
		s.fine.unlink(int(k-1), t)
	case k < 0 && k&1 != 0:
		s.overdue.remove(s.overdue.index(t))
	case k < 0:
		s.far.remove(s.far.index(t))
	default:
		storeBug("timer %d held but slot 0", t.ID)
	}
	t.slot = 0
}

// popped finishes popping t, which a tier has already let go of.
func (s *Store) popped(t *Timer, now int64, buf []*Timer) []*Timer {
	if t.due > now {
		storeBug("timer %d due %d popped early at %d", t.ID, t.due, now)
	}
	t.prev, t.next, t.slot = nil, nil, 0
	s.byID.remove(t.ID)
	if s.changed != nil {
		s.changed(t.ID)
	}
	return append(buf, t)
}

// advance pops everything due up to now >= next and moves next past now.
func (s *Store) advance(now int64, buf []*Timer) []*Timer {
	for s.next <= now {
		end := s.next | fineMask
		if now < end {
			buf = s.popFine(now, buf)
			s.next = now + 1
			return buf
		}
		buf = s.popFine(end, buf)
		// Skip the empty blocks, but stop at now's so that its coarse
		// bucket cascades before any later Put lands in fine.
		s.enterBlock(min(s.nextBusyBlock(), (now+1)>>fineBits))
	}
	return buf
}

// popFine pops the fine buckets from next up to end, in next's block.
func (s *Store) popFine(end int64, buf []*Timer) []*Timer {
	base := s.next &^ fineMask
	for i := s.fine.next(int(s.next & fineMask)); i >= 0 && base+int64(i) <= end; i = s.fine.after(i) {
		for t := s.fine.take(i); t != nil; {
			n := t.next
			buf = s.popped(t, end, buf)
			t = n
		}
	}
	return buf
}

// nextBusyBlock returns the first block after next's holding a coarse or
// far timer, or a block beyond all time.
func (s *Store) nextBusyBlock() int64 {
	cur := s.next >> fineBits
	if s.coarse.sum != 0 {
		from := int((cur + 1) & coarseMask)
		i := s.coarse.next(from)
		if i < 0 {
			i = s.coarse.next(0)
		}
		return cur + 1 + int64((i-from)&coarseMask)
	}
	if t := s.far.top(); t != nil {
		return t.due >> fineBits
	}
	return math.MaxInt64 >> fineBits
}

// enterBlock moves next to the start of block b, which no coarse or far
// timer precedes, once fine is empty: far timers now within coarse range
// move to coarse, and b's coarse bucket cascades into fine.
func (s *Store) enterBlock(b int64) {
	if s.fine.sum != 0 || b <= s.next>>fineBits {
		storeBug("entering block %d from next %d with fine busy %t", b, s.next, s.fine.sum != 0)
	}
	s.next = b << fineBits
	for t := s.far.top(); t != nil && t.due>>fineBits-b < coarseSlots; t = s.far.top() {
		s.far.remove(0)
		s.place(t)
	}
	for t := s.coarse.take(int(b & coarseMask)); t != nil; {
		n := t.next
		if t.due>>fineBits != b {
			storeBug("timer %d due %d in coarse bucket of block %d", t.ID, t.due, b)
		}
		s.place(t)
		t = n
	}
}

// rebuild refiles every timer around a new next, after the clock jumped
// back. It walks the tiers, not byID, so that tie order stays independent
// of map iteration order (determinism contract).
func (s *Store) rebuild(next int64) {
	all := make([]*Timer, 0, s.byID.len())
	all = append(all, s.overdue.ts...)
	all = append(all, s.far.ts...)
	for _, l := range []*level{&s.fine, &s.coarse} {
		for i := l.next(0); i >= 0; i = l.after(i) {
			all = appendList(all, l.take(i))
		}
	}
	clear(s.overdue.ts)
	clear(s.far.ts)
	s.overdue.ts, s.far.ts = s.overdue.ts[:0], s.far.ts[:0]
	s.next = next
	for _, t := range all {
		s.place(t)
	}
}

// appendDueFrom appends the timers of ts due at or after from.
func appendDueFrom(dst, ts []*Timer, from int64) []*Timer {
	for _, t := range ts {
		if t.due >= from {
			dst = append(dst, t)
		}
	}
	return dst
}

// appendList appends the timers of the list starting at h.
func appendList(ts []*Timer, h *Timer) []*Timer {
	for t := h; t != nil; t = t.next {
		ts = append(ts, t)
	}
	return ts
}

// appendListFrom appends the timers of the list starting at h that are
// due at or after from: a page that starts inside a bucket sorts only
// the part it can use (resync pages the store by due time).
func appendListFrom(ts []*Timer, h *Timer, from int64) []*Timer {
	for t := h; t != nil; t = t.next {
		if t.due >= from {
			ts = append(ts, t)
		}
	}
	return ts
}

func byDueThenID(a, b *Timer) int {
	if a.due != b.due {
		if a.due < b.due {
			return -1
		}
		return 1
	}
	if a.ID != b.ID {
		if a.ID < b.ID {
			return -1
		}
		return 1
	}
	return 0
}

// storeBug panics on a broken store invariant, with the values that broke
// it (assertions stay on: a corrupt wheel must not limp on).
func storeBug(format string, args ...any) {
	panic(fmt.Sprintf("node: store: "+format, args...))
}

// level is one wheel: per bucket, the head of a doubly linked list threaded
// through the timers (so unlinking is O(1)), and a bitmap of busy buckets
// with a summary word of busy bitmap words, so that finding the next busy
// bucket takes two trailing-zero counts (at most 64 words of 64 buckets).
type level struct {
	head  []*Timer
	bits  []uint64
	sum   uint64
	slot0 int32
}

func newLevel(n int, slot0 int32) level {
	return level{head: make([]*Timer, n), bits: make([]uint64, n/64), slot0: slot0}
}

// push adds t at the head of bucket i: ties may pop in any order.
func (l *level) push(i int, t *Timer) {
	h := l.head[i]
	t.prev, t.next = nil, h
	if h != nil {
		h.prev = t
	} else {
		l.bits[i>>6] |= 1 << (i & 63)
		l.sum |= 1 << (i >> 6)
	}
	l.head[i] = t
	t.slot = l.slot0 + int32(i)
}

func (l *level) unlink(i int, t *Timer) {
	if t.prev == nil {
		if l.head[i] != t {
			storeBug("timer %d (slot %d) not at the head of bucket %d", t.ID, t.slot, i)
		}
		l.head[i] = t.next
		if t.next == nil {
			l.clearBit(i)
		}
	} else {
		t.prev.next = t.next
	}
	if t.next != nil {
		t.next.prev = t.prev
	}
	t.prev, t.next = nil, nil
}

// take empties bucket i and returns its list, links intact.
func (l *level) take(i int) *Timer {
	h := l.head[i]
	if h != nil {
		l.head[i] = nil
		l.clearBit(i)
	}
	return h
}

func (l *level) clearBit(i int) {
	w := i >> 6
	l.bits[w] &^= 1 << (i & 63)
	if l.bits[w] == 0 {
		l.sum &^= 1 << w
	}
}

// next returns the first busy bucket at or after i, or -1.
func (l *level) next(i int) int {
	w := i >> 6
	if b := l.bits[w] >> (i & 63); b != 0 {
		return i + bits.TrailingZeros64(b)
	}
	s := l.sum >> (w + 1) // a shift by 64 yields 0
	if s == 0 {
		return -1
	}
	w += 1 + bits.TrailingZeros64(s)
	return w<<6 + bits.TrailingZeros64(l.bits[w])
}

// after returns the first busy bucket after i, or -1.
func (l *level) after(i int) int {
	if i+1 >= len(l.head) {
		return -1
	}
	return l.next(i + 1)
}

// timerHeap is a binary min-heap on due whose timers record their index in
// slot (tag-2*index), so that any of them can be removed in O(log n).
type timerHeap struct {
	ts  []*Timer
	tag int32
}

func (h *timerHeap) top() *Timer {
	if len(h.ts) == 0 {
		return nil
	}
	return h.ts[0]
}

func (h *timerHeap) index(t *Timer) int {
	k := int((h.tag - t.slot) / 2)
	if k < 0 || k >= len(h.ts) || h.ts[k] != t {
		storeBug("timer %d (slot %d) not at heap index %d of %d", t.ID, t.slot, k, len(h.ts))
	}
	return k
}

func (h *timerHeap) set(k int, t *Timer) {
	h.ts[k] = t
	t.slot = h.tag - 2*int32(k)
}

func (h *timerHeap) push(t *Timer) {
	if len(h.ts) >= maxHeapLen {
		storeBug("heap full at %d timers", len(h.ts))
	}
	t.prev, t.next = nil, nil
	h.ts = append(h.ts, t)
	h.up(len(h.ts)-1, t)
}

// remove takes out the timer at index k.
func (h *timerHeap) remove(k int) {
	last := len(h.ts) - 1
	t := h.ts[last]
	h.ts[last] = nil
	h.ts = h.ts[:last]
	if k == last {
		return
	}
	if k > 0 && t.due < h.ts[(k-1)/2].due {
		h.up(k, t)
	} else {
		h.down(k, t)
	}
}

// up places t at index k or above, moving larger parents down.
func (h *timerHeap) up(k int, t *Timer) {
	for k > 0 {
		p := (k - 1) / 2
		if h.ts[p].due <= t.due {
			break
		}
		h.set(k, h.ts[p])
		k = p
	}
	h.set(k, t)
}

// down places t at index k or below, moving smaller children up.
func (h *timerHeap) down(k int, t *Timer) {
	n := len(h.ts)
	for {
		c := 2*k + 1
		if c >= n {
			break
		}
		if c+1 < n && h.ts[c+1].due < h.ts[c].due {
			c++
		}
		if t.due <= h.ts[c].due {
			break
		}
		h.set(k, h.ts[c])
		k = c
	}
	h.set(k, t)
}
