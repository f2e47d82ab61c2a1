package server

import (
	"log/slog"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
)

// The collector's headroom (docs/design.md 5.1). With GOGC alone the heap
// grows to twice what the last collection found live before the next one,
// so a node whose heap is mostly its timers holds about twice their size
// in RSS. A timer store is the opposite of what GOGC's default suits: a
// large live heap that changes slowly, and garbage (requests, callbacks)
// proportional to the traffic, not to the timers held. After each
// collection the node sets GOGC so that the next one comes once the heap
// has grown by gc_headroom percent of what is live, or by minGCHeadroom
// if that is more, and never later than GOGC=100 would: a small heap is
// paced as before, a large one holds about its live heap plus the
// headroom. It sets GOGC, not the soft memory limit: a heap goal counts
// the bytes allocated, so a heap whose spans are partly empty (timers
// deleted here and there) costs no extra cycles, where a limit counts
// the spans and would run the collector back to back.
//
// What it costs: a cycle marks the live heap, and cycles come once the
// traffic has allocated the headroom, so the collector's CPU is about the
// traffic's allocation rate times live/headroom: at a headroom of 25% of
// the live heap, four times GOGC=100's on a large heap, whatever its size;
// on a heap under four times minGCHeadroom, less; on an idle node,
// nothing.

// minGCHeadroom is the least headroom the node leaves: below it a cycle
// would come every few thousand requests whatever the heap.
const minGCHeadroom = 32 << 20

// gcPercent is the GOGC the node sets after a collection that found live
// bytes of live heap: headroomPct, or more up to 100 so that the heap may
// grow by minGCHeadroom at least.
func gcPercent(live uint64, headroomPct int) int {
	if live == 0 {
		return 100
	}
	p := max(uint64(headroomPct), (minGCHeadroom*100+live-1)/live)
	return int(min(p, 100))
}

// gcTuner keeps GOGC at gcPercent, set again after every collection (a
// finalizer on an object dropped each cycle).
type gcTuner struct {
	pct     int
	mu      sync.Mutex // stopped, last and set
	stopped bool
	sample  [1]metrics.Sample
	last    int
	// set is debug.SetGCPercent (tests count its calls).
	set func(int) int
}

// startGCTuner starts keeping GOGC at gcPercent with headroomPct (0: off,
// Go's own pacing), and returns what stops it and puts GOGC back.
func startGCTuner(headroomPct int, log *slog.Logger) (stop func()) {
	if headroomPct <= 0 {
		return func() {}
	}
	t := &gcTuner{pct: headroomPct, set: debug.SetGCPercent}
	t.sample[0].Name = "/gc/heap/live:bytes"
	prev := t.set(100)
	t.last = 100
	t.adjust()
	t.arm()
	log.Info("gc_headroom_set", "percent", headroomPct, "min_bytes", minGCHeadroom, "previous_gogc", prev)
	return func() {
		t.mu.Lock()
		defer t.mu.Unlock()
		t.stopped = true
		t.set(prev)
	}
}

// arm sets a finalizer on a fresh object, so that the collection that
// finds it dropped runs adjust and arms again.
func (t *gcTuner) arm() {
	s := new([16]byte)
	runtime.SetFinalizer(s, func(*[16]byte) {
		if t.adjust() {
			t.arm()
		}
	})
}

// adjust reads the live heap the last collection found and sets GOGC;
// false once the tuner is stopped.
func (t *gcTuner) adjust() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.stopped {
		return false
	}
	metrics.Read(t.sample[:])
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		if p := gcPercent(t.sample[0].Value.Uint64(), t.pct); p != t.last {
			t.last = p
			t.set(p)
		}
	}
	return true
}
