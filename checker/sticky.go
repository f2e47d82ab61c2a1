package checker

import (
	"fmt"
	"sort"
	"time"
)

// checkSticky is the direct half of G5: no pop of a rejected write, no pop
// of a definition due after a DELETE or PUT that replaced it returned OK
// (unless a fault touched that DELETE or PUT, which may then have missed a
// replica cut off from it).
func (x *index) checkSticky() []Violation {
	var vs []Violation
	for _, d := range x.defs {
		if d.op.Outcome != Failed {
			continue
		}
		for _, seq := range sortedSeqs(d) {
			for _, i := range d.bySeq[seq] {
				p := x.h.Pops[i]
				vs = append(vs, x.violation("G5", p.At, d, fmt.Sprintf(
					"pop %d from %s of a write answered %d: got a pop of a rejected definition, want none",
					seq, p.Node, d.op.Status)))
			}
		}
	}
	defsOf := map[uint64][]*def{}
	for _, d := range x.defs {
		if d.op.Timer != 0 && d.op.Outcome != Failed {
			defsOf[d.op.Timer] = append(defsOf[d.op.Timer], d)
		}
	}
	timers := make([]uint64, 0, len(x.byTimer))
	for t := range x.byTimer {
		timers = append(timers, t)
	}
	sort.Slice(timers, func(i, j int) bool { return timers[i] < timers[j] })
	for _, t := range timers {
		for _, s := range x.byTimer[t] {
			if _, hit := x.writeHit(s); s.Kind == Create || s.Outcome != OK || hit {
				continue
			}
			for _, d := range defsOf[t] {
				if d.op.Seq != s.Seq && effReturn(d.op) < s.Invoke {
					vs = append(vs, x.stale(s, d)...)
				}
			}
		}
	}
	return vs
}

// stale reports the pops of d due after s, which replaced d, returned OK.
// It reports the first such pop and how many followed.
func (x *index) stale(s Op, d *def) []Violation {
	limit := s.Return + x.o.StickAllowance + x.h.MaxClockSkew +
		time.Duration(x.o.NetHops)*x.h.MaxNetDelay
	var bad []Pop
	for _, seq := range sortedSeqs(d) {
		lo, _ := d.due(max(seq, 1))
		if lo <= limit {
			continue
		}
		for _, i := range d.bySeq[seq] {
			bad = append(bad, x.h.Pops[i])
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.SliceStable(bad, func(i, j int) bool { return bad[i].At < bad[j].At })
	p := bad[0]
	what := "deleted"
	if s.Kind == Update {
		what = fmt.Sprintf("updated to opaque %q", s.Spec.Opaque)
	}
	return []Violation{x.violation("G5", p.At, d, fmt.Sprintf(
		"timer %s by op %d returning OK at %v, yet pop %d from %s (due from %v) carries the old definition, %d such pops: got a pop of the old definition, want none due after %v",
		what, s.Seq, s.Return, p.Seq, p.Node, x.dueFrom(d, p.Seq), len(bad), limit))}
}

func (x *index) dueFrom(d *def, seq int) time.Duration {
	lo, _ := d.due(max(seq, 1))
	return lo
}
