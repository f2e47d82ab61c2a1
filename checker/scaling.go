package checker

import (
	"slices"
	"time"
)

// A timer's placement over a run that scales (History.Scales): before a
// scale its replicas are those of the members before; from when the scale
// starts until FaultSettle after it completed the resync moves it, and
// either placement's nodes may hold it, at either rank; after that, the
// members after place it. A scale that never completed leaves the timer in
// flux for the rest of the run. A timer whose placement the scale does
// not change is placed the same all along.

// epoch is a stretch of a definition's placement.
type epoch struct {
	from time.Duration
	// ranked is the placement, primary first; nil while a scale moves
	// the timer.
	ranked []string
	// nodes are the nodes that may hold the timer then.
	nodes []string
}

// epochsOf lists timer id's placements for replication factor rf, from
// the start of the run, and the spans of the scales that move it: each a
// fault (kind ScaleUp or ScaleDown, on both placements' nodes) from the
// scale's start to FaultSettle after its end.
func (x *index) epochsOf(id uint64, rf int) ([]epoch, []span) {
	cur := Replicas(x.h.Members, id, rf)
	out := []epoch{{from: -never, ranked: cur, nodes: cur}}
	var moves []span
	for _, s := range x.h.Scales {
		before, after := Replicas(s.Before, id, rf), Replicas(s.After, id, rf)
		to, end := never, x.end
		if s.End != 0 {
			to, end = s.End+x.o.FaultSettle, s.End
		}
		if slices.Equal(before, after) {
			out = append(out, epoch{from: s.Start, ranked: before, nodes: before})
			continue
		}
		both := union(before, after)
		out = append(out, epoch{from: s.Start, nodes: both})
		moves = append(moves, span{from: s.Start, to: to, end: end, fault: Fault{At: s.Start, Kind: s.Kind, Nodes: both}})
		if s.End != 0 {
			out = append(out, epoch{from: to, ranked: after, nodes: after})
		}
	}
	return out, moves
}

// movesOfFactors is the spans of the scales that move timer d under
// any factor in d's range (rfMin..rf), for a write whose factor the
// history leaves to the node: it is placed by none of them, but a scale
// that moves it under one gives its pops the hand-off's rank (handOff)
// as it does a placed timer's. Without it a pop due in the move, made by
// the new replica at its reload 0.9 s after the due time, was held to the
// fault-free bound (TestPopOfAFactorLeftToTheNodeMovedByAScale).
func (x *index) movesOfFactors(d *def) []span {
	var out []span
	for rf := max(d.rfMin, 1); rf <= d.rf; rf++ {
		_, moves := x.epochsOf(d.timer, rf)
		for _, m := range moves {
			i := slices.IndexFunc(out, func(s span) bool { return s.from == m.from })
			if i < 0 {
				out = append(out, m)
				continue
			}
			out[i].fault.Nodes = union(out[i].fault.Nodes, m.fault.Nodes)
		}
	}
	return out
}

