package sim

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/checker"
)

// TestGenStaleHeldLinesUp proves that genStaleHeld's sequence is drawn
// and keeps the shape that leaves a replica holding a replaced definition
// only repair mends: an hour-long timer live past the end, one of its
// replicas cut off when the update or delete goes through another node
// and until the liveness phase, and a run that lasts a repair round past
// that heal.
func TestGenStaleHeldLinesUp(t *testing.T) {
	found := 0
	for seed := uint64(1); seed <= 300; seed++ {
		p := Generate(seed)
		var c, w *Step
		for i := range p.Steps {
			switch s := &p.Steps[i]; {
			case s.Timer == "r4" && s.Op == OpCreate:
				c = s
			case s.Timer == "r4":
				w = s
			}
		}
		if c == nil {
			continue
		}
		found++
		if w == nil || c.ID == 0 || c.Interval != time.Hour || c.RepeatFor != genHeldFor || w.Bare {
			t.Fatalf("%s: create %+v and write %+v, want a chosen ID, an hour repeating for %v, and a write by its Location", p.Name, c, w, genHeldFor)
		}
		replicas := checker.Replicas(initialAddrs(p), c.ID, c.RF)
		cut := ""
		for _, s := range p.Steps {
			if s.At > w.At {
				break
			}
			switch {
			case s.Op == OpPartition && len(s.Side) == 1 && slices.Contains(replicas, p.nodeAddr(nodeNum(s.Side[0]))):
				cut = s.Side[0]
			case s.Op == OpHeal:
				cut = ""
			}
		}
		if cut == "" || cut == fmt.Sprintf("n%d", w.Via) {
			t.Fatalf("%s: no replica cut off from the write through n%d at %v", p.Name, w.Via, w.At)
		}
		if p.End < p.LivenessFrom+genQuiet {
			t.Fatalf("%s: ends at %v, want a repair round past the heal at %v", p.Name, p.End, p.LivenessFrom)
		}
	}
	if found == 0 {
		t.Fatal("no plan of 300 seeds has genStaleHeld's sequence")
	}
}

// nodeNum is the number in a plan's node name ("n3").
func nodeNum(name string) int {
	var n int
	fmt.Sscanf(name, "n%d", &n)
	return n
}
