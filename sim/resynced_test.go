package sim

import (
	"slices"
	"testing"
)

// TestScaleRecordsEachCompletedResync runs the scale-up worked example
// and requires the history to hold the joining node's completed resync,
// taken as the node logged it (sim/resynced.go), while the scale ran, with
// the timer it became the primary of held live; and G6 to have judged it.
// A node that stopped logging "resync finished" would leave the rule
// nothing to judge: this fails then.
func TestScaleRecordsEachCompletedResync(t *testing.T) {
	p := loadScenario(t, scenarioDir+"/scale-up-worked-example.scenario")
	res := Run(p, Options{})
	if res.Panic != "" {
		t.Fatalf("panic: %s", res.Panic)
	}
	h := res.History
	if len(h.Scales) != 1 || h.Scales[0].End == 0 {
		t.Fatalf("scales: got %+v, want one completed", h.Scales)
	}
	const t1 = 0x8000000000600000
	s := h.Scales[0]
	found := false
	for _, r := range h.Resyncs {
		if r.At < s.Start || r.At > s.End || r.Scale != 0 {
			t.Errorf("resync of %s at %v: outside the scale (%v..%v) or of another (%d)", r.Node, r.At, s.Start, s.End, r.Scale)
		}
		if r.Node == p.nodeAddr(4) {
			found = true
			if !slices.Contains(r.Live, t1) {
				t.Errorf("n4's resync at %v completed without t1: holds %x", r.At, r.Live)
			}
		}
	}
	if !found {
		t.Fatalf("no completed resync of n4 recorded: %+v", h.Resyncs)
	}
	if res.Coverage.Resynced == 0 {
		t.Errorf("G6 judged no timer at a resync's completion")
	}
}
