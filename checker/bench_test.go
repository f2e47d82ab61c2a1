package checker

import (
	"fmt"
	"testing"
	"time"
)

// bigHistory is n timers with interval 1s and 50 pops each, plus a few
// faults, all healthy.
func bigHistory(n int) *History {
	h := &History{MaxClockSkew: ms, MaxNetDelay: 5 * ms, End: 120 * sec, LivenessFrom: 30 * sec}
	for i := 1; i <= n; i++ {
		start := time.Duration(i%1000) * ms
		opaque := fmt.Sprintf("o%d", i)
		h.Ops = append(h.Ops, write(i, Create, uint64(i), opaque, sec, 50*sec, start, start+10*ms, OK))
		h.Pops = append(h.Pops, pops(fmt.Sprintf("n%d", i%5), opaque, 1, 50, start)...)
	}
	for i := 0; i < 10; i++ {
		at := time.Duration(i) * 2 * sec
		h.Faults = append(h.Faults, Fault{At: at, Kind: Pause, Nodes: []string{"n1"}}, Fault{At: at + sec, Kind: Resume, Nodes: []string{"n1"}})
	}
	return h
}

func BenchmarkCheck(b *testing.B) {
	// Measures Check on 1,000 timers and 50,000 pops with faults around.
	h := bigHistory(1000)
	for b.Loop() {
		if vs := Check(h); len(vs) != 0 {
			b.Fatalf("got %d violations, want none: %s", len(vs), dump(vs[:1]))
		}
	}
}
