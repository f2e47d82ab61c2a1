package checker

import (
	"fmt"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// genHealthy draws a fault-free history of a few timers, each created,
// maybe updated, maybe deleted, with every due pop delivered once on time
// until the next write on its timer. It returns the history and, per pop,
// whether it had to be delivered (its bound passed before the next write).
func genHealthy(t *rapid.T) (*History, []bool) {
	h := &History{MaxClockSkew: ms, MaxNetDelay: 5 * ms}
	var required []bool
	seq := 0
	for timer := uint64(1); timer <= uint64(rapid.IntRange(1, 4).Draw(t, "timers")); timer++ {
		at := time.Duration(rapid.IntRange(0, 5000).Draw(t, "createAt")) * ms
		writes := rapid.IntRange(1, 3).Draw(t, "writes")
		deleted := rapid.Bool().Draw(t, "delete")
		for w := 0; w < writes; w++ {
			seq++
			iv := []time.Duration{0, 300 * ms, sec, 3 * sec}[rapid.IntRange(0, 3).Draw(t, "interval")]
			repeat := iv * time.Duration(rapid.IntRange(1, 6).Draw(t, "repeats"))
			lat := time.Duration(rapid.IntRange(1, 50).Draw(t, "latency")) * ms
			kind := Create
			if w > 0 {
				kind = Update
			}
			opaque := fmt.Sprintf("t%d-w%d", timer, w)
			h.Ops = append(h.Ops, write(seq, kind, timer, opaque, iv, repeat, at, at+lat, OK))
			start := at + time.Duration(rapid.Int64Range(0, int64(lat)).Draw(t, "start"))
			next := at + lat + time.Duration(rapid.IntRange(100, 8000).Draw(t, "gap"))*ms
			last := w == writes-1 && !deleted
			for k := 1; k <= h.Ops[len(h.Ops)-1].Spec.Pops(); k++ {
				due := start + time.Duration(k)*iv
				if due >= next && !last {
					break
				}
				delay := time.Duration(rapid.IntRange(0, 80).Draw(t, "delay")) * ms
				h.Pops = append(h.Pops, pop(due+delay, fmt.Sprintf("n%d", timer%3), opaque, k))
				required = append(required, last || at+lat+time.Duration(k)*iv+200*ms < next)
			}
			at = next
		}
		if deleted {
			seq++
			h.Ops = append(h.Ops, del(seq, timer, at, at+10*ms, OK))
		}
	}
	h.End = historyEnd(h) + 20*sec
	return h, required
}

func TestGeneratedHealthyHistoriesHaveNoViolation(t *testing.T) {
	// Property: any fault-free history in which every due pop arrives once,
	// on time, until its timer is next written, passes every check.
	rapid.Check(t, func(t *rapid.T) {
		h, _ := genHealthy(t)
		if vs := Check(h); len(vs) != 0 {
			t.Fatalf("got violations:\n%s\nwant none", dump(vs))
		}
	})
}

func TestGeneratedBrokenHistoriesAreCaught(t *testing.T) {
	// Property: breaking one pop of a healthy history on purpose (drop a
	// required one, deliver one early or late, or twice) is always caught
	// under the guarantee it breaks.
	rapid.Check(t, func(t *rapid.T) { checkBroken(t, false) })
}

func TestBrokenHistoriesAreCaughtDespiteUnrelatedFaults(t *testing.T) {
	// Property: the same, with faults on members that hold no replica of
	// the broken timer and took none of its writes, and on other timers'
	// messages and callback endpoints: a fault elsewhere in the cluster
	// excuses nothing.
	rapid.Check(t, func(t *rapid.T) { checkBroken(t, true) })
}

// checkBroken breaks one pop of a generated healthy history and requires
// the checker to report it; with unrelated, it first adds faults that
// touch nothing of the broken timer.
func checkBroken(t *rapid.T, unrelated bool) {
	h, required := genHealthy(t)
	if len(h.Pops) == 0 {
		t.Skip("discarded: the drawn history has no pop to break; rapid draws another")
	}
	i := rapid.IntRange(0, len(h.Pops)-1).Draw(t, "pop")
	p := h.Pops[i]
	if unrelated {
		addUnrelatedFaults(t, h, p.Opaque)
	}
	var g string
	switch rapid.IntRange(0, 3).Draw(t, "mutation") {
	case 0:
		if !required[i] {
			t.Skip("discarded: dropping a pop that was never required breaks nothing; rapid draws another")
		}
		h.Pops = append(h.Pops[:i:i], h.Pops[i+1:]...)
		g = "G2"
	case 1:
		h.Pops[i].At -= 200 * ms
		g = "G1"
	case 2:
		h.Pops[i].At += 250 * ms
		g = "G3"
	case 3:
		h.Pops = append(h.Pops, pop(p.At+10*ms, "other", p.Opaque, p.Seq))
		g = "G4"
	}
	vs := Check(h)
	for _, v := range vs {
		if v.Guarantee == g {
			return
		}
	}
	if g == "G3" && len(vs) > 0 {
		return // a late pop that runs into the next write is G5 or G4 instead
	}
	t.Fatalf("got violations:\n%s\nwant a %s", dump(vs), g)
}

// addUnrelatedFaults gives h a membership of eight nodes and a schedule
// of faults that touch nothing of the timer whose definition carries
// opaque: crashes, pauses, cuts and clock jumps of members that are
// neither its replicas nor took its writes, lost messages about other
// timers, and callback faults on other endpoints.
func addUnrelatedFaults(t *rapid.T, h *History, opaque string) {
	h.Members = []string{"n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8"}
	var timer uint64
	var rf int
	for _, op := range h.Ops {
		if op.Spec.Opaque == opaque {
			timer, rf = op.Timer, op.Spec.ReplicationFactor
		}
	}
	busy := map[string]bool{}
	for _, r := range Replicas(h.Members, timer, rf) {
		busy[r] = true
	}
	for _, op := range h.Ops {
		if op.Timer == timer {
			busy[op.Node] = true
		}
	}
	var free []string
	for _, m := range h.Members {
		if !busy[m] {
			free = append(free, m)
		}
	}
	for range rapid.IntRange(1, 8).Draw(t, "faults") {
		at := time.Duration(rapid.IntRange(0, int(h.End/ms)).Draw(t, "at")) * ms
		n := rapid.SampledFrom(free).Draw(t, "node")
		switch rapid.IntRange(0, 5).Draw(t, "kind") {
		case 0:
			h.Faults = append(h.Faults, Fault{At: at, Kind: Crash, Nodes: []string{n}})
		case 1:
			h.Faults = append(h.Faults, Fault{At: at, Kind: Pause, Nodes: []string{n}})
		case 2:
			h.Faults = append(h.Faults, Fault{At: at, Kind: Partition, Nodes: []string{n}, Peers: []string{"client"}})
		case 3:
			h.Faults = append(h.Faults, Fault{At: at, Kind: ClockJump, Nodes: []string{n}, Detail: "+3s"})
		case 4:
			h.Faults = append(h.Faults, Fault{At: at, Kind: Lost, Nodes: []string{"n1"}, Peers: []string{"n2"}, Timer: timer + 100})
		case 5:
			h.Faults = append(h.Faults, Fault{At: at, Kind: FailCallback, Nodes: []string{"http://elsewhere/cb"}})
		}
	}
}