// union is a's nodes, then b's not in a.
func union(a, b []string) []string {
	out := slices.Clone(a)
	for _, n := range b {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// epochAt is the index of d's epoch in force at t.
func (d *def) epochAt(t time.Duration) int {
	i := 0
	for j, e := range d.epochs {
		if e.from <= t {
			i = j
		}
	}
	return i
}

// rankedIn is d's placement in [a, b] when one placement is in force
// throughout, and nil when a scale moved the timer meanwhile.
func (d *def) rankedIn(a, b time.Duration) []string {
	if len(d.epochs) == 0 {
		return d.replicas
	}
	i, j := d.epochAt(a), d.epochAt(b)
	for k := i + 1; k <= j; k++ {
		if !slices.Equal(d.epochs[k].ranked, d.epochs[i].ranked) {
			return nil
		}
	}
	return d.epochs[i].ranked
}

// nodesIn is the nodes that may hold d somewhere in [a, b].
func (d *def) nodesIn(a, b time.Duration) []string {
	if len(d.epochs) == 0 {
		return d.replicas
	}
	var out []string
	for k := d.epochAt(a); k <= d.epochAt(b); k++ {
		out = union(out, d.epochs[k].nodes)
	}
	return out
}

// placeEpochs sets d's placement over the run: its epochs from the write
// on, the scales that move it, and as d.replicas every node that may hold
// it (the placement at the write first).
func (x *index) placeEpochs(d *def) {
	all, moves := x.epochsOf(d.timer, d.rf)
	first := 0
	for i, e := range all {
		if e.from <= d.lo {
			first = i
		}
	}
	d.epochs = all[first:]
	d.moves = moves
	d.replicas = nil
	longest := 0
	for _, e := range d.epochs {
		d.replicas = union(d.replicas, e.nodes)
		longest = max(longest, len(e.ranked))
	}
	at := d.epochs[0].ranked
	if at == nil {
		// Written while a scale moved it: the proxy placed it by
		// whichever view it had; the smaller placement bounds its
		// quorum.
		at = Replicas(x.h.Members, d.timer, d.rf)
		for _, s := range x.h.Scales {
			if s.Start <= d.lo {
				if b, a := Replicas(s.Before, d.timer, d.rf), Replicas(s.After, d.timer, d.rf); len(a) < len(b) {
					at = a
				} else {
					at = b
				}
			}
		}
	}
	d.home = d.epochs[0].ranked
	d.rf = max(longest, len(at))
	d.rfMin = d.rf
	d.quorum = ackQuorum(len(at))
}

// joinedEmpty reports whether node n may still be without a copy of d
// at at because it joined the cluster after d's write and nothing may
// have handed it one yet (scenarios/README.md C44). A joining node
// boots empty, and a proxy places a write by the view it has, so a copy
// of a timer written before the node joined reaches it only from a node
// that holds one and knows it as a member: a member that has not taken
// the scaling configuration answers the joining node's resync and repair
// 404 (node/resyncserve.go resyncPage, node/repair.go repairServe) and
// sends its notices to the replicas of the view it has. So n may hold a
// copy only from the first moment a member before the scale took the
// scaling configuration (its reload, Scale.Reloaded, or a boot after
// the scale started) while it may have held a copy itself (holdsAt).
// The first copy a joining node gets comes from such a member, so the
// other joining nodes need not be asked.
func (x *index) joinedEmpty(d *def, n string, at time.Duration) bool {
	if !d.placed || slices.Contains(d.nodesIn(d.lo, d.hi), n) {
		return false // it may have taken the write
	}
	joined := false
	for _, s := range x.h.Scales {
		if s.Start <= d.hi || s.Start > at || !slices.Contains(s.After, n) || slices.Contains(s.Before, n) {
			continue
		}
		joined = true
		for _, h := range s.Before {
			if !slices.Contains(d.nodesIn(d.lo, at), h) {
				continue // holds no copy of d
			}
			if v, ok := s.Reloaded[h]; ok && v <= at && x.holdsAt(d, h, v) {
				return false
			}
			for _, f := range x.h.Faults {
				if f.Kind == Restart && f.At >= s.Start && f.At <= at && slices.Contains(f.Nodes, h) && x.holdsAt(d, h, f.At) {
					return false
				}
			}
		}
	}
	return joined
}

// holdsAt reports whether replica h may hold a copy of d at t, as
// lossFrom counts copies: unless a crash that takes copies began at or
// before t, after d's write began, and h was not surely repopulated
// since (repopulatedBy).
func (x *index) holdsAt(d *def, h string, t time.Duration) bool {
	var last *span
	for s := range d.spans() {
		if s.fault.Kind == Crash && s.to >= d.lo && s.from <= t && slices.Contains(s.fault.Nodes, h) && x.crashLoses(s) {
			last = s
		}
	}
	if last == nil {
		return true
	}
	by, ok := x.repopulatedBy(d, h, last.end)
	return ok && by <= t
}
