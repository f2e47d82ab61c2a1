package server

import (
	"log/slog"
	"runtime"
	"runtime/debug"
	"testing"
)

// TestGCPercent checks the headroom rule: a large heap gets its percent,
// a small one enough to grow by minGCHeadroom, never more than GOGC=100.
func TestGCPercent(t *testing.T) {
	for _, c := range []struct {
		live uint64
		pct  int
		want int
	}{
		{0, 25, 100},
		{1 << 20, 25, 100},        // 32 MiB of headroom is 3200%
		{64 << 20, 25, 50},        // 32 MiB of 64
		{128 << 20, 25, 25},       // 32 MiB is exactly 25%
		{1 << 30, 25, 25},         // a large heap: the percent
		{1 << 30, 10, 10},         //
		{200 << 20, 10, 16},       // 32/200 rounded up
		{1 << 30, 100, 100},       // GOGC's own
		{(128 << 20) + 1, 25, 25}, // just past the floor's reach
		{(32 << 20) + 1, 25, 100}, // the floor is GOGC=100's headroom
	} {
		if got := gcPercent(c.live, c.pct); got != c.want {
			t.Errorf("gcPercent(%d MiB, %d%%) = %d, want %d", c.live>>20, c.pct, got, c.want)
		}
	}
}

// TestGCTunerSetsAfterCollections checks that the tuner sets GOGC from
// the live heap after collections, and that stopping it puts the
// previous GOGC back and sets nothing more.
func TestGCTunerSetsAfterCollections(t *testing.T) {
	prev := debug.SetGCPercent(100)
	t.Cleanup(func() { debug.SetGCPercent(prev) })
	tu := &gcTuner{pct: 1, last: 100}
	tu.sample[0].Name = "/gc/heap/live:bytes"
	var sets []int
	tu.set = func(p int) int { sets = append(sets, p); return 100 }
	// A live heap past 32 MiB x 100 / 50: the percent it asks for is
	// below 100, so adjust sets it.
	keep := make([][]byte, 0, 80)
	for range 80 {
		keep = append(keep, make([]byte, 1<<20))
	}
	tu.arm()
	for i := 0; i < 10 && len(sets) == 0; i++ {
		runtime.GC()
		runtime.Gosched()
		tu.mu.Lock()
		n := len(sets)
		tu.mu.Unlock()
		if n > 0 {
			break
		}
	}
	tu.mu.Lock()
	got := append([]int(nil), sets...)
	tu.stopped = true
	tu.mu.Unlock()
	runtime.KeepAlive(keep)
	if len(got) == 0 || got[0] >= 100 || got[0] < 1 {
		t.Fatalf("after collections of an 80 MiB heap the tuner set GOGC %v, want one value below 100", got)
	}
	// Off: nothing started, GOGC untouched.
	debug.SetGCPercent(77)
	startGCTuner(0, slog.New(slog.DiscardHandler))()
	if p := debug.SetGCPercent(77); p != 77 {
		t.Fatalf("gc_headroom off changed GOGC to %d", p)
	}
	// On and stopped: the previous GOGC is back.
	stop := startGCTuner(25, slog.New(slog.DiscardHandler))
	stop()
	if p := debug.SetGCPercent(77); p != 77 {
		t.Fatalf("a stopped tuner left GOGC at %d, want 77 back", p)
	}
}
