package sim

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/checker"
)

// TestGenLossLinesUp proves that genLoss's sequences are drawn and keep
// the shape that makes them catch a write acknowledged short of its
// quorum or its sync: the lone writer is a replica of its timer, cut off
// from every other node from before its update until after its crash,
// restart and the heal; the crash after a write takes every node within
// milliseconds of the create.
func TestGenLossLinesUp(t *testing.T) {
	var lone, synced int
	for seed := uint64(1); seed <= 300; seed++ {
		p := Generate(seed)
		if checkLoneWriter(t, p) {
			lone++
		}
		if checkCrashAfterWrite(t, p) {
			synced++
		}
	}
	if lone == 0 || synced == 0 {
		t.Fatalf("got %d lone-writer plans and %d crash-after-write plans in 300 seeds, want some of each", lone, synced)
	}
}

// checkLoneWriter checks plan p's lone-writer sequence, if it has one.
func checkLoneWriter(t *testing.T, p *Plan) bool {
	t.Helper()
	var c, u *Step
	for i := range p.Steps {
		s := &p.Steps[i]
		switch {
		case s.Timer == "w1" && s.Op == OpCreate:
			c = s
		case s.Timer == "w1" && s.Op == OpUpdate:
			u = s
		}
	}
	if c == nil {
		return false
	}
	if u == nil || c.RF != 3 || c.ID == 0 || u.Bare {
		t.Fatalf("%s: lone writer's create %+v and update %+v, want rf 3, a chosen ID and an update by its Location", p.Name, c, u)
	}
	writer := fmt.Sprintf("n%d", u.Via)
	if !slices.Contains(checker.Replicas(initialAddrs(p), c.ID, c.RF), p.nodeAddr(u.Via)) {
		t.Fatalf("%s: lone writer %s is no replica of the timer", p.Name, writer)
	}
	cut, checked, crashed, back := false, false, false, false
	for _, s := range p.Steps {
		if s.At > u.At && !checked {
			// Every step up to the update's instant has run.
			if checked = true; !cut {
				t.Fatalf("%s: lone writer %s not cut off at the update, %v", p.Name, writer, u.At)
			}
		}
		switch {
		case s.Op == OpPartition && slices.Equal(s.Side, []string{writer}) && len(s.Peers) == p.Nodes-1:
			cut = true
		case s.Op == OpHeal:
			cut = false // the cut comes again at once, if the heal is not its own
		case s.Op == OpCrash && s.At > u.At && slices.Equal(s.Side, []string{writer}):
			crashed = true
		case s.Op == OpRestart && crashed && slices.Equal(s.Side, []string{writer}):
			back = true
		}
	}
	if !crashed || !back {
		t.Fatalf("%s: lone writer %s crashed %v, restarted %v after the update, want both", p.Name, writer, crashed, back)
	}
	return true
}

// checkCrashAfterWrite checks plan p's crash-after-write sequence, if it
// has one.
func checkCrashAfterWrite(t *testing.T, p *Plan) bool {
	t.Helper()
	i := slices.IndexFunc(p.Steps, func(s Step) bool { return s.Timer == "d1" && s.Op == OpCreate })
	if i < 0 {
		return false
	}
	at := p.Steps[i].At
	crashed := map[string]bool{}
	for _, s := range p.Steps {
		if s.Op == OpCrash && s.At >= at && s.At < at+6*time.Millisecond {
			crashed[s.Side[0]] = true
		}
	}
	if !p.enabled(MixStorage) || len(crashed) != p.Nodes {
		t.Fatalf("%s: %d of %d nodes crash within 6 ms of the create at %v (storage %v), want every one with storage",
			p.Name, len(crashed), p.Nodes, at, p.enabled(MixStorage))
	}
	return true
}
