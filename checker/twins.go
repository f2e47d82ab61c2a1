package checker

import (
	"fmt"
	"slices"
	"time"
)

// Twins: a shared-instance plan configures two members with one instance
// number (a misconfiguration). Both issue IDs and versions from the same
// number, so two timers may share an ID (the shared-id excuse), and the
// node must refuse client writes through either twin once it knows
// (docs/design.md 4.2). The checker takes both from the plan and the
// network, never from what a node answered: which timers may share an ID
// follows from the twins' number (History.TwinInstances) and when the
// twins wrote, and when a twin must know from the messages the network
// handed it (History.Clashes).

// The layout of a unique ID (docs/design.md 4.2): milliseconds since
// 2020-01-01, the issuing node's instance number, a sequence.
const (
	idSeqBits      = 12
	idInstanceBits = 10
	idEpochMs      = 1577836800000
)

// ClockLead is how far ahead of its clock a node's ID generator may run,
// having observed IDs and versions from ahead (node.DefaultMaxClockLead).
const ClockLead = time.Minute

// ClashReported is how long a clash a third node reported stands at a
// twin unless reported again (node's clashReported).
const ClashReported = time.Minute

// idInstance is the instance number id carries.
func idInstance(id uint64) int { return int(id >> idSeqBits & (1<<idInstanceBits - 1)) }

// idTime is the history time at which the millisecond id carries began,
// as the issuer's clock read it.
func (x *index) idTime(id uint64) time.Duration {
	return time.UnixMilli(idEpochMs + int64(id>>(idSeqBits+idInstanceBits))).Sub(x.h.Epoch)
}

// twinIssued reports whether id carries the twins' instance number.
func (x *index) twinIssued(id uint64) bool {
	return len(x.h.Twins) > 0 && slices.Contains(x.h.TwinInstances, idInstance(id))
}

// mayShareID reports whether two timers may share id: it carries the
// twins' number, and a write other than id's own create went through a
// twin while that twin's ID generator may have read id's millisecond
// (from ClockLead before it, the generator running ahead of the clock,
// to the clocks' offsets after it), so that it may have issued id again,
// as an ID or a version.
func (x *index) mayShareID(id uint64) bool {
	if !x.twinIssued(id) {
		return false
	}
	at := x.idTime(id)
	for _, op := range x.h.Ops {
		if op.Outcome == Failed || !slices.Contains(x.h.Twins, op.Node) || op.Kind == Create && op.Timer == id {
			continue
		}
		end := op.Return
		if op.Outcome == Unknown || end < op.Invoke {
			end = x.end
		}
		m := x.h.MaxClockSkew + x.tl.offset(op.Node, at).Abs()
		if op.Invoke <= at+time.Millisecond+m && end >= at-ClockLead-m {
			return true
		}
	}
	return false
}

// clashWindows lists, per twin, the stretches in which it surely knew it
// shares its number (see History.Clashes): from a message its twin sent
// it until it restarts or the membership next changes (a scale's start
// or end: a node forgets a clash with a node that is no longer a
// member), and from an answer that told it for ClashReported on its own
// clock, less what that clock gained.
func (x *index) clashWindows() map[string][][2]time.Duration {
	out := map[string][][2]time.Duration{}
	for _, c := range x.h.Clashes {
		end := x.end
		for _, f := range x.h.Faults {
			if f.At > c.At && f.At < end && f.Kind == Crash && slices.Contains(f.Nodes, c.Node) {
				end = f.At
			}
		}
		for _, sc := range x.h.Scales {
			for _, t := range []time.Duration{sc.Start, sc.End} {
				if t > c.At {
					end = min(end, t)
				}
			}
		}
		if !c.Direct {
			told := c.At + ClashReported
			end = min(end, told-x.tl.gain(c.Node, c.At, told))
		}
		if end > c.At {
			out[c.Node] = append(out[c.Node], [2]time.Duration{c.At, end})
		}
	}
	return out
}

// checkClashRefused is CLASH: a client write through a twin that ran
// wholly while the twin knew it shares its number was refused (503, so
// not OK): a write acknowledged then issued an ID or version the other
// twin may issue too.
func (x *index) checkClashRefused() []Violation {
	if len(x.h.Twins) == 0 {
		return nil
	}
	windows := x.clashWindows()
	var vs []Violation
	for _, op := range x.h.Ops {
		if op.Outcome != OK {
			continue
		}
		for _, w := range windows[op.Node] {
			if op.Invoke >= w[0] && op.Return <= w[1] {
				vs = append(vs, Violation{Guarantee: "CLASH", At: op.Return, Timer: op.Timer, Message: fmt.Sprintf(
					"op %d (%s via %s) was acknowledged while %s knew another node shares its instance number (since %v): got %d, want 503",
					op.Seq, op.Kind, op.Node, op.Node, w[0], op.Status)})
				break
			}
		}
	}
	return vs
}
