package checker

import (
	"sort"
	"time"
)

// never is a time after every history.
const never = time.Duration(1<<63 - 1)

// endKind maps a fault to the event that ends it. Faults without an entry
// (clock jumps and drift, scale events, unknown kinds) stay active until the
// liveness phase, as nothing in the timeline says when their effect is over.
var endKind = map[FaultKind]FaultKind{
	Crash:        Restart,
	Pause:        Resume,
	Partition:    Heal,
	Clog:         Heal,
	SlowCallback: CallbackOK,
	FailCallback: CallbackOK,
}

// isEndEvent reports kinds that end a fault or mark a phase; they are no
// fault themselves.
func isEndEvent(k FaultKind) bool {
	switch k {
	case Restart, Resume, Heal, CallbackOK, LivenessPhase:
		return true
	}
	return false
}

// span is one fault's active interval, settle time included in to; end
// is when its end event came (or the horizon), for drawing.
type span struct {
	from, to, end time.Duration
	fault         Fault
}

// timeline answers "was a fault active in [a, b]" questions.
type timeline struct {
	spans    []span
	liveFrom time.Duration
}

// livenessFrom is History.LivenessFrom, or the first liveness-phase event
// when the simulator left the field at zero.
func livenessFrom(h *History) time.Duration {
	if h.LivenessFrom > 0 {
		return h.LivenessFrom
	}
	for _, f := range h.Faults {
		if f.Kind == LivenessPhase {
			return f.At
		}
	}
	return 0
}

// buildTimeline pairs each fault with the event that ends it.
func buildTimeline(h *History, end, settle time.Duration) timeline {
	fs := append([]Fault(nil), h.Faults...)
	sort.SliceStable(fs, func(i, j int) bool { return fs[i].At < fs[j].At })
	tl := timeline{liveFrom: livenessFrom(h)}
	for i, f := range fs {
		if isEndEvent(f.Kind) {
			continue
		}
		to := tl.horizon(f.At, end)
		if k, ok := endKind[f.Kind]; ok {
			for _, g := range fs[i+1:] {
				if g.Kind == k && sameTarget(f, g) {
					to = g.At
					break
				}
			}
		}
		tl.spans = append(tl.spans, span{from: f.At, to: to + settle, end: to, fault: f})
	}
	return tl
}

// horizon is when a fault with no end event stops counting.
func (tl timeline) horizon(at, end time.Duration) time.Duration {
	if tl.liveFrom > at {
		return tl.liveFrom
	}
	return end
}

// sameTarget reports whether end event g ends fault f: an end event naming
// no node ends every fault of its kind, otherwise the node sets must meet.
func sameTarget(f, g Fault) bool {
	a := append(append([]string(nil), f.Nodes...), f.Peers...)
	b := append(append([]string(nil), g.Nodes...), g.Peers...)
	if len(a) == 0 || len(b) == 0 {
		return true
	}
	for _, x := range a {
		for _, y := range b {
			if x == y {
				return true
			}
		}
	}
	return false
}

// touched reports whether any fault was active somewhere in [a, b].
func (tl timeline) touched(a, b time.Duration) bool {
	for _, s := range tl.spans {
		if s.from <= b && s.to >= a {
			return true
		}
	}
	return false
}

// downNodes returns how many distinct nodes were crashed, paused, or on
// either side of a partition or clog somewhere in [a, b]: when that reaches
// a timer's replication factor, all its replicas may have been unable to
// pop, and G3 cannot be asked of it.
func (tl timeline) downNodes(a, b time.Duration) int {
	seen := map[string]bool{}
	for _, s := range tl.spans {
		if s.from > b || s.to < a {
			continue
		}
		switch s.fault.Kind {
		case Crash, Pause:
			addAll(seen, s.fault.Nodes)
		case Partition, Clog:
			addAll(seen, s.fault.Nodes)
			addAll(seen, s.fault.Peers)
		}
	}
	return len(seen)
}

func addAll(set map[string]bool, xs []string) {
	for _, x := range xs {
		set[x] = true
	}
}

// active lists the faults active somewhere in [a, b], for messages.
func (tl timeline) active(a, b time.Duration) []Fault {
	var out []Fault
	for _, s := range tl.spans {
		if s.from <= b && s.to >= a {
			out = append(out, s.fault)
		}
	}
	return out
}
