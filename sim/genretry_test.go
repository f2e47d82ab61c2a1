package sim

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/checker"
)

// TestGenRetryAheadLinesUp proves that genRetryAhead draws each of its
// four shapes and keeps what makes each reach its path: the newer write
// through the replica whose clock is ahead, with its replication to the
// other replica lost; the write through the node ranked third 100 to
// 300 ms later, its retry lost to the replica holding the first try; in
// N44's shape, clocks that put the retry's version more than the retry
// window past the first try's (and the first try still above the
// create's) and a step of the first try's holder past the window after
// the tries; in N45's, the primary crashed between its first pop of the
// retry and that callback's timeout and restarted from disk after the
// backup's second pop; and the primary holding the first try in the last.
func TestGenRetryAheadLinesUp(t *testing.T) {
	const window = 2 * time.Second // node.Node.retryWindow, 500 ms a round
	shapes := map[string]int{}
	for seed := uint64(1); seed <= 400; seed++ {
		p := Generate(seed)
		var c, newer, retried *Step
		var ra []Step
		for i := range p.Steps {
			s := &p.Steps[i]
			switch {
			case s.Timer == "ra" && s.Op == OpCreate:
				c = s
			case s.Timer == "ra" && s.Op == OpUpdate && newer == nil:
				newer = s
			case s.Timer == "ra" && s.Op == OpUpdate:
				retried = s
			}
		}
		if c == nil {
			continue
		}
		if newer == nil || retried == nil {
			t.Fatalf("%s: create %+v, newer %+v, retried %+v, want all three", p.Name, c, newer, retried)
		}
		order := checker.Replicas(initialAddrs(p), c.ID, 3)
		primary, backup, proxy := nodeName(p, order[0]), nodeName(p, order[1]), nodeName(p, order[2])
		for _, s := range p.Steps {
			if s.At >= c.At && s.At <= c.At+15*time.Second && (s.Timer == "ra" || s.Op == OpJump || s.Op == OpCrash || s.Op == OpRestart) {
				ra = append(ra, s)
			}
		}
		find := func(op Op, side string, pred func(Step) bool) *Step {
			for _, s := range ra {
				if s.Op == op && len(s.Side) == 1 && s.Side[0] == side && pred(s) {
					return &s
				}
			}
			return nil
		}
		if gap := retried.At - newer.At; gap < 100*time.Millisecond || gap > 300*time.Millisecond {
			t.Fatalf("%s: the retried write %v after the newer one, want 100 to 300 ms", p.Name, gap)
		}
		if via := fmt.Sprintf("n%d", retried.Via); via != proxy {
			t.Fatalf("%s: the retried write through %s, want the node ranked third, %s", p.Name, via, proxy)
		}
		ahead := fmt.Sprintf("n%d", newer.Via)
		first := map[string]string{primary: backup, backup: primary}[ahead]
		if first == "" || find(OpJump, ahead, func(s Step) bool { return s.At < newer.At && s.Delta == 1500*time.Millisecond }) == nil {
			t.Fatalf("%s: the newer write through %s, want a replica whose clock is 1.5 s ahead", p.Name, ahead)
		}
		lost := func(from, to string, at time.Duration) bool {
			return find(OpLose, from, func(s Step) bool { return s.At == at && slices.Equal(s.Peers, []string{to}) }) != nil
		}
		if !lost(ahead, first, newer.At) || !lost(proxy, first, retried.At) {
			t.Fatalf("%s: the newer write's replication or the retry not lost to %s", p.Name, first)
		}
		shape := "W6"
		if ahead == backup {
			shape = "first try on the primary"
		}
		// The steps of N44's and N45's shapes, by their moments (the
		// plan's other faults may step or crash these nodes too).
		if behind := find(OpJump, proxy, func(s Step) bool { return s.At == c.At+time.Second && s.Delta < 0 }); behind != nil {
			shape = "N44"
			step := find(OpJump, first, func(s Step) bool { return s.At > retried.At && s.Delta > 0 })
			if dated := 1500*time.Millisecond - behind.Delta - (retried.At - newer.At); dated <= window {
				t.Fatalf("%s: the retry dated %v after its first try, want more than the retry window", p.Name, dated)
			}
			if above := retried.At + behind.Delta - c.At; above <= 0 {
				t.Fatalf("%s: the first try dated %v after the create, want after it", p.Name, above)
			}
			if step == nil || step.Delta <= window || step.At <= retried.At || step.At >= retried.At+retried.Interval {
				t.Fatalf("%s: the first try's holder %s stepped %+v, want past the retry window between the tries and its pop", p.Name, first, step)
			}
		}
		if crash := find(OpCrash, primary, func(s Step) bool { return s.At == retried.At+retried.Interval+1500*time.Millisecond }); crash != nil && shape == "W6" {
			shape = "N45"
			restart := find(OpRestart, primary, func(s Step) bool { return s.At > crash.At && s.At <= crash.At+retried.Interval+2*time.Second })
			pop, timeout := retried.At+retried.Interval, retried.At+retried.Interval+2*time.Second
			if !p.enabled(MixStorage) || crash.At <= pop || crash.At >= timeout || restart == nil || restart.At <= retried.At+2*retried.Interval+2*time.Second {
				t.Fatalf("%s: primary %s crashed %+v and restarted %+v, want from disk, between its pop and the callback's timeout, and back after the backup's second pop", p.Name, primary, crash, restart)
			}
		}
		shapes[shape]++
	}
	for _, s := range []string{"W6", "N44", "N45", "first try on the primary"} {
		if shapes[s] == 0 {
			t.Errorf("no plan of shape %s in 400 seeds (%v)", s, shapes)
		}
	}
	t.Log(shapes)
}
