package sim

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chronos-timer/chronos/checker"
	"github.com/chronos-timer/chronos/node"
)

// TestGenMovedBackLinesUp proves that genMovedBack's timers are placed as
// its story needs (on P then the first machine to join while it is a
// member, on P then the next member B after the return), are created
// through that machine before the return, and that each comes with the
// loss of B's pass of it to that machine and the clog of B's link to P
// at the return; and that a plan with the sequence reaches
// apply/moved-back-keeps-pops.
func TestGenMovedBackLinesUp(t *testing.T) {
	plans := 0
	for seed := uint64(1); seed <= 200; seed++ {
		p := Generate(seed)
		up, back := scaleReturn(p)
		timers := createsNamed(p, "v")
		if len(timers) == 0 {
			continue
		}
		plans++
		d := nodeNum(up.Side[0])
		full := initialAddrs(p)
		after := slices.Clone(full)
		for _, n := range up.Side {
			full = append(full, p.nodeAddr(nodeNum(n)))
		}
		for _, c := range timers {
			if c.Via != d || c.At >= back.At || c.RF != 2 {
				t.Fatalf("%s: %+v, want a create of factor 2 through n%d before %v", p.Name, c, d, back.At)
			}
			during, then := checker.Replicas(full, c.ID, 2), checker.Replicas(after, c.ID, 2)
			if during[0] != then[0] || during[1] != p.nodeAddr(d) {
				t.Fatalf("%s: %s placed on %v then %v, want P then n%d, then P then B", p.Name, c.Timer, during, then, d)
			}
			pn, bn := nodeName(p, then[0]), nodeName(p, then[1])
			var lost, clogged bool
			for _, s := range p.Steps {
				lost = lost || s.Op == OpLose && s.Timer == c.Timer && s.At == back.At && slices.Equal(s.Side, []string{bn}) && slices.Equal(s.Peers, []string{fmt.Sprintf("n%d", d)})
				clogged = clogged || s.Op == OpClog && s.At == back.At && slices.Equal(s.Side, []string{bn}) && slices.Equal(s.Peers, []string{pn})
			}
			if !lost || !clogged {
				t.Fatalf("%s: %s: lost %v, clogged %v, want both", p.Name, c.Timer, lost, clogged)
			}
		}
	}
	if plans == 0 {
		t.Fatal("no plan of seeds 1..200 has the sequence")
	}
	if testing.Short() {
		return
	}
	// Seed 47 reaches the probe (4 of the 23 plans of seeds 1..1000 that
	// get the sequence do).
	r := Run(Generate(47), Options{})
	if i := slices.Index(node.ProbeNames(), "apply/moved-back-keeps-pops"); r.Probes[i] == 0 {
		t.Fatalf("seed 47: apply/moved-back-keeps-pops not reached")
	}
}

// TestGenLastHolderLinesUp proves that genLastHolder's timers are of
// factor 1, held by the node they are created through, all due in one
// second of the liveness phase, and more of them than that node sends
// within the backup skew.
func TestGenLastHolderLinesUp(t *testing.T) {
	plans := 0
	for seed := uint64(1); seed <= 1000; seed++ {
		p := Generate(seed)
		batch := createsNamed(p, "h")
		if len(batch) == 0 {
			continue
		}
		plans++
		members := initialAddrs(p)
		due := batch[0].At + batch[0].Interval
		if time.Duration(len(batch))*p.Net.NodeSendTime <= node.ReplicaSkew || due < p.LivenessFrom {
			t.Fatalf("%s: %d timers of %v sends due at %v (liveness from %v), want more than the skew's, in the liveness phase",
				p.Name, len(batch), p.Net.NodeSendTime, due, p.LivenessFrom)
		}
		for _, s := range batch {
			holder := checker.Replicas(members, s.ID, 1)[0]
			if s.RF != 1 || s.At+s.Interval != due || s.RepeatFor != s.Interval || holder != p.nodeAddr(s.Via) {
				t.Fatalf("%s: %+v held by %s, want factor 1, one pop at %v, through its holder", p.Name, s, holder, due)
			}
		}
	}
	if plans == 0 {
		t.Fatal("no plan of seeds 1..1000 has the batch")
	}
}

// createsNamed is the create steps of p whose timer's label starts with
// prefix.
func createsNamed(p *Plan, prefix string) []Step {
	var out []Step
	for _, s := range p.Steps {
		if s.Op == OpCreate && strings.HasPrefix(s.Timer, prefix) {
			out = append(out, s)
		}
	}
	return out
}
